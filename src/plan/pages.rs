//! The SMEM page planner: a faithful re-implementation of MPK's Runtime-V2 planner
//! (`python/mirage/mpk/v2_smem_planner.py`, contract doc §1.4), so that mpkc's plan is the plan
//! the runtime will use.
//!
//! Geometry: 14 pages of 16,384 B, capacity 224,256 B by default, so page 13 holds only 11,264 B
//! (`min(PAGE_SIZE, CAPACITY − page × PAGE_SIZE)`). Steps, per task:
//! 1. validate each region (size ≥ 0, alignment a power of two, contiguous, explicit page count
//!    large enough: I-S1);
//! 2. sort by `(packable ? 1 : 0, −page_count, −size)`, stable;
//! 3. allocate logical pages: page runs first-fit with `start × 16384 + size ≤ capacity`;
//!    packable regions into the first page with an aligned gap or aligned tail that fits the
//!    page's capacity;
//! 4. map logical → physical pages: multi-page regions (longest first, declaration order among
//!    equals) take the lowest free physical run; single-page regions in declaration order take
//!    the first unused page of the preferred order; remaining logical pages fill from it;
//! 5. release order: physical pages sorted by (max release step on the page, −1 if unused; id).
//!
//! The physical remap does not re-check capacity: a full logical page can land on the partial
//! physical page 13. The plan records `max_byte_end` so that I-S5 can reject it.

use serde::Serialize;

/// Page size in bytes (`TASK_SMEM_PAGE_SIZE`).
pub const PAGE_SIZE: i64 = 16 * 1024;
/// Pages per task (`MAX_SMEM_PAGES_PER_TASK`).
pub const NUM_PAGES: usize = 14;

/// Planner geometry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Bytes per page.
    pub page_size: i64,
    /// Pages per task.
    pub num_pages: usize,
    /// Usable dynamic SMEM, bytes (224,256 by default).
    pub capacity_bytes: i64,
}

impl Default for Geometry {
    fn default() -> Self {
        Geometry {
            page_size: PAGE_SIZE,
            num_pages: NUM_PAGES,
            capacity_bytes: crate::ir::DEFAULT_SMEM_CAPACITY_BYTES,
        }
    }
}

impl Geometry {
    /// Usable bytes of logical page `p`: `min(page_size, capacity − p × page_size)`, never negative.
    pub fn page_capacity(&self, p: usize) -> i64 {
        let rest = self.capacity_bytes - (p as i64) * self.page_size;
        rest.clamp(0, self.page_size)
    }
}

/// One region as the planner sees it (MPK's `TaskSmemRegion`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RegionRequest {
    /// Label.
    pub name: String,
    /// Bytes.
    pub size: i64,
    /// Packing alignment, bytes.
    pub alignment: i64,
    /// Explicit page count, or −1 to derive.
    pub page_count: i64,
    /// May share a page.
    pub can_pack: bool,
    /// Release step.
    pub release_step: i64,
    /// Must be true.
    pub contiguous: bool,
}

/// Why the planner rejects a region set. The first four are I-S1; `CapacityExceeded` is I-S4.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// `size < 0` (`invalid_size`).
    #[error("region {index} `{name}` has invalid size {size}")]
    InvalidSize {
        index: usize,
        name: String,
        size: i64,
    },
    /// Alignment not a positive power of two (`invalid_alignment`).
    #[error("region {index} `{name}` has invalid alignment {alignment}")]
    InvalidAlignment {
        index: usize,
        name: String,
        alignment: i64,
    },
    /// `page_count × page_size < size` (`page_count_too_small`).
    #[error("region {index} `{name}`: {page_count} pages hold {} bytes, fewer than its {size}", page_count * PAGE_SIZE)]
    PageCountTooSmall {
        index: usize,
        name: String,
        page_count: i64,
        size: i64,
    },
    /// `contiguous == false` (`non_contiguous_region_unsupported`).
    #[error("region {index} `{name}` is not contiguous")]
    NonContiguous { index: usize, name: String },
    /// First-fit found no place (`SMEM capacity exceeded while allocating region <name>`).
    #[error("SMEM capacity exceeded while allocating region {name}")]
    CapacityExceeded { index: usize, name: String },
    /// The logical→physical permutation failed (cannot happen for a valid preferred order).
    #[error("error assigning physical pages: {0}")]
    Remap(String),
}

