//! The role program: what one task instance does on one target, as every role's ordered
//! operations (issue 11). The protocol model check (`valid::protocol`) runs on it, and the
//! pipeline kernels, `spec.h`'s semaphore tables and `init_semaphores` are rendered from it, so
//! what is checked is what is generated.

use crate::ir::{ArrivalIr, Handle, RoleKind, Target, TensorIr};
use crate::span::Span;

/// Index of a [`Barrier`] in [`RoleProgram::barriers`]: an mbarrier family (the `slots` barriers
/// of one channel edge, or a one-shot sem), never a name split again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BarrierId(pub u16);

/// Where a barrier family comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BarrierSource {
    /// The full barriers of a channel.
    Full(Handle<crate::ir::ChannelIr>),
    /// The empty barriers of a channel (the owner of a shared empty edge).
    Empty(Handle<crate::ir::ChannelIr>),
    /// A one-shot sem.
    Sem(Handle<crate::ir::SemIr>),
    /// A consumer-only task's page hand-off, loader -> consumer (`plan::sems::PagesReady`, I-P5).
    PagesReady,
}

/// One mbarrier family with this target's init count (I-M2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Barrier {
    /// The ordinal of slot 0; slot `s` is ordinal `first + s` (the same on every target, I-M3).
    pub first: usize,
    /// Slots (a channel's depth; 1 for a one-shot).
    pub slots: u32,
    /// Arrivals per phase of each slot on this target (sm_90a ring empties: the 128 consumer
    /// threads); equal across slots but where `mpkc verify --inject count-off` changed one.
    pub counts: Vec<i64>,
    /// How it is arrived on this target.
    pub arrival: ArrivalIr,
    /// The arriving role on this target.
    pub producer: RoleKind,
    /// The waiting role on this target.
    pub waiter: RoleKind,
    /// The role that re-initialises it at task start (I-M4), if any.
    pub reinit: Option<RoleKind>,
    /// False where this target's lowering never waits or arrives it (sm_90a has no TMEM: the
    /// accumulator channel's barriers are initialised and never used).
    pub used: bool,
    /// `w_ring.full`, `tmem_ready`: the family as diagnostics name it.
    pub label: String,
    /// `SEM_W_RING_FULL`: the `SemOrdinal` constant of slot 0, made here once for `spec.h` and
    /// the kernels.
    pub c_name: String,
    /// What it belongs to.
    pub source: BarrierSource,
    /// The declaration it comes from.
    pub span: Span,
}

/// The loops of a role program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoopKind {
    /// The task's tiles (`tiles_per_task`, I-P6: one for a pipeline): the TMEM slot cursor.
    Tiles,
    /// The K iterations of one tile (`K_ITERS` in the kernel; swept by the model check).
    KIters,
}

/// Which slot and lap of a barrier family an operation uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Index {
    /// A fixed use index (slot `i % slots`, lap `i / slots`).
    Fixed(u32),
    /// The enclosing loop's iteration variable.
    Iter(LoopKind),
}

/// A barrier slot: family and use index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BarRef {
    /// The family.
    pub bar: BarrierId,
    /// The use.
    pub index: Index,
}

/// Which threads of a role execute an arrival.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThreadSet {
    /// Lane 0 of a single-warp role (`if (lane == 0)`): one arrival.
    Lane0,
    /// The one thread that runs the role's elected code (the loader's elected lane, the
    /// launcher's MMA issuer): one arrival.
    Elected,
    /// Every thread of the role (the consumer warpgroup: 128 arrivals).
    All,
    /// The role's first `n` threads (`threads n after B`: after the named barrier over all of
    /// them, a subset arrives for the role).
    First(u32),
}

impl ThreadSet {
    /// How many of the threads of warp `warp` of a role of `threads` threads arrive.
    pub fn in_warp(self, warp: u32, threads: u32) -> u32 {
        let n = match self {
            ThreadSet::Lane0 | ThreadSet::Elected => 1,
            ThreadSet::All => threads,
            ThreadSet::First(n) => n,
        };
        n.saturating_sub(32 * warp).min(32)
    }
}

/// Where an operation comes from, for the model check's diagnostics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Site {
    /// What the operation is (`waits the full barrier`, `drains the empty barrier`, …).
    pub what: &'static str,
    /// The declaration that implies it.
    pub span: Span,
}

