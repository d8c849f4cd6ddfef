//! Semantic analysis: AST → one [`TaskIr`] per task instance.
//!
//! Names resolve, params take their instance values, expressions evaluate with checked
//! arithmetic, stage arrays expand, dtypes and types check. Every problem is a diagnostic in the
//! sink; lowering goes on past errors so that one run reports them all.

mod collect;
pub mod eval;
mod fp8_scales;
mod lower;
mod lower_body;
mod lower_reference;
mod lower_regions;
mod lower_roles;
mod lower_stages;
mod lower_sync;
mod lower_task_type;
mod lower_use;
mod param_range;
mod param_runtime;
mod param_ty;
mod param_value;
mod params;
pub(crate) use params::{about_cli_value, CLI_VALUE_NOTE};
mod range_ends;
mod require;
mod unused;

pub use range_ends::{
    lower_range_ends, EndValue, RangeEnd, RangeEnds, RangePoint, MAX_INSIDE, MAX_JOINT,
};

use crate::diag::{codes, Diagnostic, Sink};
use crate::front::ast;
use crate::ir::TaskIr;

/// What the command line adds to a contract.
#[derive(Clone, Debug, Default)]
pub struct SemaOptions {
    /// `--param name=value` overrides, applied to every instance of a task that declares the
    /// param (the others ignore it; `driver::select` reports one naming no param of any input).
    pub overrides: Vec<(String, String)>,
    /// The names among `overrides` that are not the command line's but an end of the param's
    /// declared range (`lower_range_ends`): their value's span is the range, not the
    /// declaration, so a diagnostic on the value points at the range and says nothing of
    /// `--param`.
    pub range_end_overrides: Vec<String>,
    /// `--instance NAME`: lower only the instances of this name; a task without instances is
    /// then not lowered (`driver::select` reports a name no input declares).
    pub instance: Option<String>,
    /// The contracts `use` items may name helpers of (docs/language.md, "Helpers"): the using
    /// file itself and each file a `use … from "FILE"` names, found and parsed by the driver.
    pub helper_files: Vec<HelperFile>,
    /// The `from "FILE"` files that were found but cannot serve (they do not parse, are not a
    /// regular file, or cannot be read), so that E0024 says which and why.
    pub helper_file_errors: Vec<HelperFileError>,
}

/// A parsed contract `use` items look helpers up in.
#[derive(Clone, Debug)]
pub struct HelperFile {
    /// The path as a `from "…"` writes it, or `None` for the using contract itself.
    pub from: Option<String>,
    /// The display path of the file (the `#line` of helper code, the design document).
    pub path: String,
    /// Its syntax tree.
    pub ast: std::sync::Arc<ast::File>,
    /// Its text (for the line of the helper's body, which its `#line` names).
    pub text: std::sync::Arc<str>,
}

/// A file a `use … from "FILE"` names that was found but cannot serve (E0024).
#[derive(Clone, Debug)]
pub struct HelperFileError {
    /// The path as the `from "…"` writes it.
    pub from: String,
    /// The display path of the file.
    pub path: String,
    /// What is wrong with it.
    pub problem: HelperFileProblem,
}

/// Why a helper file that is there cannot serve.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HelperFileProblem {
    /// It does not parse: its first error, as `line N: message`.
    DoesNotParse(String),
    /// The path names a directory, a FIFO or a device, not a regular file.
    NotAFile,
    /// A regular file that could not be read (permissions, not UTF-8): the reason.
    Unreadable(String),
}

/// One lowered instance and whether lowering it reported no error (only clean instances go on
/// to the checker; the others keep their offending items left out).
#[derive(Clone, Debug)]
pub struct Lowered {
    /// The instance.
    pub ir: TaskIr,
    /// No error was reported while lowering it (or its task's declarations).
    pub clean: bool,
}

/// Lowers every task of `file` (every instance of each), reporting problems to `sink`.
pub fn lower_file(file: &ast::File, opts: &SemaOptions, sink: &mut Sink) -> Vec<Lowered> {
    let file_errors = sink.error_count();
    if file.tasks.is_empty() {
        sink.push(
            Diagnostic::error(codes::MISSING, "this file declares no task")
                .primary(crate::span::Span::new(0, 0), "empty contract")
                .help("declare `task NAME { family …; … }`"),
        );
    }
    collect::unique_names(sink, "task", file.tasks.iter().map(|t| &t.name));
    let file_clean = sink.error_count() == file_errors;
    let mut out = Vec::new();
    for task in &file.tasks {
        let before_task = sink.error_count();
        let c = collect::collect(task, sink);
        // A broken default every instance overrides is the task's error, not an instance's.
        params::unread_default_errors(&c.params, &c.instances, &opts.overrides, sink);
        let task_clean = file_clean && sink.error_count() == before_task;
        let instances: Vec<Option<&ast::Instance>> = if c.instances.is_empty() {
            vec![None]
        } else {
            c.instances.iter().map(|i| Some(*i)).collect()
        };
        let first = out.len();
        for inst in instances {
            if let Some(want) = &opts.instance {
                if inst.is_none_or(|i| &i.name.node != want) {
                    continue;
                }
            }
            let before = sink.error_count();
            let first_diag = sink.len();
            let ir = lower::lower_instance(task, &c, inst, opts, sink);
            // As `valid::check` does: which instance's values a diagnostic holds ("in instances
            // …" once merged, where every instance reports it).
            if let Some(i) = inst {
                // A `--param` value's error is the command line's, whichever instance found it.
                sink.annotate_from_except(
                    first_diag,
                    &crate::diag::instance_note(&i.name.node),
                    params::about_cli_value,
                );
            }
            out.push(Lowered {
                ir,
                clean: task_clean && sink.error_count() == before,
            });
        }
        let lowered: Vec<&TaskIr> = out[first..].iter().map(|l| &l.ir).collect();
        if sink.error_count() == before_task {
            sink.extend(unused::unused_params(task, &lowered));
            if let Some(first) = lowered.first() {
                sink.extend(fp8_scales::undeclared_fp8_scales(first));
            }
        }
    }
    out
}
