"""Reference of examples/softmax_grid.mpk, written from the definition, not the kernel.

p[r, v] = exp(l[r, v] / t - M) / sum_v' exp(l[r, v'] / t - M), M = max_v l[r, v] / t: the
softmax of each row of the bf16 logits at temperature t (the f32 param as the kernel holds it),
computed in float64.
"""

import torch


def softmax_grid(logits, params):
    t = float(torch.tensor(params["temperature"], dtype=torch.float32))
    x = logits.to(torch.float64) / t
    return torch.softmax(x, dim=-1)
