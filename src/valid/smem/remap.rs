//! E0107 (I-S5): MPK's physical remap puts a region past the capacity, after some predecessor or
//! after the task itself; the fixes it offers (a region group declared first, fewer stages) must
//! hold for every build of the contract's text (`CheckOptions::siblings`).

use super::{geometry, to_req};
use crate::diag::{codes, Diagnostic};
use crate::ir::{TargetIr, TaskIr};
use crate::plan::pages::{self, Geometry, PagePlan, RegionRequest};

/// I-S5 over the orders the task meets after itself (`plan::queue::after_itself`, starting at
/// `preferred`): the first plan that overflows, with the number of the task's own plans before
/// it. `None` when every plan of the cycle fits (or MPK's planner rejects one: reported
/// elsewhere).
pub(super) fn overflow_after_itself(
    reqs: &[RegionRequest],
    preferred: &[usize],
    g: &Geometry,
) -> Option<(usize, PagePlan)> {
    let plans = crate::plan::queue::after_itself(reqs, preferred, g).ok()?;
    plans
        .into_iter()
        .enumerate()
        .skip(1)
        .find(|(_, p)| p.exceeds_capacity(g))
}

/// Whether `reqs` fit (I-S5) after `start` and after the identity order, and in every plan of
/// the task after itself from either: what a fix of an E0107 must hold, or it would trade one
/// overflow for another.
pub(super) fn fits_along_the_walk(reqs: &[RegionRequest], g: &Geometry, start: &[usize]) -> bool {
    let fits = |order: &[usize]| pages::plan(reqs, order, g).is_ok_and(|p| !p.exceeds_capacity(g));
    let identity = pages::identity_order(g);
    fits(start)
        && fits(&identity)
        && overflow_after_itself(reqs, start, g).is_none()
        && overflow_after_itself(reqs, &identity, g).is_none()
}

/// The requests of `ir`'s region groups in the order `groups`, each cut to its first
/// `keep(group)` members.
fn group_requests(
    ir: &TaskIr,
    groups: impl IntoIterator<Item = usize>,
    keep: impl Fn(&crate::ir::RegionGroup) -> usize,
) -> Vec<RegionRequest> {
    groups
        .into_iter()
        .flat_map(|gi| {
            let gr = &ir.region_groups[gi];
            gr.members
                .iter()
                .take(keep(gr))
                .map(|h| to_req(&ir.regions[*h]))
        })
        .collect()
}

/// The declaration order fix of an I-S5 overflow: moving one region group to the front makes
/// the regions of the partial logical page claim the preferred order first, and the moved set
/// fits along the walk ([`fits_along_the_walk`]). Returns the group.
///
/// The declaration order is the contract's text, shared by every instance and range end: the
/// group must also fit along the walk in each of `siblings` ([`CheckOptions::siblings`]) on
/// each of its targets, or the fix would trade this overflow for another instance's.
fn remap_fix(ir: &TaskIr, g: &Geometry, preferred: &[usize], siblings: &[TaskIr]) -> Option<usize> {
    // A helper's regions follow the task's own and cannot be moved by the task's author.
    let helper_group = |gi: usize| ir.helpers.iter().any(|h| h.region_groups.contains(&gi));
    let n = ir.region_groups.len();
    (1..n).filter(|&gi| !helper_group(gi)).find(|&front| {
        front_fits(ir, front, g, preferred)
            && siblings.iter().all(|s| {
                let name = &ir.region_groups[front].name;
                s.region_groups
                    .iter()
                    .position(|gr| &gr.name == name)
                    .is_some_and(|sf| {
                        s.targets
                            .iter()
                            .all(|t| front_fits(s, sf, &geometry(t), preferred))
                    })
            })
    })
}

/// Whether `ir`'s regions fit along the walk ([`fits_along_the_walk`]) with group `front`
/// declared first.
fn front_fits(ir: &TaskIr, front: usize, g: &Geometry, preferred: &[usize]) -> bool {
    let n = ir.region_groups.len();
    let order = std::iter::once(front).chain((0..n).filter(|&x| x != front));
    let reqs = group_requests(ir, order, |gr| gr.members.len());
    fits_along_the_walk(&reqs, g, preferred)
}

/// The most stages below the task's that fit along the walk ([`fits_along_the_walk`] from
/// `start`): the task's regions with every staged group cut to its first `n` members. `None`
/// without a staged group, or when no count does. `stages n` is the contract's text: `n` must
/// also fit each of `siblings` ([`CheckOptions::siblings`]) that has at least `n` stages, on each
/// of its targets (one with fewer is planned at `n` from regions it does not have, and is not
/// judged).
fn fewer_stages(ir: &TaskIr, g: &Geometry, start: &[usize], siblings: &[TaskIr]) -> Option<usize> {
    let stages = max_stages(ir)?;
    (1..stages).rev().find(|&n| {
        cut_fits(ir, n, g, start)
            && siblings
                .iter()
                .filter(|s| max_stages(s).is_some_and(|m| m >= n))
                .all(|s| {
                    s.targets
                        .iter()
                        .all(|t| cut_fits(s, n, &geometry(t), start))
                })
    })
}

