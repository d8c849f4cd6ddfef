//! Slot coverage: the slots of each barrier family that some operation of some target reaches
//! (E0014 for slots no tile reaches, W0015 for ring stages past the K iterations).

use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::*;
use crate::lower::{BarrierSource, Index, LoopKind, Op, RoleProgram};
use crate::span::Span;
use std::collections::BTreeSet;

/// Slot coverage of every barrier family, over every target's program.
pub(super) fn slots(ir: &TaskIr, programs: &[RoleProgram], sink: &mut Sink) {
    let linear = programs.iter().find_map(|p| p.compute.as_ref());
    let k_iters = linear.and_then(|p| u32::try_from(p.k_iters).ok().filter(|k| *k > 0));
    // source → (slots, reached without the K limit, reached with it)
    let mut reach: Vec<(BarrierSource, u32, BTreeSet<u32>, BTreeSet<u32>)> = Vec::new();
    for p in programs {
        let mut uses = Vec::new();
        for r in &p.roles {
            collect(&r.ops, &mut uses);
        }
        for (id, index) in uses {
            let b = p.barrier(id);
            let pos = match reach.iter().position(|e| e.0 == b.source) {
                Some(i) => i,
                None => {
                    reach.push((b.source, b.slots, BTreeSet::new(), BTreeSet::new()));
                    reach.len() - 1
                }
            };
            let e = &mut reach[pos];
            let n = b.slots.max(1);
            let upto = |k: u32| 0..k.min(n);
            match index {
                Some(Index::Fixed(i)) => {
                    e.2.insert(i % n);
                    e.3.insert(i % n);
                }
                Some(Index::Iter(LoopKind::Tiles)) => {
                    e.2.extend(upto(p.tiles));
                    e.3.extend(upto(p.tiles));
                }
                Some(Index::Iter(LoopKind::KIters)) => {
                    e.2.extend(upto(n));
                    e.3.extend(upto(k_iters.unwrap_or(n)));
                }
                None => {
                    e.2.extend(upto(n));
                    e.3.extend(upto(n));
                }
            }
        }
    }
    let mut rings_short: Vec<(String, Span)> = Vec::new();
    let mut depth = 0;
    let mut reported: BTreeSet<usize> = BTreeSet::new();
    for (source, n, all, with_k) in &reach {
        let ch = match source {
            BarrierSource::Full(h) | BarrierSource::Empty(h) => *h,
            BarrierSource::Sem(_) | BarrierSource::PagesReady => continue,
        };
        let c = &ir.channels[ch];
        let unreached: Vec<u32> = (0..*n).filter(|s| !all.contains(s)).collect();
        if !unreached.is_empty() {
            if reported.insert(ch.index()) {
                sink.push(unreached_slots(ir, c, *n, &unreached));
            }
            continue;
        }
        if with_k.len() < *n as usize && !rings_short.iter().any(|(n, _)| *n == c.name) {
            rings_short.push((c.name.clone(), c.span));
            depth = depth.max(*n);
        }
    }
    if let (Some(k), Some((first, span))) = (k_iters, rings_short.first()) {
        // The rings' depth: `stages N` where declared (a ring of a stage array has its stages).
        let stages = depth;
        let unused: Vec<String> = (k..stages).map(|s| s.to_string()).collect();
        let rings: Vec<String> = rings_short.iter().map(|(n, _)| format!("`{n}`")).collect();
        let its = if k == 1 { "iteration" } else { "iterations" };
        let mut d = Diagnostic::warning(
            codes::UNREACHED_STAGES,
            format!(
                "`stages {stages}` but the task runs {k} K {its}: {} of {} {} never filled",
                if unused.len() == 1 {
                    format!("stage {}", unused[0])
                } else {
                    format!("stages {}", unused.join(", "))
                },
                rings.join(", "),
                if unused.len() == 1 { "is" } else { "are" }
            ),
        );
        d = match ir.stages {
            Some((_, s)) => d
                .primary(s, format!("{stages} stages"))
                .secondary(*span, format!("`{first}` fills {k}")),
            None => d.primary(*span, format!("{k} of {stages} stages filled")),
        };
        sink.push(
            d.note("each K iteration fills the next stage; a task restarts at stage 0, so stages past its K iterations take SMEM and are never filled")
                .note("a warning, not an error: K and the split count are params, and another instance (or `--param`) may run more iterations")
                .help(format!("`stages {k}`, or more K per task")),
        );
    }
}

fn unreached_slots(ir: &TaskIr, c: &ChannelIr, n: u32, unreached: &[u32]) -> Diagnostic {
    let tiles = match &ir.granularity {
        GranularityIr::PerTile { tiles_per_task, .. } => *tiles_per_task,
        GranularityIr::GridWide { .. } => 1,
    };
    let reached = n as usize - unreached.len();
    let list: Vec<String> = unreached.iter().map(|s| s.to_string()).collect();
    let (decl, what) = match c.storage {
        ChannelStorageIr::Tmem => (format!("tmem slots {n}"), "slot"),
        ChannelStorageIr::Region(_) => (format!("{n} stages"), "stage"),
    };
    let s = if unreached.len() == 1 { "" } else { "s" };
    let t = if tiles == 1 { "" } else { "s" };
    let is = if unreached.len() == 1 { "is" } else { "are" };
    Diagnostic::error(
        codes::NOT_LOWERED,
        format!(
            "`{decl}` but the task runs {tiles} tile{t} per task: {what}{s} {} of `{}` {is} never used",
            list.join(", "),
            c.name
        ),
    )
    .primary(c.span, format!("{n} {what}s, {reached} used"))
    .note("each tile of a task takes the next slot and a task restarts at slot 0: the barriers of the other slots are initialised and never waited or arrived")
    .help(format!(
        "write `{}`",
        match c.storage {
            ChannelStorageIr::Tmem => format!("tmem slots {reached}"),
            ChannelStorageIr::Region(_) => format!("stages {reached}"),
        }
    ))
}

/// Every barrier use in `ops`: (family, index), `None` for a use of every slot (a drain).
fn collect(ops: &[Op], out: &mut Vec<(crate::lower::BarrierId, Option<Index>)>) {
    for op in crate::lower::flatten(ops) {
        match op {
            Op::Wait { bar, .. }
            | Op::Arrive { bar, .. }
            | Op::Commit { bar }
            | Op::TmaLoad { bar, .. }
            | Op::StageScales { bar, .. }
            | Op::EarlyExit { bar, .. } => out.push((bar.bar, Some(bar.index))),
            Op::Drain { bar, .. } => out.push((*bar, None)),
            Op::Loop { .. }
            | Op::Elect { .. }
            | Op::Reinit { .. }
            | Op::Step(_)
            | Op::NamedSync { .. } => {}
        }
    }
}
