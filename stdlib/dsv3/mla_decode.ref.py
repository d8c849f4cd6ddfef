"""Reference of stdlib/dsv3/mla_decode.mpk, written from DeepSeek-V3's model code, not the kernel.

DeepSeek-V3's MLA in the absorbed form (``inference/model.py``, class ``MLA``, ``attn_impl ==
"absorb"``): the query of head h is ``[q_nope @ W_UK (512) | q_pe (64)]``, the cache keeps per
token ``kv_cache`` (the normalised latent c_kv, 512) and ``pe_cache`` (k_pe, 64), and

    scores = (einsum("bshc,btc->bsht", q_nope, kv_cache) + einsum("bshr,btr->bsht", q_pe, pe_cache))
             * softmax_scale
    x = einsum("bsht,btc->bshc", softmax(scores), kv_cache)

with ``softmax_scale = qk_head_dim ** -0.5 * mscale ** 2`` (qk_head_dim 192, mscale =
0.1 * 1 * ln 40 + 1, since max_seq_len, 4096 * 4, exceeds original_seq_len 4096). Here the cache is paged
the way FlashMLA lays it out: one [c_kv | k_pe] row of 576 per token, in pages of ``page``
tokens, request r's pages listed in ``paged_kv["pages"][r]`` (mpkc verify passes the run's page
table, docs/references.md).

Split-KV (FlashDecoding): the request's P pages are cut into ``splits`` runs of ceil(P / splits)
pages; each run's softmax is taken over its own tokens, giving its normalised output and the
natural-log log-sum-exp of its scaled scores (an empty run: output 0, log-sum-exp -inf). The
merge weighs the runs by exp(lse_s - logsumexp(lse)) and rounds to bf16.

Computed in float64 (the kernel accumulates in fp32; its probabilities are never rounded to
bf16, so neither are these).
"""

import math

import torch


def softmax_scale():
    qk_head_dim = 128 + 64  # qk_nope_head_dim + qk_rope_head_dim
    mscale = 0.1 * 1.0 * math.log(40.0) + 1.0  # mscale (mscale_all_dim) 1, rope_factor 40
    return qk_head_dim ** -0.5 * mscale * mscale


def mla_decode_partial(q, ckv, params, paged_kv):
    """q [m, heads, 576] bf16; ckv [pool, page, 576] bf16 -> (o_partial [m, heads, splits, 512]
    f32, lse_partial [m, heads, splits] f32)."""
    m, heads, dim = q.shape
    kv_lora, splits, page = params["kv_lora"], params["splits"], paged_kv["page"]
    assert page == ckv.shape[1] and dim == kv_lora + params["rope"]
    scale = softmax_scale()
    o = torch.zeros(m, heads, splits, kv_lora, dtype=torch.float64, device=q.device)
    lse = torch.full((m, heads, splits), -math.inf, dtype=torch.float64, device=q.device)
    for r in range(m):
        pages = torch.tensor(paged_kv["pages"][r], dtype=torch.long, device=q.device)
        context = paged_kv["context_lens"][r]
        # The request's tokens in order: page pages[t // page], row t % page.
        rows = ckv[pages].reshape(-1, dim)[:context].double()
        c_kv, k_pe = rows[:, :kv_lora], rows[:, kv_lora:]
        qr = q[r].double()
        scores = (qr[:, :kv_lora] @ c_kv.T + qr[:, kv_lora:] @ k_pe.T) * scale  # [heads, t]
        per_split = -(-len(pages) // splits) * page  # tokens of ceil(P / splits) pages
        for s in range(splits):
            t0, t1 = s * per_split, min(context, (s + 1) * per_split)
            if t1 <= t0:
                continue
            part = scores[:, t0:t1]
            lse[r, :, s] = torch.logsumexp(part, dim=-1)
            o[r, :, s] = torch.softmax(part, dim=-1) @ c_kv[t0:t1]
    return o, lse


def mla_decode_merge(o_partial, lse_partial):
    """o_partial [m, heads, splits, 512] f32; lse_partial [m, heads, splits] f32 -> o [m, heads,
    512] bf16."""
    lse = lse_partial.double()
    total = torch.logsumexp(lse, dim=-1, keepdim=True)
    w = torch.exp(lse - total)  # exp(-inf) = 0: an empty split weighs nothing
    out = (w.unsqueeze(-1) * o_partial.double()).sum(dim=-2)
    return out.to(torch.bfloat16)
