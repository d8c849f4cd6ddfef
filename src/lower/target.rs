//! The per-target decisions of the lowering, made here and nowhere else (issue 11 Deliver 1):
//!
//! | fact | sm_100a | sm_90a |
//! |---|---|---|
//! | who issues the MMA | the launcher (W5), one elected lane, tcgen05 | the consumer warpgroup, wgmma |
//! | the accumulator | TMEM: the TMEM channel's barriers are used | registers: TMEM channels unused |
//! | a ring stage freed by the MMA | `tcgen05.commit`, count 1 | the 128 consumer threads, count 128 |
//! | TMEM allocation | after the first stage landed (the pages are the task's, I-P5) | none |

use super::program::{Barrier, BarrierId, BarrierSource, MmaKind, MmaShape};
use crate::ir::{
    ArrivalIr, ChannelIr, ChannelStorageIr, EmptyEdge, Family, Handle, RoleKind, Target, TaskIr,
};
use crate::plan::sems::{Ordinal, OrdinalSource};

/// Threads of the consumer warpgroup (W0-3, I-R5).
pub const CONSUMER_THREADS: i64 = 128;

/// The role that issues the MMAs of a pipeline on `target`.
pub fn mma_role(target: Target) -> RoleKind {
    match target {
        Target::Sm100a => RoleKind::Launcher,
        Target::Sm90a => RoleKind::Consumer,
    }
}

/// Whether `target` lowers TMEM channels (sm_90a keeps the accumulator in registers).
pub fn has_tmem(target: Target) -> bool {
    target == Target::Sm100a
}

/// The role that waits the full barriers of `ch` on `target`: a region ring the launcher reads
/// for its MMAs is read by the consumer warpgroup on sm_90a.
pub fn ring_reader(ir: &TaskIr, ch: Handle<ChannelIr>, target: Target) -> RoleKind {
    let c = &ir.channels[ch];
    if ir.family == Family::Pipeline
        && matches!(c.storage, ChannelStorageIr::Region(_))
        && c.consumer == RoleKind::Launcher
    {
        mma_role(target)
    } else {
        c.consumer
    }
}

/// The empty edge of `owner` on `target`: the arriving role and how it arrives. A region ring
/// the launcher frees by `commit` is freed by the 128 consumer threads on sm_90a, each after
/// its last read of the stage.
pub fn empty_edge(
    ir: &TaskIr,
    owner: Handle<ChannelIr>,
    target: Target,
) -> Option<(RoleKind, ArrivalIr)> {
    let c = &ir.channels[owner];
    let EmptyEdge::Own { role, arrival, .. } = &c.empty else {
        return None;
    };
    let freed_by_mma = *role == RoleKind::Launcher
        && matches!(arrival, ArrivalIr::Commit)
        && matches!(c.storage, ChannelStorageIr::Region(_))
        && ir.family == Family::Pipeline;
    if freed_by_mma && target == Target::Sm90a {
        Some((RoleKind::Consumer, ArrivalIr::Threads(CONSUMER_THREADS)))
    } else {
        Some((*role, arrival.clone()))
    }
}

/// The ordinal table as `target`'s kernel initialises it (issue 11, case 12; I-M2): the same
/// ordinals, names and order on every target, with the counts, producers and arrivals of that
/// target's lowering. On sm_90a the empty barriers of a region ring the launcher frees by
/// `commit` are arrived by the 128 consumer threads ([`empty_edge`]): count `128 + (count - 1)`,
/// the thread arrivals replacing the one commit arrival.
pub fn table(ir: &TaskIr, table: &[Ordinal], target: Target) -> Vec<Ordinal> {
    let mut out = table.to_vec();
    for o in &mut out {
        let OrdinalSource::Empty(ch, _) = o.source else {
            continue;
        };
        let declared = match &ir.channels[ch].empty {
            EmptyEdge::Own { role, arrival, .. } => (*role, arrival.clone()),
            _ => continue,
        };
        if let Some((role, arrival)) = empty_edge(ir, ch, target) {
            if (role, &arrival) != (declared.0, &declared.1) {
                if let ArrivalIr::Threads(n) = arrival {
                    o.count = n + (o.count - 1);
                }
                o.producer = role;
                o.arrival = arrival;
            }
        }
    }
    out
}

