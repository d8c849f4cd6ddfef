//! The `require` item's syntax tree (docs/language.md, "### `require`"): a relation between
//! integer expressions of the params, checked by `sema::require` (E0032).

use super::ast::Expr;
use crate::span::{Span, Spanned};

/// `require A OP B [, "message"]`: a relation between integer expressions of the params (and
/// `tile.M/N/K`, `stages`) that every instance must keep (docs/language.md, "Requirements";
/// E0032).
#[derive(Clone, Debug)]
pub struct Require {
    /// The left side.
    pub lhs: Expr,
    /// The comparison.
    pub op: CmpOp,
    /// Its span.
    pub op_span: Span,
    /// The right side.
    pub rhs: Expr,
    /// What the relation is for, as written (unquoted), with its span.
    pub message: Option<Spanned<String>>,
    /// The whole item.
    pub span: Span,
}

/// A comparison of a `require`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    /// `==`.
    Eq,
    /// `!=`.
    Ne,
    /// `<`.
    Lt,
    /// `<=`.
    Le,
    /// `>`.
    Gt,
    /// `>=`.
    Ge,
}

impl CmpOp {
    /// Parses the operator as written.
    pub fn parse(s: &str) -> Option<CmpOp> {
        Some(match s {
            "==" => CmpOp::Eq,
            "!=" => CmpOp::Ne,
            "<" => CmpOp::Lt,
            "<=" => CmpOp::Le,
            ">" => CmpOp::Gt,
            ">=" => CmpOp::Ge,
            _ => return None,
        })
    }

    /// The operator as written.
    pub fn as_str(self) -> &'static str {
        match self {
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }

    /// Whether `a OP b` holds.
    pub fn holds(self, a: i64, b: i64) -> bool {
        match self {
            CmpOp::Eq => a == b,
            CmpOp::Ne => a != b,
            CmpOp::Lt => a < b,
            CmpOp::Le => a <= b,
            CmpOp::Gt => a > b,
            CmpOp::Ge => a >= b,
        }
    }
}
