//! Lowering: a checked [`TaskIr`] and its ordinal table to one [`RoleProgram`] per declared
//! target (issue 11, docs/design.md "Pipeline"). Everything after it reads the program: the
//! protocol model check (`valid::protocol`, once per target), `spec.h`'s semaphore tables, the
//! kernels' `init_semaphores`, re-init helpers and role functions.
//!
//! The synchronisation of a program follows from the contract's channels and sems (contract doc
//! §2.2, §3.2) and from the target's facts ([`target`]); the linear engine's work ([`Step`]s,
//! TMA loads, the scale staging) is placed into it only for a contract the linear lowering
//! accepts (`lower::linear::bind`), and adds no wait or arrival: the program the model check proves
//! for a contract is the one its kernels run (tested by `tests/role_program.rs`).

mod derive;
pub mod dump;
pub mod linear;
mod program;
pub mod target;

pub use derive::RUNTIME_PAGE_BARRIER;
pub use linear::{Epilogue, LinearMath, Operands, RouteMath, SplitSum};
pub use program::*;

use crate::ir::{Target, TaskIr};
use crate::plan::sems::Ordinal;

/// The role program of `ir` on `target`. `linear` is the linear engine's binding of the
/// contract's tensors and channels when the linear lowering accepts it; without it the program
/// holds the synchronisation only (for the model check of a contract that does not lower).
pub fn lower(
    ir: &TaskIr,
    table: &[Ordinal],
    target: Target,
    linear: Option<&LinearMath>,
) -> RoleProgram {
    derive::program(ir, table, target, linear)
}
