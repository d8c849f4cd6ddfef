//! `require A OP B [, "message"]` (docs/language.md, "Requirements"): a relation between the
//! params (and `tile.M/N/K`, `stages`) that every lowering of the task must keep. At an
//! instance, its defaults or a `--param` value that breaks one it is E0032; at a point of a
//! declared range that breaks one, the range promises nothing (`sema::range_ends` skips the
//! point), so a relation such as `require hidden % cols == 0` narrows what `cols in 1..=64`
//! promises to the divisors it keeps.

use super::collect::Collected;
use super::lower::Cx;
use crate::diag::{codes, Diagnostic};
use crate::front::ast::{Expr, ExprKind, Require};

/// Checks every `require` of `c` at the values `cx` lowers with (after the tile and `stages`,
/// which a requirement may name). A side that does not evaluate reports why (E0002, E0004, …)
/// and the requirement is not judged.
/// `overridden`: the params a `--param` sets (named so in the message).
pub(super) fn requirements(cx: &mut Cx<'_>, c: &Collected<'_>, overridden: &[(String, String)]) {
    for r in &c.requires {
        let (Some(a), Some(b)) = (cx.int(&r.lhs), cx.int(&r.rhs)) else {
            continue;
        };
        if !r.op.holds(a, b) {
            let d = unmet(cx, r, a, b, overridden);
            cx.sink.push(d);
        }
    }
}

/// The E0032 of `r`, whose sides are `a` and `b` at the values being lowered.
fn unmet(cx: &Cx<'_>, r: &Require, a: i64, b: i64, overridden: &[(String, String)]) -> Diagnostic {
    let mut names = Vec::new();
    paths(&r.lhs, &mut names);
    paths(&r.rhs, &mut names);
    let mut at: Vec<String> = Vec::new();
    for n in names {
        let shown = match cx.ir.params.get(&n) {
            Some(p) if overridden.iter().any(|(o, _)| *o == n) => {
                format!("`{n}` = {} (`--param`)", p.value_text())
            }
            Some(p) => format!("`{n}` = {}", p.value_text()),
            None => match n.as_str() {
                "stages" => match cx.ir.stages {
                    Some((s, _)) => format!("`stages` = {s}"),
                    None => continue,
                },
                _ => continue,
            },
        };
        if !at.contains(&shown) {
            at.push(shown);
        }
    }
    let where_ = match &cx.ir.instance {
        Some(i) => format!("instance `{i}`"),
        None => "the task".to_string(),
    };
    let values = if at.is_empty() {
        String::new()
    } else {
        format!(" at {}", at.join(", "))
    };
    let mut d = Diagnostic::error(
        codes::REQUIREMENT,
        format!(
            "requirement does not hold for {where_}{values}: {a} {} {b} is false",
            r.op.as_str()
        ),
    )
    .primary(
        r.span,
        match &r.message {
            Some(m) => format!("required: {}", m.node),
            None => "required here".to_string(),
        },
    );
    if let Some(span) = cx.ir.instance_span {
        d = d.secondary(span, "the values of this instance");
    }
    d.help("choose values that keep the requirement (an instance's or a `--param` value), or relax it; a range point that breaks it is not checked, an instance that breaks it is refused")
}

/// The names `e` reads (params, `stages`, `tile.M`: first segment only for a param), in order.
fn paths(e: &Expr, out: &mut Vec<String>) {
    match &e.kind {
        ExprKind::Path(p) => {
            if let Some(first) = p.first() {
                if p.len() == 1 {
                    out.push(first.node.clone());
                }
            }
        }
        ExprKind::Neg(x) => paths(x, out),
        ExprKind::Binary(_, x, y) => {
            paths(x, out);
            paths(y, out);
        }
        ExprKind::Call(_, args) => args.iter().for_each(|x| paths(x, out)),
        ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::BadLit(_) => {}
    }
}

/// Whether `d` is a requirement that does not hold (E0032): at a range point, the point lies
/// outside what the ranges promise ([`super::range_ends`]).
pub(super) fn is_unmet(d: &Diagnostic) -> bool {
    d.code == codes::REQUIREMENT
}
