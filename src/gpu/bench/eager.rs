//! The PyTorch eager competitor of the consumer ops (issue 12: "no slower than PyTorch eager on
//! the same shapes"): the exchange with the runner (`eager_runner.py`, embedded), running it, and
//! the check of mpkc's result against its.
//!
//! PyTorch lives in its own process (cudarc cannot call it): the case's inputs, exactly as
//! mpkc's kernel read them, go to files beside a `manifest.json` (op, scalars, per input its
//! formal name, dtype, shape outermost first and file; the output's dtype, shape and file; the
//! timing plan; the CUDA ordinal), the runner is run as `$MPKC_PYTHON mpkc_eager.py
//! manifest.json` (`python3` by default), makes one call whose output it writes back in the
//! dtype's own encoding, times `repeats` samples of `runs` calls with CUDA events after `warmup`
//! untimed series (back-to-back eager calls for the consumer ops; a CUDA graph of them replayed
//! for `torch._scaled_mm`, as mpkc's standalone method and cuBLAS are timed), and writes
//! `result.json`.

use super::case::{cpu_check, result_at, BenchCase, Options};
use super::competitor::Theirs;
use super::consumer::{ConsumerShape, EagerOp};
use super::report::{CaseReport, CheckInfo};
use super::setup::Setup;
use super::shape::LinearShape;
use super::stats;
use super::timing::Plan;
use crate::gpu::compare::compare;
use crate::gpu::data::HostTensor;
use crate::gpu::reference::{tolerance, Check, Expected};
use crate::gpu::GpuError;
use serde_json::json;
use std::path::Path;
use std::process::{Command, Stdio};

/// The runner script, as shipped (`src/gpu/bench/eager_runner.py`).
pub const RUNNER: &str = include_str!("eager_runner.py");

/// The runner's file name in an exchange directory.
pub const RUNNER_FILE: &str = "mpkc_eager.py";

/// How long the runner may take (PyTorch's import, CUDA's start-up, the copies and the timing).
pub const RUNNER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

/// What the runner reported.
#[derive(Clone, Debug, PartialEq)]
pub struct EagerRun {
    /// The eager call timed, e.g. `torch.argmax(logits, dim=-1)`.
    pub call: String,
    /// `torch.__version__`.
    pub torch: String,
    /// The device name PyTorch ran on.
    pub gpu: String,
    /// How the calls were timed: `eager` (back-to-back calls) or `graph` (a CUDA graph of
    /// them replayed).
    pub timing: String,
    /// Microseconds per call, one per sample.
    pub samples_us: Vec<f64>,
    /// The output of the first call (the shape and dtype of mpkc's result).
    pub output: HostTensor,
}

/// Why there is no eager result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EagerError {
    /// PyTorch cannot be imported, or sees no CUDA device (the runner's exit status 3): the
    /// case has no competitor.
    Absent(String),
    /// The runner failed (any other exit status, or an unreadable result).
    Failed(String),
}

impl std::fmt::Display for EagerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EagerError::Absent(m) | EagerError::Failed(m) => f.write_str(m),
        }
    }
}

/// The competitor's name in the report.
pub fn name(run: &EagerRun) -> String {
    format!("PyTorch {} eager: {}", run.torch, run.call)
}

/// The manifest of one exchange: `inputs` by formal name, `output` the tensor whose dtype and
/// shape the result takes, the files named `<formal>.bin` and `out.bin`.
pub fn manifest(
    op: &EagerOp,
    inputs: &[(&str, &HostTensor)],
    output: &HostTensor,
    plan: Plan,
    device: usize,
) -> serde_json::Value {
    let mut ins = serde_json::Map::new();
    for (f, t) in inputs {
        ins.insert(
            (*f).to_string(),
            json!({"dtype": t.dtype.as_str(), "shape": t.dims, "file": format!("{f}.bin")}),
        );
    }
    let mut m = json!({
        "op": op.name(),
        "inputs": ins,
        "output": {"dtype": output.dtype.as_str(), "shape": output.dims, "file": "out.bin"},
        "plan": {"runs": plan.runs, "repeats": plan.repeats, "warmup": plan.warmup},
        "device": device,
    });
    match op {
        EagerOp::Rmsnorm { eps } => m["eps"] = json!(eps),
        EagerOp::ScaledMm { copies } => m["copies"] = json!(copies),
        _ => {}
    }
    m
}