impl PlanError {
    /// The planner case's error key (`capacity exceeded`, `invalid_size`, …).
    pub fn key(&self) -> &'static str {
        match self {
            PlanError::InvalidSize { .. } => "invalid_size",
            PlanError::InvalidAlignment { .. } => "invalid_alignment",
            PlanError::PageCountTooSmall { .. } => "page_count_too_small",
            PlanError::NonContiguous { .. } => "non_contiguous_region_unsupported",
            PlanError::CapacityExceeded { .. } => "capacity exceeded",
            PlanError::Remap(_) => "remap",
        }
    }
}

/// One placed region.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PlacedRegion {
    /// Label.
    pub name: String,
    /// Declaration index (`REGION_*` ordinal).
    pub ordinal: usize,
    /// Bytes.
    pub size: i64,
    /// Physical page ids (empty for size 0), ascending and consecutive.
    pub pages: Vec<usize>,
    /// Byte offset in the first page.
    pub offset: i64,
    /// Logical pages the allocation chose, before the remap.
    #[serde(skip)]
    pub logical_pages: Vec<usize>,
    /// Release step.
    #[serde(skip)]
    pub release_step: i64,
}

impl PlacedRegion {
    /// Byte offset from the dynamic SMEM base: `pages[0] × 16384 + offset`
    /// (`smem_region_offset(r)`), 0 for empty regions.
    pub fn base_bytes(&self) -> i64 {
        self.pages.first().map_or(0, |p| *p as i64 * PAGE_SIZE) + self.offset
    }

    /// One past the last byte: `base + size`.
    pub fn end_bytes(&self) -> i64 {
        self.base_bytes().saturating_add(self.size)
    }
}

/// A task's page plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PagePlan {
    /// Regions in declaration order.
    pub regions: Vec<PlacedRegion>,
    /// Physical pages holding at least one region.
    pub pages_used: usize,
    /// The next task's preferred physical order.
    pub release_order: Vec<usize>,
    /// One past the highest byte any region touches after the remap.
    pub max_byte_end: i64,
    /// `logical_to_physical[l]` = physical page of logical page `l`.
    pub logical_to_physical: Vec<usize>,
    /// The preferred order planned against.
    pub preferred: Vec<usize>,
}

impl PagePlan {
    /// True when the remap put a byte past the capacity (I-S5).
    pub fn exceeds_capacity(&self, g: &Geometry) -> bool {
        self.max_byte_end > g.capacity_bytes
    }

    /// The bytes used on logical page `l` before the remap: a whole page under a region that
    /// spans several, else the highest end of the regions on it (what the remap carries to the
    /// physical page, I-S5).
    pub fn bytes_on_logical(&self, l: usize) -> i64 {
        self.regions
            .iter()
            .filter(|r| r.logical_pages.contains(&l))
            .map(|r| {
                if r.logical_pages.len() > 1 {
                    PAGE_SIZE
                } else {
                    r.offset + r.size
                }
            })
            .max()
            .unwrap_or(0)
    }

    /// True when physical page `p` holds some region.
    pub fn uses_page(&self, p: usize) -> bool {
        self.regions.iter().any(|r| r.pages.contains(&p))
    }
}

/// The identity order `[0, 1, …, 13]`.
pub fn identity_order(g: &Geometry) -> Vec<usize> {
    (0..g.num_pages).collect()
}

struct Parsed {
    index: usize,
    pages: usize,
    packable: bool,
}

fn validate(regions: &[RegionRequest], g: &Geometry) -> Result<Vec<Parsed>, PlanError> {
    let mut out = Vec::with_capacity(regions.len());
    for (index, r) in regions.iter().enumerate() {
        let name = r.name.clone();
        if r.size < 0 {
            return Err(PlanError::InvalidSize {
                index,
                name,
                size: r.size,
            });
        }
        if r.alignment <= 0 || (r.alignment & (r.alignment - 1)) != 0 {
            return Err(PlanError::InvalidAlignment {
                index,
                name,
                alignment: r.alignment,
            });
        }
        if !r.contiguous {
            return Err(PlanError::NonContiguous { index, name });
        }
        if r.page_count >= 0 && r.page_count.saturating_mul(g.page_size) < r.size {
            return Err(PlanError::PageCountTooSmall {
                index,
                name,
                page_count: r.page_count,
                size: r.size,
            });
        }
        let pages =
            usize::try_from(page_span(r.size, r.page_count, g.page_size)).unwrap_or(usize::MAX);
        let packable = is_packable(r, g.page_size);
        out.push(Parsed {
            index,
            pages,
            packable,
        });
    }
    Ok(out)
}

