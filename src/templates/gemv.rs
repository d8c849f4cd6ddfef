//! `gemv(x, W -> y)`: y[m, n] = Σ_k x[m, k] · W[n, k] in fp32, bf16 out: the consumer GEMV of
//! family B (design.md, "Choosing a family", rule 4), for decode's few tokens where a weight is
//! streamed once and the tensor cores have nothing to reuse.
//!
//! Task t covers the weight rows `[t · kRowsPerTask, (t + 1) · kRowsPerTask)`. Its four consumer
//! warps are `kRowWarps` row warps times `kKGroups` = 4 / kRowWarps K groups: row warp w takes the
//! task's rows w, w + kRowWarps, … (the wave quantum of them), and the K groups of a
//! row warp split each row's K into equal parts, summed through the `partials` region. kRowWarps
//! (the template's `nwarps`) is the smallest of 1, 2, 4 that does not raise the wave-quant tie
//! `ceil(items / (ntasks · nwarps))` with items = N (design.md rule 4; issue 12, item 4): the
//! warps a smaller count frees split K instead of idling, so a task's bytes are in flight sooner;
//! unless another count gives a warp strictly less work, row ends counted ([`warp_layout`]).
//!
//! Every lane reads 16-byte vectors (8 bf16) of its row, 512 contiguous bytes per warp
//! instruction, through the non-coherent path with an L2 evict-first policy (the weights are read
//! once per decode step). A warp's rows are one stream of vectors per lane, row after row, in
//! groups of `kGroup` (a part of one row, or whole rows), each copied asynchronously (cp.async,
//! one commit group) into a ring of `kRing` group slots in the `w_ring` region, as deep as the
//! contract declares it: while a group computes, the next kRing - 2 are in flight, and then the
//! group kRing - 1 ahead goes into the slot the group before was read from. A thread reads back
//! only the vectors it copied, so `cp.async.wait_group` alone orders the ring. `x` is staged in
//! the `x_rows` region (coherent loads) while the first groups' copies are in flight.

use super::{int_const, Access, Constant, Formal, RegionNeed, RingUse, Shapes, Signature};
use crate::diag::Diagnostic;
use crate::ir::exact::ceil_div;
use crate::ir::Dtype;

/// The formals both GEMVs take: `x` [m, K] (written in the launch), `W` [N, K] (a weight).
pub(super) const INPUTS: &[Formal] = &[
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
];

/// The output both GEMVs write: `y` [m, N].
pub(super) const OUTPUTS: &[Formal] = &[Formal {
    name: "y",
    dtypes: &[Dtype::Bf16],
    rank: 2,
    access: Access::Activation,
}];

/// The signature.
pub const SIG: Signature = Signature {
    name: "gemv",
    inputs: INPUTS,
    outputs: OUTPUTS,
    scalars: &[],
    positive: &[],
    at_most: &[],
    needs_barrier: true,
    strided: &[],
    in_place: &[],
    // The accumulators are a register array per token: the token count is a compile-time one.
    token_rows: &[],
    summary: "y = x W^T for few tokens without tensor cores (consumer GEMV), fp32 accumulation",
};

pub(super) type Bound =
    Result<(Vec<Constant>, Vec<RegionNeed>, &'static str, &'static str), Vec<Diagnostic>>;

/// Elements of K one warp load instruction covers: 32 lanes × one 16-byte vector (8 bf16).
pub const K_PER_WARP_LOAD: i64 = 32 * 8;

/// Vectors per lane in a group (one cp.async commit group) at most.
pub const MAX_GROUP: i64 = 8;

/// Bytes of one ring slot: a 16-byte vector for each of the 128 consumer threads.
pub const SLOT_BYTES: i64 = 128 * 16;

/// `w_ring` bytes that hold two groups of the largest size: the least a ring can be for any K.
pub const MIN_RING_BYTES: i64 = 2 * SLOT_BYTES * MAX_GROUP;

/// The stdlib's `w_ring` (stdlib/linear_bf16_gemv.mpk, what `mpkc new` writes): 96 KB, about
/// 70 KB per SM in flight while a group computes (H200, 2026-12-04: q_a 6.9 us at 80-96 KB,
/// 7.7 at 48 KB).
pub const RING_BYTES: i64 = 96 * 1024;

/// Tokens at most: one f32 accumulator per token per lane.
pub const MAX_ACCUMULATORS: i64 = 32;

