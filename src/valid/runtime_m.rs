//! E0023: a task whose token count is decided at run time (`param m: int in 1..=MAX = runtime`,
//! docs/runtime-m.md) lowers only where the generated code reads that count and guards the rows
//! at or past it. That is:
//!
//! - a pipeline (the house linear on both targets) whose activation rows are the count, whose
//!   other token tensors (output, residual, activation and output scales) have it as rows too, and
//!   whose epilogue is not `split_k f32` (its partials `[splits, m, N]` stride by the row count,
//!   and the derived reduce task sums whole slices) and whose activations are bf16 (the fp8
//!   loader stages per-token scales into arrays sized at compile time);
//! - a consumer body template that lists its token-row formals ([`Signature::token_rows`]), each
//!   bound to a tensor whose rows are the count, and no other formal bound to such a tensor.
//!
//! Inline CUDA bodies, monolithic bodies without a template and helpers have no place to read the
//! count from: E0023 too. What check accepts here is what build generates (`back::epilogue`,
//! `back::consumer`).
//!
//! [`Signature::token_rows`]: crate::templates::Signature::token_rows

use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::{BodyIr, Dtype, Family, TaskIr, TensorRole};
use crate::span::Span;
use crate::templates::Binding;

/// The declaration of `ir`'s body, else its family item.
fn body_span(ir: &TaskIr) -> Span {
    ir.body.as_ref().map_or(ir.family_span, BodyIr::span)
}

fn error(ir: &TaskIr, at: Span, message: String, help: &str) -> Diagnostic {
    let mut d = Diagnostic::error(codes::RUNTIME_LOWERING, message).primary(at, "here");
    if let Some(p) = ir.runtime_tokens() {
        if let Some(rt) = p.runtime {
            d = d.secondary(rt.span, format!("`{}` is decided at run time", p.name));
        }
    }
    d.help(help.to_string())
}

/// Reports E0023 where `ir` has a run-time token count its lowering cannot read.
pub(super) fn check(ir: &TaskIr, binding: Option<&Binding>, sink: &mut Sink) {
    let Some(p) = ir.runtime_tokens() else { return };
    let name = p.name.clone();
    match ir.family {
        Family::Pipeline => pipeline(ir, &name, sink),
        Family::Helper => sink.push(error(
            ir,
            ir.family_span,
            format!("a helper cannot take the run-time token count `{name}`"),
            "a helper is called inside another task's body, which passes its sizes: give the param a value",
        )),
        _ => consumer(ir, &name, binding, sink),
    }
}

fn pipeline(ir: &TaskIr, name: &str, sink: &mut Sink) {
    // A routed pipeline's task count is tokens x slots x tiles: fixed when MPK builds the graph.
    if let Some(r) = &ir.route {
        sink.push(error(
            ir,
            r.span,
            format!("a routed pipeline cannot take the run-time token count `{name}`"),
            "its tasks are one per (token, slot, tile) or per (token, tile), a count MPK's task graph fixes when it is built: give the param a compile-time value",
        ));
        return;
    }
    if let Some((_, ty, at)) = ir.epilogues.iter().find(|(e, _, _)| e == "split_k") {
        let ty = ty.as_deref().unwrap_or("f32");
        let why = if ty == "bf16" {
            "its f32 partials [splits, m, N] stride by the row count, which the last split's sum walks whole"
        } else {
            "its f32 partials [splits, m, N] stride by the row count and the derived reduce sums whole slices"
        };
        sink.push(error(
            ir,
            *at,
            format!("`split_k {ty}` cannot take the run-time token count `{name}`"),
            &format!("{why}: fix the count (`= 16`), or use `store bf16` / `residual add`"),
        ));
    }
    let fp8 = ir.tensors.iter().find(|(_, t)| {
        matches!(t.role, Some((TensorRole::Activation, _))) && t.dtype != Dtype::Bf16
    });
    if let Some((_, t)) = fp8 {
        sink.push(error(
            ir,
            t.span,
            format!("block-scaled `{}` activations cannot take the run-time token count `{name}`", t.dtype),
            "the loader stages one UE8M0 scale per token into arrays sized at compile time (and traps on a scale that is not a power of two, which rows past the count may hold): fix the count (`= 16`), or use bf16 activations",
        ));
    }
    let token_role = |r: TensorRole| {
        matches!(
            r,
            TensorRole::Activation
                | TensorRole::Output
                | TensorRole::Residual
                | TensorRole::ScaleOf(_)
        )
    };
    for (_, t) in ir.tensors.iter() {
        let role = t.role.map(|(r, _)| r);
        if t.runtime_rows && !role.is_some_and(token_role) {
            sink.push(error(
                ir,
                t.span,
                format!("tensor `{}` has `{name}` rows, but its role is not a per-token one", t.name),
                "only the activation, the output, the residual and their scales have one row per token; give this tensor compile-time rows",
            ));
        }
        let per_token = matches!(
            role,
            Some(TensorRole::Activation | TensorRole::Output | TensorRole::Residual)
        );
        if per_token && !t.runtime_rows {
            sink.push(error(
                ir,
                t.span,
                format!(
                    "tensor `{}` is per token, but its rows are not the run-time count `{name}`",
                    t.name
                ),
                "declare its first extent as the run-time param (`[m_real, K]`), so every token tensor has the count's rows",
            ));
        }
    }
}

fn consumer(ir: &TaskIr, name: &str, binding: Option<&Binding>, sink: &mut Sink) {
    let Some(b) = binding else {
        sink.push(error(
            ir,
            body_span(ir),
            format!("this body cannot take the run-time token count `{name}`"),
            "only the body templates read the count from the runtime (as `kRows`); an inline body sees compile-time sizes: give the param a value",
        ));
        return;
    };
    if b.sig.token_rows.is_empty() {
        sink.push(error(
            ir,
            body_span(ir),
            format!(
                "body `{}` cannot take the run-time token count `{name}`",
                b.sig.name
            ),
            "its layout strides by the row count: give the param a value",
        ));
        return;
    }
    for (formal, h) in &b.tensors {
        let t = &ir.tensors[*h];
        let listed = b.sig.token_rows.contains(formal);
        if listed != t.runtime_rows {
            let msg = if listed {
                format!("`{}` (`{formal}` of `{}`) has one row per token, but its rows are not the run-time count `{name}`", t.name, b.sig.name)
            } else {
                format!("`{}` (`{formal}` of `{}`) does not have one row per token, but its rows are the run-time count `{name}`", t.name, b.sig.name)
            };
            sink.push(error(
                ir,
                t.span,
                msg,
                "the token tensors of the body take the run-time param as their first extent, the others compile-time extents",
            ));
        }
    }
}
