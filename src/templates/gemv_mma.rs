//! `gemv_mma(x, W -> y)`: y[m, n] = Σ_k x[m, k] · W[n, k] in fp32, bf16 out, with warp
//! tensor-core MMAs (`mma.sync.m16n8k16`, bf16 in, f32 accumulation): the consumer GEMV of
//! [`super::gemv`] for 5-16 tokens, where the FMA GEMV's work per weight byte grows with the
//! tokens (every product an f32 FMA) and the MMA's does not.
//!
//! Task t covers the weight rows `[t · kRowsPerTask, (t + 1) · kRowsPerTask)`, as the FMA GEMV's.
//! Every one of its four consumer warps takes all of them (`kTiles` tiles of 16 rows, the MMA's
//! A operand) over a quarter of K, so `x` is read once per task (the token tiles of 8, the MMA's
//! B), and the quarters are summed through `partials`. A lane holds 16-byte vectors of two rows
//! of each row tile and of one token of each token tile per k-block of 32 (the MMA's k order is
//! free as long as A and B share it: each operand register is a word of a vector, no ldmatrix).
//! The vectors of `kGroup` k-blocks are one cp.async commit group into the lane's own bytes of a
//! slot of the `w_ring` region, `kRing` slots deep as the contract declares it, so
//! `cp.async.wait_group` alone orders the ring, as in the FMA GEMV. Rows past the task's last
//! and tokens past `m` are not copied: an MMA's row of D reads only its row of A, a column only
//! its column of B, and those sums are not stored.

use super::gemv::{linear_shapes, tasks_fit, Bound, Limits, INPUTS, MAX_RING, OUTPUTS, SLOT_BYTES};
use super::{int_const, RegionNeed, RingUse, Shapes, Signature};
use crate::ir::exact::ceil_div;

/// The signature.
pub const SIG: Signature = Signature {
    name: "gemv_mma",
    inputs: INPUTS,
    outputs: OUTPUTS,
    scalars: &[],
    needs_barrier: true,
    strided: &[],
    in_place: &[],
    // The accumulators are a register array per token tile: the token count is a compile-time one.
    token_rows: &[],
    summary: "y = x W^T for up to 16 tokens with warp MMAs (mma.sync), fp32 accumulation",
};

/// Elements of K per k-block per warp (two m16n8k16 steps) times the four warps splitting K.
pub const K_UNIT: i64 = 4 * 32;

/// Tokens at most: two token tiles of 8 (the MMA's N).
pub const MAX_TOKENS: i64 = 16;

/// Row tiles of 16 per task at most: 8 x 2 x 4 f32 accumulators per lane at 16 tokens.
pub const MAX_TILES: i64 = 8;

/// Vectors per lane in a group (one cp.async commit group) at most, unless one k-block holds
/// more (then a group is one k-block).
pub const MAX_GROUP_VECTORS: i64 = 8;

/// The work of a task and its lanes (every quantity the body's constants give).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Weight rows per task: ceil(N / tasks).
    pub rows_per_task: i64,
    /// Row tiles of 16: ceil(rows_per_task / 16).
    pub tiles: i64,
    /// Token tiles of 8: ceil(m / 8).
    pub token_tiles: i64,
    /// k-blocks of 32 per warp: K / 128.
    pub blocks: i64,
    /// 16-byte vectors per lane per k-block: token_tiles + 2 tiles.
    pub vectors: i64,
    /// k-blocks per group: the largest divisor of `blocks` whose vectors stay within
    /// [`MAX_GROUP_VECTORS`], at least 1.
    pub group: i64,
}

/// The layout of `tasks` tasks over `W` [`n`, `k`] at `m` tokens (`k` a positive multiple of
/// [`K_UNIT`]).
pub fn layout(n: i64, k: i64, m: i64, tasks: i64) -> Layout {
    let rows_per_task = ceil_div(n, tasks.max(1));
    let tiles = ceil_div(rows_per_task, 16);
    let token_tiles = ceil_div(m.max(1), 8);
    let blocks = (k / K_UNIT).max(1);
    let vectors = token_tiles + 2 * tiles;
    let group = (1..=blocks)
        .rev()
        .find(|d| blocks % d == 0 && d * vectors <= MAX_GROUP_VECTORS)
        .unwrap_or(1);
    Layout {
        rows_per_task,
        tiles,
        token_tiles,
        blocks,
        vectors,
        group,
    }
}

/// Bytes of one group's slot: a 16-byte vector per consumer thread for each of its vectors.
pub fn group_bytes(l: &Layout) -> i64 {
    SLOT_BYTES * l.group * l.vectors
}

