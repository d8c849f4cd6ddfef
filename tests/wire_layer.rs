//! The Python layer `mpkc wire` generates, run: python3 executes the wired
//! `persistent_kernel.py` of the test MPK tree against stand-ins for mirage's `DTensor`, `dtype`
//! objects and graph builders (the API of python/mirage/_cython/core.pyx at de8745d9: `num_dims`,
//! `dim(i)`, `dtype` compared with `bfloat16`, `float8`, …). Each case gives the DTensors a
//! real stdlib unit receives, with the extents and dtypes written here from the contract text
//! (not read back from mpkc's output): the layer must register its task for them and refuse,
//! naming the tensor, each single change of one extent, the number of extents or the dtype.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create the fixture folder");
    for e in std::fs::read_dir(from).expect("read the fixture") {
        let p = e.expect("a fixture entry").path();
        let dest = to.join(p.file_name().expect("a file name"));
        if p.is_dir() {
            copy(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).expect("copy a fixture file");
        }
    }
}

/// A test MPK tree with `files` wired into it; returns its persistent_kernel.py.
fn wired(name: &str, files: &[&str]) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("wire_layer")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    copy(&root().join("tests/fixtures/mirage"), &d);
    let o = Command::new(env!("CARGO_BIN_EXE_mpkc"))
        .current_dir(root())
        .arg("wire")
        .args(files)
        .arg("--mirage")
        .arg(&d)
        .env("NO_COLOR", "1")
        .output()
        .expect("run mpkc wire");
    assert_eq!(
        o.status.code(),
        Some(0),
        "mpkc wire {files:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    d.join("python/mirage/mpk/persistent_kernel.py")
}

