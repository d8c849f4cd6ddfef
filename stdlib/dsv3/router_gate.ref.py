"""Reference of stdlib/dsv3/router_gate.mpk, written from DeepSeek-V3's model code
(``Gate.forward``: ``scores = linear(x, self.weight)``, then ``scores.sigmoid()`` for
``score_func == "sigmoid"``), not from the kernel.

Inputs: A [M, 7168] bf16 (the normalised hidden state), W [256, 7168] bf16; returns the scores
[M, 256] bf16: the bf16 logits' sigmoid. mpkc verify calls it with torch tensors on the GPU
(docs/references.md).
"""

import torch


def router_gate(A, W):
    logits = (A.float() @ W.float().t()).to(torch.bfloat16)
    return logits.float().sigmoid().to(torch.bfloat16)
