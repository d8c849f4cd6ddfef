//! `param NAME: int in LO..=MAX = runtime`: the token count MPK's runtime decides per step
//! (`runtime_config.qo_indptr_buffer[MPK_MAX_NUM_BATCHED_REQUESTS]`, docs/runtime-m.md). Its
//! compile-time value is the range's upper end, the maximum every extent, plan and budget takes;
//! the generated code reads the count at run time and clamps it to that maximum.
//!
//! Misuse is E0022: a type other than an integer, no range (no maximum), a range from below 1 or
//! with a `step` (the runtime decides any count up to the maximum), a value set by an
//! instance or `--param` (one build serves every count), a second run-time param in a task, and
//! (checked where tensors lower, [`leading_only`]) a use in an extent other than a tensor's whole
//! leading dimension.

use super::param_range::Range;
use crate::diag::{codes, Diagnostic, Sink};
use crate::front::ast::{self, Expr, ExprKind};
use crate::ir::{ParamIr, ParamType, ParamValue, RuntimeTokens};
use crate::span::Span;

/// What may have set a param besides its declaration.
pub(super) struct Setters<'a> {
    /// `--param NAME=VALUE`, its text.
    pub cli: Option<&'a str>,
    /// The instance setting's value span.
    pub instance: Option<Span>,
}

/// The value of a run-time param `p` (keyword at `kw`): its range's upper end, or `None` after
/// reporting E0022.
pub(super) fn value(
    p: &ast::Param,
    kw: Span,
    ty: ParamType,
    range: Option<&Range>,
    set: Setters<'_>,
    sink: &mut Sink,
) -> Option<ParamIr> {
    let name = &p.name.node;
    let err = |msg: String| Diagnostic::error(codes::RUNTIME_PARAM, msg);
    if !matches!(ty, ParamType::I32 | ParamType::I64) {
        sink.push(
            err(format!("run-time param `{name}` is not an integer"))
                .primary(p.ty.span, "declared type")
                .secondary(kw, "decided at run time")
                .help(format!(
                    "declare the token count as `param {name}: int in 1..=64 = runtime`"
                )),
        );
        return None;
    }
    let Some((min, max)) = range.and_then(Range::int_ends) else {
        sink.push(
            err(format!("run-time param `{name}` has no maximum"))
                .primary(kw, "decided at run time, up to what?")
                .help(format!(
                    "give the compile-time maximum as the range's upper end: `param {name}: int in 1..=64 = runtime`"
                )),
        );
        return None;
    };
    if min < 1 {
        // The lower end is the fewest tokens a step runs, which `mpkc verify` runs first
        // (docs/runtime-m.md): a step of no tokens runs no task.
        let lo = p.range.as_ref().map_or(kw, |r| r.lo.span);
        sink.push(
            err(format!(
                "run-time param `{name}` may be {min} tokens: a step runs at least one"
            ))
            .primary(lo, format!("the fewest tokens a step runs: {min}"))
            .secondary(kw, "decided at run time")
            .help(format!(
                "start the range at 1: `param {name}: int in 1..={max} = runtime`"
            )),
        );
        return None;
    }
    if let Some(r) = range.filter(|r| r.step() > 1) {
        // The runtime decides each step's count (`qo_indptr_buffer`); nothing keeps it to a
        // step, and the generated code takes any count up to the maximum.
        let at = p
            .range
            .as_ref()
            .and_then(|r| r.step.as_ref())
            .map_or(kw, |e| e.span);
        sink.push(
            err(format!(
                "run-time param `{name}` has `step {}`, but MPK's runtime decides each step's count",
                r.step()
            ))
            .primary(at, "a promise the runtime does not keep")
            .secondary(kw, "decided at run time")
            .note("the generated code reads the count per step and takes any value from 1 to the maximum; a step would claim counts it never sees")
            .help(format!("drop the `step`: `param {name}: int in {min}..={max} = runtime`")),
        );
        return None;
    }
    if let Some(text) = set.cli {
        sink.push(
            err(format!("`--param {name}={text}`: param `{name}` is decided at run time"))
                .primary(p.name.span, format!("set by `--param {name}={text}`"))
                .secondary(kw, "decided at run time")
                .help("one build serves every token count up to the maximum: drop the `--param`; `mpkc verify --m N` runs the build at N tokens"),
        );
        return None;
    }
    if let Some(at) = set.instance {
        sink.push(
            err(format!("an instance sets param `{name}`, which is decided at run time"))
                .primary(at, "set here")
                .secondary(kw, "decided at run time")
                .help(format!("drop the setting, or declare `{name}` with a value (`= 16`) to fix it at compile time")),
        );
        return None;
    }
    Some(ParamIr {
        name: name.clone(),
        ty,
        value: ParamValue::Int(max),
        span: p.span,
        value_span: kw,
        runtime: Some(RuntimeTokens { span: kw, min }),
        int_range: Some((min, max)),
        range_text: range.map(Range::text),
    })
}

