//! Parameter values of one instance: defaults, instance settings, then `--param` overrides;
//! types and ranges checked.

use super::eval::{Env, Num};
use crate::diag::{codes, Diagnostic, Sink};
use crate::front::ast;
use crate::ir::{ParamIr, ParamValue};
use crate::span::Span;
use indexmap::IndexMap;

/// The declared type of a param.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ParamTy {
    Int,
    Float,
    Bool,
}

fn param_ty(p: &ast::Param, sink: &mut Sink) -> Option<ParamTy> {
    match p.ty.node.as_str() {
        "int" | "i32" | "i64" => Some(ParamTy::Int),
        "f32" | "float" | "f64" => Some(ParamTy::Float),
        "bool" => Some(ParamTy::Bool),
        other => {
            sink.push(
                Diagnostic::error(
                    codes::TYPE_MISMATCH,
                    format!("unknown param type `{other}`"),
                )
                .primary(p.ty.span, "not a param type")
                .help("param types are `int`, `f32` and `bool`"),
            );
            None
        }
    }
}

/// Where a value for a param comes from.
enum Source<'a> {
    Ast(&'a ast::Value),
    Cli(&'a str),
}

/// Evaluates every param of `task` for one instance. `instance` settings override defaults and
/// `overrides` (`--param name=value`) override both. Errors go to `sink`. A value outside its
/// range is reported and kept; params without a usable value are returned as poisoned names,
/// whose uses are follow-on errors.
pub fn evaluate(
    params: &[&ast::Param],
    instance: Option<&ast::Instance>,
    overrides: &[(String, String)],
    sink: &mut Sink,
) -> (IndexMap<String, ParamIr>, Vec<String>) {
    let mut out: IndexMap<String, ParamIr> = IndexMap::new();
    let mut poisoned = Vec::new();
    for p in params {
        let Some(ty) = param_ty(p, sink) else {
            poisoned.push(p.name.node.clone());
            continue;
        };
        let inst_set = instance.and_then(|i| i.sets.iter().find(|(n, _)| n.node == p.name.node));
        let cli = overrides.iter().rev().find(|(n, _)| *n == p.name.node);
        let (source, span) = match (cli, inst_set, &p.default) {
            (Some((_, v)), _, _) => (Source::Cli(v.as_str()), p.span),
            (None, Some((_, v)), _) => (Source::Ast(v), v.span()),
            (None, None, Some(v)) => (Source::Ast(v), v.span()),
            (None, None, None) => {
                let mut d = Diagnostic::error(
                    codes::MISSING,
                    format!("param `{}` has no value", p.name.node),
                )
                .primary(p.name.span, "declared without a default");
                if let Some(i) = instance {
                    d = d.secondary(
                        i.name.span,
                        format!("instance `{}` does not set it", i.name.node),
                    );
                }
                sink.push(d.help(format!(
                    "give it a default (`= …`), set it in the instance, or pass `--param {}=VALUE`",
                    p.name.node
                )));
                poisoned.push(p.name.node.clone());
                continue;
            }
        };
        let env = Env {
            params: Some(&out),
            poisoned: Some(&poisoned),
            ..Env::default()
        };
        let value = match source {
            Source::Ast(v) => value_from_ast(v, ty, &env, p, sink),
            Source::Cli(text) => value_from_cli(text, ty, p, sink),
        };
        let Some(value) = value else {
            poisoned.push(p.name.node.clone());
            continue;
        };
        // Out of range is reported; the value is kept so that later items check against it.
        in_range(&value, p, &env, span, sink);
        out.insert(
            p.name.node.clone(),
            ParamIr {
                name: p.name.node.clone(),
                value,
                span: p.span,
                value_span: span,
            },
        );
    }
    (out, poisoned)
}

fn type_error(span: Span, p: &ast::Param, found: &str) -> Diagnostic {
    Diagnostic::error(
        codes::TYPE_MISMATCH,
        format!(
            "param `{}` is `{}` but its value is {found}",
            p.name.node, p.ty.node
        ),
    )
    .primary(span, format!("{found} here"))
    .secondary(p.ty.span, "declared type")
    .help(format!(
        "give `{}` a value of type `{}`",
        p.name.node, p.ty.node
    ))
}

fn value_from_ast(
    v: &ast::Value,
    ty: ParamTy,
    env: &Env<'_>,
    p: &ast::Param,
    sink: &mut Sink,
) -> Option<ParamValue> {
    match (v, ty) {
        (ast::Value::Bool(b, _), ParamTy::Bool) => Some(ParamValue::Bool(*b)),
        (ast::Value::Bool(_, s), _) => {
            sink.push(type_error(*s, p, "a bool"));
            None
        }
        (ast::Value::Expr(e), ParamTy::Bool) => {
            sink.push(type_error(e.span, p, "a number"));
            None
        }
        (ast::Value::Expr(e), ParamTy::Int) => match env.num(e) {
            Ok(Num::Int(i)) => Some(ParamValue::Int(i)),
            Ok(Num::Float(_)) => {
                sink.push(type_error(e.span, p, "a float"));
                None
            }
            Err(d) => {
                sink.push(d);
                None
            }
        },
        (ast::Value::Expr(e), ParamTy::Float) => match env.num(e) {
            Ok(Num::Int(i)) => Some(ParamValue::Float(i as f64)),
            Ok(Num::Float(f)) if f.is_finite() && f.abs() <= f64::from(f32::MAX) => {
                Some(ParamValue::Float(f))
            }
            Ok(Num::Float(f)) => {
                sink.push(type_error(
                    e.span,
                    p,
                    &format!("{f:e}, which no f32 represents"),
                ));
                None
            }
            Err(d) => {
                sink.push(d);
                None
            }
        },
    }
}

fn value_from_cli(text: &str, ty: ParamTy, p: &ast::Param, sink: &mut Sink) -> Option<ParamValue> {
    let parsed = match ty {
        ParamTy::Int => text
            .replace('_', "")
            .parse::<i64>()
            .ok()
            .map(ParamValue::Int),
        ParamTy::Float => text
            .parse::<f64>()
            .ok()
            .filter(|f| f.is_finite())
            .map(ParamValue::Float),
        ParamTy::Bool => match text {
            "true" => Some(ParamValue::Bool(true)),
            "false" => Some(ParamValue::Bool(false)),
            _ => None,
        },
    };
    if parsed.is_none() {
        sink.push(
            Diagnostic::error(
                codes::TYPE_MISMATCH,
                format!(
                    "`--param {}={text}`: `{text}` is not a `{}`",
                    p.name.node, p.ty.node
                ),
            )
            .primary(p.span, "param declared here")
            .help(format!("pass a `{}` value", p.ty.node)),
        );
    }
    parsed
}

fn in_range(
    value: &ParamValue,
    p: &ast::Param,
    env: &Env<'_>,
    span: Span,
    sink: &mut Sink,
) -> bool {
    let Some(r) = &p.range else { return true };
    let (lo, hi) = match (env.num(&r.lo), env.num(&r.hi)) {
        (Ok(lo), Ok(hi)) => (lo, hi),
        (Err(d), _) | (_, Err(d)) => {
            sink.push(d);
            return false;
        }
    };
    let f = |n: Num| match n {
        Num::Int(i) => i as f64,
        Num::Float(x) => x,
    };
    let v = match value {
        ParamValue::Int(i) => *i as f64,
        ParamValue::Float(x) => *x,
        ParamValue::Bool(_) => return true,
    };
    let (lo, hi) = (f(lo), f(hi));
    let empty = if r.inclusive { lo > hi } else { lo >= hi };
    if empty {
        let op = if r.inclusive { "..=" } else { ".." };
        sink.push(
            Diagnostic::error(
                codes::OUT_OF_RANGE,
                format!("the range {lo}{op}{hi} of param `{}` is empty", p.name.node),
            )
            .primary(r.span, "no value fits")
            .help("write the lower bound first, e.g. `in 1..=16`"),
        );
        return false;
    }
    let ok = v >= lo && if r.inclusive { v <= hi } else { v < hi };
    if !ok {
        let op = if r.inclusive { "..=" } else { ".." };
        sink.push(
            Diagnostic::error(
                codes::OUT_OF_RANGE,
                format!(
                    "param `{}` is {value} but must lie in {lo}{op}{hi}",
                    p.name.node
                ),
            )
            .primary(span, format!("value {value}"))
            .secondary(r.span, "allowed range")
            .help(format!(
                "choose a value of `{}` inside {lo}{op}{hi}",
                p.name.node
            )),
        );
    }
    ok
}
