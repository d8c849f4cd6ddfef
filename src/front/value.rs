//! One value on its own: the `VALUE` of `--param NAME=VALUE`, read with the grammar's `value`
//! rule (the rule of a contract's defaults and instance settings), so that a value means the same
//! wherever it is written.

use super::ast::{Expr, ExprKind, Value};
use super::build::build_value;
use super::parse::{syntax_diagnostic, MpkParser, Rule};
use crate::diag::Diagnostic;
use crate::span::Span;
use pest::Parser;

/// Parses `text` as a param value: a number, `true`/`false` or an integer expression (the
/// grammar's `value` rule).
///
/// The text belongs to no file, so every span of the result and of its diagnostics is `anchor`
/// (e.g. the param's name in its declaration). A syntax error is an `E0001` diagnostic whose
/// message names the 1-based character of `text` where it is. A literal no `i64`/`f64` holds is
/// kept as [`ExprKind::BadLit`] and reported when the value is evaluated, as in a file.
///
/// # Errors
///
/// The diagnostics of a value that does not parse; never panics on any input.
pub fn parse_value(text: &str, anchor: Span) -> Result<Value, Vec<Diagnostic>> {
    let mut diags = Vec::new();
    let value = match MpkParser::parse(Rule::value_text, text) {
        Ok(pairs) => pairs
            .flatten()
            .find(|p| p.as_rule() == Rule::value)
            .map(|p| build_value(p, &mut diags)),
        Err(e) => {
            let d = syntax_diagnostic(&e, text);
            let at = d.main_span().start;
            let column = text.get(..at).map_or(1, |s| s.chars().count() + 1);
            let detail = d
                .message
                .strip_prefix("syntax error: ")
                .unwrap_or(&d.message)
                .to_string();
            diags.push(Diagnostic {
                message: format!("syntax error at character {column} of `{text}`: {detail}"),
                help: Some(
                    "write a value as in a contract: a number (`4096`, `0x400`, `1e-6`), `true` \
                     or `false`, or an integer expression over earlier params"
                        .to_string(),
                ),
                ..d
            });
            None
        }
    };
    for d in &mut diags {
        for l in &mut d.labels {
            l.span = anchor;
        }
    }
    match value {
        Some(mut v) if diags.is_empty() => {
            anchor_value(&mut v, anchor);
            Ok(v)
        }
        _ => Err(diags),
    }
}

fn anchor_value(v: &mut Value, anchor: Span) {
    match v {
        Value::Bool(_, s) => *s = anchor,
        Value::Expr(e) => anchor_expr(e, anchor),
    }
}

fn anchor_expr(e: &mut Expr, anchor: Span) {
    e.span = anchor;
    match &mut e.kind {
        ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::BadLit(_) => {}
        ExprKind::Path(parts) => parts.iter_mut().for_each(|p| p.span = anchor),
        ExprKind::Neg(inner) => anchor_expr(inner, anchor),
        ExprKind::Binary(_, l, r) => {
            anchor_expr(l, anchor);
            anchor_expr(r, anchor);
        }
        ExprKind::Call(f, args) => {
            f.span = anchor;
            args.iter_mut().for_each(|a| anchor_expr(a, anchor));
        }
    }
}