/// Reads `result.json`'s text and the output's bytes into an [`EagerRun`] shaped as `output`.
/// Errors: a field missing, no sample, or an output of the wrong size.
pub fn parse_result(text: &str, bytes: Vec<u8>, output: &HostTensor) -> Result<EagerRun, String> {
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("result.json: {e}"))?;
    let s = |k: &str| {
        v[k].as_str()
            .map(str::to_string)
            .ok_or_else(|| format!("result.json: no `{k}`"))
    };
    let samples_us: Vec<f64> = v["samples_us"]
        .as_array()
        .map(|a| a.iter().filter_map(serde_json::Value::as_f64).collect())
        .unwrap_or_default();
    if samples_us.is_empty() {
        return Err("result.json: no samples".into());
    }
    if bytes.len() != output.bytes.len() {
        return Err(format!(
            "the runner wrote {} bytes of output, not {}",
            bytes.len(),
            output.bytes.len()
        ));
    }
    let mut out = output.clone();
    out.bytes = bytes;
    Ok(EagerRun {
        call: s("call")?,
        torch: s("torch")?,
        gpu: s("gpu")?,
        timing: s("timing").unwrap_or_else(|_| "eager".to_string()),
        samples_us,
        output: out,
    })
}

/// Runs the runner for `op` on the inputs `named` (formal name, tensor) in `dir` (created; left
/// for inspection), the result shaped as `output`.
pub fn run(
    op: &EagerOp,
    named: &[(&str, &HostTensor)],
    output: &HostTensor,
    plan: Plan,
    device: usize,
    dir: &Path,
) -> Result<EagerRun, EagerError> {
    let failed = |what: &str, e: std::io::Error| EagerError::Failed(format!("{what}: {e}"));
    std::fs::create_dir_all(dir).map_err(|e| failed("cannot create the exchange folder", e))?;
    for (f, t) in named {
        std::fs::write(dir.join(format!("{f}.bin")), &t.bytes)
            .map_err(|e| failed("cannot write an input", e))?;
    }
    let m = manifest(op, named, output, plan, device);
    let text = serde_json::to_string_pretty(&m).unwrap_or_default();
    std::fs::write(dir.join("manifest.json"), text)
        .map_err(|e| failed("cannot write the manifest", e))?;
    std::fs::write(dir.join(RUNNER_FILE), RUNNER)
        .map_err(|e| failed("cannot write the runner", e))?;
    let python = crate::gpu::python::python();
    let log = std::fs::File::create(dir.join("stderr.txt"))
        .map_err(|e| failed("cannot create the runner's log", e))?;
    let mut child = Command::new(&python)
        .arg(RUNNER_FILE)
        .arg("manifest.json")
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log))
        .spawn()
        .map_err(|e| EagerError::Absent(format!("cannot run `{python}`: {e}")))?;
    // A hung import or CUDA start-up must not hold the bench: the runner gets RUNNER_TIMEOUT.
    let start = std::time::Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break st,
            Ok(None) if start.elapsed() < RUNNER_TIMEOUT => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(EagerError::Failed(format!(
                    "the PyTorch runner did not finish in {} s: killed",
                    RUNNER_TIMEOUT.as_secs()
                )));
            }
            Err(e) => return Err(failed("cannot wait for the runner", e)),
        }
    };
    let stderr = std::fs::read_to_string(dir.join("stderr.txt")).unwrap_or_default();
    let said: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("mpkc-eager: "))
        .collect();
    let said = if said.is_empty() {
        stderr.trim().to_string()
    } else {
        said.join("\n")
    };
    match status.code() {
        Some(0) => {}
        Some(3) => return Err(EagerError::Absent(said)),
        code => {
            return Err(EagerError::Failed(format!(
                "the PyTorch runner exited with {}: {said}",
                code.map_or("a signal".to_string(), |c| c.to_string())
            )))
        }
    }
    let text = std::fs::read_to_string(dir.join("result.json"))
        .map_err(|e| failed("cannot read result.json", e))?;
    let bytes = std::fs::read(dir.join("out.bin")).map_err(|e| failed("cannot read out.bin", e))?;
    parse_result(&text, bytes, output).map_err(EagerError::Failed)
}