fn align_up(x: i64, a: i64) -> i64 {
    (x + a - 1) / a * a
}

/// The pages a region of `size` bytes takes: its explicit `page_count`, or (`-1`)
/// `ceil(size / page_size)`; 0 for an empty region.
pub fn page_span(size: i64, page_count: i64, page_size: i64) -> i64 {
    if size == 0 {
        0
    } else if page_count < 0 {
        size / page_size + i64::from(size % page_size != 0)
    } else {
        page_count
    }
}

/// Whether MPK's planner packs `r` into a page other regions share: declared `pack`, at most
/// one page and smaller than one (step 2's `packable`, contract doc §1.4).
pub fn is_packable(r: &RegionRequest, page_size: i64) -> bool {
    r.can_pack && page_span(r.size, r.page_count, page_size) <= 1 && r.size < page_size
}

/// Logical allocation state: per page, fully taken by a page run, or the packed sub-ranges.
struct Logical {
    full: Vec<bool>,
    subs: Vec<Vec<(i64, i64)>>,
}

impl Logical {
    fn empty(&self, p: usize) -> bool {
        !self.full[p] && self.subs[p].is_empty()
    }
}

/// Places a packable region of `size`/`align` on the first logical page with room.
fn place_packed(st: &mut Logical, g: &Geometry, size: i64, align: i64) -> Option<(usize, i64)> {
    for p in 0..g.num_pages {
        let cap = g.page_capacity(p);
        if cap <= 0 || st.full[p] {
            continue;
        }
        let mut cursor = 0;
        let mut found = None;
        for &(s, e) in &st.subs[p] {
            let cand = align_up(cursor, align);
            if cand.saturating_add(size) <= s {
                found = Some(cand);
                break;
            }
            cursor = cursor.max(e);
        }
        let off = found.unwrap_or_else(|| align_up(cursor, align));
        if off.saturating_add(size) <= cap {
            st.subs[p].push((off, off.saturating_add(size)));
            st.subs[p].sort_unstable();
            return Some((p, off));
        }
    }
    None
}

/// Places a page run of `n` pages first-fit.
fn place_run(st: &mut Logical, g: &Geometry, n: usize, size: i64) -> Option<usize> {
    if n > g.num_pages {
        return None;
    }
    for f in 0..=(g.num_pages - n) {
        if ((f as i64) * g.page_size).saturating_add(size) > g.capacity_bytes {
            continue;
        }
        if (f..f + n).all(|p| st.empty(p)) {
            for p in f..f + n {
                st.full[p] = true;
            }
            return Some(f);
        }
    }
    None
}

/// Plans `regions` (declaration order) after a predecessor whose release order is `preferred`
/// (identity for a task with no predecessor). Errors are MPK's rejections (I-S1, I-S4).
pub fn plan(
    regions: &[RegionRequest],
    preferred: &[usize],
    g: &Geometry,
) -> Result<PagePlan, PlanError> {
    let parsed = validate(regions, g)?;
    let mut placed: Vec<PlacedRegion> = regions
        .iter()
        .enumerate()
        .map(|(i, r)| PlacedRegion {
            name: r.name.clone(),
            ordinal: i,
            size: r.size,
            pages: Vec::new(),
            offset: 0,
            logical_pages: Vec::new(),
            release_step: r.release_step,
        })
        .collect();
    if regions.is_empty() {
        return Ok(PagePlan {
            regions: placed,
            pages_used: 0,
            release_order: preferred.to_vec(),
            max_byte_end: 0,
            logical_to_physical: preferred.to_vec(),
            preferred: preferred.to_vec(),
        });
    }
    let mut order: Vec<&Parsed> = parsed.iter().filter(|p| p.pages > 0).collect();
    order.sort_by_key(|p| {
        (
            u8::from(p.packable),
            std::cmp::Reverse(p.pages),
            std::cmp::Reverse(regions[p.index].size),
        )
    });
    let mut st = Logical {
        full: vec![false; g.num_pages],
        subs: vec![Vec::new(); g.num_pages],
    };
    for p in order {
        let r = &regions[p.index];
        let capacity_exceeded = || PlanError::CapacityExceeded {
            index: p.index,
            name: r.name.clone(),
        };
        if p.packable {
            let (page, off) =
                place_packed(&mut st, g, r.size, r.alignment).ok_or_else(capacity_exceeded)?;
            placed[p.index].logical_pages = vec![page];
            placed[p.index].offset = off;
        } else {
            let f = place_run(&mut st, g, p.pages, r.size).ok_or_else(capacity_exceeded)?;
            placed[p.index].logical_pages = (f..f + p.pages).collect();
        }
    }
    let l2p = remap(&placed, preferred, g)?;
    finish(placed, l2p, preferred, g)
}