/// What ending a row costs a warp, in vectors of its stream: the reduction over the lanes (five
/// dependent shuffles per token) and the store of the sum or the K group's partial. Measured on
/// the H100 (2026-12-06, persistent method, each layout forced in turn, TB/s of weight bytes at
/// M = 1): kv_a [576 x 7168] 1.60 / 1.66 / 1.68 with 4 / 2 / 1 row warps (0.96 / - / 1.04 at M =
/// 4), q_a [1536 x 7168] 2.43 / 2.41 / 2.37 (1.89 / - / 1.78), q_b [3072 x 1536] 1.82 / 1.64 / -,
/// the router 1.06 / 1.13 / 1.12, o_proj [7168 x 2048] 2.51 / - / 2.26 (fp8 1.81 / - / 1.18),
/// expert gate+up, fp8 qkv_a and fp8 expert gate+up within 3 %. Two vectors a row picks the
/// fastest or one within 3 % of it in every case.
pub const ROW_END_VECTORS: i64 = 2;

/// The warp layout of a task: (row warps, K groups).
///
/// `rows` = N (the items), `tasks` the task count, `k` the reduction length (a multiple of
/// [`K_PER_WARP_LOAD`]). Row-warp counts n = 1, 2 and 4 are candidates where each of the 4 / n
/// K groups' share of K is still a whole number of warp loads. The wave-quant tie test (design.md
/// rule 4; issue 12, item 4) takes the smallest n whose `ceil(rows / (tasks · n))` equals 4's.
/// That test counts rows per warp as if the warps a smaller n frees were idle; here they split
/// K, so a warp's work is `ceil(rows per task / n)` rows of `k / (256 · 4 / n)` vectors per lane,
/// each row ending in a reduction ([`ROW_END_VECTORS`]). Where another candidate's work is
/// strictly less than the tie test's, the least is taken: kv_a [576 x 7168] on 116 tasks of 5
/// rows gets 1 row warp (5 rows of 7 vectors + 2), where the tie test's 4 row warps left one warp
/// 2 rows of 28 and three warps 1 (the task as long as that warp's stream).
pub fn warp_layout(rows: i64, tasks: i64, k: i64) -> (i64, i64) {
    let per_task = ceil_div(rows, tasks.max(1));
    let tie = tie_row_warps(per_task, k);
    let work = |n: i64| {
        ceil_div(per_task, n).saturating_mul(k / (K_PER_WARP_LOAD * (4 / n)) + ROW_END_VECTORS)
    };
    let least = [4, 2, 1]
        .into_iter()
        .filter(|&n| k_groups_fit(k, n))
        .min_by_key(|&n| work(n))
        .unwrap_or(4);
    let n = if work(least) < work(tie) { least } else { tie };
    (n, 4 / n)
}

/// The row warps of the wave-quant tie test alone (design.md rule 4; issue 12, item 4), for
/// `per_task` = ceil(rows / tasks) rows per task (so `ceil(rows / (tasks · n))` is
/// `ceil(per_task / n)`): the smallest of 1, 2 and 4 whose waves equal 4's and whose K groups
/// split K into whole warp loads. [`warp_layout`] departs from it where another count has less
/// work.
pub fn tie_row_warps(per_task: i64, k: i64) -> i64 {
    let waves = |n: i64| ceil_div(per_task, n);
    [1, 2]
        .into_iter()
        .find(|&n| k_groups_fit(k, n) && waves(n) == waves(4))
        .unwrap_or(4)
}

/// Whether `n` row warps' 4 / n K groups each take a whole number of warp loads of `k`.
fn k_groups_fit(k: i64, n: i64) -> bool {
    k % (K_PER_WARP_LOAD * (4 / n)) == 0
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
    /// 16-byte vectors per lane per row: K / (256 x K groups).
    pub chunks: i64,
    /// Vectors per lane in a group: the largest divisor of `chunks` up to [`MAX_GROUP`] (a group
    /// lies in one row), or where a row is shorter than that, the most whole rows within it.
    pub group: i64,
}