/// mpkc's result `ours` against PyTorch's `theirs` (same dtype and shape): by relative L2 for
/// rmsnorm and silu_mul (bf16's tolerance), exactly for the embedding's gathered rows; for
/// argmax, each token's logit must equal the one PyTorch chose (ties may pick either index),
/// the logits read from `inputs` (the first task's, at the position `shape` gives).
pub fn check(
    shape: &ConsumerShape,
    inputs: &[HostTensor],
    ours: &HostTensor,
    theirs: &HostTensor,
) -> CheckInfo {
    let info = |metric: &str, error: f64, tol: f64, bad: usize, pass: bool| CheckInfo {
        against: "torch".into(),
        metric: metric.into(),
        error,
        tol,
        bad_elements: bad,
        pass,
    };
    if shape.op == EagerOp::Argmax {
        let Some(logits) = shape.inputs.first().and_then(|(_, at)| inputs.get(*at)) else {
            return info("mismatches", f64::NAN, 0.0, 0, false);
        };
        let (m, bad) = argmax_mismatches(logits, ours, theirs);
        return info("mismatches", m as f64, 0.0, bad, m == 0 && bad == 0);
    }
    let check = match shape.op {
        EagerOp::Embedding => Check::Exact,
        _ => Check::RelL2(tolerance(ours.dtype, false)),
    };
    let exp = Expected {
        output: 0,
        values: (0..theirs.len()).map(|i| theirs.get(i)).collect(),
        check,
    };
    CheckInfo::of("torch", &compare("torch", std::slice::from_ref(ours), &exp))
}

/// Rows of `logits [m, vocab]` where the logit at mpkc's token differs from the one at
/// PyTorch's (so a tie broken either way agrees), and the tokens outside `[0, vocab)`.
pub fn argmax_mismatches(
    logits: &HostTensor,
    ours: &HostTensor,
    theirs: &HostTensor,
) -> (usize, usize) {
    let vocab = logits.dims.last().copied().unwrap_or(0).max(0) as usize;
    let (mut differ, mut outside) = (0, 0);
    for r in 0..ours.len().min(theirs.len()) {
        let at = |t: &HostTensor| usize::try_from(t.get_i64(r)).ok().filter(|i| *i < vocab);
        match (at(ours), at(theirs)) {
            (Some(a), Some(b)) => {
                if logits.get(r * vocab + a) != logits.get(r * vocab + b) {
                    differ += 1;
                }
            }
            _ => outside += 1,
        }
    }
    (differ, outside)
}

/// A fresh exchange folder for `case`, in the temporary folder.
pub(super) fn exchange_dir(case: &BenchCase<'_>) -> std::path::PathBuf {
    let stem: String = case
        .name
        .chars()
        .map(|ch| if ch.is_ascii_alphanumeric() { ch } else { '_' })
        .collect();
    std::env::temp_dir().join(format!(
        "mpkc-bench-eager-{}/{stem}_m{}",
        std::process::id(),
        case.m
    ))
}

