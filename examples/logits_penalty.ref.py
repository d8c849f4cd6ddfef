"""Reference of examples/logits_penalty.mpk, written from the sampling rule, not the kernel.

vLLM's ``apply_penalties`` (``vllm/model_executor/layers/utils.py``), per request r:

    seen   = ids in r's prompt or in r's generated tokens
    counts = how often each id occurs in r's generated tokens
    logits[seen] = where(logits > 0, logits / repetition, logits * repetition)
    logits -= frequency * counts
    logits -= presence * (counts > 0)

with the prompt ``prompt[r, :lens[r, 0]]`` and the generated tokens ``output[r, :lens[r, 1]]``,
the lengths clamped to [0, prompt_max] and [0, output_max], ids outside [0, vocab) ignored.
Computed in float64 from the bf16 logits (the penalties as the kernel's f32 params hold them),
returned rounded to bf16 as the kernel stores them; unpenalised logits come back unchanged.
"""

import torch


def _f32(x):
    return float(torch.tensor(x, dtype=torch.float32))


def logits_penalty(logits, prompt, output, lens, params):
    vocab, m = params["vocab"], params["m"]
    rep, freq, pres = _f32(params["repetition"]), _f32(params["frequency"]), _f32(params["presence"])
    out = logits.to(torch.float64).clone()
    for r in range(m):
        plen = min(max(int(lens[r, 0]), 0), params["prompt_max"])
        olen = min(max(int(lens[r, 1]), 0), params["output_max"])
        p = prompt[r, :plen].to(torch.int64)
        o = output[r, :olen].to(torch.int64)
        p = p[(p >= 0) & (p < vocab)]
        o = o[(o >= 0) & (o < vocab)]
        counts = torch.bincount(o, minlength=vocab).to(torch.float64)
        seen = torch.zeros(vocab, dtype=torch.bool, device=logits.device)
        seen[p] = True
        seen |= counts > 0
        l = out[r]
        l = torch.where(seen, torch.where(l > 0, l / rep, l * rep), l)
        l = l - freq * counts - pres * (counts > 0).to(torch.float64)
        out[r] = l
    return out.to(torch.bfloat16)
