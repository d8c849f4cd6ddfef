//! The house-style checker: one module per invariant family of `mpk-v2-contract.md` §9, each rule
//! a function of (IR, sink). [`check`] runs every rule and, when no error was found, returns the
//! [`CheckedTask`] that code generation requires.
//!
//! Invariants decided from the contract, by code: I-S1 (E0101, E0102, E0104, E0108, E0114),
//! I-S2 (E0105), I-S3 (E0103), I-S4 (E0106), I-S5 for the order being planned (E0107; every
//! order with `check --predecessors all`), I-S6 (E0113), I-S8 (E0109), I-S9/I-S10 (E0110,
//! E0111), I-S11 (E0112), I-P6 (E0201), I-M1 (E0301), I-M2/I-M7 (E0302, E0311), I-M3 (E0305,
//! E0306), I-M4 (E0303), I-M6 (E0304), I-M8 (E0310), I-R1 (E0403, E0405), I-R2 (E0401, E0402,
//! E0406), I-R3 (E0406), I-T1 (E0501), I-T2 (E0502), I-T4 (E0503, E0504), I-T6 (E0507-E0510),
//! I-H4 (E0602), I-H5 (E0601), I-H7 (W0603); target instruction sets and register files
//! (E0505, E0506); setmaxnreg (E0404); names in generated code (E0012).
//!
//! Invariants no contract can break, because the generated code makes them true:
//! - I-S7: page geometry comes from one constant set (`plan::pages`), emitted into the spec.
//! - I-S9: device code addresses regions only through `smem_region_offset(REGION_*)` in the
//!   generated `SmemView`, with ordinals assigned by index (`regions[REGION_X] = …`).
//! - I-P1/I-P2/I-P3: each page is finished exactly once per task by exactly one owner, set by
//!   the generated `Registration` flags (page mode 1 for every task: the loader prefix frees
//!   unused pages; the consumer suffix, or a pipeline's launcher, the used ones), iterating
//!   physical pages.
//! - I-P4/I-P5: lane-parallel page release follows a named barrier of all consumer threads; the
//!   loader warp (the runtime's prefix for a region-less task, else the generated body's, the
//!   used pages first) is the one role waiting page parity, on every page of every task (a
//!   dense observer on any queue), and a consumer-only body runs after its `pages_ready`
//!   hand-off (`plan::sems::needs_page_handoff`).
//! - mbarriers are 8-byte aligned: op-private ordinals live in the runtime's `uint64_t`
//!   `dynamic_semaphores` array; tasks declare none in their regions.
//! - I-M2/I-M5: `init_semaphores` initialises every ordinal with its count, then fences; re-init
//!   helpers are force-inlined and end with the fence.
//! - I-M9: every consumer body runs behind the dependency prefix (the worker, as MPK's codegen).
//! - I-M10: no tag flags are generated.
//! - I-R1: consumer bodies start with `if (threadIdx.x >= 128) return;`.
//! - I-R4/I-R5/I-R6: role bodies take exactly the dispatcher's parameters; no profiling code.
//! - I-T3/I-T5: TMEM lane bases and SMEM descriptors are computed by mpkc, not written by hand.
//! - I-H1/I-H2/I-H3/I-H6/I-H8: the registration and the spec come from the one contract; spec
//!   headers are host-safe (tested with the host compiler).

mod asm_barriers;
mod asm_text;
mod barrier_names;
mod body;
mod body_constants;
mod body_sync;
mod const_expr;
mod coverage;
mod cxx_scan;
mod divergent_barriers;
mod grid;
mod grid_sync;
mod group_barriers;
mod held;
mod helper_calls;
mod helper_rules;
mod helper_scope;
mod mma;
mod names;
pub mod paged;
pub mod protocol;
mod ring_bytes;
mod ring_copies;
mod ring_uses;
pub mod rings;
mod roles;
mod route;
mod runtime_m;
mod sems;
pub mod smem;
mod static_asserts;
mod task_scope;
mod tensor_access;
mod tensor_roles;
mod tma;
mod tmem;
mod views;
mod warp_collectives;
mod wiring;

use crate::diag::Sink;
use crate::ir::{TargetIr, TaskIr};
use crate::plan::pages::{Geometry, PagePlan};
use crate::plan::sems::Ordinal;
use crate::templates::Binding;

pub use coverage::{consumers, declarations, Consumer, Decl, Item};
pub use names::{lever_name_taken, MAX_UNIT_NAME};

/// Inline CUDA with its comments and string/char literals blanked (offsets kept): what scans for
/// names read (`body::strip_comments_and_strings`).
pub fn body_code(code: &str) -> String {
    body::strip_comments_and_strings(code)
}

