//! `mpkc bench`: check the contracts at each `--m`, write and compile their production builds,
//! then on the GPU check each linear against cuBLAS (each consumer op against PyTorch eager) and
//! time both sides (docs/bench.md). A
//! progress line on stderr (a bar on a terminal, plain lines otherwise), the table (or the
//! `--json` document) on stdout at the end.

use super::args::{BenchArgs, BenchMethod, CommonArgs};
use super::{exit, inputs, report};
use crate::diag::ColorMode;
use crate::driver::bench::{
    cases_at, compile, consumer_cases_at, m_dir, units, write_production, MSet,
};
use crate::driver::{self, nvcc, Checked};
use crate::gpu::bench::case::{self, BenchCase, CaseOp, Cubins, Libraries, Options};
use crate::gpu::bench::consumer::consumer_of;
use crate::gpu::bench::cublas::Blas;
use crate::gpu::bench::cublaslt::Lt;
use crate::gpu::bench::persistent;
use crate::gpu::bench::report::{
    self as rep, BenchReport, CaseReport, Ceiling, FixedCost, GpuInfo, Settings,
};
use crate::gpu::bench::shape::linear_of;
use crate::gpu::bench::stats;
use crate::gpu::bench::timing::{self, Plan};
use crate::gpu::{Gpu, GpuError};
use crate::ir::Target;
use crate::sema::SemaOptions;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

/// Progress on stderr: a bar on a terminal, else one line per step.
struct Progress {
    bar: Option<ProgressBar>,
    total: usize,
    done: usize,
}

