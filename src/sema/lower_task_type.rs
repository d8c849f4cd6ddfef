//! The task's TaskTypes (`task_id`, and a split-K pipeline's `reduce_task_id`): constant over
//! the instances (E0605) and within MPK's 32-bit `TaskType` (E0006).

use super::collect::Collected;
use super::lower::Cx;
use crate::diag::{codes, Diagnostic};
use crate::front::ast;

/// Lowers `task_id` and `reduce_task_id` into the task's IR.
pub(super) fn task_types(cx: &mut Cx<'_>, c: &Collected<'_>) {
    task_type_constant(cx, c);
    if let Some((e, s)) = c.task_id {
        cx.ir.task_id_span = s;
        cx.ir.task_id = fitting(cx, e, "task_id", 326);
    }
    if let Some((e, s)) = c.reduce_task_id {
        cx.ir.reduce_task_id = fitting(cx, e, "reduce_task_id", 355).map(|v| (v, s));
    }
}

/// The value of `what`'s expression `e`, non-negative and within MPK's 32-bit TaskType (E0006
/// past it; `example` is the help's value).
fn fitting(cx: &mut Cx<'_>, e: &ast::Expr, what: &str, example: i64) -> Option<i64> {
    let v = cx.non_negative(e, &what.replace('_', " "))?;
    if v > i64::from(i32::MAX) {
        cx.report(
            Diagnostic::error(
                codes::OUT_OF_RANGE,
                format!("`{what}` does not fit MPK's 32-bit TaskType"),
            )
            .primary(e.span, "too large")
            .help(format!("MPK task types are small integers, e.g. {example}")),
        );
        return None;
    }
    Some(v)
}

/// E0605: `task_id` and `reduce_task_id` name no param. A task's instances are variants of one
/// TaskType (contract doc §6.1 step 1: one `enum TaskType` entry, `TASK_<NAME>`): a TaskType
/// that an instance's values change would give one task several entries, which MPK cannot
/// register (`mpkc wire` would find the second taken, E0801).
fn task_type_constant(cx: &mut Cx<'_>, c: &Collected<'_>) {
    let items = [("task_id", c.task_id), ("reduce_task_id", c.reduce_task_id)];
    for (what, item) in items {
        let Some((e, s)) = item else { continue };
        let Some((p, at)) = c
            .params
            .iter()
            .find_map(|p| super::param_runtime::first_use(e, &p.name.node).map(|at| (p, at)))
        else {
            continue;
        };
        cx.report(
            Diagnostic::error(
                codes::TASK_TYPE_CLASH,
                format!("`{what}` reads the param `{}`: the task's instances would register different TaskTypes", p.name.node),
            )
            .primary(at, "a param")
            .secondary(s, "one TaskType for every instance of the task")
            .help(format!(
                "write `{what}` as a number: the instances of a task are variants of its one TaskType; an op that needs a TaskType of its own is a task of its own"
            )),
        );
    }
}
