//! Constant evaluation of integer expressions with checked arithmetic.
//!
//! Names resolve to params (integers only here), `stages`, `stage` (inside a stage array) and
//! `tile.M` / `tile.N` / `tile.K`. Built-ins: `align_up(x, a)`, `ceil_div(a, b)`, `min(…)`,
//! `max(…)`. Overflow, division by zero and non-positive alignments are `E0004` diagnostics.
//!
//! Every operation is computed exactly (in `i128`, which holds any product or sum of two `i64`)
//! and overflows only when its result lies outside `i64`: `ceil_div(9223372036854775807, 2)` is
//! 4611686018427387904 and `(-9223372036854775807 - 1) % -1` is 0. `/` and `%` truncate toward
//! zero, as in C++; `ceil_div(a, b)` is ⌈a / b⌉ and `align_up(x, a)` is `ceil_div(x, a) * a`.

use crate::diag::{codes, Diagnostic};
use crate::front::ast::{BinOp, Expr, ExprKind};
use crate::ir::{ParamIr, ParamValue, TileIr};
use indexmap::IndexMap;

/// What names mean while evaluating.
#[derive(Clone, Copy, Default)]
pub struct Env<'a> {
    /// Params evaluated so far.
    pub params: Option<&'a IndexMap<String, ParamIr>>,
    /// `stages`, once known.
    pub stages: Option<i64>,
    /// `stage`, inside a stage array.
    pub stage: Option<i64>,
    /// The tile, once known.
    pub tile: Option<&'a TileIr>,
    /// Names whose value was rejected (params, `stages`, `tile.M`/`tile.N`/`tile.K`): uses of
    /// them are follow-on errors.
    pub poisoned: Option<&'a [String]>,
    /// While params are evaluated in declaration order: the names and declarations of those not
    /// evaluated yet, the first being the param whose value, range or default is being
    /// evaluated (with their name spans). A use of one is E0002 saying so (a value may use only
    /// earlier params), not "cannot find".
    pub unevaluated: Option<&'a [(String, crate::span::Span)]>,
}

/// The result of evaluating: integer or float (floats only where a param value is expected).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Num {
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
}

impl<'a> Env<'a> {
    /// Evaluates `e` as an integer; floats are an `E0005` error.
    pub fn int(&self, e: &Expr) -> Result<i64, Diagnostic> {
        match self.num(e)? {
            Num::Int(v) => Ok(v),
            Num::Float(f) => Err(Diagnostic::error(
                codes::TYPE_MISMATCH,
                // An `f32` param's value is held as its f32 rounding: shown as the f32 it is
                // (`1e-6`, not `9.999999974752427e-7`).
                format!(
                    "expected an integer, found the float {}",
                    super::param_ty::float_text_in(f, f64::from(f as f32) == f)
                ),
            )
            .primary(e.span, "a float here")
            .help("sizes, counts and extents are integers; write an integer expression")),
        }
    }

    /// Evaluates `e` as an integer that must be ≥ 0 (`what` names the quantity in the message).
    pub fn non_negative(&self, e: &Expr, what: &str) -> Result<i64, Diagnostic> {
        let v = self.int(e)?;
        if v < 0 {
            return Err(Diagnostic::error(
                codes::ARITH,
                format!("{what} is {v}, but it may not be negative"),
            )
            .primary(e.span, format!("evaluates to {v}"))
            .help(format!("make the {what} zero or more")));
        }
        Ok(v)
    }

