//! `mpkc build`: check, plan, generate, write, and compile every worker unit with nvcc for every
//! declared target (in parallel, through the build cache), collecting ptxas reports.

use super::cache::{Cache, Entry, Lookup};
use super::nvcc::{self, CompileFailure, PtxasReport, Toolchain};
use super::outdir::{OutError, Staging};
use super::{fingerprint, Checked};
use crate::back::{self, FileKind, GeneratedFile};
use crate::diag::{codes, Diagnostic};
use crate::ir::Target;
use crate::span::Span;
use std::path::{Path, PathBuf};

/// One generated unit (task instance) and its files.
#[derive(Clone, Debug)]
pub struct UnitOutput {
    /// Index into the checked sources.
    pub source: usize,
    /// Index into that source's tasks.
    pub task: usize,
    /// `<task>[_<instance>]`.
    pub unit: String,
    /// Generated files.
    pub files: Vec<GeneratedFile>,
}

/// Generates every file of every checked task (no I/O).
pub fn generate_all(checked: &[Checked]) -> Vec<UnitOutput> {
    let mut out = Vec::new();
    for (si, c) in checked.iter().enumerate() {
        let info = c.contract_info();
        for (ti, t) in c.tasks.iter().enumerate() {
            out.push(UnitOutput {
                source: si,
                task: ti,
                unit: t.ir.unit_name(),
                files: back::generate(t, &info),
            });
        }
    }
    out
}

/// Writes the support headers and every generated file into `dir` in place (verify's test
/// builds; `mpkc build` stages with [`write_staged`]). An error names the file.
pub fn write_all(dir: &Path, units: &[UnitOutput]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| named(dir, e))?;
    for (name, text) in back::SUPPORT_HEADERS {
        write_if_changed(&dir.join(name), text)?;
    }
    for u in units {
        for f in &u.files {
            write_if_changed(&dir.join(&f.name), &f.text)?;
        }
    }
    Ok(())
}

/// The same error, with the path in its message.
fn named(path: &Path, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

fn write_if_changed(path: &Path, text: &str) -> std::io::Result<()> {
    if std::fs::read_to_string(path).is_ok_and(|old| old == text) {
        return Ok(());
    }
    std::fs::write(path, text).map_err(|e| named(path, e))
}

/// Writes the support headers and every generated file into a build's staging folder.
pub fn write_staged(staging: &Staging, units: &[UnitOutput]) -> Result<(), OutError> {
    for (name, text) in back::SUPPORT_HEADERS {
        staging.write(name, text.as_bytes())?;
    }
    for u in units {
        for f in &u.files {
            staging.write(&f.name, f.text.as_bytes())?;
        }
    }
    Ok(())
}

/// How a compile used the build cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheUse {
    /// No cache (`--no-cache`, or no cache folder).
    Off,
    /// The cubin and report came from the cache; nvcc did not run.
    Hit,
    /// Not in the cache: nvcc ran (and its output was stored).
    Miss,
    /// The entry was corrupt: nvcc ran and its output replaced the entry.
    Corrupt,
}

impl CacheUse {
    /// `off`, `hit`, `miss` or `corrupt` (the JSON `cache` field).
    pub fn as_str(self) -> &'static str {
        match self {
            CacheUse::Off => "off",
            CacheUse::Hit => "hit",
            CacheUse::Miss => "miss",
            CacheUse::Corrupt => "corrupt",
        }
    }
}

/// One nvcc job and its outcome.
#[derive(Clone, Debug)]
pub struct CompileJob {
    /// Unit index into the `UnitOutput` list.
    pub unit: usize,
    /// Translation unit file name.
    pub file: String,
    /// Target.
    pub target: Target,
    /// Outcome: cubin path and report, or the failure.
    pub result: Result<(PathBuf, PtxasReport), CompileFailure>,
    /// How the build cache was used.
    pub cache: CacheUse,
    /// A cache problem that did not fail the compile (a corrupt entry, a failed store).
    pub cache_note: Option<String>,
}

/// What [`compile_all_with`] reports while it runs (a progress bar, progress lines).
pub trait Progress: Sync {
    /// Called once, before any job, with the number of jobs.
    fn start(&self, _total: usize) {}
    /// Called from a worker thread when job `index` (its place in the result) is done.
    fn done(&self, _index: usize, _job: &CompileJob) {}
}

/// No progress report.
impl Progress for () {}

/// How [`compile_all_with`] compiles.
#[derive(Clone, Copy, Debug)]
pub struct CompileOptions<'a> {
    /// nvcc processes at a time (at least 1).
    pub jobs: usize,
    /// The build cache, or `None` to always run nvcc.
    pub cache: Option<&'a Cache>,
}

