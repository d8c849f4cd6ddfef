//! `gemv(x, W -> y)`: y[m, n] = Σ_k x[m, k] · W[n, k] in fp32, bf16 out: the consumer GEMV of
//! family B (design.md, "Choosing a family", rule 4), for decode's few tokens where a weight is
//! streamed once and the tensor cores have nothing to reuse.
//!
//! Task t covers the weight rows `[t · kRowsPerTask, (t + 1) · kRowsPerTask)`. Its four consumer
//! warps are `kRowWarps` row warps times `kKGroups` = 4 / kRowWarps K groups: row warp w takes the
//! task's rows w, w + kRowWarps, … (`kWaves` of them, the wave quantum), and the K groups of a
//! row warp split each row's K into equal parts, summed through the `partials` region. kRowWarps
//! (the template's `nwarps`) is the smallest of 1, 2, 4 that does not raise the wave-quant tie
//! `ceil(items / (ntasks · nwarps))` with items = N (design.md rule 4; issue 12, item 4): the
//! warps a smaller count frees split K instead of idling, so a task's bytes are in flight sooner.
//!
//! Every lane reads 16-byte vectors (8 bf16) of its row, 512 contiguous bytes per warp
//! instruction, through the non-coherent path with an L2 evict-first policy (the weights are read
//! once per decode step). A warp's rows go in steps (`kChunkBatch` × `kBatchRows` vectors per
//! lane): steps of up to 16 into two register buffers in turn, one step's loads in flight while
//! the one before computes; a row whose K part is longer in steps of up to 32 into one. `x` is
//! staged in the `x_rows` region (coherent loads) while the first step's weights are in flight.

use super::{int_const, Access, Constant, Formal, RegionNeed, Shapes, Signature};
use crate::diag::Diagnostic;
use crate::ir::exact::ceil_div;
use crate::ir::Dtype;

/// The signature.
pub const SIG: Signature = Signature {
    name: "gemv",
    inputs: &[
        Formal {
            name: "x",
            dtypes: &[Dtype::Bf16],
            rank: 2,
            access: Access::Activation,
        },
        Formal {
            name: "W",
            dtypes: &[Dtype::Bf16],
            rank: 2,
            access: Access::Weight,
        },
    ],
    outputs: &[Formal {
        name: "y",
        dtypes: &[Dtype::Bf16],
        rank: 2,
        access: Access::Activation,
    }],
    scalars: &[],
    needs_barrier: true,
    strided: &[],
    in_place: &[],
    // The accumulators are a register array per token: the token count is a compile-time one.
    token_rows: &[],
    summary: "y = x W^T for few tokens without tensor cores (consumer GEMV), fp32 accumulation",
};

type Bound = Result<(Vec<Constant>, Vec<RegionNeed>, &'static str, &'static str), Vec<Diagnostic>>;

/// Elements of K one warp load instruction covers: 32 lanes × one 16-byte vector (8 bf16).
pub const K_PER_WARP_LOAD: i64 = 32 * 8;

/// 16-byte weight vectors per lane in flight at most (4 registers each): one step's buffer of
/// up to 32, or two of up to 16 taking turns (one computing while the next step's loads are in
/// flight). H200, 2026-12-04, M = 1: two buffers of 16 won where a row's K part is at most 16
/// vectors (q_b 5.54 -> 5.02 us, o_proj 11.33 -> 10.85) and lost where it is 28 (lm_head 63.6
/// -> 75.7, gate+up 19.8 -> 21.6, kv_a 5.89 -> 6.37): one buffer of 28 keeps more in flight.
pub const MAX_VECTORS: i64 = 32;

/// Accumulators per lane at most: one per row of a step and token.
pub const MAX_ACCUMULATORS: i64 = 32;

/// The warp layout of a task: (row warps, K groups), from the wave-quant tie.
///
/// `rows` = N (the items), `tasks` the task count, `k` the reduction length (a multiple of
/// [`K_PER_WARP_LOAD`]). Row-warp counts 1, 2 and 4 are candidates where each K group's share
/// of K is still a whole number of warp loads; the smallest whose `ceil(rows / (tasks ·
/// nwarps))` equals 4's is taken (design.md rule 4).
pub fn warp_layout(rows: i64, tasks: i64, k: i64) -> (i64, i64) {
    let waves = |n: i64| ceil_div(rows, tasks.max(1).saturating_mul(n));
    let best = waves(4);
    [1, 2]
        .into_iter()
        .find(|&n| k % (K_PER_WARP_LOAD * (4 / n)) == 0 && waves(n) == best)
        .map_or((4, 1), |n| (n, 4 / n))
}

