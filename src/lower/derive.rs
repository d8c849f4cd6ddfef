//! Builds each role's operations from the contract's channels and sems on one target (the order
//! of contract doc §3.2): the role's re-init first; the one-shot sems `at start`; per tile, the
//! TMEM slot acquired, the K loop over every ring group (the producer waits the stage's empty
//! barrier from phase 1 and fills it; readers wait the fulls from phase 0, then the empty
//! arriver frees it), the TMEM slot handed over; then the sems `at end`. With the linear
//! engine's binding, its [`Step`]s and TMA loads go in at their places; they add no wait and no
//! arrival.

use super::program::*;
use super::target::{self, has_tmem, mma_role, ring_reader};
use crate::ir::{
    ArrivalIr, ChannelIr, ChannelStorageIr, EmptyEdge, GranularityIr, Handle, RoleKind, Target,
    TaskIr,
};
use crate::lower::{LinearMath, Operands};
use crate::plan::sems::Ordinal;

mod consumer;

/// The roles of a program, in the model check's order.
const ROLES: [RoleKind; 4] = [
    RoleKind::Consumer,
    RoleKind::Loader,
    RoleKind::Launcher,
    RoleKind::Storer,
];

struct Cx<'a> {
    ir: &'a TaskIr,
    target: Target,
    bars: Vec<Barrier>,
    linear: Option<&'a LinearMath>,
}

pub(super) fn program(
    ir: &TaskIr,
    table: &[Ordinal],
    target: Target,
    linear: Option<&LinearMath>,
) -> RoleProgram {
    let cx = Cx {
        ir,
        target,
        bars: target::barriers(ir, table, target),
        linear,
    };
    let roles = ROLES
        .iter()
        .map(|&kind| Role {
            kind,
            threads: role_threads(ir, kind),
            ops: cx.role(kind),
        })
        .collect();
    let tiles = match &ir.granularity {
        GranularityIr::PerTile { tiles_per_task, .. } => {
            u32::try_from(*tiles_per_task).unwrap_or(1).max(1)
        }
        GranularityIr::GridWide { .. } => 1,
    };
    RoleProgram {
        target,
        barriers: cx.bars,
        roles,
        // The linear lowering runs K_ITERS >= 1 trips (E0013 otherwise). A contract that states
        // a zero-trip path (`early_exit`) is model-checked on it too; the lowering then rejects
        // the clause (E0013), having no such path.
        min_trips: u64::from(
            ir.family == crate::ir::Family::Pipeline
                && ir.channels.values().all(|c| c.early_exit.is_none()),
        ),
        tiles,
        compute: linear.cloned(),
    }
}

/// Threads of `kind` in the task's role binding (32 per warp).
fn role_threads(ir: &TaskIr, kind: RoleKind) -> u32 {
    ir.roles
        .iter()
        .find(|r| r.kind == kind)
        .map_or(32, |r| u32::try_from(r.threads()).unwrap_or(32))
}