/// The most members of a staged region group of `ir` (its stage count); `None` without one.
fn max_stages(ir: &TaskIr) -> Option<usize> {
    ir.region_groups
        .iter()
        .filter(|gr| gr.staged)
        .map(|gr| gr.members.len())
        .max()
}

/// Whether `ir`'s regions, every staged group cut to its first `n` members, fit along the walk.
fn cut_fits(ir: &TaskIr, n: usize, g: &Geometry, start: &[usize]) -> bool {
    let reqs = group_requests(ir, 0..ir.region_groups.len(), |gr| {
        if gr.staged {
            n
        } else {
            gr.members.len()
        }
    });
    fits_along_the_walk(&reqs, g, start)
}

/// E0107 (I-S5): the remap put a region past the capacity for the order being planned.
/// `start`: the order the task was planned after first (`--preferred`, else the identity), from
/// which the task-after-itself walk starts; a fix must hold along that walk.
pub(super) fn remap_overflow(
    ir: &TaskIr,
    t: &TargetIr,
    g: &Geometry,
    p: &PagePlan,
    start: &[usize],
    siblings: &[TaskIr],
) -> Diagnostic {
    let worst = p
        .regions
        .iter()
        .filter(|r| !r.pages.is_empty())
        .max_by_key(|r| r.end_bytes());
    let (name, end, page) = worst.map_or(("?", 0, 0), |r| {
        (
            r.name.as_str(),
            r.end_bytes(),
            *r.pages.last().unwrap_or(&0),
        )
    });
    let logical = worst
        .and_then(|r| r.logical_pages.last().copied())
        .unwrap_or(0);
    let on_logical: i64 = p.bytes_on_logical(logical);
    let single_page = worst.is_some_and(|r| r.logical_pages.len() == 1);
    let span = ir
        .region_by_name(name)
        .map_or(ir.span, |h| ir.regions[h].span);
    let identity = p.preferred == pages::identity_order(g);
    let order = if identity {
        "the identity page order".to_string()
    } else {
        format!("the preferred order {:?}", p.preferred)
    };
    // A fix for this build alone that another instance or range end would not survive is a
    // note, not the help.
    let alone = remap_fix(ir, g, start, &[]);
    let every = if siblings.is_empty() {
        alone
    } else {
        remap_fix(ir, g, start, siblings)
    };
    let shared_note = match (alone, every) {
        (Some(gi), None) => Some(format!(
            "declaring `{}` first would fit this build, but not every other instance or param-range end of the task: the declaration order is the contract's, shared by all of them",
            ir.region_groups[gi].name
        )),
        _ => None,
    };
    let help = match (every, fewer_stages(ir, g, start, siblings)) {
        (Some(gi), _) => format!(
            "declare `{}` first: its regions then take physical pages before logical page {logical} does (region ordinals change)",
            ir.region_groups[gi].name
        ),
        (None, Some(n)) => format!(
            "use `stages {n}`: with {n} stages the task's plans fit, its first and those after itself"
        ),
        // A capacity the target declares below the runtime's default leaves pages with no
        // bytes at all: the declared capacity is the likelier fault than the regions.
        (None, None)
            if g.page_capacity(page) == 0
                && g.capacity_bytes < crate::ir::DEFAULT_SMEM_CAPACITY_BYTES =>
        {
            format!(
                "`{}(smem {})` leaves physical page {page} no bytes: MPK's runtime gives every task {} bytes (`smem 224256`, the default, or `smem 227328`); drop the `smem` setting, or declare fewer or smaller regions",
                t.target,
                g.capacity_bytes,
                crate::ir::DEFAULT_SMEM_CAPACITY_BYTES
            )
        }
        (None, None) if g.page_capacity(page) == 0 => format!(
            "physical page {page} holds no bytes of the {}-byte SMEM: declare fewer or smaller regions, so that no page is remapped onto it",
            g.capacity_bytes
        ),
        (None, None) => format!("keep logical page {logical} within {} bytes, so that physical page {page} can hold it", g.page_capacity(page)),
    };
    let d = Diagnostic::error(
        codes::REMAP_OVERFLOW,
        format!("after {order}, region `{name}` ends at byte {end}, {} past the {} bytes of {}", end - g.capacity_bytes, g.capacity_bytes, t.target),
    )
    .primary(span, format!("lands on physical page {page}"))
    .note(format!(
        "MPK's physical remap maps logical page {logical} ({on_logical} bytes used) onto physical page {page}, which holds only {}; logical to physical: {:?}",
        g.page_capacity(page),
        p.logical_to_physical
    ));
    let d = match shared_note {
        Some(n) => d.note(n),
        None => d,
    };
    // Multi-page regions are placed before the preferred order is consulted (step 4e (i)).
    let d = if single_page {
        let larger = if ir.tile.is_some() {
            "stages of larger regions (a larger tile K)"
        } else {
            "larger regions"
        };
        d.note(format!("only single-page regions follow the predecessor's release order: MPK gives a region of two or more pages the lowest free run of physical pages (contract doc §1.4, step 4e), so {larger} are placed from page 0 up whatever ran before"))
    } else {
        d
    };
    d.help(help)
}
