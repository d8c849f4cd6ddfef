//! The SMEM budget's diagnostics: E0103 (I-S3, the regions' bytes past the capacity) and E0106
//! (I-S4, MPK's planner finds no page with room), each with the fix that frees the most.

use super::to_req;
use crate::diag::{codes, Diagnostic};
use crate::ir::{exact, TargetIr, TaskIr};
use crate::plan::pages::{self, Geometry, RegionRequest, PAGE_SIZE};

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

/// What the pages of geometry `g` hold, after "a task has 14": "and the last holds only 11264"
/// where only the last page is partial (MPK's 224,256 bytes, or 227,328), else how many pages
/// are whole, the one partial page and how many hold nothing at the target's capacity (a custom
/// `smem` below 13 pages: "the last holds only 0" would hide that most pages hold nothing).
fn pages_room(g: &Geometry) -> String {
    let n = g.num_pages;
    let whole = (0..n)
        .filter(|&p| g.page_capacity(p) == g.page_size)
        .count();
    let partial = (0..n).find(|&p| (1..g.page_size).contains(&g.page_capacity(p)));
    let empty = (0..n).filter(|&p| g.page_capacity(p) == 0).count();
    match partial {
        None if empty == 0 => "every one whole".to_string(),
        Some(p) if p + 1 == n => {
            format!("and the last holds only {}", g.page_capacity(p))
        }
        Some(p) => format!(
            "but at {} bytes of SMEM {whole} {} whole, page {p} holds only {} and the other {empty} nothing",
            g.capacity_bytes,
            if whole == 1 { "is" } else { "are" },
            g.page_capacity(p)
        ),
        None => format!(
            "but at {} bytes of SMEM {whole} {} whole and the other {empty} hold nothing",
            g.capacity_bytes,
            if whole == 1 { "is" } else { "are" }
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

/// E0103 (I-S3): labels the largest region groups with their bytes, states total, limit, overshoot.
pub(super) fn over_budget(
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
        "the regions would take {} of {PAGE_SIZE} bytes; a task has {}, {}",
        pages_needed(reqs, total),
        g.num_pages,
        pages_room(g)
    ))
    .help(cheapest_fix(ir, g, total))
}

/// E0106 (I-S4): first-fit cannot place the region at `index`. When a small exhaustive search
/// finds a placement, a note gives it, and the help gives a merge that MPK's algorithm accepts.
pub(super) fn placement_failure(
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
    .note(match g.num_pages.checked_sub(1).map(|last| (last, g.page_capacity(last))) {
        Some((last, room)) if room > 0 && room < g.page_size => format!(
            "the planner places page runs first-fit, then packs the rest in size order into pages of {PAGE_SIZE} bytes; page {last} holds only {room}"
        ),
        _ => format!(
            "the planner places page runs first-fit, then packs the rest in size order into pages of {PAGE_SIZE} bytes; a task has {}, {}",
            g.num_pages,
            pages_room(g)
        ),
    });
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
    if !reserved.is_empty() {
        d = d.note(format!(
            "{}: whole pages no other region can use, not counted in the byte total",
            reserved.join("; ")
        ));
    }
    if derived_pages > 13 {
        return d.help(format!("`{name}` alone needs {derived_pages} pages of {PAGE_SIZE} bytes; shrink it below {} bytes", g.capacity_bytes));
    }
    // Each fix offered is one MPK's planner accepts (and that overflows no page after the remap,
    // E0107), tried on the requests with that one change: the help says only what would work.
    let mut fixes: Vec<String> = Vec::new();
    if let Some(pages) = pages::search_packing(reqs, g) {
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
        fixes.extend(merge_fix(reqs, g, &pages));
    }
    fixes.extend(checked_fixes(t, g, reqs, index, &over));
    let help = match fixes.as_slice() {
        [] => format!(
            "no single change mpkc tries makes the regions fit (packing a region, a lower alignment, one page fewer for a region of several pages{}{}): shrink or merge regions until MPK's planner places them (`mpkc plan` shows its pages)",
            if over.is_empty() { "" } else { ", dropping `pages`" },
            if t.smem_capacity_bytes < crate::ir::DEFAULT_SMEM_CAPACITY_BYTES {
                ", a larger `smem`"
            } else {
                ""
            }
        ),
        [one] => one.clone(),
        [init @ .., last] => format!("{}, or {last}", init.join(", ")),
    };
    d.help(help)
}

/// Whether MPK's planner places `reqs` in geometry `g` with no page past the capacity after the
/// remap, planned first and after itself (E0107's walk).
fn fits(reqs: &[RegionRequest], g: &Geometry) -> bool {
    super::remap::fits_along_the_walk(reqs, g, &pages::identity_order(g))
}

/// The fixes of an E0106 on region `index` that make `reqs` fit, each one change, each tried with
/// MPK's planner ([`fits`]), in this order: drop the `pages` of the regions in `over` (pages past
/// their bytes); make a single-page region packable (the failing one first; a packable region
/// shares a page only with packable ones, so this helps only where a page is not taken whole);
/// lower the failing packable region's alignment (to the highest power of two that fits); give
/// a region of several pages one page fewer (the largest first); and, where the target declares
/// less SMEM than MPK's default, the least page-multiple capacity that fits.
fn checked_fixes(
    t: &TargetIr,
    g: &Geometry,
    reqs: &[RegionRequest],
    index: usize,
    over: &[&RegionRequest],
) -> Vec<String> {
    let with = |i: usize, change: &dyn Fn(&mut RegionRequest)| {
        let mut c = reqs.to_vec();
        change(&mut c[i]);
        c
    };
    let mut fixes = Vec::new();
    let dropped: Vec<RegionRequest> = reqs
        .iter()
        .map(|r| {
            let mut r = r.clone();
            if over.iter().any(|o| o.name == r.name) {
                r.page_count = -1;
            }
            r
        })
        .collect();
    if !over.is_empty() && fits(&dropped, g) {
        let names: Vec<String> = over.iter().map(|r| format!("`{}`", r.name)).collect();
        fixes.push(format!(
            "lower or drop `pages` on {} (the pages it reserves past its bytes)",
            names.join(", ")
        ));
    }
    let packable =
        |r: &RegionRequest| !r.can_pack && r.size > 0 && r.size < PAGE_SIZE && r.page_count <= 1;
    let order = std::iter::once(index).chain((0..reqs.len()).filter(|&i| i != index));
    if let Some(i) = order
        .filter(|&i| reqs.get(i).is_some_and(packable))
        .find(|&i| fits(&with(i, &|r| r.can_pack = true), g))
    {
        fixes.push(if i == index {
            "make the region packable (`pack`)".to_string()
        } else {
            format!("make `{}` packable too (`pack`)", reqs[i].name)
        });
    }
    if let Some(r) = reqs.get(index).filter(|r| r.can_pack && r.alignment > 16) {
        let lower = std::iter::successors(Some(r.alignment / 2), |a| (*a > 16).then(|| a / 2))
            .find(|&a| fits(&with(index, &|r| r.alignment = a), g));
        if let Some(a) = lower {
            fixes.push(format!("lower its alignment to {a} (`align {a}`)"));
        }
    }
    let mut several: Vec<usize> = (0..reqs.len())
        .filter(|&i| reqs[i].size > PAGE_SIZE && reqs[i].page_count <= 0)
        .collect();
    several.sort_by_key(|&i| std::cmp::Reverse(reqs[i].size));
    if let Some((i, to)) = several.into_iter().find_map(|i| {
        let to = (exact::ceil_div(reqs[i].size, PAGE_SIZE) - 1) * PAGE_SIZE;
        fits(&with(i, &|r| r.size = to), g).then_some((i, to))
    }) {
        fixes.push(format!(
            "shrink `{}` from {} to {to} bytes (one whole page fewer)",
            reqs[i].name, reqs[i].size
        ));
    }
    if t.smem_capacity_bytes < crate::ir::DEFAULT_SMEM_CAPACITY_BYTES {
        let more = (1..=g.num_pages as i64)
            .map(|k| k * PAGE_SIZE)
            .chain([crate::ir::DEFAULT_SMEM_CAPACITY_BYTES])
            .filter(|&c| c > t.smem_capacity_bytes && c <= crate::ir::DEFAULT_SMEM_CAPACITY_BYTES)
            .find(|&c| {
                fits(
                    reqs,
                    &Geometry {
                        capacity_bytes: c,
                        ..*g
                    },
                )
            });
        if let Some(c) = more {
            fixes.push(format!(
                "give {} more SMEM: `{}(smem {c})`",
                t.target, t.target
            ));
        }
    }
    fixes
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