/// The layout of `tasks` tasks over `W` [`n`, `k`] (`k` a positive multiple of
/// [`K_PER_WARP_LOAD`]); the token count changes none of it.
pub fn layout(n: i64, k: i64, tasks: i64) -> Layout {
    let tasks = tasks.max(1);
    let rows_per_task = ceil_div(n, tasks);
    let (row_warps, k_groups) = warp_layout(n, tasks, k);
    let chunks = k / (K_PER_WARP_LOAD * k_groups);
    let group = if chunks >= MAX_GROUP {
        (1..=MAX_GROUP).rev().find(|g| chunks % g == 0).unwrap_or(1)
    } else {
        chunks.max(1) * (MAX_GROUP / chunks.max(1))
    };
    Layout {
        rows_per_task,
        row_warps,
        k_groups,
        chunks,
        group,
    }
}

/// Groups in the ring at most: `cp.async.wait_group`'s count (kRing - 2) is at most 63 in SASS
/// (ptxas caps a larger one, so the groups past it would not be in flight); bytes of `w_ring`
/// past 65 groups go unused (W0116 where they are a page or more).
pub const MAX_RING: i64 = 65;

/// How the body uses `w_ring` under layout `l`: slots of a group each, as many as the longest
/// stream (a warp's rows, ceil(rows per task / row warps), in groups) plus one, at most
/// [`MAX_RING`].
pub fn ring_use(l: &Layout) -> RingUse {
    let stream = ceil_div(ceil_div(l.rows_per_task, l.row_warps) * l.chunks, l.group);
    RingUse::new(SLOT_BYTES * l.group, stream, MAX_RING)
}

/// What a GEMV body takes: K in multiples of `k_unit` (`k_unit_why`; `k_unit_help` for another),
/// at most `max_tokens` tokens (`tokens_why`; `tokens_help` past them).
#[derive(Clone, Copy)]
pub(super) struct Limits<'a> {
    pub k_unit: i64,
    pub k_unit_why: &'a str,
    pub k_unit_help: &'a str,
    pub max_tokens: i64,
    pub tokens_why: &'a str,
    pub tokens_help: &'a str,
}

/// The shapes both GEMVs take: `W` `[N, K]` and `y` `[m, N]` for `x` `[m, K]`, K a positive
/// multiple of `lim.k_unit`, at most `lim.max_tokens` tokens, and a per-tile granularity;
/// returns (m, N, K).
pub(super) fn linear_shapes(
    s: &Shapes<'_>,
    lim: &Limits<'_>,
) -> Result<(i64, i64, i64), Vec<Diagnostic>> {
    let Limits {
        k_unit,
        k_unit_why,
        k_unit_help,
        max_tokens,
        tokens_why,
        tokens_help,
    } = *lim;
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
    if k <= 0 || k % k_unit != 0 {
        errs.push(s.error(
            "x",
            format!(
                "the reduction length {k} is not a positive multiple of {k_unit} ({k_unit_why})"
            ),
            k_unit_help.to_string(),
        ));
    }
    if m > max_tokens {
        errs.push(s.error(
            "x",
            format!(
                "`{}` has {m} tokens, but {tokens_why}: at most {max_tokens} tokens",
                s.tensor_name("x")
            ),
            tokens_help.to_string(),
        ));
    }
    if errs.is_empty() {
        Ok((m, n, k))
    } else {
        Err(errs)
    }
}

/// The help of a bf16 GEMV's K that is not a multiple of its unit (256 for both).
pub(super) const BF16_K_HELP: &str = "use a K that is a multiple of 256, or the pipeline linear (stdlib/linear_bf16_splitk_sum64.mpk), whose tail is a TMA box";

/// Tasks of `rows_per_task` rows of `n`: every task has a row (more tasks than
/// ceil(N / rows per task) leave the last ones idle), and the body's 32-bit row index reaches the
/// first row of the last task (`task_offset * kRowsPerTask`, formed for every task) and the last
/// row of `W`. E0009 otherwise.
pub(super) fn tasks_fit(
    s: &Shapes<'_>,
    tasks: i64,
    rows_per_task: i64,
    n: i64,
) -> Result<(), Vec<Diagnostic>> {
    let needed = ceil_div(n, rows_per_task.max(1));
    if tasks > needed {
        return Err(vec![s.error(
            "W",
            format!(
                "{tasks} tasks of {rows_per_task} {} of `{}` cover its {n} rows with {needed}: the last {} would have no row",
                if rows_per_task == 1 { "row" } else { "rows" },
                s.tensor_name("W"),
                tasks - needed
            ),
            format!("use {needed} tasks, e.g. `granularity per_tile(tasks ceil_div(N, rows))` with `rows` = {rows_per_task}"),
        )]);
    }
    let last = (tasks - 1).saturating_mul(rows_per_task).max(n - 1);
    if last > i64::from(i32::MAX) {
        return Err(vec![s.error(
            "W",
            format!("{tasks} tasks of {rows_per_task} rows of `{}` reach row {last}, past the 32-bit row index the body uses", s.tensor_name("W")),
            "split the weight over fewer rows (a smaller N)".to_string(),
        )]);
    }
    Ok(())
}

