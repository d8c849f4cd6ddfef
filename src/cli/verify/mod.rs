//! `mpkc verify`: check, write the test build of every runnable case, compile it with nvcc for
//! the GPU's target, then run each case in its own child process (a trap or fault makes the CUDA
//! context unusable, and a hang is killed after `--timeout`), and print one line per case.
//!
//! The parent runs this module's [`run`]; each child is `mpkc verify … --child CASE --out DIR`
//! and prints one `mpkc-result: {json}` line (plus whatever the device printed: the harness's
//! hang and protocol reports).

mod child;
mod print;

use super::args::{CommonArgs, GpuSelection, MessageFormat, VerifyArgs};
use super::{exit, report};
use crate::diag::ColorMode;
use crate::driver::verify::{cases_with, compile_cases, test_flags, write_test_build, CaseSpec};
use crate::driver::{self, nvcc, Checked};
use crate::gpu::Gpu;
use crate::ir::Target;
use child::{child, spawn_child, ChildResult};
use print::{print_case, print_skip};
use std::path::Path;
use std::time::Instant;

fn check(common: &CommonArgs, m: Option<i64>, color: ColorMode) -> Result<Vec<Checked>, u8> {
    // `--m` sets `m` and `m_real`; a diagnostic about its value names `--m`, as written.
    let restate: Vec<(String, String)> = m
        .iter()
        .flat_map(|m| ["m", "m_real"].map(|p| (format!("`--param {p}={m}`"), format!("`--m {m}`"))))
        .collect();
    let checked = super::check_all_with(
        common,
        color,
        |s| match m {
            Some(m) => driver::token_overrides(s, m),
            None => Vec::new(),
        },
        &restate,
    )?;
    if checked.iter().any(Checked::has_errors) {
        report::summary(&checked, common.message_format);
        return Err(exit::ERRORS);
    }
    Ok(checked)
}

/// The target of `--target`, else the one the GPU runs (compute capability 9.x: sm_90a, 10.x:
/// sm_100a); `mpkc verify` and `mpkc bench` build for it.
pub(super) fn target_of(gpu: &Gpu, arg: Option<&str>) -> Result<Target, String> {
    match arg {
        Some(t) => {
            Target::parse(t).ok_or_else(|| format!("unknown target `{t}`: sm_90a or sm_100a"))
        }
        None => match gpu.cc.0 {
            9 => Ok(Target::Sm90a),
            10 => Ok(Target::Sm100a),
            _ => Err(format!(
                "no mpkc target for compute capability {}.{}: pass --target",
                gpu.cc.0, gpu.cc.1
            )),
        },
    }
}

