//! Tensor roles (`tensor W: e4m3[N, K] in weight`, `tensor W_scale: f32[…] in scale of W`):
//! resolved once every tensor is lowered, since `scale of T` may name a tensor declared later.
//! The direction must agree with the role (`E0005`; an `inout` tensor agrees with every role but
//! `weight`); `scale of T` names a declared tensor other
//! than itself (`E0002`, `E0005`).

use super::collect::Collected;
use super::lower::Cx;
use crate::diag::{codes, Diagnostic};
use crate::front::ast;
use crate::ir::*;

/// Sets `TensorIr::role` of every lowered tensor that states one.
pub(super) fn roles(cx: &mut Cx<'_>, c: &Collected<'_>) {
    for t in &c.tensors {
        let Some(role) = &t.role else { continue };
        let Some(h) = cx.ir.tensor_by_name(&t.name.node) else {
            continue; // rejected: its declaration was reported
        };
        let lowered = match &role.node {
            ast::TensorRole::Weight => TensorRole::Weight,
            ast::TensorRole::Activation => TensorRole::Activation,
            ast::TensorRole::Residual => TensorRole::Residual,
            ast::TensorRole::Output => TensorRole::Output,
            ast::TensorRole::Partials => TensorRole::Partials,
            ast::TensorRole::Counters => TensorRole::Counters,
            ast::TensorRole::Index => TensorRole::Index,
            ast::TensorRole::GridBarrier => TensorRole::GridBarrier,
            ast::TensorRole::Scratch => TensorRole::Scratch,
            ast::TensorRole::ScaleOf(of) => {
                let Some(x) = cx.tensor(of) else { continue };
                if x == h {
                    cx.report(
                        Diagnostic::error(
                            codes::TYPE_MISMATCH,
                            format!("tensor `{}` is declared the scale of itself", t.name.node),
                        )
                        .primary(of.span, "the tensor being declared")
                        .help("name the tensor whose block scales this is: `scale of W`"),
                    );
                    continue;
                }
                TensorRole::ScaleOf(x)
            }
        };
        // The dtype a role names: f32 partial sums, int32 counters, int32 ids outside a route
        // (E0005). (A route's ids are E0029's, `valid::route`, which says what the route reads.)
        let dtype = cx.ir.tensors[h].dtype;
        let wants = match lowered {
            TensorRole::Partials => Some(Dtype::F32),
            TensorRole::Counters => Some(Dtype::I32),
            TensorRole::GridBarrier => Some(Dtype::I64),
            TensorRole::Index if c.route.is_none() => Some(Dtype::I32),
            _ => None,
        };
        if let TensorRole::ScaleOf(x) = lowered {
            if !scaled_role_holds(cx, t, role, x, dtype) || !scale_groups_rows(cx, t, role, h, x) {
                continue;
            }
        }
        if let Some(want) = wants.filter(|w| *w != dtype) {
            cx.report(
                Diagnostic::error(
                    codes::TYPE_MISMATCH,
                    format!(
                        "tensor `{}` is {dtype} but its role is `{}`, which holds {want}",
                        t.name.node,
                        role.node.text()
                    ),
                )
                .primary(role.span, format!("needs {want}"))
                .help(format!(
                    "declare the tensor {want}, or give it the role it has"
                )),
            );
            continue;
        }
        // `index` is what a route reads (`route W by ids`): without one the role changes nothing
        // in the generated files, nor the ids `mpkc verify` fills the tensor with (E0014).
        if lowered == TensorRole::Index && c.route.is_none() {
            cx.report(
                Diagnostic::error(
                    codes::NOT_LOWERED,
                    format!(
                        "tensor `{}` has the role `index`, but no `route` reads it",
                        t.name.node
                    ),
                )
                .primary(role.span, "read only by `route W by ids …`")
                .help("add the route that reads the ids, or drop the role: an inline body reads an int32 input as it is"),
            );
        }
        let scaled_written = match lowered {
            TensorRole::ScaleOf(x) => cx.ir.tensors[x].direction != Direction::In,
            _ => false,
        };
        let written = cx.ir.tensors[h].direction != Direction::In;
        let want = lowered.is_written(scaled_written);
        // An `inout` tensor is read and written, so any role's direction holds for it; where the
        // family or lowering cannot update it in place, that is E0021 (`valid/views.rs`).
        let in_place = cx.ir.tensors[h].direction == Direction::InOut;
        // Except a weight: data no task of the launch writes, which a body may read through the
        // non-coherent path (`ld.global.nc`, docs/language.md "tensor"); the task writing it in
        // place contradicts that, and a body trusting the role would read stale data.
        if in_place && lowered == TensorRole::Weight {
            cx.report(
                Diagnostic::error(
                    codes::TYPE_MISMATCH,
                    format!(
                        "tensor `{}` is `inout` but its role is `weight`: a weight is written by no task of the launch, and this task writes it in place",
                        t.name.node
                    ),
                )
                .primary(role.span, "read-only for the whole launch")
                .secondary(t.direction.span, "declared `inout`: written in place")
                .help("declare it `in weight`, or give the in-place tensor its role (`activation`, `residual`, `output`) or none"),
            );
            continue;
        }
        if written != want && !in_place {
            let (dir, want_dir) = match (written, lowered) {
                (true, _) => ("out", "in"),
                // Grid barrier counters carry over from step to step: read and written (E0602
                // for `out`).
                (false, TensorRole::GridBarrier) => ("in", "inout"),
                (false, _) => ("in", "out"),
            };
            let why = match lowered {
                TensorRole::ScaleOf(x) => format!(
                    "the scales of {} `{}` are {}",
                    if scaled_written { "output" } else { "input" },
                    cx.ir.tensors[x].name,
                    if scaled_written { "written" } else { "read" }
                ),
                r => format!(
                    "`{}` tensors are {} by the task",
                    r.word(),
                    if want { "written" } else { "read" }
                ),
            };
            cx.report(
                Diagnostic::error(
                    codes::TYPE_MISMATCH,
                    format!(
                        "tensor `{}` is `{dir}` but its role is `{}`: {why}",
                        t.name.node,
                        role.node.text()
                    ),
                )
                .primary(role.span, format!("needs `{want_dir}`"))
                .secondary(t.direction.span, format!("declared `{dir}`"))
                .help(format!(
                    "write `{want_dir} {}`, or give the tensor the role it has",
                    role.node.text()
                )),
            );
            continue;
        }
        cx.ir.tensors.get_mut(h).role = Some((lowered, role.span));
    }
}

