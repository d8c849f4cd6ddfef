//! Python references of inline bodies (docs/references.md), everything but the GPU: a contract
//! names its reference; verify writes the kernel's inputs to the exchange, runs the embedded
//! runner with `python3`, reads the outputs back and compares. References here are pure Python
//! (`MPKC_ARRAYS = "python"`), so they run without torch; a reference that needs torch where it
//! is missing must fail with a clear message (a `torch.py` next to the reference that raises
//! stands for a Python without torch, whatever this machine has).

use mpkc::driver::{check_sources, Source};
use mpkc::gpu::compare::compare;
use mpkc::gpu::data::{Fill, HostTensor};
use mpkc::gpu::python;
use mpkc::gpu::reference::{self, Check, Semantics};
use mpkc::ir::Dtype;
use mpkc::valid::CheckedTask;
use std::path::{Path, PathBuf};
use std::process::Command;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mpkc-reference-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The one task instance of `contract`, checked where it lies in `dir` next to `files`.
fn task_in(dir: &Path, contract: &str, files: &[(&str, &str)]) -> CheckedTask {
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let path = dir.join("contract.mpk");
    std::fs::write(&path, contract).unwrap();
    let checked = check_sources(
        &[Source {
            path: path.to_string_lossy().into_owned(),
            text: contract.to_string(),
        }],
        &Default::default(),
        &Default::default(),
    );
    assert!(
        !checked.iter().any(|c| c.has_errors()),
        "{:?}",
        checked[0].diags
    );
    checked.into_iter().flat_map(|c| c.tasks).next().unwrap()
}

/// An inline SwiGLU over bf16, the math of the stdlib's `silu_mul` template.
const SILU: &str = r#"task silu_inline {
  family consumer-no-smem
  param n: int = 256
  param m: int in 1..=16 = 3
  tensor x: bf16[m, 2 * n] in
  tensor y: bf16[m, n] out
  granularity per_tile(tasks m)
  body cuda {
    for (int c = threadIdx.x; c < params::n; c += kConsumerThreads) {
      float const g = __bfloat162float(x[task_offset * 2 * params::n + c]);
      float const u = __bfloat162float(x[task_offset * 2 * params::n + params::n + c]);
      y[task_offset * params::n + c] = __float2bfloat16_rn(g / (1.f + __expf(-g)) * u);
    }
  }
  reference python "silu_ref.py" fn silu_mul
}
"#;

/// The SwiGLU from its definition, in plain Python.
const SILU_REF: &str = r#"import math

MPKC_ARRAYS = "python"


def silu_mul(x, params):
    m, width = x.shape
    n = width // 2
    assert n == params["n"], (n, params)
    out = []
    for r in range(m):
        row = x.data[r * width:(r + 1) * width]
        out.extend(g / (1.0 + math.exp(-g)) * u for g, u in zip(row[:n], row[n:]))
    return out
"#;

fn silu_inputs(t: &CheckedTask) -> Vec<HostTensor> {
    let sem = reference::semantics(t).unwrap();
    assert!(matches!(sem, Semantics::Python(_)), "{sem:?}");
    reference::make_inputs(t, &sem, &mut Fill::new(11))
}

#[test]
fn a_pure_python_reference_runs_end_to_end_and_agrees_with_mpkcs_float64() {
    let dir = scratch("silu");
    let t = task_in(&dir, SILU, &[("silu_ref.py", SILU_REF)]);
    let r = t.ir.reference.clone().unwrap();
    let inputs = silu_inputs(&t);
    let exp = python::expected(&t, &r, &inputs, None, &dir.join("exchange"), 0).unwrap();
    assert_eq!(exp.len(), 1);
    assert_eq!(exp[0].check, Check::RelL2(1e-2));
    // mpkc's own float64 SwiGLU on the same inputs.
    let mine = reference::expected(&t, &Semantics::SiluMul, &inputs);
    assert_eq!(mine[0].values.len(), 3 * 256);
    let worst = exp[0]
        .values
        .iter()
        .zip(&mine[0].values)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    assert!(worst < 1e-12, "python and mpkc differ by {worst}");
    // A kernel's bf16 result passes; one row gone wrong fails.
    let mut y = HostTensor::filled("y", Dtype::Bf16, &[3, 256], 0);
    for (i, v) in mine[0].values.iter().enumerate() {
        y.set(i, *v);
    }
    assert!(compare("silu_inline", std::slice::from_ref(&y), &exp[0]).pass);
    for i in 256..512 {
        y.set(i, 0.0);
    }
    let r = compare("silu_inline", std::slice::from_ref(&y), &exp[0]);
    assert!(!r.pass && r.error > 0.1, "{r:?}");
}

/// Quantization to e5m2 with one UE8M0 power-of-two scale per 128 elements, the scales
/// declared `scale of y`, and its pure-Python reference (tests/gpu.rs runs the kernel).
const QUANT_E5M2: &str = include_str!("fixtures/fp8/quant_e5m2.mpk");
const QUANT_E5M2_REF: &str = include_str!("fixtures/fp8/quant_e5m2.ref.py");

