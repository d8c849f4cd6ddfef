//! Grid-wide tasks (contract doc §5, I-H4): the exception to per-tile tasks, one task per worker
//! synchronised by in-op grid barriers. Each barrier site is a monotonic i64 counter in a
//! `grid_barrier` tensor; the generated `grid_sync(site)` (`back/consumer.rs`) fences the
//! warpgroup's writes, gathers it on the granularity's named `barrier`, has thread 0 add one
//! and wait for `num_workers * (iter_num + 1)`, and gathers it again. What that lowering needs
//! is checked here (E0602): the counters seeded once (`skip_after_step0`), a written
//! justification, the barrier (a consumer one of 128 threads), exactly one `grid_barrier`
//! tensor `i64[sites] inout`, an inline body (a template divides the op by a compile-time task
//! count) that calls `grid_sync` (its calls: `valid::grid_sync`); and no `grid_barrier` tensor on
//! a per-tile task, whose tasks are not all resident at once.

use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::{BodyIr, Direction, GranularityIr, TaskIr, TensorRole};
use crate::span::Span;

/// E0602: the grid-wide rules above.
pub(super) fn grid_wide(ir: &TaskIr, sink: &mut Sink) {
    let counters: Vec<_> = ir
        .tensors
        .iter()
        .filter(|(_, t)| t.role() == Some(TensorRole::GridBarrier))
        .collect();
    let GranularityIr::GridWide {
        skip_after_step0,
        barrier,
        justification,
        span,
    } = &ir.granularity
    else {
        for (_, t) in &counters {
            sink.push(
                Diagnostic::error(codes::GRID_WIDE, format!("tensor `{}` holds grid barrier counters, but the task is per-tile", t.name))
                    .primary(role_span(t), "a grid barrier waits for every task of the op")
                    .note("per-tile tasks are dealt to the workers' queues with other ops' tasks between them: the tasks a grid barrier waits for may sit behind the waiting one on its own worker, a deadlock (contract doc §5)")
                    .help("write `granularity grid_wide(barrier NAME, skip_after_step0, justification \"…\")`, or order the tasks through the runtime's events instead"),
            );
        }
        return;
    };
    seeding(*skip_after_step0, justification.as_deref(), *span, sink);
    if ir.family == crate::ir::Family::Pipeline || !ir.family.is_consumer_only() {
        return; // a grid-wide pipeline is E0201 (`wiring::tiles_per_task`)
    }
    // A template's own checks and this file's ask nothing more of a body that cannot be grid-wide.
    if let Some(b @ BodyIr::Template { .. }) = &ir.body {
        sink.push(
            Diagnostic::error(codes::GRID_WIDE, "a grid-wide task's body is a template, which divides the op by a compile-time task count")
                .primary(b.span(), "a body template")
                .note("a grid-wide task's count is the runtime's worker count (`kNumTasks` is read from `runtime_config.num_workers`), and a template has no grid barrier to call")
                .help("write the body as `body cuda { … }` calling `grid_sync(site)`, or make the task per-tile"),
        );
        return;
    }
    named_barrier(ir, barrier.as_ref(), *span, sink);
    let sites = match &counters[..] {
        [] => {
            sink.push(
                Diagnostic::error(codes::GRID_WIDE, "a grid-wide task declares no tensor for its grid barrier counters")
                    .primary(*span, "grid-wide: synchronised by in-op grid barriers")
                    .note("each barrier site is a monotonic i64 counter in global memory, seeded zero at step 0 and never reset (I-H4)")
                    .help("declare `tensor bar: i64[SITES] inout grid_barrier`, one counter per `grid_sync(site)` of the body"),
            );
            None
        }
        [(_, t)] => {
            let mut ok = true;
            if t.dims.len() != 1 {
                ok = false;
                sink.push(
                    Diagnostic::error(codes::GRID_WIDE, format!("grid barrier counters `{}` have {} dimensions; they are one i64 per site", t.name, t.dims.len()))
                        .primary(t.span, "one dimension: the sites")
                        .help(format!("declare `tensor {}: i64[SITES] inout grid_barrier`", t.name)),
                );
            }
            if t.direction != Direction::InOut {
                ok = false;
                sink.push(
                    Diagnostic::error(codes::GRID_WIDE, format!("grid barrier counters `{}` are declared `{}`; they are `inout`", t.name, t.direction.as_str()))
                        .primary(t.span, "the counters carry over from step to step")
                        .note("the counters are seeded once (`tensor_init` with skip_after_step0) and each step's tasks add to them: they are read and written in place, an input slot (I-H4)")
                        .help("declare the tensor `inout`"),
                );
            }
            ok.then(|| t.dims.first().copied().unwrap_or(1))
        }
        [(_, a), (_, b), ..] => {
            sink.push(
                Diagnostic::error(codes::GRID_WIDE, format!("tensors `{}` and `{}` both hold grid barrier counters", a.name, b.name))
                    .primary(b.span, "a second `grid_barrier` tensor")
                    .secondary(a.span, "the first")
                    .note("`grid_sync(site)` indexes one tensor of counters by site")
                    .help(format!("declare one tensor with a counter per site: `tensor {}: i64[SITES] inout grid_barrier`", a.name)),
            );
            None
        }
    };
    if let Some(BodyIr::Cuda {
        code, code_span, ..
    }) = &ir.body
    {
        let counters = counters.first().map(|(_, t)| (t.name.as_str(), t.span));
        super::grid_sync::sync_calls(ir, code, *code_span, (sites, counters), *span, sink);
    }
}

