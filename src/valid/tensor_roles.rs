//! Tensor roles a pipeline needs (issue 11, C1c): the pipeline lowering binds every tensor by its
//! declared role, so each tensor of a `family pipeline` task states one (`E0007`; the help names
//! the role its shape suggests), and at most one TMA `weight` and one TMA `activation` feed the
//! MMA (`E0003` for two; the lowering reports a missing one, `E0013`).

use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::*;

/// The role `t`'s shape suggests in a pipeline, as written (`scale of W`): a help, never a binding.
fn suggested(ir: &TaskIr, t: &TensorIr) -> String {
    let rows = |t: &TensorIr| t.tma.as_ref().and_then(|m| m.box_dims.get(1).copied());
    let tile_m = ir.tile.as_ref().and_then(|x| x.m).unwrap_or(128);
    let tma: Vec<&TensorIr> = ir.tensors.values().filter(|x| x.tma.is_some()).collect();
    // The weights: the TMA tensor whose box has tile-M rows, else the one with the most rows.
    let weight = tma
        .iter()
        .find(|x| rows(x) == Some(tile_m))
        .or_else(|| tma.iter().max_by_key(|x| x.dims.first().copied()))
        .map_or("W", |x| x.name.as_str());
    let act = tma
        .iter()
        .find(|x| x.name != weight)
        .map_or("A", |x| x.name.as_str());
    if t.tma.is_some() {
        return if t.name == weight {
            "weight"
        } else {
            "activation"
        }
        .into();
    }
    match t.direction {
        Direction::In if t.dtype == Dtype::F32 => {
            let w_rows = ir
                .tensors
                .values()
                .find(|x| x.name == weight)
                .and_then(|x| x.dims.first().copied());
            if t.dims.first().copied() == w_rows.map(|r| r / 128) {
                format!("scale of {weight}")
            } else {
                format!("scale of {act}")
            }
        }
        Direction::In => "residual".into(),
        _ if t.dtype == Dtype::F32 && t.dims.len() == 3 => "partials".into(),
        _ if t.dtype == Dtype::I32 && t.dims.len() == 1 => "counters".into(),
        _ => {
            let main = ir
                .outputs()
                .map(|(_, x)| x)
                .find(|x| x.dtype != Dtype::F32 || x.dims.len() == 3);
            match main {
                Some(m) if m.name != t.name && t.dtype == Dtype::F32 => {
                    format!("scale of {}", m.name)
                }
                _ => "output".into(),
            }
        }
    }
}

/// Every tensor of a pipeline states its role; one TMA weight and one TMA activation.
pub(super) fn pipeline_roles(ir: &TaskIr, sink: &mut Sink) {
    if ir.family != Family::Pipeline {
        return;
    }
    let mut unstated = false;
    for t in ir.tensors.values().filter(|t| t.role.is_none()) {
        unstated = true;
        let dir = match t.direction {
            Direction::In => "in",
            Direction::Out => "out",
            Direction::InOut => "inout",
        };
        sink.push(
            Diagnostic::error(
                codes::MISSING,
                format!("tensor `{}` of a pipeline states no role", t.name),
            )
            .primary(t.span, "no role")
            .secondary(ir.family_span, "family pipeline")
            .note("the pipeline lowering binds its tensors by role: `weight` and `activation` (the TMA operands), `residual`, `output`, `partials`, `counters`, `scale of T`")
            .help(format!(
                "its shape suggests `{dir} {}`: write the role after the direction",
                suggested(ir, t)
            )),
        );
    }
    if unstated {
        return; // counted once every tensor states its role
    }
    for role in [TensorRole::Weight, TensorRole::Activation] {
        let with: Vec<&TensorIr> = ir
            .tensors
            .values()
            .filter(|t| t.role() == Some(role))
            .collect();
        let tma: Vec<&TensorIr> = with.iter().copied().filter(|t| t.tma.is_some()).collect();
        match tma.as_slice() {
            [_] => {}
            // None: the lowering reports it (E0013) for an otherwise clean task; a pipeline
            // whose tests exercise other rules need not spell out both operands.
            [] => {}
            [first, rest @ ..] => {
                for t in rest {
                    let span = t.role.map_or(t.span, |(_, s)| s);
                    sink.push(
                        Diagnostic::error(
                            codes::DUPLICATE,
                            format!(
                                "tensors `{}` and `{}` are both the TMA `{}` of the pipeline",
                                first.name,
                                t.name,
                                role.word()
                            ),
                        )
                        .primary(span, "a second one")
                        .secondary(first.role.map_or(first.span, |(_, s)| s), "the first")
                        .help("one MMA has one weight and one activation operand: give the other tensor its own role"),
                    );
                }
            }
        }
    }
}

/// `counters` (E0011): the arrival counters of a pipeline's `split_k bf16` (or `atomic`) epilogue, which the
/// generated code alone arrives and resets; a tensor of another family with that role would be
/// the body's to keep zero, which nothing checks (and verify would run its tasks once).
pub(super) fn counters(ir: &TaskIr, sink: &mut Sink) {
    let split_sum = ir.family == Family::Pipeline
        && ir
            .epilogues
            .iter()
            .any(|(k, v, _)| k == "split_k" && matches!(v.as_deref(), Some("bf16" | "atomic")));
    if split_sum {
        return;
    }
    for t in ir.tensors.values() {
        let Some((TensorRole::Counters, span)) = t.role else {
            continue;
        };
        sink.push(
            Diagnostic::error(
                codes::FAMILY_ITEM,
                format!(
                    "tensor `{}` is `counters`, which only a pipeline's `split_k bf16` or `split_k atomic` epilogue arrives and resets",
                    t.name
                ),
            )
            .primary(span, "the role")
            .secondary(ir.family_span, format!("family {}", ir.family.as_str()))
            .help("give it the role it has (an `output` the body writes), or make the task a pipeline with `epilogue split_k bf16 with B`"),
        );
    }
}