/// e5m2 outputs with ue8m0 scales through the whole exchange: the runner encodes both, mpkc
/// decodes both by their formats and pairs `y` with its declared `scale of y`; a kernel's
/// output quantized the same way passes, scales one power of two off fail.
#[test]
fn e5m2_outputs_with_declared_ue8m0_scales_compare_dequantized() {
    let dir = scratch("quant_e5m2");
    let t = task_in(&dir, QUANT_E5M2, &[("quant_e5m2.ref.py", QUANT_E5M2_REF)]);
    let r = t.ir.reference.clone().unwrap();
    let sem = reference::semantics(&t).unwrap();
    let inputs = reference::make_inputs(&t, &sem, &mut Fill::new(5));
    let exp = python::expected(&t, &r, &inputs, None, &dir.join("exchange"), 0).unwrap();
    assert_eq!(
        exp[0].check,
        Check::Dequant {
            scales: 1,
            group: 128,
            tol: 2e-2
        }
    );
    assert_eq!(exp[1].check, Check::ScalesOf);
    // The scales came back as values: powers of two near amax / 57344 (amax below 1).
    assert!(
        exp[1]
            .values
            .iter()
            .all(|s| *s > 0.0 && *s <= 2f64.powi(-15) && s.log2().fract() == 0.0),
        "{:?}",
        exp[1].values
    );
    let kernel = |bump: i32| {
        let x = &inputs[0];
        let mut y = HostTensor::filled("y", Dtype::E5m2, &[1, 256], 0);
        let mut s = HostTensor::filled("y_scale", Dtype::Ue8m0, &[1, 2], 0);
        for g in 0..2 {
            let amax = (0..128)
                .map(|i| x.get(g * 128 + i).abs())
                .fold(0.0, f64::max);
            let scale = 2f64.powf((amax / 57344.0).log2().ceil());
            s.set(g, scale * 2f64.powi(if g == 1 { bump } else { 0 }));
            for i in 0..128 {
                y.set(g * 128 + i, x.get(g * 128 + i) / scale);
            }
        }
        vec![y, s]
    };
    let good = kernel(0);
    for e in &exp {
        let c = compare("quant_e5m2", &good, e);
        assert!(c.pass, "{c:?}");
    }
    let off = compare("quant_e5m2", &kernel(1), &exp[0]);
    assert!(!off.pass && off.error > 0.3, "{off:?}");
}

#[test]
fn the_ui_neighbours_reference_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let path = root.join("tests/ui/reference/pass_e0018_reference.mpk");
    let text = std::fs::read_to_string(&path).unwrap();
    let t = check_sources(
        &[Source {
            path: path.to_string_lossy().into_owned(),
            text,
        }],
        &Default::default(),
        &Default::default(),
    )
    .into_iter()
    .flat_map(|c| c.tasks)
    .next()
    .unwrap();
    let r = t.ir.reference.clone().unwrap();
    let sem = reference::semantics(&t).unwrap();
    let inputs = reference::make_inputs(&t, &sem, &mut Fill::new(5));
    let exp = python::expected(&t, &r, &inputs, None, &scratch("double"), 0).unwrap();
    assert_eq!(exp[0].check, Check::RelL2(1e-6));
    for (i, v) in exp[0].values.iter().enumerate() {
        assert_eq!(*v, 2.0 * inputs[0].get(i));
    }
}

fn error_of(reference: &str, extra: &[(&str, &str)]) -> String {
    let dir = scratch(&format!("err{}", reference.len()));
    let mut files = vec![("silu_ref.py", reference)];
    files.extend_from_slice(extra);
    let t = task_in(&dir, SILU, &files);
    let r = t.ir.reference.clone().unwrap();
    let inputs = silu_inputs(&t);
    python::expected(&t, &r, &inputs, None, &dir.join("exchange"), 0).unwrap_err()
}

/// Importing this module fails as it does in a Python without torch.
const NO_TORCH: &str = "raise ModuleNotFoundError(\"No module named 'torch'\", name='torch')\n";

#[test]
fn a_reference_that_needs_torch_where_it_is_missing_is_a_clear_error() {
    let e = error_of(
        "import torch\n\ndef silu_mul(x):\n    return x\n",
        &[("torch.py", NO_TORCH)],
    );
    assert!(
        e.contains("imports `torch`") && e.contains("install PyTorch") && e.contains("MPKC_PYTHON"),
        "{e}"
    );
    // Taking torch tensors (the default) needs torch too.
    let e = error_of(
        "def silu_mul(x):\n    return x\n",
        &[("torch.py", NO_TORCH)],
    );
    assert!(
        e.contains("takes torch tensors") && e.contains("cannot import torch"),
        "{e}"
    );
}

