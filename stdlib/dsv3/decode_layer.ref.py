"""Reference of the DeepSeek-V3 decode layer chain (stdlib/dsv3/decode_layer.chain.toml), written
from DeepSeek-V3's model code (``Block.forward``, ``MLA.forward`` with ``attn_impl ==
"absorb"``, ``RMSNorm``, ``apply_rotary_emb`` with YaRN, ``act_quant`` with UE8M0 scales,
``fp8_gemm``, and the MoE of moe_block.ref.py), not from the kernels, for one rank: 16 local
heads (TP8), 128 local experts (EP2 rank 0), no tensor-parallel all-reduce. One decode token
per request; the latent KV cache is paged as FlashMLA lays it out and the run's page table
arrives as ``paged_kv`` (docs/references.md).

    x = RMSNorm(h)                                    # bf16, quantized for the fp8 projection
    q_a | kv | k_pe = fp8_linear(x, wq_a | wkv_a)     # qkv_a: [M, 1536 | 512 | 64]
    q = fp8_linear(RMSNorm(q_a), wq_b)                # [M, 16, 128 + 64]
    q_pe, k_pe = rope(q_pe, pos), rope(k_pe, pos)
    cache[request r, position context - 1] = [RMSNorm(kv) | k_pe]
    q_latent = einsum(q_nope, W_UK)                   # bf16
    scores = (q_latent . c_kv + q_pe . k_pe) * softmax_scale over the request's context
    o = einsum(softmax(scores), c_kv)                 # bf16 [M, 16, 512]
    attn = fp8_linear(einsum(o, W_UV), wo)            # bf16 [M, 7168]
    h2 = h + attn                                     # bf16
    y = MoE(RMSNorm(h2))                              # moe_block.ref.py, fed the kernels' ids

Returns y, the chain's output (``moe_w2_dsv3.C``). mpkc verify calls ``decode_layer(t,
paged_kv)`` with ``t`` a dict of torch tensors by ``unit.tensor``: every input the chain's links
do not fill, then what the kernels wrote of ``router_topk.ids``, ``w_uk_absorb.q`` and
``kv_append.ckv`` (the cache after the append, as ``kv_append.ckv@after``).

Two places where a rounding-level difference flips the result, which the kernels' values settle:
the router's top-8 (the kernels' ids, as moe_block.ref.py) and the attention's softmax. With
random weights the scores spread over hundreds (q_latent is a 128-term sum of 1536-term sums),
so each head's softmax is all but one-hot, and a bf16-level difference in the query moves a
head to another token when two scores are within it. So the attention runs on the kernels'
query (``w_uk_absorb.q``), after this reference has computed its own from the layer's input and
checked the two agree, and over the kernels' cache, after checking that the append changed
exactly each request's row at context - 1 and that the row agrees with this reference's
[RMSNorm(kv) | rope(k_pe)]. Each is compared in parts: the query's 512 latent columns and its 64
rope columns apart, the row's 512 c_kv columns and 64 k_pe columns apart (a wrong rope moves
only the latter, a small share of the query's norm), each to a relative L2 of at most
``QUERY_REL_L2``; a larger difference raises, and verify reports the front half as failed. The
tolerance is the fp8 input of q_b: the normalised q_a is quantized to e4m3 (a step of 1/8 of a
value's magnitude), and the few elements a bf16-level difference moves across a rounding
boundary change q by about 2.5% (measured on the H200, 2026-12-01). The front half (qkv_a, both
norms, q_b, rope, W_UK) is still checked end to end, at the query and the appended row.
"""

import importlib.util
import math
import os

import torch
import torch.nn.functional as F