impl Progress {
    fn new(total: usize) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let b = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
            if let Ok(s) =
                ProgressStyle::with_template("{prefix:>8} [{bar:30}] {pos}/{len} {wide_msg}")
            {
                b.set_style(s.progress_chars("=> "));
            }
            b.set_prefix("bench");
            b
        });
        Progress {
            bar,
            total,
            done: 0,
        }
    }

    fn start(&self, what: &str) {
        if let Some(b) = &self.bar {
            b.set_message(what.to_string());
        }
    }

    fn finish_one(&mut self, what: &str, outcome: &str) {
        self.done += 1;
        match &self.bar {
            Some(b) => b.inc(1),
            None => {
                let w = self.total.to_string().len();
                errln!("[{:>w$}/{}] {what}: {outcome}", self.done, self.total);
            }
        }
    }

    fn note(&self, line: &str) {
        match &self.bar {
            Some(b) => b.println(line),
            None => errln!("{line}"),
        }
    }

    fn clear(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// The sources checked with `m` and `m_real` set to `m` (on top of `--param`), diagnostics kept
/// (not printed): a contract that cannot take `m` gives its case's skip reason.
pub(crate) fn check_at(
    common: &CommonArgs,
    sources: &[driver::Source],
    m: i64,
) -> Result<Vec<Checked>, u8> {
    let (sema, opts) = super::options(common).map_err(|e| {
        errln!("error: {e}");
        exit::USAGE
    })?;
    Ok(driver::check_sources_with(
        sources,
        |s| {
            let mut o: SemaOptions = sema.clone();
            o.overrides.extend(driver::token_overrides(s, m));
            o
        },
        &opts,
    ))
}

/// A one-line description of an nvcc failure.
fn nvcc_reason(f: &nvcc::CompileFailure) -> String {
    let first = f
        .stderr
        .lines()
        .find(|l| l.contains("error"))
        .unwrap_or_else(|| f.stderr.lines().next().unwrap_or(""))
        .trim()
        .to_string();
    format!("nvcc rejected the production build: {first}")
}

/// Runs `mpkc bench`.
pub fn run(common: &CommonArgs, b: &BenchArgs, color: ColorMode) -> u8 {
    // A `--save-json` that cannot be written is refused before minutes of GPU work.
    if let Some(f) = &b.save_json {
        if let Err(why) = json_file_ok(f) {
            errln!("error: --save-json {}: {why}", f.display());
            return exit::USAGE;
        }
    }
    let (report, code) = match measure(common, b, color, "bench") {
        Ok(r) => r,
        Err(code) => return code,
    };
    let json = serde_json::to_string_pretty(&report).unwrap_or_default();
    if b.json {
        outln!("{json}");
    } else {
        out!("{}", rep::table(&report));
    }
    if let Some(f) = &b.save_json {
        if let Err(e) = std::fs::write(f, format!("{json}\n")) {
            errln!("error: cannot write {}: {e}", f.display());
            return exit::ABSENT;
        }
    }
    code
}

/// The `--m` values in their order, each once (an M given twice would be timed, and in `tune`
/// counted in the geometric mean, twice).
pub(super) fn distinct_ms(ms: &[i64]) -> Vec<i64> {
    let mut out: Vec<i64> = Vec::new();
    for m in ms {
        if !out.contains(m) {
            out.push(*m);
        }
    }
    out
}

/// Whether `path` can take the JSON report: not a folder, and its folder exists.
fn json_file_ok(path: &std::path::Path) -> Result<(), String> {
    if path.is_dir() {
        return Err("is a folder: name the file to write".into());
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => std::path::Path::new("."),
    };
    if !parent.is_dir() {
        return Err(format!(
            "its folder {} does not exist: create it first",
            parent.display()
        ));
    }
    Ok(())
}

/// Checks, builds and times the inputs' linears as `mpkc bench` does, printing diagnostics and
/// progress but not the report: the report and the exit status its results give (1 for a
/// mismatch, 3 for a failed case), or `Err` with the exit status that stopped it (4 with no GPU,
/// no nvcc or no writable build folder). `who` names the command in messages (`bench`,
/// `roofline --measure`).
pub(crate) fn measure(
    common: &CommonArgs,
    b: &BenchArgs,
    color: ColorMode,
    who: &str,
) -> Result<(BenchReport, u8), u8> {
    if common.files.iter().any(|f| f.as_os_str() == "-") {
        errln!("error: `{who}` cannot read a contract from stdin (`-`): it checks the inputs once per `--m`; save the contract to a file");
        return Err(exit::USAGE);
    }
    if b.timeline && (b.method == BenchMethod::Standalone || b.fixed_cost) {
        errln!("error: `--timeline` reads the persistent method's stamps: use it with `--method persistent` or `both`, without `--fixed-cost` (which prints its own timeline)");
        return Err(exit::USAGE);
    }
    // 1. The contracts at their own params: diagnostics printed, errors stop here.
    let base = super::check_all(common, color)?;
    if base.iter().any(Checked::has_errors) {
        report::summary(&base, common.message_format);
        return Err(exit::ERRORS);
    }
    let units = units(&base);
    if units.linears.is_empty() && units.consumers.is_empty() {
        errln!(
            "error: nothing to time among the inputs: mpkc {who} times the pipeline linears (family A, against cuBLAS) and the consumer ops rmsnorm, silu_mul, embedding and argmax (against PyTorch eager)"
        );
        return Err(exit::USAGE);
    }
    let sources: Vec<driver::Source> = match inputs::load(&common.files) {
        Ok(l) => l.into_iter().filter_map(Result::ok).collect(),
        Err(e) => {
            errln!("error: {e}");
            return Err(exit::USAGE);
        }
    };
    // 2. Each M: the sources checked at it, and its cases.
    let ms = distinct_ms(&b.m);
    let mut sets = Vec::new();
    for &m in &ms {
        let checked = check_at(common, &sources, m)?;
        let mut cases = cases_at(m, &checked, &units.linears);
        cases.extend(consumer_cases_at(m, &checked, &units.consumers));
        sets.push(MSet { m, checked, cases });
    }
    // Nothing runnable at any M (every case skipped: an M the contracts cannot take, an argmax
    // partial without its reduce): say why each is skipped, and stop before the GPU.
    if sets
        .iter()
        .all(|s| s.cases.iter().all(|c| c.skip.is_some()))
    {
        for s in &sets {
            for c in &s.cases {
                errln!(
                    "skipped: {} M = {}: {}",
                    c.name,
                    s.m,
                    c.skip.as_deref().unwrap_or("")
                );
            }
        }
        errln!("error: nothing to time: every case is skipped (above)");
        return Err(exit::ERRORS);
    }
    // 3. The GPU.
    let gpu = match Gpu::open() {
        Ok(g) => g,
        Err(GpuError::NoDriver) => {
            errln!("error: mpkc {who} needs a GPU: no CUDA driver (libcuda) on this machine: run it where an NVIDIA driver and GPU are present");
            return Err(exit::ABSENT);
        }
        Err(e) => {
            errln!("error: mpkc {who} needs a GPU: {e}");
            return Err(exit::ABSENT);
        }
    };
    let target = match super::verify::target_of(&gpu, b.target.as_deref()) {
        Ok(t) => t,
        Err(e) => {
            errln!("error: {e}");
            return Err(exit::USAGE);
        }
    };
    let tc = match nvcc::find() {
        Ok(tc) => tc,
        Err(e) => {
            errln!("error: {e}");
            return Err(exit::ABSENT);
        }
    };
    let (dir, temporary) = match &b.out {
        Some(d) => (d.clone(), false),
        None => (
            std::env::temp_dir().join(format!("mpkc-bench-{}", std::process::id())),
            true,
        ),
    };
    let code = bench(&gpu, &tc, target, &dir, &sets, &units.other, b);
    if temporary {
        let _ = std::fs::remove_dir_all(&dir);
    }
    code
}

fn bench(
    gpu: &Gpu,
    tc: &nvcc::Toolchain,
    target: Target,
    dir: &std::path::Path,
    sets: &[MSet],
    other: &[(String, String)],
    b: &BenchArgs,
) -> Result<(BenchReport, u8), u8> {
    let runnable: usize = sets
        .iter()
        .map(|s| s.cases.iter().filter(|c| c.skip.is_none()).count())
        .sum();
    let mut progress = Progress::new(sets.len() + runnable + 1);
    // Production builds, one folder per M.
    let jobs = std::thread::available_parallelism().map_or(4, |n| n.get());
    let mut built = Vec::new();
    for set in sets {
        let d = m_dir(dir, set.m);
        let what = format!("nvcc M = {} ({} cases, {target})", set.m, set.cases.len());
        progress.start(&what);
        if let Err(e) = write_production(&d, set, b.timeline) {
            progress.clear();
            errln!(
                "error: cannot write the production build to {}: {e}",
                d.display()
            );
            return Err(exit::ABSENT);
        }
        built.push(compile(
            tc,
            &d,
            set,
            target,
            jobs,
            b.fixed_cost || b.method != BenchMethod::Standalone,
        ));
        progress.finish_one(&what, "built");
    }
    // The device side: a stream of our own (graphs cannot capture the legacy stream).
    let ctx = gpu.context().clone();
    let stream = match ctx.new_stream() {
        Ok(s) => s,
        Err(e) => {
            progress.clear();
            errln!("error: CUDA driver call `cuStreamCreate` failed: {e:?}");
            return Err(exit::EXTERNAL);
        }
    };
    let libs = Libraries {
        blas: Blas::new(&stream),
        lt: Lt::new(&stream),
    };
    if let Err(why) = &libs.blas {
        progress.note(&format!("warning: no cuBLAS competitor: {why}"));
    }
    if let Err(why) = &libs.lt {
        progress.note(&format!("warning: no cuBLASLt competitor: {why}"));
    }
    let l2 = ctx
        .attribute(cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)
        .map_or(60 << 20, |x| x.max(0) as u64);
    let plan = Plan {
        runs: b.runs,
        repeats: b.repeats,
        warmup: b.warmup,
    };
    progress.start("copy ceiling");
    let ceiling = match timing::copy_ceiling_us(&ctx, &stream, b.repeats) {
        Ok(samples) => stats::median(&samples).and_then(|us| {
            stats::copy_ceiling(timing::CEILING_BYTES, us).map(|tb| Ceiling {
                bytes: timing::CEILING_BYTES,
                us,
                tb_per_s: tb,
            })
        }),
        Err(e) => {
            progress.note(&format!(
                "warning: the copy ceiling could not be measured: {e}"
            ));
            None
        }
    };
    progress.finish_one(
        "copy ceiling",
        &ceiling
            .as_ref()
            .map_or("not measured".into(), |c| format!("{:.2} TB/s", c.tb_per_s)),
    );
    let (standalone, persistent) = match b.method {
        BenchMethod::Standalone => (true, false),
        BenchMethod::Persistent => (false, true),
        BenchMethod::Both => (true, true),
    };
    let opts = Options {
        plan,
        seed: b.seed,
        target,
        standalone,
        persistent,
        rotate_l2_factor: b.rotate,
        l2_bytes: l2,
        ceiling: ceiling.as_ref().map(|c| c.tb_per_s),
        fixed_cost_p: b.tasks_per_cta,
        timeline: b.timeline,
        competitor: !b.no_competitor,
    };
    let mut cases: Vec<CaseReport> = other
        .iter()
        .map(|(u, why)| case::unrun(u, sets.first().map_or(0, |s| s.m), "skipped", why.clone()))
        .collect();
    let mut fixed: Vec<FixedCost> = Vec::new();
    let (mut failed, mut mismatched) = (false, false);
    for (set, compiled) in sets.iter().zip(built) {
        for (spec, cubins) in set.cases.iter().zip(compiled) {
            if let Some(why) = &spec.skip {
                cases.push(case::unrun(&spec.name, set.m, "skipped", why.clone()));
                continue;
            }
            let what = format!("{} M = {}", spec.name, set.m);
            progress.start(&what);
            let files = match cubins {
                Some(Ok((p, s))) => {
                    let read = |f: &std::path::Path| {
                        std::fs::read(f).map_err(|e| format!("cannot read {}: {e}", f.display()))
                    };
                    match (read(&p), s.as_deref().map(read).transpose()) {
                        (Ok(p), Ok(s)) => Ok((p, s)),
                        (Err(e), _) | (_, Err(e)) => Err(e),
                    }
                }
                Some(Err(f)) => Err(nvcc_reason(&f)),
                None => Err("not compiled".into()),
            };
            let tasks: Vec<_> = spec
                .units
                .iter()
                .map(|u| &set.checked[u.0].tasks[u.1])
                .collect();
            let op = match tasks.first().and_then(|t| linear_of(t)) {
                Some(sh) => Ok(CaseOp::Linear(sh)),
                None => consumer_of(&tasks).map(CaseOp::Consumer),
            };
            let (files, op) = match (files, op) {
                (Ok(f), Ok(op)) => (f, op),
                (Err(e), _) | (_, Err(e)) => {
                    failed = true;
                    cases.push(case::unrun(&spec.name, set.m, "failed", e.clone()));
                    progress.finish_one(&what, &format!("FAILED: {e}"));
                    continue;
                }
            };
            let bc = BenchCase {
                name: spec.name.clone(),
                m: set.m,
                tasks,
                links: spec.links.clone(),
                op,
            };
            let cub = Cubins {
                production: files.0,
                stamped: files.1,
                entry: spec.entry.clone(),
            };
            if b.fixed_cost {
                let f = persistent::fixed_cost(gpu, &stream, &bc, &cub, &opts);
                failed |= f.status == "failed";
                let line = match f.per_task_us {
                    Some(x) if f.status == "ok" => format!("{x:.3} us per task"),
                    _ => format!("{}: {}", f.status, f.reason.as_deref().unwrap_or("")),
                };
                progress.finish_one(&what, &line);
                fixed.push(f);
                continue;
            }
            let r = case::run(gpu, &stream, &libs, &bc, &cub, &opts);
            failed |= r.status == "failed";
            mismatched |= r.status == "mismatch";
            let line = match r.status.as_str() {
                "ok" => r
                    .methods
                    .iter()
                    .map(|m| {
                        format!(
                            "{} {:.2} us{}",
                            m.method,
                            m.us,
                            m.speedup.map(|s| format!(" ({s:.2}x)")).unwrap_or_default()
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(", "),
                s => format!(
                    "{}: {}",
                    s.to_uppercase(),
                    r.reason.as_deref().unwrap_or("")
                ),
            };
            progress.finish_one(&what, &line);
            cases.push(r);
        }
    }
    progress.clear();
    let methods: Vec<String> = if b.fixed_cost {
        Vec::new()
    } else {
        [("standalone", standalone), ("persistent", persistent)]
            .iter()
            .filter(|(_, on)| *on)
            .map(|(m, _)| m.to_string())
            .collect()
    };
    let report = BenchReport {
        schema: rep::SCHEMA,
        tool: format!("mpkc {}", env!("CARGO_PKG_VERSION")),
        gpu: GpuInfo {
            name: gpu.name.clone(),
            compute_capability: format!("{}.{}", gpu.cc.0, gpu.cc.1),
            sms: gpu.sms,
            l2_bytes: l2,
        },
        target: target.as_str().to_string(),
        copy_ceiling: ceiling,
        settings: Settings {
            runs: b.runs,
            repeats: b.repeats,
            warmup: b.warmup,
            seed: b.seed,
            methods: methods.clone(),
            rotate_l2_factor: b.rotate,
        },
        summary: rep::summarize(&cases, &methods),
        cases: if b.fixed_cost { Vec::new() } else { cases },
        fixed_cost: fixed,
    };
    let code = if mismatched {
        exit::ERRORS
    } else if failed {
        exit::EXTERNAL
    } else {
        exit::OK
    };
    Ok((report, code))
}
