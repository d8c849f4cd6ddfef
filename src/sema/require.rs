//! `require A OP B [, "message"]` (docs/language.md, "Requirements"): a relation between the
//! params (and `tile.M/N/K`, `stages`) that every lowering of the task must keep. At an
//! instance, the defaults of a task without instances or a `--param` value that breaks one it is
//! E0032; a relation that names a run-time param (`= runtime`) must hold at every count its
//! range admits, since the runtime picks one each step. At a point of a declared range that
//! breaks one, the range promises nothing (`sema::range_ends` checks the nearest value that
//! keeps it instead), so a relation such as `require hidden % cols == 0` narrows what
//! `cols in 1..=64` promises to the divisors it keeps.

use super::collect::Collected;
use super::eval::Env;
use super::lower::Cx;
use crate::diag::{codes, Diagnostic};
use crate::front::ast::{Expr, ExprKind, Require};
use crate::ir::{ParamIr, ParamValue};
use indexmap::IndexMap;

/// Run-time ranges of more values than this are checked at their ends only.
const MAX_RUNTIME_VALUES: i64 = 4096;

/// Checks every `require` of `c` at the values `cx` lowers with (after the tile and `stages`,
/// which a requirement may name). A side that does not evaluate reports why (E0002, E0004, …)
/// and the requirement is not judged.
pub(super) fn requirements(cx: &mut Cx<'_>, c: &Collected<'_>) {
    for r in &c.requires {
        let (Some(a), Some(b)) = (cx.int(&r.lhs), cx.int(&r.rhs)) else {
            continue;
        };
        if !r.op.holds(a, b) {
            let d = unmet(cx, r, a, b, None);
            cx.sink.push(d);
            continue;
        }
        // A run-time param it names: every count of its range (the lowering holds its top).
        if let Some((p, v, a, b)) = runtime_counterexample(cx, r) {
            let d = unmet(cx, r, a, b, Some((p, v)));
            cx.sink.push(d);
        }
    }
}

/// The first count of a run-time param that `r` names at which `r` fails: (param, count, sides).
fn runtime_counterexample(cx: &Cx<'_>, r: &Require) -> Option<(String, i64, i64, i64)> {
    let mut names = Vec::new();
    paths(&r.lhs, &mut names);
    paths(&r.rhs, &mut names);
    for n in names {
        let Some(p) = cx.ir.params.get(&n) else {
            continue;
        };
        let (Some(_), Some((lo, hi))) = (p.runtime, p.int_range) else {
            continue;
        };
        let values: Vec<i64> = if hi - lo < MAX_RUNTIME_VALUES {
            (lo..=hi).collect()
        } else {
            vec![lo, hi]
        };
        for v in values {
            let mut params: IndexMap<String, ParamIr> = cx.ir.params.clone();
            if let Some(q) = params.get_mut(&n) {
                q.value = ParamValue::Int(v);
            }
            let env = Env {
                params: Some(&params),
                ..cx.env()
            };
            if let (Ok(a), Ok(b)) = (env.int(&r.lhs), env.int(&r.rhs)) {
                if !r.op.holds(a, b) {
                    return Some((n, v, a, b));
                }
            }
        }
    }
    None
}

/// The E0032 of `r`, whose sides are `a` and `b` at the values being lowered (with run-time
/// param `count.0` at `count.1`, if given).
fn unmet(cx: &Cx<'_>, r: &Require, a: i64, b: i64, count: Option<(String, i64)>) -> Diagnostic {
    let mut names = Vec::new();
    paths(&r.lhs, &mut names);
    paths(&r.rhs, &mut names);
    let mut at: Vec<String> = Vec::new();
    for n in names {
        let shown = match (cx.ir.params.get(&n), &count) {
            (Some(_), Some((c, v))) if *c == n => {
                format!("`{n}` = {v} (a count the runtime may choose)")
            }
            (Some(p), _) => format!("`{n}` = {}", p.value_text()),
            (None, _) => match (n.as_str(), cx.ir.stages, cx.ir.tile.as_ref()) {
                ("stages", Some((s, _)), _) => format!("`stages` = {s}"),
                ("tile.M", _, Some(t)) => t.m.map_or(String::new(), |v| format!("`tile.M` = {v}")),
                ("tile.N", _, Some(t)) => t.n.map_or(String::new(), |v| format!("`tile.N` = {v}")),
                ("tile.K", _, Some(t)) => t.k.map_or(String::new(), |v| format!("`tile.K` = {v}")),
                _ => String::new(),
            },
        };
        if !shown.is_empty() && !at.contains(&shown) {
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
    let why = r
        .message
        .as_ref()
        .map_or(String::new(), |m| format!(" ({})", m.node));
    let mut d = Diagnostic::error(
        codes::REQUIREMENT,
        format!(
            "requirement{why} does not hold for {where_}{values}: {a} {} {b} is false",
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
    if count.is_some() {
        d = d.note("a requirement that names a run-time param (`= runtime`) must hold at every count of its range: the runtime picks one each step");
    }
    d.help("choose values that keep the requirement (an instance's or a `--param` value), or relax it; a range point that breaks it is not checked, an instance that breaks it is refused")
}

/// The names `e` reads, in order: a param or `stages` by name, `tile.M` as written.
fn paths(e: &Expr, out: &mut Vec<String>) {
    match &e.kind {
        ExprKind::Path(p) => {
            let name: Vec<&str> = p.iter().map(|i| i.node.as_str()).collect();
            out.push(name.join("."));
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
