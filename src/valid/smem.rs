//! SMEM and planner rules (I-S1, I-S2, I-S3, I-S4, I-S5, I-S8), run on MPK's own algorithm.

use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::{exact, ArrivalIr, ChannelStorageIr, RegionIr, TargetIr, TaskIr};
use crate::plan::pages::{self, Geometry, PagePlan, PlanError, RegionRequest, PAGE_SIZE};

use super::CheckOptions;

/// The regions of `ir` as MPK's `TaskSmemRegion` list, in declaration (ordinal) order.
pub fn request_list(ir: &TaskIr) -> Vec<RegionRequest> {
    ir.regions.values().map(to_req).collect()
}

/// I-S1 per region and I-S2 on the count. Returns false when any fails.
fn region_rules(ir: &TaskIr, sink: &mut Sink) -> bool {
    let before = sink.error_count();
    for r in ir.regions.values() {
        if r.size < 0 {
            sink.push(
                Diagnostic::error(
                    codes::REGION_SIZE,
                    format!("region `{}` has size {} bytes", r.name, r.size),
                )
                .primary(r.bytes_span, format!("evaluates to {}", r.size))
                .note("MPK's planner rejects negative sizes (`invalid_size`)")
                .help("give the region zero or more bytes"),
            );
        }
        if r.align <= 0 || (r.align & (r.align - 1)) != 0 {
            let up = if r.align <= 0 {
                1
            } else {
                (r.align as u64).next_power_of_two()
            };
            sink.push(
                Diagnostic::error(codes::REGION_ALIGN, format!("region `{}` has alignment {}, which is not a power of two", r.name, r.align))
                    .primary(r.align_span, format!("alignment {}", r.align))
                    .note("MPK's planner packs with align_up(offset, alignment) and rejects other values (`invalid_alignment`)")
                    .help(format!("use a power of two, e.g. `align {up}`")),
            );
        }
        if r.page_count >= 0
            && r.size >= 0
            && exact::mul(r.page_count, PAGE_SIZE) < i128::from(r.size)
        {
            let need = exact::ceil_div(r.size, PAGE_SIZE);
            sink.push(
                Diagnostic::error(
                    codes::REGION_PAGES,
                    format!(
                        "region `{}` asks for {} page{} ({} bytes) but needs {} bytes",
                        r.name,
                        r.page_count,
                        if r.page_count == 1 { "" } else { "s" },
                        exact::mul(r.page_count, PAGE_SIZE),
                        r.size
                    ),
                )
                .primary(
                    r.pages_span.unwrap_or(r.span),
                    format!("{} pages", r.page_count),
                )
                .secondary(r.bytes_span, format!("{} bytes", r.size))
                .help(format!(
                    "ask for at least {need} pages, or drop `pages` to derive it"
                )),
            );
        }
        let i32_max = i64::from(i32::MAX);
        let range_err = |what: String, span, help: &str| {
            Diagnostic::error(codes::REGION_RANGE, what)
                .primary(span, "out of range")
                .help(help.to_string())
        };
        if r.align > i32_max {
            sink.push(range_err(
                format!(
                    "region `{}` has alignment {}, beyond MPK's 32-bit `alignment`",
                    r.name, r.align
                ),
                r.align_span,
                "align to at most a page, 16384 bytes",
            ));
        }
        if r.page_count > crate::plan::pages::NUM_PAGES as i64 {
            sink.push(range_err(
                format!(
                    "region `{}` asks for {} pages; a task has {}",
                    r.name,
                    r.page_count,
                    crate::plan::pages::NUM_PAGES
                ),
                r.pages_span.unwrap_or(r.span),
                "ask for at most 14 pages, or drop `pages` to derive the count from `bytes`",
            ));
        }
        if r.release_step < 0 || r.release_step > i32_max {
            sink.push(range_err(
                format!(
                    "region `{}` has release step {}; steps are 0 or more and fit 32 bits",
                    r.name, r.release_step
                ),
                r.span,
                "use a release step such as the stage index + 1",
            ));
        }
        if !r.contiguous {
            sink.push(
                Diagnostic::error(codes::NONCONTIGUOUS, format!("region `{}` is declared non-contiguous", r.name))
                    .primary(r.span, "`contiguous false`")
                    .note("MPK's planner supports only contiguous regions (`non_contiguous_region_unsupported`)")
                    .help("remove `contiguous false`; split the data into several regions instead"),
            );
        }
    }
    if ir.regions.len() > 16 {
        let mut d = Diagnostic::error(
            codes::TOO_MANY_REGIONS,
            format!(
                "task `{}` declares {} regions; MPK allows 16",
                ir.name,
                ir.regions.len()
            ),
        )
        .primary(
            ir.regions.values().nth(16).map_or(ir.span, |r| r.span),
            "the 17th region",
        );
        for g in ir.region_groups.iter().filter(|g| g.staged) {
            d = d.secondary(
                g.head_span,
                format!("{} regions from this stage array", g.members.len()),
            );
        }
        sink.push(
            d.note("MAX_SMEM_REGIONS_PER_TASK is 16 (register_variant_smem_info throws beyond it)")
                .help("merge regions: e.g. one region per stage array with a stride, as the fp8 group GEMM's BSF region does"),
        );
    }
    sink.error_count() == before
}

