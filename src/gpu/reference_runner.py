"""mpkc's reference runner (docs/references.md), written by `mpkc verify` next to each exchange.

    $MPKC_PYTHON mpkc_reference.py manifest.json

Imports the reference module the manifest names, calls its function with the kernel's inputs
(torch tensors on the GPU, or on the CPU without CUDA or where MPKC_REFERENCE_DEVICE says
`cpu`; plain `Array`s when the module sets `MPKC_ARRAYS = "python"`), and writes each output back: little-endian f64 values (i64 for the
integer types, the raw byte for e5m2 and ue8m0, a float returned for one encoded to it). Errors go to stderr as `mpkc-reference: ...`
lines and a non-zero exit; mpkc reports them as the case's failure.
"""

import importlib.util
import inspect
import json
import math
import os
import struct
import sys
import traceback

SIZES = {"bf16": 2, "f16": 2, "f32": 4, "e4m3": 1, "e5m2": 1, "ue8m0": 1, "u8": 1, "i32": 4, "i64": 8}


def fail(msg, code=2):
    for line in str(msg).splitlines() or [""]:
        sys.stderr.write("mpkc-reference: " + line + "\n")
    sys.exit(code)


def e4m3(b):
    sign = -1.0 if b & 0x80 else 1.0
    e, m = (b >> 3) & 0xF, b & 7
    if e == 15 and m == 7:
        return math.nan
    return sign * (m / 8.0 * 2.0 ** -6 if e == 0 else (1 + m / 8.0) * 2.0 ** (e - 7))


def e5m2(b):
    sign = -1.0 if b & 0x80 else 1.0
    e, m = (b >> 2) & 0x1F, b & 3
    if e == 31:
        return math.nan if m else sign * math.inf
    return sign * (m / 4.0 * 2.0 ** -14 if e == 0 else (1 + m / 4.0) * 2.0 ** (e - 15))


def e5m2_byte(v):
    """The e5m2 code of `v` as CUDA's __nv_fp8_e5m2 encodes it: the nearest value, ties to the
    even code, saturating at +-57344 (infinities too); NaN is 0x7F."""
    if v != v:
        return 0x7F
    sign = 0x80 if math.copysign(1.0, v) < 0 else 0
    a = abs(v)
    if a >= 57344.0:
        return sign | 0x7B
    return sign | min(range(0x7C), key=lambda c: (abs(e5m2(c) - a), c & 1))


def decode(dtype, raw):
    """The elements of `raw` as Python numbers (ue8m0 as the power of two it encodes)."""
    n = len(raw) // SIZES[dtype]
    if dtype == "bf16":
        return [struct.unpack("<f", struct.pack("<I", h << 16))[0] for h in struct.unpack("<%dH" % n, raw)]
    if dtype in ("f16", "f32", "i32", "i64"):
        return list(struct.unpack("<%d%s" % (n, {"f16": "e", "f32": "f", "i32": "i", "i64": "q"}[dtype]), raw))
    if dtype == "e4m3":
        return [e4m3(b) for b in raw]
    if dtype == "e5m2":
        return [e5m2(b) for b in raw]
    if dtype == "ue8m0":
        return [math.nan if b == 255 else 2.0 ** (b - 127) for b in raw]
    return list(raw)


class Array:
    """A tensor without torch: `data` (flat, row-major Python numbers), `shape`, `dtype`."""

    def __init__(self, data, shape, dtype):
        self.data, self.shape, self.dtype = data, tuple(shape), dtype

    def __len__(self):
        return self.shape[0] if self.shape else 1

    def __repr__(self):
        return "Array(%s, shape=%s)" % (self.dtype, self.shape)


def flat(x):
    if isinstance(x, Array):
        return list(x.data)
    if isinstance(x, (list, tuple)):
        out = []
        for v in x:
            out.extend(flat(v) if isinstance(v, (list, tuple, Array)) else [v])
        return out
    return [x]


def torch_values(t, spec, torch):
    """A torch result as Python numbers in the form the manifest stores for its dtype."""
    if not isinstance(t, torch.Tensor):
        t = torch.tensor(t)
    t = t.detach().to("cpu").contiguous().reshape(-1)
    if spec["stored"] == "f64":
        return t.to(torch.float32).to(torch.float64).tolist()
    if spec["dtype"] in ("e5m2", "ue8m0") and t.is_floating_point():
        if spec["dtype"] == "e5m2" or t.dtype == getattr(torch, "float8_e8m0fnu", None):
            fp8 = torch.float8_e5m2 if spec["dtype"] == "e5m2" else t.dtype
            return t.to(fp8).view(torch.uint8).to(torch.int64).tolist()
        return [int(round(math.log2(v))) + 127 if v > 0 else 255 for v in t.to(torch.float64).tolist()]
    return t.to(torch.int64).tolist()


def python_values(x, spec):
    vals = flat(x)
    if spec["stored"] == "f64":
        return [float(v) for v in vals]
    if spec["dtype"] == "ue8m0":
        return [int(v) if isinstance(v, int) else (int(round(math.log2(v))) + 127 if v > 0 else 255) for v in vals]
    # An e5m2 value is stored as its code (an int is taken for the code itself).
    if spec["dtype"] == "e5m2":
        return [int(v) if isinstance(v, int) else e5m2_byte(float(v)) for v in vals]
    return [int(v) for v in vals]


