//! Binding `route W by ids per slot | sum slots` (docs/language.md, "Routed experts"): the
//! shapes each mode needs, or `E0029` naming what differs. The linear engine then reads the
//! expert of each stage at run time (`lower::derive`, `Step::RouteRead`).

use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::*;

use super::{Epilogue, RouteMath};

fn error(span: crate::span::Span, what: String, help: String) -> Diagnostic {
    Diagnostic::error(codes::ROUTE, format!("this `route` cannot be lowered: {what}"))
        .primary(span, "here")
        .note("a routed pipeline reads each task's expert from the int32 `index` tensor after its dependency wait and loads that expert's weight rows by TMA (docs/language.md, \"Routed experts\")")
        .help(help)
}

/// A route of a tensor other than the pipeline's TMA weights `w`.
pub(super) fn not_the_weights(ir: &TaskIr, r: &RouteIr, w: TensorHandle) -> Diagnostic {
    error(
        r.span,
        format!(
            "`{}` is not the pipeline's TMA `weight` tensor `{}`",
            ir.tensors[r.weights].name, ir.tensors[w].name
        ),
        format!("route the weights: `route {} by …`", ir.tensors[w].name),
    )
}

/// The routing of a pipeline whose weights `w` (`[experts, N, K]`) and activations `a` are
/// bound, with `m_real` tokens, weight K `k`, tile K `bk`, `splits` and `epilogue`; `None` with
/// the diagnostics pushed where a shape or the epilogue does not fit the mode.
#[allow(clippy::too_many_arguments)]
pub(super) fn bind(
    ir: &TaskIr,
    r: &RouteIr,
    w: TensorHandle,
    a: TensorHandle,
    m_real: i64,
    k: i64,
    bk: i64,
    splits: i64,
    epilogue: Epilogue,
    sink: &mut Sink,
) -> Option<RouteMath> {
    let before = sink.error_count();
    if r.weights != w {
        sink.push(not_the_weights(ir, r, w));
        return None;
    }
    let wt = &ir.tensors[w];
    if wt.dims.len() != 3 {
        sink.push(error(
            wt.span,
            format!(
                "routed weights `{}` have {} dimensions, not 3 ([experts, N, K])",
                wt.name,
                wt.dims.len()
            ),
            format!(
                "declare `tensor {}: {}[experts, N, K] …`",
                wt.name, wt.dtype
            ),
        ));
        return None;
    }
    if wt.view.is_some() {
        sink.push(error(
            wt.span,
            format!("routed weights `{}` are a view: their tensor map spans the experts' rows back to back", wt.name),
            "declare the routed weights without `view(...)`".into(),
        ));
        return None;
    }
    // The loader's box row `expert * N + tile * 128` and the expert id are 32-bit (TMA's
    // coordinates are int32): `(experts + 1) * N` rows must fit, `experts` itself included (an
    // id past the experts becomes `experts`, whose rows lie past the map).
    let rows = wt.dims[0]
        .checked_add(1)
        .and_then(|e| e.checked_mul(wt.dims[1]));
    if rows.is_none_or(|x| x > i64::from(i32::MAX)) {
        sink.push(error(
            wt.span,
            format!(
                "{} experts of {} rows: the loader's 32-bit box row `expert * N + tile * 128` (TMA coordinates are int32) overflows past {} rows",
                wt.dims[0],
                wt.dims[1],
                i32::MAX
            ),
            "split the experts over tasks or ranks so that (experts + 1) x N stays below 2^31".into(),
        ));
        return None;
    }
    let it = &ir.tensors[r.ids];
    let slots = it.dims.get(1).copied().unwrap_or(0);
    if it.role() != Some(TensorRole::Index)
        || it.dtype != Dtype::I32
        || it.direction != Direction::In
        || it.dims.len() != 2
        || it.dims[0] != m_real
        || slots < 1
        || it.view.is_some()
    {
        let role = match it.role() {
            Some(TensorRole::ScaleOf(x)) => format!("scale of {}", ir.tensors[x].name),
            Some(x) => x.word().to_string(),
            None => "without a role".to_string(),
        };
        sink.push(error(
            it.span,
            format!(
                "the ids `{}` must be an int32 `index` input [m_real, slots] = [{m_real}, slots], not {}{:?} {role}",
                it.name, it.dtype, it.dims,
            ),
            format!("declare `tensor {}: i32[m_real, slots] in index` (slots: the router's top-k)", it.name),
        ));
        return None;
    }
    let epi_span = ir.epilogues.first().map_or(r.span, |e| e.2);
    if splits != 1
        || matches!(
            epilogue,
            Epilogue::SplitKF32 | Epilogue::SplitKBf16 | Epilogue::SplitKAtomic
        )
    {
        sink.push(error(
            epi_span,
            "split-K: a routed task's K loop covers its expert's whole K".into(),
            format!(
                "remove `{}`{}; routed tasks are already one per (token, slot) or per token",
                epilogue.as_str(),
                if splits != 1 { " and `splits`" } else { "" }
            ),
        ));
        return None;
    }
    let epi_ok = match r.mode {
        RouteMode::PerSlot => epilogue == Epilogue::StoreBf16,
        RouteMode::SumSlots => matches!(epilogue, Epilogue::StoreBf16 | Epilogue::ResidualAdd),
    };
    if !epi_ok {
        sink.push(error(
            epi_span,
            format!(
                "epilogue `{}` with `{}`: a routed task stores one token column",
                epilogue.as_str(),
                r.mode.as_str()
            ),
            match r.mode {
                RouteMode::PerSlot => "use `epilogue store bf16`".into(),
                RouteMode::SumSlots => {
                    "use `epilogue store bf16` or `epilogue residual add`".into()
                }
            },
        ));
    }
    // A run-time token count with a route is `valid::runtime_m`'s E0023 (checked before).
    let act_k = match r.mode {
        RouteMode::PerSlot => k,
        RouteMode::SumSlots => slots * k,
    };
    let at = &ir.tensors[a];
    if at.dims.get(1) != Some(&act_k) {
        sink.push(error(
            at.span,
            format!(
                "the activations `{}` have {} columns; `{}` needs {} ({})",
                at.name,
                at.dims.get(1).copied().unwrap_or(0),
                r.mode.as_str(),
                act_k,
                match r.mode {
                    RouteMode::PerSlot => "the weights' K".to_string(),
                    RouteMode::SumSlots => format!("one K block of {k} per slot, {slots} slots"),
                }
            ),
            match r.mode {
                RouteMode::PerSlot => format!("declare `{}` with K = {k} columns", at.name),
                RouteMode::SumSlots => format!(
                    "declare `tensor {}: …[m_real, {slots} * K]`: token t's slot s at columns s * K ..",
                    at.name
                ),
            },
        ));
    }
    (sink.error_count() == before).then(|| RouteMath {
        ids: r.ids,
        mode: r.mode,
        slots,
        experts: wt.dims[0],
        slot_k_iters: if bk > 0 { k / bk } else { 0 },
        act_k,
        span: r.span,
    })
}