/// `scale of T` (E0005): `T` is quantised (e4m3 or e5m2: its elements are scaled), and the scales
/// are f32 or ue8m0 (the block scales mpkc's fp8 lowerings and bodies read and write). Reports
/// and returns false otherwise.
fn scaled_role_holds(
    cx: &mut Cx<'_>,
    t: &ast::Tensor,
    role: &crate::span::Spanned<ast::TensorRole>,
    x: Handle<TensorIr>,
    dtype: Dtype,
) -> bool {
    let scaled = &cx.ir.tensors[x];
    let (name, scaled_dtype) = (scaled.name.clone(), scaled.dtype);
    let (problem, help) = if !matches!(scaled_dtype, Dtype::E4m3 | Dtype::E5m2) {
        // The fp8 tensors of the task are the likely meaning of `scale of …`.
        let fp8: Vec<String> = cx
            .ir
            .tensors
            .values()
            .filter(|o| matches!(o.dtype, Dtype::E4m3 | Dtype::E5m2))
            .map(|o| format!("`scale of {}`", o.name))
            .collect();
        (
            format!("tensor `{}` is declared the scale of `{name}`, but `{name}` is {scaled_dtype}, which is not quantised", t.name.node),
            if fp8.is_empty() {
                format!("block scales belong to an fp8 tensor (`e4m3`, `e5m2`): declare `{name}` fp8, or drop the role")
            } else {
                format!(
                    "block scales belong to an fp8 tensor: write {} (the task's fp8 tensors), declare `{name}` fp8, or drop the role",
                    fp8.join(" or ")
                )
            },
        )
    } else if !matches!(dtype, Dtype::F32 | Dtype::Ue8m0) {
        (
            format!(
                "tensor `{}` is {dtype}, but the block scales of `{name}` are f32 or ue8m0",
                t.name.node
            ),
            format!(
                "declare `{}` f32 (or ue8m0 for power-of-two scales)",
                t.name.node
            ),
        )
    } else {
        return true;
    };
    cx.report(
        Diagnostic::error(codes::TYPE_MISMATCH, problem)
            .primary(role.span, "scale role")
            .help(help),
    );
    false
}

/// E0005 for the scales of a written fp8 tensor whose extents group no rows of it: `mpkc
/// verify` dequantizes an fp8 output with its declared scales ([`crate::ir::scale_group`]),
/// which pairs them by shape, one scale per group of a row's last elements: the same rank with
/// the same leading extents and a last extent dividing the output's (`[m, hidden / 128]`), or one
/// rank less with the output's leading extents (`[m]`: one scale per row). Other shapes would
/// leave the fp8 values compared raw. (The block scales of an fp8 input are the pipeline's,
/// checked where the linear engine binds them.)
fn scale_groups_rows(
    cx: &mut Cx<'_>,
    t: &ast::Tensor,
    role: &crate::span::Spanned<ast::TensorRole>,
    h: Handle<TensorIr>,
    x: Handle<TensorIr>,
) -> bool {
    let (scale, out) = (&cx.ir.tensors[h], &cx.ir.tensors[x]);
    if out.direction == Direction::In || scale.direction == Direction::In {
        return true;
    }
    if crate::ir::scale_group(&scale.dims, &out.dims).is_some() {
        return true;
    }
    let shape = |d: &[i64]| {
        format!(
            "[{}]",
            d.iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let (s_shape, o_shape, o_name) = (shape(&scale.dims), shape(&out.dims), out.name.clone());
    let lead = shape(&out.dims[..out.dims.len().saturating_sub(1)]);
    cx.report(
        Diagnostic::error(
            codes::TYPE_MISMATCH,
            format!(
                "the scales `{}` {s_shape} do not group the rows of `{o_name}` {o_shape}",
                t.name.node
            ),
        )
        .primary(role.span, "scale role")
        .secondary(t.span, s_shape.clone())
        .note("each scale covers a group of consecutive elements of one row: `mpkc verify` dequantizes the output with them, and a shape that groups no rows leaves its fp8 values compared raw")
        .help(format!(
            "declare the scales with the output's leading extents {lead} and a last extent dividing {}: one scale per row drops the last extent",
            out.dims.last().copied().unwrap_or(1)
        )),
    );
    false
}
