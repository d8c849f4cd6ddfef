"""Reference of stdlib/dsv3/add_rmsnorm.mpk, written from DeepSeek-V3's model code, not the kernel.

A DeepSeek-V3 block (``Block.forward``) is ``x = x + self.attn(self.attn_norm(x), …)`` then
``x = x + self.ffn(self.ffn_norm(x))``, in bf16; ``RMSNorm.forward`` is ``F.rms_norm(x,
(self.dim,), self.weight, self.eps)`` with eps 1e-6. Fused as decode kernels run it: the residual
stream takes the sublayer output in place, and the next norm reads the sum.

Inputs in declaration order: ``x`` (the sublayer output, [M, hidden] bf16), ``residual`` (the
stream before the add, [M, hidden] bf16; ``inout``), ``w`` ([hidden] bf16), ``params``. Returns
what the task writes, in declaration order: the updated residual ``x + residual`` and ``y =
rms_norm(x + residual) * w``. mpkc verify calls it with torch tensors on the GPU
(docs/references.md). ``F.rms_norm`` needs PyTorch 2.4 or later.
"""

import torch
import torch.nn.functional as F


def add_rmsnorm(x, residual, w, params):
    h = x + residual  # bf16 + bf16 -> bf16, as the block's `x = x + …`
    y = F.rms_norm(h, (h.shape[-1],), w, params["eps"])
    return h, y
