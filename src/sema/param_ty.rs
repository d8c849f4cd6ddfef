//! Param types: the names a declaration may use, and the values each type represents (its
//! limits), with the words diagnostics use for a value outside them.

use super::eval::Num;
use crate::diag::{codes, Diagnostic, Sink};
use crate::front::ast;
use crate::ir::ParamType;

/// The declared type of `p`, or an `E0005` diagnostic naming the types that exist.
pub(super) fn resolve(p: &ast::Param, sink: &mut Sink) -> Option<ParamType> {
    let ty = ParamType::parse(&p.ty.node);
    if ty.is_none() {
        sink.push(
            Diagnostic::error(
                codes::TYPE_MISMATCH,
                format!("unknown param type `{}`", p.ty.node),
            )
            .primary(p.ty.span, "not a param type")
            .help(
                "param types are `int` (64-bit, alias `i64`), `i32`, `f32` (alias `float`), \
                 `f64` and `bool`",
            ),
        );
    }
    ty
}

/// The values a number type represents.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum TypeLimits {
    /// `min ..= max`, exactly.
    Int { min: i64, max: i64 },
    /// Finite values; `single`: rounded to IEEE single, they must stay finite and a non-zero
    /// value must not become zero.
    Float { single: bool },
}

/// Why a number is not a value of a type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Violation {
    /// An integer outside `min..=max`, or a float whose magnitude the type cannot hold.
    Outside,
    /// A float that is NaN (e.g. `0.0 / 0.0`).
    NaN,
    /// A non-zero float that rounds to zero in `f32`.
    RoundsToZero,
}

impl TypeLimits {
    /// The limits of `ty`; `None` for `bool`.
    pub fn of(ty: ParamType) -> Option<TypeLimits> {
        Some(match ty {
            ParamType::I32 => TypeLimits::Int {
                min: i64::from(i32::MIN),
                max: i64::from(i32::MAX),
            },
            ParamType::I64 => TypeLimits::Int {
                min: i64::MIN,
                max: i64::MAX,
            },
            ParamType::F32 => TypeLimits::Float { single: true },
            ParamType::F64 => TypeLimits::Float { single: false },
            ParamType::Bool => return None,
        })
    }

    /// Whether `n` (already of the type's kind) is a value of the type.
    pub fn check(&self, n: Num) -> Option<Violation> {
        match (*self, n) {
            (TypeLimits::Int { min, max }, Num::Int(v)) => {
                (v < min || v > max).then_some(Violation::Outside)
            }
            (TypeLimits::Float { .. }, Num::Float(f)) if f.is_nan() => Some(Violation::NaN),
            (TypeLimits::Float { single: true }, Num::Float(f)) => {
                // `as` rounds to nearest: infinite exactly when no f32 represents `f`.
                let r = f as f32;
                if r.is_infinite() {
                    Some(Violation::Outside)
                } else if r == 0.0 && f != 0.0 {
                    Some(Violation::RoundsToZero)
                } else {
                    None
                }
            }
            (TypeLimits::Float { single: false }, Num::Float(f)) => {
                f.is_infinite().then_some(Violation::Outside)
            }
            // A number of the other kind is the caller's type error, not a range question.
            _ => None,
        }
    }

    /// `n` (of the type's kind, already [`check`](Self::check)ed) as a value of the type: a
    /// float of `f32` is rounded to single precision, so ranges compare and code generation
    /// prints the value the type holds (`0.99999999` is `1.0` in `f32`).
    pub fn convert(&self, n: Num) -> Num {
        match (*self, n) {
            (TypeLimits::Float { single: true }, Num::Float(f)) => Num::Float(f64::from(f as f32)),
            _ => n,
        }
    }

    /// True for `f32`, whose values print as the shortest single-precision text.
    pub fn single(&self) -> bool {
        matches!(self, TypeLimits::Float { single: true })
    }

    /// The type's range as text: `-2147483648..=2147483647`, `±3.4028235e38`.
    pub fn text(&self) -> String {
        match self {
            TypeLimits::Int { min, max } => format!("{min}..={max}"),
            TypeLimits::Float { single: true } => format!("±{:?}", f32::MAX),
            TypeLimits::Float { single: false } => format!("±{:?}", f64::MAX),
        }
    }
}

impl Violation {
    /// The diagnostic code: `E0004` for NaN (an arithmetic result), `E0006` otherwise.
    pub fn code(self) -> &'static str {
        match self {
            Violation::NaN => codes::ARITH,
            Violation::Outside | Violation::RoundsToZero => codes::OUT_OF_RANGE,
        }
    }

    /// The end of a sentence about `n` of type `ty` (as declared): "3000000000 lies outside …".
    pub fn describe(self, n: Num, limits: &TypeLimits, ty: &str) -> String {
        match self {
            Violation::Outside => match n {
                Num::Float(f) if f.is_infinite() => {
                    format!("is not finite: it overflows `{ty}` ({})", limits.text())
                }
                n => format!("{} lies outside `{ty}` ({})", num_text(n), limits.text()),
            },
            Violation::NaN => "is not a number (NaN)".to_string(),
            Violation::RoundsToZero => format!(
                "{} rounds to 0 in `{ty}`, whose smallest positive value is {:?}",
                num_text(n),
                f32::from_bits(1)
            ),
        }
    }
}

/// A number as diagnostics print it: integers exactly, floats as the shortest text that reads
/// back as the same f64.
pub(super) fn num_text(n: Num) -> String {
    match n {
        Num::Int(i) => i.to_string(),
        Num::Float(f) => float_text(f),
    }
}

/// A float as the shortest text that reads back as the same f64 (`1e-6`, `0.5`, `2.0`).
pub(super) fn float_text(f: f64) -> String {
    format!("{f:?}")
}

/// A value of a float type as text: for `f32` (`single`), the shortest text that reads back as
/// the same f32 (`0.1`, not `0.10000000149011612`).
pub(super) fn float_text_in(f: f64, single: bool) -> String {
    if single {
        format!("{:?}", f as f32)
    } else {
        float_text(f)
    }
}
