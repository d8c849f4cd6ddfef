//! The body (template or inline CUDA) and the task granularity.

use super::collect::Collected;
use super::lower::Cx;
use crate::diag::{codes, Diagnostic};
use crate::front::ast::{self, ExprKind, GranValue};
use crate::ir::*;

/// Resolves the body's tensors and scalars. Template-specific checks (arity, dtypes, shapes,
/// regions) belong to `valid`, which knows the template catalogue.
pub(super) fn body(cx: &mut Cx<'_>, c: &Collected<'_>) {
    let Some(b) = c.body else {
        if cx.ir.family.is_consumer_only() {
            cx.report(
                Diagnostic::error(
                    codes::MISSING,
                    format!("consumer task `{}` has no body", cx.ir.name),
                )
                .primary(cx.ir.name_span, "no `body` item")
                .help(
                    "add a stdlib body such as `body rmsnorm(x, w -> y; eps)` or `body cuda { … }`",
                ),
            );
        }
        return;
    };
    cx.ir.body = match b {
        ast::Body::Cuda { .. } => cuda(b),
        ast::Body::Template {
            name,
            inputs,
            outputs,
            scalars,
            span,
        } => {
            let ins: Option<Vec<_>> = inputs.iter().map(|t| cx.tensor(t)).collect();
            let outs: Option<Vec<_>> = outputs.iter().map(|t| cx.tensor(t)).collect();
            let mut ok = true;
            for s in scalars {
                if !cx.ir.params.contains_key(&s.node) {
                    ok = false;
                    let declared = c.params.iter().any(|p| p.name.node == s.node);
                    if !declared {
                        cx.report(
                            Diagnostic::error(
                                codes::UNKNOWN_NAME,
                                format!("cannot find param `{}`", s.node),
                            )
                            .primary(s.span, "no param of this name")
                            .help("body scalars after `;` are params of the task"),
                        );
                    }
                }
            }
            match (ins, outs, ok) {
                (Some(inputs), Some(outputs), true) => Some(BodyIr::Template {
                    name: name.node.clone(),
                    inputs,
                    outputs,
                    scalars: scalars.iter().map(|s| s.node.clone()).collect(),
                    span: *span,
                }),
                _ => None,
            }
        }
    };
}

/// `body loader cuda { … }`: kept as written; which families take it, and that a ring needs one,
/// is `valid`'s (E0011, E0007, E0014).
pub(super) fn loader_body(cx: &mut Cx<'_>, c: &Collected<'_>) {
    cx.ir.loader_body = c.loader_body.and_then(cuda);
}

/// An inline `body … cuda { … }` as written; `None` for a template.
fn cuda(b: &ast::Body) -> Option<BodyIr> {
    match b {
        ast::Body::Cuda {
            code,
            code_span,
            span,
        } => Some(BodyIr::Cuda {
            code: code.clone(),
            code_span: *code_span,
            span: *span,
        }),
        ast::Body::Template { .. } => None,
    }
}

/// `per_tile(tasks N, tiles_per_task T)` (both default 1) or
/// `grid_wide(barrier NAME, skip_after_step0, justification "…")`.
pub(super) fn granularity(cx: &mut Cx<'_>, c: &Collected<'_>) {
    let Some(g) = c.granularity else { return };
    match g.kind.node.as_str() {
        "per_tile" => {
            let (mut tasks, mut tpt) = (1, 1);
            repeated_args(cx, g);
            for a in &g.args {
                let v = match (&a.value, a.key.node.as_str()) {
                    // Any integer: below 1 is E0006 below, one message for 0 and negatives.
                    (Some(GranValue::Expr(e)), "tasks" | "tiles_per_task") => cx.int(e),
                    _ => {
                        cx.report(bad_arg(a, "`per_tile` takes `tasks N` and `tiles_per_task N`"));
                        None
                    }
                };
                match (a.key.node.as_str(), v) {
                    ("tasks", Some(v)) => tasks = v,
                    ("tiles_per_task", Some(v)) => tpt = v,
                    _ => {}
                }
            }
            if tasks > i64::from(i32::MAX) {
                cx.report(
                    Diagnostic::error(codes::OUT_OF_RANGE, format!("`per_tile` asks for {tasks} tasks; task offsets are 32-bit"))
                        .primary(g.span, "too many tasks")
                        .help("use at most 2147483647 tasks"),
                );
                return;
            }
            if tasks < 1 || tpt < 1 {
                cx.report(
                    Diagnostic::error(codes::OUT_OF_RANGE, format!("`per_tile` needs at least one task and one tile per task; got tasks {tasks}, tiles_per_task {tpt}"))
                        .primary(g.span, "here")
                        .help("use `per_tile(tasks 1)` or more"),
                );
                return;
            }
            cx.ir.granularity = GranularityIr::PerTile { tasks, tiles_per_task: tpt, span: g.span };
        }
        "grid_wide" => {
            let mut skip = false;
            let mut just = None;
            let mut barrier = None;
            repeated_args(cx, g);
            for a in &g.args {
                match (a.key.node.as_str(), &a.value) {
                    ("skip_after_step0", None) => skip = true,
                    ("justification", Some(GranValue::Str(s))) => just = Some(s.node.clone()),
                    ("barrier", Some(GranValue::Expr(e))) if matches!(&e.kind, ExprKind::Path(p) if p.len() == 1) => {
                        if let ExprKind::Path(p) = &e.kind {
                            barrier = Some((p[0].node.clone(), e.span));
                        }
                    }
                    ("barrier", _) => cx.report(
                        Diagnostic::error(codes::BAD_KEYWORD, "`barrier` takes the name of a declared named barrier")
                            .primary(a.span, "not a barrier's name")
                            .help("declare `barrier grid = named(ID, threads 128)` and write `barrier grid`"),
                    ),
                    _ => cx.report(bad_arg(a, "`grid_wide` takes `barrier NAME`, `skip_after_step0` and `justification \"…\"`")),
                }
            }
            cx.ir.granularity = GranularityIr::GridWide { skip_after_step0: skip, barrier, justification: just, span: g.span };
        }
        other => cx.report(
            Diagnostic::error(codes::BAD_KEYWORD, format!("unknown granularity `{other}`"))
                .primary(g.kind.span, "not a granularity")
                .help("granularities are `per_tile(tasks N)` and `grid_wide(barrier NAME, skip_after_step0, justification \"…\")`"),
        ),
    }
}

/// E0003: a granularity argument written twice (the last would silently win).
fn repeated_args(cx: &mut Cx<'_>, g: &ast::Granularity) {
    for (i, a) in g.args.iter().enumerate() {
        if let Some(first) = g.args[..i].iter().find(|b| b.key.node == a.key.node) {
            cx.report(
                Diagnostic::error(
                    codes::DUPLICATE,
                    format!("granularity argument `{}` is given twice", a.key.node),
                )
                .primary(a.span, "again here")
                .secondary(first.span, "first here")
                .help("write each argument once"),
            );
        }
    }
}

fn bad_arg(a: &ast::GranArg, help: &str) -> Diagnostic {
    Diagnostic::error(
        codes::BAD_KEYWORD,
        format!("unexpected granularity argument `{}`", a.key.node),
    )
    .primary(a.span, "not understood here")
    .help(help.to_string())
}