/// The L2 cache policy of a TMA load: the tensor's (`l2 …` of its `tma(...)`, evict_normal when
/// unsaid), or the lever's when its define is on (I-H7: levers default off).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct L2Policy {
    /// The policy with every lever off.
    pub default: crate::ir::L2Hint,
    /// `(define, policy)` of a lever that changes it.
    pub lever: Option<(String, crate::ir::L2Hint)>,
}

/// What a TMA-loaded tensor is to the linear engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operand {
    /// The weights `[N, K]`: box at (0, tile * BLOCK_M, k).
    Weights,
    /// The activations `[m_real, K]`: box at (0, 0, k).
    Activations,
    /// Not an operand of the engine (a protocol-only program).
    Other,
}

/// The MMA instruction a stage issues on a target (decided in [`super::target::mma`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MmaKind {
    /// `tcgen05.mma.cta_group::1.kind::f16`: bf16 x bf16 into an f32 TMEM accumulator.
    Tcgen05F16,
    /// `tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale`: e4m3 x e4m3 with UE8M0 scale
    /// factors in TMEM (four scale ids per 128-element K block).
    Tcgen05Mxf8f6f4BlockScale,
    /// `wgmma.mma_async … .f32.bf16.bf16`: into registers of the consumer warpgroup.
    WgmmaBf16,
    /// `wgmma.mma_async … .f32.e4m3.e4m3`: into registers; block scales applied in f32.
    WgmmaE4m3,
}

/// The MMAs of one stage, as issued: `count` instructions of shape m`m` n`n` k`k` (elements).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MmaShape {
    /// The instruction.
    pub kind: MmaKind,
    /// Rows per instruction (weight rows under swap-AB): 128 for tcgen05, 64 for wgmma.
    pub m: i64,
    /// Columns per instruction (tokens).
    pub n: i64,
    /// K elements per instruction.
    pub k: i64,
    /// Instructions per stage: (tile M / m) x (tile K / k).
    pub count: i64,
}

impl MmaShape {
    /// The PTX instruction with its shape, as the kernel writes it
    /// (`tcgen05.mma.cta_group::1.kind::f16` has its shape in the instruction descriptor).
    pub fn ptx(&self) -> String {
        match self.kind {
            MmaKind::Tcgen05F16 => "tcgen05.mma.cta_group::1.kind::f16".into(),
            MmaKind::Tcgen05Mxf8f6f4BlockScale => {
                "tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale".into()
            }
            MmaKind::WgmmaBf16 => format!(
                "wgmma.mma_async.sync.aligned.m{}n{}k{}.f32.bf16.bf16",
                self.m, self.n, self.k
            ),
            MmaKind::WgmmaE4m3 => format!(
                "wgmma.mma_async.sync.aligned.m{}n{}k{}.f32.e4m3.e4m3",
                self.m, self.n, self.k
            ),
        }
    }

    /// Whether the instruction takes block scale factors.
    pub fn block_scaled(&self) -> bool {
        matches!(self.kind, MmaKind::Tcgen05Mxf8f6f4BlockScale)
    }
}

/// One coordinate of a TMA box origin, innermost first (the tensor map's dimension order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coord {
    /// 0.
    Zero,
    /// The task's first weight row: `tile * BLOCK_M`.
    TileRow,
    /// The stage's K chunk: `(k_first + it) * K_CHUNKS`, `k_first` the split's first K block.
    KChunk,
    /// A routed task's first weight row: `expert * N + tile * BLOCK_M` (the tensor map is over
    /// `[experts * N, K]`; `expert` is the stage's, read by [`Step::RouteRead`]).
    ExpertRow,
    /// A routed task's weight K chunk within its expert: `(it % SLOT_K_ITERS) * K_CHUNKS`.
    SlotKChunk,
}

impl Coord {
    /// The coordinate as the kernel writes it.
    pub fn c_expr(self) -> &'static str {
        match self {
            Coord::Zero => "0",
            Coord::TileRow => "tile * BLOCK_M",
            Coord::KChunk => "k_chunk",
            Coord::ExpertRow => "expert * N + tile * BLOCK_M",
            Coord::SlotKChunk => "(it % SLOT_K_ITERS) * K_CHUNKS",
        }
    }
}

