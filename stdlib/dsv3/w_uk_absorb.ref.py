"""Reference of stdlib/dsv3/w_uk_absorb.mpk, written from DeepSeek-V3's model code, not the kernel.

MLA's absorbed decode (DeepSeek-V3 ``MLA.forward``, ``attn_impl == "absorb"``) folds the key
up-projection into the query: with ``wkv_b`` viewed as [heads, qk_nope + v_head, kv_lora],

    q_nope = torch.einsum("bshd,hdc->bshc", q_nope, wkv_b[:, :qk_nope_head_dim])

in bf16 (the absorbed path dequantizes ``wkv_b`` once). ``q_nope`` is [M, heads, qk_nope] (the
first 128 of each head's 192 q_b columns), ``w_uk`` is ``wkv_b[:, :qk_nope]``, [heads, qk_nope,
kv_lora]. The result is the attention's query per head, ``torch.cat([q_nope, q_pe], dim=-1)`` as
``MLA.forward`` scores it (``q_nope`` against ``kv_cache``, ``q_pe`` against ``pe_cache``): returns
q [M, heads, kv_lora + 64] bf16. mpkc verify calls it with torch tensors on the GPU
(docs/references.md).
"""

import torch


def w_uk_absorb(q_nope, q_pe, w_uk):
    # "bshd,hdc->bshc" with the token axis as "b" and one position ("s").
    latent = torch.einsum("bshd,hdc->bshc", q_nope.unsqueeze(1), w_uk).squeeze(1)
    return torch.cat([latent, q_pe], dim=-1)
