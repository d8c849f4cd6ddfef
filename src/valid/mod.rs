//! The house-style checker: one module per invariant family of `mpk-v2-contract.md` §9, each rule
//! a function of (IR, sink). [`check`] runs every rule and, when no error was found, returns the
//! [`CheckedTask`] that code generation requires.

mod body;
mod mma;
mod names;
mod protocol;
mod roles;
mod sems;
mod smem;
mod tma;
mod tmem;
mod wiring;

use crate::diag::Sink;
use crate::ir::{TargetIr, TaskIr};
use crate::plan::pages::{Geometry, PagePlan};
use crate::plan::sems::Ordinal;
use crate::templates::Binding;

pub use names::MAX_UNIT_NAME;
pub use smem::{raw_plans, request_list};

/// Options of a check run.
#[derive(Clone, Debug, Default)]
pub struct CheckOptions {
    /// The predecessor's release order to plan after (`--preferred`); identity when absent.
    pub preferred: Option<Vec<usize>>,
}

/// A task instance that passed every rule, with its plans and ordinal table.
#[derive(Clone, Debug)]
pub struct CheckedTask {
    /// The instance.
    pub ir: TaskIr,
    /// The body template binding, for template bodies.
    pub binding: Option<Binding>,
    /// Semaphore ordinals in allocation order.
    pub ordinals: Vec<Ordinal>,
    /// The page plan of each declared target (same order as `ir.targets`).
    pub plans: Vec<(TargetIr, Geometry, PagePlan)>,
}

impl CheckedTask {
    /// The plan the spec header records: the first target's.
    pub fn primary_plan(&self) -> &PagePlan {
        &self.plans[0].2
    }

    /// The smallest SMEM capacity over the declared targets (the spec's `PLANNER_CAPACITY_BYTES`).
    pub fn capacity_bytes(&self) -> i64 {
        self.plans.iter().map(|(_, g, _)| g.capacity_bytes).min().unwrap_or(crate::ir::DEFAULT_SMEM_CAPACITY_BYTES)
    }
}

/// Runs every rule on `ir`. Returns the checked task when it has no errors (warnings allowed).
pub fn check(ir: TaskIr, opts: &CheckOptions, sink: &mut Sink) -> Option<CheckedTask> {
    let first = sink.len();
    let instance = ir.instance.clone();
    let checked = check_rules(ir, opts, sink);
    if let Some(inst) = instance {
        sink.annotate_from(first, &format!("in instance `{inst}`"));
    }
    checked.ok()
}

fn check_rules(ir: TaskIr, opts: &CheckOptions, sink: &mut Sink) -> Result<CheckedTask, TaskIr> {
    let before = sink.error_count();
    names::names(&ir, sink);
    body::family_items(&ir, sink);
    let binding = body::template(&ir, sink);
    body::region_use(&ir, binding.as_ref(), sink);
    body::inline_body_rules(&ir, sink);
    body::tensors_used(&ir, binding.as_ref(), sink);
    roles::roles(&ir, sink);
    roles::barriers(&ir, sink);
    roles::setmaxnreg(&ir, sink);
    tmem::tmem_cols(&ir, sink);
    tmem::footprint(&ir, sink);
    mma::shapes(&ir, sink);
    mma::target_isa(&ir, sink);
    mma::accumulator_registers(&ir, sink);
    tma::boxes(&ir, sink);
    tma::expect_tx(&ir, sink);
    tma::task_id_range(&ir, sink);
    sems::counts(&ir, sink);
    sems::reinit(&ir, sink);
    sems::shared_empty(&ir, sink);
    sems::channel_shape(&ir, sink);
    sems::roles_bound(&ir, sink);
    wiring::linear_limits(&ir, sink);
    wiring::tiles_per_task(&ir, sink);
    wiring::grid_wide(&ir, sink);
    wiring::levers(&ir, sink);
    smem::target_capacity(&ir, sink);
    let ordinals = crate::plan::sems::allocate(&ir);
    sems::ordinal_budget(&ir, &ordinals, sink);
    if sink.error_count() == before {
        protocol::check(&ir, &ordinals, sink);
    }
    let plans = smem::budget(&ir, opts, sink);
    if let Some(plans) = &plans {
        smem::swizzle_alignment(&ir, plans, sink);
    }
    match plans {
        Some(plans) if sink.error_count() == before => Ok(CheckedTask { ir, binding, ordinals, plans }),
        _ => Err(ir),
    }
}
