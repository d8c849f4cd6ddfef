//! Python references of inline bodies (`reference python "FILE.py" fn NAME`, docs/references.md):
//! the exchange with the runner, running it, and the comparisons the reference's outputs get.
//!
//! Exchange format, one directory per task of a case: `manifest.json` names the module, the
//! function, the params and, per tensor, its name, dtype, shape (outermost first) and file (the
//! outputs are the tensors the task writes, `out` and `inout`, in declaration order); each
//! input file holds the tensor's elements as the kernel saw them (raw little-endian, the
//! dtype's own encoding: bf16 as its 2 bytes, e4m3 as its byte), each output file what the
//! runner wrote back: little-endian f64 values for `bf16`/`f16`/`f32`/`e4m3` outputs, i64 for
//! the integer types and the raw byte for `e5m2`/`ue8m0`, which mpkc decodes ([`stored_value`])
//! as [`HostTensor::get`] decodes the kernel's.
//! The runner ([`RUNNER`], embedded, written next to the manifest) is run as
//! `$MPKC_PYTHON mpkc_reference.py manifest.json` (`python3` by default).

use super::data::{e5m2_to_f32, elements, ue8m0_to_f32, HostTensor};
pub use super::ref_compare::{checks, expectations, scale_pair, written, Written};
use super::reference::Expected;
use crate::ir::{Dtype, ParamValue, ReferenceFile, ReferenceIr};
use crate::valid::CheckedTask;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The runner script, as shipped (`src/gpu/reference_runner.py`).
pub const RUNNER: &str = include_str!("reference_runner.py");

/// The runner's file name in an exchange directory.
pub const RUNNER_FILE: &str = "mpkc_reference.py";

/// The environment variable naming the Python interpreter (default `python3`).
pub const PYTHON_ENV: &str = "MPKC_PYTHON";

/// The environment variable by which verify tells the runner its GPU's ordinal (the runner puts
/// torch tensors on `cuda:N` when torch sees CUDA and `MPKC_REFERENCE_DEVICE` is unset).
pub const CUDA_DEVICE_ENV: &str = "MPKC_REFERENCE_CUDA_DEVICE";

/// The interpreter verify runs: `$MPKC_PYTHON`, else `python3`.
pub fn python() -> String {
    std::env::var(PYTHON_ENV)
        .ok()
        .filter(|p| !p.trim().is_empty())
        .unwrap_or_else(|| "python3".to_string())
}

/// How the runner stores an output's values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stored {
    /// Little-endian f64 (the floating types but e5m2).
    F64,
    /// Little-endian i64 (the integer types; the raw encoding byte of e5m2 and ue8m0).
    I64,
}

/// How output values of `dtype` come back from the runner.
pub fn stored(dtype: Dtype) -> Stored {
    match dtype {
        Dtype::Bf16 | Dtype::F16 | Dtype::F32 | Dtype::E4m3 => Stored::F64,
        Dtype::E5m2 | Dtype::Ue8m0 | Dtype::U8 | Dtype::I32 | Dtype::I64 => Stored::I64,
    }
}

/// The value of one element the runner stored as `stored(dtype)` (`bytes`, little-endian): the
/// f64, the integer, or for e5m2 and ue8m0 the value of the raw byte (so that it compares with
/// [`HostTensor::get`] of the kernel's element).
pub fn stored_value(dtype: Dtype, bytes: [u8; 8]) -> f64 {
    match (stored(dtype), dtype) {
        (Stored::F64, _) => f64::from_le_bytes(bytes),
        (Stored::I64, Dtype::E5m2) => f64::from(e5m2_to_f32(raw_byte(bytes))),
        (Stored::I64, Dtype::Ue8m0) => f64::from(ue8m0_to_f32(raw_byte(bytes))),
        (Stored::I64, _) => i64::from_le_bytes(bytes) as f64,
    }
}

