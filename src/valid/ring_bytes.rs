//! A body's ring region in whole slots (W0116, W0117): the bytes a template's ring uses of the
//! declared ones, and the sizes to offer instead.

use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::{RegionGroup, TaskIr};
use crate::templates;

/// Where a ring region is checked: the body, the region's head, the body's span, the bytes
/// the region may grow to (the smallest target's capacity less the other regions), and the
/// param its `bytes` is, if it is one.
pub(super) struct RingSite<'a> {
    pub(super) body: &'a str,
    pub(super) span: crate::span::Span,
    pub(super) body_span: crate::span::Span,
    pub(super) room: i64,
    pub(super) param: Option<SizeParam<'a>>,
}

/// The param a ring region's size is (`bytes ring`) and the lowest and highest value its
/// declared range allows (the type's limits without a range): a size a help offers is a value
/// of that param, so only sizes inside are offered (W0116).
#[derive(Clone, Copy)]
pub(super) struct SizeParam<'a> {
    pub(super) name: &'a str,
    pub(super) lo: i64,
    pub(super) hi: i64,
}

impl<'a> SizeParam<'a> {
    /// The param region group `g`'s `bytes` is, if it is a bare param name (the group's
    /// members share their declaration).
    pub(super) fn of(ir: &'a TaskIr, g: &RegionGroup) -> Option<SizeParam<'a>> {
        let r = &ir.regions[*g.members.first()?];
        let p = ir.params.get(r.bytes_param.as_deref()?)?;
        let (lo, hi) = p.int_range.unwrap_or(match p.ty {
            crate::ir::ParamType::I32 => (i64::from(i32::MIN), i64::from(i32::MAX)),
            _ => (i64::MIN, i64::MAX),
        });
        Some(SizeParam {
            name: &p.name,
            lo,
            hi,
        })
    }

    fn allows(&self, size: i64) -> bool {
        (self.lo..=self.hi).contains(&size)
    }

    /// The range as written in a note.
    fn range_text(&self) -> String {
        format!("{}..={}", self.lo, self.hi)
    }
}

impl RingSite<'_> {
    /// True where the region may be `size` bytes: any size, or one its size param's range
    /// allows.
    fn allows(&self, size: i64) -> bool {
        self.param.is_none_or(|p| p.allows(size))
    }

    /// True where some size of at least `size` bytes is allowed (see [`RingSite::allows`]).
    fn reaches(&self, size: i64) -> bool {
        self.param.is_none_or(|p| p.hi >= size)
    }

    /// True where a region of `size` bytes draws none of the ring diagnostics: at least two
    /// slots (E0110), beside the other regions, less than a page past its slots (W0116) and not
    /// a two-slot ring of a longer stream (W0117).
    fn clean(&self, r: templates::RingUse, size: i64) -> bool {
        let slots = r.slots(size);
        slots >= 2
            && size <= self.room
            && size - slots * r.slot_bytes < crate::plan::pages::PAGE_SIZE
            && !(slots == 2 && r.max_slots > 2)
    }

