//! The child side of `mpkc verify`: one case run in its own process (`mpkc verify … --child CASE
//! --out DIR`), its result printed as one `mpkc-result: {json}` line, and the parent's spawn of
//! it, bounded by `--timeout`, reading that line back with whatever else the device printed.

use super::super::args::VerifyArgs;
use super::super::exit;
use crate::driver::verify::CaseSpec;
use crate::driver::Checked;
use crate::gpu::compare::OutputResult;
use crate::gpu::run::{run_case, Case, RunOptions};
use crate::gpu::{Gpu, GpuError};
use crate::ir::Target;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What a child reports.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(super) struct ChildResult {
    /// `ok`, `kernel` (the kernel trapped or faulted), `driver` (a driver call failed), `setup`.
    pub(super) status: String,
    /// The error, when not ok.
    pub(super) error: Option<String>,
    pub(super) ctas: u32,
    pub(super) tasks: usize,
    pub(super) max_queue: usize,
    pub(super) outputs: Vec<OutputRow>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct OutputRow {
    pub(super) unit: String,
    pub(super) tensor: String,
    pub(super) metric: String,
    pub(super) error: f64,
    pub(super) tol: f64,
    pub(super) unwritten: usize,
    pub(super) nans: usize,
    pub(super) elements: usize,
    /// Elements written past the run's token count (run-time M, docs/runtime-m.md).
    #[serde(default)]
    pub(super) past_m: usize,
    pub(super) pass: bool,
}

impl From<&OutputResult> for OutputRow {
    fn from(r: &OutputResult) -> Self {
        OutputRow {
            unit: r.unit.clone(),
            tensor: r.tensor.clone(),
            metric: r.metric.clone(),
            error: r.error,
            tol: r.tol,
            unwritten: r.unwritten,
            nans: r.nans,
            elements: r.elements,
            past_m: r.past_m,
            pass: r.pass,
        }
    }
}

const RESULT_TAG: &str = "mpkc-result: ";

/// Runs one case in a child process; returns its result and the other lines it printed.
pub(super) fn spawn_child(
    name: &str,
    dir: &Path,
    v: &VerifyArgs,
    device: usize,
) -> (ChildResult, Vec<String>) {
    let fail = |e: String| {
        (
            ChildResult {
                status: "setup".into(),
                error: Some(e),
                ..Default::default()
            },
            Vec::new(),
        )
    };
    let Ok(exe) = std::env::current_exe() else {
        return fail("cannot find mpkc's own executable".into());
    };
    let out_path = dir.join(format!("{}.stdout", sanitize(name)));
    let err_path = dir.join(format!("{}.stderr", sanitize(name)));
    let (Ok(out), Ok(err)) = (
        std::fs::File::create(&out_path),
        std::fs::File::create(&err_path),
    ) else {
        return fail(format!("cannot write to {}", dir.display()));
    };
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    args.extend([
        "--child".into(),
        name.into(),
        "--out".into(),
        dir.as_os_str().to_owned(),
        "--device".into(),
        device.to_string().into(),
    ]);
    let mut child = match Command::new(exe)
        .args(&args)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
    {
        Ok(c) => c,
        Err(e) => return fail(format!("cannot start a child mpkc: {e}")),
    };
    let deadline = Instant::now() + Duration::from_secs(v.timeout);
    let timed_out = loop {
        match child.try_wait() {
            Ok(Some(_)) => break false,
            Ok(None) if Instant::now() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                break true;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => break false,
        }
    };
    let stdout = std::fs::read_to_string(&out_path).unwrap_or_default();
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    let mut result = None;
    let mut messages = Vec::new();
    for l in stdout.lines() {
        match l.strip_prefix(RESULT_TAG) {
            Some(j) => result = serde_json::from_str::<ChildResult>(j).ok(),
            None if !l.trim().is_empty() => messages.push(l.trim().to_string()),
            None => {}
        }
    }
    messages.extend(
        stderr
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| l.trim().to_string()),
    );
    let result = match result {
        Some(r) => r,
        None if timed_out => ChildResult {
            status: "kernel".into(),
            error: Some(format!(
                "no answer within {} s: killed (an unbounded hang)",
                v.timeout
            )),
            ..Default::default()
        },
        None => ChildResult {
            status: "setup".into(),
            error: Some("the child mpkc ended without a result".into()),
            ..Default::default()
        },
    };
    (result, messages)
}

fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The child: runs case `name` and prints its result line.
pub(super) fn child(
    gpu: &Gpu,
    checked: &[Checked],
    all: &[CaseSpec],
    name: &str,
    dir: &Path,
    target: Target,
    v: &VerifyArgs,
) -> u8 {
    let report = |r: ChildResult| {
        outln!(
            "{RESULT_TAG}{}",
            serde_json::to_string(&r).unwrap_or_default()
        );
    };
    let Some(c) = all.iter().find(|c| c.name == name) else {
        report(ChildResult {
            status: "setup".into(),
            error: Some(format!("no case `{name}`")),
            ..Default::default()
        });
        return exit::USAGE;
    };
    let cubin_path: PathBuf = dir.join(crate::back::files::cubin_name(&c.file, target));
    let cubin = match std::fs::read(&cubin_path) {
        Ok(b) => b,
        Err(e) => {
            report(ChildResult {
                status: "setup".into(),
                error: Some(format!("cannot read {}: {e}", cubin_path.display())),
                ..Default::default()
            });
            return exit::USAGE;
        }
    };
    let case = Case {
        name: c.name.clone(),
        tasks: c.units.iter().map(|u| &checked[u.0].tasks[u.1]).collect(),
        links: c.links.clone(),
        tokens: c.tokens,
        context: c.context,
        shared: c.shared.clone(),
        layer: c.layer.clone(),
    };
    let opts = RunOptions {
        tasks_per_cta: v.tasks,
        seed: v.seed,
        target,
        scratch: dir.join("reference").join(sanitize(&c.name)),
        device: v.device,
    };
    match run_case(gpu, &case, &cubin, &c.entry, &opts) {
        Ok(r) => {
            report(ChildResult {
                status: "ok".into(),
                error: None,
                ctas: r.ctas,
                tasks: r.tasks,
                max_queue: r.max_queue,
                outputs: r.outputs.iter().map(OutputRow::from).collect(),
            });
            exit::OK
        }
        Err(e) => {
            let status = match e {
                GpuError::Kernel(_) => "kernel",
                GpuError::Reference(_) => "reference",
                GpuError::Driver { .. } => "driver",
                GpuError::NoDriver | GpuError::NoDevice(_) => "setup",
            };
            report(ChildResult {
                status: status.into(),
                error: Some(e.to_string()),
                ..Default::default()
            });
            exit::ERRORS
        }
    }
}
