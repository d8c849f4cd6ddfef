//! `TaskIr`: one task instance with every name resolved, every expression evaluated and every
//! stage array expanded. Plain data with spans; cross-references are handles.

mod arena;
mod elem;
pub mod exact;
mod held;
mod helper;
mod reference;
mod route;
mod sync;
mod types;

pub use arena::{Arena, Handle};
pub use elem::*;
pub use held::{layout as layout_held, HeldIr, HeldType, MemberAccessor};
pub use helper::{helper_params, HelperUseIr};
pub use reference::{ReferenceFile, ReferenceIr, Tolerance, ToleranceIr};
pub use route::{RouteIr, RouteMode};
pub use sync::*;
pub use types::*;

use crate::span::Span;
use indexmap::IndexMap;

/// One task instance, ready for validation, planning and code generation.
#[derive(Clone, Debug)]
pub struct TaskIr {
    /// The task name as declared.
    pub name: String,
    /// The task name's span.
    pub name_span: Span,
    /// The whole task block.
    pub span: Span,
    /// The instance name, when the contract declares instances.
    pub instance: Option<String>,
    /// The whole instance declaration (`instance big(N = 4096)`), when the contract declares
    /// instances.
    pub instance_span: Option<Span>,
    /// The family.
    pub family: Family,
    /// Where the family was declared (the task name when defaulted).
    pub family_span: Span,
    /// Declared targets, in order.
    pub targets: Vec<TargetIr>,
    /// MPK TaskType value, if declared.
    pub task_id: Option<i64>,
    /// The `task_id` item (the task name when absent).
    pub task_id_span: Span,
    /// `reduce_task_id N`: the MPK TaskType of the reduce task derived from a split-K pipeline
    /// (`epilogue split_k f32`), with the item's span. The derived contract declares it as its
    /// `task_id` (`driver::derived_sources`), so the TMA-range rule (I-T6) and `mpkc wire` see it.
    pub reduce_task_id: Option<(i64, Span)>,
    /// `route W by ids per slot | sum slots` (docs/language.md, "Routed experts").
    pub route: Option<RouteIr>,
    /// Parameter values of this instance, in declaration order.
    pub params: IndexMap<String, ParamIr>,
    /// Tensors in declaration order (inputs map to `input_ptrs[i]`, outputs to `output_ptrs[i]`).
    pub tensors: Arena<TensorIr>,
    /// `tile M.., N.., K..`.
    pub tile: Option<TileIr>,
    /// `stages N`.
    pub stages: Option<(u32, Span)>,
    /// `mma …`.
    pub mma: Option<MmaIr>,
    /// `tmem cols N` (columns).
    pub tmem_cols: Option<(i64, Span)>,
    /// Regions after stage expansion; the handle index is the region ordinal (`REGION_*`).
    pub regions: Arena<RegionIr>,
    /// Declared region groups (a stage array or a single region).
    pub region_groups: Vec<RegionGroup>,
    /// Channels.
    pub channels: Arena<ChannelIr>,
    /// One-shot semaphores.
    pub sems: Arena<SemIr>,
    /// Role bindings (the runtime's default layout when the contract declares none).
    pub roles: Vec<RoleIr>,
    /// Whether the roles came from the contract.
    pub roles_declared: bool,
    /// Named barriers.
    pub barriers: Arena<BarrierIr>,
    /// The body.
    pub body: Option<BodyIr>,
    /// `body loader cuda { … }`: the loader warp's code of a consumer family with a ring
    /// (docs/language.md, "Consumer rings"); always [`BodyIr::Cuda`].
    pub loader_body: Option<BodyIr>,
    /// Epilogue alternatives as written (`store bf16`, `residual add`, …).
    pub epilogues: Vec<(String, Option<String>, Span)>,
    /// The named barrier of `epilogue quant e4m3 with B`, with the `B`'s span.
    pub epilogue_with: Option<(Handle<BarrierIr>, Span)>,
    /// Task granularity.
    pub granularity: GranularityIr,
    /// Levers (compile-time defines, default off per I-H7).
    pub levers: Vec<LeverIr>,
    /// `setmaxnreg`: (consumer warpgroup registers, helper warpgroup registers, span).
    pub setmaxnreg: Option<(i64, i64, Span)>,
    /// `reference python "PATH" fn NAME`: what `mpkc verify` checks an inline body against.
    pub reference: Option<ReferenceIr>,
    /// `use HELPER …`: the helpers the inline body calls, in declaration order.
    pub helpers: Vec<HelperUseIr>,
}