/// The jobs of a build: every worker unit (harness) for each of its task's targets, as
/// `(unit index, file, target)`, in unit order then target order.
pub fn jobs(checked: &[Checked], units: &[UnitOutput]) -> Vec<(usize, String, Target)> {
    let mut work = Vec::new();
    for (ui, u) in units.iter().enumerate() {
        let task = &checked[u.source].tasks[u.task];
        for f in u.files.iter().filter(|f| f.kind == FileKind::Harness) {
            for t in &task.ir.targets {
                work.push((ui, f.name.clone(), t.target));
            }
        }
    }
    work
}

/// Compiles every worker unit for each of its task's targets, `jobs` at a time, without the
/// cache.
pub fn compile_all(
    tc: &Toolchain,
    dir: &Path,
    checked: &[Checked],
    units: &[UnitOutput],
    jobs: usize,
) -> Vec<CompileJob> {
    let opts = CompileOptions { jobs, cache: None };
    compile_all_with(tc, dir, checked, units, &opts, &())
}

/// Compiles every job of [`jobs`] in `dir`, `opts.jobs` at a time, through the cache when
/// there is one. The result is in job order whatever order the jobs finish in.
pub fn compile_all_with(
    tc: &Toolchain,
    dir: &Path,
    checked: &[Checked],
    units: &[UnitOutput],
    opts: &CompileOptions,
    progress: &dyn Progress,
) -> Vec<CompileJob> {
    let work = jobs(checked, units);
    progress.start(work.len());
    let identity = opts.cache.map(|_| fingerprint::toolchain_identity(tc));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..opts.jobs.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((ui, file, target)) = work.get(i).cloned() else {
                    break;
                };
                let entry = back::harness_entry(&units[ui].unit);
                let cached = opts.cache.zip(identity.as_deref());
                let (result, cache, cache_note) =
                    compile_cached(tc, cached, dir, &file, &entry, target);
                let job = CompileJob {
                    unit: ui,
                    file,
                    target,
                    result,
                    cache,
                    cache_note,
                };
                progress.done(i, &job);
                if let Ok(mut r) = results.lock() {
                    r.push((i, job));
                }
            });
        }
    });
    let mut r = results.into_inner().unwrap_or_default();
    r.sort_by_key(|(i, _)| *i);
    r.into_iter().map(|(_, j)| j).collect()
}

type Compiled = Result<(PathBuf, PtxasReport), CompileFailure>;

/// One job through the cache: a verified entry is copied into `dir` without running nvcc;
/// otherwise nvcc runs and a successful output is stored. Failures are never stored.
fn compile_cached(
    tc: &Toolchain,
    cache: Option<(&Cache, &str)>,
    dir: &Path,
    file: &str,
    entry: &str,
    target: Target,
) -> (Compiled, CacheUse, Option<String>) {
    let Some(cache) = cache else {
        return (
            nvcc::compile(tc, dir, file, entry, target),
            CacheUse::Off,
            None,
        );
    };
    let args = nvcc::arguments(tc, file, target, &[]);
    let cubin = nvcc::cubin_name(file, target);
    let (out, used, note) = run_cached(tc, cache, dir, file, &args, &cubin);
    let result = out.map(|out| {
        let report = nvcc::parse_ptxas(&out.stderr, entry).unwrap_or_default();
        (out.cubin, report)
    });
    (result, used, note)
}

/// nvcc with `args` (from [`nvcc::arguments`]) on translation unit `file` in `dir`, writing
/// `cubin` there, through `cache` = (the cache, [`fingerprint::toolchain_identity`]): a verified
/// entry is written to `dir/cubin` without running nvcc (its stored stderr is returned as
/// nvcc's); otherwise nvcc runs and a successful output is stored. Failures are never stored.
/// The key ([`fingerprint::key`]) covers the whole command line and the contents of `file` and
/// every header it includes, not `dir`'s path. Also the third value: a cache problem that did
/// not fail the compile.
pub fn run_cached(
    tc: &Toolchain,
    (cache, identity): (&Cache, &str),
    dir: &Path,
    file: &str,
    args: &[String],
    cubin: &str,
) -> (
    Result<nvcc::NvccOutput, CompileFailure>,
    CacheUse,
    Option<String>,
) {
    // The key holds the whole command line: cc's arguments (e.g. from `$CXXFLAGS`) and mpkc's.
    let whole = [tc.cc_arguments(), args.to_vec()].concat();
    let key = fingerprint::key(identity, &whole, dir, file);
    let (used, mut note) = match cache.load(&key) {
        Lookup::Hit(e) => {
            let path = dir.join(cubin);
            let result = std::fs::write(&path, &e.cubin)
                .map(|()| nvcc::NvccOutput {
                    cubin: path.clone(),
                    stderr: e.stderr.clone(),
                })
                .map_err(|err| CompileFailure {
                    command: format!(
                        "copy {} to {}",
                        cache.entry_path(&key).display(),
                        path.display()
                    ),
                    stderr: format!("cannot write {}: {err}", path.display()),
                    not_started: true,
                });
            return (result, CacheUse::Hit, None);
        }
        Lookup::Miss => (CacheUse::Miss, None),
        Lookup::Corrupt(why) => (
            CacheUse::Corrupt,
            Some(format!(
                "cache entry {} was corrupt ({why}); rebuilt with nvcc and replaced",
                cache.entry_path(&key).display()
            )),
        ),
    };
    let result = nvcc::run(tc, dir, args, cubin).inspect(|out| match std::fs::read(&out.cubin) {
        Ok(bytes) => {
            let stored = Entry {
                cubin: bytes,
                stderr: out.stderr.clone(),
            };
            if let Err(e) = cache.store(&key, &stored) {
                note = Some(format!("not stored in the build cache: {e}"));
            }
        }
        Err(e) => {
            note = Some(format!(
                "not stored in the build cache: cannot read {}: {e}",
                out.cubin.display()
            ))
        }
    });
    (result, used, note)
}