/// Runs `mpkc verify`.
pub fn run(common: &CommonArgs, v: &VerifyArgs, color: ColorMode) -> u8 {
    let json = common.message_format == MessageFormat::Json;
    if common.files.iter().any(|f| f.as_os_str() == "-") {
        errln!("error: `verify` cannot read a contract from stdin (`-`): each case runs in a child mpkc that reads the inputs again; save the contract to a file");
        return exit::USAGE;
    }
    // A chain: its stages' files are the contracts, `m` the manifest's unless `--m` says.
    let chain = match v.chain.as_deref().map(driver::chain::load).transpose() {
        Ok(c) => c,
        Err(e) => {
            errln!("error: {e}");
            return exit::USAGE;
        }
    };
    let mut chain_common;
    let (common, m) = match &chain {
        Some(c) => {
            if !common.files.is_empty() {
                errln!(
                    "error: `--chain` takes the contracts its stages name; give no FILES with it"
                );
                return exit::USAGE;
            }
            chain_common = common.clone();
            chain_common.files = c.contract_files();
            (&chain_common, v.m.or(c.manifest.m))
        }
        None => (common, v.m),
    };
    let checked = match check(common, m, color) {
        Ok(c) => c,
        Err(code) => return code,
    };
    // The cases: the chain alone, or every case of the files.
    let cases_for = |target: Target| -> Result<Vec<CaseSpec>, String> {
        match &chain {
            // A chain with a paged KV cache runs at `--context`, else at each default length.
            Some(c) => driver::chain::case(&checked, c, target)
                .map(|x| driver::verify::with_context_lengths(&checked, vec![x], v.context)),
            None => Ok(cases_with(&checked, target, m, v.context)),
        }
    };
    if v.list {
        let target = match v.target.as_deref().map(Target::parse) {
            None => Target::Sm90a,
            Some(Some(t)) => t,
            Some(None) => {
                errln!(
                    "error: unknown target `{}`: sm_90a or sm_100a",
                    v.target.as_deref().unwrap_or_default()
                );
                return exit::USAGE;
            }
        };
        let listed: Vec<CaseSpec> = match cases_for(target) {
            Ok(c) => c,
            Err(e) => {
                errln!("error: {e}");
                return exit::USAGE;
            }
        }
        .into_iter()
        .filter(|c| v.only.as_ref().is_none_or(|o| c.name.contains(o.as_str())))
        .collect();
        if listed.is_empty() {
            errln!(
                "error: no case to list{}",
                v.only
                    .as_ref()
                    .map(|o| format!(" (none contains `{o}`)"))
                    .unwrap_or_default()
            );
            return exit::USAGE;
        }
        for c in &listed {
            match (&c.skip, json) {
                (skip, true) => outln!(
                    "{}",
                    serde_json::json!({"reason": "case", "name": c.name, "skipped": skip,
                        "reference": c.reference})
                ),
                (None, false) => outln!(
                    "{}\treference: {}",
                    c.name,
                    c.reference.as_deref().unwrap_or("none")
                ),
                (Some(why), false) => outln!("{}\tskipped: {why}", c.name),
            }
        }
        return exit::OK;
    }
    let gpu = match Gpu::open_ordinal(if v.child.is_some() { v.device } else { 0 }) {
        Ok(g) => g,
        Err(e) => {
            errln!("error: {e}");
            return exit::ABSENT;
        }
    };
    let target = match target_of(&gpu, v.target.as_deref()) {
        Ok(t) => t,
        Err(e) => {
            errln!("error: {e}");
            return exit::USAGE;
        }
    };
    let mut all = match cases_for(target) {
        Ok(c) => c,
        Err(e) => {
            errln!("error: {e}");
            return exit::USAGE;
        }
    };
    if let Some(only) = &v.only {
        all.retain(|c| c.name.contains(only.as_str()));
        if all.is_empty() {
            errln!("error: no case name contains `{only}` (`mpkc verify --list` prints them)");
            return exit::USAGE;
        }
    }
    let (dir, temporary) = match &v.out {
        Some(d) => (d.clone(), false),
        None => (
            std::env::temp_dir().join(format!("mpkc-verify-{}", std::process::id())),
            true,
        ),
    };
    if let Some(name) = &v.child {
        return child(&gpu, &checked, &all, name, &dir, target, v);
    }
    let devices = match devices(&v.gpus) {
        Ok(d) => d,
        Err(e) => {
            errln!("error: {e}");
            return exit::USAGE;
        }
    };
    let gpu_line = format!(
        "{} (sm_{}{}, {} SMs) x {} ({})",
        gpu.name,
        gpu.cc.0,
        gpu.cc.1,
        gpu.sms,
        devices.len(),
        devices
            .iter()
            .map(|d| format!("device {d}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    drop(gpu);
    let run = Run {
        target,
        gpu_line: &gpu_line,
        devices: &devices,
        json,
    };
    let code = parent(&checked, &all, &dir, v, run);
    if temporary {
        let _ = std::fs::remove_dir_all(&dir);
    }
    code
}

/// The device ordinals `--gpus` selects, each checked against the driver's count.
fn devices(sel: &GpuSelection) -> Result<Vec<usize>, String> {
    let count = Gpu::count().map_err(|e| e.to_string())?;
    match sel {
        GpuSelection::All => Ok((0..count).collect()),
        GpuSelection::List(l) => match l.iter().find(|&&d| d >= count) {
            Some(d) => Err(format!(
                "--gpus names device {d}, the driver shows {count} (0..={})",
                count - 1
            )),
            None => Ok(l.clone()),
        },
    }
}

/// What the parent knows of a case before any child runs.
enum Pre {
    /// Skipped, with why.
    Skip(String),
    /// nvcc rejected its test build: these error lines.
    Rejected(Vec<String>),
    /// To run in a child.
    Run,
}

/// One child's outcome: its result, the other lines it printed, its seconds, its device.
type Ran = (ChildResult, Vec<String>, f64, usize);

/// Runs the cases whose index is in `jobs` in child processes, `--per-gpu` at a time per device
/// of `devices`, and calls `done` with each outcome in the order of `jobs` (the report is the same
/// whatever the number of devices and the order in which children finish).
fn run_on_devices(
    all: &[CaseSpec],
    jobs: &[usize],
    dir: &Path,
    v: &VerifyArgs,
    devices: &[usize],
    mut done: impl FnMut(usize, Ran),
) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Condvar, Mutex};
    let next = AtomicUsize::new(0);
    let slots: Mutex<Vec<Option<Ran>>> = Mutex::new((0..jobs.len()).map(|_| None).collect());
    let ready = Condvar::new();
    let workers = devices
        .iter()
        .flat_map(|&d| std::iter::repeat_n(d, v.per_gpu.max(1) as usize));
    std::thread::scope(|scope| {
        for device in workers {
            let (next, slots, ready) = (&next, &slots, &ready);
            scope.spawn(move || loop {
                let k = next.fetch_add(1, Ordering::SeqCst);
                let Some(&i) = jobs.get(k) else { break };
                let started = Instant::now();
                let (result, messages) = spawn_child(&all[i].name, dir, v, device);
                let secs = started.elapsed().as_secs_f64();
                let mut s = slots.lock().unwrap_or_else(|e| e.into_inner());
                s[k] = Some((result, messages, secs, device));
                ready.notify_all();
            });
        }
        for (k, &i) in jobs.iter().enumerate() {
            let mut s = slots.lock().unwrap_or_else(|e| e.into_inner());
            while s[k].is_none() {
                s = ready.wait(s).unwrap_or_else(|e| e.into_inner());
            }
            let ran = s[k].take();
            drop(s);
            if let Some(ran) = ran {
                done(i, ran);
            }
        }
    });
}

/// Where the parent runs its cases and how it reports them.
#[derive(Clone, Copy)]
struct Run<'a> {
    target: Target,
    /// The GPU line of the report (name, compute capability, SMs, devices).
    gpu_line: &'a str,
    /// The CUDA devices the cases are spread over.
    devices: &'a [usize],
    /// JSON lines instead of text.
    json: bool,
}

