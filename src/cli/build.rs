//! `mpkc build`: the budget table, the generated files, the nvcc runs and their ptxas reports.
//! With `--message-format json`, stdout carries only JSON lines: diagnostics, then one
//! `{"reason": "kernel", …}` object per compiled kernel (cargo's artifact habit).

use super::args::{CommonArgs, MessageFormat};
use super::progress::BuildProgress;
use super::{check_all, exit};
use crate::diag::{codes, render_human, render_json, ColorMode, Diagnostic, SourceFile};
use crate::driver::build::{
    compile_all_with, generate_all, job_failure, write_staged, CacheUse, CompileJob,
    CompileOptions, UnitOutput,
};
use crate::driver::cache::{self, Cache};
use crate::driver::outdir::Staging;
use crate::driver::{nvcc, Checked};
use serde_json::json;
use std::io::IsTerminal;
use std::path::Path;

/// `mpkc build`'s own options.
#[derive(Clone, Copy, Debug)]
pub struct BuildOptions<'a> {
    /// `--out`.
    pub out: &'a Path,
    /// `-j`.
    pub jobs: Option<usize>,
    /// `--no-cache`.
    pub no_cache: bool,
}

/// Runs `mpkc build`.
pub fn run(common: &CommonArgs, opts: BuildOptions, color: ColorMode) -> u8 {
    let out = opts.out;
    let json = common.message_format == MessageFormat::Json;
    let checked = match check_all(common, color) {
        Ok(c) => c,
        Err(code) => return code,
    };
    if checked.iter().any(Checked::has_errors) {
        super::report::summary(&checked, common.message_format);
        return exit::ERRORS;
    }
    // Before anything is printed or written: the build would delete an input in --out.
    let inputs = checked.iter().map(|c| Path::new(&c.source.path));
    if let Err(e) = crate::driver::outdir::refuse_inputs(out, inputs) {
        errln!("error: {e}");
        return out_error_status(&e);
    }
    if !json {
        print_budget_table(&checked);
    }
    let units = generate_all(&checked);
    // Everything is written into a staging folder that takes the place of --out at the end.
    let waiting = || {
        errln!(
            "waiting for another mpkc build of {} to finish",
            out.display()
        )
    };
    let staging =
        match Staging::create(out, waiting).and_then(|s| write_staged(&s, &units).map(|()| s)) {
            Ok(s) => s,
            Err(e) => {
                errln!("error: {e}");
                return out_error_status(&e);
            }
        };
    let compiled = nvcc::find().map(|tc| {
        let cache = (!opts.no_cache)
            .then(Cache::default_dir)
            .flatten()
            .map(|d| Cache::at(&d));
        let jobs = opts
            .jobs
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
        let progress = BuildProgress::new(!json && std::io::stderr().is_terminal(), &units);
        let copts = CompileOptions {
            jobs,
            cache: cache.as_ref(),
        };
        let results = compile_all_with(&tc, staging.path(), &checked, &units, &copts, &progress);
        progress.finish();
        (tc, results, cache)
    });
    // Sources (and the cubins that compiled) go into place even when nvcc is missing or fails.
    match staging.commit() {
        Ok(Some(warning)) => errln!("warning: {warning}"),
        Ok(None) => {}
        Err(e) => {
            errln!("error: {e}");
            return out_error_status(&e);
        }
    }
    if !json {
        let files: usize = units.iter().map(|u| u.files.len()).sum();
        outln!(
            "\nwrote {files} generated files for {} task instance{} (and {} support headers) to {}",
            units.len(),
            if units.len() == 1 { "" } else { "s" },
            crate::back::SUPPORT_HEADERS.len(),
            out.display()
        );
    }
    let (tc, results, cache) = match compiled {
        Ok(c) => c,
        Err(e) => {
            errln!("error: {e}");
            if json {
                // A machine reader gets its last object even without nvcc: nothing compiled.
                outln!(
                    "{}",
                    json!({
                        "reason": "build-finished", "success": false,
                        "kernels": 0, "nvcc_runs": 0, "cache_hits": 0, "failed": 0,
                        "cache_dir": null, "error": e,
                    })
                );
            }
            return exit::ABSENT;
        }
    };
    for note in results.iter().filter_map(|j| j.cache_note.as_ref()) {
        errln!("warning: {note}");
    }
    if !json {
        outln!(
            "\ncompiled with nvcc {} ({}), -Xptxas -v:",
            tc.version,
            tc.found_by
        );
        outln!(
            "  {:<34} {:<8} {:>5} {:>6} {:>6} {:>6}  cubin",
            "unit",
            "target",
            "regs",
            "spill",
            "stack",
            "smem"
        );
    }
    let status = report_results(&checked, &units, &results, out, json, color);
    if !json {
        spec_only_units(&checked, &units);
    }
    summary(&results, cache.as_ref(), opts.no_cache, status, json);
    status
}