/// Runs the wired layer module under python3 with `cases` (a Python literal: a list of
/// `(unit, [(name, dtype, dims), ...])`, the unit's tensors in parameter order). For each case
/// the driver calls the layer with matching DTensors (it must register the unit), then with
/// each one-tensor change (a leading extent one short, each extent one more, one extent too
/// many, another dtype): each must raise AssertionError whose message names the tensor.
/// `extra` is Python run after the cases (more specific checks). Returns stdout.
fn run(py: &Path, cases: &str, extra: &str) -> String {
    let driver = format!(
        r#"
import sys
src = open(sys.argv[1]).read().replace("from ..kernel import KNGraph, TBGraph", "")

class dtype:
    def __init__(self, name): self.name = name
    def __eq__(self, other): return isinstance(other, dtype) and other.name == self.name
    def __ne__(self, other): return not self.__eq__(other)
    def __hash__(self): return hash(self.name)
    def __repr__(self): return self.name

DT = {{n: dtype(v) for n, v in [("bfloat16", "bf16"), ("float16", "fp16"), ("float32", "fp32"),
    ("float8", "fp8"), ("float8_e4m3", "fp8_e4m3"), ("int32", "int32"), ("int64", "int64"),
    ("uint8", "uint8"), ("int16", "int16")]}}

class DTensor:
    def __init__(self, dt, dims):
        self.dtype = DT[dt]
        self._dims = list(dims)
        self.num_dims = len(dims)
    def dim(self, idx):
        if idx < self.num_dims:
            return self._dims[idx]
        assert False, "Error: index out of range"

class CyTBGraph:
    def __init__(self, *a): self.args = a

class TBGraph:
    def __init__(self, g): self.inputs = []
    def new_input(self, t, *a): self.inputs.append(t)

class KNGraph:
    def __init__(self): self.tasks = []; self.ops = None
    def customized(self, ops, g): self.ops = ops
    def register_task(self, g, name, p): self.tasks.append(name)

ns = dict(DT)
ns.update(DTensor=DTensor, CyTBGraph=CyTBGraph, TBGraph=TBGraph, KNGraph=KNGraph)
exec(compile(src, sys.argv[1], "exec"), ns)
PK = ns["PersistentKernel"]

def call(unit, tensors):
    pk = PK(num_workers=132, use_v2_runtime=True)
    getattr(pk, unit + "_layer")(*[DTensor(dt, dims) for (_, dt, dims) in tensors])
    return pk.kn_graph

OTHER = {{"bfloat16": "float16", "float16": "bfloat16", "float32": "int32", "int32": "float32",
    "int64": "int32", "uint8": "int16", "float8": "bfloat16"}}

checked = 0
for unit, tensors in {cases}:
    g = call(unit, tensors)
    assert g.tasks == [unit], (unit, g.tasks)
    for k, (name, dt, dims) in enumerate(tensors):
        changes = [("dtype", (name, OTHER[dt], dims)), ("extra extent", (name, dt, list(dims) + [1]))]
        for j in range(len(dims)):
            more = list(dims); more[j] += 1
            changes.append(("extent %d + 1" % j, (name, dt, more)))
        if dims:
            fewer = list(dims); fewer[0] -= 1
            changes.append(("extent 0 - 1", (name, dt, fewer)))
        for what, changed in changes:
            ts = list(tensors); ts[k] = changed
            try:
                call(unit, ts)
            except AssertionError as e:
                assert "`%s`" % name in str(e), (unit, name, what, str(e))
                checked += 1
                continue
            print("ACCEPTED", unit, name, what)
{extra}
print("refused", checked)
"#
    );
    let script = py.with_file_name("layer_driver.py");
    std::fs::write(&script, driver).expect("write the driver");
    let o = Command::new("python3")
        .arg(&script)
        .arg(py)
        .output()
        .expect("python3 runs (the README's machine has Python)");
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "python3 failed:\n{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

/// Every extent is compiled into the kernel: the layer takes exactly the contract's shapes and
/// dtypes (the bf16 GEMV's q_a, the fp8 GEMV's q_b with its f32 scales, add_rmsnorm with its
/// in-place residual) and refuses each changed one.
#[test]
fn layer_asserts_each_tensor_shape_and_dtype() {
    let py = wired(
        "fixed",
        &[
            "stdlib/linear_bf16_gemv.mpk",
            "stdlib/linear_fp8_gemv.mpk",
            "stdlib/dsv3/add_rmsnorm.mpk",
        ],
    );
    // stdlib/linear_bf16_gemv.mpk, instance q_a(N = 1536, K = 7168), m = 1:
    // x: bf16[m, K], W: bf16[N, K], y: bf16[m, N].
    // stdlib/linear_fp8_gemv.mpk, instance q_b(N = 3072, K = 1536), m = 1: x: e4m3[m, K],
    // x_scale: f32[m, K / 128], W: e4m3[N, K], W_scale: f32[ceil_div(N, 128), K / 128],
    // y: bf16[m, N] (torch's float8 types attach as mirage's `float8`).
    // stdlib/dsv3/add_rmsnorm.mpk (hidden = 7168, m = 1): x: bf16[m, hidden], residual:
    // bf16[m, hidden] inout, w: bf16[hidden], y: bf16[m, hidden].
    let cases = r#"[
        ("linear_bf16_gemv_q_a", [("x", "bfloat16", [1, 7168]), ("W", "bfloat16", [1536, 7168]), ("y", "bfloat16", [1, 1536])]),
        ("linear_fp8_gemv_q_b", [("x", "float8", [1, 1536]), ("x_scale", "float32", [1, 12]), ("W", "float8", [3072, 1536]), ("W_scale", "float32", [24, 12]), ("y", "bfloat16", [1, 3072])]),
        ("add_rmsnorm", [("x", "bfloat16", [1, 7168]), ("residual", "bfloat16", [1, 7168]), ("w", "bfloat16", [7168]), ("y", "bfloat16", [1, 7168])]),
    ]"#;
    // The in-place residual is an output of the graph too, the same DTensor.
    let extra = r#"
g = call("add_rmsnorm", [("x", "bfloat16", [1, 7168]), ("residual", "bfloat16", [1, 7168]), ("w", "bfloat16", [7168]), ("y", "bfloat16", [1, 7168])])
assert len(g.ops) == 5 and g.ops[4] is g.ops[1], g.ops
# An fp8 tensor attached as float8_e4m3 passes too.
call("linear_fp8_gemv_q_b", [("x", "float8_e4m3", [1, 1536]), ("x_scale", "float32", [1, 12]), ("W", "float8_e4m3", [3072, 1536]), ("W_scale", "float32", [24, 12]), ("y", "bfloat16", [1, 3072])])
"#;
    let out = run(&py, cases, extra);
    assert!(!out.contains("ACCEPTED"), "{out}");
    // 12 tensors: dtype, extra extent, one per extent (+1), the leading one -1.
    // 2-D: 5 changes, 1-D: 4.
    assert!(out.contains("refused 59"), "{out}");
}