fn parent(checked: &[Checked], all: &[CaseSpec], dir: &Path, v: &VerifyArgs, run: Run<'_>) -> u8 {
    let Run {
        target,
        gpu_line,
        devices,
        json,
    } = run;
    let (defines, not_applicable) = match write_test_build(dir, checked, all, v.inject.as_ref()) {
        Ok(x) => x,
        Err(e) => {
            errln!(
                "error: cannot write the test build to {}: {e}",
                dir.display()
            );
            // The environment lacks a writable place for the output (docs/design.md).
            return exit::ABSENT;
        }
    };
    let tc = match nvcc::find() {
        Ok(tc) => tc,
        Err(e) => {
            errln!("error: {e}");
            return exit::ABSENT;
        }
    };
    if json {
        outln!(
            "{}",
            serde_json::json!({"reason": "verify", "gpu": gpu_line, "target": target.as_str(),
                "tasks_per_cta": v.tasks, "seed": v.seed,
                "inject": v.inject.as_ref().map(|i| format!("{i:?}"))})
        );
    } else {
        outln!(
            "mpkc verify: {gpu_line}, target {target}, {} tasks per CTA, seed {}{}",
            v.tasks,
            v.seed,
            v.inject
                .as_ref()
                .map(|i| format!(", injected fault {i:?}"))
                .unwrap_or_default()
        );
    }
    let jobs = std::thread::available_parallelism().map_or(4, |n| n.get());
    let flags = test_flags(v.wait_timeout_ms, &defines);
    let compiled = compile_cases(&tc, dir, all, target, &flags, jobs);
    let (mut pass, mut fail, mut skip, mut driver_errors) = (0, 0, 0, 0);
    let mut pre: Vec<Pre> = Vec::with_capacity(all.len());
    for (c, comp) in all.iter().zip(compiled) {
        pre.push(if let Some(why) = &c.skip {
            Pre::Skip(why.clone())
        } else if let Some((_, why)) = not_applicable
            .iter()
            .find(|(u, _)| c.name.split(" -> ").any(|x| x == u))
        {
            Pre::Skip(format!("fault does not apply: {why}"))
        } else {
            match comp {
                Some(Ok(_)) => Pre::Run,
                Some(Err(f)) => Pre::Rejected(
                    f.stderr
                        .lines()
                        .filter(|l| l.contains("error"))
                        .take(4)
                        .map(|l| l.trim().to_string())
                        .collect(),
                ),
                None => Pre::Skip("not compiled".into()),
            }
        });
    }
    let jobs: Vec<usize> = (0..all.len())
        .filter(|&i| matches!(pre[i], Pre::Run))
        .collect();
    // Cases before the first job, between jobs and after the last are printed in case order.
    let mut printed = 0;
    let mut print_static = |upto: usize, skip: &mut usize, fail: &mut usize| {
        while printed < upto {
            let c = &all[printed];
            match &pre[printed] {
                Pre::Skip(why) => {
                    *skip += 1;
                    print_skip(&c.name, why, json);
                }
                Pre::Rejected(errors) => {
                    *fail += 1;
                    if json {
                        outln!(
                            "{}",
                            serde_json::json!({"reason": "case-result", "name": c.name, "verdict": "fail",
                                "error": "nvcc rejected the test build", "messages": errors})
                        );
                    } else {
                        outln!("  FAIL  {:<52} nvcc rejected the test build", c.name);
                        for l in errors {
                            outln!("        {l}");
                        }
                    }
                }
                Pre::Run => {}
            }
            printed += 1;
        }
    };
    run_on_devices(
        all,
        &jobs,
        dir,
        v,
        devices,
        |i, (result, messages, secs, device)| {
            print_static(i, &mut skip, &mut fail);
            let c = &all[i];
            let ok = result.status == "ok"
                && !result.outputs.is_empty()
                && result.outputs.iter().all(|o| o.pass);
            if result.status == "driver" {
                driver_errors += 1;
            }
            if ok {
                pass += 1;
            } else {
                fail += 1;
            }
            if json {
                outln!(
                    "{}",
                    serde_json::json!({"reason": "case-result", "name": c.name,
                        "verdict": if ok { "pass" } else { "fail" }, "status": result.status,
                        "error": result.error, "ctas": result.ctas, "tasks": result.tasks,
                        "outputs": result.outputs, "messages": messages, "seconds": secs,
                        "device": device})
                );
            } else {
                let device = (devices.len() > 1).then_some(device);
                print_case(c, &result, ok, secs, device, &messages);
            }
            print_static(i + 1, &mut skip, &mut fail);
        },
    );
    print_static(all.len(), &mut skip, &mut fail);
    if json {
        outln!(
            "{}",
            serde_json::json!({"reason": "verify-summary", "target": target.as_str(),
                "passed": pass, "failed": fail, "skipped": skip, "gpus": devices.len()})
        );
    } else {
        outln!(
            "verified {} cases on {target}: {pass} passed, {fail} failed, {skip} skipped",
            pass + fail + skip
        );
    }
    if fail > 0 {
        exit::ERRORS
    } else if driver_errors > 0 {
        exit::EXTERNAL
    } else {
        exit::OK
    }
}