def _sibling(name):
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), name)
    spec = importlib.util.spec_from_file_location("mpkc_layer_" + name.split(".")[0], path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_moe = _sibling("moe_block.ref.py")  # act_quant, fp8_linear, the MoE
_rope = _sibling("rope.ref.py")  # YaRN's frequencies and apply_rotary_emb (model.py)

EPS = 1e-6
QUERY_REL_L2 = 5e-2
HEADS = 16
Q_A, KV_LORA, ROPE, NOPE = 1536, 512, 64, 128


def rms_norm(x, w):
    return F.rms_norm(x, (x.shape[-1],), w, EPS)


def check(what, mine, theirs):
    """Raises unless the kernels' ``theirs`` is within QUERY_REL_L2 (relative L2) of ``mine``."""
    err = ((mine.double() - theirs.double()).norm() / theirs.double().norm().clamp(min=1e-30)).item()
    if not err <= QUERY_REL_L2:
        raise AssertionError(
            "the attention's front half (qkv_a, the q_a / kv_a norms, q_b, rope, W_UK, the KV "
            "append): the %s differ from this reference's, rel_l2 %.3e > %.0e" % (what, err, QUERY_REL_L2))


def softmax_scale():
    mscale = 0.1 * 1.0 * math.log(40.0) + 1.0  # YaRN mscale for rope_factor 40
    return (NOPE + ROPE) ** -0.5 * mscale * mscale


def decode_layer(t, paged_kv):
    h = t["rmsnorm_fp8.x"]
    m = h.shape[0]
    x = rms_norm(h, t["rmsnorm_fp8.w"])
    qkv = _moe.fp8_linear(x, t["linear_fp8_blockscale_qkv_a.W"], t["linear_fp8_blockscale_qkv_a.W_scale"])
    q_a = rms_norm(qkv[:, :Q_A], t["qkv_a_norm_q_a.w"])
    kv = rms_norm(qkv[:, Q_A : Q_A + KV_LORA], t["qkv_a_norm_kv_a.w"])
    k_pe = qkv[:, Q_A + KV_LORA : Q_A + KV_LORA + ROPE]
    q = _moe.fp8_linear(q_a, t["linear_fp8_blockscale_q_b.W"], t["linear_fp8_blockscale_q_b.W_scale"])
    q = q.reshape(m, HEADS, NOPE + ROPE)
    q_nope, q_pe = q[..., :NOPE], q[..., NOPE:]
    q_pe, k_pe = _rope.rope(q_pe, k_pe, t["rope.positions"])
    # The step's row appended to the paged cache at each request's last position: the kernels'
    # cache must differ from the layer's input cache there alone, and the row must agree.
    before = t["kv_append.ckv"]
    cache = t["kv_append.ckv@after"]
    expect = before.clone()
    page = paged_kv["page"]
    for r in range(m):
        pos = paged_kv["context_lens"][r] - 1
        slot = (paged_kv["pages"][r][pos // page], pos % page)
        expect[slot] = cache[slot]
        row = cache[slot]
        for part, mine, theirs in (("c_kv", kv[r], row[:KV_LORA]), ("k_pe", k_pe[r], row[KV_LORA:])):
            check("request %d's appended %s" % (r, part), mine, theirs)
    if not torch.equal(expect.view(torch.int16), cache.view(torch.int16)):
        raise AssertionError("the KV append changed cache rows other than each request's at context - 1")
    q_latent = torch.einsum("bhd,hdc->bhc", q_nope, t["w_uk_absorb.w_uk"])  # bf16
    fed = t["w_uk_absorb.q"]
    check("query's latent columns", q_latent, fed[..., :KV_LORA])
    check("query's rope columns", q_pe, fed[..., KV_LORA:])
    q_latent, q_pe = fed[..., :KV_LORA], fed[..., KV_LORA:]
    scale = softmax_scale()
    o = torch.empty(m, HEADS, KV_LORA, dtype=torch.bfloat16, device=h.device)
    for r in range(m):
        context = paged_kv["context_lens"][r]
        pages = torch.tensor(paged_kv["pages"][r], dtype=torch.long, device=h.device)
        rows = cache[pages].reshape(-1, KV_LORA + ROPE)[:context].double()
        c_kv, pe = rows[:, :KV_LORA], rows[:, KV_LORA:]
        scores = (q_latent[r].double() @ c_kv.T + q_pe[r].double() @ pe.T) * scale
        o[r] = (torch.softmax(scores, dim=-1) @ c_kv).to(torch.bfloat16)
    out = torch.einsum("bhc,hdc->bhd", o, t["w_uv_absorb.w_uv"]).reshape(m, HEADS * NOPE)  # bf16
    attn = _moe.fp8_linear(out, t["linear_fp8_blockscale_o_proj.W"], t["linear_fp8_blockscale_o_proj.W_scale"])
    h2 = h + attn
    y = rms_norm(h2, t["add_rmsnorm.w"])
    return _moe.moe(y, t)