/// The run-time token count's tensors (`m_real = runtime`) take any buffer of at least the
/// contract's maximum rows; a paged KV pool any page count; a view any extents (its DTensor
/// holds the parent's rows). Their other extents, and every dtype, stay exact.
#[test]
fn layer_leading_extent_of_runtime_rows_and_paged_pools() {
    let py = wired(
        "leading",
        &[
            "stdlib/linear_bf16_runtime_m.mpk",
            "stdlib/dsv3/mla_decode.mpk",
            "stdlib/dsv3/rope.mpk",
        ],
    );
    // stdlib/linear_bf16_runtime_m.mpk, instance o_proj(N = 7168, K = 2048), m_real = runtime
    // (at most 64): A: bf16[m_real, K], W: bf16[N, K], R: bf16[m_real, N], C: bf16[m_real, N].
    // stdlib/dsv3/mla_decode.mpk, mla_decode_partial (m = 1, heads 16, kv_lora 512, rope 64,
    // page_tokens 64, max_context 16384, splits 8): q: bf16[m, heads, 576], ckv: the paged pool
    // bf16[pages, 64, 576], o_partial: f32[m, heads, splits, 512], lse_partial:
    // f32[m, heads, splits].
    let extra = r#"
A = ("A", "bfloat16", [64, 2048]); W = ("W", "bfloat16", [7168, 2048])
R = ("R", "bfloat16", [64, 7168]); C = ("C", "bfloat16", [64, 7168])
call("linear_bf16_runtime_m_o_proj", [A, W, R, C])
# MPK's buffers sized for more tokens than the contract's maximum: accepted.
call("linear_bf16_runtime_m_o_proj", [("A", "bfloat16", [128, 2048]), W, ("R", "bfloat16", [128, 7168]), ("C", "bfloat16", [128, 7168])])
def refused(unit, ts, name):
    try:
        call(unit, ts)
    except AssertionError as e:
        assert "`%s`" % name in str(e), str(e)
        return
    print("ACCEPTED", unit, name)
# Fewer rows than the maximum, or a wider row: refused.
refused("linear_bf16_runtime_m_o_proj", [("A", "bfloat16", [63, 2048]), W, R, C], "A")
refused("linear_bf16_runtime_m_o_proj", [A, W, R, ("C", "bfloat16", [64, 7169])], "C")
# The weight's leading extent is exact.
refused("linear_bf16_runtime_m_o_proj", [A, ("W", "bfloat16", [7169, 2048]), R, C], "W")
q = ("q", "bfloat16", [1, 16, 576]); o = ("o_partial", "float32", [1, 16, 8, 512]); l = ("lse_partial", "float32", [1, 16, 8])
for pages in (256, 1, 4096):
    call("mla_decode_partial", [q, ("ckv", "bfloat16", [pages, 64, 576]), o, l])
refused("mla_decode_partial", [q, ("ckv", "bfloat16", [256, 32, 576]), o, l], "ckv")
refused("mla_decode_partial", [q, ("ckv", "float32", [256, 64, 576]), o, l], "ckv")
refused("mla_decode_partial", [q, ("ckv", "bfloat16", [256, 64 * 576]), o, l], "ckv")
# stdlib/dsv3/rope.mpk (m = 1, heads 16): q_pe: bf16[m, heads, 64] view(stride 192, offset
# 128), k_pe: bf16[m, 64] view(stride 2176, offset 2048), positions: i32[m]. A view's DTensor
# holds the parent's rows: its extents are not the view's, and only its dtype is checked.
pos = ("positions", "int32", [1])
for qd, kd in (([1, 16, 64], [1, 64]), ([1, 3072], [1, 2176]), ([16, 192], [1, 2176])):
    call("rope", [("q_pe", "bfloat16", qd), ("k_pe", "bfloat16", kd), pos])
refused("rope", [("q_pe", "float16", [1, 3072]), ("k_pe", "bfloat16", [1, 2176]), pos], "q_pe")
refused("rope", [("q_pe", "bfloat16", [1, 3072]), ("k_pe", "bfloat16", [1, 2176]), ("positions", "int32", [2])], "positions")
"#;
    let out = run(&py, "[]", extra);
    assert!(!out.contains("ACCEPTED"), "{out}");
    assert!(out.contains("refused 0"), "{out}");
}