/// Reports E0022 for every run-time param of `params` after the first.
pub(super) fn only_one(params: &[&ast::Param], sink: &mut Sink) {
    let mut rt = params.iter().filter_map(|p| p.runtime.map(|kw| (p, kw)));
    let Some((first, first_kw)) = rt.next() else {
        return;
    };
    for (p, kw) in rt {
        sink.push(
            Diagnostic::error(
                codes::RUNTIME_PARAM,
                format!(
                    "params `{}` and `{}` are both decided at run time",
                    first.name.node, p.name.node
                ),
            )
            .primary(kw, "a second run-time param")
            .secondary(first_kw, "the token count")
            .help("MPK's runtime provides one count per step, the tokens: keep one `= runtime` param and give the other a value"),
        );
    }
}

/// Whether `e` names `param` anywhere.
pub(super) fn mentions(e: &Expr, param: &str) -> bool {
    first_use(e, param).is_some()
}

/// The span of the first use of the bare name `name` in `e`, left to right.
pub(super) fn first_use(e: &Expr, name: &str) -> Option<Span> {
    match &e.kind {
        ExprKind::Path(p) if p.len() == 1 && p[0].node == name => Some(e.span),
        ExprKind::Path(_) | ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::BadLit(_) => None,
        ExprKind::Neg(x) => first_use(x, name),
        ExprKind::Binary(_, a, b) => first_use(a, name).or_else(|| first_use(b, name)),
        ExprKind::Call(_, args) => args.iter().find_map(|a| first_use(a, name)),
    }
}

/// Whether `e` is the name `param` alone.
fn is_exactly(e: &Expr, param: &str) -> bool {
    matches!(&e.kind, ExprKind::Path(p) if p.len() == 1 && p[0].node == param)
}

/// Checks the extents of tensor `t` against the run-time param `param`: `Ok(true)` when its
/// leading extent is that param alone (its rows are the tokens), `Ok(false)` when no extent names
/// it, and `Err` (E0022) when an extent names it otherwise (`2 * m`, a column count): such an
/// extent would be the maximum at run time too, which the generated code cannot honour.
/// `sizes_fixed`: the task's body cannot take a run-time count at all (an inline consumer body or
/// a helper, E0023), so the help says to give the param a value rather than to reshape.
pub(super) fn leading_only(
    t: &ast::Tensor,
    param: &str,
    sizes_fixed: bool,
) -> Result<bool, Diagnostic> {
    for (i, e) in t.dims.iter().enumerate() {
        if !mentions(e, param) || (i == 0 && is_exactly(e, param)) {
            continue;
        }
        return Err(Diagnostic::error(
            codes::RUNTIME_PARAM,
            format!(
                "tensor `{}` uses the run-time param `{param}` in its dimension {}",
                t.name.node,
                i + 1
            ),
        )
        .primary(e.span, "not the leading extent alone")
        .help(if sizes_fixed {
            format!(
                "this task's body sees compile-time sizes only (an inline body or a helper cannot read the run-time count either, E0023): give `{param}` a compile-time value (`= N`, or one per instance)"
            )
        } else {
            format!(
                "a run-time token count is a tensor's row count: write it as the whole first extent (`[{param}, K]`), or use a compile-time param here"
            )
        }));
    }
    Ok(t.dims.first().is_some_and(|e| is_exactly(e, param)))
}
