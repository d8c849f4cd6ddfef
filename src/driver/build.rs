//! `mpkc build`: check, plan, generate, write, and compile every worker unit with nvcc for every
//! declared target (in parallel), collecting ptxas reports.

use super::nvcc::{self, CompileFailure, PtxasReport, Toolchain};
use super::Checked;
use crate::back::{self, ContractInfo, FileKind, GeneratedFile};
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
        let info = ContractInfo::new(&c.source.path, &c.source.text);
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

/// Writes the support headers and every generated file into `dir`.
pub fn write_all(dir: &Path, units: &[UnitOutput]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
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

fn write_if_changed(path: &Path, text: &str) -> std::io::Result<()> {
    if std::fs::read_to_string(path).is_ok_and(|old| old == text) {
        return Ok(());
    }
    std::fs::write(path, text)
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
}

/// Compiles every worker unit for each of its task's targets, `jobs` at a time.
pub fn compile_all(
    tc: &Toolchain,
    dir: &Path,
    checked: &[Checked],
    units: &[UnitOutput],
    jobs: usize,
) -> Vec<CompileJob> {
    let mut work: Vec<(usize, String, Target)> = Vec::new();
    for (ui, u) in units.iter().enumerate() {
        let task = &checked[u.source].tasks[u.task];
        for f in u.files.iter().filter(|f| f.kind == FileKind::Harness) {
            for t in &task.ir.targets {
                work.push((ui, f.name.clone(), t.target));
            }
        }
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((ui, file, target)) = work.get(i).cloned() else {
                    break;
                };
                let entry = back::harness_entry(&units[ui].unit);
                let result = nvcc::compile(tc, dir, &file, &entry, target);
                if let Ok(mut r) = results.lock() {
                    r.push((
                        i,
                        CompileJob {
                            unit: ui,
                            file,
                            target,
                            result,
                        },
                    ));
                }
            });
        }
    });
    let mut r = results.into_inner().unwrap_or_default();
    r.sort_by_key(|(i, _)| *i);
    r.into_iter().map(|(_, j)| j).collect()
}

/// Maps nvcc errors located in the contract (through the `#line` directives of inline bodies)
/// to `E0701` diagnostics on the contract's lines.
pub fn map_errors(c: &Checked, stderr: &str) -> Vec<Diagnostic> {
    let starts: Vec<usize> = std::iter::once(0)
        .chain(c.source.text.match_indices('\n').map(|(i, _)| i + 1))
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
        .collect()
}