    /// Evaluates `e` to an integer or float.
    pub fn num(&self, e: &Expr) -> Result<Num, Diagnostic> {
        match &e.kind {
            ExprKind::Int(v) => Ok(Num::Int(*v)),
            ExprKind::Float(f) => Ok(Num::Float(*f)),
            ExprKind::BadLit(b) => Err(b.diagnostic(e.span)),
            ExprKind::Neg(inner) => match &inner.kind {
                ExprKind::BadLit(b) => b
                    .negated()
                    .map(Num::Int)
                    .ok_or_else(|| b.diagnostic(inner.span)),
                _ => self.neg(e, inner),
            },
            ExprKind::Path(parts) => self.path(e, parts),
            ExprKind::Binary(op, l, r) => {
                let (a, b) = (self.num(l)?, self.num(r)?);
                match (a, b) {
                    (Num::Int(a), Num::Int(b)) => self.int_binop(e, *op, a, b, r).map(Num::Int),
                    (a, b) => {
                        let (a, b) = (as_f64(a), as_f64(b));
                        Ok(Num::Float(match op {
                            BinOp::Add => a + b,
                            BinOp::Sub => a - b,
                            BinOp::Mul => a * b,
                            BinOp::Div => a / b,
                            BinOp::Rem => a % b,
                        }))
                    }
                }
            }
            ExprKind::Call(f, args) => self.call(e, f, args).map(Num::Int),
        }
    }

    /// True when `name` (a param, `stages` or `tile.M`/`tile.N`/`tile.K`) was rejected.
    fn is_poisoned(&self, name: &str) -> bool {
        self.poisoned.is_some_and(|p| p.iter().any(|x| x == name))
    }

    fn neg(&self, e: &Expr, inner: &Expr) -> Result<Num, Diagnostic> {
        match self.num(inner)? {
            Num::Int(v) => exact(e, -i128::from(v), || format!("-({v})")).map(Num::Int),
            Num::Float(f) => Ok(Num::Float(-f)),
        }
    }

    fn int_binop(
        &self,
        e: &Expr,
        op: BinOp,
        a: i64,
        b: i64,
        rhs: &Expr,
    ) -> Result<i64, Diagnostic> {
        if matches!(op, BinOp::Div | BinOp::Rem) && b == 0 {
            return Err(Diagnostic::error(
                codes::ARITH,
                format!("division by zero in `{a} {} 0`", op.symbol()),
            )
            .primary(rhs.span, "evaluates to 0")
            .secondary(e.span, "in this expression")
            .help("make the divisor non-zero"));
        }
        let (x, y) = (i128::from(a), i128::from(b));
        let r = match op {
            BinOp::Add => x + y,
            BinOp::Sub => x - y,
            BinOp::Mul => x * y,
            BinOp::Div => x / y,
            BinOp::Rem => x % y,
        };
        exact(e, r, || format!("{a} {} {b}", op.symbol()))
    }

