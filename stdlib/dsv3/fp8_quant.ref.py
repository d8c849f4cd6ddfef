"""Reference of stdlib/dsv3/fp8_quant.mpk, written from DeepSeek-V3's model code (``act_quant``
with UE8M0 scales, ``inference/kernel.py``), not from the kernel.

Per row and group of 128: amax over the group (at least 1e-4), divided by 448 (the e4m3 maximum)
and rounded up to a power of two, exactly; the values divided by that scale, cast to e4m3.
Input: x [M, n] bf16 (the view's elements; mpkc passes them without the parent's other
columns); returns (y [M, n] e4m3, y_scale [M, n / 128] f32).
"""

import torch

GROUP = 128
E4M3_MAX = 448.0


def fp8_quant(x, params):
    n = x.shape[-1]
    groups = x.float().reshape(*x.shape[:-1], n // GROUP, GROUP)
    amax = groups.abs().amax(dim=-1).clamp(min=1e-4)
    mant, expo = torch.frexp(amax / E4M3_MAX)
    expo = torch.where(mant == 0.5, expo - 1, expo)
    scale = torch.ldexp(torch.ones_like(amax), expo)
    q = (groups / scale.unsqueeze(-1)).to(torch.float8_e4m3fn)
    return q.reshape(x.shape), scale
