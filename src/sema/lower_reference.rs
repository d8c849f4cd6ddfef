//! The `reference` item (docs/references.md): the language, the file's form, the tolerance keys
//! and their values, and whether the task may name a reference at all (a template body or a
//! pipeline without an epilogue map already has mpkc's float64 one; a helper has no kernel to
//! check). The file itself is
//! looked up by the driver, which knows the contract's path (`driver::reference`).

use super::collect::Collected;
use super::lower::Cx;
use crate::diag::{codes, Diagnostic};
use crate::front::ast::{self, ExprKind, Value};
use crate::ir::{BodyIr, Family, ReferenceFile, ReferenceIr, Tolerance, ToleranceIr};

/// The tolerance keys, as a message lists them.
pub const KEYS: &str = "`rel_l2`, `atol`, `rtol` or `exact`";

/// Lowers `reference …` into `cx.ir.reference`, reporting E0018 for misuse (E0002 for an output
/// the contract does not declare, E0005 for a value of the wrong type).
pub(super) fn reference(cx: &mut Cx<'_>, c: &Collected<'_>) {
    let Some(r) = c.reference else { return };
    let mut ok = true;
    if r.language.node != "python" {
        ok = false;
        cx.report(
            Diagnostic::error(
                codes::REFERENCE,
                format!("unknown reference language `{}`", r.language.node),
            )
            .primary(r.language.span, "not a language mpkc runs")
            .help("write `reference python \"FILE.py\" fn NAME`: verify runs Python references"),
        );
    }
    if !r.path.node.ends_with(".py") || r.path.node.len() <= 3 {
        ok = false;
        cx.report(
            Diagnostic::error(
                codes::REFERENCE,
                format!("reference file `{}` is not a `.py` file", r.path.node),
            )
            .primary(r.path.span, "verify imports this file as a Python module")
            .help("name a Python file relative to the contract, e.g. `\"ref/rope.py\"`"),
        );
    }
    let owner = match (&cx.ir.body, cx.ir.family) {
        (Some(BodyIr::Template { name, span, .. }), _) => Some((
            *span,
            format!("body template `{name}` has mpkc's float64 reference"),
        )),
        // A pipeline's inline body is its epilogue map (docs/language.md, "Epilogue map"): the
        // contract's own CUDA, which only a reference of its own can state.
        (None, Family::Pipeline) => Some((
            cx.ir.family_span,
            "a pipeline without an epilogue map has mpkc's float64 reference of the linear engine"
                .to_string(),
        )),
        (_, Family::Helper) => Some((
            cx.ir.family_span,
            "a helper has no kernel of its own for verify to run".to_string(),
        )),
        _ => None,
    };
    if let Some((span, why)) = owner {
        ok = false;
        cx.report(
            Diagnostic::error(
                codes::REFERENCE,
                format!("task `{}` cannot name a reference", cx.ir.name),
            )
            .primary(r.span, "this reference")
            .secondary(span, why)
            .help("a `reference` checks an inline `body cuda { … }`; remove it here"),
        );
    }
    let mut tolerances = Vec::new();
    for (key, value) in &r.tolerances {
        if let Some(t) = tolerance(cx, c, key, value) {
            tolerances.push(t);
        } else {
            ok = false;
        }
    }
    if !conflicts(cx, &tolerances) || !ok {
        return;
    }
    cx.ir.reference = Some(ReferenceIr {
        path: r.path.node.clone(),
        path_span: r.path.span,
        function: r.function.node.clone(),
        tolerances,
        span: r.span,
        file: ReferenceFile::Unresolved,
    });
}