/// The competitor side of a consumer case, after mpkc's check run left its `outputs`: PyTorch
/// eager runs on the first task's inputs, mpkc's result is checked against its output, and its
/// time is the median of its samples ([`settle`] says what happens when they disagree).
pub(super) fn consumer_side(
    case: &BenchCase<'_>,
    c: &ConsumerShape,
    s: &Setup,
    outputs: &[Vec<HostTensor>],
    opts: &Options,
    report: &mut CaseReport,
) -> Result<(CheckInfo, Option<Theirs>), GpuError> {
    let (rt, ro) = result_at(case);
    let ours = &outputs[rt][ro];
    let mut named = Vec::new();
    for (f, at) in &c.inputs {
        let t = s.inputs[0]
            .get(*at)
            .ok_or_else(|| GpuError::Kernel(format!("no input {at} for `{f}`")))?;
        named.push((*f, t));
    }
    let done = run_in_exchange(case, &c.op, &named, ours, opts);
    let k = done
        .as_ref()
        .ok()
        .map(|r| check(c, &s.inputs[0], ours, &r.output));
    settle(
        case,
        s,
        outputs,
        report,
        done,
        k,
        "PyTorch eager",
        String::new(),
    )
}

/// The competitor side of a block-scaled fp8 linear (`store bf16`, or `split_k f32` with the
/// derived reduce, whose bf16 output is the case's result) where cuBLASLt has no
/// block-scaled kernel (`lt_why`, e.g. sm_90's `CUBLAS_STATUS_INVALID_VALUE`): PyTorch's
/// `torch._scaled_mm` with per-tensor scales, the fp8 competitor issue 12 names (cuBLASLt's
/// fp8 kernels, through PyTorch), the weights rotated over `copies`. mpkc's result is checked
/// against the runner's float32 product with the block scales applied (relative L2 below
/// 2e-2); the runner checks `_scaled_mm` itself against the unscaled product.
#[allow(clippy::too_many_arguments)]
pub(super) fn fp8_side(
    case: &BenchCase<'_>,
    sh: &LinearShape,
    s: &Setup,
    outputs: &[Vec<HostTensor>],
    copies: usize,
    opts: &Options,
    report: &mut CaseReport,
    lt_why: String,
) -> Result<(CheckInfo, Option<Theirs>), GpuError> {
    let (rt, ro) = result_at(case);
    let ours = &outputs[rt][ro];
    let ins = &s.inputs[0];
    let Some((ws, xs)) = sh.scales else {
        report.no_competitor = Some(lt_why);
        return Ok((cpu_check(case, s, outputs)?, None));
    };
    let named = [
        ("w", &ins[sh.w]),
        ("x", &ins[sh.x]),
        ("w_scale", &ins[ws]),
        ("x_scale", &ins[xs]),
    ];
    let done = run_in_exchange(case, &EagerOp::ScaledMm { copies }, &named, ours, opts);
    let k = done.as_ref().ok().map(|r| {
        let exp = Expected {
            output: 0,
            values: (0..r.output.len()).map(|i| r.output.get(i)).collect(),
            check: Check::RelL2(tolerance(ours.dtype, true)),
        };
        CheckInfo::of("torch", &compare("torch", std::slice::from_ref(ours), &exp))
    });
    let note = format!(" (per-tensor scales: cuBLASLt block-scaled: {lt_why})");
    settle(
        case,
        s,
        outputs,
        report,
        done,
        k,
        "PyTorch torch._scaled_mm",
        note,
    )
}

/// Runs the runner in a fresh exchange folder, removed afterwards unless the runner failed.
fn run_in_exchange(
    case: &BenchCase<'_>,
    op: &EagerOp,
    named: &[(&str, &HostTensor)],
    ours: &HostTensor,
    opts: &Options,
) -> Result<EagerRun, (EagerError, std::path::PathBuf)> {
    let dir = exchange_dir(case);
    let done = run(op, named, ours, opts.plan, 0, &dir);
    if !matches!(done, Err(EagerError::Failed(_))) {
        let _ = std::fs::remove_dir_all(&dir);
        // The run's folder of exchanges, once empty.
        if let Some(parent) = dir.parent() {
            let _ = std::fs::remove_dir(parent);
        }
    }
    done.map_err(|e| (e, dir))
}

