//! Semaphore ordinal allocation: channels expand to `depth` full mbarriers plus `depth` empty
//! mbarriers unless the empty edge is shared; each one-shot sem adds one (contract doc §2.4, I-M3).
//!
//! The order is deterministic and documented: channels in declaration order, each contributing
//! its full barriers (slot 0 first); a channel's empty barriers follow its fulls, except when later
//! channels share its empty edge, in which case they follow the fulls of the last sharer; then
//! the one-shot sems in declaration order. For the house linear this gives MPK's own numbering
//! (W full 0-5, A full 6-11, shared empty 12-17, acc full 18-19, acc empty 20-21, tmem_ready 22,
//! consumer_done 23).

use crate::ir::{ArrivalIr, ChannelIr, EmptyEdge, Handle, RoleKind, SemIr, TaskIr};
use crate::span::Span;

/// Ordinal k of a task lives at `op_sem_base + 8k`, i.e. `dynamic_semaphores[slot][1 + k]`;
/// index 0 is `SEM_DEP_READY` (I-M1).
pub const MAX_OP_SEMS: usize = 31;

/// What an ordinal is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OrdinalSource {
    /// Full barrier of a channel slot.
    Full(Handle<ChannelIr>, u32),
    /// Empty barrier of a channel slot (shared by the channels sharing that empty edge).
    Empty(Handle<ChannelIr>, u32),
    /// A one-shot sem.
    Sem(Handle<SemIr>),
    /// `pages_ready`, a consumer-only family's page hand-off (I-P5): the loader arrives it once
    /// the runtime's page prefix has waited every page of the task; the consumer warpgroup waits
    /// it before its body. Not declared in the contract: the lowering adds it to every
    /// consumer-only task with regions.
    PagesReady,
}

/// One allocated mbarrier.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ordinal {
    /// 0..=30 when within budget.
    pub ordinal: usize,
    /// `w_ring.full[0]`, `w_ring.empty[3]`, `tmem_ready`.
    pub name: String,
    /// mbarrier init count (arrivals per phase, I-M2).
    pub count: i64,
    /// Arriving role.
    pub producer: RoleKind,
    /// Waiting role.
    pub consumer: RoleKind,
    /// How it is arrived.
    pub arrival: ArrivalIr,
    /// Role re-initialising it at task start, if any (I-M4).
    pub reinit: Option<RoleKind>,
    /// What it belongs to.
    pub source: OrdinalSource,
    /// The declaration it comes from.
    pub span: Span,
}

/// The name of the page hand-off barrier ([`OrdinalSource::PagesReady`]).
pub const PAGES_READY: &str = "pages_ready";

/// The spec header's constant of the ordinal family `label` ([`Ordinal::name`] without its slot):
/// `w_ring.full` → `SEM_W_RING_FULL`, `tmem_ready` → `SEM_TMEM_READY`. `valid::names` keeps a
/// contract's constants off the runtime's and each other's (E0012).
pub fn constant(label: &str) -> String {
    format!("SEM_{}", label.replace('.', "_").to_ascii_uppercase())
}

/// The family of channel `channel`'s barriers at `end` (`full` or `empty`): `w_ring.full`.
pub fn channel_family(channel: &str, end: &str) -> String {
    format!("{channel}.{end}")
}

/// Whether `ir` gets the `pages_ready` hand-off: a consumer-only task that uses pages (it has
/// regions). Its loader (the page prefix in the generated body, `back::page_prefix`) is then the
/// one role that waits page parity, on every page of every task (a dense observer, I-P5): the used
/// pages, the hand-off, then the unused pages; the consumer's body and page suffix run after the
/// hand-off. Page mode 2 (the consumer claims the used pages, the loader prefix only the unused ones)
/// leaves the loader a sparse observer: on a queue mixing it with page-mode-1 tasks, a loader two
/// tasks ahead passes a page wait on the parity of the phase before (found by `mpkc verify
/// --chain` on the MoE block, 2026-12-01).
pub fn needs_page_handoff(ir: &TaskIr) -> bool {
    ir.family.is_consumer_only() && !ir.regions.is_empty()
}

