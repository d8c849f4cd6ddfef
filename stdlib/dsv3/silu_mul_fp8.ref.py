"""Reference of stdlib/dsv3/silu_mul_fp8.mpk, written from DeepSeek-V3's model code, not the kernel.

The expert MLP computes ``F.silu(w1(x)) * w3(x)`` in bf16, and the fp8 linear after it quantises
its input per 1x128 group (``act_quant``): amax over the group, clamped below at 1e-4, divided by
448 (the e4m3 maximum) and, with UE8M0 scales, rounded up to a power of two; the values are
divided by the scale and cast to e4m3. ``x`` is [M, 2n] = [gate | up]; returns (y [M, n] e4m3,
y_scale [M, n / 128] f32). ``silu_mul_fp8_weighted`` folds the router weight of each routed
(token, slot) row in before quantizing. mpkc verify calls it with torch tensors on the GPU (docs/references.md).
"""

import torch
import torch.nn.functional as F

GROUP = 128
E4M3_MAX = 448.0


def _quantize(y, n):
    groups = y.reshape(*y.shape[:-1], n // GROUP, GROUP)
    amax = groups.abs().amax(dim=-1).clamp(min=1e-4)
    ratio = amax / E4M3_MAX
    # The next power of two at or above the ratio, exactly (no log2 rounding).
    mant, expo = torch.frexp(ratio)
    expo = torch.where(mant == 0.5, expo - 1, expo)
    scale = torch.ldexp(torch.ones_like(ratio), expo)
    q = (groups / scale.unsqueeze(-1)).to(torch.float8_e4m3fn)
    return q.reshape(y.shape), scale


def silu_mul_fp8(x):
    n = x.shape[-1] // 2
    gate, up = x[..., :n], x[..., n:]
    # bf16 in, bf16 out, as the model runs it.
    y = F.silu(gate) * up
    return _quantize(y.float(), n)


def silu_mul_fp8_weighted(x, w):
    """The routed experts' SwiGLU times each (token, slot) row's router weight, quantized.

    ``x`` is [M * slots, 2n] (a row per token and slot), ``w`` the router's f32 weights
    [M, slots]. DeepSeek-V3 weights each expert's output, ``y += expert(x) * weight``; since the
    down projection is linear, the weight is applied to the expert's SwiGLU output instead, in
    f32 after the bf16 SwiGLU, and the product is quantized for the fp8 down projection.
    """
    n = x.shape[-1] // 2
    gate, up = x[..., :n], x[..., n:]
    y = (F.silu(gate) * up).float() * w.reshape(-1, 1).float()
    return _quantize(y, n)