/// One `KEY = VALUE`.
fn tolerance(
    cx: &mut Cx<'_>,
    c: &Collected<'_>,
    key: &ast::Ident,
    value: &Value,
) -> Option<ToleranceIr> {
    let (output, kind) = match key.node.split_once('.') {
        Some((o, k)) => (Some(o), k),
        None => (None, key.node.as_str()),
    };
    if let Some(o) = output {
        // What the reference returns: the tensors the task writes, `out` and `inout`, as
        // declared (one whose extents did not lower, at a rejected param value, is still
        // declared: its own diagnostic says why).
        let declared = c
            .tensors
            .iter()
            .any(|t| t.name.node == o && t.direction.node != ast::Direction::In);
        if !declared && !cx.ir.written().any(|(_, t)| t.name == o) {
            let outs: Vec<String> = c
                .tensors
                .iter()
                .filter(|t| t.direction.node != ast::Direction::In)
                .map(|t| format!("`{}`", t.name.node))
                .collect();
            let input = c
                .tensors
                .iter()
                .any(|t| t.name.node == o && t.direction.node == ast::Direction::In);
            cx.report(
                Diagnostic::error(
                    codes::UNKNOWN_NAME,
                    if input {
                        format!("`{o}` is an input: a tolerance compares an output")
                    } else {
                        format!("cannot find output tensor `{o}`")
                    },
                )
                .primary(
                    key.span,
                    if input {
                        "the reference returns the outputs, not this input"
                    } else {
                        "no output of this name"
                    },
                )
                    .help(format!(
                        "a tolerance names an output of the task ({}), or none to apply to every output",
                        if outs.is_empty() { "none declared".into() } else { outs.join(", ") }
                    )),
            );
            return None;
        }
    }
    let number = |cx: &mut Cx<'_>| -> Option<f64> {
        let v = match value {
            Value::Expr(e) => match &e.kind {
                ExprKind::Int(i) => Some(*i as f64),
                ExprKind::Float(f) => Some(*f),
                // A literal no f64 holds (`1e-400`): its own diagnostic says why.
                ExprKind::BadLit(b) => {
                    cx.report(b.diagnostic(e.span));
                    return None;
                }
                _ => None,
            },
            Value::Bool(..) => None,
        };
        let (takes, label) = match v {
            Some(v) if v.is_finite() && v >= 0.0 => return Some(v),
            Some(v) if !v.is_finite() => {
                ("finite number", "beyond the largest f64 (about 1.8e308)")
            }
            _ => ("non-negative number", "not a non-negative number literal"),
        };
        cx.report(
            Diagnostic::error(codes::TYPE_MISMATCH, format!("`{kind}` takes a {takes}"))
                .primary(value.span(), label)
                .help(format!("write e.g. `{kind} = 1e-2`")),
        );
        None
    };
    let kind = match kind {
        "rel_l2" => {
            let v = number(cx)?;
            if v == 0.0 {
                // The comparison is ‖out − ref‖₂ / ‖ref‖₂ < value (docs/references.md).
                cx.report(
                    Diagnostic::error(codes::REFERENCE, "`rel_l2 = 0` can never pass")
                        .primary(value.span(), "no relative L2 error is below 0")
                        .help("give a bound above zero (`rel_l2 = 1e-3`), or `exact = true` for bit-exact outputs"),
                );
                return None;
            }
            Tolerance::RelL2(v)
        }
        "atol" => Tolerance::Atol(number(cx)?),
        "rtol" => Tolerance::Rtol(number(cx)?),
        "exact" => match value {
            Value::Bool(true, _) => Tolerance::Exact,
            Value::Bool(false, s) => {
                cx.report(
                    Diagnostic::error(codes::REFERENCE, "`exact = false` says nothing")
                        .primary(*s, "the comparison is then the default one")
                        .help("remove it, or give the tolerance: `rel_l2 = …` or `atol = …, rtol = …`"),
                );
                return None;
            }
            Value::Expr(e) => {
                cx.report(
                    Diagnostic::error(codes::TYPE_MISMATCH, "`exact` takes `true`")
                        .primary(e.span, "not `true`")
                        .help("write `exact = true`"),
                );
                return None;
            }
        },
        other => {
            cx.report(
                Diagnostic::error(codes::REFERENCE, format!("unknown tolerance key `{other}`"))
                    .primary(key.span, "not a tolerance")
                    .help(format!(
                    "a tolerance is {KEYS}, optionally after an output's name (`y.rel_l2 = 2e-2`)"
                )),
            );
            return None;
        }
    };
    Some(ToleranceIr {
        output: output.map(str::to_string),
        kind,
        span: key.span.to(value.span()),
    })
}

/// Reports a `rel_l2` and an `atol`/`rtol`, or an `exact` and a number, for the same output (or
/// both for every output). Returns true when there is none.
fn conflicts(cx: &mut Cx<'_>, ts: &[ToleranceIr]) -> bool {
    let class = |t: &Tolerance| match t {
        Tolerance::RelL2(_) => 0,
        Tolerance::Atol(_) | Tolerance::Rtol(_) => 1,
        Tolerance::Exact => 2,
    };
    let mut clean = true;
    for (i, a) in ts.iter().enumerate() {
        // The same key twice for one output: which value holds?
        if let Some(b) = ts[..i].iter().find(|b| {
            b.output == a.output
                && std::mem::discriminant(&b.kind) == std::mem::discriminant(&a.kind)
        }) {
            clean = false;
            let key = match &a.output {
                Some(o) => format!("{o}.{}", a.kind.key()),
                None => a.kind.key().to_string(),
            };
            cx.report(
                Diagnostic::error(
                    codes::DUPLICATE,
                    format!("tolerance `{key}` is given twice"),
                )
                .primary(a.span, "given again here")
                .secondary(b.span, "first given here")
                .help(format!("keep one `{key} = …`")),
            );
            continue;
        }
        if let Some(b) = ts[..i]
            .iter()
            .find(|b| b.output == a.output && class(&b.kind) != class(&a.kind))
        {
            clean = false;
            cx.report(
                Diagnostic::error(
                    codes::REFERENCE,
                    "a reference's tolerances for one output disagree on the comparison",
                )
                .primary(a.span, "this comparison")
                .secondary(b.span, "and this one")
                .help(
                    "give one of `rel_l2 = …`, `atol = …, rtol = …` or `exact = true` per output",
                ),
            );
        }
    }
    clean
}
