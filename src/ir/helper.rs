//! The `use` item: a helper (family E) whose `__device__` function a task's inline body calls
//! (docs/language.md, "Helpers"). Sema lowers the helper with the params the `use` line binds
//! and places its regions and named barriers in the using task (renamed `<helper>_<name>`, with
//! the `use` line's span), so the planner, the budget and the barrier registry see them.

use super::{BarrierIr, Handle, RegionIr, TaskIr};
use crate::span::Span;

/// One `use HELPER [from "FILE"] [(PARAM = VALUE, …)]` of a task.
#[derive(Clone, Debug)]
pub struct HelperUseIr {
    /// The helper's name: its task name and the name of the function the body calls.
    pub name: String,
    /// The whole `use` item.
    pub span: Span,
    /// The display path of the file declaring the helper (the using contract's own path when
    /// it is in the same file), for the `#line` of its code and the design document.
    pub path: String,
    /// The 1-based line of that file where the helper's inline body starts (its `#line`).
    pub body_line: usize,
    /// The text of that file: the spans of `helper` are offsets into it (the lines a helper's
    /// own diagnostic names when the using task reports it, E0026).
    pub text: std::sync::Arc<str>,
    /// The helper lowered with the params the `use` line binds (its regions, barriers,
    /// tensors, params and body as its own file declares them).
    pub helper: Box<TaskIr>,
    /// The helper's regions placed in the using task, in the helper's declaration order
    /// (ordinals after the task's own).
    pub regions: Vec<Handle<RegionIr>>,
    /// Index of each placed region group in the using task's `region_groups`.
    pub region_groups: Vec<usize>,
    /// The helper's named barriers placed in the using task, in declaration order.
    pub barriers: Vec<Handle<BarrierIr>>,
}

impl HelperUseIr {
    /// The name a helper's region or barrier `name` takes in the using task: `<helper>_<name>`.
    pub fn placed_name(helper: &str, name: &str) -> String {
        format!("{helper}_{name}")
    }
}

/// The parameters of helper `helper`'s function after its SMEM view, in declaration order: one
/// typed pointer per tensor, `T const *name` for `in`, `T *name` for `out` and `inout`
/// (docs/language.md, "Helpers").
pub fn helper_params(helper: &TaskIr) -> Vec<String> {
    helper
        .tensors
        .values()
        .map(|t| {
            let ty = t.dtype.cuda_type();
            match t.direction {
                super::Direction::In => format!("{ty} const *{}", t.name),
                _ => format!("{ty} *{}", t.name),
            }
        })
        .collect()
}