    fn path(&self, e: &Expr, parts: &[crate::front::ast::Ident]) -> Result<Num, Diagnostic> {
        let first = &parts[0].node;
        if parts.len() == 2 {
            if first != "tile" {
                return Err(unknown(
                    e,
                    &format!("{first}.{}", parts[1].node),
                    "only `tile.M`, `tile.N` and `tile.K` are dotted names",
                ));
            }
            let dim = match parts[1].node.as_str() {
                "M" | "m" => Some("tile.M"),
                "N" | "n" => Some("tile.N"),
                "K" | "k" => Some("tile.K"),
                _ => None,
            };
            if let Some(dim) = dim.filter(|d| self.is_poisoned(d)) {
                return Err(Diagnostic::error(
                    crate::diag::FOLLOW_ON,
                    format!("`{dim}` has no usable value"),
                ));
            }
            let Some(tile) = self.tile else {
                return Err(unknown(
                    e,
                    &format!("tile.{}", parts[1].node),
                    "declare `tile M .., N .., K ..` before using it",
                ));
            };
            let v = match parts[1].node.as_str() {
                "M" | "m" => tile.m,
                "N" | "n" => tile.n,
                "K" | "k" => tile.k,
                _ => None,
            };
            return v.map(Num::Int).ok_or_else(|| {
                unknown(
                    e,
                    &format!("tile.{}", parts[1].node),
                    "the tile declares no such dimension",
                )
            });
        }
        match first.as_str() {
            // A param may be declared with one of these names, but in an expression the name is
            // the contract's own: say so, not that nothing of the name exists.
            word @ ("stage" | "stages") if self.params.is_some_and(|p| p.contains_key(word)) => {
                Err(Diagnostic::error(
                    codes::NAME_CLASH,
                    format!(
                        "`{word}` in an expression is the contract's own, not the param `{word}`"
                    ),
                )
                .primary(e.span, format!("the task's `{word}`, not the param"))
                .help(format!(
                    "rename the param (`{word}` names the {} in every expression)",
                    if word == "stage" {
                        "stage index of a stage array `region NAME[stage]`"
                    } else {
                        "task's `stages N`"
                    }
                )))
            }
            "stage" => self.stage.map(Num::Int).ok_or_else(|| {
                unknown(
                    e,
                    "stage",
                    "`stage` is bound only inside a stage array `region NAME[stage] { … }`",
                )
            }),
            "stages"
                if self
                    .poisoned
                    .is_some_and(|p| p.iter().any(|x| x == "stages")) =>
            {
                Err(Diagnostic::error(
                    crate::diag::FOLLOW_ON,
                    "`stages` has no usable value",
                ))
            }
            "stages" => self
                .stages
                .map(Num::Int)
                .ok_or_else(|| unknown(e, "stages", "declare `stages N` in the task")),
            name if self.poisoned.is_some_and(|p| p.iter().any(|x| x == name)) => {
                Err(Diagnostic::error(
                    crate::diag::FOLLOW_ON,
                    format!("`{name}` has no usable value"),
                ))
            }
            name => match self.params.and_then(|p| p.get(name)) {
                Some(p) => match p.value {
                    ParamValue::Int(v) => Ok(Num::Int(v)),
                    ParamValue::Float(f) => Ok(Num::Float(f)),
                    ParamValue::Bool(_) => Err(Diagnostic::error(
                        codes::TYPE_MISMATCH,
                        format!("param `{name}` is a bool and cannot be used in arithmetic"),
                    )
                    .primary(e.span, "a bool here")
                    .secondary(p.span, "declared here")
                    .help("use an `int` param")),
                },
                None if self.later(name).is_some() => Err(self.not_yet(e, name)),
                None => {
                    let known: Vec<String> = self
                        .params
                        .map(|p| p.keys().map(|k| format!("`{k}`")).collect())
                        .unwrap_or_default();
                    let mut names: Vec<&str> = self
                        .params
                        .map(|p| p.keys().map(String::as_str).collect())
                        .unwrap_or_default();
                    names.extend(["stages", "stage"]);
                    let help = if let Some(s) = crate::diag::suggest(name, names) {
                        format!("did you mean `{s}`?")
                    } else if known.is_empty() {
                        "declare it with `param NAME: int = VALUE` before its first use".to_string()
                    } else {
                        format!("params in scope: {}", known.join(", "))
                    };
                    Err(unknown(e, name, &help))
                }
            },
        }
    }

