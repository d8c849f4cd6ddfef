//! The declared range of a param (`in LO..=HI` or `in LO..HI`), checked once per instance:
//! integer bounds for `i32`/`int`/`i64`, float bounds for `f32`/`f64`, no range on `bool`, bounds
//! inside the type's own range, lower bound first, not empty. Integers are compared exactly.

use super::eval::{Env, Num};
use super::param_ty::{float_text, float_text_in, TypeLimits};
use crate::diag::{codes, Diagnostic, Sink};
use crate::front::ast;
use crate::ir::{ParamType, ParamValue};
use crate::span::Span;

/// The two bounds, of the param's own kind.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Bounds {
    Int(i64, i64),
    Float(f64, f64),
}

/// A checked range.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Range {
    bounds: Bounds,
    inclusive: bool,
    /// `step S` of an integer range (1 without one): only `lo + k * S` lies inside.
    step: i64,
    /// `f32` bounds (rounded to single precision) print as the shortest f32 text.
    single: bool,
    /// The range as written (`in` excluded).
    pub span: Span,
}

/// The largest f64 below finite `x` (`f64::next_down`, stable only since Rust 1.86, after this
/// crate's MSRV): one step of the bit pattern toward negative infinity.
fn f64_below(x: f64) -> f64 {
    if x == 0.0 {
        -f64::from_bits(1)
    } else if x > 0.0 {
        f64::from_bits(x.to_bits() - 1)
    } else {
        f64::from_bits(x.to_bits() + 1)
    }
}

/// [`f64_below`] for an f32.
fn f32_below(x: f32) -> f32 {
    if x == 0.0 {
        -f32::from_bits(1)
    } else if x > 0.0 {
        f32::from_bits(x.to_bits() - 1)
    } else {
        f32::from_bits(x.to_bits() + 1)
    }
}

impl Range {
    /// True when `v` lies inside (exactly, for integers; a bool is in no range).
    pub fn contains(&self, v: &ParamValue) -> bool {
        match (self.bounds, v) {
            (Bounds::Int(lo, hi), ParamValue::Int(x)) => {
                *x >= lo
                    && (if self.inclusive { *x <= hi } else { *x < hi })
                    && (i128::from(*x) - i128::from(lo)) % i128::from(self.step) == 0
            }
            (Bounds::Float(lo, hi), ParamValue::Float(x)) => {
                *x >= lo && if self.inclusive { *x <= hi } else { *x < hi }
            }
            _ => false,
        }
    }

    /// The lowest and highest integer inside an integer range (`..` excludes its upper bound);
    /// `None` for a float range.
    pub fn int_ends(&self) -> Option<(i64, i64)> {
        let (lo, hi) = match self.bounds {
            Bounds::Int(lo, hi) if self.inclusive => (lo, hi),
            Bounds::Int(lo, hi) => (lo, hi.checked_sub(1)?),
            Bounds::Float(..) => return None,
        };
        // The highest `lo + k * step` at most `hi`.
        let span = i128::from(hi) - i128::from(lo);
        let top = i128::from(lo) + span - span % i128::from(self.step);
        Some((lo, i64::try_from(top).ok()?))
    }

    /// The distance between two values of the range: its `step`, 1 without one.
    pub fn step(&self) -> i64 {
        self.step
    }

    /// The lowest and highest value inside the range, of the param's kind: an integer range's
    /// as [`Range::int_ends`]; a float range's lower bound and its upper bound, or where `..`
    /// excludes it the largest value of the param's type below it (an `f32`'s next f32 down).
    pub fn ends(&self) -> Option<(ParamValue, ParamValue)> {
        match self.bounds {
            Bounds::Int(..) => self
                .int_ends()
                .map(|(lo, hi)| (ParamValue::Int(lo), ParamValue::Int(hi))),
            Bounds::Float(lo, hi) if self.inclusive => {
                Some((ParamValue::Float(lo), ParamValue::Float(hi)))
            }
            Bounds::Float(lo, hi) => {
                let below = if self.single {
                    f64::from(f32_below(hi as f32))
                } else {
                    f64_below(hi)
                };
                (below >= lo).then_some((ParamValue::Float(lo), ParamValue::Float(below)))
            }
        }
    }