/// The named barrier the runtime keeps for the consumer's page claim and suffix (contract doc
/// §3.4); the sm_90a consumer's own page release ([`Step::ConsumerPageRelease`]) syncs on it.
pub const RUNTIME_PAGE_BARRIER: u8 = 8;
impl Cx<'_> {
    /// Whether the linear engine's steps go in (the contract has its binding); the model check
    /// reads their memory effects from the lowered program.
    fn lowered(&self) -> bool {
        self.linear.is_some()
    }

    /// Whether the consumer releases the used pages right after its K loop
    /// ([`Step::ConsumerPageRelease`]) instead of the launcher after `consumer_done`: on sm_90a,
    /// whose consumer issues and waits the wgmmas itself, where the epilogue reads no SMEM (all
    /// but `quant e4m3`, whose warp maxima meet in the scratch region, and an epilogue map, the
    /// contract's own code).
    /// Decided from the contract, not the lowering, so that the protocol-only program the model
    /// check runs has the same named barrier sync as the lowered one. Not under `setmaxnreg`:
    /// there the consumer is its own function (ptxas C7510, `back::sm90`) and the release's page
    /// mask spilled the worker's entry (4 bytes, helpers 40, ptxas 13.5, tests/setmaxnreg.rs).
    fn consumer_releases_pages(&self) -> bool {
        self.target == Target::Sm90a
            && self.ir.setmaxnreg.is_none()
            // An epilogue map (`body cuda`) is the contract's code: it may read SMEM.
            && self.ir.body.is_none()
            && self.ir.family == crate::ir::Family::Pipeline
            && !self.ir.epilogues.iter().any(|e| e.0 == "quant")
    }

    fn full(&self, ch: Handle<ChannelIr>) -> Option<BarrierId> {
        target::find(&self.bars, BarrierSource::Full(ch))
    }

    /// The owner of `ch`'s empty edge (itself, or the channel it shares with).
    fn owner(&self, ch: Handle<ChannelIr>) -> Option<Handle<ChannelIr>> {
        match self.ir.channels[ch].empty {
            EmptyEdge::Shared(o, _) => Some(o),
            EmptyEdge::Own { .. } => Some(ch),
            EmptyEdge::None => None,
        }
    }

    fn empty(&self, ch: Handle<ChannelIr>) -> Option<BarrierId> {
        self.owner(ch)
            .and_then(|o| target::find(&self.bars, BarrierSource::Empty(o)))
    }

    fn uses_channel(&self, ch: Handle<ChannelIr>) -> bool {
        has_tmem(self.target) || !matches!(self.ir.channels[ch].storage, ChannelStorageIr::Tmem)
    }

    /// The channels sharing `owner`'s empty edge, owner first, in declaration order.
    fn group(&self, owner: Handle<ChannelIr>) -> Vec<Handle<ChannelIr>> {
        let mut g = vec![owner];
        g.extend(
            self.ir
                .channels
                .iter()
                .filter(|(_, c)| matches!(c.empty, EmptyEdge::Shared(o, _) if o == owner))
                .map(|(h, _)| h),
        );
        g
    }

    /// The declared `threads N after B` of `owner`'s empty edge.
    fn empty_after(
        &self,
        owner: Handle<ChannelIr>,
    ) -> Option<(Handle<crate::ir::BarrierIr>, crate::span::Span)> {
        match &self.ir.channels[owner].empty {
            EmptyEdge::Own { after, .. } => *after,
            _ => None,
        }
    }

    /// `role`'s arrival on `bar` after the named barrier `after` (`threads N after B`): the
    /// barrier over every thread that reads what the arrival releases, then the role's first N
    /// threads arrive. Without `after`, [`Cx::arrive`].
    fn arrive_after(
        &self,
        role: RoleKind,
        arrival: &ArrivalIr,
        bar: BarRef,
        elected: bool,
        after: Option<(Handle<crate::ir::BarrierIr>, crate::span::Span)>,
        ops: &mut Vec<Op>,
    ) {
        match (after, arrival) {
            (Some((b, _)), ArrivalIr::Threads(n)) => {
                let b = &self.ir.barriers[b];
                ops.push(Op::NamedSync {
                    id: u8::try_from(b.id).unwrap_or(u8::MAX),
                    threads: u32::try_from(b.threads).unwrap_or(0),
                    span: b.span,
                });
                let n = u32::try_from(*n).unwrap_or(0);
                ops.push(Op::Arrive {
                    bar,
                    by: ThreadSet::First(n),
                    threads: n,
                });
            }
            _ => ops.push(self.arrive(role, arrival, bar, elected)),
        }
    }

    /// `role`'s arrival of `arrival` on `bar`, from inside an elected block when `elected`.
    fn arrive(&self, role: RoleKind, arrival: &ArrivalIr, bar: BarRef, elected: bool) -> Op {
        match arrival {
            ArrivalIr::Commit | ArrivalIr::Tma(_) | ArrivalIr::Bulk(_) => Op::Commit { bar },
            ArrivalIr::Threads(_) => {
                let threads = role_threads(self.ir, role);
                if threads > 32 {
                    Op::Arrive {
                        bar,
                        by: ThreadSet::All,
                        threads,
                    }
                } else {
                    Op::Arrive {
                        bar,
                        by: if elected || role == RoleKind::Loader {
                            ThreadSet::Elected
                        } else {
                            ThreadSet::Lane0
                        },
                        threads: 1,
                    }
                }
            }
        }
    }

    fn role(&self, role: RoleKind) -> Vec<Op> {
        let mut ops = Vec::new();
        if self.ir.family != crate::ir::Family::Pipeline {
            return self.consumer_only_role(role);
        }
        let owned = self.reinit_owned(role);
        if !owned.is_empty()
            || (self.linear.is_some() && role != RoleKind::Consumer && role != RoleKind::Storer)
        {
            ops.push(Op::Reinit { ordinals: owned });
        }
        // The loader's page prefix is its own (`auto_loader_page_lifecycle = false`,
        // `back::registration`): after its re-inits, which need no page, so that they run while
        // the task before this one still holds the pages.
        let page_acquire = (self.lowered() && role == RoleKind::Loader).then(|| {
            ops.push(Op::Step(Step::PageAcquire));
            ops.len()
        });
        let tmem: Vec<Handle<ChannelIr>> = self
            .ir
            .channels
            .iter()
            .filter(|(h, c)| matches!(c.storage, ChannelStorageIr::Tmem) && self.uses_channel(*h))
            .map(|(h, _)| h)
            .collect();
        let owners: Vec<Handle<ChannelIr>> = self
            .ir
            .channels
            .iter()
            .filter(|(_, c)| {
                matches!(c.storage, ChannelStorageIr::Region(_))
                    && !matches!(c.empty, EmptyEdge::Shared(..))
            })
            .map(|(h, _)| h)
            .collect();
        let sm100_launcher = self.target == Target::Sm100a && role == RoleKind::Launcher;
        // sm_100a: the launcher allocates TMEM into the scratch region only after the first stage
        // landed, i.e. after the loader saw every page the task uses ready (I-P5).
        if sm100_launcher && !tmem.is_empty() {
            if let Some((first_ring, bar)) = owners
                .iter()
                .find(|&&o| self.ir.channels[o].consumer == RoleKind::Launcher)
                .and_then(|&o| self.full(o).map(|b| (o, b)))
            {
                ops.push(Op::Wait {
                    bar: BarRef {
                        bar,
                        index: Index::Fixed(0),
                    },
                    start: 0,
                    site: Site {
                        what: "waits the first stage before allocating TMEM",
                        span: self.ir.channels[first_ring].span,
                    },
                });
                if self.lowered() {
                    ops.push(Op::Step(Step::TmemAlloc {
                        scratch: self.linear.map_or(0, |p| p.scratch),
                    }));
                }
            }
        }
        self.one_shots(role, false, &mut ops);
        if self.lowered() && self.target == Target::Sm90a && role == RoleKind::Launcher {
            ops.push(Op::Step(Step::SyncWarp));
        }
        let mut tile = Vec::new();
        // The residual's loads go before the accumulator wait (sm_100a) or the K loop (sm_90a).
        if self.lowered()
            && role == RoleKind::Consumer
            && self.linear.is_some_and(|p| p.preloads_residual())
        {
            tile.push(Op::Step(Step::EpilogueLoads {
                span: self.ir.epilogues.first().map_or(self.ir.span, |e| e.2),
            }));
        }
        for &h in &tmem {
            self.acquire_slot(role, h, sm100_launcher, &mut tile);
        }
        if self.lowered() && role == RoleKind::Consumer && !tmem.is_empty() {
            tile.push(Op::Step(Step::AccLoad {
                scratch: self.linear.map_or(0, |p| p.scratch),
                span: self.ir.channels[tmem[0]].span,
            }));
        }
        for (h, c) in self.ir.channels.iter() {
            if let Some((r, empty, span)) = c.early_exit {
                if r == role {
                    self.early_exit(h, empty, span, sm100_launcher, &mut tile);
                }
            }
        }
        let mut k_loop = Vec::new();
        for &owner in &owners {
            self.ring_trip(role, owner, sm100_launcher, &mut k_loop);
        }
        if !k_loop.is_empty() {
            tile.push(Op::Loop {
                kind: LoopKind::KIters,
                body: k_loop,
            });
        }
        if role == RoleKind::Consumer && self.consumer_releases_pages() {
            // Every consumer thread's wgmmas waited before warp 0 releases the pages.
            tile.push(Op::NamedSync {
                id: RUNTIME_PAGE_BARRIER,
                threads: 128,
                span: self.ir.epilogues.first().map_or(self.ir.span, |e| e.2),
            });
            if self.lowered() {
                tile.push(Op::Step(Step::ConsumerPageRelease));
            }
        }
        if self.lowered() && role == RoleKind::Consumer {
            tile.push(Op::Step(Step::Epilogue {
                scratch: self.linear.map_or(0, |p| p.scratch),
                // `quant e4m3` meets the warps' maxima in the scratch region.
                smem: self
                    .linear
                    .is_some_and(|p| p.epilogue == crate::lower::Epilogue::QuantE4m3),
                span: self.ir.epilogues.first().map_or(self.ir.span, |e| e.2),
            }));
        }
        for &h in &tmem {
            self.release_slot(role, h, sm100_launcher, &mut tile);
        }
        if !tile.is_empty() {
            let l = Op::Loop {
                kind: LoopKind::Tiles,
                body: tile,
            };
            if sm100_launcher {
                ops.push(Op::Elect { body: vec![l] });
            } else {
                ops.push(l);
            }
        }
        for &owner in &owners {
            self.drain(role, owner, &mut ops);
        }
        if self.lowered() && sm100_launcher {
            ops.push(Op::Step(Step::SyncWarp));
        }
        self.one_shots(role, true, &mut ops);
        if self.lowered() && role == RoleKind::Launcher && !self.consumer_releases_pages() {
            ops.push(Op::Step(Step::PageRelease));
            if sm100_launcher && !tmem.is_empty() {
                ops.push(Op::Step(Step::TmemDealloc));
            }
        }
        // After the used pages' acquire, one elected lane fences and issues the loads; then the
        // warp waits and frees the unused pages (the dense observer, I-P5).
        if let Some(after) = page_acquire {
            let mut body = vec![Op::Step(Step::PagesFence)];
            body.extend(ops.split_off(after));
            ops.push(Op::Elect { body });
            ops.push(Op::Step(Step::PageFreeUnused));
        }
        ops
    }

    /// The ordinals `role` re-initialises at task start on this target (I-M4), ascending.
    fn reinit_owned(&self, role: RoleKind) -> Vec<usize> {
        self.bars
            .iter()
            .filter(|b| b.reinit == Some(role))
            .flat_map(|b| (0..b.slots as usize).map(move |s| b.first + s))
            .collect()
    }

    fn one_shots(&self, role: RoleKind, at_end: bool, ops: &mut Vec<Op>) {
        for (h, s) in self.ir.sems.iter().filter(|(_, s)| s.at_end == at_end) {
            let Some(bar) = target::find(&self.bars, BarrierSource::Sem(h)) else {
                continue;
            };
            let bar = BarRef {
                bar,
                index: Index::Fixed(0),
            };
            if s.producer == role {
                self.arrive_after(role, &s.arrival, bar, false, s.after, ops);
            }
            if s.consumer == role {
                ops.push(Op::Wait {
                    bar,
                    start: 0,
                    site: Site {
                        what: "waits",
                        span: s.span,
                    },
                });
            }
        }
    }

    /// A TMEM slot: the producer waits its empty barrier, the consumer its full one.
    fn acquire_slot(&self, role: RoleKind, h: Handle<ChannelIr>, elected: bool, ops: &mut Vec<Op>) {
        let _ = elected;
        let ch = &self.ir.channels[h];
        let index = Index::Iter(LoopKind::Tiles);
        if ch.producer == role {
            if let Some(bar) = self.empty(h) {
                ops.push(Op::Wait {
                    bar: BarRef { bar, index },
                    start: 1,
                    site: Site {
                        what: "waits the empty barrier",
                        span: ch.span,
                    },
                });
            }
        }
        if ch.consumer == role {
            if let Some(bar) = self.full(h) {
                ops.push(Op::Wait {
                    bar: BarRef { bar, index },
                    start: 0,
                    site: Site {
                        what: "waits the full barrier",
                        span: ch.span,
                    },
                });
            }
        }
    }

    /// The TMEM slot handed over: the producer fills it, the empty arriver frees it.
    fn release_slot(&self, role: RoleKind, h: Handle<ChannelIr>, elected: bool, ops: &mut Vec<Op>) {
        let ch = &self.ir.channels[h];
        let index = Index::Iter(LoopKind::Tiles);
        if ch.producer == role {
            if let Some(bar) = self.full(h) {
                ops.push(self.arrive(role, &ch.full_arrival, BarRef { bar, index }, elected));
            }
        }
        if let Some((er, arrival)) = target::empty_edge(self.ir, h, self.target) {
            if er == role {
                if let Some(bar) = self.empty(h) {
                    let after = self.empty_after(h);
                    self.arrive_after(role, &arrival, BarRef { bar, index }, elected, after, ops);
                }
            }
        }
    }

    /// The producer's fill of `h`'s stage: its TMA loads (one expect_tx arrival), the scale
    /// staging of block-scaled fp8, or its declared arrival.
    fn fill(&self, role: RoleKind, h: Handle<ChannelIr>, bar: BarRef, elected: bool) -> Op {
        let ch = &self.ir.channels[h];
        let group = match ch.storage {
            ChannelStorageIr::Region(g) => Some(g),
            ChannelStorageIr::Tmem => None,
        };
        match (&ch.full_arrival, group) {
            (ArrivalIr::Tma(tensors), Some(group)) if !tensors.is_empty() => {
                let bytes = tensors
                    .iter()
                    .map(|&t| {
                        let t = &self.ir.tensors[t];
                        t.tma.as_ref().and_then(|m| m.box_bytes(t.dtype)).unwrap_or(0)
                    })
                    .sum();
                let operand = match self.linear {
                    Some(p) if tensors[0] == p.weights => Operand::Weights,
                    Some(p) if tensors[0] == p.acts => Operand::Activations,
                    _ => Operand::Other,
                };
                let t = &self.ir.tensors[tensors[0]];
                let l2 = L2Policy {
                    default: t
                        .tma
                        .as_ref()
                        .and_then(|m| m.l2)
                        .unwrap_or(crate::ir::L2Hint::EvictNormal),
                    lever: self.ir.levers.iter().find_map(|l| match &l.effect {
                        Some(crate::ir::LeverEffect::L2 { tensor, hint, .. })
                            if *tensor == tensors[0] =>
                        {
                            Some((l.name.clone(), *hint))
                        }
                        _ => None,
                    }),
                };
                // The weights' box starts at the task's tile rows, the activations' at token 0;
                // both at the stage's K chunk (the tensor maps are 3-D: 64-element rows, rows,
                // K chunks).
                let routed = self.linear.is_some_and(|p| p.route.is_some());
                let coords = match operand {
                    Operand::Weights if routed => {
                        vec![Coord::Zero, Coord::ExpertRow, Coord::SlotKChunk]
                    }
                    Operand::Weights => vec![Coord::Zero, Coord::TileRow, Coord::KChunk],
                    Operand::Activations => vec![Coord::Zero, Coord::Zero, Coord::KChunk],
                    Operand::Other => Vec::new(),
                };
                Op::TmaLoad {
                    tensor: tensors[0],
                    operand,
                    l2,
                    bar,
                    group,
                    bytes,
                    box_dims: t.tma.as_ref().map_or_else(Vec::new, |m| m.box_dims.clone()),
                    coords,
                }
            }
            (ArrivalIr::Threads(_), Some(group))
                if self.linear.is_some_and(|p| {
                    matches!(p.operands, Operands::Fp8BlockScale { sf_ring, .. } if sf_ring == h)
                }) =>
            {
                Op::StageScales { bar, group }
            }
            (a, _) => self.arrive(role, a, bar, elected),
        }
    }

    /// One K iteration of a ring group (owner plus the channels sharing its empty edge).
    fn ring_trip(
        &self,
        role: RoleKind,
        owner: Handle<ChannelIr>,
        elected: bool,
        ops: &mut Vec<Op>,
    ) {
        let members = self.group(owner);
        let o = &self.ir.channels[owner];
        let index = Index::Iter(LoopKind::KIters);
        if o.producer == role {
            if let Some(bar) = self.empty(owner) {
                ops.push(Op::Wait {
                    bar: BarRef { bar, index },
                    start: 1,
                    site: Site {
                        what: "waits the empty barrier",
                        span: o.span,
                    },
                });
            }
            let mut dep_waited = false;
            for &h in &members {
                let ch = &self.ir.channels[h];
                if ch.producer != role {
                    continue;
                }
                let Some(bar) = self.full(h) else { continue };
                // Data another task wrote (everything but the weights) is loaded only after the
                // task's dependency (I-M9): the wait goes before the first such load.
                // Routed weights too: their rows are the expert another task chose.
                if let Some(p) = self.linear {
                    let weights = matches!(&ch.full_arrival, ArrivalIr::Tma(t) if t.as_slice() == [p.weights]);
                    if !dep_waited && (!weights || p.route.is_some()) {
                        ops.push(Op::Step(Step::DepWait));
                        if p.route.is_some() {
                            ops.push(Op::Step(Step::RouteRead));
                        }
                        dep_waited = true;
                    }
                }
                ops.push(self.fill(role, h, BarRef { bar, index }, elected));
            }
        }
        let empty = target::empty_edge(self.ir, owner, self.target);
        let mut waited = false;
        for &h in &members {
            let reader = ring_reader(self.ir, h, self.target);
            let frees = empty.as_ref().is_some_and(|(r, _)| *r == role);
            if reader == role || frees {
                if let Some(bar) = self.full(h) {
                    ops.push(Op::Wait {
                        bar: BarRef { bar, index },
                        start: 0,
                        site: Site {
                            what: "waits the full barrier",
                            span: self.ir.channels[h].span,
                        },
                    });
                    waited = true;
                }
            }
        }
        if self.lowered() && waited && role == mma_role(self.target) {
            let group = |h: Handle<ChannelIr>| self.ir.channels[h].region_group();
            ops.push(Op::Step(match self.linear {
                Some(p) => Step::StageMma {
                    span: self.ir.channels[p.w_ring].span,
                    w: group(p.w_ring),
                    a: group(p.a_ring),
                    sf: match p.operands {
                        Operands::Fp8BlockScale { sf_ring, .. } => Some(group(sf_ring)),
                        Operands::Bf16 => None,
                    },
                    mma: Some(target::mma(p, self.target)),
                },
                // Without the engine's binding: the ring group read, for the model check.
                None => Step::StageMma {
                    span: o.span,
                    w: group(owner),
                    a: group(owner),
                    sf: None,
                    mma: None,
                },
            }));
        }
        if let Some((er, arrival)) = empty {
            if er == role {
                if let Some(bar) = self.empty(owner) {
                    let after = self.empty_after(owner);
                    self.arrive_after(role, &arrival, BarRef { bar, index }, elected, after, ops);
                }
            }
        }
    }

    /// `early_exit ROLE arrives EDGE`: with zero trips, the role arrives slot 0 of that edge.
    fn early_exit(
        &self,
        h: Handle<ChannelIr>,
        empty: bool,
        span: crate::span::Span,
        elected: bool,
        ops: &mut Vec<Op>,
    ) {
        let _ = elected;
        let (bar, arrival) = if empty {
            let Some(owner) = self.owner(h) else { return };
            let Some((_, a)) = target::empty_edge(self.ir, owner, self.target) else {
                return;
            };
            (self.empty(h), a)
        } else {
            (self.full(h), self.ir.channels[h].full_arrival.clone())
        };
        let Some(bar) = bar else { return };
        let count = self.bars[usize::from(bar.0)].count(0);
        let weight = match arrival {
            ArrivalIr::Threads(n) => n,
            _ => count,
        };
        ops.push(Op::EarlyExit {
            bar: BarRef {
                bar,
                index: Index::Fixed(0),
            },
            weight,
            is_async: arrival.is_async(),
            span,
        });
    }

    /// `drain` on a ring group the role produces.
    fn drain(&self, role: RoleKind, owner: Handle<ChannelIr>, ops: &mut Vec<Op>) {
        let o = &self.ir.channels[owner];
        let Some(span) = o.drain.or_else(|| {
            self.group(owner)
                .iter()
                .find_map(|h| self.ir.channels[*h].drain)
        }) else {
            return;
        };
        if o.producer != role {
            return;
        }
        if let Some(bar) = self.empty(owner) {
            ops.push(Op::Drain { bar, span });
        }
    }
}