/// Step 4e: the logical → physical permutation.
fn remap(
    placed: &[PlacedRegion],
    preferred: &[usize],
    g: &Geometry,
) -> Result<Vec<usize>, PlanError> {
    let n = g.num_pages;
    let mut l2p: Vec<Option<usize>> = vec![None; n];
    let mut used = vec![false; n];
    // (i) multi-page regions, longest first, declaration order among equals: lowest free run.
    let mut multi: Vec<&PlacedRegion> = placed
        .iter()
        .filter(|r| r.logical_pages.len() > 1)
        .collect();
    multi.sort_by_key(|r| std::cmp::Reverse(r.logical_pages.len()));
    for r in multi {
        let len = r.logical_pages.len();
        let start = (0..=n.saturating_sub(len))
            .find(|&s| s + len <= n && (s..s + len).all(|p| !used[p]))
            .ok_or_else(|| {
                PlanError::Remap(format!("assigning contiguous physical pages to {}", r.name))
            })?;
        for (i, &l) in r.logical_pages.iter().enumerate() {
            if l2p[l].is_some() {
                return Err(PlanError::Remap(format!(
                    "logical page {l} assigned to multiple physical pages"
                )));
            }
            l2p[l] = Some(start + i);
            used[start + i] = true;
        }
    }
    // (ii) single-page regions in declaration order: first unused page of the preferred order.
    let next_pref = |used: &mut Vec<bool>| -> Result<usize, PlanError> {
        let p = preferred
            .iter()
            .copied()
            .find(|&p| p < n && !used[p])
            .ok_or_else(|| PlanError::Remap("assigning physical page".to_string()))?;
        used[p] = true;
        Ok(p)
    };
    for r in placed.iter().filter(|r| r.logical_pages.len() == 1) {
        let l = r.logical_pages[0];
        if l2p[l].is_none() {
            l2p[l] = Some(next_pref(&mut used)?);
        }
    }
    // (iii) remaining logical pages in logical order.
    for slot in l2p.iter_mut() {
        if slot.is_none() {
            *slot = Some(next_pref(&mut used)?);
        }
    }
    Ok(l2p.into_iter().map(|p| p.unwrap_or(0)).collect())
}

