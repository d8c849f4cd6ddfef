//! The driver: runs the stages over contract sources, finds and runs nvcc, and writes outputs.

pub mod build;
pub mod nvcc;
pub mod plan_view;
pub mod stdlib;

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
pub fn check_source(source: &Source, sema_opts: &SemaOptions, check_opts: &CheckOptions) -> Checked {
    let mut sink = Sink::new();
    let mut tasks = Vec::new();
    let mut rejected = Vec::new();
    match front::parse_file(&source.text) {
        Err(ds) => sink.extend(ds),
        Ok(ast) => {
            for lowered in sema::lower_file(&ast, sema_opts, &mut sink) {
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
    Checked { source: source.clone(), diags: sink.into_sorted(), tasks, rejected }
}