/// The diagnostics of one failed compile job (`E0701`), before [`Checked::attribute`]: nvcc's
/// errors located in the contract or a helper ([`map_errors`]), else the whole failure on the
/// task (nvcc's command and output: mpkc's own code failed). Each names the unit (instance)
/// and the target nvcc compiled, since one contract line is compiled once per instance and
/// target and may fail in only some of them.
pub fn job_failure(
    c: &Checked,
    unit: &UnitOutput,
    job: &CompileJob,
    failure: &CompileFailure,
) -> Vec<Diagnostic> {
    let mut mapped = map_errors(c, &failure.stderr);
    if mapped.is_empty() {
        mapped.push(
            Diagnostic::error(
                codes::NVCC_FAILED,
                format!("nvcc failed on {} for {}", job.file, job.target),
            )
            .primary(c.tasks[unit.task].ir.name_span, "generated from this task")
            .note(format!("{}\n{}", failure.command, failure.stderr.trim_end()))
            .help("this is a bug in mpkc's generated code unless the contract's inline CUDA caused it"),
        );
        return mapped;
    }
    mapped
        .into_iter()
        .map(|d| {
            d.note(format!(
                "nvcc failed on unit `{}` for {} ({}); the same error in another unit or target is shown once",
                unit.unit, job.target, job.file
            ))
        })
        .collect()
}

/// Maps nvcc errors located in the contract (through the `#line` directives of inline bodies)
/// to `E0701` diagnostics on the contract's lines, and those located in a helper's body (its own
/// file's `#line`) to the `use` item that brought it in, naming the helper's line.
pub fn map_errors(c: &Checked, stderr: &str) -> Vec<Diagnostic> {
    let starts: Vec<usize> = std::iter::once(0)
        .chain(c.source.text.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let in_helpers: Vec<Diagnostic> = nvcc::error_locations(stderr)
        .into_iter()
        .filter_map(|(file, line, msg)| {
            let file = file.replace('\\', "/");
            if file == c.source.path {
                return None;
            }
            let h = c
                .tasks
                .iter()
                .flat_map(|t| t.ir.helpers.iter())
                .find(|h| h.path == file)?;
            Some(
                Diagnostic::error(codes::NVCC_FAILED, format!("nvcc: {msg}"))
                    .primary(h.span, format!("helper `{}` used here", h.name))
                    .note(format!("at {file}:{line}, in the body of helper `{}` as this `use` binds its params", h.name))
                    .help(format!("give `{}` params its body accepts (its `static_assert`s state them), or fix the helper", h.name)),
            )
        })
        .collect();
    nvcc::error_locations(stderr)
        .into_iter()
        .filter(|(file, _, _)| file.replace('\\', "/") == c.source.path)
        .filter_map(|(_, line, msg)| {
            let start = *starts.get(line.checked_sub(1)?)?;
            let end = c.source.text[start..]
                .find('\n')
                .map_or(c.source.text.len(), |e| start + e);
            let text = &c.source.text[start..end];
            let lead = text.len() - text.trim_start().len();
            Some(
                Diagnostic::error(codes::NVCC_FAILED, format!("nvcc: {msg}"))
                    .primary(
                        Span::new(start + lead, end),
                        "in this line of the inline CUDA body",
                    )
                    .help("fix the CUDA in the contract's `body cuda { … }`"),
            )
        })
        .chain(in_helpers)
        .collect()
}
