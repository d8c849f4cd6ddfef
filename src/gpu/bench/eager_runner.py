"""mpkc bench's PyTorch eager competitor (docs/bench.md), written by `mpkc bench` next to each exchange.

    $MPKC_PYTHON mpkc_eager.py manifest.json

The manifest names the op (`rmsnorm`, `silu_mul`, `embedding`, `argmax`, `scaled_mm`), its scalars, its input
tensors (by the body template's formal names: dtype, shape outermost first, and a file of the
elements mpkc's kernel read, raw little-endian in the dtype's own encoding), the output (dtype,
shape and the file to write) and the timing plan (`runs` back-to-back calls per sample, `repeats`
samples, `warmup` untimed series first), the method of `mpkc bench` (docs/bench.md): eager calls
for the consumer ops, a CUDA graph of the `runs` calls replayed for `scaled_mm` (as mpkc's
standalone method and cuBLAS are timed). The runner puts the inputs on `cuda:<device>`, makes one call and
writes its output back in the same encoding, times the calls with CUDA events, and writes
`result.json`: {"torch", "gpu", "call", "timing": "eager" | "graph", "samples_us"} (microseconds
per call, one per sample).

`scaled_mm` is the block-scaled fp8 linear's competitor where cuBLASLt has no block-scaled kernel
(sm_90): the call timed is `torch._scaled_mm` over the e4m3 weights `w [N, K]` and activations
`x [M, K]` with per-tensor scales (1.0), bf16 out, M padded to a multiple of 16 as `_scaled_mm`
requires, the weights rotated over `copies` copies (call i reads copy i mod copies) as mpkc's
side rotates them; its output is checked here against the float32 product of the same e4m3
values (relative L2 below 2e-2, else the runner fails). The output written back for mpkc's check
is the float32 product with the block scales applied (`w_scale [N/128, K/128]`, `x_scale
[M, K/128]`), rounded to bf16: what mpkc's kernel computes.

Exit status 3 with an `mpkc-eager: ...` line on stderr when PyTorch cannot be imported or sees no
CUDA device (mpkc reports the case without a competitor); 2 for any other error.
"""

import json
import os
import sys
import traceback


def fail(msg, code=2):
    for line in str(msg).splitlines() or [""]:
        sys.stderr.write("mpkc-eager: " + line + "\n")
    sys.exit(code)