/// The constants of layout `l` both FMA GEMVs' bodies share (`kRowWarps`, `kKGroups`,
/// `kChunks`, `kGroup`, `kRing`), `ring` the groups in the ring and `k_per_load` the elements of
/// K one warp load covers (256 bf16, 512 e4m3).
pub(super) fn warp_constants(l: &Layout, ring: i64, k_per_load: i64) -> Vec<super::Constant> {
    // K in the bf16 elements the layout is made of (an e4m3 row is laid out as K / 2 of them).
    let tie = tie_row_warps(l.rows_per_task, l.chunks * K_PER_WARP_LOAD * l.k_groups);
    vec![
        int_const(
            "kRowWarps",
            l.row_warps,
            if l.row_warps == tie {
                "nwarps: the smallest of 1, 2, 4 not raising ceil(kN / (kNumTasks * nwarps)) (design.md rule 4)".to_string()
            } else {
                format!(
                    "nwarps: least work per warp, ceil(kRowsPerTask / nwarps) rows of kChunks + {ROW_END_VECTORS} vectors; the tie test (design.md rule 4) gives {tie}"
                )
            },
        ),
        int_const(
            "kKGroups",
            l.k_groups,
            "warps splitting each row's K: 4 / kRowWarps",
        ),
        int_const(
            "kChunks",
            l.chunks,
            format!("16-byte vectors per lane per row: kK / ({k_per_load} * kKGroups)"),
        ),
        int_const(
            "kGroup",
            l.group,
            format!("vectors per lane in a group: the largest divisor of kChunks up to {MAX_GROUP}, or whole rows within {MAX_GROUP}"),
        ),
        int_const(
            "kRing",
            ring,
            format!("groups in the ring: the bytes of `w_ring` / ({SLOT_BYTES} * kGroup), at most {MAX_RING} and one more than a warp's groups; kRing - 2 in flight while one computes"),
        ),
    ]
}

/// The FMA GEMVs' `w_ring` (E0110 under two groups of layout `l`), used as `ring_use` says.
pub(super) fn ring_region(l: &Layout, ring_use: RingUse) -> RegionNeed {
    RegionNeed {
        name: "w_ring",
        min_bytes: 2 * SLOT_BYTES * l.group,
        what: "the weight ring, two groups at the least (16 bytes per consumer thread and vector)",
        min_align: 16,
        ring: Some(ring_use),
    }
}

/// The FMA GEMVs' `partials` at `m` tokens: one f32 per K group, row and token where rows split
/// (kKGroups > 1); one K group stores its sums directly and needs none.
pub(super) fn partials_region(l: &Layout, m: i64) -> RegionNeed {
    RegionNeed {
        name: "partials",
        min_bytes: if l.k_groups > 1 {
            4 * l.k_groups * l.rows_per_task * m
        } else {
            0
        },
        what: "one fp32 partial per K group, row and token",
        min_align: 4,
        ring: None,
    }
}