/// The encoding byte of a raw-byte value the runner stored as an i64 (anything outside 0..=255
/// is no byte: NaN's 0xFF, which fails the comparison).
fn raw_byte(bytes: [u8; 8]) -> u8 {
    u8::try_from(i64::from_le_bytes(bytes)).unwrap_or(0xFF)
}

pub(super) fn file_name(prefix: &str, i: usize, name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("{prefix}{i}_{clean}.bin")
}

/// The module's path: the file on disk, or the embedded text written under `dir/references/`.
fn module_path(dir: &Path, r: &ReferenceIr) -> std::io::Result<PathBuf> {
    match &r.file {
        ReferenceFile::Disk(p) => std::path::absolute(p),
        ReferenceFile::Embedded { path, text } => {
            let p = dir.join("references").join(path);
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&p, text)?;
            std::path::absolute(&p)
        }
        ReferenceFile::Unresolved => Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("reference `{}` was never looked up", r.path),
        )),
    }
}

/// Writes the exchange of `task` on `inputs` into `dir` (created): the manifest, one file per
/// input, and the runner. Returns the manifest's path.
pub fn write_exchange(
    dir: &Path,
    task: &CheckedTask,
    r: &ReferenceIr,
    inputs: &[HostTensor],
    paged: Option<&super::paged::PagedRun>,
) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let module = module_path(dir, r)?;
    let mut ins = Vec::new();
    // The op's own state (`grid_barrier` counters) is no operand of the math: not passed.
    let state: Vec<bool> = task.ir.inputs().map(|(_, t)| t.is_state()).collect();
    for (i, x) in inputs.iter().enumerate() {
        if state.get(i).copied().unwrap_or(false) {
            continue;
        }
        let f = file_name("in", i, &x.name);
        std::fs::write(dir.join(&f), &x.bytes)?;
        ins.push(json!({"name": x.name, "dtype": x.dtype.as_str(), "shape": x.dims, "file": f}));
    }
    let outs: Vec<_> = task
        .ir
        .written()
        .enumerate()
        // The op's own state (`scratch`, `grid_barrier`) is no result: the reference returns none.
        .filter(|(_, (_, t))| !t.is_state())
        .map(|(i, (_, t))| {
            let stored = match stored(t.dtype) {
                Stored::F64 => "f64",
                Stored::I64 => "i64",
            };
            json!({"name": t.name, "dtype": t.dtype.as_str(), "shape": t.dims,
                "file": file_name("out", i, &t.name), "stored": stored})
        })
        .collect();
    let params: serde_json::Map<String, serde_json::Value> = task
        .ir
        .params
        .iter()
        .map(|(k, p)| {
            let v = match p.value {
                ParamValue::Int(i) => json!(i),
                ParamValue::Float(f) => json!(f),
                ParamValue::Bool(b) => json!(b),
            };
            (k.clone(), v)
        })
        .collect();
    let mut manifest = json!({
        "format": "mpkc-reference-1",
        "unit": task.ir.unit_name(),
        "module": module,
        "function": r.function,
        "params": params,
        "inputs": ins,
        "outputs": outs,
    });
    if let (Some(p), Some(m)) = (paged, manifest.as_object_mut()) {
        m.insert("paged_kv".into(), p.to_json());
    }
    let path = dir.join("manifest.json");
    let text = serde_json::to_string_pretty(&manifest).map_err(std::io::Error::other)?;
    std::fs::write(&path, text)?;
    std::fs::write(dir.join(RUNNER_FILE), RUNNER)?;
    Ok(path)
}

/// Runs the runner of the exchange at `manifest` with `python`, on GPU `cuda_device` where torch
/// sees CUDA. Errors: the interpreter cannot be started, or the runner failed (its
/// `mpkc-reference:` lines, else its last lines of stderr).
pub fn run(python: &str, manifest: &Path, cuda_device: usize) -> Result<(), String> {
    let dir = manifest.parent().unwrap_or(Path::new("."));
    let out = Command::new(python)
        .arg(dir.join(RUNNER_FILE))
        .arg(manifest)
        .env(CUDA_DEVICE_ENV, cuda_device.to_string())
        .output()
        .map_err(|e| {
            format!("cannot run the Python reference with `{python}` ({e}): install Python 3 or set {PYTHON_ENV}")
        })?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let tagged: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("mpkc-reference: "))
        .collect();
    let lines: Vec<&str> = if tagged.is_empty() {
        let all: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        all[all.len().saturating_sub(6)..].to_vec()
    } else {
        tagged
    };
    Err(format!(
        "the Python reference failed ({}): {}",
        out.status,
        lines.join(" | ")
    ))
}