/// Whether `code` (as [`body_code`] gives it) names `name` as a word, not a member or part of a
/// longer name (`body::names_word`).
pub fn names_word(code: &str, name: &str) -> bool {
    body::names_word(code, name)
}
pub use protocol::{check_one as model_check, model_text};
pub use smem::{pack_no_effect, raw_plans, request_list};
pub use tma::{FIRST_COMPUTE_TASK_ID, TMA_TASK_RANGE};

/// Options of a check run.
#[derive(Clone, Debug, Default)]
pub struct CheckOptions {
    /// The predecessor's release order to plan after (`--preferred`); identity when absent.
    pub preferred: Option<Vec<usize>>,
    /// The [`model_key`]s of protocols already model-checked clean: a task with one of these
    /// keys skips the model check, whose result it would repeat (another instance, or an
    /// instance checked again at a value of a param range that does not change its channels,
    /// sems or stages).
    pub proven_models: std::sync::Arc<Vec<String>>,
    /// The other builds of the same task the contract's text must also serve: its other
    /// instances and each instance at the checked values of its param ranges (their ends, and
    /// every value of a small range, [`crate::sema::MAX_INSIDE`]). A fix the checker suggests
    /// for the contract's text (E0107's "declare `X` first") is offered only when it holds for
    /// every one of them, so that applying it cannot break another instance.
    pub siblings: std::sync::Arc<Vec<crate::ir::TaskIr>>,
}

/// What the protocol model check reads of `ir`: its channels, sems, stages, roles, ordinal
/// table, targets, tiles per task, epilogues and named barriers, as text. Two tasks with the same key get the same model-check result.
pub fn model_key(ir: &TaskIr) -> String {
    let table = crate::plan::sems::allocate(ir);
    format!(
        "{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}",
        ir.channels,
        ir.sems,
        ir.stages,
        ir.roles,
        table,
        ir.targets,
        match &ir.granularity {
            crate::ir::GranularityIr::PerTile { tiles_per_task, .. } => *tiles_per_task,
            crate::ir::GranularityIr::GridWide { .. } => 1,
        },
        ir.epilogues,
        ir.barriers
    )
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
    /// The role program of each declared target (same order as `ir.targets`): what the model
    /// check proved and what the kernels, `spec.h`'s tables and `init_semaphores` render.
    pub programs: Vec<crate::lower::RoleProgram>,
    /// The page plan of each declared target (same order as `ir.targets`).
    pub plans: Vec<(TargetIr, Geometry, PagePlan)>,
}

impl CheckedTask {
    /// The linear engine's binding, where the pipeline lowers: the `compute` of the role
    /// programs (the same on every target, bound once by the lowering). The target-neutral files
    /// (layout header, harness, design doc) and verify's reference read it.
    pub fn linear(&self) -> Option<&crate::lower::LinearMath> {
        self.programs.first().and_then(|p| p.compute.as_ref())
    }

    /// The role program of `target` (a declared target: `programs` has one per declared target).
    pub fn program(&self, target: crate::ir::Target) -> Option<&crate::lower::RoleProgram> {
        self.programs.iter().find(|p| p.target == target)
    }

    /// Whether output `h` is zero before every run and left zero by it: the arrival counters of
    /// `split_k bf16` and `split_k atomic` (role `counters`) and the f32 accumulator of `split_k
    /// atomic`, which each tile's last split zeroes after reading it. Their allocation must be
    /// zeroed once (`mpkc wire` says so); verify and bench allocate them zeroed and check them.
    pub fn zero_between_runs(&self, h: crate::ir::TensorHandle) -> bool {
        self.ir.tensors[h].role() == Some(crate::ir::TensorRole::Counters)
            || self.linear().is_some_and(|p| {
                p.epilogue == crate::lower::Epilogue::SplitKAtomic
                    && p.split_sum.is_some_and(|s| s.partials == h)
            })
    }

    /// The plan the spec header records: the first target's.
    pub fn primary_plan(&self) -> &PagePlan {
        &self.plans[0].2
    }

    /// The smallest SMEM capacity over the declared targets (the spec's `PLANNER_CAPACITY_BYTES`).
    pub fn capacity_bytes(&self) -> i64 {
        self.plans
            .iter()
            .map(|(_, g, _)| g.capacity_bytes)
            .min()
            .unwrap_or(crate::ir::DEFAULT_SMEM_CAPACITY_BYTES)
    }
}