/// The page geometry of target `t`: MPK's 14 pages of 16 KB within its SMEM capacity.
fn geometry(t: &TargetIr) -> Geometry {
    Geometry {
        capacity_bytes: t.smem_capacity_bytes,
        ..Geometry::default()
    }
}

/// I-S3, I-S4 and I-S5 for every target. Returns one plan per target when all pass.
pub(super) fn budget(
    ir: &TaskIr,
    opts: &CheckOptions,
    sink: &mut Sink,
) -> Option<Vec<(TargetIr, Geometry, PagePlan)>> {
    if !region_rules(ir, sink) {
        return None;
    }
    let reqs = request_list(ir);
    let mut plans = Vec::new();
    for t in &ir.targets {
        let g = geometry(t);
        let total = exact::sum(reqs.iter().map(|r| r.size));
        if total > i128::from(g.capacity_bytes) {
            sink.push(over_budget(ir, t, &g, &reqs, total));
            continue;
        }
        let preferred = opts
            .preferred
            .clone()
            .unwrap_or_else(|| pages::identity_order(&g));
        match pages::plan(&reqs, &preferred, &g) {
            Ok(p) => {
                if p.exceeds_capacity(&g) {
                    sink.push(remap_overflow(ir, t, &g, &p, &preferred, &opts.siblings));
                    continue;
                }
                if let Some((n, q)) = overflow_after_itself(&reqs, &preferred, &g) {
                    sink.push(remap_overflow(ir, t, &g, &q, &preferred, &opts.siblings).note(format!(
                        "MPK plans each task after the one before it on its SM (contract doc §1.4, step 3): this is the plan of the task after {n} of its own tasks, as every SM runs it when the op has more tasks than SMs or repeats"
                    )));
                    continue;
                }
                plans.push((t.clone(), g, p));
            }
            Err(PlanError::CapacityExceeded { index, .. }) => {
                sink.push(placement_failure(ir, t, &g, &reqs, index))
            }
            Err(e) => sink.push(
                Diagnostic::error(
                    codes::PLACEMENT,
                    format!("MPK's planner rejects the regions for {}: {e}", t.target),
                )
                .primary(ir.name_span, "in this task")
                .help("report this: the region rules above should have caught it"),
            ),
        }
    }
    (plans.len() == ir.targets.len()).then_some(plans)
}

/// The pages the regions would take with more pages (the page total of an over-budget set), as
/// words: "N pages" as MPK's planner places them on 64 pages, else "at least N pages" (the total
/// bytes over the page size, a true lower bound).
fn pages_needed(reqs: &[RegionRequest], total: i128) -> String {
    let g = Geometry {
        page_size: PAGE_SIZE,
        num_pages: 64,
        capacity_bytes: 64 * PAGE_SIZE,
    };
    match pages::plan(reqs, &pages::identity_order(&g), &g) {
        Ok(p) if !p.exceeds_capacity(&g) => format!("{} pages", p.pages_used),
        _ => format!(
            "at least {} pages",
            exact::ceil_div_wide(total, PAGE_SIZE).max(64)
        ),
    }
}