    /// The declaration of `name` when it is a param not evaluated yet ([`Env::unevaluated`]).
    fn later(&self, name: &str) -> Option<crate::span::Span> {
        self.unevaluated?
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, s)| *s)
    }

    /// E0002 for a use of param `name`, declared but not evaluated yet: the param being
    /// evaluated itself, or one declared after it. Values are evaluated in declaration order
    /// (README, "param"), so the help moves the declaration or asks for a number.
    fn not_yet(&self, e: &Expr, name: &str) -> Diagnostic {
        let decl = self.later(name).unwrap_or(e.span);
        let current = self.unevaluated.and_then(|u| u.first());
        match current {
            Some((cur, _)) if cur == name => Diagnostic::error(
                codes::UNKNOWN_NAME,
                format!("param `{name}` is used in its own value"),
            )
            .primary(e.span, "refers to itself")
            .note("a param's value, range and default may use only params declared before it")
            .help(format!("write a number in place of `{name}`, or an expression over params declared before `{name}`")),
            Some((cur, cur_span)) => {
                let mut d = Diagnostic::error(
                    codes::UNKNOWN_NAME,
                    format!("param `{name}` is declared after `{cur}`, which uses it"),
                )
                .primary(e.span, format!("`{name}` has no value yet here"));
                if *cur_span != e.span {
                    d = d.secondary(*cur_span, format!("`{cur}` is evaluated first"));
                }
                d.secondary(decl, format!("`{name}` is declared later"))
                    .note("params are evaluated in declaration order: a value, range or default may use only params declared before it")
                    .help(format!("declare `{name}` before `{cur}`, or write a number in place of `{name}`"))
            }
            None => unknown(e, name, "declare it before its first use"),
        }
    }

    fn call(
        &self,
        e: &Expr,
        f: &crate::front::ast::Ident,
        args: &[Expr],
    ) -> Result<i64, Diagnostic> {
        let vals = args
            .iter()
            .map(|a| self.int(a))
            .collect::<Result<Vec<_>, _>>()?;
        let arity = |n: usize| -> Result<(), Diagnostic> {
            if vals.len() != n {
                Err(Diagnostic::error(
                    codes::TYPE_MISMATCH,
                    format!(
                        "`{}` takes {n} arguments but {} were given",
                        f.node,
                        vals.len()
                    ),
                )
                .primary(e.span, "wrong number of arguments")
                .help(format!(
                    "write `{}({})`",
                    f.node,
                    if n == 2 { "a, b" } else { "a" }
                )))
            } else {
                Ok(())
            }
        };
        match f.node.as_str() {
            "align_up" => {
                arity(2)?;
                let (x, a) = (vals[0], vals[1]);
                if a <= 0 {
                    return Err(Diagnostic::error(
                        codes::ARITH,
                        format!("`align_up` alignment is {a}; it must be positive"),
                    )
                    .primary(args[1].span, format!("evaluates to {a}"))
                    .help("align to a positive power of two such as 16, 128 or 1024"));
                }
                let r = ceil_div(x, a) * i128::from(a);
                exact(e, r, || format!("align_up({x}, {a})"))
            }
            "ceil_div" => {
                arity(2)?;
                let (a, b) = (vals[0], vals[1]);
                if b <= 0 {
                    return Err(Diagnostic::error(
                        codes::ARITH,
                        format!("`ceil_div` divisor is {b}; it must be positive"),
                    )
                    .primary(args[1].span, format!("evaluates to {b}"))
                    .help("divide by a positive number"));
                }
                exact(e, ceil_div(a, b), || format!("ceil_div({a}, {b})"))
            }
            "min" | "max" => {
                if vals.is_empty() {
                    return Err(Diagnostic::error(
                        codes::TYPE_MISMATCH,
                        format!("`{}` needs at least one argument", f.node),
                    )
                    .primary(e.span, "no arguments")
                    .help(format!("write `{}(a, b)`", f.node)));
                }
                let it = vals.iter().copied();
                Ok(if f.node == "min" { it.min() } else { it.max() }.unwrap_or(0))
            }
            other => Err(Diagnostic::error(
                codes::UNKNOWN_NAME,
                format!("unknown function `{other}`"),
            )
            .primary(f.span, "not a built-in")
            .help("the built-ins are `align_up`, `ceil_div`, `min` and `max`")),
        }
    }
}

fn as_f64(n: Num) -> f64 {
    match n {
        Num::Int(v) => v as f64,
        Num::Float(f) => f,
    }
}

/// ⌈a / b⌉ for `b > 0` (checked by the callers), exactly.
fn ceil_div(a: i64, b: i64) -> i128 {
    i128::from(crate::ir::exact::ceil_div(a, b))
}

/// `r`, the exact result of evaluating `e`, as an `i64`; outside `i64` it is an overflow of `what`.
fn exact(e: &Expr, r: i128, what: impl FnOnce() -> String) -> Result<i64, Diagnostic> {
    i64::try_from(r).map_err(|_| overflow(e, what(), r))
}

fn overflow(e: &Expr, what: String, exact: i128) -> Diagnostic {
    Diagnostic::error(
        codes::ARITH,
        format!("integer overflow evaluating `{what}`: the result {exact} does not fit in 64 bits"),
    )
    .primary(e.span, "overflows 64-bit signed arithmetic")
    .help("sizes are bytes of a 224 KiB pool; check the units of the operands")
}

fn unknown(e: &Expr, name: &str, help: &str) -> Diagnostic {
    Diagnostic::error(
        codes::UNKNOWN_NAME,
        format!("cannot find `{name}` in this task"),
    )
    .primary(e.span, "not found")
    .help(help.to_string())
}