/// The work of the linear engine that is not synchronisation (the model check skips it; the
/// target's renderer writes it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// sm_100a launcher: allocate the task's TMEM columns into the address slot of region group
    /// `scratch`, then publish it to the warp (`tcgen05.alloc`, I-T1).
    TmemAlloc {
        /// The region group holding the TMEM address.
        scratch: usize,
    },
    /// sm_100a launcher: `tcgen05.dealloc` after the consumers are done (I-T1).
    TmemDealloc,
    /// The stage's MMAs: sm_100a `tcgen05.mma` (with the stage's scale factors copied to TMEM
    /// for block-scaled fp8) issued by the elected launcher lane; sm_90a `wgmma` by the consumer
    /// warpgroup, waited, with the fp8 block scales applied in f32.
    StageMma {
        /// The weight ring's declaration (the stage's SMEM read, for the model check).
        span: Span,
        /// The weight ring's region group (MMA A under swap-AB).
        w: usize,
        /// The activation ring's region group (MMA B).
        a: usize,
        /// The scale-factor ring's region group (block-scaled fp8).
        sf: Option<usize>,
        /// The MMAs issued (`None` in the protocol-only program of a contract that does not
        /// lower: there the step stands only for the stage's SMEM read).
        mma: Option<MmaShape>,
    },
    /// sm_100a consumer: load the warp's 32 TMEM lanes of the accumulator slot (`tcgen05.ld`),
    /// the TMEM address read from region group `scratch`.
    AccLoad {
        /// The region group holding the TMEM address.
        scratch: usize,
        /// The accumulator channel (what the model check names for a read of freed TMEM).
        span: Span,
    },
    /// The consumer's loads of the epilogue's global inputs (the `residual add` operand, one
    /// element per accumulator element of the thread) into registers, placed before the tile's
    /// accumulator is waited so that their latency overlaps the K loop
    /// (`LinearMath::preloads_residual`). Reads only global memory another task wrote, after the
    /// runtime's dependency prefix.
    EpilogueLoads {
        /// The `epilogue` item.
        span: Span,
    },
    /// The consumer's epilogue over its accumulator fragment (`store bf16`, `residual add`,
    /// `split_k f32`, `quant e4m3`); `quant e4m3` meets the warps' maxima in region group
    /// `scratch`.
    Epilogue {
        /// The scratch region group.
        scratch: usize,
        /// Whether it reads SMEM (`quant e4m3`'s maxima in the scratch region).
        smem: bool,
        /// The `epilogue` item.
        span: Span,
    },
    /// The loader's page acquire (page mode 1 with `auto_loader_page_lifecycle = false`, contract
    /// doc §1.5, §3.3): lanes 0..13 wait page = lane with the task's parity for each page the task
    /// uses, and the warp reconverges. It follows the loader's re-inits, which need no page; the
    /// elected lane's loads follow it ([`Step::PagesFence`] first; a consumer-only loader's
    /// `pages_ready` hand-off and ring copies), and [`Step::PageFreeUnused`] ends the loader: the
    /// used pages first, so that where MPK's planner gave this task pages the task before it does
    /// not use (I-S12), its loads run while that task computes.
    PageAcquire,
    /// The elected loader lane's async-proxy fence after the page acquire and before its first
    /// TMA write of the pages (PTX ISA §8.6 "Proxies": earlier tasks may have written them with
    /// generic stores).
    PagesFence,
    /// The loader's last step, after its loads were issued: lanes 0..13 wait page = lane with the
    /// task's parity for each page the task does not use and free it at once (I-P1, I-P2, I-P3).
    /// With [`Step::PageAcquire`] the loader waits every page of every task (the pages' dense
    /// observer, I-P5).
    PageFreeUnused,
    /// The launcher's lane-parallel release of each page the task uses, once (I-P1, I-P3).
    PageRelease,
    /// sm_90a consumer, after its K loop: once all 128 consumer threads waited their last wgmma
    /// (an [`Op::NamedSync`] on the runtime's page barrier 8 before it, contract doc §3.4),
    /// warp 0's lanes release
    /// each page the task uses, once (I-P1, I-P3), before an epilogue that reads only registers
    /// and global memory: the next task's loader prefix, which waits every page, then runs during
    /// this epilogue instead of after it and the launcher's hop. Replaces the launcher's
    /// [`Step::PageRelease`] where placed.
    ConsumerPageRelease,
    /// The loader's wait on the task's dependency (`SEM_DEP_READY`) before its first load of
    /// data another task wrote, on the first K iteration only (I-M9).
    DepWait,
    /// `__syncwarp()`: reconverge before lane-parallel work (I-P4).
    SyncWarp,
    /// A routed loader (`route W by ids …`) reads the stage's expert from the ids after the
    /// dependency wait (another task wrote them): every slot's at the first K iteration, L2
    /// loads (`ld.global.cg`); the weight loads and scales of the stage use it.
    RouteRead,
    /// A consumer-only family's body (a template or inline CUDA) on the consumer warpgroup, with
    /// the runtime's page prefix and suffix around it (page mode 1, contract doc §4), after the
    /// `pages_ready` hand-off where the task uses pages.
    Body,
}

