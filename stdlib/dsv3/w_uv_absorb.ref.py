"""Reference of stdlib/dsv3/w_uv_absorb.mpk, written from DeepSeek-V3's model code, not the kernel.

MLA's absorbed decode (DeepSeek-V3 ``MLA.forward``, ``attn_impl == "absorb"``) applies the value
up-projection after the attention, in the latent space: with ``wkv_b`` viewed as [heads,
qk_nope + v_head, kv_lora],

    x = torch.einsum("bshc,hdc->bshd", x, wkv_b[:, -v_head_dim:])

in bf16. ``o_latent`` is the attention output [M, heads, kv_lora], ``w_uv`` is
``wkv_b[:, -v_head:]``, [heads, v_head, kv_lora]; returns [M, heads, v_head] bf16 (o_proj's input
after ``flatten(2)``). mpkc verify calls it with torch tensors on the GPU (docs/references.md).
"""

import torch


def w_uv_absorb(o_latent, w_uv):
    return torch.einsum("bshc,hdc->bshd", o_latent.unsqueeze(1), w_uv).squeeze(1)
