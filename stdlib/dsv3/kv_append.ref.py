"""Reference of stdlib/dsv3/kv_append.mpk, written from DeepSeek-V3's model code (``MLA.forward``,
``attn_impl == "absorb"``: ``self.kv_cache[:bsz, start_pos:end_pos] = self.kv_norm(kv)`` and
``self.pe_cache[:bsz, start_pos:end_pos] = k_pe``), not from the kernel, with the cache paged the
way FlashMLA lays it out: one [c_kv | k_pe] row of 576 per token, in pages of ``page`` tokens,
request r's pages in ``paged_kv["pages"][r]`` (docs/references.md).

Inputs: kv [m, 576] bf16 (the new token's normalised c_kv and rotated k_pe), ckv [pool, page,
576] bf16; returns the cache with request r's row at position context - 1 replaced by kv[r].
"""


def kv_append(kv, ckv, params, paged_kv):
    out = ckv.clone()
    page = paged_kv["page"]
    for r in range(kv.shape[0]):
        context = paged_kv["context_lens"][r]
        if context < 1:
            continue
        pos = context - 1
        p = paged_kv["pages"][r][pos // page]
        out[p, pos % page] = kv[r]
    return out