/// One operation of a role.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// Re-init at task start of the barrier ordinals this role owns on this target, then the
    /// init fence (I-M4, I-M5).
    Reinit {
        /// Ordinals, ascending.
        ordinals: Vec<usize>,
    },
    /// `mbarrier.try_wait.parity` until it passes. The cursor starts at phase `start` (1 for a
    /// producer waiting an empty barrier, 0 for a waiter of a full one); its parity at use `i` of
    /// a family of `slots` is `start ^ ((i / slots) & 1)`.
    Wait {
        /// The slot.
        bar: BarRef,
        /// The cursor's starting phase parity.
        start: u8,
        /// For diagnostics.
        site: Site,
    },
    /// Thread arrivals: `threads` of them, from `by` (the model's weight is `threads`, what the
    /// kernel executes, never the contract's count).
    Arrive {
        /// The slot.
        bar: BarRef,
        /// Who arrives.
        by: ThreadSet,
        /// How many threads that is.
        threads: u32,
    },
    /// A TMA load of one box of `tensor` into the ring stage of `group`, completing on `bar`
    /// with `bytes` of expect_tx: one asynchronous arrival (I-M6).
    TmaLoad {
        /// The tensor.
        tensor: Handle<TensorIr>,
        /// What it is to the MMA (its box coordinates and constants follow).
        operand: Operand,
        /// The full barrier slot.
        bar: BarRef,
        /// The region group of the ring (stage `it % stages`).
        group: usize,
        /// Bytes of the box (its expect_tx).
        bytes: i64,
        /// The box extents in elements, innermost first (the tensor's `tma(box …)`).
        box_dims: Vec<i64>,
        /// The box origin, innermost first (empty for an [`Operand::Other`] load of a
        /// protocol-only program).
        coords: Vec<Coord>,
        /// Its L2 cache policy.
        l2: L2Policy,
    },
    /// The loader writes a stage's UE8M0 scale factors with generic stores into `group`, fences
    /// the proxies and arrives `bar` (one thread arrival).
    StageScales {
        /// The full barrier slot.
        bar: BarRef,
        /// The SF ring's region group.
        group: usize,
    },
    /// `tcgen05.commit` on `bar`: one asynchronous arrival when the issued MMAs complete.
    Commit {
        /// The slot.
        bar: BarRef,
    },
    /// Work that is not synchronisation.
    Step(Step),
    /// `bar.sync id, threads`: the named barrier a subset's arrival follows (`after`).
    NamedSync {
        /// The barrier id (1-7, 9-15 declared by the contract; 8, the runtime's page barrier,
        /// only before [`Step::ConsumerPageRelease`]).
        id: u8,
        /// Threads it gathers.
        threads: u32,
        /// The barrier's declaration.
        span: Span,
    },
    /// A loop over `kind`.
    Loop {
        /// What it iterates.
        kind: LoopKind,
        /// Its body.
        body: Vec<Op>,
    },
    /// Code one elected lane runs (the sm_100a launcher's MMA issue).
    Elect {
        /// Its body.
        body: Vec<Op>,
    },
    /// `early_exit ROLE arrives EDGE` (model only: the linear lowering rejects it, its K loop
    /// never runs zero trips).
    EarlyExit {
        /// The slot arrived when the task has zero trips.
        bar: BarRef,
        /// Arrivals.
        weight: i64,
        /// Whether they are asynchronous.
        is_async: bool,
        /// The clause.
        span: Span,
    },
    /// `drain` (model only; I-M8 forbids it): the producer waits every stage's empty barrier
    /// for the lap it believes each reached.
    Drain {
        /// The empty barrier family.
        bar: BarrierId,
        /// The clause.
        span: Span,
    },
}

