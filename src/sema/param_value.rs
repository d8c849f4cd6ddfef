//! The one value path of a param: every value, whether a default, an `instance` setting or a
//! `--param` override, is evaluated, converted to the declared type and checked against the
//! type's range and the declared range by [`param_value`], so the sources cannot disagree.

use super::eval::{Env, Num};
use super::param_range::Range;
use super::param_ty::{float_text_in, num_text, TypeLimits, Violation};
use crate::diag::{codes, Diagnostic};
use crate::front::ast;
use crate::ir::{ParamType, ParamValue};
use crate::span::Span;

/// The value `v` gives param `p` of type `ty` with checked range `range`.
///
/// Integers stay exact (`i64`); an integer value of a float param becomes that float; an `f32`
/// value is rounded to single precision before the declared range is checked, so the range holds
/// for the value the generated code uses. The span of
/// every diagnostic is `v`'s (the caller says where the value came from).
///
/// # Errors
///
/// The first problem: a value of the wrong kind (`E0005`), outside the type (`E0006`; NaN is
/// `E0004`), outside the declared range (`E0006`), or a diagnostic of evaluating it (an unknown
/// name, overflow, division by zero, or a follow-on of a rejected earlier param).
pub(super) fn param_value(
    p: &ast::Param,
    ty: ParamType,
    range: Option<&Range>,
    v: &ast::Value,
    env: &Env<'_>,
) -> Result<ParamValue, Diagnostic> {
    let e = match (v, ty) {
        (ast::Value::Bool(b, _), ParamType::Bool) => return Ok(ParamValue::Bool(*b)),
        (ast::Value::Bool(b, s), _) => return Err(type_error(*s, p, &format!("the bool `{b}`"))),
        (ast::Value::Expr(e), ParamType::Bool) => {
            return Err(type_error(e.span, p, "a number"));
        }
        (ast::Value::Expr(e), _) => e,
    };
    let n = match (env.num(e)?, ty.is_int()) {
        (Num::Float(f), true) => {
            return Err(type_error(
                e.span,
                p,
                &format!("the float {}", num_text(Num::Float(f))),
            ))
        }
        (Num::Int(i), false) => Num::Float(i as f64),
        (n, _) => n,
    };
    let mut held = n;
    if let Some(limits) = TypeLimits::of(ty) {
        if let Some(why) = limits.check(n) {
            return Err(outside_type(e.span, p, ty, n, why, &limits));
        }
        held = limits.convert(n);
    }
    let value = match held {
        Num::Int(i) => ParamValue::Int(i),
        Num::Float(f) => ParamValue::Float(f),
    };
    match range {
        Some(r) if !r.contains(&value) => Err(outside_range(e.span, p, n, held, r)),
        _ => Ok(value),
    }
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

fn outside_type(
    span: Span,
    p: &ast::Param,
    ty: ParamType,
    n: Num,
    why: Violation,
    limits: &TypeLimits,
) -> Diagnostic {
    let (name, declared) = (&p.name.node, &p.ty.node);
    let help = match (why, ty) {
        (Violation::NaN, _) => {
            "a float expression such as `0.0 / 0.0` is not a number; write the value you mean"
                .to_string()
        }
        (Violation::RoundsToZero, _) => format!(
            "write 0, a value of magnitude at least {:?}, or declare `{name}` as `f64`",
            f32::from_bits(1)
        ),
        (Violation::Outside, ParamType::I32) => format!(
            "give `{name}` a value inside {}, or declare it `int` (64-bit)",
            limits.text()
        ),
        (Violation::Outside, ParamType::F32) => format!(
            "give `{name}` a value of magnitude at most {:?}, or declare it `f64`",
            f32::MAX
        ),
        (Violation::Outside, _) => {
            format!(
                "give `{name}` a value inside `{declared}` ({})",
                limits.text()
            )
        }
    };
    Diagnostic::error(
        why.code(),
        format!(
            "param `{name}` is `{declared}` but its value {}",
            why.describe(n, limits, declared)
        ),
    )
    .primary(span, format!("not a value of `{declared}`"))
    .secondary(p.ty.span, "declared type")
    .help(help)
}

/// The label `outside_range` puts on the declared range: what [`is_outside_range`] looks for.
const ALLOWED_RANGE: &str = "allowed range";

/// Whether `d` is a param's value outside its declared range (E0006 from a param's `in`), as
/// opposed to another E0006 (a ring depth, a task count, a type's limits) that lowering reports.
pub(super) fn is_outside_range(d: &Diagnostic) -> bool {
    d.code == codes::OUT_OF_RANGE
        && d.labels
            .iter()
            .any(|l| !l.primary && l.message == ALLOWED_RANGE)
}

fn outside_range(span: Span, p: &ast::Param, n: Num, held: Num, r: &Range) -> Diagnostic {
    let (name, declared, range) = (&p.name.node, &p.ty.node, r.text());
    let value = match (n, held) {
        (Num::Float(f), Num::Float(h)) if f != h => format!(
            "{}, which is {} in `{declared}`,",
            num_text(n),
            float_text_in(h, true)
        ),
        _ => num_text(n),
    };
    Diagnostic::error(
        codes::OUT_OF_RANGE,
        format!("param `{name}` is {value} but must lie in {range}"),
    )
    .primary(span, format!("value {}", num_text(n)))
    .secondary(r.span, ALLOWED_RANGE)
    .help(format!("choose a value of `{name}` inside {range}"))
}