/// The values the runner wrote for each tensor `task` writes (its `out` and `inout` tensors, in
/// declaration order: `ir.written()`, which [`Expected::output`] indexes), as f64; none for the
/// op's own state ([`crate::ir::TensorIr::is_state`]). Errors: a file missing or of the wrong
/// size.
pub fn read_outputs(dir: &Path, task: &CheckedTask) -> Result<Vec<Vec<f64>>, String> {
    task.ir
        .written()
        .enumerate()
        .map(|(i, (_, t))| {
            if t.is_state() {
                return Ok(Vec::new()); // no result: the reference wrote none
            }
            let p = dir.join(file_name("out", i, &t.name));
            let bytes = std::fs::read(&p)
                .map_err(|e| format!("the reference wrote no output `{}` ({e})", t.name))?;
            let n = elements(&t.dims);
            if bytes.len() != 8 * n {
                return Err(format!(
                    "the reference's output `{}` has {} values, the contract declares {n}",
                    t.name,
                    bytes.len() / 8
                ));
            }
            Ok(bytes
                .chunks_exact(8)
                .map(|c| {
                    let mut a = [0u8; 8];
                    a.copy_from_slice(c);
                    stored_value(t.dtype, a)
                })
                .collect())
        })
        .collect()
}

/// Runs `task`'s Python reference on `inputs` (the inputs the kernel saw) in `dir`, on GPU
/// `cuda_device` (the kernel's) where torch has CUDA, and returns what each output should hold.
/// Errors: the exchange cannot be written, the runner failed, or its outputs do not match the
/// contract.
pub fn expected(
    task: &CheckedTask,
    r: &ReferenceIr,
    inputs: &[HostTensor],
    paged: Option<&super::paged::PagedRun>,
    dir: &Path,
    cuda_device: usize,
) -> Result<Vec<Expected>, String> {
    let manifest = write_exchange(dir, task, r, inputs, paged).map_err(|e| {
        format!(
            "cannot write the reference's inputs to {}: {e}",
            dir.display()
        )
    })?;
    run(&python(), &manifest, cuda_device)?;
    let values = read_outputs(dir, task)?;
    let state: Vec<bool> = task.ir.written().map(|(_, t)| t.is_state()).collect();
    Ok(expectations(task, r, values)
        .into_iter()
        .filter(|e| !state.get(e.output).copied().unwrap_or(false))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::compare::compare;
    use crate::gpu::data::{e4m3_to_f32, f32_to_e4m3, f32_to_e5m2, Fill};
    use crate::gpu::ref_compare::expectations_of;
    use crate::gpu::reference::Check;
    use crate::gpu::reference::{make_inputs, semantics, Semantics};
    use crate::ir::{Tolerance, ToleranceIr};
    use crate::span::Span;

    fn fp8_task() -> CheckedTask {
        crate::driver::check_sources(
            &crate::driver::stdlib::sources(),
            &Default::default(),
            &Default::default(),
        )
        .into_iter()
        .flat_map(|c| c.tasks)
        .find(|t| t.ir.unit_name() == "silu_mul_fp8_routed")
        .expect("stdlib silu_mul_fp8")
    }

    fn reference(tols: &[(Option<&str>, Tolerance)]) -> ReferenceIr {
        ReferenceIr {
            path: "r.py".into(),
            path_span: Span::new(0, 0),
            function: "f".into(),
            tolerances: tols
                .iter()
                .map(|(o, k)| ToleranceIr {
                    output: o.map(str::to_string),
                    kind: *k,
                    span: Span::new(0, 0),
                })
                .collect(),
            span: Span::new(0, 0),
            file: ReferenceFile::Unresolved,
        }
    }

    fn out(name: &str, dtype: Dtype, dims: &[i64], scale_of: Option<usize>) -> Written {
        Written {
            name: name.into(),
            dtype,
            dims: dims.to_vec(),
            scale_of,
        }
    }

    #[test]
    fn defaults_follow_the_dtype_and_pair_fp8_outputs_with_their_scales() {
        let outs = [
            out("y", Dtype::E4m3, &[4, 512], None),
            out("y_scale", Dtype::F32, &[4, 4], Some(0)),
            out("h", Dtype::Bf16, &[4, 512], None),
            out("p", Dtype::F32, &[4, 512], None),
            out("idx", Dtype::I64, &[4], None),
            out("z", Dtype::E5m2, &[4, 512], None),
            out("s", Dtype::Ue8m0, &[4, 2], None),
        ];
        let c = checks(&outs, &reference(&[]));
        assert_eq!(
            c,
            vec![
                Check::Dequant {
                    scales: 1,
                    group: 128,
                    tol: 2e-2
                },
                Check::ScalesOf,
                Check::RelL2(1e-2),
                Check::RelL2(1e-4),
                Check::Exact,
                Check::Exact,
                Check::Exact,
            ]
        );
        // An output's own tolerance wins over the task-wide one; atol/rtol make allclose.
        let r = reference(&[
            (None, Tolerance::RelL2(5e-2)),
            (Some("h"), Tolerance::Atol(1e-3)),
            (Some("y_scale"), Tolerance::Exact),
        ]);
        let c = checks(&outs, &r);
        assert_eq!(
            c[0],
            Check::Dequant {
                scales: 1,
                group: 128,
                tol: 5e-2
            }
        );
        assert_eq!(c[1], Check::Exact);
        assert_eq!(
            c[2],
            Check::Close {
                atol: 1e-3,
                rtol: 0.0
            }
        );
        assert_eq!(c[3], Check::RelL2(5e-2));
    }

    /// The scales an fp8 output dequantizes with are the output declared `scale of` it, f32 or
    /// ue8m0, not whichever f32 output has a fitting shape: an f32 `amax` of the scales' shape
    /// is no scale, and the declared ue8m0 scales (which the shape rule never took) are.
    #[test]
    fn fp8_outputs_pair_with_their_declared_scales_not_by_shape() {
        let outs = [
            out("y", Dtype::E4m3, &[4, 512], None),
            out("amax", Dtype::F32, &[4, 4], None),
            out("y_scale", Dtype::Ue8m0, &[4, 4], Some(0)),
        ];
        assert_eq!(scale_pair(&outs, 0), Some((2, 128)));
        let c = checks(&outs, &reference(&[]));
        assert_eq!(
            c,
            [
                Check::Dequant {
                    scales: 2,
                    group: 128,
                    tol: 2e-2
                },
                Check::RelL2(1e-4),
                Check::ScalesOf,
            ]
        );
        // Undeclared, a lone f32 of the right shape is not taken for the scales.
        let undeclared = [
            out("y", Dtype::E4m3, &[4, 512], None),
            out("s", Dtype::F32, &[4, 4], None),
        ];
        assert_eq!(scale_pair(&undeclared, 0), None);
        assert_eq!(checks(&undeclared, &reference(&[]))[0], Check::RelL2(2e-2));
        // Declared scales whose extents do not group the rows (a 2-D block) are not paired.
        let blocks = [
            out("y", Dtype::E4m3, &[256, 512], None),
            out("s", Dtype::F32, &[2, 4], Some(0)),
        ];
        assert_eq!(scale_pair(&blocks, 0), None);
    }

    /// The stdlib's fp8 contracts: the pipeline whose epilogue quantizes (`linear_fp8_qout`,
    /// `Y_scale … out scale of Y`) and every Python-referenced body writing e4m3 with its
    /// scales: each fp8 output pairs with the tensor its contract declares `scale of` it.
    #[test]
    fn stdlib_fp8_outputs_pair_by_their_declared_role() {
        let tasks: Vec<CheckedTask> = crate::driver::check_sources(
            &crate::driver::stdlib::sources(),
            &Default::default(),
            &Default::default(),
        )
        .into_iter()
        .flat_map(|c| c.tasks)
        .collect();
        let unit = |name: &str| {
            tasks
                .iter()
                .find(|t| t.ir.unit_name() == name)
                .unwrap_or_else(|| panic!("stdlib {name}"))
        };
        let qout = written(unit("linear_fp8_qout"));
        let names: Vec<&str> = qout.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names, ["Y", "Y_scale"]);
        assert_eq!(qout[1].scale_of, Some(0));
        assert_eq!(scale_pair(&qout, 0), Some((1, 128)));
        let mut paired = 0;
        for t in tasks.iter().filter(|t| t.ir.reference.is_some()) {
            let outs = written(t);
            for (o, w) in outs.iter().enumerate() {
                if w.dtype != Dtype::E4m3 {
                    continue;
                }
                let (s, group) = scale_pair(&outs, o)
                    .unwrap_or_else(|| panic!("{}: `{}` has no scales", t.ir.unit_name(), w.name));
                assert_eq!(outs[s].name, format!("{}_scale", w.name));
                assert_eq!(group, 128, "{}", t.ir.unit_name());
                paired += 1;
            }
        }
        assert!(paired >= 4, "{paired}");
    }

    #[test]
    fn the_exchange_holds_the_kernels_inputs_and_a_manifest() {
        let t = fp8_task();
        let r = t.ir.reference.clone().expect("a reference");
        let sem = semantics(&t).expect("python semantics");
        assert!(matches!(sem, Semantics::Python(_)));
        let inputs = make_inputs(&t, &sem, &mut Fill::new(3));
        let dir = std::env::temp_dir().join(format!("mpkc-exchange-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let m = write_exchange(&dir, &t, &r, &inputs, None).expect("written");
        let j: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&m).expect("manifest")).expect("json");
        assert_eq!(j["format"], "mpkc-reference-1");
        assert_eq!(j["function"], "silu_mul_fp8");
        assert_eq!(j["params"]["n"], 512);
        assert_eq!(j["inputs"][0]["dtype"], "bf16");
        assert_eq!(j["inputs"][0]["shape"], json!([1, 1024]));
        assert_eq!(j["outputs"][0]["stored"], "f64");
        assert_eq!(j["outputs"][1]["name"], "y_scale");
        let file = j["inputs"][0]["file"].as_str().expect("file");
        assert_eq!(
            std::fs::read(dir.join(file)).expect("input"),
            inputs[0].bytes
        );
        let module = j["module"].as_str().expect("module");
        assert!(Path::new(module).is_absolute() && module.ends_with("silu_mul_fp8.ref.py"));
        assert_eq!(
            std::fs::read_to_string(dir.join(RUNNER_FILE)).expect("runner"),
            RUNNER
        );
        // An embedded reference is written under the exchange directory.
        let embedded = ReferenceIr {
            file: ReferenceFile::Embedded {
                path: "stdlib/dsv3/silu_mul_fp8.ref.py",
                text: "def silu_mul_fp8(x):\n    pass\n",
            },
            ..r
        };
        let m = write_exchange(&dir, &t, &embedded, &inputs, None).expect("written");
        let j: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&m).expect("manifest")).expect("json");
        let module = PathBuf::from(j["module"].as_str().expect("module"));
        assert!(module.starts_with(std::path::absolute(&dir).expect("abs")));
        assert!(std::fs::read_to_string(module)
            .expect("module")
            .contains("def silu_mul_fp8"));
        // Outputs of the wrong size are an error naming the output.
        std::fs::write(dir.join(file_name("out", 0, "y")), [0u8; 16]).expect("write");
        std::fs::write(dir.join(file_name("out", 1, "y_scale")), [0u8; 32]).expect("write");
        let e = read_outputs(&dir, &t).expect_err("too short");
        assert!(
            e.contains("`y` has 2 values, the contract declares 512"),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// An `inout` tensor is an input (its value before the task) and comes back from the
    /// reference with the outputs, in declaration order, as `Expected::output` indexes what the
    /// task writes (`ir.written()`): stdlib add_rmsnorm updates `residual` in place and writes `y`.
    #[test]
    fn an_inout_tensor_is_an_input_and_a_reference_output() {
        let t = crate::driver::check_sources(
            &crate::driver::stdlib::sources(),
            &Default::default(),
            &Default::default(),
        )
        .into_iter()
        .flat_map(|c| c.tasks)
        .find(|t| t.ir.unit_name() == "add_rmsnorm")
        .expect("stdlib add_rmsnorm");
        let r = t.ir.reference.clone().expect("a reference");
        let sem = semantics(&t).expect("python semantics");
        let inputs = make_inputs(&t, &sem, &mut Fill::new(5));
        let dir = std::env::temp_dir().join(format!("mpkc-exchange-inout-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let m = write_exchange(&dir, &t, &r, &inputs, None).expect("written");
        let j: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&m).expect("manifest")).expect("json");
        let names = |k: &str| -> Vec<String> {
            j[k].as_array()
                .expect("array")
                .iter()
                .map(|v| v["name"].as_str().expect("name").to_string())
                .collect()
        };
        assert_eq!(names("inputs"), ["x", "residual", "w"]);
        assert_eq!(names("outputs"), ["residual", "y"]);
        // The runner's files, read back in `written()` order; the expectations index it so.
        for (i, name) in ["residual", "y"].iter().enumerate() {
            let v: Vec<u8> = (0..7168).flat_map(|k| (k as f64).to_le_bytes()).collect();
            std::fs::write(dir.join(file_name("out", i, name)), v).expect("write");
        }
        let values = read_outputs(&dir, &t).expect("read");
        let exp = expectations(&t, &r, values);
        assert_eq!(exp.iter().map(|e| e.output).collect::<Vec<_>>(), [0, 1]);
        let written: Vec<&str> = t.ir.written().map(|(_, x)| x.name.as_str()).collect();
        assert_eq!(written, ["residual", "y"]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The fp8 comparison end to end on the Rust side: reference values and scales as the runner
    /// would write them, a kernel output quantised the same way passes; one group's scale doubled
    /// fails the `exact` scales; values of another group fail the dequantized bound.
    #[test]
    fn fp8_outputs_compare_dequantized_with_their_own_scales() {
        let t = fp8_task();
        let r = t.ir.reference.clone().expect("a reference");
        let n = 512;
        let vals: Vec<f64> = (0..n)
            .map(|i| ((i * 37 % 101) as f64 - 50.0) / 7.0)
            .collect();
        let mut scales = Vec::new();
        let mut q = Vec::new();
        for g in 0..4 {
            let amax = vals[g * 128..(g + 1) * 128]
                .iter()
                .fold(1e-4f64, |a, v| a.max(v.abs()));
            let s = 2f64.powf((amax / 448.0).log2().ceil());
            scales.push(s);
            for v in &vals[g * 128..(g + 1) * 128] {
                q.push(f64::from(e4m3_to_f32(f32_to_e4m3((v / s) as f32))));
            }
        }
        let exp = expectations(&t, &r, vec![q.clone(), scales.clone()]);
        assert_eq!(exp.len(), 2);
        assert_eq!(exp[1].check, Check::Exact);
        let kernel = |q: &[f64], s: &[f64]| {
            let mut y = HostTensor::filled("y", Dtype::E4m3, &[1, n as i64], 0);
            for (i, v) in q.iter().enumerate() {
                y.set(i, *v);
            }
            let mut ys = HostTensor::filled("y_scale", Dtype::F32, &[1, 4], 0);
            for (i, v) in s.iter().enumerate() {
                ys.set(i, *v);
            }
            vec![y, ys]
        };
        let good = kernel(&q, &scales);
        assert!(exp.iter().all(|e| compare("u", &good, e).pass));
        let mut doubled = scales.clone();
        doubled[2] *= 2.0;
        let bad = kernel(&q, &doubled);
        assert!(!compare("u", &bad, &exp[1]).pass);
        let mut off = q.clone();
        for v in &mut off[128..256] {
            *v = -*v;
        }
        let bad = kernel(&off, &scales);
        let c = compare("u", &bad, &exp[0]);
        assert!(!c.pass && c.error > 0.1, "{c:?}");
    }

    /// e5m2 values with ue8m0 scales, end to end on the Rust side: the runner's raw bytes
    /// decode to values ([`stored_value`]: 0x3C is 1.0 in e5m2, 0x7F is 1.0 in ue8m0), the
    /// kernel's elements decode alike, so the output compares dequantized; a scale one power of
    /// two off (the next byte) fails.
    #[test]
    fn e5m2_outputs_with_ue8m0_scales_compare_by_value() {
        let byte = |b: u8| (i64::from(b)).to_le_bytes();
        assert_eq!(stored_value(Dtype::E5m2, byte(0x3C)), 1.0);
        assert_eq!(stored_value(Dtype::Ue8m0, byte(0x7F)), 1.0);
        assert_eq!(stored_value(Dtype::Ue8m0, byte(0x81)), 4.0);
        assert!(stored_value(Dtype::E5m2, byte(0x7E)).is_nan());
        assert!(stored_value(Dtype::Ue8m0, (-1i64).to_le_bytes()).is_nan());
        assert_eq!(stored_value(Dtype::I32, 7i64.to_le_bytes()), 7.0);
        let outs = [
            Written {
                name: "y".into(),
                dtype: Dtype::E5m2,
                dims: vec![1, 256],
                scale_of: None,
            },
            Written {
                name: "y_scale".into(),
                dtype: Dtype::Ue8m0,
                dims: vec![1, 2],
                scale_of: Some(0),
            },
        ];
        // The runner's outputs: e5m2 values as their bytes, the scales 2^-3 and 2^2 as theirs.
        let q: Vec<u8> = (0..256)
            .map(|i| f32_to_e5m2((i as f32 - 128.0) / 16.0))
            .collect();
        let scale_bytes = [124u8, 129];
        let values = vec![
            q.iter()
                .map(|b| stored_value(Dtype::E5m2, byte(*b)))
                .collect(),
            scale_bytes
                .iter()
                .map(|b| stored_value(Dtype::Ue8m0, byte(*b)))
                .collect(),
        ];
        assert_eq!(values[1], [0.125, 4.0]);
        let exp = expectations_of(&outs, &reference(&[]), values);
        assert_eq!(
            exp[0].check,
            Check::Dequant {
                scales: 1,
                group: 128,
                tol: 2e-2
            }
        );
        let kernel = |scales: [u8; 2]| {
            let y = HostTensor {
                name: "y".into(),
                dtype: Dtype::E5m2,
                dims: vec![1, 256],
                bytes: q.clone(),
            };
            let s = HostTensor {
                name: "y_scale".into(),
                dtype: Dtype::Ue8m0,
                dims: vec![1, 2],
                bytes: scales.to_vec(),
            };
            vec![y, s]
        };
        let good = kernel(scale_bytes);
        assert!(exp.iter().all(|e| compare("u", &good, e).pass));
        let off = kernel([124, 130]);
        let c = compare("u", &off, &exp[0]);
        assert!(!c.pass && c.error > 0.5, "{c:?}");
    }

    #[test]
    fn a_python_that_cannot_start_is_an_error_naming_it() {
        let dir = std::env::temp_dir().join(format!("mpkc-nopython-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let e = run("/nonexistent/python3", &dir.join("manifest.json"), 0).expect_err("no python");
        assert!(
            e.contains("/nonexistent/python3") && e.contains(PYTHON_ENV),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