/// The work of a task and its warps, derived from the shapes and the task count (every
/// quantity the body's constants give: `kRowsPerTask`, `kRowWarps`, …).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Weight rows per task: ceil(N / tasks).
    pub rows_per_task: i64,
    /// Row warps (nwarps), from [`warp_layout`].
    pub row_warps: i64,
    /// K groups: 4 / row warps.
    pub k_groups: i64,
    /// Rows per row warp: ceil(rows per task / row warps).
    pub waves: i64,
    /// 16-byte vectors per lane per row: K / (256 x K groups).
    pub chunks: i64,
    /// Two step buffers of up to [`MAX_VECTORS`] / 2 vectors taking turns (a row's K part is
    /// that short), else one of up to [`MAX_VECTORS`].
    pub double_buffer: bool,
    /// Vectors per lane of a row in one step.
    pub chunk_batch: i64,
    /// Rows of one step: the waves over the fewest steps within a buffer and
    /// [`MAX_ACCUMULATORS`] accumulators per lane.
    pub batch_rows: i64,
}

impl Layout {
    /// Vectors one step buffer holds at most.
    pub fn per_buffer(&self) -> i64 {
        if self.double_buffer {
            MAX_VECTORS / 2
        } else {
            MAX_VECTORS
        }
    }

    /// Rows a warp's steps span in its task, past the last valid one included: steps x rows per
    /// step x row warps.
    pub fn steps_rows(&self) -> i64 {
        ceil_div(self.waves.max(1), self.batch_rows) * self.batch_rows * self.row_warps
    }
}

/// The layout of `tasks` tasks over `W` [`n`, `k`] for `m` tokens (`k` a positive multiple of
/// [`K_PER_WARP_LOAD`]).
pub fn layout(n: i64, k: i64, m: i64, tasks: i64) -> Layout {
    let tasks = tasks.max(1);
    let rows_per_task = ceil_div(n, tasks);
    let (row_warps, k_groups) = warp_layout(n, tasks, k);
    let waves = ceil_div(rows_per_task, row_warps);
    let chunks = k / (K_PER_WARP_LOAD * k_groups);
    let double_buffer = chunks <= MAX_VECTORS / 2;
    let per_buffer = if double_buffer {
        MAX_VECTORS / 2
    } else {
        MAX_VECTORS
    };
    let chunk_batch = chunks.min(per_buffer);
    // Rows per step: as many as fill a buffer (where a row's K part is shorter than one) and keep
    // the accumulators at 32, spread evenly over the fewest steps.
    let cap = (per_buffer / chunk_batch.max(1))
        .min(MAX_ACCUMULATORS / m.max(1))
        .max(1);
    let batch_rows = ceil_div(waves.max(1), ceil_div(waves.max(1), cap));
    Layout {
        rows_per_task,
        row_warps,
        k_groups,
        waves,
        chunks,
        double_buffer,
        chunk_batch,
        batch_rows,
    }
}