/// Step 4f: physical pages, usage, release order, validation.
fn finish(
    mut placed: Vec<PlacedRegion>,
    l2p: Vec<usize>,
    preferred: &[usize],
    g: &Geometry,
) -> Result<PagePlan, PlanError> {
    let n = g.num_pages;
    let mut step: Vec<i64> = vec![-1; n];
    for r in &mut placed {
        r.pages = r.logical_pages.iter().map(|&l| l2p[l]).collect();
        for w in r.pages.windows(2) {
            if w[1] != w[0] + 1 {
                return Err(PlanError::Remap(format!(
                    "region {} is not on contiguous physical pages",
                    r.name
                )));
            }
        }
        for &p in &r.pages {
            step[p] = step[p].max(r.release_step);
        }
    }
    let used: Vec<bool> = (0..n)
        .map(|p| placed.iter().any(|r| r.pages.contains(&p)))
        .collect();
    let mut release_order: Vec<usize> = (0..n).collect();
    release_order.sort_by_key(|&p| (if used[p] { step[p] } else { -1 }, p));
    let max_byte_end = placed
        .iter()
        .filter(|r| !r.pages.is_empty())
        .map(PlacedRegion::end_bytes)
        .max()
        .unwrap_or(0);
    Ok(PagePlan {
        pages_used: used.iter().filter(|u| **u).count(),
        regions: placed,
        release_order,
        max_byte_end,
        logical_to_physical: l2p,
        preferred: preferred.to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(
        name: &str,
        size: i64,
        alignment: i64,
        can_pack: bool,
        release_step: i64,
    ) -> RegionRequest {
        RegionRequest {
            name: name.into(),
            size,
            alignment,
            page_count: -1,
            can_pack,
            release_step,
            contiguous: true,
        }
    }

    #[test]
    fn page_13_is_partial() {
        let g = Geometry::default();
        assert_eq!(g.page_capacity(12), 16384);
        assert_eq!(g.page_capacity(13), 11264);
    }

    #[test]
    fn house_linear_reproduces_contract_doc_1_6a() {
        let mut rs = Vec::new();
        for s in 0..6 {
            rs.push(req(&format!("W_{s}"), 32768, 1024, false, s + 1));
        }
        for s in 0..6 {
            rs.push(req(&format!("A_{s}"), 4096, 1024, true, s + 1));
        }
        rs.push(req("scratch", 16, 16, true, 7));
        let g = Geometry::default();
        let p = plan(&rs, &identity_order(&g), &g).unwrap();
        assert_eq!(p.pages_used, 14);
        for s in 0..6 {
            assert_eq!(p.regions[s].pages, vec![2 * s, 2 * s + 1]);
        }
        let a: Vec<_> = p.regions[6..]
            .iter()
            .map(|r| (r.pages[0], r.offset))
            .collect();
        assert_eq!(
            a,
            vec![
                (12, 0),
                (12, 4096),
                (12, 8192),
                (12, 12288),
                (13, 0),
                (13, 4096),
                (13, 8192)
            ]
        );
        assert_eq!(
            p.release_order,
            vec![0, 1, 2, 3, 4, 5, 6, 7, 12, 8, 9, 10, 11, 13]
        );
        assert_eq!(p.max_byte_end, 221_200);
    }
}

#[cfg(test)]
mod properties {
    //! Property tests of the planner: an accepted plan never overlaps two regions, never exceeds a
    //! logical page's capacity, maps logical to physical pages one to one, and keeps multi-page
    //! regions on consecutive physical pages.
    use super::*;
    use proptest::prelude::*;

    fn region() -> impl Strategy<Value = RegionRequest> {
        (
            0i64..40_000,
            0u32..11,
            prop::bool::ANY,
            0i64..8,
            prop::option::of(0i64..4),
        )
            .prop_map(|(size, a, pack, step, pc)| RegionRequest {
                name: String::new(),
                size,
                alignment: 1 << a,
                page_count: pc.map_or(-1, |p| p.max((size + PAGE_SIZE - 1) / PAGE_SIZE)),
                can_pack: pack,
                release_step: step,
                contiguous: true,
            })
    }

    fn order() -> impl Strategy<Value = Vec<usize>> {
        Just((0..NUM_PAGES).collect::<Vec<usize>>()).prop_shuffle()
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, .. ProptestConfig::default() })]

        #[test]
        fn accepted_plans_are_sound(mut rs in prop::collection::vec(region(), 0..16), pref in order()) {
            for (i, r) in rs.iter_mut().enumerate() {
                r.name = format!("r{i}");
            }
            let g = Geometry::default();
            let Ok(p) = plan(&rs, &pref, &g) else { return Ok(()) };
            // One to one.
            let mut phys = p.logical_to_physical.clone();
            phys.sort_unstable();
            prop_assert_eq!(phys, (0..NUM_PAGES).collect::<Vec<_>>());
            for r in &p.regions {
                // Contiguous physical pages, as many as the logical run.
                prop_assert_eq!(r.pages.len(), r.logical_pages.len());
                for w in r.pages.windows(2) {
                    prop_assert_eq!(w[1], w[0] + 1);
                }
                // Within the logical page's capacity (physical overflow is I-S5's business).
                if r.logical_pages.len() == 1 && r.size > 0 {
                    prop_assert!(r.offset + r.size <= g.page_capacity(r.logical_pages[0]));
                    prop_assert_eq!(r.offset % rs[r.ordinal].alignment, 0);
                }
            }
            // No two regions overlap (physical byte ranges).
            let spans: Vec<(i64, i64)> = p.regions.iter().filter(|r| r.size > 0).map(|r| (r.base_bytes(), r.end_bytes())).collect();
            for (i, a) in spans.iter().enumerate() {
                for b in &spans[i + 1..] {
                    prop_assert!(a.1 <= b.0 || b.1 <= a.0, "{:?} overlaps {:?}", a, b);
                }
            }
            // Page runs own their pages.
            for r in p.regions.iter().filter(|r| r.pages.len() > 1) {
                for q in p.regions.iter().filter(|q| q.ordinal != r.ordinal) {
                    prop_assert!(q.pages.iter().all(|x| !r.pages.contains(x)));
                }
            }
        }
    }
}

