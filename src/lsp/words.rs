//! Hover on the words of the language that are not names: a tensor's role (`weight`,
//! `scale of W`, …) and a region's typed members (`holds mbarrier[6]`, with each member's
//! offset in every instance). The text says what the word makes the lowering do.

use super::document::Document;
use crate::front::ast::{Item, RegionAttr, TensorRole};
use std::fmt::Write as _;

/// The explanation of a tensor role.
fn role_text(role: &TensorRole) -> String {
    let what = match role {
        TensorRole::Weight => "the read-only operand: a pipeline's MMA weights (the TMA tensor with tile-M rows per box), a consumer's parameters (gamma, an embedding table). Declared `in`.",
        TensorRole::Activation => "the per-token operand: a pipeline's MMA activations (tile-N rows per box). Declared `in`.",
        TensorRole::Residual => "added to the result by a `residual add` epilogue. Declared `in`.",
        TensorRole::Output => "the op's result. Declared `out`.",
        TensorRole::Index => "int32 expert ids `[m_real, slots]` that `route W by ids …` reads at run time: the routed weights' outermost coordinate (a pipeline's loader reads them after the dependency wait). Declared `in`.",
        TensorRole::Counters => "int32 arrival counters `[ceil(N / tile M)]`, one per output tile, for `epilogue split_k bf16` and `split_k atomic`: each split of a tile adds one after storing (or adding) its f32 sums, and the last stores the bf16 output and resets the counter. Zero when allocated; every run leaves them zero. Declared `out`.",
        TensorRole::Partials => "f32 split-K partial sums (`[splits, m, N]`), summed by the derived reduce task (`split_k f32`) or by the last split of each tile (`split_k bf16`); for `split_k atomic` one `[m, N]` accumulator every split adds to, zero when allocated and left zero. Declared `out`.",
        TensorRole::GridBarrier => "the i64 counters `[sites]` of a grid-wide task's in-op grid barriers, one per site: the body's `grid_sync(site)` adds one and waits for `num_workers * (iter_num + 1)`. Seeded zero once, at step 0 (`skip_after_step0`), and never reset (I-H4). Declared `inout`; `mpkc verify` checks each counter reached the task count.",
        TensorRole::Scratch => "global memory the op writes and reads for itself (a grid-wide task's per-task partials between grid barriers): no result, so `mpkc verify` does not compare it and a reference does not return it. Declared `out` or `inout`.",
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
            if let Item::Region(r) = item {
                for a in &r.attrs {
                    let RegionAttr::Holds(members, _) = a else {
                        continue;
                    };
                    for (i, m) in members.iter().enumerate() {
                        if (m.span.start..=m.span.end).contains(&offset) {
                            return Some(member_text(doc, &task.name.node, &r.name.node, i));
                        }
                    }
                }
            }
        }
    }
    None
}

/// The hover of member `i` of region `region`'s `holds`: type, size and offset per instance.
fn member_text(doc: &Document, task: &str, region: &str, i: usize) -> String {
    let mut out = String::new();
    let mut first = true;
    for ir in doc.instances(task).map(|t| &t.ir).chain(doc.rejected(task)) {
        let Some(r) = ir
            .region_groups
            .iter()
            .find(|g| g.name == region)
            .and_then(|g| g.members.first())
            .map(|h| &ir.regions[*h])
        else {
            continue;
        };
        let Some(m) = r.holds.get(i) else { continue };
        if first {
            let name = m
                .name
                .as_deref()
                .map_or(String::new(), |n| format!(" `{n}`"));
            let _ = writeln!(
                out,
                "**member{name} of region `{region}`**: {}, {} B each, aligned to {}\n",
                m.ty.name(),
                m.ty.bytes(),
                m.ty.align()
            );
            first = false;
        }
        let inst = ir
            .instance
            .as_ref()
            .map_or("(no instance)".to_string(), |n| format!("instance `{n}`"));
        let _ = writeln!(
            out,
            "- {inst}: {} x {} B at byte {} of the region",
            m.count,
            m.ty.bytes(),
            m.offset
        );
    }
    if first {
        out.push_str("A typed member of the region (`holds`): laid out in order, each at a multiple of its alignment.");
    }
    out
}