/// Checks the shapes (K a multiple of [`K_UNIT`], at most [`MAX_TOKENS`] tokens, at most
/// [`MAX_TILES`] row tiles per task); derives the layout and the ring depth.
pub(super) fn bind(s: &Shapes<'_>) -> Bound {
    let (m, n, k) = linear_shapes(
        s,
        &Limits {
            k_unit: K_UNIT,
            k_unit_why: "four warps each take a quarter of K in k-blocks of 32",
            max_tokens: MAX_TOKENS,
            tokens_why: "the MMA GEMV's tokens are two tiles of 8 (mma.sync's N)",
            tokens_help:
                "use a pipeline linear: examples/linear_bf16_m64.mpk takes up to 64 tokens per tile",
        },
    )?;
    let tasks = s.tasks().max(1);
    let l = layout(n, k, m, tasks);
    if l.tiles > MAX_TILES {
        return Err(vec![s.error(
            "W",
            format!(
                "{tasks} tasks give each {} rows of `{}`, {} tiles of 16, but a lane keeps the sums of at most {MAX_TILES} tiles ({} rows) in registers",
                l.rows_per_task,
                s.tensor_name("W"),
                l.tiles,
                MAX_TILES * 16
            ),
            format!("use at least {} tasks (fewer rows per task)", ceil_div(n, MAX_TILES * 16)),
        )]);
    }
    tasks_fit(s, tasks, l.rows_per_task, n)?;
    let ring_use = RingUse::new(group_bytes(&l), l.blocks / l.group, MAX_RING);
    let ring = ring_use.slots(s.region_bytes("w_ring").unwrap_or(0)).max(2);
    let (xn, wn, yn) = (s.tensor_name("x"), s.tensor_name("W"), s.tensor_name("y"));
    let constants = vec![
        int_const("kRows", m, format!("tokens: rows of `{xn}` and `{yn}`")),
        int_const("kN", n, format!("rows of `{wn}`, columns of `{yn}`")),
        int_const("kK", k, format!("columns of `{xn}` and `{wn}`")),
        int_const(
            "kRowsPerTask",
            l.rows_per_task,
            format!("rows of `{wn}` per task: ceil(kN / kNumTasks)"),
        ),
        int_const(
            "kTiles",
            l.tiles,
            "row tiles of 16 (the MMA's M): ceil(kRowsPerTask / 16)",
        ),
        int_const(
            "kNTiles",
            l.token_tiles,
            "token tiles of 8 (the MMA's N): ceil(kRows / 8)",
        ),
        int_const(
            "kBlocks",
            l.blocks,
            "k-blocks of 32 per warp: kK / 128 (four warps, a quarter of K each)",
        ),
        int_const(
            "kVecs",
            l.vectors,
            "16-byte vectors per lane per k-block: kNTiles + 2 * kTiles",
        ),
        int_const(
            "kGroup",
            l.group,
            format!("k-blocks per group: the largest divisor of kBlocks within {MAX_GROUP_VECTORS} vectors, at least 1"),
        ),
        int_const(
            "kRing",
            ring,
            format!("groups in the ring: the bytes of `w_ring` / ({SLOT_BYTES} * kGroup * kVecs), at most {MAX_RING} and one more than a warp's groups; kRing - 2 in flight while one computes"),
        ),
    ];
    let regions = vec![
        RegionNeed {
            name: "w_ring",
            min_bytes: 2 * group_bytes(&l),
            what: "the weight and activation ring, two groups at the least (16 bytes per consumer thread and vector)",
            min_align: 16,
            ring: Some(ring_use),
        },
        RegionNeed {
            name: "partials",
            min_bytes: 4 * 4 * l.rows_per_task * m,
            what: "one fp32 sum per warp (K quarter), row and token",
            min_align: 4,
            ring: None,
        },
    ];
    Ok((
        constants,
        regions,
        include_str!("../../stdlib/bodies/gemv_mma.cu"),
        "stdlib/bodies/gemv_mma.cu",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One `mma.m16n8k16` (bf16 in, f32 out) over the 32 lanes' registers, each element placed by
    /// CUTLASS's layouts for SM80_16x8x16_F32BF16BF16F32_TN (an independent source for the
    /// fragment order; the PTX ISA's "Matrix Fragments for mma.m16n8k16" says the same): lane
    /// (g, t), value v (bits v0, v1, v2; element v % 2 of register v / 2, the low half first):
    /// A[g + 8 v1][2 t + v0 + 8 v2], B[2 t + v0 + 8 v1][g], D[g + 8 v1][2 t + v0].
    fn mma(d: &mut [[i64; 4]; 32], a: &[[[i64; 2]; 4]; 32], b: &[[[i64; 2]; 2]; 32]) {
        let (mut am, mut bm) = ([[0i64; 16]; 16], [[0i64; 8]; 16]);
        for lane in 0..32 {
            let (g, t) = (lane / 4, lane % 4);
            for v in 0..8 {
                let (v0, v1, v2) = (v & 1, (v >> 1) & 1, v >> 2);
                am[g + 8 * v1][2 * t + v0 + 8 * v2] = a[lane][v / 2][v % 2];
            }
            for v in 0..4 {
                let (v0, v1) = (v & 1, v >> 1);
                bm[2 * t + v0 + 8 * v1][g] = b[lane][v / 2][v % 2];
            }
        }
        for lane in 0..32 {
            let (g, t) = (lane / 4, lane % 4);
            for v in 0..4 {
                let (m, n) = (g + 8 * (v >> 1), 2 * t + (v & 1));
                d[lane][v] += (0..16).map(|k| am[m][k] * bm[k][n]).sum::<i64>();
            }
        }
    }

    /// The body's operands of one k-block (stdlib/bodies/gemv_mma.cu, `compute`): lane (g, t)
    /// holds the 8 elements at k = 8 t of rows g (`lo`) and g + 8 (`hi`) and of token g (`xv`);
    /// step s passes A = {lo word 2s, hi word 2s, lo word 2s + 1, hi word 2s + 1} and
    /// B = {xv word 2s, xv word 2s + 1}. Their two MMAs must sum each row's 32 products with each
    /// token, whatever k order the fragments imply.
    #[test]
    fn a_k_block_s_two_mmas_are_the_dot_products() {
        let w = |r: usize, k: usize| ((r * 37 + k * 11) % 17) as i64 - 8;
        let x = |n: usize, k: usize| ((n * 13 + k * 7) % 19) as i64 - 9;
        let word =
            |f: &dyn Fn(usize) -> i64, t: usize, i: usize| [f(8 * t + 2 * i), f(8 * t + 2 * i + 1)];
        let mut d = [[0i64; 4]; 32];
        for s in 0..2 {
            let mut a = [[[0i64; 2]; 4]; 32];
            let mut b = [[[0i64; 2]; 2]; 32];
            for lane in 0..32 {
                let (g, t) = (lane / 4, lane % 4);
                let lo = |k| w(g, k);
                let hi = |k| w(g + 8, k);
                let xv = |k| x(g, k);
                a[lane] = [
                    word(&lo, t, 2 * s),
                    word(&hi, t, 2 * s),
                    word(&lo, t, 2 * s + 1),
                    word(&hi, t, 2 * s + 1),
                ];
                b[lane] = [word(&xv, t, 2 * s), word(&xv, t, 2 * s + 1)];
            }
            mma(&mut d, &a, &b);
        }
        for lane in 0..32 {
            let (g, t) = (lane / 4, lane % 4);
            for v in 0..4 {
                // The body's store: row g + 8 (v / 2), token 2 t + v % 2.
                let (r, n) = (g + 8 * (v >> 1), 2 * t + (v & 1));
                let want: i64 = (0..32).map(|k| w(r, k) * x(n, k)).sum();
                assert_eq!(d[lane][v], want, "lane {lane} value {v}");
            }
        }
    }

    #[test]
    fn tiles_and_groups_of_the_decode_shapes() {
        // q_a [1536 x 7168] on 128 tasks at 16 tokens: one row tile (12 rows), two token tiles,
        // 56 k-blocks per warp, 4 vectors each: groups of 2 k-blocks.
        let l = layout(1536, 7168, 16, 128);
        assert_eq!((l.rows_per_task, l.tiles, l.token_tiles), (12, 1, 2));
        assert_eq!((l.blocks, l.vectors, l.group), (56, 4, 2));
        // o_proj [7168 x 2048] on 131 tasks: 55 rows, 4 tiles, 10 vectors: one k-block a group.
        let l = layout(7168, 2048, 16, 131);
        assert_eq!((l.tiles, l.vectors, l.group, l.blocks), (4, 10, 1, 16));
        // One token: one token tile; q_b [3072 x 1536] on 128 tasks: 24 rows, 2 tiles, 5 vectors.
        let l = layout(3072, 1536, 1, 128);
        assert_eq!((l.tiles, l.token_tiles, l.vectors, l.group), (2, 1, 5, 1));
        // lm_head per rank on 132 tasks: 123 rows, 8 tiles, 18 vectors: 36 KB a group.
        let l = layout(16160, 7168, 16, 132);
        assert_eq!((l.tiles, l.vectors, group_bytes(&l)), (8, 18, 36864));
        // The router on 128 tasks at 4 tokens: 2 rows, one tile of each, 3 vectors, groups of 2.
        let l = layout(256, 7168, 4, 128);
        assert_eq!((l.tiles, l.token_tiles, l.vectors, l.group), (1, 1, 3, 2));
    }
}
