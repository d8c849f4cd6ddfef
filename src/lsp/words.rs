//! Hover on the words of the language that are not names: a tensor's role (`weight`,
//! `scale of W`, …). The text says what the word makes the lowering do.

use super::document::Document;
use crate::front::ast::{Item, TensorRole};

/// The explanation of a tensor role.
fn role_text(role: &TensorRole) -> String {
    let what = match role {
        TensorRole::Weight => "the read-only operand: a pipeline's MMA weights (the TMA tensor with tile-M rows per box), a consumer's parameters (gamma, an embedding table). Declared `in`.",
        TensorRole::Activation => "the per-token operand: a pipeline's MMA activations (tile-N rows per box). Declared `in`.",
        TensorRole::Residual => "added to the result by a `residual add` epilogue. Declared `in`.",
        TensorRole::Output => "the op's result. Declared `out`.",
        TensorRole::Partials => "f32 split-K partial sums (`[splits, m, N]`), summed by the derived reduce task. Declared `out`.",
        TensorRole::ScaleOf(t) => {
            return format!(
                "**tensor role `{}`**\n\nThe block scales of `{}`: f32 powers of two, one per 128x128 weight block or per 1x128 group of an activation or output. Read (`in`) when `{}` is an input, written (`out`) when it is an output.",
                role.text(),
                t.node,
                t.node
            )
        }
    };
    format!(
        "**tensor role `{}`**\n\n{what} The lowering binds tensors by their role, never by shape.",
        role.text()
    )
}

/// The hover text of the language word at byte `offset`, if one is there.
pub fn hover(doc: &Document, offset: usize) -> Option<String> {
    let file = doc.ast.as_ref()?;
    for task in &file.tasks {
        if !(task.span.start..=task.span.end).contains(&offset) {
            continue;
        }
        for item in &task.items {
            if let Item::Tensor(t) = item {
                if let Some(r) = t
                    .role
                    .as_ref()
                    .filter(|r| (r.span.start..=r.span.end).contains(&offset))
                {
                    return Some(role_text(&r.node));
                }
            }
        }
    }
    None
}