/// The barrier families of `table` on `target`, in ordinal order, with this target's counts,
/// producers and arrivals ([`table`] per ordinal).
pub fn barriers(ir: &TaskIr, ordinals: &[Ordinal], target: Target) -> Vec<Barrier> {
    let table = table(ir, ordinals, target);
    let mut out: Vec<Barrier> = Vec::new();
    for o in &table {
        let (source, slot) = match o.source {
            OrdinalSource::Full(h, s) => (BarrierSource::Full(h), s),
            OrdinalSource::Empty(h, s) => (BarrierSource::Empty(h), s),
            OrdinalSource::Sem(h) => (BarrierSource::Sem(h), 0),
            OrdinalSource::PagesReady => (BarrierSource::PagesReady, 0),
        };
        if slot > 0 {
            if let Some(b) = out.last_mut().filter(|b| b.source == source) {
                b.slots += 1;
                b.counts.push(o.count);
                continue;
            }
        }
        let label = o.name.split('[').next().unwrap_or(&o.name).to_string();
        let used = match source {
            BarrierSource::Full(h) | BarrierSource::Empty(h) => {
                has_tmem(target) || !matches!(ir.channels[h].storage, ChannelStorageIr::Tmem)
            }
            BarrierSource::Sem(_) | BarrierSource::PagesReady => true,
        };
        out.push(Barrier {
            first: o.ordinal,
            slots: 1,
            counts: vec![o.count],
            arrival: o.arrival.clone(),
            producer: o.producer,
            waiter: match source {
                BarrierSource::Full(h) => ring_reader(ir, h, target),
                _ => o.consumer,
            },
            reinit: o.reinit,
            used,
            c_name: crate::plan::sems::constant(&label),
            label,
            source,
            span: o.span,
        });
    }
    out
}

/// The family of `source` in `bars`.
pub fn find(bars: &[Barrier], source: BarrierSource) -> Option<BarrierId> {
    bars.iter()
        .position(|b| b.source == source)
        .and_then(|i| u16::try_from(i).ok())
        .map(BarrierId)
}

/// The MMAs of one stage of `linear` on `target`: sm_100a issues tile-M-row `tcgen05.mma`s (the
/// instruction descriptor carries M and N) into TMEM; sm_90a issues m64 `wgmma`s, two halves of
/// the 128-row tile, into the consumer warpgroup's registers (wgmma K is 16 for bf16, 32 for
/// e4m3; PTX ISA, "Asynchronous Warpgroup Level Matrix Shape").
pub fn mma(linear: &super::LinearMath, target: Target) -> MmaShape {
    let fp8 = matches!(linear.operands, super::Operands::Fp8BlockScale { .. });
    let (kind, m) = match (target, fp8) {
        (Target::Sm100a, false) => (MmaKind::Tcgen05F16, linear.block_m),
        (Target::Sm100a, true) => (MmaKind::Tcgen05Mxf8f6f4BlockScale, linear.block_m),
        (Target::Sm90a, false) => (MmaKind::WgmmaBf16, 64),
        (Target::Sm90a, true) => (MmaKind::WgmmaE4m3, 64),
    };
    let per = |a: i64, b: i64| if b > 0 { a / b } else { 0 };
    // A tile of fewer rows than the MMA's 64 (sm_90a, `bind`) takes one m64 wgmma per K step;
    // its rows past the tile are discarded.
    let per_rows = |a: i64, b: i64| if b > 0 { (a + b - 1) / b } else { 0 };
    MmaShape {
        kind,
        m,
        n: linear.block_n,
        k: linear.mma_k,
        count: per_rows(linear.block_m, m) * per(linear.block_k, linear.mma_k),
    }
}
