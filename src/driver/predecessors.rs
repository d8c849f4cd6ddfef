//! `mpkc check --predecessors all`: which predecessor release orders expose a task to MPK's
//! physical-remap overflow (I-S5). Not a default warning: most tasks are exposed to some order.
//!
//! Only page 13 holds less than a full page, so whether an order overflows depends only on
//! where page 13 sits in it: mpkc plans the task once per position of page 13 (the other pages
//! in order), which covers every predecessor order, and once after each known task's own
//! release order (the stdlib and the files checked), which names real predecessors.

use crate::ir::TargetIr;
use crate::plan::pages::{self, Geometry, PagePlan, NUM_PAGES};
use crate::valid::{request_list, CheckedTask};

/// One exposure: page 13 at `position` in the predecessor's order makes logical page `logical`
/// (holding `bytes`) land on physical page 13, `over` bytes past the capacity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exposure {
    /// Index of page 13 in the predecessor's release order.
    pub position: usize,
    /// The logical page that lands on page 13.
    pub logical: usize,
    /// Bytes used on that logical page.
    pub bytes: i64,
    /// Bytes past the capacity.
    pub over: i64,
}

fn order_with_13_at(position: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (0..NUM_PAGES - 1).collect();
    v.insert(position.min(v.len()), NUM_PAGES - 1);
    v
}

fn exposure(plan: &PagePlan, g: &Geometry, position: usize) -> Option<Exposure> {
    if !plan.exceeds_capacity(g) {
        return None;
    }
    let logical = plan
        .logical_to_physical
        .iter()
        .position(|&p| p == NUM_PAGES - 1)?;
    let bytes = plan.bytes_on_logical(logical);
    Some(Exposure {
        position,
        logical,
        bytes,
        over: plan.max_byte_end - g.capacity_bytes,
    })
}

/// Every position of page 13 in a predecessor's release order that overflows `task` on `target`.
pub fn exposures(task: &CheckedTask, target: &TargetIr) -> Vec<Exposure> {
    let g = Geometry {
        capacity_bytes: target.smem_capacity_bytes,
        ..Geometry::default()
    };
    let reqs = request_list(&task.ir);
    (0..NUM_PAGES)
        .filter_map(|pos| {
            pages::plan(&reqs, &order_with_13_at(pos), &g)
                .ok()
                .and_then(|p| exposure(&p, &g, pos))
        })
        .collect()
}

/// The known tasks (name, release order) whose release order, as a predecessor, overflows `task`.
pub fn exposing_predecessors<'a>(
    task: &CheckedTask,
    target: &TargetIr,
    known: &'a [(String, Vec<usize>)],
) -> Vec<&'a (String, Vec<usize>)> {
    let g = Geometry {
        capacity_bytes: target.smem_capacity_bytes,
        ..Geometry::default()
    };
    let reqs = request_list(&task.ir);
    known
        .iter()
        .filter(|(_, order)| pages::plan(&reqs, order, &g).is_ok_and(|p| p.exceeds_capacity(&g)))
        .collect()
}

/// The report for `tasks`, with `known` predecessors (unit name, release order after identity).
pub fn report(tasks: &[&CheckedTask], known: &[(String, Vec<usize>)]) -> String {
    let mut out = String::new();
    for t in tasks {
        for (target, _, _) in &t.plans {
            let ex = exposures(t, target);
            let name = t.ir.unit_name();
            if ex.is_empty() {
                out.push_str(&format!(
                    "{name} on {}: safe after every predecessor release order\n",
                    target.target
                ));
                continue;
            }
            out.push_str(&format!(
                "{name} on {}: exposed when page 13 is at {} of the 14 positions of the predecessor's release order\n",
                target.target,
                ex.len()
            ));
            // Consecutive positions with the same outcome share a line.
            let mut i = 0;
            while i < ex.len() {
                let mut j = i;
                while j + 1 < ex.len()
                    && ex[j + 1].position == ex[j].position + 1
                    && (ex[j + 1].logical, ex[j + 1].bytes, ex[j + 1].over)
                        == (ex[i].logical, ex[i].bytes, ex[i].over)
                {
                    j += 1;
                }
                let at = if i == j {
                    format!("position {}", ex[i].position)
                } else {
                    format!("positions {}-{}", ex[i].position, ex[j].position)
                };
                out.push_str(&format!(
                    "  {at}: logical page {} ({} bytes used) lands on page 13 (11264 usable), {} bytes over\n",
                    ex[i].logical, ex[i].bytes, ex[i].over
                ));
                i = j + 1;
            }
            let preds = exposing_predecessors(t, target, known);
            if preds.is_empty() {
                out.push_str("  no known task's release order exposes it\n");
            } else {
                for (p, order) in preds {
                    out.push_str(&format!("  exposed after {p} (release order {order:?})\n"));
                }
            }
        }
    }
    out
}
