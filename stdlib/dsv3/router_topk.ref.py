"""Reference of stdlib/dsv3/router_topk.mpk, written from DeepSeek-V3's model code, not the kernel.

DeepSeek-V3's ``Gate.forward`` after its GEMV (``scores = linear(x, self.weight)``, bf16), with
``score_func == "sigmoid"``, n_groups 8, topk_groups 4, topk 8, route_scale 2.5 and the f32
correction ``bias``:

    scores = scores.sigmoid()
    original_scores = scores
    scores = scores + self.bias
    scores = scores.view(x.size(0), self.n_groups, -1)
    group_scores = scores.topk(2, dim=-1)[0].sum(dim=-1)
    indices = group_scores.topk(self.topk_groups, dim=-1)[1]
    mask = scores.new_ones(x.size(0), self.n_groups, dtype=bool).scatter_(1, indices, False)
    scores = scores.masked_fill_(mask.unsqueeze(-1), float("-inf")).flatten(1)
    indices = torch.topk(scores, self.topk, dim=-1)[1]
    weights = original_scores.gather(1, indices)
    weights /= weights.sum(dim=-1, keepdim=True)
    weights *= self.route_scale

The task's weights output is f32 (the model's ``weights.type_as(x)`` rounds them to bf16): the
gathered bf16 scores are normalised in f32. Inputs: ``logits`` [M, 256] bf16, ``bias`` [256] f32,
``params``; returns (ids [M, 8] int32, best first, weights [M, 8] f32). mpkc verify calls it with
torch tensors on the GPU (docs/references.md).
"""

import torch


def router_topk(logits, bias, params):
    n_groups = params["groups"]
    topk_groups = params["topk_groups"]
    topk = params["topk"]
    route_scale = params["route_scale"]
    m = logits.shape[0]
    scores = logits.sigmoid()  # bf16, as the model's scores
    original_scores = scores
    scores = scores + bias  # bf16 + f32 -> f32
    scores = scores.view(m, n_groups, -1)
    group_scores = scores.topk(2, dim=-1)[0].sum(dim=-1)
    indices = group_scores.topk(topk_groups, dim=-1)[1]
    mask = scores.new_ones(m, n_groups, dtype=torch.bool).scatter_(1, indices, False)
    scores = scores.masked_fill_(mask.unsqueeze(-1), float("-inf")).flatten(1)
    indices = torch.topk(scores, topk, dim=-1)[1]
    weights = original_scores.gather(1, indices).float()
    weights /= weights.sum(dim=-1, keepdim=True)
    weights *= route_scale
    return indices.to(torch.int32), weights