/// Runs every rule on `ir`. Returns the checked task when it has no errors (warnings allowed).
pub fn check(ir: TaskIr, opts: &CheckOptions, sink: &mut Sink) -> Option<CheckedTask> {
    let first = sink.len();
    let instance = ir.instance.clone();
    let checked = check_rules(ir, opts, sink);
    if let Some(inst) = instance {
        // A `--param` value's error is the command line's, whichever instance found it.
        sink.annotate_from_except(
            first,
            &crate::diag::instance_note(&inst),
            crate::sema::about_cli_value,
        );
    }
    checked
}

/// Every rule on `ir`; the checked task when no rule reported an error.
fn check_rules(ir: TaskIr, opts: &CheckOptions, sink: &mut Sink) -> Option<CheckedTask> {
    let before = sink.error_count();
    let first = sink.len();
    names::names(&ir, sink);
    body::family_items(&ir, sink);
    tensor_roles::pipeline_roles(&ir, sink);
    tensor_roles::counters(&ir, sink);
    route::family(&ir, sink);
    views::views(&ir, sink);
    views::in_place(&ir, sink);
    paged::paged(&ir, sink);
    let binding = body::template(&ir, sink);
    runtime_m::check(&ir, binding.as_ref(), sink);
    body::region_use(&ir, binding.as_ref(), sink);
    body_sync::inline_body_rules(&ir, sink);
    helper_calls::calls(&ir, sink);
    helper_scope::helper_scope(&ir, sink);
    task_scope::task_scope(&ir, sink);
    barrier_names::undeclared(&ir, sink);
    asm_barriers::asm_barriers(&ir, sink);
    asm_barriers::prelude_barrier_calls(&ir, sink);
    divergent_barriers::divergent_barriers(&ir, sink);
    static_asserts::static_asserts(&ir, sink);
    ring_copies::ring_copies(&ir, sink);
    ring_uses::ring_uses(&ir, sink);
    body::tensors_used(&ir, binding.as_ref(), sink);
    tensor_access::tensor_access(&ir, sink);
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
    rings::rings(&ir, sink);
    sems::shared_storage(&ir, sink);
    sems::roles_bound(&ir, sink);
    wiring::linear_limits(&ir, sink);
    wiring::tiles_per_task(&ir, sink);
    grid::grid_wide(&ir, sink);
    grid_sync::reserved_calls(&ir, sink);
    wiring::levers(&ir, sink);
    wiring::task_slots(&ir, sink);
    wiring::tensor_rank(&ir, sink);
    smem::target_capacity(&ir, sink);
    held::declared(&ir, sink);
    let ordinals = crate::plan::sems::allocate(&ir);
    sems::ordinal_budget(&ir, &ordinals, sink);
    let proven = !opts.proven_models.is_empty() && opts.proven_models.contains(&model_key(&ir));
    // The linear lowering's binding, where the contract has one: the model check runs on the
    // program the kernels render (its engine steps' reads included). Its diagnostics (E0013) are
    // reported only for an otherwise clean task, after the SMEM budget.
    let mut lowering = Sink::new();
    let pipeline = if sink.error_count() == before {
        crate::lower::linear::bind(&ir, &mut lowering)
    } else {
        None
    };
    // One role program per declared target: what the model check proves is what the kernels
    // render.
    let programs: Option<Vec<_>> = (sink.error_count() == before).then(|| {
        ir.targets
            .iter()
            .map(|t| crate::lower::lower(&ir, &ordinals, t.target, pipeline.as_ref()))
            .collect()
    });
    if let Some(progs) = programs.as_ref().filter(|_| !proven) {
        protocol::check(&ir, &ordinals, progs, sink);
    }
    let plans = smem::budget(&ir, opts, sink);
    if let Some(plans) = &plans {
        smem::swizzle_alignment(&ir, plans, sink);
        held::planned(&ir, plans, sink);
    }
    // Last of the rules: a used helper's own (E0026), less what this task reports of it already
    // on the `use` line (its placed regions' budget, a reserved call).
    helper_rules::checked(&ir, opts, sink, first);
    // What the backends cannot lower is an error of `check` (E0013), so that what check accepts is
    // what build generates. Only a contract that keeps every rule is lowered.
    if sink.error_count() == before {
        sink.extend(lowering.into_sorted());
    }
    match (plans, programs) {
        (Some(plans), Some(programs)) if sink.error_count() == before => {
            // Every declared item is consumed by some target's program, or E0014 (issue 11
            // Deliver 3): only a contract the lowering took whole reaches this.
            coverage::check(&ir, binding.as_ref(), &programs, sink);
            if sink.error_count() != before {
                return None;
            }
            Some(CheckedTask {
                ir,
                binding,
                ordinals,
                programs,
                plans,
            })
        }
        _ => None,
    }
}