/// The check and the competitor's time from a runner's result `done` and mpkc's check against
/// it, `k`. Where PyTorch is absent, the runner failed or the two disagree, the float64 CPU
/// reference decides mpkc's check (a wrong competitor is dropped, not timed) and
/// `report.no_competitor` says why (`who` names the competitor there); else the competitor is
/// named in `report` (with `note`) and its time is the median of its samples.
#[allow(clippy::too_many_arguments)]
fn settle(
    case: &BenchCase<'_>,
    s: &Setup,
    outputs: &[Vec<HostTensor>],
    report: &mut CaseReport,
    done: Result<EagerRun, (EagerError, std::path::PathBuf)>,
    k: Option<CheckInfo>,
    who: &str,
    note: String,
) -> Result<(CheckInfo, Option<Theirs>), GpuError> {
    let (r, k) = match (done, k) {
        (Ok(r), Some(k)) => (r, k),
        (Err((e, dir)), _) => {
            let why = match e {
                EagerError::Absent(why) => format!("{who}: {why}"),
                EagerError::Failed(why) => format!("{who} failed ({}): {why}", dir.display()),
            };
            report.no_competitor = Some(why + &note);
            return Ok((cpu_check(case, s, outputs)?, None));
        }
        (Ok(_), None) => return Ok((cpu_check(case, s, outputs)?, None)),
    };
    if k.pass {
        report.competitor = Some(format!("{}{note}", name(&r)));
        report.no_competitor = None;
        let theirs = stats::median(&r.samples_us).map(|us| (us, r.timing.clone()));
        return Ok((k, theirs));
    }
    let cpu = cpu_check(case, s, outputs)?;
    let and_cpu = if cpu.pass {
        " and the CPU reference"
    } else {
        ""
    };
    report.no_competitor = Some(format!(
        "{who} ({}) disagrees with mpkc{and_cpu} ({} {:.2e}): not timed",
        r.call, k.metric, k.error
    ));
    Ok((cpu, None))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Dtype;

    fn bf16(name: &str, dims: &[i64], values: &[f64]) -> HostTensor {
        let mut t = HostTensor::filled(name, Dtype::Bf16, dims, 0);
        for (i, v) in values.iter().enumerate() {
            t.set(i, *v);
        }
        t
    }

    fn tokens(values: &[i64]) -> HostTensor {
        let mut t = HostTensor::filled("token", Dtype::I64, &[values.len() as i64], 0);
        for (i, v) in values.iter().enumerate() {
            t.set_i64(i, *v);
        }
        t
    }

    #[test]
    fn the_manifest_names_the_op_its_tensors_and_the_plan() {
        let x = bf16("x", &[2, 8], &[1.0; 16]);
        let w = bf16("w", &[8], &[1.0; 8]);
        let plan = Plan {
            runs: 100,
            repeats: 9,
            warmup: 3,
        };
        let m = manifest(
            &EagerOp::Rmsnorm { eps: 1e-6 },
            &[("x", &x), ("w", &w)],
            &x,
            plan,
            0,
        );
        assert_eq!(m["op"], "rmsnorm");
        assert_eq!(m["eps"], 1e-6);
        assert_eq!(m["inputs"]["x"]["shape"], json!([2, 8]));
        assert_eq!(m["inputs"]["w"]["dtype"], "bf16");
        assert_eq!(m["inputs"]["w"]["file"], "w.bin");
        assert_eq!(m["output"]["file"], "out.bin");
        assert_eq!(m["plan"]["runs"], 100);
        let a = manifest(
            &EagerOp::Argmax,
            &[("logits", &x)],
            &tokens(&[0, 0]),
            plan,
            1,
        );
        assert!(a.get("eps").is_none());
        assert_eq!(a["output"]["dtype"], "i64");
        assert_eq!(a["device"], 1);
        let q = manifest(&EagerOp::ScaledMm { copies: 6 }, &[("w", &x)], &x, plan, 0);
        assert_eq!(
            (q["op"].as_str(), q["copies"].as_u64()),
            (Some("scaled_mm"), Some(6))
        );
    }

    #[test]
    fn the_result_is_read_and_checked_for_size() {
        let out = tokens(&[0, 0]);
        let text = r#"{"torch": "2.11.0", "gpu": "NVIDIA H200", "call": "torch.argmax(logits, dim=-1)", "samples_us": [2.5, 2.25]}"#;
        let r = parse_result(text, tokens(&[3, 4]).bytes, &out).expect("read");
        assert_eq!(r.samples_us, vec![2.5, 2.25]);
        assert_eq!(r.timing, "eager");
        let graph = text.replace("\"samples_us\"", "\"timing\": \"graph\", \"samples_us\"");
        assert_eq!(
            parse_result(&graph, tokens(&[3, 4]).bytes, &out)
                .expect("read")
                .timing,
            "graph"
        );
        assert_eq!(r.output.get_i64(1), 4);
        assert_eq!(
            name(&r),
            "PyTorch 2.11.0 eager: torch.argmax(logits, dim=-1)"
        );
        assert!(parse_result(text, vec![0; 3], &out)
            .unwrap_err()
            .contains("3 bytes"));
        let none = r#"{"torch": "2", "gpu": "g", "call": "c", "samples_us": []}"#;
        assert!(parse_result(none, out.bytes.clone(), &out).is_err());
    }

    #[test]
    fn argmax_agrees_on_ties_and_not_on_a_smaller_logit() {
        // Two rows of four logits: row 0 ties at 1 and 3, row 1's maximum is at 2.
        let logits = bf16("logits", &[2, 4], &[0.0, 5.0, 1.0, 5.0, 0.0, 1.0, 7.0, 2.0]);
        assert_eq!(
            argmax_mismatches(&logits, &tokens(&[1, 2]), &tokens(&[3, 2])),
            (0, 0)
        );
        assert_eq!(
            argmax_mismatches(&logits, &tokens(&[1, 3]), &tokens(&[1, 2])),
            (1, 0)
        );
        assert_eq!(
            argmax_mismatches(&logits, &tokens(&[4, 2]), &tokens(&[1, 2])),
            (0, 1)
        );
    }

    #[test]
    fn a_bf16_result_is_compared_by_relative_l2() {
        let shape = ConsumerShape {
            op: EagerOp::SiluMul,
            inputs: vec![("x", 0)],
            output: 0,
        };
        let ours = bf16("y", &[1, 4], &[1.0, 2.0, 3.0, 4.0]);
        let near = bf16("y", &[1, 4], &[1.0, 2.0, 3.0, 4.015625]);
        let far = bf16("y", &[1, 4], &[1.0, 2.0, 3.0, 8.0]);
        let k = check(&shape, &[], &ours, &near);
        assert!(
            k.pass && k.metric == "rel_l2" && k.against == "torch",
            "{k:?}"
        );
        assert!(!check(&shape, &[], &ours, &far).pass);
    }

    #[test]
    fn without_pytorch_the_runner_says_absent_and_never_fails_silently() {
        // Where python3 has no PyTorch with CUDA (CI, this machine), the runner exits 3 and the
        // case has no competitor; where it has, it runs the op for real and the result is read.
        let dir = tempfile::tempdir().expect("temp dir");
        let shape = ConsumerShape {
            op: EagerOp::SiluMul,
            inputs: vec![("x", 0)],
            output: 0,
        };
        let x = bf16("x", &[1, 8], &[0.5, -1.0, 2.0, 0.25, 1.0, 1.0, 1.0, 1.0]);
        let y = bf16("y", &[1, 4], &[0.0; 4]);
        let plan = Plan {
            runs: 2,
            repeats: 2,
            warmup: 1,
        };
        match run(&shape.op, &[("x", &x)], &y, plan, 0, dir.path()) {
            Ok(r) => assert_eq!(r.samples_us.len(), 2),
            Err(EagerError::Absent(why)) => assert!(
                why.contains("PyTorch") || why.contains("cannot run"),
                "{why}"
            ),
            Err(EagerError::Failed(why)) => panic!("the runner failed: {why}"),
        }
        assert!(dir.path().join("manifest.json").exists());
        assert!(dir.path().join("x.bin").exists());
    }
}
