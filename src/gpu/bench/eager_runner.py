"""mpkc bench's PyTorch eager competitor (docs/bench.md), written by `mpkc bench` next to each exchange.

    $MPKC_PYTHON mpkc_eager.py manifest.json

The manifest names the op (`rmsnorm`, `silu_mul`, `embedding`, `argmax`), its scalars, its input
tensors (by the body template's formal names: dtype, shape outermost first, and a file of the
elements mpkc's kernel read, raw little-endian in the dtype's own encoding), the output (dtype,
shape and the file to write) and the timing plan (`runs` back-to-back calls per sample, `repeats`
samples, `warmup` untimed series first), the method of `mpkc bench` (docs/bench.md) with eager
calls instead of graph replay. The runner puts the inputs on `cuda:<device>`, makes one call and
writes its output back in the same encoding, times the calls with CUDA events, and writes
`result.json`: {"torch", "gpu", "call", "samples_us"} (microseconds per call, one per sample).

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
    else:
        fail(f"unknown op {op!r}")

    out = m["output"]
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
    for _ in range(warmup):
        for _ in range(runs):
            call()
    torch.cuda.synchronize()
    samples = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(runs):
            call()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1000.0 / runs)
    result = {
        "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name(dev),
        "call": text,
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
