//! SMEM and planner rules (I-S1, I-S2, I-S3, I-S4, I-S5, I-S8), run on MPK's own algorithm.

use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::{exact, ArrivalIr, ChannelStorageIr, RegionIr, TargetIr, TaskIr};
use crate::plan::pages::{self, Geometry, PagePlan, PlanError, RegionRequest, PAGE_SIZE};

use super::CheckOptions;

mod budget_diag;
mod remap;

use budget_diag::{over_budget, placement_failure};
use remap::{overflow_after_itself, remap_overflow};

/// The regions of `ir` as MPK's `TaskSmemRegion` list, in declaration (ordinal) order.
pub fn request_list(ir: &TaskIr) -> Vec<RegionRequest> {
    ir.regions.values().map(to_req).collect()
}

/// The largest region alignment, in bytes, an address can be guaranteed: the dynamic SMEM base
/// is declared `extern __shared__ __align__(1024)` (contract doc §1.1, I-S8) and the planner
/// aligns offsets relative to it (pages are 16,384 bytes, so page starts add nothing). A larger
/// `align` is E0102.
pub const MAX_REGION_ALIGN: i64 = 1024;

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
            // A negative alignment is most likely a stray sign: its magnitude, rounded up. Zero
            // has no magnitude: 16 bytes is what 16-byte vector accesses and TMA need.
            let up = match r.align {
                0 => 16,
                a => a.unsigned_abs().next_power_of_two(),
            };
            sink.push(
                Diagnostic::error(codes::REGION_ALIGN, format!("region `{}` has alignment {}, which is not a power of two", r.name, r.align))
                    .primary(r.align_span, format!("alignment {}", r.align))
                    .note("MPK's planner packs with align_up(offset, alignment) and rejects other values (`invalid_alignment`)")
                    .help(format!("use a power of two, e.g. `align {}`", up.min(MAX_REGION_ALIGN as u64))),
            );
        } else if r.align > MAX_REGION_ALIGN && r.align <= i64::from(i32::MAX) {
            sink.push(
                Diagnostic::error(
                    codes::REGION_ALIGN,
                    format!(
                        "region `{}` has alignment {}, above the {MAX_REGION_ALIGN} bytes the dynamic SMEM base is aligned to",
                        r.name, r.align
                    ),
                )
                .primary(r.align_span, format!("alignment {}", r.align))
                .note(format!(
                    "every task declares its dynamic SMEM `extern __shared__ __align__({MAX_REGION_ALIGN})` and the planner aligns offsets within 16384-byte pages, so no address above {MAX_REGION_ALIGN}-byte alignment is guaranteed"
                ))
                .help(format!(
                    "use at most `align {MAX_REGION_ALIGN}`, the largest alignment a region can have"
                )),
            );
        }
        // An explicit negative count: the planner reads any count below 0 as "derive it".
        if let (Some(at), true) = (r.pages_span, r.page_count < 0) {
            sink.push(
                Diagnostic::error(
                    codes::REGION_PAGES,
                    format!("region `{}` asks for {} pages", r.name, r.page_count),
                )
                .primary(at, format!("{} pages", r.page_count))
                .help({
                    let need = exact::ceil_div(r.size.max(1), PAGE_SIZE);
                    let s = if need == 1 { "" } else { "s" };
                    format!("ask for at least {need} page{s}, or drop `pages` to derive it")
                }),
            );
        } else if r.page_count >= 0
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
                "align to at most 1024 bytes, the alignment of the dynamic SMEM base",
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

/// W0118 for each region group of a task that declares `pack` but that MPK's planner packs in
/// none of `builds` (every instance of the task and each at the checked values of its param
/// ranges, `CheckOptions::siblings`): a page or more everywhere, so the flag reaches `spec.h`
/// and changes no plan. A group small in some build (an A stage at one token) is not reported.
pub fn pack_no_effect(builds: &[TaskIr]) -> Vec<Diagnostic> {
    let Some(first) = builds.first() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for g in &first.region_groups {
        let Some(&head) = g.members.first() else {
            continue;
        };
        let r = &first.regions[head];
        // A helper's region (`<helper>_<name>`) is the helper file's to declare: its `pack` may
        // take effect with another `use` binding.
        let placed = first.helpers.iter().any(|u| {
            u.helper
                .region_groups
                .iter()
                .any(|h| format!("{}_{}", u.helper.name, h.name) == g.name)
        });
        if !r.can_pack || placed {
            continue;
        }
        let packed_somewhere = builds.iter().any(|b| {
            b.region_groups
                .iter()
                .find(|h| h.name == g.name)
                .is_some_and(|h| {
                    h.members.iter().any(|m| {
                        crate::plan::pages::is_packable(
                            &to_req(&b.regions[*m]),
                            crate::plan::pages::PAGE_SIZE,
                        )
                    })
                })
        });
        if packed_somewhere {
            continue;
        }
        // A region under a page whose `pages N` (N > 1) makes it a page run: the count is why.
        let (why, label, help) = if r.size < crate::plan::pages::PAGE_SIZE && r.page_count > 1 {
            (
                format!(
                    "its `pages {}` makes it a run of whole pages ({} bytes here)",
                    r.page_count, r.size
                ),
                format!("packed, but `pages {}` reserves whole pages", r.page_count),
                format!(
                    "drop `pages {}` to let it share a page, or drop `pack`",
                    r.page_count
                ),
            )
        } else {
            (
                format!("it is a page or more ({} bytes here)", r.size),
                "packed, but never smaller than a page".to_string(),
                "drop `pack` from this region".to_string(),
            )
        };
        out.push(
            Diagnostic::warning(
                codes::PACK_NO_EFFECT,
                format!(
                    "`pack` on region `{}` has no effect: {why} in every build of the contract",
                    g.name
                ),
            )
            .primary(r.span, label)
            .note("MPK's planner packs only regions smaller than one 16384-byte page that take at most one page (contract doc §1.4): this one gets whole pages of its own in every instance and at every checked value of the param ranges, and `spec.h`'s pack flag changes nothing")
            .help(help),
        );
    }
    out
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