/// Checks the shapes ([`linear_shapes`], K a multiple of 256, at most [`MAX_ACCUMULATORS`]
/// tokens); derives the warp layout and the batch sizes.
pub(super) fn bind(s: &Shapes<'_>) -> Bound {
    let (m, n, k) = linear_shapes(
        s,
        &Limits {
            k_unit: K_PER_WARP_LOAD,
            k_unit_why: "a warp's 32 lanes each load 16 bytes, 8 bf16, of a row",
            k_unit_help: BF16_K_HELP,
            max_tokens: MAX_ACCUMULATORS,
            tokens_why: "the GEMV keeps one f32 accumulator per token and row in registers",
            tokens_help: "at that many tokens the tensor cores pay: use a pipeline linear (stdlib/linear_bf16_splitk_sum64.mpk; examples/linear_bf16_m64.mpk takes up to 64 tokens per tile)",
        },
    )?;
    let tasks = s.tasks().max(1);
    let l = layout(n, k, tasks);
    tasks_fit(s, tasks, l.rows_per_task, n)?;
    // The ring is as deep as the contract's `w_ring` makes it (at least two groups: E0110 below).
    let ring_use = ring_use(&l);
    let ring = ring_use.slots(s.region_bytes("w_ring").unwrap_or(0)).max(2);
    let (xn, wn, yn) = (s.tensor_name("x"), s.tensor_name("W"), s.tensor_name("y"));
    let mut constants = vec![
        int_const("kRows", m, format!("tokens: rows of `{xn}` and `{yn}`")),
        int_const("kN", n, format!("rows of `{wn}`, columns of `{yn}`")),
        int_const("kK", k, format!("columns of `{xn}` and `{wn}`")),
        int_const(
            "kRowsPerTask",
            l.rows_per_task,
            format!("rows of `{wn}` per task: ceil(kN / kNumTasks)"),
        ),
    ];
    constants.extend(warp_constants(&l, ring, K_PER_WARP_LOAD));
    let regions = vec![
        ring_region(&l, ring_use),
        RegionNeed {
            name: "x_rows",
            min_bytes: 2 * m * k,
            what: "the bf16 activation rows",
            min_align: 16,
            ring: None,
        },
        partials_region(&l, m),
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

    #[test]
    fn a_layout_with_less_work_per_warp_wins_over_the_tie() {
        // kv_a [576 x 7168] on 116 tasks of 5 rows: 4 row warps leave one warp 2 rows of 28
        // vectors (60 with the row ends), 1 row warp streams 5 rows of 7 (45).
        assert_eq!(warp_layout(576, 116, 7168), (1, 4));
        // o_proj [7168 x 2048] on 131 tasks of 55 rows: 14 rows of 8 (140) against 55 rows of 2
        // (220): the tie's 4 row warps (1 row warp measured 11 % slower).
        assert_eq!(warp_layout(7168, 131, 2048), (4, 1));
        // The fp8 GEMV's qkv_a (a bf16 row of K / 2: [2176 x 3584]) on 128 tasks of 17 rows: 5
        // rows of 14 (80) against 9 of 7 (81): the tie's (both measured the same).
        assert_eq!(warp_layout(2176, 128, 3584), (4, 1));
        // q_a [1536 x 7168] on 128 tasks of 12 rows: 3 rows of 28 (90) is the least: the tie's.
        assert_eq!(warp_layout(1536, 128, 7168), (4, 1));
    }

    #[test]
    fn groups_lie_in_a_row_or_are_whole_rows() {
        // q_a [1536 x 7168] on 128 tasks: 28 vectors per lane per row, groups of 7.
        let l = layout(1536, 7168, 128);
        assert_eq!((l.chunks, l.group), (28, 7));
        // The router on 128 tasks: K split in two, 14 vectors per row: groups of 7.
        let l = layout(256, 7168, 128);
        assert_eq!((l.k_groups, l.chunks, l.group), (2, 14, 7));
        // q_b [3072 x 1536]: 6 vectors per row, one row a group; o_proj: 8.
        assert_eq!(layout(3072, 1536, 128).group, 6);
        assert_eq!(layout(7168, 2048, 131).group, 8);
        // K = 256, one vector per row: a group is 8 whole rows; K = 768: 3 vectors, 2 rows.
        assert_eq!(layout(512, 256, 128).group, 8);
        assert_eq!(layout(512, 768, 128).group, 6);
        // A prime row length: groups of one vector.
        assert_eq!(layout(512, 11 * 256, 128).group, 1);
        for (n, k, tasks) in [
            (1536, 7168, 128),
            (576, 7168, 116),
            (7168, 2048, 131),
            (100, 256 * 6, 7),
        ] {
            let l = layout(n, k, tasks);
            assert!(l.chunks % l.group == 0 || l.group % l.chunks == 0, "{l:?}");
            assert!(l.group <= MAX_GROUP, "{l:?}");
        }
        // 96 KB of ring: 6 groups of 8 vectors, 6 of 7 (42 of 48 slots used).
        let ring = |group, stream| RingUse::new(SLOT_BYTES * group, stream, MAX_RING);
        assert_eq!(ring(8, 100).slots(98304), 6);
        assert_eq!(ring(7, 100).slots(98304), 6);
        // One vector a group: 65 groups at most, whatever the bytes.
        assert_eq!(ring(1, 1000).slots(200_000), MAX_RING);
        // A stream of 2 groups: 3 slots put both in flight; more change nothing.
        assert_eq!(ring(7, 2).slots(98304), 3);
    }
}
