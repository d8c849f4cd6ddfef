"""Reference of examples/topk_topp_sample.mpk, written from the sampling rule, not the kernel.

Top-k then top-p (nucleus) sampling at a temperature, as serving stacks apply it to one decode
step's logits (vLLM's and SGLang's samplers: temperature, top-k, top-p, then a draw):

    l = logits[token]                      # [vocab]
    top = the topk largest l, best first   # ties: the lower index first
    p = exp((top - top[0]) / temperature)  # softmax up to its normaliser
    keep rank j while sum(p[:j]) < top_p * sum(p)   (rank 0 always)
    token = index of the first kept rank j with sum(p[:j + 1]) > u * sum(p[kept])

in two passes: ``sample_partial`` ranks each chunk of the vocabulary, ``sample_reduce`` ranks the
chunks' candidates and draws. The reduce's candidates are any [M, chunks, topk] values and
indices (verify draws them at random): it orders them by value, then by position in the row
(chunk-major, as the partial pass leaves equal logits in index order). ``u`` is clamped into
[0, 1). Computed in float64.
"""

import torch


def _rank(values, k):
    """The k largest of each row, best first, equal values in position order: (values, positions)."""
    order = torch.sort(values, dim=-1, descending=True, stable=True)
    return order.values[..., :k], order.indices[..., :k]


def sample_partial(logits, params):
    vocab, chunk, topk, m = params["vocab"], params["chunk"], params["topk"], params["m"]
    chunks = (vocab + chunk - 1) // chunk
    padded = torch.full((m, chunks * chunk), float("-inf"), dtype=torch.float64, device=logits.device)
    padded[:, :vocab] = logits.to(torch.float64)
    vals, pos = _rank(padded.view(m, chunks, chunk), topk)
    first = torch.arange(chunks, device=logits.device).view(1, chunks, 1) * chunk
    return vals.to(torch.float32), (pos + first).to(torch.int32)


def sample_reduce(cand_val, cand_idx, uniform, params):
    topk, temperature, top_p = params["topk"], params["temperature"], params["top_p"]
    m = cand_val.shape[0]
    vals, pos = _rank(cand_val.reshape(m, -1).to(torch.float64), topk)
    idx = cand_idx.reshape(m, -1).gather(1, pos)
    # The f32 params as the kernel holds them.
    t = float(torch.tensor(temperature, dtype=torch.float32))
    tp = float(torch.tensor(top_p, dtype=torch.float32))
    p = torch.exp((vals - vals[:, :1]) / t)
    incl = p.cumsum(dim=1)
    excl = incl - p
    total = incl[:, -1:]
    keep = excl < tp * total
    keep[:, 0] = True
    kept = (incl * keep).max(dim=1, keepdim=True).values
    u = uniform.to(torch.float64).clamp(0.0, float.fromhex("0x1.fffffep-1")).view(m, 1)
    hit = keep & (incl > u * kept)
    last = keep.sum(dim=1) - 1
    first_hit = torch.where(hit.any(dim=1), hit.to(torch.int8).argmax(dim=1), last)
    return idx.gather(1, first_hit.view(m, 1)).view(m).to(torch.int64)