/// Checks `W` is `[N, K]` and `y` is `[m, N]` for `x` `[m, K]`, K a positive multiple of 256;
/// derives the warp layout and the batch sizes.
pub(super) fn bind(s: &Shapes<'_>) -> Bound {
    let (x, w, y) = (s.dims("x"), s.dims("W"), s.dims("y"));
    let (m, k) = (x[0], x[1]);
    let n = w[0];
    let mut errs = Vec::new();
    if w[1] != k {
        errs.push(s.error(
            "W",
            format!(
                "`{}` must have `{}`'s {k} columns (the reduction length), but it is {w:?}",
                s.tensor_name("W"),
                s.tensor_name("x")
            ),
            format!("declare `{}` as [{n}, {k}]", s.tensor_name("W")),
        ));
    }
    if y != [m, n] {
        errs.push(s.error(
            "y",
            format!(
                "`{}` must be [{m}, {n}] (a row per token of `{}`, a column per row of `{}`), but it is {y:?}",
                s.tensor_name("y"),
                s.tensor_name("x"),
                s.tensor_name("W")
            ),
            format!("declare `{}` as [{m}, {n}]", s.tensor_name("y")),
        ));
    }
    if k <= 0 || k % K_PER_WARP_LOAD != 0 {
        errs.push(s.error(
            "x",
            format!("the reduction length {k} is not a positive multiple of {K_PER_WARP_LOAD} (a warp's 32 lanes each load 16 bytes, 8 bf16, of a row)"),
            format!("use a K that is a multiple of {K_PER_WARP_LOAD}, or the pipeline linear (stdlib/linear_bf16_splitk_sum64.mpk), whose tail is a TMA box"),
        ));
    }
    if m > MAX_ACCUMULATORS {
        errs.push(s.error(
            "x",
            format!("`{}` has {m} tokens, but the GEMV keeps one f32 accumulator per token and row in registers: at most {MAX_ACCUMULATORS} tokens", s.tensor_name("x")),
            "at that many tokens the tensor cores pay: use a pipeline linear (stdlib/linear_bf16_splitk_sum64.mpk)".to_string(),
        ));
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    let tasks = s.tasks().max(1);
    let l = layout(n, k, m, tasks);
    // The body indexes rows with 32-bit ints: the last task's first row plus the furthest row
    // index a warp forms (its steps' rows, valid or not).
    let last_row = (tasks - 1)
        .saturating_mul(l.rows_per_task)
        .saturating_add(l.steps_rows());
    if last_row > i64::from(i32::MAX) {
        return Err(vec![s.error(
            "W",
            format!("{tasks} tasks of {} rows of `{}` reach row {last_row}, past the 32-bit row index the body uses", l.rows_per_task, s.tensor_name("W")),
            "split the weight over fewer rows (a smaller N)".to_string(),
        )]);
    }
    let Layout {
        rows_per_task,
        row_warps,
        k_groups,
        waves,
        chunks,
        double_buffer,
        chunk_batch,
        batch_rows,
    } = l;
    let per_buffer = l.per_buffer();
    let (xn, wn, yn) = (s.tensor_name("x"), s.tensor_name("W"), s.tensor_name("y"));
    let constants = vec![
        int_const("kRows", m, format!("tokens: rows of `{xn}` and `{yn}`")),
        int_const("kN", n, format!("rows of `{wn}`, columns of `{yn}`")),
        int_const("kK", k, format!("columns of `{xn}` and `{wn}`")),
        int_const(
            "kRowsPerTask",
            rows_per_task,
            format!("rows of `{wn}` per task: ceil(kN / kNumTasks)"),
        ),
        int_const(
            "kRowWarps",
            row_warps,
            "nwarps: the smallest of 1, 2, 4 not raising ceil(kN / (kNumTasks * nwarps)) (design.md rule 4)",
        ),
        int_const(
            "kKGroups",
            k_groups,
            "warps splitting each row's K: 4 / kRowWarps",
        ),
        int_const(
            "kWaves",
            waves,
            "rows per row warp: ceil(kRowsPerTask / kRowWarps)",
        ),
        int_const(
            "kChunks",
            chunks,
            "16-byte vectors per lane per row: kK / (256 * kKGroups)",
        ),
        int_const(
            "kChunkBatch",
            chunk_batch,
            format!("vectors per lane of a row in one step: kChunks up to {} per buffer", per_buffer),
        ),
        int_const(
            "kBatchRows",
            batch_rows,
            format!("rows of one step: kWaves over the fewest steps of at most {per_buffer} vectors and {MAX_ACCUMULATORS} accumulators per lane"),
        ),
        Constant {
            name: "kDoubleBuffer".into(),
            cty: "bool",
            value: double_buffer.to_string(),
            comment: format!("two step buffers of up to {} vectors taking turns (kChunks <= {}), else one of up to {MAX_VECTORS}", MAX_VECTORS / 2, MAX_VECTORS / 2),
        },
    ];
    let regions = vec![
        RegionNeed {
            name: "x_rows",
            min_bytes: 2 * m * k,
            what: "the bf16 activation rows",
            min_align: 16,
        },
        // Only split rows (kKGroups > 1) keep partials: one K group stores its sums directly.
        RegionNeed {
            name: "partials",
            min_bytes: if k_groups > 1 {
                4 * k_groups * rows_per_task * m
            } else {
                0
            },
            what: "one fp32 partial per K group, row and token",
            min_align: 4,
        },
    ];
    Ok((
        constants,
        regions,
        include_str!("../../stdlib/bodies/gemv.cu"),
        "stdlib/bodies/gemv.cu",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_smallest_warp_count_that_keeps_the_waves() {
        // Router [256 x 7168] on 128 tasks: 4 warps give 1 row each with half idle; 2 warps
        // keep one wave, and their K groups halve each row.
        assert_eq!(warp_layout(256, 128, 7168), (2, 2));
        // 64 tasks of 4 rows: 1 warp would take 4 waves, 2 warps 2: 4 warps.
        assert_eq!(warp_layout(256, 64, 7168), (4, 1));
        // One row per task: one row warp, K split four ways.
        assert_eq!(warp_layout(132, 132, 7168), (1, 4));
        // K = 256 cannot be split: whatever the waves, one K group.
        assert_eq!(warp_layout(132, 132, 256), (4, 1));
        // K = 512 splits two ways, not four.
        assert_eq!(warp_layout(132, 132, 512), (2, 2));
    }
}
