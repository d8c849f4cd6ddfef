//! "Region plan": the task's SMEM regions as the planner placed them on the target with the
//! smallest capacity (the plan the spec header records), the budget, and the page map.

use crate::plan::pages::{NUM_PAGES, PAGE_SIZE};
use crate::valid::CheckedTask;
use std::fmt::Write as _;

/// Writes the "Region plan" section of `task`.
pub(super) fn write(s: &mut String, task: &CheckedTask) {
    if task.ir.regions.is_empty() {
        let _ = writeln!(s, "## Region plan\n");
        let _ = writeln!(
            s,
            "No SMEM regions: the task uses no dynamic shared memory (0 of {} bytes, I-S11). Every one of the {NUM_PAGES} pages is unused; \
the runtime's loader prefix frees them all.\n",
            task.capacity_bytes()
        );
        return;
    }
    regions(s, task);
}

fn regions(s: &mut String, task: &CheckedTask) {
    let ir = &task.ir;
    let plan = task.primary_plan();
    let _ = writeln!(s, "## Region plan\n");
    let _ = writeln!(
        s,
        "{} regions, {} bytes of {} ({} pages of {NUM_PAGES}); max byte end {}.\n",
        ir.regions.len(),
        ir.region_bytes(),
        task.capacity_bytes(),
        plan.pages_used,
        plan.max_byte_end
    );
    // Targets of different capacities: each one's, and whether its plan is the one shown.
    let caps: Vec<i64> = task
        .plans
        .iter()
        .map(|(_, g, _)| g.capacity_bytes)
        .collect();
    if caps.iter().any(|c| *c != caps[0]) {
        let each: Vec<String> = task
            .plans
            .iter()
            .map(|(t, g, p)| {
                let same = p.regions == plan.regions;
                format!(
                    "{} {} bytes ({})",
                    t.target,
                    g.capacity_bytes,
                    if same {
                        "the same plan"
                    } else {
                        "another plan: `mpkc plan` shows it"
                    }
                )
            })
            .collect();
        let _ = writeln!(
            s,
            "SMEM capacity per target: {}; the spec header records the smallest.\n",
            each.join(", ")
        );
    }
    let _ = writeln!(
        s,
        "| ordinal | region | bytes | align | pack | release | pages | offset |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|");
    for (h, r) in ir.regions.iter() {
        let pr = &plan.regions[h.index()];
        let pages: Vec<String> = pr.pages.iter().map(usize::to_string).collect();
        let _ = writeln!(
            s,
            "| {} | `{}` | {} | {} | {} | {} | {} | {} |",
            h.index(),
            r.name,
            r.size,
            r.align,
            // MPK's planner packs a region only below a page and on at most one page
            // (`plan::pages`): a `pack` it cannot honour takes its pages whole.
            match (r.can_pack, pr.pages.len() <= 1 && r.size < PAGE_SIZE) {
                (true, true) => "yes",
                (true, false) => "yes (a whole page or more: not packed)",
                (false, _) => "no",
            },
            r.release_step,
            pages.join(", "),
            pr.offset
        );
    }
    let _ = writeln!(s, "\nPage map (identity preferred order):\n\n```");
    for page in 0..NUM_PAGES {
        // Each region on the page: where it starts there (its offset on its first page, 0 on a
        // continuation page) and how many of its bytes the page holds.
        let mut used = 0i64;
        let mut on = Vec::new();
        for r in &plan.regions {
            let Some(i) = r.pages.iter().position(|&q| q == page) else {
                continue;
            };
            let i = i as i64;
            let (start, before) = if i == 0 {
                (r.offset, 0)
            } else {
                (0, (PAGE_SIZE - r.offset) + (i - 1) * PAGE_SIZE)
            };
            let here = (r.size - before).clamp(0, PAGE_SIZE - start);
            used = used.max(start + here);
            on.push(if i == 0 {
                format!("{}@{}", r.name, r.offset)
            } else {
                format!("{} (cont.)", r.name)
            });
        }
        let _ = writeln!(
            s,
            "page {page:>2}  {:>5} B  {}",
            used,
            if on.is_empty() {
                "-".to_string()
            } else {
                on.join(" ")
            }
        );
    }
    let _ = writeln!(s, "release order {:?}\n```\n", plan.release_order);
}
