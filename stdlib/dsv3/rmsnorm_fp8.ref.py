"""Reference of stdlib/dsv3/rmsnorm_fp8.mpk, written from DeepSeek-V3's model code, not the kernel.

``DeepseekV3RMSNorm``: the input in float32, times ``rsqrt(mean(x^2) + eps)``, cast back to bf16,
times the bf16 weight. The qkv_a projection's fp8 input is then quantised per 1x128 group
(``act_quant`` with UE8M0 scales): amax over the group, at least 1e-4, divided by 448 (the e4m3
maximum) and rounded up to a power of two; values divided by the scale, cast to e4m3. Inputs: x
[M, hidden] bf16, w [hidden] bf16; returns (y [M, hidden] e4m3, y_scale [M, hidden / 128] f32).
"""

import torch

GROUP = 128
E4M3_MAX = 448.0


def rmsnorm_fp8(x, w, params):
    eps = params["eps"]
    h = x.float()
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    y = w * h.to(torch.bfloat16)
    n = y.shape[-1]
    groups = y.float().reshape(*y.shape[:-1], n // GROUP, GROUP)
    amax = groups.abs().amax(dim=-1).clamp(min=1e-4)
    ratio = amax / E4M3_MAX
    # The next power of two at or above the ratio, exactly (no log2 rounding).
    mant, expo = torch.frexp(ratio)
    expo = torch.where(mant == 0.5, expo - 1, expo)
    scale = torch.ldexp(torch.ones_like(ratio), expo)
    q = (groups / scale.unsqueeze(-1)).to(torch.float8_e4m3fn)
    return q.reshape(y.shape), scale