/// A placement of the packable regions that MPK's first-fit misses, if a small exhaustive search
/// finds one: page runs are placed as MPK places them, then every assignment of the packable
/// regions (largest first) to pages is tried, packing each page in assignment order with
/// alignment. Returns, per logical page, the region indices on it. At most 16 packables are
/// searched (MPK's region limit), with a bound on the nodes visited.
pub fn search_packing(regions: &[RegionRequest], g: &Geometry) -> Option<Vec<Vec<usize>>> {
    let parsed = validate(regions, g).ok()?;
    let mut st = Logical {
        full: vec![false; g.num_pages],
        subs: vec![Vec::new(); g.num_pages],
    };
    let mut runs: Vec<&Parsed> = parsed
        .iter()
        .filter(|p| p.pages > 0 && !p.packable)
        .collect();
    runs.sort_by_key(|p| {
        (
            std::cmp::Reverse(p.pages),
            std::cmp::Reverse(regions[p.index].size),
        )
    });
    for p in runs {
        place_run(&mut st, g, p.pages, regions[p.index].size)?;
    }
    let mut packs: Vec<usize> = parsed
        .iter()
        .filter(|p| p.packable)
        .map(|p| p.index)
        .collect();
    packs.sort_by_key(|&i| std::cmp::Reverse(regions[i].size));
    let free: Vec<usize> = (0..g.num_pages)
        .filter(|&p| !st.full[p] && g.page_capacity(p) > 0)
        .collect();
    /// The packing search: packed region `packs[k]` and the ones after it onto the `free`
    /// pages, `used[p]` bytes of page `p` taken, at most `budget` more steps.
    struct Search<'a> {
        packs: &'a [usize],
        regions: &'a [RegionRequest],
        free: &'a [usize],
        g: &'a Geometry,
        assign: Vec<Vec<usize>>,
        used: Vec<i64>,
        budget: usize,
    }
    impl Search<'_> {
        fn dfs(&mut self, k: usize) -> bool {
            if k == self.packs.len() {
                return true;
            }
            if self.budget == 0 {
                return false;
            }
            self.budget -= 1;
            let r = &self.regions[self.packs[k]];
            let g = self.g;
            let mut tried_empty = false;
            for &p in self.free {
                // Empty pages of equal capacity are interchangeable: try one of them.
                if self.used[p] == 0 && g.page_capacity(p) == g.page_size {
                    if tried_empty {
                        continue;
                    }
                    tried_empty = true;
                }
                let off = align_up(self.used[p], r.alignment);
                if off.saturating_add(r.size) > g.page_capacity(p) {
                    continue;
                }
                let before = self.used[p];
                self.used[p] = off + r.size;
                self.assign[p].push(self.packs[k]);
                if self.dfs(k + 1) {
                    return true;
                }
                self.assign[p].pop();
                self.used[p] = before;
            }
            false
        }
    }
    let mut search = Search {
        packs: &packs,
        regions,
        free: &free,
        g,
        assign: vec![Vec::new(); g.num_pages],
        used: vec![0; g.num_pages],
        budget: 200_000,
    };
    search.dfs(0).then_some(search.assign)
}

#[cfg(test)]
mod search_tests {
    use super::*;

    #[test]
    fn finds_the_packing_first_fit_misses() {
        let r = |name: &str, size: i64, pack: bool| RegionRequest {
            name: name.into(),
            size,
            alignment: if pack { 1 } else { 1024 },
            page_count: -1,
            can_pack: pack,
            release_step: 0,
            contiguous: true,
        };
        let rs = vec![
            r("big", 196_608, false),
            r("p1", 11_264, true),
            r("p2", 8192, true),
            r("p3", 7168, true),
            r("p4", 1024, true),
        ];
        let g = Geometry::default();
        assert!(plan(&rs, &identity_order(&g), &g).is_err());
        let a = search_packing(&rs, &g).expect("a placement exists");
        assert_eq!(a[13], vec![1], "p1 alone on the partial page");
        let mut p12 = a[12].clone();
        p12.sort_unstable();
        assert_eq!(p12, vec![2, 3, 4]);
    }
}
