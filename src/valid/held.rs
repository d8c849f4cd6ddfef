//! Regions that hold typed members (`holds mbarrier[6]`): the declared alignment covers the
//! members' largest alignment, and so does every planned base (`E0115`). An mbarrier at a
//! 4-byte offset faults on `mbarrier.init` (PTX ISA: an mbarrier object is 8-byte aligned).

use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::*;
use crate::plan::pages::{Geometry, PagePlan};

fn widest(r: &RegionIr) -> Option<&HeldIr> {
    r.holds.iter().max_by_key(|h| h.ty.align())
}

/// E0115 on the declaration: `align` below what a member needs.
pub(super) fn declared(ir: &TaskIr, sink: &mut Sink) {
    for g in &ir.region_groups {
        let Some(r) = g.members.first().map(|h| &ir.regions[*h]) else {
            continue;
        };
        let need = r.holds_align();
        let Some(m) = widest(r).filter(|_| r.align < need) else {
            continue;
        };
        sink.push(
            Diagnostic::error(
                codes::HELD_ALIGN,
                format!(
                    "region `{}` holds {} ({}-byte aligned) but is aligned to {} bytes",
                    g.name,
                    m.ty.name(),
                    need,
                    r.align
                ),
            )
            .primary(r.align_span, format!("align {}", r.align))
            .secondary(m.span, format!("needs {need}-byte alignment"))
            .help(format!("write `align {need}` (or more)")),
        );
    }
}

/// E0115 on each target's plan: a region holding typed members placed at an offset they cannot
/// take (only reachable when the declared alignment is already too small; kept as the planner's
/// own guarantee).
pub(super) fn planned(ir: &TaskIr, plans: &[(TargetIr, Geometry, PagePlan)], sink: &mut Sink) {
    for (h, r) in ir.regions.iter() {
        let need = r.holds_align();
        if need <= 1 || r.align < need {
            continue; // nothing typed, or reported on the declaration
        }
        for (t, _, p) in plans {
            let base = p.regions[h.index()].base_bytes();
            if base % need != 0 {
                sink.push(
                    Diagnostic::error(
                        codes::HELD_ALIGN,
                        format!(
                            "region `{}` is planned at byte {base} on {}, not a multiple of the {need} bytes its members need",
                            r.name, t.target
                        ),
                    )
                    .primary(r.span, format!("planned at {base}"))
                    .help(format!("write `align {need}`")),
                );
            }
        }
    }
}
