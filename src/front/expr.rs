//! Parse tree → AST for expressions: precedence climbing over the grammar's flat
//! `prefix* primary (infix prefix* primary)*` sequence, with a bounded nesting depth (one
//! `E0004` per outermost expression that is too deep).

use super::ast::*;
use super::build::{ident, is_punct, span_of, Diags};
use super::parse::Rule;
use crate::diag::{codes, Diagnostic};
use crate::span::Span;
use pest::iterators::Pair;

/// Expressions are bounded so that building and evaluating them cannot exhaust the stack.
const MAX_EXPR_TERMS: usize = 256;

/// Deepest nesting of parentheses and calls.
const MAX_EXPR_DEPTH: usize = 64;

thread_local! {
    static EXPR_DEPTH: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// Whether the expression being built (the outermost one) has reported its nesting already:
    /// every argument of a call at the limit is too deep, but that is one problem, one report.
    static DEPTH_REPORTED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn too_complex(span: Span, what: String, d: &mut Diags) -> Expr {
    d.push(
        Diagnostic::error(codes::ARITH, format!("expression too complex: {what}"))
            .primary(span, "here")
            .help("split it with params, or use `min`/`max`/`align_up` on fewer terms"),
    );
    Expr {
        kind: ExprKind::Int(0),
        span,
    }
}

pub(super) fn build_expr(p: Pair<'_, Rule>, d: &mut Diags) -> Expr {
    let span = span_of(&p);
    // Precedence climbing over the flat `prefix* primary (infix prefix* primary)*` sequence.
    let parts: Vec<Pair<'_, Rule>> = p.into_inner().collect();
    if parts.len() > MAX_EXPR_TERMS {
        return too_complex(
            span,
            format!(
                "{} operators and operands, at most {MAX_EXPR_TERMS}",
                parts.len()
            ),
            d,
        );
    }
    let depth = EXPR_DEPTH.with(|c| c.get());
    if depth == 0 {
        DEPTH_REPORTED.with(|r| r.set(false));
    }
    if depth >= MAX_EXPR_DEPTH {
        if DEPTH_REPORTED.with(|r| r.replace(true)) {
            return Expr {
                kind: ExprKind::Int(0),
                span,
            };
        }
        return too_complex(span, format!("nested more than {MAX_EXPR_DEPTH} deep"), d);
    }
    EXPR_DEPTH.with(|c| c.set(depth + 1));
    let mut pos = 0;
    let e = climb(&parts, &mut pos, 0, d);
    EXPR_DEPTH.with(|c| c.set(depth));
    e
}

fn prec(r: Rule) -> Option<(u8, BinOp)> {
    match r {
        Rule::add => Some((1, BinOp::Add)),
        Rule::sub => Some((1, BinOp::Sub)),
        Rule::mul => Some((2, BinOp::Mul)),
        Rule::div => Some((2, BinOp::Div)),
        Rule::rem => Some((2, BinOp::Rem)),
        _ => None,
    }
}

fn climb(parts: &[Pair<'_, Rule>], pos: &mut usize, min_prec: u8, d: &mut Diags) -> Expr {
    let mut lhs = unary(parts, pos, d);
    while let Some(op_pair) = parts.get(*pos) {
        let Some((p, op)) = prec(op_pair.as_rule()) else {
            break;
        };
        if p < min_prec {
            break;
        }
        *pos += 1;
        let rhs = climb(parts, pos, p + 1, d);
        let span = lhs.span.to(rhs.span);
        lhs = Expr {
            kind: ExprKind::Binary(op, Box::new(lhs), Box::new(rhs)),
            span,
        };
    }
    lhs
}

fn unary(parts: &[Pair<'_, Rule>], pos: &mut usize, d: &mut Diags) -> Expr {
    let p = parts
        .get(*pos)
        .cloned()
        .unwrap_or_else(|| unreachable!("expr operand"));
    *pos += 1;
    if p.as_rule() == Rule::neg {
        let inner = unary(parts, pos, d);
        let span = span_of(&p).to(inner.span);
        return Expr {
            kind: ExprKind::Neg(Box::new(inner)),
            span,
        };
    }
    build_primary(p, d)
}

fn build_primary(p: Pair<'_, Rule>, d: &mut Diags) -> Expr {
    let span = span_of(&p);
    let kind = match p.as_rule() {
        Rule::int_lit => super::literal::int_literal(p.as_str()),
        Rule::float_lit => super::literal::float_literal(p.as_str()),
        Rule::path => ExprKind::Path(p.into_inner().map(ident).collect()),
        Rule::paren_expr => {
            let e = p
                .into_inner()
                .find(|c| c.as_rule() == Rule::expr)
                .unwrap_or_else(|| unreachable!("paren expr"));
            return Expr {
                span,
                ..build_expr(e, d)
            };
        }
        Rule::call => {
            let mut i = p.into_inner().filter(|c| !is_punct(c.as_rule()));
            let f = ident(i.next().unwrap_or_else(|| unreachable!("call name")));
            ExprKind::Call(f, i.map(|a| build_expr(a, d)).collect())
        }
        r => unreachable!("{r:?} in build_primary"),
    };
    Expr { kind, span }
}