/// `skip_after_step0` and the justification (I-H4).
fn seeding(skip_after_step0: bool, justification: Option<&str>, span: Span, sink: &mut Sink) {
    if !skip_after_step0 {
        sink.push(
            Diagnostic::error(codes::GRID_WIDE, "a grid-wide task needs `skip_after_step0` for its monotonic barrier scratch")
                .primary(span, "no skip_after_step0")
                .note("the barrier counters are monotonic (need = num_tasks x (iter + 1)); re-zeroing them every step hangs step 1")
                .help("add `skip_after_step0` to `grid_wide(...)`"),
        );
    }
    if justification.is_none_or(|j| j.trim().chars().count() < 20) {
        let (message, label) = match justification.map(str::trim) {
            Some(j) => (
                format!("a grid-wide task needs a written justification of a sentence, but this one is {} characters", j.chars().count()),
                format!("justification of {} characters", j.chars().count()),
            ),
            None => (
                "a grid-wide task needs a written justification".to_string(),
                "no justification".to_string(),
            ),
        };
        sink.push(
            Diagnostic::error(codes::GRID_WIDE, message)
                .primary(span, label)
                .note("per-tile tasks are the default; grid-wide ops pin one task per worker and an in-op grid barrier (contract doc §5)")
                .help("add `justification \"why per-tile tasks cannot do this\"` (a sentence, at least 20 characters)"),
        );
    }
}

/// The granularity's `barrier NAME`: declared (its warps and count are E0402's, I-R2).
fn named_barrier(ir: &TaskIr, barrier: Option<&(String, Span)>, span: Span, sink: &mut Sink) {
    let Some((name, at)) = barrier else {
        sink.push(
            Diagnostic::error(codes::GRID_WIDE, "a grid-wide task names no barrier for its `grid_sync`")
                .primary(span, "no `barrier NAME`")
                .note("`grid_sync(site)` gathers the 128 consumer threads on a named barrier before thread 0 adds to the counter (their writes fenced first) and after it saw every task's arrival")
                .help("declare `barrier grid = named(ID, threads 128)` and write `grid_wide(barrier grid, …)`"),
        );
        return;
    };
    if !ir.barriers.values().any(|b| &b.name == name) {
        sink.push(
            Diagnostic::error(
                codes::UNKNOWN_NAME,
                format!("`grid_wide` names barrier `{name}`, which the contract does not declare"),
            )
            .primary(*at, "no such barrier")
            .help(format!("declare `barrier {name} = named(ID, threads 128)`")),
        );
    }
    // A barrier of other warps or of another count is E0402's: named barriers are the 128
    // consumer threads'.
}

/// The span of `t`'s role word, or of its declaration.
fn role_span(t: &crate::ir::TensorIr) -> Span {
    t.role.map_or(t.span, |(_, s)| s)
}