/// The last line: how many kernels nvcc compiled and how many came from the cache (JSON: the
/// `build-finished` object).
fn summary(results: &[CompileJob], cache: Option<&Cache>, no_cache: bool, status: u8, json: bool) {
    let hits = results.iter().filter(|j| j.cache == CacheUse::Hit).count();
    let ran = results.len() - hits;
    let failed = results.iter().filter(|j| j.result.is_err()).count();
    if json {
        outln!(
            "{}",
            json!({
                "reason": "build-finished", "success": status == exit::OK,
                "kernels": results.len(), "nvcc_runs": ran, "cache_hits": hits, "failed": failed,
                "cache_dir": cache.map(|c| c.dir().display().to_string()),
            })
        );
        return;
    }
    let from = match cache {
        Some(c) => format!("the build cache {}", c.dir().display()),
        None if no_cache => "the build cache (off: --no-cache)".to_string(),
        None => format!("the build cache (off: set ${} or $HOME)", cache::DIR_ENV),
    };
    // A kernel nvcc rejected is counted as rejected, not as compiled.
    let rejected = if failed == 0 {
        String::new()
    } else {
        format!(", {failed} rejected by nvcc")
    };
    outln!(
        "\n{} kernel{}: {} compiled by nvcc{rejected}, {hits} from {from}",
        results.len(),
        if results.len() == 1 { "" } else { "s" },
        ran.saturating_sub(failed)
    );
}

/// The kernels in job order; a cubin is named by its place in `out` (not the staging folder).
fn report_results(
    checked: &[Checked],
    units: &[UnitOutput],
    results: &[CompileJob],
    out: &Path,
    json: bool,
    color: ColorMode,
) -> u8 {
    let mut status = exit::OK;
    let mut reported = std::collections::BTreeSet::new();
    for j in results {
        let unit = &units[j.unit];
        let placed = |staged: &Path| {
            staged
                .file_name()
                .map_or_else(|| out.to_path_buf(), |n| out.join(n))
        };
        if let Ok((_, r)) = &j.result {
            advise(checked, unit, j, r, json, color);
        }
        match &j.result {
            Ok((cubin, r)) if json => outln!(
                "{}",
                json!({
                    "reason": "kernel", "unit": unit.unit, "target": j.target.as_str(), "cubin": placed(cubin).display().to_string(),
                    "registers": r.registers, "spill_bytes": r.spill_stores + r.spill_loads,
                    "stack_bytes": r.stack_bytes, "smem_bytes": r.smem_bytes, "cache": j.cache.as_str(),
                })
            ),
            Ok((cubin, r)) => outln!(
                "  {:<34} {:<8} {:>5} {:>6} {:>6} {:>6}  {}",
                unit.unit,
                j.target.as_str(),
                r.registers,
                r.spill_stores + r.spill_loads,
                r.stack_bytes,
                r.smem_bytes,
                placed(cubin).display()
            ),
            Err(f) => {
                status = exit::EXTERNAL;
                let c = &checked[unit.source];
                let shown = c.display_source();
                let file = SourceFile::new(&shown.path, &shown.text);
                // Located in the contract or a helper, else mpkc's own output reported whole.
                let mapped = job_failure(c, unit, j, f);
                // A derived task's failure is shown on the instance it is derived from.
                let mapped: Vec<Diagnostic> = mapped.into_iter().map(|d| c.attribute(d)).collect();
                for d in &mapped {
                    // The same contract error fails every target: report it once.
                    if !reported.insert((unit.source, d.main_span(), d.message.clone())) {
                        continue;
                    }
                    show(d, &file, json, color);
                }
                if !json {
                    outln!("  {:<34} {:<8} FAILED", unit.unit, j.target.as_str());
                }
            }
        }
    }
    status
}

