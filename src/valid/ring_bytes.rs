//! A body's ring region in whole slots (W0116, W0117): the bytes a template's ring uses of the
//! declared ones, and the sizes to offer instead.

use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::{RegionGroup, TaskIr};
use crate::templates;

/// Where a ring region is checked: the body, the region's head, the body's span, and the bytes
/// the region may grow to (the smallest target's capacity less the other regions).
pub(super) struct RingSite<'a> {
    pub(super) body: &'a str,
    pub(super) span: crate::span::Span,
    pub(super) body_span: crate::span::Span,
    pub(super) room: i64,
}

impl RingSite<'_> {
    /// The bytes region group `g` may grow to: the smallest target's capacity less the other
    /// regions' bytes (a bound: packing and alignment take more).
    pub(super) fn room(ir: &TaskIr, g: &RegionGroup) -> i64 {
        let others: i64 = ir
            .regions
            .iter()
            .filter(|(h, _)| !g.members.contains(h))
            .map(|(_, o)| o.size)
            .sum();
        let capacity = ir
            .targets
            .iter()
            .map(|t| t.smem_capacity_bytes)
            .min()
            .unwrap_or(crate::ir::DEFAULT_SMEM_CAPACITY_BYTES);
        capacity - others
    }

    /// True where three slots of `r` fit the room: the least ring with a copy in flight.
    fn third_slot_fits(&self, r: templates::RingUse) -> bool {
        3 * r.slot_bytes <= self.room
    }
}

/// What makes a template ring's slot smaller, where the room holds too few of them.
const SMALLER_SLOT: &str = "fewer rows per task or tokens make a slot smaller";

/// E0110's help for a ring region below the body's two slots (`need.min_bytes`): three slots
/// where they fit (two are W0117), two where only they do, else what makes a slot smaller.
pub(super) fn short_help(
    at: &RingSite,
    need: &templates::RegionNeed,
    r: templates::RingUse,
) -> String {
    if r.max_slots > 2 && at.third_slot_fits(r) {
        format!(
            "make `{}` at least {} bytes (3 slots of {}: {} is a synchronous ring, W0117)",
            need.name,
            3 * r.slot_bytes,
            r.slot_bytes,
            need.min_bytes
        )
    } else if need.min_bytes <= at.room {
        format!(
            "make `{}` at least {} bytes (2 slots of {}; a third would not fit beside the other regions: {SMALLER_SLOT})",
            need.name, need.min_bytes, r.slot_bytes
        )
    } else {
        format!(
            "two slots of {} bytes do not fit beside the other regions: {SMALLER_SLOT}",
            r.slot_bytes
        )
    }
}

/// A ring region of `size` bytes (at least the body's minimum) that the body fills in whole
/// slots (`r`): W0116 where a page or more lies past the slots it uses (planned pages no copy
/// reaches), W0117 where it gives two slots only (a synchronous ring).
pub(super) fn ring_use(
    sink: &mut Sink,
    at: &RingSite,
    need: &templates::RegionNeed,
    r: templates::RingUse,
    size: i64,
) {
    let (body, span, body_span) = (at.body, at.span, at.body_span);
    let slots = r.slots(size);
    let used = slots * r.slot_bytes;
    if size - used >= crate::plan::pages::PAGE_SIZE {
        let help = if slots == 2 && r.max_slots > 2 && !at.third_slot_fits(r) {
            format!(
                "make `{}` {used} bytes (2 slots; a third, {} bytes, would not fit beside the other regions: {SMALLER_SLOT})",
                need.name,
                used + r.slot_bytes
            )
        } else if slots == 2 && r.max_slots > 2 {
            // Two slots of a longer stream would be W0117: the next size up.
            format!(
                "make `{}` {} bytes (3 slots: two would be a synchronous ring, W0117)",
                need.name,
                used + r.slot_bytes
            )
        } else if slots < r.max_slots && used + r.slot_bytes <= at.room {
            format!(
                "make `{}` {used} bytes ({slots} slots), or {} for one more slot",
                need.name,
                used + r.slot_bytes
            )
        } else if slots < r.max_slots {
            format!(
                "make `{}` {used} bytes ({slots} slots; one more, {} bytes, would not fit beside the other regions)",
                need.name,
                used + r.slot_bytes
            )
        } else if r.max_slots == r.stream_groups + 1 {
            format!(
                "make `{}` {used} bytes: a thread streams {} group{} at most, and {} slots put all of them in flight",
                need.name,
                r.stream_groups,
                if r.stream_groups == 1 { "" } else { "s" },
                r.max_slots
            )
        } else {
            format!(
                "make `{}` {used} bytes: the body uses {} slots at most (`cp.async.wait_group` leaves at most 63 groups in flight)",
                need.name, r.max_slots
            )
        };
        sink.push(
            Diagnostic::warning(
                codes::RING_TAIL,
                format!(
                    "region `{}` has {size} bytes but body `{body}` uses {used} of them, {slots} slots of {} bytes: {} bytes past them that no copy reaches",
                    need.name,
                    r.slot_bytes,
                    size - used
                ),
            )
            .primary(span, format!("{size} bytes"))
            .secondary(body_span, "the body")
            .help(help),
        );
    }
    if slots == 2 && r.max_slots > 2 {
        sink.push(
            Diagnostic::warning(
                codes::RING_SHALLOW,
                format!(
                    "region `{}` holds 2 slots of {} bytes: body `{body}` waits for each group's copy before computing it, with no other group in flight",
                    need.name, r.slot_bytes
                ),
            )
            .primary(span, format!("{size} bytes"))
            .secondary(body_span, "the body")
            .help(if at.third_slot_fits(r) {
                format!(
                    "make `{}` at least {} bytes (3 slots: one computing, one in flight, one refilling)",
                    need.name,
                    3 * r.slot_bytes
                )
            } else {
                format!(
                    "3 slots ({} bytes) would not fit beside the other regions: {SMALLER_SLOT}",
                    3 * r.slot_bytes
                )
            }),
        );
    }
}