    /// The bytes region group `g` may grow to: the smallest target's capacity less the other
    /// regions' bytes (a bound: packing and alignment take more).
    pub(super) fn room(ir: &TaskIr, g: &RegionGroup) -> i64 {
        // Saturating: region sizes are any i64 the contract evaluates to (E0103 reports a huge
        // one; the sum must not overflow first).
        let others: i64 = ir
            .regions
            .iter()
            .filter(|(h, _)| !g.members.contains(h))
            .map(|(_, o)| o.size.max(0))
            .fold(0i64, i64::saturating_add);
        let capacity = ir
            .targets
            .iter()
            .map(|t| t.smem_capacity_bytes)
            .min()
            .unwrap_or(crate::ir::DEFAULT_SMEM_CAPACITY_BYTES);
        capacity.saturating_sub(others)
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
    let three = 3 * r.slot_bytes;
    let third = r.max_slots > 2 && at.third_slot_fits(r);
    if third && at.reaches(three) {
        format!(
            "make `{}` at least {three} bytes (3 slots of {}: {} is a synchronous ring, W0117)",
            need.name, r.slot_bytes, need.min_bytes
        )
    } else if need.min_bytes <= at.room && at.reaches(need.min_bytes) {
        let why = match at.param {
            Some(p) if third => format!(
                "a third, {three} bytes, lies above the range {} of param `{}`",
                p.range_text(),
                p.name
            ),
            _ if r.max_slots <= 2 => "the body uses no more".to_string(),
            _ => format!("a third would not fit beside the other regions: {SMALLER_SLOT}"),
        };
        format!(
            "make `{}` at least {} bytes (2 slots of {}; {why})",
            need.name, need.min_bytes, r.slot_bytes
        )
    } else if let Some(p) = at.param.filter(|_| need.min_bytes <= at.room) {
        format!(
            "widen the range of `{}` ({}) to take {} (2 slots of {} bytes), and set it to that",
            p.name,
            p.range_text(),
            need.min_bytes,
            r.slot_bytes
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
        let (help, note) = tail_help(at, need, r, slots, used);
        let message = format!(
            "region `{}` has {size} bytes but body `{body}` uses {used} of them, {slots} slots of {} bytes: {} bytes past them that no copy reaches",
            need.name,
            r.slot_bytes,
            size - used
        );
        let mut d = Diagnostic::warning(codes::RING_TAIL, message)
            .primary(span, format!("{size} bytes"))
            .secondary(body_span, "the body");
        if let Some(note) = note {
            d = d.note(note);
        }
        sink.push(d.help(help));
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
            .help(if !at.third_slot_fits(r) {
                format!(
                    "3 slots ({} bytes) would not fit beside the other regions: {SMALLER_SLOT}",
                    3 * r.slot_bytes
                )
            } else if let Some(p) = at.param.filter(|_| !at.reaches(3 * r.slot_bytes)) {
                format!(
                    "widen the range of `{}` ({}) to take {} (3 slots: one computing, one in flight, one refilling), and set it to that",
                    p.name,
                    p.range_text(),
                    3 * r.slot_bytes
                )
            } else {
                format!(
                    "make `{}` at least {} bytes (3 slots: one computing, one in flight, one refilling)",
                    need.name,
                    3 * r.slot_bytes
                )
            }),
        );
    }
}

/// W0116's help for a region that uses `slots` slots (`used` bytes) of its size, and the note
/// that says why a size is not offered: only sizes the region's size param allows are offered
/// ([`SizeParam`]); where the size that uses every byte lies outside its range, the note says so
/// and the help offers the range's nearest end where that size draws no ring diagnostic, else
/// widening the range.
fn tail_help(
    at: &RingSite,
    need: &templates::RegionNeed,
    r: templates::RingUse,
    slots: i64,
    used: i64,
) -> (String, Option<String>) {
    let more = used + r.slot_bytes;
    // The size offered first and the help offering it.
    let (offer, help) = if slots == 2 && r.max_slots > 2 && !at.third_slot_fits(r) {
        (
            used,
            format!(
                "make `{}` {used} bytes (2 slots; a third, {more} bytes, would not fit beside the other regions: {SMALLER_SLOT})",
                need.name
            ),
        )
    } else if slots == 2 && r.max_slots > 2 {
        // Two slots of a longer stream would be W0117: the next size up.
        (
            more,
            format!(
                "make `{}` {more} bytes (3 slots: two would be a synchronous ring, W0117)",
                need.name
            ),
        )
    } else if slots < r.max_slots && more <= at.room {
        match (at.allows(used), at.allows(more)) {
            (true, true) => (
                used,
                format!(
                    "make `{}` {used} bytes ({slots} slots), or {more} for one more slot",
                    need.name
                ),
            ),
            (false, true) => (
                more,
                format!("make `{}` {more} bytes ({} slots)", need.name, slots + 1),
            ),
            _ => (
                used,
                format!("make `{}` {used} bytes ({slots} slots)", need.name),
            ),
        }
    } else if slots < r.max_slots {
        (
            used,
            format!(
                "make `{}` {used} bytes ({slots} slots; one more, {more} bytes, would not fit beside the other regions)",
                need.name
            ),
        )
    } else if r.max_slots == r.stream_groups + 1 {
        (
            used,
            format!(
                "make `{}` {used} bytes: a thread streams {} group{} at most, and {} slots put all of them in flight",
                need.name,
                r.stream_groups,
                if r.stream_groups == 1 { "" } else { "s" },
                r.max_slots
            ),
        )
    } else {
        (
            used,
            format!(
                "make `{}` {used} bytes: the body uses {} slots at most (`cp.async.wait_group` leaves at most 63 groups in flight)",
                need.name, r.max_slots
            ),
        )
    };
    let Some(p) = at.param.filter(|p| !p.allows(offer)) else {
        return (help, None);
    };
    let note = format!(
        "{offer} bytes ({} slots of {}) lie outside the range {} of param `{}`, which sizes `{}`",
        offer / r.slot_bytes.max(1),
        r.slot_bytes,
        p.range_text(),
        p.name,
        need.name
    );
    let end = offer.clamp(p.lo, p.hi);
    let help = if at.clean(r, end) {
        let k = r.slots(end);
        format!(
            "set `{}` to {end}, the {} end of its range: {k} slots of {} bytes leave {} bytes past them, less than a page",
            p.name,
            if end == p.lo { "lower" } else { "upper" },
            r.slot_bytes,
            end - k * r.slot_bytes
        )
    } else {
        format!(
            "widen the range of `{}` to take {offer}, and set it to {offer}",
            p.name
        )
    };
    (help, Some(note))
}
