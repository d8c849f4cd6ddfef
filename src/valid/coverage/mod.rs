//! Coverage (issue 11 Deliver 3, E0014): every item a contract declares is consumed by the
//! lowering of some declared target, or rejected here. What `check` accepts is what `build`
//! generates, so an item no generated file reads is an error at its span, never dropped.
//!
//! [`declarations`] enumerates the items of a [`TaskIr`] by destructuring every IR struct without
//! `..`: a field added to the IR is a compile error here until it is enumerated (as an [`Item`]) or
//! stated to be part of another item. [`consumers`] walks each target's [`RoleProgram`] and names
//! what reads each item; an item is covered when ANY declared target consumes it (sm_90a keeps the
//! accumulator in registers: a TMEM channel is covered by sm_100a's program). Items consumed
//! outside the role program say where ([`Consumer::Elsewhere`], each rule at its match arm).
//!
//! Slots: a barrier family of `slots` slots whose operations reach only some of them leaves the
//! rest initialised and never waited or arrived. `Index::Fixed(i)` reaches slot `i % slots`,
//! `Index::Iter(Tiles)` the first `min(tiles, slots)`, `Index::Iter(KIters)` the first
//! `min(k_iters, slots)` where the engine's K trip count is known, else all; a drain waits all.
//! Unreached slots of a TMEM slot channel or a fixed index are E0014; ring stages beyond the K
//! iterations are W0015, a warning: K and the split count are params, and the stage count is a
//! latency choice another instance of the same contract (or `--param K=…`) may fill.

mod consumers;
mod decls;
mod slots;

pub use consumers::{consumers, Consumer};
pub use decls::{declarations, Decl, Item};

use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::TaskIr;
use crate::lower::RoleProgram;
use crate::templates::Binding;

/// E0014 (and W0015) for `ir`: every declaration no program consumes, and every barrier slot no
/// operation reaches.
pub(super) fn check(
    ir: &TaskIr,
    binding: Option<&Binding>,
    programs: &[RoleProgram],
    sink: &mut Sink,
) {
    let found = consumers(ir, binding, programs);
    for d in declarations(ir) {
        if !found.contains_key(&d.item) {
            sink.push(unconsumed(ir, &d, programs));
        }
    }
    slots::slots(ir, programs, sink);
}

/// `(what a body writes, the constant)` where an inline body (or a consumer ring's loader body)
/// names barrier `i`'s constant `BAR_<NAME>` in another case, e.g. `BAR_b1` for `BAR_B1`.
fn barrier_case_slip(ir: &TaskIr, i: usize) -> Option<(String, String)> {
    let (_, b) = ir.barriers.iter().find(|(h, _)| h.index() == i)?;
    let constant = format!("BAR_{}", crate::back::names::upper(&b.name));
    let bodies = [&ir.body, &ir.loader_body];
    bodies.into_iter().flatten().find_map(|body| match body {
        crate::ir::BodyIr::Cuda { code, .. } => crate::front::cuda::identifiers(code)
            .into_iter()
            .map(|(_, w)| w)
            .find(|w| *w != constant && w.eq_ignore_ascii_case(&constant))
            .map(|w| (w.to_string(), constant.clone())),
        crate::ir::BodyIr::Template { .. } => None,
    })
}

/// The name of a lever declared before lever `i` that changes the L2 policy of the same tensor.
fn earlier_lever_on_same_tensor(ir: &TaskIr, i: usize) -> Option<String> {
    let tensor_of = |l: &crate::ir::LeverIr| match &l.effect {
        Some(crate::ir::LeverEffect::L2 { tensor, .. }) => Some(*tensor),
        _ => None,
    };
    let t = tensor_of(ir.levers.get(i)?)?;
    ir.levers[..i]
        .iter()
        .find(|l| tensor_of(l) == Some(t))
        .map(|l| l.name.clone())
}