fn spec_only_units(checked: &[Checked], units: &[UnitOutput]) {
    for u in units {
        let t = &checked[u.source].tasks[u.task];
        if !u
            .files
            .iter()
            .any(|f| f.kind == crate::back::FileKind::Harness)
        {
            let targets: Vec<&str> = t.ir.targets.iter().map(|x| x.target.as_str()).collect();
            let why = if t.ir.family == crate::ir::Family::Helper {
                "a helper's code is emitted into the kernels of the tasks that use it".to_string()
            } else {
                format!(
                    "the {} family's kernel backend is not written yet",
                    t.ir.family.as_str()
                )
            };
            outln!(
                "  {:<34} {:<8} spec header only: {why}",
                u.unit,
                targets.join(",")
            );
        }
    }
}

fn print_budget_table(checked: &[Checked]) {
    let w = checked
        .iter()
        .flat_map(|c| c.tasks.iter().map(|t| t.ir.unit_name().len()))
        .max()
        .unwrap_or(13)
        .max(13);
    outln!(
        "{:<w$} {:<3} {:<18} {:>7} {:>8} {:>8} {:>9} {:>5}  targets",
        "task instance",
        "fam",
        "body",
        "regions",
        "bytes",
        "pages",
        "ordinals",
        "tmem"
    );
    for c in checked {
        for t in &c.tasks {
            let ir = &t.ir;
            let body = match (&t.binding, &ir.body) {
                (Some(b), _) => b.sig.name.to_string(),
                (None, Some(crate::ir::BodyIr::Cuda { .. })) => "cuda".to_string(),
                _ => "-".to_string(),
            };
            let tmem = ir.tmem_cols.map_or("-".to_string(), |(c, _)| c.to_string());
            let targets: Vec<&str> = ir.targets.iter().map(|t| t.target.as_str()).collect();
            outln!(
                "{:<w$} {:<3} {:<18} {:>7} {:>8} {:>8} {:>9} {:>5}  {}",
                ir.unit_name(),
                ir.family.letter(),
                body,
                ir.regions.len(),
                ir.region_bytes(),
                format!("{}/14", t.primary_plan().pages_used),
                format!("{}/31", t.ordinals.len()),
                tmem,
                targets.join(", ")
            );
        }
    }
}

/// The exit status of an output problem: 2 when `--out` names something a build may not replace,
/// 4 when the output cannot be written there (the run needs a writable place for its output and
/// the environment lacks it: permission, space, a file-size limit; not 2, the command line is
/// right, and not 3, no external program failed).
fn out_error_status(e: &crate::driver::outdir::OutError) -> u8 {
    if e.is_usage() {
        exit::USAGE
    } else {
        exit::ABSENT
    }
}

/// W0702: each ptxas "Potential Performance Loss" advisory of a compiled kernel, shown on the
/// task it was generated from (a derived task's on its instance). The kernel is built; the
/// advisory says that it runs slower than the code mpkc meant (e.g. wgmmas serialised).
fn advise(
    checked: &[Checked],
    unit: &UnitOutput,
    j: &CompileJob,
    r: &crate::driver::nvcc::PtxasReport,
    json: bool,
    color: ColorMode,
) {
    let c = &checked[unit.source];
    let shown = c.display_source();
    let file = SourceFile::new(&shown.path, &shown.text);
    for a in &r.advisories {
        let d = Diagnostic::warning(
            codes::PTXAS_ADVISORY,
            format!("ptxas: {a}"),
        )
        .primary(c.tasks[unit.task].ir.name_span, format!("in the {} kernel of this task", j.target.as_str()))
        .note(format!("in {}", j.file))
        .help("the kernel is built but runs slower than intended: a bug in mpkc's generated code unless the contract's inline CUDA causes it");
        show(&c.attribute(d), &file, json, color);
    }
}

/// Prints `d`: a JSON line on stdout, or rendered on stderr.
fn show(d: &Diagnostic, file: &SourceFile<'_>, json: bool, color: ColorMode) {
    if json {
        outln!("{}", render_json(d, file));
    } else {
        err!("{}", render_human(d, file, color));
    }
}