    /// A value of this range's kind as a contract (or `--param`) writes it: an `f32` bound as
    /// the shortest text that reads back as the same f32.
    pub fn value_text(&self, v: &ParamValue) -> String {
        match v {
            ParamValue::Float(f) => float_text_in(*f, self.single),
            v => v.to_string(),
        }
    }

    /// The range as text, bounds printed exactly: `0..=9007199254740992`, `0.0..1.0`.
    pub fn text(&self) -> String {
        let op = if self.inclusive { "..=" } else { ".." };
        match self.bounds {
            Bounds::Int(lo, hi) if self.step > 1 => format!("{lo}{op}{hi} step {}", self.step),
            Bounds::Int(lo, hi) => format!("{lo}{op}{hi}"),
            Bounds::Float(lo, hi) => format!(
                "{}{op}{}",
                float_text_in(lo, self.single),
                float_text_in(hi, self.single)
            ),
        }
    }
}

/// Evaluates and checks the range of `p` (declared type `ty`). `Ok(None)`: no range declared.
///
/// # Errors
///
/// `Err(())` after reporting to `sink`: a range on a `bool` or bounds of the other kind
/// (`E0005`), a bound outside the type's range, not finite, inverted or empty (`E0006`), or a bound
/// that does not evaluate (its own diagnostic).
pub(super) fn declared_range(
    p: &ast::Param,
    ty: ParamType,
    env: &Env<'_>,
    sink: &mut Sink,
) -> Result<Option<Range>, ()> {
    let Some(r) = &p.range else { return Ok(None) };
    let Some(limits) = TypeLimits::of(ty) else {
        sink.push(
            Diagnostic::error(
                codes::TYPE_MISMATCH,
                format!("param `{}` is a `bool`, which has no range", p.name.node),
            )
            .primary(r.span, "a range on a bool")
            .secondary(p.ty.span, "declared type")
            .help("drop the `in …` range, or declare a number type (`int`, `i32`, `f32`, `f64`)"),
        );
        return Err(());
    };
    let lo = bound(p, ty, &limits, &r.lo, "lower", env, sink);
    let hi = bound(p, ty, &limits, &r.hi, "upper", env, sink);
    let bounds = match (lo, hi) {
        (Some(Num::Int(lo)), Some(Num::Int(hi))) => Bounds::Int(lo, hi),
        (Some(Num::Float(lo)), Some(Num::Float(hi))) => Bounds::Float(lo, hi),
        _ => return Err(()),
    };
    let step = match (&r.step, bounds) {
        (None, _) => 1,
        (Some(e), Bounds::Float(..)) => {
            sink.push(
                Diagnostic::error(
                    codes::TYPE_MISMATCH,
                    format!(
                        "param `{}` is `{}`, whose range takes no `step`",
                        p.name.node, p.ty.node
                    ),
                )
                .primary(e.span, "a step on a float range")
                .help("drop the `step`: a float range admits every value between its bounds"),
            );
            return Err(());
        }
        (Some(e), Bounds::Int(..)) => {
            match env.num(e) {
                Ok(Num::Int(s)) if s >= 1 => s,
                Ok(n) => {
                    let shown = match n {
                        Num::Int(s) => s.to_string(),
                        Num::Float(f) => float_text(f),
                    };
                    sink.push(
                    Diagnostic::error(
                        codes::OUT_OF_RANGE,
                        format!("the step of `{}`'s range is {shown}, but a step is a positive integer", p.name.node),
                    )
                    .primary(e.span, "not a positive integer")
                    .help("write `step S` with S >= 1: the range admits LO, LO + S, LO + 2S, ..."),
                );
                    return Err(());
                }
                Err(d) => {
                    sink.push(d);
                    return Err(());
                }
            }
        }
    };
    let range = Range {
        bounds,
        inclusive: r.inclusive,
        step,
        single: limits.single(),
        span: r.span,
    };
    let (inverted, equal) = match bounds {
        Bounds::Int(lo, hi) => (lo > hi, lo == hi),
        Bounds::Float(lo, hi) => (lo > hi, lo == hi),
    };
    if inverted {
        let op = if r.inclusive { "..=" } else { ".." };
        sink.push(
            Diagnostic::error(
                codes::OUT_OF_RANGE,
                format!(
                    "the range {} of param `{}` is inverted: its lower bound is above its upper bound",
                    range.text(),
                    p.name.node
                ),
            )
            .primary(r.span, "no value fits")
            .help(if names_a_param(&r.lo) || names_a_param(&r.hi) {
                "its bounds are computed from other params, whose values here put the lower above the upper: change those values (an instance's settings), or bound the param so that every instance has a value".to_string()
            } else {
                format!("write the lower bound first: `in {}{op}{}`", r.hi, r.lo)
            }),
        );
        return Err(());
    }
    if equal && !r.inclusive {
        sink.push(
            Diagnostic::error(
                codes::OUT_OF_RANGE,
                format!(
                    "the range {} of param `{}` is empty: `..` excludes its upper bound",
                    range.text(),
                    p.name.node
                ),
            )
            .primary(r.span, "no value fits")
            .help(format!(
                "write `in {}..={}` for the single value, or widen the range",
                r.lo, r.hi
            )),
        );
        return Err(());
    }
    Ok(Some(range))
}

