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
use std::collections::HashMap;

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

/// The most known predecessors a report names for one task instance and target; the rest are
/// counted, and every known release order is listed once at the end of the report, so that the
/// report grows with the tasks plus the known tasks, not with their product (issue 9, class 7).
pub const NAMED_PREDECESSORS: usize = 8;

/// The known tasks (unit name, release order after identity), grouped by distinct release
/// order, with the verdicts already planned: a task is planned once per distinct order, and
/// tasks with the same regions on the same capacity share one verdict per order, so `n`
/// instances of a few task shapes cost `shapes × distinct orders` plans, not `n × known tasks`.
#[derive(Debug)]
pub struct KnownOrders<'a> {
    known: &'a [(String, Vec<usize>)],
    /// Each distinct release order with the indexes into `known` of the tasks that have it.
    orders: Vec<(&'a [usize], Vec<usize>)>,
    /// Per task shape (its region requests and capacity): whether each distinct order exposes it.
    verdicts: HashMap<String, Vec<bool>>,
}

impl<'a> KnownOrders<'a> {
    /// Groups `known` by release order (one pass).
    pub fn new(known: &'a [(String, Vec<usize>)]) -> KnownOrders<'a> {
        let mut index: HashMap<&[usize], usize> = HashMap::new();
        let mut orders: Vec<(&[usize], Vec<usize>)> = Vec::new();
        for (i, (_, order)) in known.iter().enumerate() {
            let k = *index.entry(order).or_insert_with(|| {
                orders.push((order, Vec::new()));
                orders.len() - 1
            });
            orders[k].1.push(i);
        }
        KnownOrders {
            known,
            orders,
            verdicts: HashMap::new(),
        }
    }

    /// The known tasks whose release order, as a predecessor, overflows `task` on `target`: how
    /// many, and the first [`NAMED_PREDECESSORS`] of them in the order of `known`.
    pub fn exposing(
        &mut self,
        task: &CheckedTask,
        target: &TargetIr,
    ) -> (usize, Vec<&'a (String, Vec<usize>)>) {
        let g = Geometry {
            capacity_bytes: target.smem_capacity_bytes,
            ..Geometry::default()
        };
        let reqs = request_list(&task.ir);
        let orders = &self.orders;
        let verdict = self
            .verdicts
            .entry(format!("{} {reqs:?}", g.capacity_bytes))
            .or_insert_with(|| {
                orders
                    .iter()
                    .map(|(o, _)| pages::plan(&reqs, o, &g).is_ok_and(|p| p.exceeds_capacity(&g)))
                    .collect()
            });
        let exposing: Vec<&Vec<usize>> = orders
            .iter()
            .zip(verdict.iter())
            .filter(|(_, &v)| v)
            .map(|((_, tasks), _)| tasks)
            .collect();
        let total = exposing.iter().map(|t| t.len()).sum();
        let mut first: Vec<usize> = exposing
            .iter()
            .flat_map(|t| t.iter().take(NAMED_PREDECESSORS).copied())
            .collect();
        first.sort_unstable();
        first.truncate(NAMED_PREDECESSORS);
        (total, first.into_iter().map(|i| &self.known[i]).collect())
    }
}

/// Consecutive positions of page 13 with the same outcome: `first..=last`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExposureRun {
    /// First position of page 13 in the predecessor's order.
    pub first: usize,
    /// Last position (inclusive).
    pub last: usize,
    /// The logical page that lands on page 13.
    pub logical: usize,
    /// Bytes used on that logical page.
    pub bytes: i64,
    /// Bytes past the capacity.
    pub over: i64,
}

/// `ex` with consecutive positions of equal outcome merged.
pub fn runs(ex: &[Exposure]) -> Vec<ExposureRun> {
    let mut out: Vec<ExposureRun> = Vec::new();
    for e in ex {
        match out.last_mut() {
            Some(r)
                if r.last + 1 == e.position
                    && (r.logical, r.bytes, r.over) == (e.logical, e.bytes, e.over) =>
            {
                r.last = e.position
            }
            _ => out.push(ExposureRun {
                first: e.position,
                last: e.position,
                logical: e.logical,
                bytes: e.bytes,
                over: e.over,
            }),
        }
    }
    out
}

/// The verdict for one task instance on one target.
#[derive(Clone, Debug)]
pub struct TargetReport<'a> {
    /// The task instance.
    pub task: &'a CheckedTask,
    /// The target.
    pub target: &'a TargetIr,
    /// Every exposing position of page 13 (empty: safe after every order).
    pub exposures: Vec<Exposure>,
    /// The first [`NAMED_PREDECESSORS`] known tasks whose release order exposes it.
    pub predecessors: Vec<&'a (String, Vec<usize>)>,
    /// How many known tasks' release orders expose it.
    pub predecessors_total: usize,
}

