//! Roles and synchronisation in the IR: warp roles, arrivals, channels (rings of full/empty
//! mbarriers), one-shot semaphores and named barriers (contract doc §2.4, §3.1, §3.4).

use super::types::*;
use super::Handle;
use crate::span::Span;
use std::fmt;

/// Warp roles of Runtime-V2 (contract doc §3.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RoleKind {
    /// W0-3, the consumer warpgroup (upstream: compute).
    Consumer,
    /// W4, TMA issue.
    Loader,
    /// W5, MMA issue (upstream: mma).
    Launcher,
    /// W6.
    Storer,
    /// W7, runtime-owned (upstream: dispatcher).
    Controller,
}

impl RoleKind {
    /// Parses a role name, accepting the upstream aliases (compute, mma, dispatcher).
    pub fn parse(s: &str) -> Option<RoleKind> {
        Some(match s {
            "consumer" | "compute" => RoleKind::Consumer,
            "loader" => RoleKind::Loader,
            "launcher" | "mma" => RoleKind::Launcher,
            "storer" => RoleKind::Storer,
            "controller" | "dispatcher" => RoleKind::Controller,
            _ => return None,
        })
    }

    /// The house name.
    pub fn as_str(self) -> &'static str {
        match self {
            RoleKind::Consumer => "consumer",
            RoleKind::Loader => "loader",
            RoleKind::Launcher => "launcher",
            RoleKind::Storer => "storer",
            RoleKind::Controller => "controller",
        }
    }

    /// The runtime's warps for this role: (first, last) inclusive (contract doc §3.1).
    pub fn runtime_warps(self) -> (u32, u32) {
        match self {
            RoleKind::Consumer => (0, 3),
            RoleKind::Loader => (4, 4),
            RoleKind::Launcher => (5, 5),
            RoleKind::Storer => (6, 6),
            RoleKind::Controller => (7, 7),
        }
    }

    /// Every role.
    pub const ALL: [RoleKind; 5] = [
        RoleKind::Consumer,
        RoleKind::Loader,
        RoleKind::Launcher,
        RoleKind::Storer,
        RoleKind::Controller,
    ];
}

impl fmt::Display for RoleKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A role bound to warps.
#[derive(Clone, Debug)]
pub struct RoleIr {
    /// Which role.
    pub kind: RoleKind,
    /// First warp.
    pub first_warp: u32,
    /// Last warp (inclusive).
    pub last_warp: u32,
    /// The binding (the task name when defaulted).
    pub span: Span,
}

impl RoleIr {
    /// Threads in the role: 32 per warp.
    pub fn threads(&self) -> i64 {
        (i64::from(self.last_warp) - i64::from(self.first_warp) + 1) * 32
    }
}

/// How an mbarrier is arrived.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArrivalIr {
    /// TMA byte delivery (`complete_tx`) of the named tensors' boxes; one `arrive.expect_tx`.
    Tma(Vec<Handle<TensorIr>>),
    /// TMA bulk copies (`cp.async.bulk`, no tensor map, `complete_tx`) of the named tensors'
    /// bytes, issued by a consumer family's loader body; one `arrive.expect_tx` per use.
    Bulk(Vec<Handle<TensorIr>>),
    /// `tcgen05.commit` (one arrival).
    Commit,
    /// This many threads arrive.
    Threads(i64),
}

impl ArrivalIr {
    /// The mbarrier init count this arrival kind needs (I-M2).
    pub fn init_count(&self) -> i64 {
        match self {
            ArrivalIr::Tma(_) | ArrivalIr::Bulk(_) | ArrivalIr::Commit => 1,
            ArrivalIr::Threads(n) => *n,
        }
    }

    /// True for arrivals delivered asynchronously (TMA, commit), which need a role re-init (I-M4).
    pub fn is_async(&self) -> bool {
        matches!(
            self,
            ArrivalIr::Tma(_) | ArrivalIr::Bulk(_) | ArrivalIr::Commit
        )
    }

