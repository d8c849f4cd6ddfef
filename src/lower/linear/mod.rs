//! The linear engine of the pipeline family (contract doc §3.2, §7): the house linear
//! y[m_real, N] = x[m_real, K] W[N, K]^T under swap-AB, bf16 or block-scaled fp8, with its
//! epilogue. [`bind`] binds a contract's tensors (by their declared roles), rings, accumulator
//! channel and sems to it, or reports (E0013) why the contract does not lower; the result,
//! [`LinearMath`], is carried by the role program as its `compute`.

mod bind;
mod fp8;
mod map;
mod route;
mod split_sum;

pub(crate) use bind::bind;

use crate::ir::*;

/// The epilogue a pipeline kernel runs on each accumulator tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Epilogue {
    /// `store bf16`: C = bf16(acc).
    StoreBf16,
    /// `residual add`: C = bf16(bf16(acc) + R), the bf16 round trip before the add (§3.2).
    ResidualAdd,
    /// `split_k f32`: f32 partials per split, summed by the generated reduce task.
    SplitKF32,
    /// `split_k bf16`: f32 partials per split; the last split of each tile to finish (an
    /// arrival counter per tile) sums them in split order and stores the bf16 output, in the
    /// same task: no reduce task, no event hop ([`SplitSum`]).
    SplitKBf16,
    /// `split_k atomic`: every split adds its f32 sums into one f32 accumulator per output
    /// element (`red.global.add`, performed in L2, in parallel across splits); the last split of
    /// each tile to arrive (the same counters as `split_k bf16`) stores the bf16 output and
    /// zeroes the accumulator for the next run. Not bit-reproducible: the f32 additions happen
    /// in arrival order ([`SplitSum`]).
    SplitKAtomic,
    /// `quant e4m3`: e4m3 output with one power-of-two f32 scale per token per 128-column group
    /// (the tile), as the next fp8 GEMM's 1x128 activation scales.
    QuantE4m3,
}

impl Epilogue {
    /// The epilogues that take a tail tile (N not a multiple of tile M) with bf16 operands: each
    /// store is guarded by `row < N` and the sums cover N columns; `quant e4m3`'s output groups,
    /// like the fp8 weight blocks, index whole 128-row tiles (E0601).
    pub const TAKE_A_TAIL: [Epilogue; 5] = [
        Epilogue::StoreBf16,
        Epilogue::ResidualAdd,
        Epilogue::SplitKF32,
        Epilogue::SplitKBf16,
        Epilogue::SplitKAtomic,
    ];

    /// The epilogue as written in a contract.
    pub fn as_str(self) -> &'static str {
        match self {
            Epilogue::StoreBf16 => "store bf16",
            Epilogue::ResidualAdd => "residual add",
            Epilogue::SplitKF32 => "split_k f32",
            Epilogue::SplitKBf16 => "split_k bf16",
            Epilogue::SplitKAtomic => "split_k atomic",
            Epilogue::QuantE4m3 => "quant e4m3",
        }
    }
}

/// The operands of the MMA.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Operands {
    /// bf16 x bf16 into f32: `tcgen05.mma.kind::f16`.
    Bf16,
    /// e4m3 x e4m3 into f32 with UE8M0 block scales: `kind::mxf8f6f4.block_scale`. The loader
    /// turns the f32 power-of-two scales (one per 128x128 weight block, one per 1x128 activation
    /// group) into UE8M0 bytes in the scale ring; the launcher copies each stage's bytes to TMEM.
    Fp8BlockScale {
        /// f32 `[N / 128, K / 128]` weight block scales.
        w_scale: TensorHandle,
        /// f32 `[m_real, K / 128]` activation group scales.
        a_scale: TensorHandle,
        /// The scale-factor ring (`loader -> launcher (threads 1)`, sharing the W ring's empty).
        sf_ring: Handle<ChannelIr>,
    },
}

