//! MPK's planner over a worker's queue (contract doc §1.4, step 3): each task is planned after
//! the task before it on the same SM, its preferred page order being that task's release order
//! (identity for the first; a task without regions forwards the order it was given). A task's
//! pages therefore depend on its predecessor: single-page regions take the pages the previous
//! task left unused first, so consecutive tasks whose footprints fit in 7 pages alternate
//! between disjoint page sets (I-S12), and the next task's loads need not wait for the previous
//! task's release.

use super::pages::{identity_order, plan, Geometry, PagePlan, PlanError, RegionRequest};

/// The plans of a queue's tasks, in order, each planned after the one before it (MPK's walk).
/// `Err((i, e))`: MPK's planner rejects task `i` (I-S1, I-S4); an I-S5 overflow is not an
/// error here (check [`PagePlan::exceeds_capacity`] on each plan).
/// Each task comes with the geometry of its target (the capacity its contract gives it).
pub fn walk<'a>(
    tasks: impl IntoIterator<Item = (&'a [RegionRequest], Geometry)>,
) -> Result<Vec<PagePlan>, (usize, PlanError)> {
    let mut preferred = identity_order(&Geometry::default());
    let mut plans = Vec::new();
    for (i, (regions, g)) in tasks.into_iter().enumerate() {
        let p = plan(regions, &preferred, &g).map_err(|e| (i, e))?;
        preferred.clone_from(&p.release_order);
        plans.push(p);
    }
    Ok(plans)
}

/// The bound on the walk of [`after_itself`]: the orders it meets repeat long before (a task's
/// plan is a function of its preferred order, and the walk settles into a cycle of one or two
/// orders on every stdlib contract).
const MAX_SELF_WALK: usize = 64;

/// The plans of a task queued after itself on one SM (every task of an op with more tasks than
/// SMs, or the same op in every layer), starting after `start`: the walk of [`walk`] until a
/// preferred order repeats. The first plan is the one after `start`. `Err` as for [`walk`].
pub fn after_itself(
    regions: &[RegionRequest],
    start: &[usize],
    g: &Geometry,
) -> Result<Vec<PagePlan>, PlanError> {
    let mut preferred = start.to_vec();
    let mut seen: Vec<Vec<usize>> = Vec::new();
    let mut plans = Vec::new();
    while !seen.contains(&preferred) && plans.len() < MAX_SELF_WALK {
        let p = plan(regions, &preferred, g)?;
        seen.push(std::mem::replace(&mut preferred, p.release_order.clone()));
        plans.push(p);
    }
    Ok(plans)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn region(name: &str, size: i64, pages: i64, packable: bool) -> RegionRequest {
        RegionRequest {
            name: name.into(),
            size,
            alignment: 1024,
            page_count: pages,
            can_pack: packable,
            release_step: 1,
            contiguous: true,
        }
    }

    /// Five 16 KB stages and their packed activations (7 pages) alternate between two disjoint
    /// page sets; the second plan starts from the first's release order.
    #[test]
    fn a_seven_page_task_alternates_with_itself() {
        let g = Geometry::default();
        let mut r: Vec<RegionRequest> = (0..5)
            .map(|i| region(&format!("W_{i}"), 16384, 1, false))
            .collect();
        r.extend((0..5).map(|i| region(&format!("A_{i}"), 4096, 1, true)));
        let plans = after_itself(&r, &identity_order(&g), &g).unwrap();
        assert_eq!(
            plans.len(),
            2,
            "identity, then the other half, then identity again"
        );
        let used = |p: &PagePlan| -> Vec<usize> {
            let mut v: Vec<usize> = p.regions.iter().flat_map(|x| x.pages.clone()).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        assert_eq!(used(&plans[0]), (0..7).collect::<Vec<_>>());
        assert_eq!(used(&plans[1]), (7..14).collect::<Vec<_>>());
        assert!(plans.iter().all(|p| !p.exceeds_capacity(&g)));
        // The same through a queue of four.
        let w = walk(std::iter::repeat_n((r.as_slice(), g), 4)).unwrap();
        assert_eq!(used(&w[2]), used(&plans[0]));
        assert_eq!(used(&w[3]), used(&plans[1]));
    }

    /// Seven 16 KB stages (9 pages): after itself, the fifth stage lands on the partial page 13.
    #[test]
    fn a_nine_page_task_overflows_page_13_after_itself() {
        let g = Geometry::default();
        let mut r: Vec<RegionRequest> = (0..7)
            .map(|i| region(&format!("W_{i}"), 16384, 1, false))
            .collect();
        r.extend((0..7).map(|i| region(&format!("A_{i}"), 4096, 1, true)));
        let plans = after_itself(&r, &identity_order(&g), &g).unwrap();
        assert!(!plans[0].exceeds_capacity(&g));
        assert!(plans[1].exceeds_capacity(&g));
        let w4 = plans[1].regions.iter().find(|x| x.name == "W_4").unwrap();
        assert_eq!(w4.pages, vec![13]);
    }
}