fn group_bytes(ir: &TaskIr, g: usize) -> i128 {
    exact::sum(
        ir.region_groups[g]
            .members
            .iter()
            .map(|h| ir.regions[*h].size),
    )
}

fn group_label(ir: &TaskIr, gi: usize) -> String {
    let g = &ir.region_groups[gi];
    let sizes: Vec<i64> = g.members.iter().map(|h| ir.regions[*h].size).collect();
    if g.staged {
        if sizes.windows(2).all(|w| w[0] == w[1]) {
            format!(
                "{} stages of {} bytes each",
                sizes.len(),
                sizes.first().copied().unwrap_or(0)
            )
        } else {
            format!(
                "{} stages, {} bytes in all",
                sizes.len(),
                exact::sum(sizes.iter().copied())
            )
        }
    } else {
        format!("{} bytes", sizes.first().copied().unwrap_or(0))
    }
}

fn breakdown(ir: &TaskIr) -> String {
    let parts: Vec<String> = ir
        .region_groups
        .iter()
        .enumerate()
        .map(|(gi, g)| {
            let sizes: Vec<i64> = g.members.iter().map(|h| ir.regions[*h].size).collect();
            if g.staged && sizes.windows(2).all(|w| w[0] == w[1]) {
                format!(
                    "{} x {} ({})",
                    sizes.len(),
                    sizes.first().copied().unwrap_or(0),
                    g.name
                )
            } else {
                format!("{} ({})", group_bytes(ir, gi), g.name)
            }
        })
        .collect();
    parts.join(" + ")
}

/// The cheapest fix: the largest stage count that fits, else shrinking the largest region.
fn cheapest_fix(ir: &TaskIr, g: &Geometry, total: i128) -> String {
    if let Some((stages, _)) = ir.stages {
        for s in (1..stages).rev() {
            let reqs: Vec<RegionRequest> = ir
                .regions
                .values()
                .filter(|r| r.stage.is_none_or(|k| k < s))
                .map(to_req)
                .collect();
            let bytes = exact::sum(reqs.iter().map(|r| r.size));
            if bytes > i128::from(g.capacity_bytes) {
                continue;
            }
            if let Ok(p) = pages::plan(&reqs, &pages::identity_order(g), g) {
                if !p.exceeds_capacity(g) {
                    return format!(
                        "lower `stages` from {stages} to {s} ({bytes} bytes, {} pages)",
                        p.pages_used
                    );
                }
            }
        }
    }
    let largest = ir.regions.values().max_by_key(|r| r.size);
    match largest {
        Some(r) => format!(
            "shrink the regions by {} bytes, e.g. `{}` ({} bytes)",
            total - i128::from(g.capacity_bytes),
            r.name,
            r.size
        ),
        None => "shrink the regions".to_string(),
    }
}

fn to_req(r: &RegionIr) -> RegionRequest {
    RegionRequest {
        name: r.name.clone(),
        size: r.size,
        alignment: r.align,
        page_count: r.page_count,
        can_pack: r.can_pack,
        release_step: r.release_step,
        contiguous: r.contiguous,
    }
}