/// The linear engine's binding of a pipeline contract: its tensors by role, rings, accumulator
/// channel, one-shot sems, and every number the kernels, the layout header, the harness and
/// verify's reference need (elements unless stated). It is the `compute` of each target's
/// [`RoleProgram`](crate::lower::RoleProgram); nothing after the lowering derives it again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinearMath {
    /// bf16 or block-scaled fp8.
    pub operands: Operands,
    /// Bytes per operand element (2 for bf16, 1 for e4m3).
    pub elem_bytes: i64,
    /// Weights `[N, K]` (MMA A operand under swap-AB: 128 rows per tile).
    pub weights: TensorHandle,
    /// Activations `[m_real, K]` (MMA B operand: up to tile N tokens, E0601).
    pub acts: TensorHandle,
    /// Output: `[m_real, N]` bf16, or `[splits, m_real, N]` f32 partials.
    pub output: TensorHandle,
    /// Residual input `[m_real, N]` for `residual add`.
    pub residual: Option<TensorHandle>,
    /// Output scales `[m_real, N / 128]` for `quant e4m3`, and the consumer barrier id.
    pub out_scale: Option<(TensorHandle, i64)>,
    /// The in-task reduction of `split_k bf16`.
    pub split_sum: Option<SplitSum>,
    /// Ring of weight stages.
    pub w_ring: Handle<ChannelIr>,
    /// Ring of activation stages.
    pub a_ring: Handle<ChannelIr>,
    /// TMEM accumulator channel.
    pub acc: Handle<ChannelIr>,
    /// Launcher → consumer one-shot: the TMEM address is published.
    pub tmem_ready: Handle<SemIr>,
    /// Consumer → launcher one-shot: the consumers are done with TMEM.
    pub consumer_done: Handle<SemIr>,
    /// Region group holding the TMEM address.
    pub scratch: usize,
    /// Tile rows (MMA-M, weight rows).
    pub block_m: i64,
    /// Tile columns (MMA-N, tokens).
    pub block_n: i64,
    /// Tile depth per stage (elements of K).
    pub block_k: i64,
    /// MMA K per instruction.
    pub mma_k: i64,
    /// Stages of the rings.
    pub stages: i64,
    /// Output columns (weight rows).
    pub n: i64,
    /// Reduction length.
    pub k: i64,
    /// Tokens.
    pub m_real: i64,
    /// K splits (1 unless `split_k`).
    pub splits: i64,
    /// K blocks of tile K along the activations' K (`K_BLOCKS`; a routed task's whole K over
    /// its slots).
    pub k_blocks: i64,
    /// The most K iterations a task runs (`K_ITERS`): `ceil(k_blocks / splits)`. Split `s`
    /// takes `k_blocks / splits` K blocks, one more for the first `k_blocks % splits` splits,
    /// from block `s * (k_blocks / splits) + min(s, k_blocks % splits)`; every split has at
    /// least one (`splits <= k_blocks`, E0013).
    pub k_iters: i64,
    /// Tiles along N.
    pub num_tiles: i64,
    /// Accumulator slots in TMEM.
    pub acc_slots: i64,
    /// Allocated TMEM columns.
    pub tmem_cols: i64,
    /// The epilogue.
    pub epilogue: Epilogue,
    /// Whether the contract's inline body is the epilogue's per-element map (`body cuda` in a
    /// pipeline: f32 accumulator of output element (token `n`, column `row`) in, the f32 value the
    /// epilogue rounds and stores out; docs/language.md, "Epilogue map").
    pub map: bool,
    /// The run-time expert routing of the weights (`route W by ids …`), if any.
    pub route: Option<RouteMath>,
}

/// The K blocks of split `s` of `splits` over `k_blocks` K blocks, as `(first, count)`: each
/// split runs `k_blocks / splits` blocks, one more for the first `k_blocks % splits` splits, in
/// order (the generated `task_k_first` / `task_k_iters`, back::pipeline). Split 0 is a longest.
/// `splits` is at least 1 and at most `k_blocks` where the lowering accepts it (E0013).
pub fn split_blocks(k_blocks: i64, splits: i64, s: i64) -> (i64, i64) {
    let splits = splits.max(1);
    let (q, r) = (k_blocks / splits, k_blocks % splits);
    (s * q + s.min(r), q + i64::from(s < r))
}

impl LinearMath {
    /// The K blocks of split `s` of this linear: [`split_blocks`].
    pub fn split_blocks(&self, s: i64) -> (i64, i64) {
        split_blocks(self.k_blocks, self.splits, s)
    }