def scaled_mm(torch, x, copies, dev):
    """The `_scaled_mm` call (cycling over `copies` weight copies), its text, and the output for
    mpkc's check (the block-scaled float32 product, bf16)."""
    w8, x8 = x["w"], x["x"]
    (n, k), m = w8.shape, x8.shape[0]
    mp = (m + 15) // 16 * 16
    xp = torch.zeros((mp, k), dtype=torch.uint8, device=dev)
    xp[:m] = x8.view(torch.uint8)
    xp = xp.view(torch.float8_e4m3fn)
    ws = [w8] + [w8.view(torch.uint8).clone().view(torch.float8_e4m3fn) for _ in range(max(1, copies) - 1)]
    one = torch.ones((), dtype=torch.float32, device=dev)
    i = [0]

    def call():
        w = ws[i[0] % len(ws)]
        i[0] += 1
        return torch._scaled_mm(xp, w.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

    got = call()[:m].float()
    want = x8.float() @ w8.float().t()
    den = torch.linalg.vector_norm(want).item()
    err = torch.linalg.vector_norm(got - want).item() / den if den > 0 else 0.0
    if not err < 2e-2:
        fail(f"torch._scaled_mm disagrees with the float32 product of the same e4m3 values: rel_l2 {err:.3e}")
    sw = x["w_scale"].float().repeat_interleave(128, 0).repeat_interleave(128, 1)[:n, :k]
    sx = x["x_scale"].float().repeat_interleave(128, 1)[:, :k]
    y = ((x8.float() * sx) @ (w8.float() * sw).t()).to(torch.bfloat16)
    text = f"torch._scaled_mm(x e4m3 [{mp}, {k}] (M {m} padded), w.t() e4m3 [{k}, {n}], per-tensor scales, bf16 out)"
    return call, text, y


def main(path):
    try:
        import torch
        import torch.nn.functional as F
    except Exception as e:  # noqa: BLE001 - any import failure means no competitor
        fail(f"PyTorch cannot be imported by {sys.executable}: {e}", 3)
    if not torch.cuda.is_available():
        fail(f"PyTorch {torch.__version__} sees no CUDA device", 3)
    with open(path) as f:
        m = json.load(f)
    here = os.path.dirname(os.path.abspath(path))
    dev = torch.device("cuda", int(m.get("device", 0)))
    torch.cuda.set_device(dev)
    dtypes = {
        "bf16": torch.bfloat16,
        "f16": torch.float16,
        "f32": torch.float32,
        "i32": torch.int32,
        "i64": torch.int64,
        "u8": torch.uint8,
    }

    def load(t):
        with open(os.path.join(here, t["file"]), "rb") as f:
            raw = bytearray(f.read())
        if t["dtype"] == "e4m3":
            x = torch.frombuffer(raw, dtype=torch.uint8) if raw else torch.empty(0, dtype=torch.uint8)
            return x.reshape(t["shape"]).to(dev).view(torch.float8_e4m3fn)
        dt = dtypes.get(t["dtype"])
        if dt is None:
            fail(f"no torch dtype for {t['dtype']}")
        x = torch.frombuffer(raw, dtype=dt) if raw else torch.empty(0, dtype=dt)
        return x.reshape(t["shape"]).to(dev)

    x = {name: load(t) for name, t in m["inputs"].items()}
    op = m["op"]
    if op == "rmsnorm":
        eps = float(m["eps"])
        hidden = x["x"].shape[-1]

        def call():
            return F.rms_norm(x["x"], (hidden,), x["w"], eps)

        text = f"torch.nn.functional.rms_norm(x, ({hidden},), w, {eps:g})"
    elif op == "silu_mul":
        n = x["x"].shape[-1] // 2

        def call():
            return F.silu(x["x"][..., :n]) * x["x"][..., n:]

        text = f"F.silu(x[..., :{n}]) * x[..., {n}:]"
    elif op == "embedding":

        def call():
            return F.embedding(x["ids"], x["table"])

        text = "torch.nn.functional.embedding(ids, table)"
    elif op == "argmax":

        def call():
            return torch.argmax(x["logits"], dim=-1)

        text = "torch.argmax(logits, dim=-1)"
    elif op == "scaled_mm":
        call, text, y = scaled_mm(torch, x, int(m.get("copies", 1)), dev)
    else:
        fail(f"unknown op {op!r}")

    out = m["output"]
    if op != "scaled_mm":
        y = call()
    torch.cuda.synchronize()
    want = dtypes.get(out["dtype"])
    if y.dtype != want:
        y = y.to(want)
    y = y.reshape(out["shape"]).contiguous().cpu()
    raw = y.view(torch.uint8).reshape(-1)
    try:
        data = raw.numpy().tobytes()
    except Exception:  # noqa: BLE001 - torch built without numpy
        data = bytes(raw.tolist())
    with open(os.path.join(here, out["file"]), "wb") as f:
        f.write(data)

    plan = m["plan"]
    runs, repeats, warmup = max(1, int(plan["runs"])), max(1, int(plan["repeats"])), max(1, int(plan["warmup"]))

    def series():
        for _ in range(runs):
            call()

    # The library GEMM is timed as mpkc's standalone method and cuBLAS are: `runs` calls captured
    # into a CUDA graph, replayed (eager Python would add its dispatch to a few-us kernel). The
    # consumer ops are timed as PyTorch eager runs them: back-to-back calls.
    timing, step = "eager", series
    if op == "scaled_mm":
        try:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                series()
            torch.cuda.current_stream().wait_stream(side)
            torch.cuda.synchronize()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                series()
            torch.cuda.synchronize()
            timing, step = "graph", graph.replay
        except Exception as e:  # noqa: BLE001 - no capture: time the calls as issued
            sys.stderr.write(f"mpkc-eager: no CUDA graph of torch._scaled_mm ({e}): timed eager\n")
            torch.cuda.synchronize()
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    samples = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1000.0 / runs)
    result = {
        "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name(dev),
        "call": text,
        "timing": timing,
        "samples_us": samples,
    }
    with open(os.path.join(here, "result.json"), "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        fail("usage: mpkc_eager.py manifest.json")
    try:
        main(sys.argv[1])
    except SystemExit:
        raise
    except BaseException:  # noqa: BLE001 - report everything as the runner's failure
        fail(traceback.format_exc())
