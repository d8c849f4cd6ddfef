"""Reference of stdlib/dsv3/rope.mpk, written from DeepSeek-V3's model code, not the kernel.

DeepSeek-V3's ``inference/model.py``: ``precompute_freqs_cis`` builds the YaRN-corrected
frequencies of the 64 rope dims (theta 10000, factor 40, original_seq_len 4096, beta_fast 32,
beta_slow 1; applied because max_seq_len 163840 exceeds original_seq_len) and
``apply_rotary_emb`` multiplies each interleaved pair, read as a complex number
(``view_as_complex``), by ``e^(i * pos * freq)`` in float32, then casts back to bf16. The cos/sin
factor ``yarn_get_mscale(factor, mscale) / yarn_get_mscale(factor, mscale_all_dim)`` of the HF
modeling code is 1 (mscale = mscale_all_dim = 1). Inputs: q_pe [M, heads, 64] and k_pe [M, 64]
bf16, positions [M] int32; returns the rotated (q_pe, k_pe).
"""

import math

import torch

DIM = 64
THETA = 10000.0
FACTOR = 40.0
ORIGINAL_SEQ_LEN = 4096
BETA_FAST = 32
BETA_SLOW = 1
MSCALE = 1.0
MSCALE_ALL_DIM = 1.0


def find_correction_dim(num_rotations, dim, base, max_seq_len):
    return dim * math.log(max_seq_len / (num_rotations * 2 * math.pi)) / (2 * math.log(base))


def find_correction_range(low_rot, high_rot, dim, base, max_seq_len):
    low = math.floor(find_correction_dim(low_rot, dim, base, max_seq_len))
    high = math.ceil(find_correction_dim(high_rot, dim, base, max_seq_len))
    return max(low, 0), min(high, dim - 1)


def linear_ramp_factor(lo, hi, dim, device):
    if lo == hi:
        hi += 0.001
    linear = (torch.arange(dim, dtype=torch.float32, device=device) - lo) / (hi - lo)
    return torch.clamp(linear, 0, 1)


def yarn_get_mscale(scale, mscale):
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


def freqs_cis(positions):
    dev = positions.device
    freqs = 1.0 / (THETA ** (torch.arange(0, DIM, 2, dtype=torch.float32, device=dev) / DIM))
    low, high = find_correction_range(BETA_FAST, BETA_SLOW, DIM, THETA, ORIGINAL_SEQ_LEN)
    smooth = 1 - linear_ramp_factor(low, high, DIM // 2, dev)
    freqs = freqs / FACTOR * (1 - smooth) + freqs * smooth
    angles = torch.outer(positions.to(torch.float32), freqs)
    scale = yarn_get_mscale(FACTOR, MSCALE) / yarn_get_mscale(FACTOR, MSCALE_ALL_DIM)
    return torch.polar(torch.full_like(angles, scale), angles)


def apply_rotary_emb(x, cis):
    shape = x.shape
    xc = torch.view_as_complex(x.float().reshape(*shape[:-1], -1, 2))
    cis = cis.reshape(shape[0], *([1] * (len(shape) - 2)), cis.shape[-1])
    return torch.view_as_real(xc * cis).flatten(-2).to(x.dtype)


def rope(q_pe, k_pe, positions):
    cis = freqs_cis(positions.reshape(-1))
    return apply_rotary_emb(q_pe, cis), apply_rotary_emb(k_pe, cis)