/// E0103 (I-S3): labels the largest region groups with their bytes, states total, limit, overshoot.
fn over_budget(
    ir: &TaskIr,
    t: &TargetIr,
    g: &Geometry,
    reqs: &[RegionRequest],
    total: i128,
) -> Diagnostic {
    let mut groups: Vec<usize> = (0..ir.region_groups.len()).collect();
    groups.sort_by_key(|&gi| (std::cmp::Reverse(group_bytes(ir, gi)), gi));
    let mut d = Diagnostic::error(
        codes::SMEM_BUDGET,
        format!(
            "regions need {total} bytes of shared memory but {} allows {}",
            t.target, g.capacity_bytes
        ),
    );
    for (i, &gi) in groups.iter().take(3).enumerate() {
        let span = ir.region_groups[gi].head_span;
        let label = group_label(ir, gi);
        d = if i == 0 {
            d.primary(span, label)
        } else {
            d.secondary(span, label)
        };
    }
    // A single large region whose size is a sum: show its terms as written.
    let biggest = ir.regions.values().max_by_key(|r| r.size);
    if let Some(r) = biggest.filter(|r| !r.bytes_terms.is_empty() && exact::mul(r.size, 2) > total)
    {
        let terms: Vec<String> = r
            .bytes_terms
            .iter()
            .map(|(s, v)| format!("{v} (`{s}`)"))
            .collect();
        d = d.note(format!(
            "`{}` is {} = {} bytes",
            r.name,
            terms.join(" + "),
            r.size
        ));
    }
    d.note(format!(
        "{} = {total} bytes, {} over the {} of {}",
        breakdown(ir),
        total - i128::from(g.capacity_bytes),
        g.capacity_bytes,
        t.target
    ))
    .note(format!(
        "the regions would take {} of {PAGE_SIZE} bytes; a task has 14, and the last holds only {}",
        pages_needed(reqs, total),
        g.page_capacity(13)
    ))
    .help(cheapest_fix(ir, g, total))
}

