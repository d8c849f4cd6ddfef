//! The driver: runs the stages over contract sources, finds and runs nvcc, and writes outputs.

pub mod build;
pub mod cancel;
pub mod nvcc;
pub mod plan_view;
pub mod predecessors;
pub mod stdlib;
pub mod verify;

use crate::diag::{Diagnostic, Sink};
use crate::front;
use crate::sema::{self, SemaOptions};
use crate::valid::{self, CheckOptions, CheckedTask};

/// A contract source: the path as the user gave it (or `stdlib/<file>`) and its text.
#[derive(Clone, Debug)]
pub struct Source {
    /// Display path.
    pub path: String,
    /// Contents.
    pub text: String,
}

/// The result of checking one source.
#[derive(Clone, Debug)]
pub struct Checked {
    /// The source.
    pub source: Source,
    /// Diagnostics in report order.
    pub diags: Vec<Diagnostic>,
    /// The instances that passed every rule.
    pub tasks: Vec<CheckedTask>,
    /// Instances that lowered cleanly but failed a rule (for `plan` to show what MPK would do).
    pub rejected: Vec<crate::ir::TaskIr>,
}

impl Checked {
    /// True when any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diags.iter().any(Diagnostic::is_error)
    }
}

/// Parses, lowers and checks every task instance of `source`.
pub fn check_source(
    source: &Source,
    sema_opts: &SemaOptions,
    check_opts: &CheckOptions,
) -> Checked {
    check_parsed(
        source,
        front::parse_file(&source.text).as_ref(),
        sema_opts,
        check_opts,
    )
}

/// [`check_source`] on a parse the caller already has (the language server keeps the AST).
pub fn check_parsed(
    source: &Source,
    parsed: Result<&front::ast::File, &Vec<Diagnostic>>,
    sema_opts: &SemaOptions,
    check_opts: &CheckOptions,
) -> Checked {
    let mut sink = Sink::new();
    let mut tasks = Vec::new();
    let mut rejected = Vec::new();
    match parsed {
        Err(ds) => sink.extend(ds.iter().cloned()),
        Ok(ast) => {
            for lowered in sema::lower_file(ast, sema_opts, &mut sink) {
                if cancel::requested() {
                    break;
                }
                if !lowered.clean {
                    continue;
                }
                match valid::check(lowered.ir.clone(), check_opts, &mut sink) {
                    Some(t) => tasks.push(t),
                    None => rejected.push(lowered.ir),
                }
            }
        }
    }
    Checked {
        source: source.clone(),
        diags: sink.into_sorted(),
        tasks,
        rejected,
    }
}

/// Checks every source, then the contracts mpkc derives from them (the reduce task of each
/// split-K pipeline), and reports generated-file collisions across all of them.
pub fn check_sources(
    sources: &[Source],
    sema_opts: &SemaOptions,
    check_opts: &CheckOptions,
) -> Vec<Checked> {
    check_sources_with(sources, |_| sema_opts.clone(), check_opts)
}

/// [`check_sources`] with options chosen per source (`mpkc verify --m` overrides a token-count
/// param only in the files that declare it).
pub fn check_sources_with(
    sources: &[Source],
    sema_opts: impl Fn(&Source) -> SemaOptions,
    check_opts: &CheckOptions,
) -> Vec<Checked> {
    let mut checked: Vec<Checked> = sources
        .iter()
        .map(|s| check_source(s, &sema_opts(s), check_opts))
        .collect();
    if cancel::requested() {
        return checked;
    }
    let derived: Vec<Source> = checked.iter().flat_map(derived_sources).collect();
    let plain = SemaOptions::default();
    checked.extend(derived.iter().map(|s| check_source(s, &plain, check_opts)));
    unit_collisions(&mut checked);
    checked
}

/// The params `source` declares, in any of its tasks (empty when it does not parse).
pub fn declared_params(source: &Source) -> Vec<String> {
    match front::parse_file(&source.text) {
        Ok(ast) => ast
            .tasks
            .iter()
            .flat_map(|t| t.items.iter())
            .filter_map(|i| match i {
                front::ast::Item::Param(p) => Some(p.name.node.clone()),
                _ => None,
            })
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// The contracts derived from `c`: for a pipeline with a `split_k f32` epilogue, the reduce task
/// that sums its f32 partials into the bf16 output (one task per 512 output columns).
pub fn derived_sources(c: &Checked) -> Vec<Source> {
    let mut out = Vec::new();
    for t in &c.tasks {
        let Some(p) = t
            .pipeline
            .as_ref()
            .filter(|p| p.epilogue == crate::valid::Epilogue::SplitKF32)
        else {
            continue;
        };
        let unit = t.ir.unit_name();
        let targets: Vec<&str> = t.ir.targets.iter().map(|x| x.target.as_str()).collect();
        let text = format!(
            "// Derived by mpkc from {path}: the reduce task of `{unit}`'s split-K partials.\n\
task {unit}_reduce {{\n  family consumer-no-smem\n  targets {targets}\n  tensor partials: f32[{s}, {m}, {n}] in\n  tensor y: bf16[{m}, {n}] out\n  body splitk_reduce(partials -> y)\n  granularity per_tile(tasks ceil_div({n}, 512))\n}}\n",
            path = c.source.path,
            targets = targets.join(", "),
            s = p.splits,
            m = p.m_real,
            n = p.n,
        );
        out.push(Source {
            path: format!("{}#{unit}_reduce", c.source.path),
            text,
        });
    }
    out
}

/// Two task instances that would write the same files: equal unit names (task `t` with
/// instance `worker` and a task `t_worker`, or one task in two files). The later one is removed
/// with an `E0012` error on its task name.
pub fn unit_collisions(checked: &mut [Checked]) {
    let mut seen: Vec<(String, String)> = Vec::new();
    for c in checked.iter_mut() {
        let mut keep = Vec::new();
        for t in std::mem::take(&mut c.tasks) {
            let unit = t.ir.unit_name();
            if let Some((_, owner)) = seen.iter().find(|(u, _)| *u == unit) {
                c.diags.push(
                    Diagnostic::error(crate::diag::codes::NAME_CLASH, format!("`{unit}` would write the same generated files as a task instance of {owner}"))
                        .primary(t.ir.name_span, format!("generates {unit}_spec.h and {unit}.cuh"))
                        .help("rename the task or the instance"),
                );
                c.rejected.push(t.ir);
            } else {
                seen.push((unit, c.source.path.clone()));
                keep.push(t);
            }
        }
        c.tasks = keep;
    }
}