def load(path, unit):
    sys.path.insert(0, os.path.dirname(path))
    spec = importlib.util.spec_from_file_location("mpkc_reference_" + unit, path)
    if spec is None or spec.loader is None:
        fail("cannot import %s as a Python module" % path)
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)
    except ModuleNotFoundError as e:
        what = e.name or "a module"
        hint = "install PyTorch there" if what.split(".")[0] == "torch" else "install it there"
        fail("the reference %s imports `%s`, which %s cannot import: %s, or set MPKC_PYTHON to a "
             "Python that has it" % (path, what, sys.executable, hint), 3)
    except Exception:
        fail("importing the reference %s raised:\n%s" % (path, traceback.format_exc()))
    return mod


def main(argv):
    if len(argv) != 2:
        fail("usage: mpkc_reference.py manifest.json")
    with open(argv[1]) as f:
        m = json.load(f)
    base = os.path.dirname(os.path.abspath(argv[1]))
    mod = load(m["module"], m["unit"])
    fn = getattr(mod, m["function"], None)
    if not callable(fn):
        fail("the reference %s defines no function `%s`" % (m["module"], m["function"]))
    raws = []
    for x in m["inputs"]:
        with open(os.path.join(base, x["file"]), "rb") as f:
            raws.append(f.read())
    mode = getattr(mod, "MPKC_ARRAYS", "torch")
    torch = None
    if mode == "python":
        args = [Array(decode(x["dtype"], raw), x["shape"], x["dtype"]) for x, raw in zip(m["inputs"], raws)]
    elif mode == "torch":
        try:
            import torch
        except ModuleNotFoundError:
            fail("the reference %s takes torch tensors, and %s cannot import torch: install PyTorch "
                 "there, or set MPKC_PYTHON to a Python that has it" % (m["module"], sys.executable), 3)
        # MPKC_REFERENCE_DEVICE if set, else the kernel's GPU (MPKC_REFERENCE_CUDA_DEVICE, which
        # mpkc sets) where torch sees CUDA, else the CPU.
        device = os.environ.get("MPKC_REFERENCE_DEVICE") or (
            "cuda:" + os.environ.get("MPKC_REFERENCE_CUDA_DEVICE", "0") if torch.cuda.is_available() else "cpu")
        types = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32,
                 "e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2, "u8": torch.uint8,
                 "i32": torch.int32, "i64": torch.int64}
        args = []
        for x, raw in zip(m["inputs"], raws):
            if x["dtype"] == "ue8m0":
                t = torch.tensor(decode("ue8m0", raw), dtype=torch.float32)
            elif raw:
                t = torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(types[x["dtype"]])
            else:
                t = torch.empty(0, dtype=types[x["dtype"]])
            args.append(t.reshape(x["shape"]).to(device))
    else:
        fail("MPKC_ARRAYS is %r: it is \"torch\" (the default) or \"python\"" % (mode,))
    kwargs = {}
    try:
        takes = inspect.signature(fn).parameters
        if "params" in takes:
            kwargs["params"] = m["params"]
        # A task with a paged KV cache: the run's page table (docs/references.md).
        if "paged_kv" in takes and "paged_kv" in m:
            kwargs["paged_kv"] = m["paged_kv"]
    except (TypeError, ValueError):
        pass
    # A chain's reference (`mpkc verify --chain`) takes one dict of its tensors by `unit.tensor`.
    if m.get("call") == "dict":
        args = [dict(zip([x["name"] for x in m["inputs"]], args))]
    try:
        result = fn(*args, **kwargs)
    except Exception:
        fail("%s.%s raised:\n%s" % (os.path.basename(m["module"]), m["function"], traceback.format_exc()))
    outs = m["outputs"]
    if isinstance(result, dict):
        missing = [o["name"] for o in outs if o["name"] not in result]
        if missing:
            fail("the reference returned no output %s" % ", ".join("`%s`" % n for n in missing))
        result = [result[o["name"]] for o in outs]
    elif len(outs) == 1 and not isinstance(result, tuple):
        result = [result]
    if not isinstance(result, (list, tuple)) or len(result) != len(outs):
        fail("the reference returned %s; the contract declares %d output(s) (%s): return them in "
             "order, as a tuple, or a dict by name" % (type(result).__name__, len(outs),
                                                         ", ".join(o["name"] for o in outs)))
    for spec, value in zip(outs, result):
        vals = python_values(value, spec) if torch is None else torch_values(value, spec, torch)
        n = 1
        for d in spec["shape"]:
            n *= d
        if len(vals) != n:
            fail("output `%s`: the reference returned %d values, the contract declares %s = %d"
                 % (spec["name"], len(vals), spec["shape"], n))
        code = "d" if spec["stored"] == "f64" else "q"
        with open(os.path.join(base, spec["file"]), "wb") as f:
            f.write(struct.pack("<%d%s" % (n, code), *vals))


if __name__ == "__main__":
    main(sys.argv)
