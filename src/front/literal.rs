//! Number literals: their exact value, or the reason no `i64`/`f64` holds them.
//!
//! A literal that does not fit is not an error while building the AST: it becomes
//! [`ExprKind::BadLit`], which evaluation reports like any other rejected value (so the rest of the
//! file is still checked, and a `--param` value gives the same diagnostic as the same text in the
//! contract). The one integer beyond `i64::MAX` that has a value is 2^63 under a unary minus:
//! `-9223372036854775808` is `i64::MIN`.

use super::ast::{BadLit, BadLitKind, ExprKind};
use crate::diag::{codes, Diagnostic};
use crate::span::Span;

/// 2^63, the magnitude of `i64::MIN`.
const I64_MIN_MAGNITUDE: u128 = 1 << 63;

/// The expression of an integer literal (decimal with `_`, or `0x` hex; the grammar guarantees the
/// form): [`ExprKind::Int`] when it fits in `i64`, else [`ExprKind::BadLit`].
pub(super) fn int_literal(text: &str) -> ExprKind {
    let clean: String = text.chars().filter(|c| *c != '_').collect();
    let parsed = match clean.strip_prefix("0x") {
        Some(h) => u128::from_str_radix(h, 16),
        None => clean.parse::<u128>(),
    }
    .ok();
    match parsed.map(i64::try_from) {
        Some(Ok(v)) => ExprKind::Int(v),
        Some(Err(_)) | None => ExprKind::BadLit(BadLit {
            text: text.to_string(),
            kind: BadLitKind::IntTooLarge {
                is_i64_min_magnitude: parsed == Some(I64_MIN_MAGNITUDE),
            },
        }),
    }
}

/// The expression of a float literal (the grammar guarantees its form): [`ExprKind::Float`], or
/// [`ExprKind::BadLit`] for a literal with a non-zero digit that reads as 0 (`2.4e-324`), which no
/// f64 holds. A literal too large for f64 reads as infinity, which the param checks report.
pub(super) fn float_literal(text: &str) -> ExprKind {
    let v = text.parse::<f64>().unwrap_or(f64::NAN);
    let mantissa = text.split(['e', 'E']).next().unwrap_or(text);
    if v == 0.0 && mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b)) {
        ExprKind::BadLit(BadLit {
            text: text.to_string(),
            kind: BadLitKind::FloatTooSmall,
        })
    } else {
        ExprKind::Float(v)
    }
}

impl BadLit {
    /// The value of `-LITERAL`, where one exists (`-9223372036854775808` is `i64::MIN`).
    pub fn negated(&self) -> Option<i64> {
        match self.kind {
            BadLitKind::IntTooLarge {
                is_i64_min_magnitude: true,
            } => Some(i64::MIN),
            _ => None,
        }
    }

    /// The diagnostic of using the literal (written at `span`) as a value: `E0004` for an integer
    /// outside 64 bits, `E0006` for a float that reads as 0.
    pub fn diagnostic(&self, span: Span) -> Diagnostic {
        let text = &self.text;
        match self.kind {
            BadLitKind::IntTooLarge { .. } => Diagnostic::error(
                codes::ARITH,
                format!("integer literal `{text}` does not fit in 64 bits"),
            )
            .primary(span, "too large")
            .help(format!("integers are 64-bit: {}..={}", i64::MIN, i64::MAX)),
            BadLitKind::FloatTooSmall => Diagnostic::error(
                codes::OUT_OF_RANGE,
                format!("float literal `{text}` is too small for f64: it reads as 0"),
            )
            .primary(span, "rounds to 0")
            .help("write 0, or a value of magnitude at least 5e-324 (the smallest f64)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_fit_exactly_or_are_kept_as_written() {
        assert!(matches!(
            int_literal("9_223_372_036_854_775_807"),
            ExprKind::Int(i64::MAX)
        ));
        assert!(matches!(
            int_literal("0x7fffffffffffffff"),
            ExprKind::Int(i64::MAX)
        ));
        for (text, min) in [
            ("9223372036854775808", true),
            ("0x8000000000000000", true),
            ("9223372036854775809", false),
            ("99999999999999999999999999999999999999999999", false),
        ] {
            let ExprKind::BadLit(b) = int_literal(text) else {
                panic!("{text} fits?")
            };
            assert_eq!(b.negated(), min.then_some(i64::MIN), "{text}");
            assert_eq!(b.text, text);
        }
    }

    #[test]
    fn floats_that_read_as_zero_are_kept_as_written() {
        assert!(matches!(float_literal("0.0e-999"), ExprKind::Float(f) if f == 0.0));
        assert!(matches!(float_literal("5e-324"), ExprKind::Float(f) if f > 0.0));
        let ExprKind::BadLit(b) = float_literal("2.4e-324") else {
            panic!()
        };
        assert_eq!(b.negated(), None);
        assert_eq!(b.diagnostic(Span::new(0, 8)).code, codes::OUT_OF_RANGE);
    }
}
