//! Parse tree → AST for `tensor` declarations: the tensor, its role, and its `view(...)`,
//! `paged(...)` and `tma(...)` specifications (split from `build.rs`, one concern per module).

use super::ast::*;
use super::build::{build_expr, ident, span_of, Diags};
use super::parse::Rule;
use crate::diag::{codes, Diagnostic};
use crate::span::{Span, Spanned};
use pest::iterators::Pair;

pub(super) fn build_tensor<'a>(
    mut i: impl Iterator<Item = Pair<'a, Rule>>,
    span: Span,
    d: &mut Diags,
) -> Tensor {
    let name = ident(i.next().unwrap_or_else(|| unreachable!("tensor name")));
    let dtype = ident(i.next().unwrap_or_else(|| unreachable!("tensor dtype")));
    let mut dims = Vec::new();
    let mut direction = None;
    let mut role = None;
    let mut view = None;
    let mut paged = None;
    let mut tma = None;
    for c in i {
        match c.as_rule() {
            Rule::expr => dims.push(build_expr(c, d)),
            Rule::direction => {
                let dir = match c.as_str() {
                    "in" => Direction::In,
                    "out" => Direction::Out,
                    _ => Direction::InOut,
                };
                direction = Some(Spanned::new(dir, span_of(&c)));
            }
            Rule::tensor_role => role = Some(build_tensor_role(c)),
            Rule::view_spec => view = Some(build_view(c, d)),
            Rule::paged_spec => paged = Some(build_paged(c, d)),
            Rule::tma_spec => tma = Some(build_tma(c, d)),
            r => unreachable!("{r:?} in build_tensor"),
        }
    }
    let direction = direction.unwrap_or_else(|| unreachable!("tensor direction"));
    Tensor {
        name,
        dtype,
        dims,
        direction,
        role,
        view,
        paged,
        tma,
        span,
    }
}

/// `paged(page P, max_context C, requests R)`; a key given twice is `E0003` at its second place.
fn build_paged(p: Pair<'_, Rule>, d: &mut Diags) -> PagedSpec {
    let mut v = PagedSpec {
        span: span_of(&p),
        ..PagedSpec::default()
    };
    for opt in p.into_inner().filter(|c| c.as_rule() == Rule::paged_opt) {
        let o = opt
            .into_inner()
            .next()
            .unwrap_or_else(|| unreachable!("paged_opt child"));
        let key_span = span_of(&o);
        let (key, slot) = match o.as_rule() {
            Rule::paged_page => ("page", &mut v.page),
            Rule::paged_max_context => ("max_context", &mut v.max_context),
            Rule::paged_requests => ("requests", &mut v.requests),
            r => unreachable!("{r:?} in build_paged"),
        };
        let e = o
            .into_inner()
            .find(|c| c.as_rule() == Rule::expr)
            .unwrap_or_else(|| unreachable!("paged option value"));
        let e = build_expr(e, d);
        if slot.is_some() {
            d.push(
                Diagnostic::error(
                    codes::DUPLICATE,
                    format!("`{key}` is given twice in `paged(...)`"),
                )
                .primary(key_span, "second here")
                .help(format!("give `{key}` once")),
            );
        } else {
            *slot = Some(e);
        }
    }
    v
}

/// `view(stride S, offset O)`; a key given twice is `E0003` at its second place.
fn build_view(p: Pair<'_, Rule>, d: &mut Diags) -> ViewSpec {
    let mut v = ViewSpec {
        span: span_of(&p),
        ..ViewSpec::default()
    };
    for opt in p.into_inner().filter(|c| c.as_rule() == Rule::view_opt) {
        let o = opt
            .into_inner()
            .next()
            .unwrap_or_else(|| unreachable!("view_opt child"));
        let key_span = span_of(&o);
        let (key, slot) = match o.as_rule() {
            Rule::view_stride => ("stride", &mut v.stride),
            Rule::view_offset => ("offset", &mut v.offset),
            r => unreachable!("{r:?} in build_view"),
        };
        let e = o
            .into_inner()
            .find(|c| c.as_rule() == Rule::expr)
            .unwrap_or_else(|| unreachable!("view option value"));
        let e = build_expr(e, d);
        if slot.is_some() {
            d.push(
                Diagnostic::error(
                    codes::DUPLICATE,
                    format!("`{key}` is given twice in `view(...)`"),
                )
                .primary(key_span, "second here")
                .help(format!("give `{key}` once")),
            );
        } else {
            *slot = Some(e);
        }
    }
    v
}

fn build_tensor_role(p: Pair<'_, Rule>) -> Spanned<TensorRole> {
    let span = span_of(&p);
    let r = p
        .into_inner()
        .next()
        .unwrap_or_else(|| unreachable!("tensor_role child"));
    let role = match r.as_rule() {
        Rule::role_word => match r.as_str() {
            "weight" => TensorRole::Weight,
            "activation" => TensorRole::Activation,
            "residual" => TensorRole::Residual,
            "output" => TensorRole::Output,
            "index" => TensorRole::Index,
            "counters" => TensorRole::Counters,
            "grid_barrier" => TensorRole::GridBarrier,
            "scratch" => TensorRole::Scratch,
            _ => TensorRole::Partials,
        },
        Rule::role_scale => TensorRole::ScaleOf(ident(
            r.into_inner()
                .find(|c| c.as_rule() == Rule::ident)
                .unwrap_or_else(|| unreachable!("scale of ident")),
        )),
        x => unreachable!("{x:?} in build_tensor_role"),
    };
    Spanned::new(role, span)
}

fn build_tma(p: Pair<'_, Rule>, d: &mut Diags) -> TmaSpec {
    let mut spec = TmaSpec {
        span: span_of(&p),
        ..TmaSpec::default()
    };
    for opt in p.into_inner().filter(|c| c.as_rule() == Rule::tma_opt) {
        let o = opt
            .into_inner()
            .next()
            .unwrap_or_else(|| unreachable!("tma_opt child"));
        let ospan = span_of(&o);
        match o.as_rule() {
            Rule::tma_box => {
                let es = o
                    .into_inner()
                    .filter(|c| c.as_rule() == Rule::expr)
                    .map(|e| build_expr(e, d))
                    .collect();
                spec.boxes = Some(Spanned::new(es, ospan));
            }
            Rule::tma_swizzle => spec.swizzle = o.into_inner().next().map(ident),
            Rule::tma_l2 => spec.l2 = o.into_inner().next().map(ident),
            r => unreachable!("{r:?} in build_tma"),
        }
    }
    spec
}