/// Allocates every ordinal of `ir` in the documented order. May return more than
/// [`MAX_OP_SEMS`] entries; I-M1 is checked by `valid`.
pub fn allocate(ir: &TaskIr) -> Vec<Ordinal> {
    let mut out: Vec<Ordinal> = Vec::new();
    let sharers = |owner: Handle<ChannelIr>| -> Vec<Handle<ChannelIr>> {
        ir.channels
            .iter()
            .filter(|(_, c)| matches!(c.empty, EmptyEdge::Shared(o, _) if o == owner))
            .map(|(h, _)| h)
            .collect()
    };
    // (last sharer, owner): the owner's empties follow the last sharer's fulls.
    let mut deferred: Vec<(Handle<ChannelIr>, Handle<ChannelIr>)> = Vec::new();
    for (h, ch) in ir.channels.iter() {
        for s in 0..ch.depth {
            out.push(Ordinal {
                ordinal: 0,
                name: format!("{}[{s}]", channel_family(&ch.name, "full")),
                count: ch.full_arrival.init_count(),
                producer: ch.producer,
                consumer: ch.consumer,
                arrival: ch.full_arrival.clone(),
                reinit: Some(ch.reinit),
                source: OrdinalSource::Full(h, s),
                span: ch.span,
            });
        }
        if let EmptyEdge::Own { .. } = ch.empty {
            match sharers(h).last() {
                Some(&last) if last > h => deferred.push((last, h)),
                _ => push_empties(ir, h, &mut out),
            }
        }
        for &(_, owner) in deferred.iter().filter(|(last, _)| *last == h) {
            push_empties(ir, owner, &mut out);
        }
    }
    for (h, s) in ir.sems.iter() {
        out.push(Ordinal {
            ordinal: 0,
            name: s.name.clone(),
            count: s.count,
            producer: s.producer,
            consumer: s.consumer,
            arrival: s.arrival.clone(),
            reinit: s.reinit,
            source: OrdinalSource::Sem(h),
            span: s.span,
        });
    }
    if needs_page_handoff(ir) {
        out.push(Ordinal {
            ordinal: 0,
            name: PAGES_READY.to_string(),
            count: 1,
            producer: RoleKind::Loader,
            consumer: RoleKind::Consumer,
            arrival: ArrivalIr::Threads(1),
            reinit: None,
            source: OrdinalSource::PagesReady,
            span: ir.span,
        });
    }
    for (i, o) in out.iter_mut().enumerate() {
        o.ordinal = i;
    }
    out
}

fn push_empties(ir: &TaskIr, h: Handle<ChannelIr>, out: &mut Vec<Ordinal>) {
    let ch = &ir.channels[h];
    let EmptyEdge::Own { role, arrival, .. } = &ch.empty else {
        return;
    };
    for s in 0..ch.depth {
        out.push(Ordinal {
            ordinal: 0,
            name: format!("{}[{s}]", channel_family(&ch.name, "empty")),
            count: arrival.init_count(),
            producer: *role,
            consumer: ch.producer,
            arrival: arrival.clone(),
            reinit: Some(ch.reinit),
            source: OrdinalSource::Empty(h, s),
            span: ch.span,
        });
    }
}

/// The ordinal of the full barrier of `ch` at `slot`.
pub fn full_of(table: &[Ordinal], ch: Handle<ChannelIr>, slot: u32) -> Option<usize> {
    table
        .iter()
        .find(|o| o.source == OrdinalSource::Full(ch, slot))
        .map(|o| o.ordinal)
}

/// The ordinal of the empty barrier serving `ch` at `slot` (following a shared edge).
pub fn empty_of(ir: &TaskIr, table: &[Ordinal], ch: Handle<ChannelIr>, slot: u32) -> Option<usize> {
    let owner = match ir.channels[ch].empty {
        EmptyEdge::Shared(o, _) => o,
        EmptyEdge::Own { .. } => ch,
        EmptyEdge::None => return None,
    };
    table
        .iter()
        .find(|o| o.source == OrdinalSource::Empty(owner, slot))
        .map(|o| o.ordinal)
}