#[test]
fn a_failing_reference_is_an_error_naming_what_went_wrong() {
    let e = error_of(
        "MPKC_ARRAYS = 'python'\n\ndef silu_mul(x):\n    raise ValueError('no idea')\n",
        &[],
    );
    assert!(e.contains("ValueError: no idea"), "{e}");
    // Bound at the top level but not a function: found by check's look for the name, refused by
    // the run (a file with no such name at all is check's E0018, tests/ui/reference).
    let e = error_of("MPKC_ARRAYS = 'python'\n\nsilu_mul = 3\n", &[]);
    assert!(e.contains("silu_mul"), "{e}");
    let e = error_of(
        "MPKC_ARRAYS = 'python'\n\ndef silu_mul(x):\n    return [0.0] * 5\n",
        &[],
    );
    assert!(e.contains("returned 5 values") && e.contains("768"), "{e}");
    let e = error_of(
        "MPKC_ARRAYS = 'python'\n\ndef silu_mul(x):\n    return ([0.0], [1.0])\n",
        &[],
    );
    assert!(e.contains("declares 1 output(s) (y)"), "{e}");
}

fn list(args: &[&str], cwd: &Path) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_mpkc"))
        .arg("verify")
        .arg("--list")
        .args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Issue 13's done-when: `mpkc verify --list` shows no stdlib case without a reference, from
/// any directory (the stdlib's references are embedded).
#[test]
fn every_stdlib_case_lists_its_reference() {
    let elsewhere = scratch("list");
    let text = list(&[], &elsewhere);
    assert!(text.lines().count() > 20, "{text}");
    for l in text.lines() {
        let (_, reference) = l
            .split_once("\treference: ")
            .unwrap_or_else(|| panic!("no reference: {l}"));
        assert!(
            reference.starts_with("mpkc float64") || reference.starts_with("python "),
            "{l}"
        );
    }
    assert!(
        text.lines()
            .any(|l| l
                == "silu_mul_fp8_routed\treference: python stdlib/dsv3/silu_mul_fp8.ref.py:silu_mul_fp8"),
        "{text}"
    );
    let json = list(
        &["--message-format", "json", "--only", "silu_mul_fp8_routed"],
        &elsewhere,
    );
    let v: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(
        v["reference"],
        "python stdlib/dsv3/silu_mul_fp8.ref.py:silu_mul_fp8"
    );
    // A contract's own reference, on disk next to it; an inline body without one is skipped.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = list(&["tests/ui/reference/pass_e0018_reference.mpk"], root);
    assert_eq!(
        text.trim(),
        "double_it\treference: python tests/ui/reference/double_it.ref.py:double_it"
    );
    let text = list(&["examples/residual_add.mpk"], root);
    assert!(
        text.contains("skipped: inline CUDA body without a reference"),
        "{text}"
    );
}

/// A paged KV cache (`paged(...)`): the reference gets the run's page table as `paged_kv` and
/// finds each request's last token where the harness's `paged_kv_*` buffers put it.
#[test]
fn a_paged_reference_gets_the_run_s_page_table() {
    const PAGED: &str = r#"task last_token {
  family consumer-no-smem
  tensor ckv: bf16[8, 4, 16] in paged(page 4, max_context 16, requests 2)
  tensor y: bf16[2, 16] out
  granularity per_tile(tasks 1)
  body cuda {
    for (int r = 0; r < ckv_requests; ++r) {
      mpkc::PagedKvRequest const kv = mpkc::paged_kv_request(runtime_config, r, ckv_page_tokens, ckv_max_context);
      int const t = kv.context - 1;
      for (int i = threadIdx.x; i < 16; i += kConsumerThreads)
        y[r * 16 + i] = ckv[(int64_t(kv.pages[t / 4]) * 4 + t % 4) * 16 + i];
    }
  }
  reference python "last_ref.py" fn last_token
}
"#;
    const LAST_REF: &str = r#"MPKC_ARRAYS = "python"


def last_token(ckv, paged_kv):
    page, row = paged_kv["page"], ckv.shape[2]
    out = []
    for pages, n in zip(paged_kv["pages"], paged_kv["context_lens"]):
        t = n - 1
        at = (pages[t // page] * page + t % page) * row
        out.extend(ckv.data[at:at + row])
    return out
"#;
    let dir = scratch("paged");
    let t = task_in(&dir, PAGED, &[("last_ref.py", LAST_REF)]);
    let r = t.ir.reference.clone().unwrap();
    let sem = reference::semantics(&t).unwrap();
    let inputs = reference::make_inputs(&t, &sem, &mut Fill::new(5));
    let (x, p) = mpkc::gpu::paged::paged_of(&t).unwrap();
    let table = mpkc::gpu::paged::PagedRun::new(&p, x.dims[0], 7, 3);
    assert_eq!(table.indptr[..3], [0, 2, 4]);
    let exp = python::expected(&t, &r, &inputs, Some(&table), &dir.join("exchange"), 0).unwrap();
    // Token 6 of each request: page 1 of its two, row 2.
    let ckv = &inputs[0];
    for req in 0..2 {
        let page = table.indices[table.indptr[req] as usize + 1] as usize;
        for i in 0..16 {
            assert_eq!(
                exp[0].values[req * 16 + i],
                ckv.get((page * 4 + 2) * 16 + i),
                "request {req}, element {i}"
            );
        }
    }
}