    /// Whether the consumer loads the epilogue's global inputs (the `residual add` operand)
    /// into registers before it waits the accumulator, so that their round trip overlaps the K
    /// loop instead of following it ([`crate::lower::Step::EpilogueLoads`]). Unrouted `residual
    /// add` only: a routed epilogue's rows depend on the route's ids.
    pub fn preloads_residual(&self) -> bool {
        self.epilogue == Epilogue::ResidualAdd && self.route.is_none()
    }
}

/// The named barrier id of the epilogue's `with B` when `B` is a barrier of the 128 consumer
/// threads, the one an epilogue that meets its warps needs (`quant e4m3`, `split_k bf16`).
fn epilogue_barrier(ir: &TaskIr) -> Option<i64> {
    ir.epilogue_with
        .map(|(h, _)| &ir.barriers[h])
        .filter(|b| b.by == RoleKind::Consumer && b.threads == 128)
        .map(|b| b.id)
}

/// The in-task split-K reduction of `epilogue split_k bf16 with B` and `split_k atomic with B`:
/// each split stores its f32 partials (`bf16`) or adds them into the f32 accumulator
/// (`atomic`), then the tile's 128 consumer threads meet at named barrier `B`, thread 0 adds one
/// to the tile's counter, and the split that brings it to `splits` (the last to finish,
/// whichever it is) sums the `splits` partials of the tile in split order (0, 1, …: the same
/// bits whichever split is last) or reads the accumulated sums (zeroing them), stores the bf16
/// output and resets the counter to zero for the next run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SplitSum {
    /// f32 `[splits, m_real, N]` partials (`out partials`), the workspace of the ordered sum;
    /// for `split_k atomic` the f32 `[m_real, N]` accumulator, zero between runs.
    pub partials: TensorHandle,
    /// int32 `[ceil(N / tile M)]` arrival counters (`out counters`), zero between runs.
    pub counters: TensorHandle,
    /// The named barrier id of `with B` (the 128 consumer threads).
    pub barrier: i64,
}

/// A routed pipeline's binding (`route W by ids per slot | sum slots`, docs/language.md "Routed
/// experts"): the weights are `[experts, N, K]`, their tensor map is over `[experts * N, K]`,
/// and the loader reads each stage's expert from `ids` after the dependency wait, then loads the
/// weight box at row `expert * N + tile * BLOCK_M` (an id outside `0..experts` loads rows past
/// the map: TMA zero fill, so the slot adds nothing). The MMA still covers every token column
/// of the activation box; the epilogue stores the task's token column only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RouteMath {
    /// The int32 ids `[m_real, slots]`.
    pub ids: TensorHandle,
    /// How the slots are spent.
    pub mode: RouteMode,
    /// Slots per token (`ids` columns).
    pub slots: i64,
    /// Experts (the weights' outermost extent).
    pub experts: i64,
    /// K iterations per slot: `K / BLOCK_K` (the weights' K).
    pub slot_k_iters: i64,
    /// Columns of the activations: `K` (`per slot`) or `slots * K` (`sum slots`).
    pub act_k: i64,
    /// The `route` item.
    pub span: crate::span::Span,
}

impl RouteMath {
    /// Tasks per tile: one per (token, slot) or per token.
    pub fn routes(&self, m_real: i64) -> i64 {
        match self.mode {
            RouteMode::PerSlot => m_real * self.slots,
            RouteMode::SumSlots => m_real,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::split_blocks;

    /// The splits cover the K blocks in order, without gap or overlap, their counts differ by at
    /// most one and split 0 is a longest (K_ITERS): fp8 dense gate+up's 56 blocks in 3 splits
    /// are 19, 19 and 18.
    #[test]
    fn splits_tile_the_k_blocks_in_order() {
        assert_eq!(
            (0..3).map(|s| split_blocks(56, 3, s)).collect::<Vec<_>>(),
            [(0, 19), (19, 19), (38, 18)]
        );
        for k_blocks in 1..=64 {
            for splits in 1..=k_blocks {
                let mut next = 0;
                let longest = split_blocks(k_blocks, splits, 0).1;
                for s in 0..splits {
                    let (first, count) = split_blocks(k_blocks, splits, s);
                    assert_eq!(first, next, "{k_blocks} / {splits}, split {s}");
                    assert!(count >= 1 && longest - count <= 1);
                    next = first + count;
                }
                assert_eq!(next, k_blocks);
            }
        }
    }
}