impl TaskIr {
    /// The param whose value MPK's runtime decides per step (`= runtime`), if the task has one:
    /// its value is the compile-time maximum (docs/runtime-m.md).
    pub fn runtime_tokens(&self) -> Option<&ParamIr> {
        self.params.values().find(|p| p.runtime.is_some())
    }

    /// The name used for generated files and the C++ namespace: `<task>` or `<task>_<instance>`.
    pub fn unit_name(&self) -> String {
        match &self.instance {
            Some(i) => format!("{}_{}", self.name, i),
            None => self.name.clone(),
        }
    }

    /// Where this instance is declared: the instance declaration, or the task name when the
    /// task has no instances. Diagnostics about the instance as a whole (its generated files,
    /// the tasks mpkc derives from it) point here.
    pub fn unit_span(&self) -> Span {
        self.instance_span.unwrap_or(self.name_span)
    }

    /// The first tensor that states `role`, if any (a role a lowering binds once: a pipeline's
    /// operands, a grid-wide task's `grid_barrier` counters).
    pub fn tensor_with_role(&self, role: TensorRole) -> Option<(Handle<TensorIr>, &TensorIr)> {
        self.tensors.iter().find(|(_, t)| t.role() == Some(role))
    }

    /// Input tensors in `input_ptrs` order, `inout` tensors included: MPK passes a tensor a task
    /// updates in place among its inputs (its attention tasks register the KV cache they append
    /// to as inputs 1 and 2 of 7, `task_register.cc`), so `num_inputs` counts it.
    pub fn inputs(&self) -> impl Iterator<Item = (Handle<TensorIr>, &TensorIr)> {
        self.tensors.iter().filter(|(_, t)| t.direction.is_read())
    }

    /// The `inout` tensors, in `input_ptrs` order: the tensors the task updates in place, which
    /// MPK's graph takes again as outputs after the `out` ones (`wire::UnitFacts::mpk_outputs`).
    pub fn in_place(&self) -> impl Iterator<Item = (Handle<TensorIr>, &TensorIr)> {
        self.inputs()
            .filter(|(_, t)| t.direction == crate::front::ast::Direction::InOut)
    }

    /// Output tensors in `output_ptrs` order: the `out` tensors (an `inout` tensor is an input).
    pub fn outputs(&self) -> impl Iterator<Item = (Handle<TensorIr>, &TensorIr)> {
        self.tensors
            .iter()
            .filter(|(_, t)| t.direction == Direction::Out)
    }

    /// Tensors the task writes (`out` and `inout`), in declaration order.
    pub fn written(&self) -> impl Iterator<Item = (Handle<TensorIr>, &TensorIr)> {
        self.tensors
            .iter()
            .filter(|(_, t)| t.direction.is_written())
    }

    /// The warps bound to `role`, if bound.
    pub fn role(&self, role: RoleKind) -> Option<&RoleIr> {
        self.roles.iter().find(|r| r.kind == role)
    }

    /// The region named `name` (expanded name, e.g. `W_0`).
    pub fn region_by_name(&self, name: &str) -> Option<Handle<RegionIr>> {
        self.regions
            .iter()
            .find(|(_, r)| r.name == name)
            .map(|(h, _)| h)
    }

    /// The region group named `name` (declared name, e.g. `W`).
    pub fn group_by_name(&self, name: &str) -> Option<&RegionGroup> {
        self.region_groups.iter().find(|g| g.name == name)
    }

    /// The tensor named `name`.
    pub fn tensor_by_name(&self, name: &str) -> Option<Handle<TensorIr>> {
        self.tensors
            .iter()
            .find(|(_, t)| t.name == name)
            .map(|(h, _)| h)
    }

    /// Sum of declared region sizes in bytes, exactly (see [`exact`]).
    pub fn region_bytes(&self) -> i128 {
        exact::sum(self.regions.values().map(|r| r.size))
    }
}