    /// Short name for tables.
    pub fn kind_str(&self) -> &'static str {
        match self {
            ArrivalIr::Tma(_) => "TMA complete_tx",
            ArrivalIr::Bulk(_) => "TMA bulk complete_tx",
            ArrivalIr::Commit => "tcgen05.commit",
            ArrivalIr::Threads(_) => "thread arrive",
        }
    }
}

/// Where a channel's data lives.
#[derive(Clone, Debug)]
pub enum ChannelStorageIr {
    /// A staged region group (index into `region_groups`).
    Region(usize),
    /// TMEM accumulator slots.
    Tmem,
}

/// The empty edge of a channel.
#[derive(Clone, Debug)]
pub enum EmptyEdge {
    /// The channel has its own empty barriers, arrived by `role`.
    Own {
        /// Arriving role.
        role: RoleKind,
        /// Arrival kind.
        arrival: ArrivalIr,
        /// Clause span.
        span: Span,
        /// `threads N after B`: the named barrier the arriving subset waits first, and its span.
        after: Option<(Handle<BarrierIr>, Span)>,
    },
    /// Shares the empty barriers of another channel.
    Shared(Handle<ChannelIr>, Span),
    /// No empty edge (a one-directional ring).
    None,
}

/// A producer → consumer ring of `depth` slots: `depth` full mbarriers plus `depth` empty ones
/// unless the empty edge is shared (contract doc §2.4, I-M3).
#[derive(Clone, Debug)]
pub struct ChannelIr {
    /// Name.
    pub name: String,
    /// Storage.
    pub storage: ChannelStorageIr,
    /// Slots.
    pub depth: u32,
    /// Arrives the full barriers.
    pub producer: RoleKind,
    /// Waits the full barriers.
    pub consumer: RoleKind,
    /// How the full barriers are arrived.
    pub full_arrival: ArrivalIr,
    /// Empty edge.
    pub empty: EmptyEdge,
    /// Role that re-initialises this channel's barriers at task start (I-M4).
    pub reinit: RoleKind,
    /// The producer drains every stage's empty barrier at task end (I-M8).
    pub drain: Option<Span>,
    /// With zero trips, this role still arrives the full (false) or empty (true) edge once.
    pub early_exit: Option<(RoleKind, bool, Span)>,
    /// Declaration.
    pub span: Span,
}

impl ChannelIr {
    /// The region group of a ring's stages; 0 for a TMEM channel, whose stages are no region
    /// (the linear lowering binds only region rings where a group is read: `lower::linear::bind`).
    pub fn region_group(&self) -> usize {
        match self.storage {
            ChannelStorageIr::Region(g) => g,
            ChannelStorageIr::Tmem => 0,
        }
    }
}

/// A one-shot mbarrier (re-initialised every publish, always waited at parity 0).
#[derive(Clone, Debug)]
pub struct SemIr {
    /// Name.
    pub name: String,
    /// Arriving role.
    pub producer: RoleKind,
    /// Waiting role.
    pub consumer: RoleKind,
    /// Arrival kind.
    pub arrival: ArrivalIr,
    /// Init count (arrivals per phase).
    pub count: i64,
    /// Role that re-initialises it at task start, or none (the tmem_ready class, I-M4).
    pub reinit: Option<RoleKind>,
    /// Arrived and waited at task end (`at end`) instead of at task start.
    pub at_end: bool,
    /// `threads N after B`: the named barrier the arriving subset waits first, and its span.
    pub after: Option<(Handle<BarrierIr>, Span)>,
    /// Declaration.
    pub span: Span,
}

/// A named hardware barrier (`bar.sync id, threads`).
#[derive(Clone, Debug)]
pub struct BarrierIr {
    /// Name.
    pub name: String,
    /// Barrier id (1-15; 0 and 8 are the runtime's).
    pub id: i64,
    /// Participating threads.
    pub threads: i64,
    /// Role whose warps use it.
    pub by: RoleKind,
    /// Declaration.
    pub span: Span,
    /// The id expression.
    pub id_span: Span,
    /// The threads expression.
    pub threads_span: Span,
}