/// One role's program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Role {
    /// The role.
    pub kind: RoleKind,
    /// Its threads (32 per warp of its binding, I-R1).
    pub threads: u32,
    /// Its operations in program order.
    pub ops: Vec<Op>,
}

/// What one task instance does on one target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoleProgram {
    /// The target.
    pub target: Target,
    /// Every mbarrier family, in ordinal order.
    pub barriers: Vec<Barrier>,
    /// Consumer, loader, launcher, storer.
    pub roles: Vec<Role>,
    /// The smallest K trip count the kernel runs (the linear lowering's `K_ITERS >= 1`; 0 where
    /// a contract is only model-checked), for the model check's sweep.
    pub min_trips: u64,
    /// Tiles per task (one for a pipeline, I-P6).
    pub tiles: u32,
    /// The linear engine's binding (tensors by role, tile, stages, splits, epilogue) where its
    /// work ([`Step`]s, TMA loads) is in the program; `None` for a consumer-only family and for
    /// the protocol-only program of a contract the linear lowering rejected.
    pub compute: Option<super::LinearMath>,
}

/// Every operation of `ops` in program order, the bodies of loops and elected blocks included
/// after the operation that holds them (depth first).
pub fn flatten(ops: &[Op]) -> Vec<&Op> {
    fn go<'a>(ops: &'a [Op], out: &mut Vec<&'a Op>) {
        for o in ops {
            out.push(o);
            if let Op::Loop { body, .. } | Op::Elect { body } = o {
                go(body, out);
            }
        }
    }
    let mut out = Vec::new();
    go(ops, &mut out);
    out
}

impl Barrier {
    /// The name of ordinal `slot` of the family, as the ordinal table writes it: `w_ring.full[3]`
    /// (a channel edge, `acc.full[0]` of a one-slot channel too), or the label alone for a
    /// one-shot (`tmem_ready`).
    pub fn slot_name(&self, slot: u32) -> String {
        match self.source {
            BarrierSource::Sem(_) | BarrierSource::PagesReady => self.label.clone(),
            BarrierSource::Full(_) | BarrierSource::Empty(_) => format!("{}[{slot}]", self.label),
        }
    }

    /// The init count of slot `slot`.
    pub fn count(&self, slot: u32) -> i64 {
        self.counts
            .get(slot as usize)
            .or(self.counts.first())
            .copied()
            .unwrap_or(1)
    }
}

impl RoleProgram {
    /// Whether the linear engine's work is in the program (`compute` is bound).
    pub fn lowered(&self) -> bool {
        self.compute.is_some()
    }

    /// The barrier family `id`.
    pub fn barrier(&self, id: BarrierId) -> &Barrier {
        &self.barriers[usize::from(id.0)]
    }

    /// The role whose program releases the task's used pages in the body
    /// ([`Step::PageRelease`] or [`Step::ConsumerPageRelease`]); `None` where the runtime's
    /// suffix does, or the program is not lowered.
    pub fn page_releaser(&self) -> Option<RoleKind> {
        self.roles
            .iter()
            .find(|r| {
                flatten(&r.ops).iter().any(|o| {
                    matches!(
                        o,
                        Op::Step(Step::PageRelease) | Op::Step(Step::ConsumerPageRelease)
                    )
                })
            })
            .map(|r| r.kind)
    }

    /// The program of `kind`, if the task has that role.
    pub fn role(&self, kind: RoleKind) -> Option<&Role> {
        self.roles.iter().find(|r| r.kind == kind)
    }

    /// The MMAs a stage issues: the shape of the program's `StageMma` step (`None` for a program
    /// without the linear engine).
    pub fn stage_mma(&self) -> Option<MmaShape> {
        self.roles
            .iter()
            .flat_map(|r| flatten(&r.ops))
            .find_map(|o| match o {
                Op::Step(Step::StageMma { mma, .. }) => *mma,
                _ => None,
            })
    }

    /// Number of op-private ordinals (I-M1).
    pub fn ordinal_count(&self) -> usize {
        self.barriers.iter().map(|b| b.slots as usize).sum()
    }

    /// The ordinals of the table in order, as (family, slot).
    pub fn ordinals(&self) -> impl Iterator<Item = (usize, &Barrier, u32)> + '_ {
        self.barriers
            .iter()
            .flat_map(|b| (0..b.slots).map(move |s| (b.first + s as usize, b, s)))
    }
}
