"""Reference of the DeepSeek-V3 MoE block chain (stdlib/dsv3/moe_block.chain.toml), written from
DeepSeek-V3's model code (``MoE.forward``, ``Expert``, ``Gate``, ``RMSNorm``, ``act_quant`` with
UE8M0 scales, ``fp8_gemm``), not from the kernels, for one rank: 128 local experts (EP2 rank 0;
an id of 128-255 is the other rank's expert and adds nothing here) and the shared expert, no
tensor-parallel all-reduce.

    x = RMSNorm(h)                                   # bf16
    scores = sigmoid(x @ W_gate^T)                   # bf16 logits (the router GEMV)
    ids = the kernels' top-8 (fed by mpkc: router near-ties must not flip the comparison)
    weights = scores[ids] / sum(scores[ids]) * 2.5   # f32
    y = sum_s weights[s] * Expert[ids[s]](x) + Shared(x)
    Expert(x) = W2 (silu(W1 x) * W3 x),  Shared likewise

Each fp8 linear quantizes its input per 1 x 128 group (amax over the group, at least 1e-4,
divided by 448, rounded up to a power of two) and multiplies e4m3 operands with the weights'
128 x 128 block scales, accumulating in f32 and rounding its output to bf16. The expert weight
of each slot is applied to the expert's SwiGLU output before the down projection's quantization
(the projection is linear: docs/dsv3.md, "Routed experts"), which is where the kernels apply
it. The result is the routed sum plus the shared expert's output, in bf16.

mpkc verify calls ``moe_block(t)`` with ``t`` a dict of torch tensors by ``unit.tensor``: every
input the chain's links do not fill, then ``router_topk.ids`` (docs/references.md).
"""

import torch
import torch.nn.functional as F

GROUP = 128
E4M3_MAX = 448.0
EPS = 1e-6
ROUTE_SCALE = 2.5


def act_quant(y):
    """Per 1 x 128 group: (e4m3 values, f32 power-of-two scales), as ``act_quant`` (UE8M0)."""
    n = y.shape[-1]
    groups = y.float().reshape(*y.shape[:-1], n // GROUP, GROUP)
    amax = groups.abs().amax(dim=-1).clamp(min=1e-4)
    mant, expo = torch.frexp(amax / E4M3_MAX)
    expo = torch.where(mant == 0.5, expo - 1, expo)
    scale = torch.ldexp(torch.ones_like(amax), expo)
    q = (groups / scale.unsqueeze(-1)).to(torch.float8_e4m3fn)
    return q.reshape(y.shape), scale


def dequant_weight(w, w_scale):
    """An e4m3 [N, K] weight with its [N / 128, K / 128] block scales, in f32."""
    s = w_scale.repeat_interleave(GROUP, dim=0).repeat_interleave(GROUP, dim=1)
    return w.float() * s[: w.shape[0], : w.shape[1]]


def fp8_linear(x, w, w_scale):
    """``fp8_gemm(act_quant(x), w)``: bf16 [M, K] x e4m3 [N, K]^T -> bf16 [M, N]."""
    q, s = act_quant(x)
    xd = q.float().reshape(*x.shape[:-1], -1, GROUP) * s.unsqueeze(-1)
    return (xd.reshape(x.shape) @ dequant_weight(w, w_scale).t()).to(torch.bfloat16)


def swiglu(h):
    n = h.shape[-1] // 2
    return F.silu(h[..., :n]) * h[..., n:]  # bf16, as the model runs it


def moe_block(t):
    h = t["rmsnorm_fp8.x"]
    norm_w = t["rmsnorm_fp8.w"]
    x = h.float()
    x = (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS)).to(torch.bfloat16) * norm_w
    return moe(x, t)


def moe(x, t):
    """The MoE on the normalised bf16 input x [M, 7168]: the router's scores, the kernels' ids
    (``t["router_topk.ids"]``), the routed experts and the shared expert (decode_layer.ref.py
    calls it on the post-attention norm's output)."""
    # The gate: bf16 logits, sigmoid scores; the kernels' ids; the weights from this reference's
    # own scores.
    logits = (x.float() @ t["linear_bf16_splitk_sum64_router.W"].float().t()).to(torch.bfloat16)
    scores = logits.sigmoid()
    ids = t["router_topk.ids"].long()
    weights = scores.gather(1, ids).float()
    weights = weights / weights.sum(dim=-1, keepdim=True) * ROUTE_SCALE
    w13, w13_s = t["moe_w13_dsv3.W"], t["moe_w13_dsv3.W_scale"]
    w2, w2_s = t["moe_w2_dsv3.W"], t["moe_w2_dsv3.W_scale"]
    experts = w13.shape[0]
    y = torch.zeros(x.shape, dtype=torch.float32, device=x.device)
    for m in range(x.shape[0]):
        for s in range(ids.shape[1]):
            e = int(ids[m, s])
            if not 0 <= e < experts:
                continue  # the other rank's expert
            hid = fp8_linear(x[m : m + 1], w13[e], w13_s[e])
            act = swiglu(hid).float() * weights[m, s]
            q, sc = act_quant(act)
            ad = (q.float().reshape(1, -1, GROUP) * sc.unsqueeze(-1)).reshape(act.shape)
            y[m] += (ad @ dequant_weight(w2[e], w2_s[e]).t())[0]
    shared = fp8_linear(
        swiglu(
            fp8_linear(
                x,
                t["linear_fp8_blockscale_shared_gate_up.W"],
                t["linear_fp8_blockscale_shared_gate_up.W_scale"],
            )
        ),
        t["linear_fp8_blockscale_shared_down.W"],
        t["linear_fp8_blockscale_shared_down.W_scale"],
    )
    # moe_w2's epilogue: the routed sum rounded to bf16, plus the shared expert's output.
    return y.to(torch.bfloat16).float() + shared.float()