/// Evaluates one bound: of the param's kind, finite, inside the type's range.
fn bound(
    p: &ast::Param,
    ty: ParamType,
    limits: &TypeLimits,
    e: &ast::Expr,
    which: &str,
    env: &Env<'_>,
    sink: &mut Sink,
) -> Option<Num> {
    let name = &p.name.node;
    let declared = &p.ty.node;
    let n = match env.num(e) {
        Ok(n) => n,
        Err(d) => {
            sink.push(d);
            return None;
        }
    };
    let problem = match (n, ty.is_int()) {
        (Num::Float(f), true) => Some((
            codes::TYPE_MISMATCH,
            format!("the {which} bound of `{name}`'s range is the float {}, but `{name}` is `{declared}`", float_text(f)),
            "a float bound".to_string(),
            format!("write an integer bound, or declare `{name}` as `f32` or `f64`"),
        )),
        (Num::Int(i), false) => Some((
            codes::TYPE_MISMATCH,
            format!("the {which} bound of `{name}`'s range is the integer {i}, but `{name}` is `{declared}`"),
            "an integer bound".to_string(),
            format!("write the bound as a float, `{i}.0`, or declare `{name}` as `int`"),
        )),
        (n, _) => limits.check(n).map(|v| {
            (
                v.code(),
                format!(
                    "the {which} bound of `{name}`'s range: {}",
                    v.describe(n, limits, declared)
                ),
                format!("not a value of `{declared}`"),
                match ty {
                    ParamType::I32 => format!(
                        "bound the range inside `{declared}` ({}), or declare `{name}` as `int`",
                        limits.text()
                    ),
                    ParamType::F32 => format!(
                        "bound the range inside `{declared}` ({}), or declare `{name}` as `f64`",
                        limits.text()
                    ),
                    _ => format!("bound the range inside `{declared}` ({})", limits.text()),
                },
            )
        }),
    };
    match problem {
        // Compared in the declared type: an `f32` bound is rounded to single precision, as values are.
        None => Some(limits.convert(n)),
        Some((code, message, label, help)) => {
            sink.push(
                Diagnostic::error(code, message)
                    .primary(e.span, label)
                    .secondary(p.ty.span, "declared type")
                    .help(help),
            );
            None
        }
    }
}

/// Whether `e` reads a name (a param): its value then changes with the instance.
fn names_a_param(e: &ast::Expr) -> bool {
    match &e.kind {
        ast::ExprKind::Path(_) => true,
        ast::ExprKind::Int(_) | ast::ExprKind::Float(_) | ast::ExprKind::BadLit(_) => false,
        ast::ExprKind::Neg(a) => names_a_param(a),
        ast::ExprKind::Binary(_, a, b) => names_a_param(a) || names_a_param(b),
        ast::ExprKind::Call(_, args) => args.iter().any(names_a_param),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_value_below_is_one_step_toward_negative_infinity() {
        assert_eq!(f64_below(1.0), 1.0 - f64::EPSILON / 2.0);
        assert_eq!(f64_below(0.0), -f64::from_bits(1));
        assert_eq!(f64_below(-1.0), -1.0 - f64::EPSILON);
        assert_eq!(f32_below(1e-5), f32::from_bits(1e-5f32.to_bits() - 1));
        assert_eq!(f32_below(-2.0), -2.0 - 2.0 * f32::EPSILON);
        assert!(f32_below(1e-5) < 1e-5);
    }
}