/// E0106 (I-S4): first-fit cannot place the region at `index`. When a small exhaustive search
/// finds a placement, a note gives it, and the help gives a merge that MPK's algorithm accepts.
fn placement_failure(
    ir: &TaskIr,
    t: &TargetIr,
    g: &Geometry,
    reqs: &[RegionRequest],
    index: usize,
) -> Diagnostic {
    let r = ir.regions.values().nth(index);
    let span = r.map_or(ir.span, |r| r.span);
    let name = r.map_or("?", |r| r.name.as_str());
    let total = exact::sum(reqs.iter().map(|r| r.size));
    let size = reqs.get(index).map_or(0, |r| r.size);
    let derived_pages = if size > 0 {
        exact::ceil_div(size, PAGE_SIZE)
    } else {
        0
    };
    let mut d = Diagnostic::error(
        codes::PLACEMENT,
        format!("MPK's planner finds no room for region `{name}` on {} although the regions total {total} of {} bytes", t.target, g.capacity_bytes),
    )
    .primary(span, format!("{size} bytes, no page with room"))
    .note(format!(
        "the planner places page runs first-fit, then packs the rest in size order into pages of {PAGE_SIZE} bytes; page 13 holds only {}",
        g.page_capacity(13)
    ));
    // `pages N` reserves whole pages whatever the bytes: the byte total above leaves them out.
    let over: Vec<&RegionRequest> = reqs
        .iter()
        .filter(|r| r.page_count > 0 && r.page_count > exact::ceil_div(r.size.max(0), PAGE_SIZE))
        .collect();
    let reserved: Vec<String> = over
        .iter()
        .map(|r| {
            format!(
                "`{}` reserves {} pages (`pages {}`) for {} bytes",
                r.name, r.page_count, r.page_count, r.size
            )
        })
        .collect();
    let reserving: Vec<String> = over.iter().map(|r| format!("`{}`", r.name)).collect();
    if !reserved.is_empty() {
        d = d.note(format!(
            "{}: whole pages no other region can use, not counted in the byte total",
            reserved.join("; ")
        ));
    }
    // The region that takes the most whole pages is what a shrink frees most of.
    let widest = reqs
        .iter()
        .filter(|r| r.size >= PAGE_SIZE)
        .max_by_key(|r| r.size)
        .map(|r| {
            // A page run holds no other region in its last page: a size just past whole pages
            // costs a page that shrinking it by less than the overhang does not free.
            let over = r.size % PAGE_SIZE;
            if over == 0 {
                format!(" (the largest, `{}`, {} bytes)", r.name, r.size)
            } else {
                format!(
                    " (the largest, `{}`, {} bytes, takes {} whole pages: at {} bytes it takes one fewer)",
                    r.name,
                    r.size,
                    exact::ceil_div(r.size, PAGE_SIZE),
                    r.size - over
                )
            }
        })
        .unwrap_or_default();
    // Alignment padding matters only where it is more than a vector's.
    let align = if reqs.get(index).is_some_and(|r| r.alignment > 16) {
        "lower its alignment, or "
    } else {
        ""
    };
    let mut help = if reqs.get(index).is_some_and(|r| r.can_pack) {
        format!(
            "{}shrink the regions that take whole pages{widest}",
            if align.is_empty() {
                ""
            } else {
                "lower the region's alignment, or "
            }
        )
    } else {
        format!(
            "make the region packable (`pack`), {}shrink the regions that take whole pages{widest}",
            if align.is_empty() { "or " } else { align }
        )
    };
    if derived_pages > 13 {
        help = format!("`{name}` alone needs {derived_pages} pages of {PAGE_SIZE} bytes; shrink it below {} bytes", g.capacity_bytes);
    } else if let Some(pages) = pages::search_packing(reqs, g) {
        let shown: Vec<String> = pages
            .iter()
            .enumerate()
            .filter(|(_, v)| !v.is_empty())
            .map(|(p, v)| {
                format!(
                    "page {p}: {}",
                    v.iter()
                        .map(|&i| reqs[i].name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })
            .collect();
        d = d.note(format!("a placement exists that MPK's first-fit (larger packable regions first) does not find: {}", shown.join("; ")));
        if let Some(merge) = merge_fix(reqs, g, &pages) {
            help = merge;
        }
    }
    if !reserving.is_empty() {
        help = format!(
            "lower or drop `pages` on {} (the pages it reserves past its bytes), or {help}",
            reserving.join(", ")
        );
    }
    d.help(help)
}

/// A merge of the regions one page of `pages` holds into one region, verified with MPK's planner
/// (declared where the first of them was, or else first of all: the remap maps single-page
/// regions in declaration order, I-S5).
fn merge_fix(reqs: &[RegionRequest], g: &Geometry, pages: &[Vec<usize>]) -> Option<String> {
    for group in pages.iter().filter(|v| v.len() > 1) {
        let mut bytes = 0i64;
        for &i in group {
            bytes = (bytes + reqs[i].alignment - 1) / reqs[i].alignment * reqs[i].alignment
                + reqs[i].size;
        }
        let align = group.iter().map(|&i| reqs[i].alignment).max().unwrap_or(1);
        let merged = RegionRequest {
            name: "merged".into(),
            size: bytes,
            alignment: align,
            page_count: -1,
            can_pack: false,
            release_step: 0,
            contiguous: true,
        };
        let rest: Vec<RegionRequest> = reqs
            .iter()
            .enumerate()
            .filter(|(i, _)| !group.contains(i))
            .map(|(_, r)| r.clone())
            .collect();
        let first = group.iter().copied().min().unwrap_or(0);
        let at_first = reqs
            .iter()
            .take(first)
            .filter(|r| !group.iter().any(|&i| reqs[i].name == r.name))
            .count();
        let names: Vec<&str> = group.iter().map(|&i| reqs[i].name.as_str()).collect();
        for (pos, where_) in [
            (at_first, String::new()),
            (0, " and declare it first".to_string()),
        ] {
            let mut cand = rest.clone();
            cand.insert(pos.min(cand.len()), merged.clone());
            if pages::plan(&cand, &pages::identity_order(g), g)
                .is_ok_and(|p| !p.exceeds_capacity(g))
            {
                return Some(format!(
                    "merge {} into one region of {bytes} bytes (not packable){where_}: MPK then gives it a page of its own and the rest fits",
                    names.join(", ")
                ));
            }
        }
    }
    None
}

/// I-S5 over the orders the task meets after itself (`plan::queue::after_itself`, starting at
/// `preferred`): the first plan that overflows, with the number of the task's own plans before
/// it. `None` when every plan of the cycle fits (or MPK's planner rejects one: reported
/// elsewhere).
fn overflow_after_itself(
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
fn fits_along_the_walk(reqs: &[RegionRequest], g: &Geometry, start: &[usize]) -> bool {
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
fn remap_overflow(
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

/// I-S8: TMA destinations need the swizzle atom's alignment (1024 B for 128B, 512 for 64B,
/// 256 for 32B), both declared and planned.
pub(super) fn swizzle_alignment(
    ir: &TaskIr,
    plans: &[(TargetIr, Geometry, PagePlan)],
    sink: &mut Sink,
) {
    for ch in ir.channels.values() {
        let (ChannelStorageIr::Region(gi), ArrivalIr::Tma(tensors)) =
            (&ch.storage, &ch.full_arrival)
        else {
            continue;
        };
        let Some(need) = tensors
            .iter()
            .filter_map(|t| {
                ir.tensors[*t]
                    .tma
                    .as_ref()
                    .map(|m| (m.swizzle.atom_align_bytes(), m.swizzle, *t))
            })
            .max_by_key(|x| x.0)
        else {
            continue;
        };
        let (atom, swz, th) = need;
        for h in &ir.region_groups[*gi].members {
            let r = &ir.regions[*h];
            if r.align < atom {
                sink.push(
                    Diagnostic::error(
                        codes::SWIZZLE_ALIGN,
                        format!("region `{}` receives {} swizzled TMA boxes but is aligned to {} bytes; the swizzle atom needs {atom}", r.name, swz.as_str(), r.align),
                    )
                    .primary(r.align_span, format!("align {}", r.align))
                    .secondary(ir.tensors[th].span, format!("swizzle {} here", swz.as_str()))
                    .secondary(ch.span, "lands through this channel")
                    .help(format!("write `align {atom}`")),
                );
                break;
            }
            for (t, _, p) in plans {
                let base = p.regions[h.index()].base_bytes();
                if base % atom != 0 {
                    sink.push(
                        Diagnostic::error(codes::SWIZZLE_ALIGN, format!("region `{}` is planned at byte {base} on {}, not a multiple of the {atom}-byte swizzle atom", r.name, t.target))
                            .primary(r.span, format!("planned at {base}"))
                            .help(format!("write `align {atom}`")),
                    );
                }
            }
        }
    }
}

/// The most dynamic SMEM MPK's runtime ever gives the planner: 225 KiB less the 3 KiB static
/// reserve of non-Grace builds (contract doc §1.1).
pub const MAX_RUNTIME_SMEM_BYTES: i64 = 227_328;

/// I-S6: a target's planner capacity never exceeds what the runtime gives tasks (at most
/// 227,328 bytes: 225 KiB less a 3 KiB static reserve; 224,256 with the 6 KiB of Grace builds),
/// let alone the 232,448 bytes a block may opt into on sm_90 and sm_100.
pub(super) fn target_capacity(ir: &TaskIr, sink: &mut Sink) {
    for t in &ir.targets {
        if t.smem_capacity_bytes > MAX_RUNTIME_SMEM_BYTES {
            sink.push(
                Diagnostic::error(
                    codes::TARGET_CAPACITY,
                    if t.smem_capacity_bytes > crate::ir::MAX_OPTIN_SMEM_BYTES {
                        format!("{} is given {} bytes of SMEM, above the {} a block can opt into", t.target, t.smem_capacity_bytes, crate::ir::MAX_OPTIN_SMEM_BYTES)
                    } else {
                        format!("{} is given {} bytes of SMEM, above the {MAX_RUNTIME_SMEM_BYTES} MPK's runtime gives tasks", t.target, t.smem_capacity_bytes)
                    },
                )
                .primary(t.span, format!("smem {}", t.smem_capacity_bytes))
                .note("MPK's runtime sets 225 KiB less the static reserve: 224256 bytes with the 6 KiB of Grace builds, 227328 with 3 KiB")
                .help("use `smem 224256` (the default) or `smem 227328`"),
            );
        }
    }
}

/// The plans MPK's planner produces for `ir` on each target, whatever the rules say (for `mpkc
/// plan` to show a rejected plan, e.g. one that overflows page 13 after the remap). Targets whose
/// regions the planner itself rejects are left out.
pub fn raw_plans(ir: &TaskIr, opts: &CheckOptions) -> Vec<(TargetIr, Geometry, PagePlan)> {
    let reqs = request_list(ir);
    ir.targets
        .iter()
        .filter_map(|t| {
            let g = geometry(t);
            let preferred = opts
                .preferred
                .clone()
                .unwrap_or_else(|| pages::identity_order(&g));
            pages::plan(&reqs, &preferred, &g)
                .ok()
                .map(|p| (t.clone(), g, p))
        })
        .collect()
}
