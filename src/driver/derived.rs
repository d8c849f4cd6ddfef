//! Contracts mpkc derives from the user's: the reduce task of each split-K pipeline. They are
//! checked like any contract, but their text is generated, so their diagnostics are re-attributed
//! to the instance they come from, in the user's file.

use super::{Checked, Source};
use crate::diag::Diagnostic;
use crate::lower::Epilogue;
use crate::span::Span;

/// Where a derived contract comes from.
#[derive(Clone, Debug)]
pub struct Derived {
    /// The source that declares the parent task instance.
    pub parent: Source,
    /// The parent's unit name (`linear_bf16_splitk_qkv_a`).
    pub parent_unit: String,
    /// The task the reduce units of all the parent's instances form for MPK
    /// (`linear_bf16_splitk_reduce`): one TaskType (the parent's `reduce_task_id`), each
    /// instance's reduce a variant of it, as the parent's instances are of its own.
    pub task: String,
    /// The derived task's unit name (`linear_bf16_splitk_qkv_a_reduce`).
    pub unit: String,
    /// The parent's instance declaration (or its task name when it has no instances), in
    /// `parent`: the primary label of every re-attributed diagnostic.
    pub span: Span,
    /// The parent's `epilogue split_k f32` item, in `parent`.
    pub epilogue: Option<Span>,
    /// The parent's `reduce_task_id` item, in `parent`, with the byte range of the `task_id` line
    /// it becomes in the derived contract: a diagnostic labelled there points at the item too.
    pub reduce_task_id: Option<(std::ops::Range<usize>, Span)>,
}

impl Derived {
    /// `d`, reported on the derived contract `source`, re-attributed to the parent: the parent's
    /// instance is the primary label, the epilogue a secondary one, and each original label
    /// becomes a note quoting the derived contract's line (that text is in no file).
    pub fn attribute(&self, d: Diagnostic, source: &Source) -> Diagnostic {
        let out = Diagnostic {
            labels: Vec::new(),
            notes: Vec::new(),
            ..d.clone()
        };
        let derived_from = format!("the reduce task `{}` is derived from this", self.unit);
        // A diagnostic about the derived `task_id` line is about the parent's `reduce_task_id`.
        let mut out = match &self.reduce_task_id {
            Some((line, item)) if d.labels.iter().any(|l| line.contains(&l.span.start)) => out
                .primary(*item, "the reduce task's TaskType")
                .secondary(self.span, derived_from),
            _ => out.primary(self.span, derived_from),
        };
        if let Some(e) = self.epilogue {
            out = out.secondary(e, "this epilogue makes mpkc derive the reduce task");
        }
        out = out.note(format!(
            "this concerns `{}`, the task mpkc derives to sum the split-K partials of `{}`; its contract is generated, not written in a file",
            self.unit, self.parent_unit
        ));
        for l in &d.labels {
            out = out.note(format!(
                "in the derived contract, line {}: `{}`: {}",
                line_of(&source.text, l.span.start),
                line_text(&source.text, l.span.start),
                l.message
            ));
        }
        out.notes.extend(d.notes);
        out
    }
}

/// The 1-based line of byte `pos` of `text`.
pub(crate) fn line_of(text: &str, pos: usize) -> usize {
    text.as_bytes()[..pos.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

fn line_text(text: &str, pos: usize) -> &str {
    let pos = pos.min(text.len());
    let start = text[..pos].rfind('\n').map_or(0, |i| i + 1);
    let end = text[pos..].find('\n').map_or(text.len(), |i| pos + i);
    text[start..end].trim()
}

/// SMs the derived reduce spreads over: the H200's 132, which the stdlib's splits are tuned for.
const REDUCE_SMS: i64 = 132;

/// Row groups of the derived reduce of `m` token rows over `slices` column slices: as many as
/// fill [`REDUCE_SMS`] with the slices (one per row at most), so that at M = 16 a reduce of two
/// slices (the router's 256 columns) runs on 32 tasks instead of 2, each thread one memory round
/// trip per 8 splits; 1 at M = 1.
fn reduce_row_groups(m: i64, slices: i64) -> i64 {
    let m = m.max(1);
    let wanted = (REDUCE_SMS / slices.max(1)).clamp(1, m);
    let rows = crate::ir::exact::ceil_div(m, wanted);
    crate::ir::exact::ceil_div(m, rows)
}

/// The contracts derived from `c`: for a pipeline with a `split_k f32` epilogue, the reduce task
/// that sums its f32 partials into the bf16 output (one task per 128 output columns, the linear's
/// tile, times row groups of the tokens where the slices leave SMs idle: `reduce_row_groups`),
/// with where it comes from.
pub fn derived_sources(c: &Checked) -> Vec<(Source, Derived)> {
    let mut out = Vec::new();
    for t in &c.tasks {
        let Some(p) = t.linear().filter(|p| p.epilogue == Epilogue::SplitKF32) else {
            continue;
        };
        let parent_unit = t.ir.unit_name();
        let unit = format!("{parent_unit}_reduce");
        let targets: Vec<&str> = t.ir.targets.iter().map(|x| x.target.as_str()).collect();
        let mut text = format!(
            "// Derived by mpkc from {path}: the reduce task of `{parent_unit}`'s split-K partials.\n\
task {unit} {{\n  family consumer-no-smem\n  targets {targets}\n",
            path = c.source.path,
            targets = targets.join(", "),
        );
        // The parent's `reduce_task_id` is the derived task's `task_id` (MPK's TaskType).
        let reduce_task_id = t.ir.reduce_task_id.map(|(id, item)| {
            let start = text.len();
            text.push_str(&format!("  task_id {id}\n"));
            (start..text.len(), item)
        });
        let slices = crate::ir::exact::ceil_div(p.n, 128).max(1);
        let groups = reduce_row_groups(p.m_real, slices);
        text.push_str(&format!(
            "  tensor partials: f32[{s}, {m}, {n}] in\n  tensor y: bf16[{m}, {n}] out\n  body splitk_reduce(partials -> y)\n  // {slices} column slices of 128 x {groups} row group(s)\n  granularity per_tile(tasks {tasks})\n}}\n",
            s = p.splits,
            m = p.m_real,
            n = p.n,
            tasks = slices * groups,
        ));
        let epilogue =
            t.ir.epilogues
                .iter()
                .find(|(k, _, _)| k == "split_k")
                .map(|(_, _, s)| *s);
        out.push((
            Source {
                path: format!("{}#{unit}", c.source.path),
                text,
            },
            Derived {
                parent: c.source.clone(),
                parent_unit,
                task: format!("{}_reduce", t.ir.name),
                unit,
                span: t.ir.unit_span(),
                epilogue,
                reduce_task_id,
            },
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::reduce_row_groups;

    /// The stdlib's split-K shapes at M = 16: slices x row groups stay within the 132 SMs, and
    /// M = 1 keeps one task per slice.
    #[test]
    fn the_reduce_spreads_its_rows_over_the_idle_sms() {
        // (slices = ceil(N / 128), M, row groups)
        for (slices, m, groups) in [
            (2, 16, 16), // router [256]: 32 tasks
            (17, 16, 6), // qkv_a [2176]: 3 rows per group, 102 tasks
            (24, 16, 4), // q_b [3072]: 96 tasks
            (5, 16, 16), // kv_a [576]: 80 tasks
            (17, 1, 1),
            (2, 1, 1),
            (200, 64, 1), // more slices than SMs: one group
        ] {
            let g = reduce_row_groups(m, slices);
            assert_eq!(g, groups, "{slices} slices at M = {m}");
            assert!(g == 1 || slices * g <= 132);
        }
    }
}