/// The verdicts for `tasks` on each of their targets, with `known` predecessors (unit name,
/// release order after identity).
pub fn reports<'a>(
    tasks: &[&'a CheckedTask],
    known: &'a [(String, Vec<usize>)],
) -> Vec<TargetReport<'a>> {
    let mut known = KnownOrders::new(known);
    let mut out = Vec::new();
    for t in tasks {
        for (target, _, _) in &t.plans {
            let exposures = exposures(t, target);
            let (predecessors_total, predecessors) = if exposures.is_empty() {
                (0, Vec::new())
            } else {
                known.exposing(t, target)
            };
            out.push(TargetReport {
                task: t,
                target,
                exposures,
                predecessors,
                predecessors_total,
            });
        }
    }
    out
}

/// The text report: a line per task instance and target, then one per run of exposing positions
/// and one per exposing known predecessor.
pub fn report(tasks: &[&CheckedTask], known: &[(String, Vec<usize>)]) -> String {
    let mut out = String::new();
    let mut cut = false;
    for r in reports(tasks, known) {
        let name = r.task.ir.unit_name();
        let target = r.target.target;
        if r.exposures.is_empty() {
            out.push_str(&format!(
                "{name} on {target}: safe after every predecessor release order\n"
            ));
            continue;
        }
        out.push_str(&format!(
            "{name} on {target}: exposed when page 13 is at {} of the 14 positions of the predecessor's release order\n",
            r.exposures.len()
        ));
        for run in runs(&r.exposures) {
            let at = if run.first == run.last {
                format!("position {}", run.first)
            } else {
                format!("positions {}-{}", run.first, run.last)
            };
            out.push_str(&format!(
                "  {at}: logical page {} ({} bytes used) lands on page 13 (11264 usable), {} bytes over\n",
                run.logical, run.bytes, run.over
            ));
        }
        if r.predecessors.is_empty() {
            out.push_str("  no known task's release order exposes it\n");
        } else {
            for (p, order) in &r.predecessors {
                out.push_str(&format!("  exposed after {p} (release order {order:?})\n"));
            }
            let more = r.predecessors_total - r.predecessors.len();
            if more > 0 {
                cut = true;
                out.push_str(&format!(
                    "  and after {more} more known {} (release orders listed below)\n",
                    if more == 1 { "task" } else { "tasks" },
                ));
            }
        }
    }
    if cut {
        out.push_str("known release orders:\n");
        for (u, order) in known {
            out.push_str(&format!("  {u}: {order:?}\n"));
        }
    }
    out
}

/// The JSON-lines report (`--message-format json`): one object per task instance and target,
/// `{"reason": "predecessors", "task", "instance", "unit", "target", "safe", "exposed_positions",
/// "runs": [{"first", "last", "logical_page", "bytes_used", "bytes_over"}], "exposed_after":
/// [{"unit", "release_order"}], "exposed_after_total"}` (`exposed_after` names at most
/// [`NAMED_PREDECESSORS`] of the `exposed_after_total`), each followed by a newline; when one
/// was cut, a last object `{"reason": "predecessor-orders", "orders": [{"unit",
/// "release_order"}]}` lists every known release order once.
pub fn report_json(tasks: &[&CheckedTask], known: &[(String, Vec<usize>)]) -> String {
    let mut out = String::new();
    let mut cut = false;
    for r in reports(tasks, known) {
        cut |= r.predecessors_total > r.predecessors.len();
        let runs: Vec<serde_json::Value> = runs(&r.exposures)
            .iter()
            .map(|x| {
                serde_json::json!({"first": x.first, "last": x.last, "logical_page": x.logical,
                    "bytes_used": x.bytes, "bytes_over": x.over})
            })
            .collect();
        let after: Vec<serde_json::Value> = r
            .predecessors
            .iter()
            .map(|(u, o)| serde_json::json!({"unit": u, "release_order": o}))
            .collect();
        let v = serde_json::json!({
            "reason": "predecessors",
            "task": r.task.ir.name,
            "instance": r.task.ir.instance,
            "unit": r.task.ir.unit_name(),
            "target": r.target.target.as_str(),
            "safe": r.exposures.is_empty(),
            "exposed_positions": r.exposures.iter().map(|e| e.position).collect::<Vec<_>>(),
            "runs": runs,
            "exposed_after": after,
            "exposed_after_total": r.predecessors_total,
        });
        out.push_str(&v.to_string());
        out.push('\n');
    }
    if cut {
        let orders: Vec<serde_json::Value> = known
            .iter()
            .map(|(u, o)| serde_json::json!({"unit": u, "release_order": o}))
            .collect();
        let v = serde_json::json!({"reason": "predecessor-orders", "orders": orders});
        out.push_str(&v.to_string());
        out.push('\n');
    }
    out
}