fn unconsumed(ir: &TaskIr, d: &Decl, programs: &[RoleProgram]) -> Diagnostic {
    let targets: Vec<&str> = programs.iter().map(|p| p.target.as_str()).collect();
    let on = targets.join(", ");
    // Item-specific findings, each computed once.
    let lever_twin = match d.item {
        Item::Lever(i) => earlier_lever_on_same_tensor(ir, i),
        _ => None,
    };
    let case_slip = match d.item {
        Item::NamedBarrier(i) => barrier_case_slip(ir, i),
        _ => None,
    };
    let (label, help): (&str, String) = match d.item {
        Item::Tensor(_) => (
            "no load, step or body reads or writes it",
            "remove the tensor, or give it the role the lowering reads (`weight`, `activation`, `scale of …`, `residual`, `output`, `partials`, `counters`)".into(),
        ),
        Item::Tma(_) => (
            "no TMA load reads it",
            "remove `tma(...)`, or load the tensor through a channel (`channel …: R, loader -> launcher (tma T)`)".into(),
        ),
        Item::Group(_) => (
            "no ring, step or body addresses it",
            "remove the region, or use it as a channel's stages (`channel …: NAME, …`) or the scratch that `holds tmem_addr`".into(),
        ),
        Item::Held { .. } => (
            "no step reads this member",
            "remove the member, or hold what a step reads (`tmem_addr`, the quant epilogue's `amax`)".into(),
        ),
        Item::Full(_) | Item::Empty(_) => (
            "its barriers are initialised and never waited or arrived",
            format!("remove the channel (or the edge); on {on} nothing waits on it"),
        ),
        Item::Sem(_) => (
            "initialised and never waited or arrived",
            "remove the sem, or give it a producer and a consumer role the lowering runs".into(),
        ),
        // The body names the barrier's constant in another case (`BAR_b1` for `BAR_B1`).
        Item::NamedBarrier(_) if case_slip.is_some() => {
            let (written, constant) = case_slip.unwrap_or_default();
            (
                "the body names it in another case",
                format!("write `{constant}`: the body's `{written}` is not the barrier's constant (the generated names are upper case)"),
            )
        }
        // A helper's barrier id is reserved in every caller's kernel for its body's `bar.sync`.
        Item::NamedBarrier(_) if ir.family == crate::ir::Family::Helper => (
            "the helper's body never synchronises on it",
            "remove the barrier, or synchronise on it in the body: `mpkc::named_barrier_sync(BAR_NAME, kConsumerThreads)` (its id stays reserved in every caller's kernel)".into(),
        ),
        Item::NamedBarrier(_) => (
            "no `bar.sync` of the lowering or the body uses it",
            "remove the barrier, or use it: `threads N after NAME` on an arrival, `epilogue quant e4m3 with NAME`, `epilogue split_k bf16 with NAME`, or `mpkc::named_barrier_sync(BAR_NAME, …)` in the body".into(),
        ),
        Item::TmemCols => (
            "no target allocates TMEM",
            format!("remove `tmem cols` (on {on} the accumulator is in registers), or declare `targets sm_100a`"),
        ),
        Item::Body => (
            "the kernels are generated from the channels; the body is not",
            "remove the body: a pipeline's work is its channels, MMA and epilogue (an inline `body cuda { … }` there is the epilogue's map)".into(),
        ),
        Item::ReduceTaskId => (
            "no reduce task is derived: the epilogue is not `split_k f32`",
            "remove `reduce_task_id`, or split K (`epilogue split_k f32`), whose derived reduce task takes this TaskType".into(),
        ),
        // Another lever on the same tensor: the loads take that one's define (one policy per load).
        Item::Lever(_) if lever_twin.is_some() => (
            "another lever already switches this tensor's L2 policy",
            format!(
                "keep one lever per tensor: `{}` already switches its loads' policy (a load has one)",
                lever_twin.unwrap_or_default()
            ),
        ),
        Item::Lever(_) => (
            "no TMA load reads its policy",
            "point the lever at a tensor a pipeline loads by TMA".into(),
        ),
        Item::TaskId | Item::Granularity | Item::Role(_) | Item::SetMaxNReg
            if ir.family == crate::ir::Family::Helper =>
        {
            (
                "a helper has no registration, task count, warps or worker prologue of its own",
                "remove it: the helper's function runs in its callers' consumer bodies, under their `task_id`, `granularity`, `roles` and `setmaxnreg`".into(),
            )
        }
        _ => (
            "nothing in the generated files reads it",
            "remove it, or add the construct that uses it".into(),
        ),
    };
    Diagnostic::error(
        codes::NOT_LOWERED,
        format!("{} is declared but not lowered on any target", d.label),
    )
    .primary(d.span, label)
    // No unit name in the text: the same item of every instance merges into one diagnostic
    // ("in instances …").
    .note(format!(
        "what `check` accepts is what `build` generates: an item no generated file reads (targets {on}) would be dropped without a word"
    ))
    .help(help)
}
