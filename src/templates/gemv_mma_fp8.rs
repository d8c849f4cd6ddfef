//! `gemv_mma_fp8(x, x_scale, W, W_scale -> y)`: the MMA GEMV of [`super::gemv_mma`] over
//! DeepSeek-V3's block-scaled fp8 operands (the scales of [`super::gemv_fp8`]): y[m, n] =
//! Σ_k (x[m, k] · x_scale[m, k / 128]) · (W[n, k] · W_scale[n / 128, k / 128]) with warp
//! tensor-core MMAs (`mma.sync.m16n8k32`, e4m3 in, f32 accumulation), bf16 out.
//!
//! The layout is `gemv_mma`'s over bytes: a chunk is a line of 128, 256 or 512 bytes (as many
//! e4m3) of each of the task's rows and tokens, so the lines, slots, swizzle and copies are those
//! of a bf16 row of K / 2 elements ([`super::gemv_mma::layout`]); a k-block is 64 elements (four
//! 16-byte units: two MMAs of k 32). The products of one 128-column scale block (two k-blocks)
//! are summed by the MMAs into a fresh accumulator, which is then multiplied by the row's weight
//! scale and the token's activation scale into the f32 sums (DeepSeek-V3's promotion every 128
//! elements). The scales of the task's row blocks and tokens are staged in `scales` first.

use super::gemv::{linear_shapes, tasks_fit, Bound, Limits, MAX_RING};
use super::gemv_fp8::{scale_row_blocks, SCALE_BLOCK};
use super::gemv_mma::{
    layout, partials_region, ring_region, slot_bytes, tile_constants, tile_pairs_fit, CHUNKS,
};
use super::{int_const, RegionNeed, RingUse, Shapes, Signature};

/// The signature: `gemv_fp8`'s formals.
pub const SIG: Signature = Signature {
    name: "gemv_mma_fp8",
    inputs: super::gemv_fp8::SIG.inputs,
    outputs: super::gemv::OUTPUTS,
    scalars: &[],
    positive: &[],
    at_most: &[],
    needs_barrier: true,
    strided: &[],
    in_place: &[],
    // The accumulators are a register array per token tile: the token count is a compile-time one.
    token_rows: &[],
    summary: "y = x W^T for up to 32 tokens over block-scaled e4m3 operands with warp MMAs (mma.sync k32), fp32 accumulation",
};

/// K in multiples of this: four warps each take a quarter of K in chunks of 128 elements (one
/// scale block) at least.
pub const K_UNIT: i64 = 4 * 128;

/// Tokens at most: four token tiles of 8 (the MMA's N).
pub const MAX_TOKENS: i64 = 32;

/// Row tiles of 16 times token tiles of 8 per task at most: a lane keeps 4 f32 sums of each
/// pair in registers, beside the token fragments of two k-blocks.
pub const MAX_ACC_TILES: i64 = 8;

/// Checks the shapes (K a multiple of [`K_UNIT`], at most [`MAX_TOKENS`] tokens and
/// [`MAX_ACC_TILES`] tile pairs, the scales' shapes); derives the layout and the regions.
pub(super) fn bind(s: &Shapes<'_>) -> Bound {
    let (m, n, k) = linear_shapes(
        s,
        &Limits {
            k_unit: K_UNIT,
            k_unit_why: "four warps each take a quarter of K in chunks of 128 e4m3 (a scale block) at least",
            k_unit_help: "use a K that is a multiple of 512, or the fp8 pipeline linear (stdlib/linear_fp8_splitk_sum.mpk)",
            max_tokens: MAX_TOKENS,
            tokens_why: "the fp8 MMA GEMV's tokens are at most four tiles of 8 (mma.sync's N)",
            tokens_help: "give a task at most 32 tokens, or use the fp8 pipeline linear (stdlib/linear_fp8_splitk_sum.mpk)",
        },
    )?;
    super::gemv_fp8::check_scales(s, m, n, k)?;
    let tasks = s.tasks().max(1);
    let ring_bytes = s.region_bytes("w_ring").unwrap_or(0);
    // The bf16 layout of a row of K / 2 elements: the same bytes per line and chunk.
    let l = layout(n, k / 2, m, tasks, ring_bytes);
    tile_pairs_fit(s, &l, n, m, tasks, MAX_ACC_TILES)?;
    tasks_fit(s, tasks, l.rows_per_task, n)?;
    let ring_use = RingUse::new(slot_bytes(&l), l.chunks, MAX_RING);
    let ring = ring_use.slots(ring_bytes).max(2);
    let kb = k / SCALE_BLOCK;
    let blocks = scale_row_blocks(l.rows_per_task);
    let (xn, wn, yn) = (s.tensor_name("x"), s.tensor_name("W"), s.tensor_name("y"));
    let chunk = 2 * l.chunk;
    let mut constants = vec![
        int_const("kRows", m, format!("tokens: rows of `{xn}` and `{yn}`")),
        int_const("kN", n, format!("rows of `{wn}`, columns of `{yn}`")),
        int_const("kK", k, format!("columns of `{xn}` and `{wn}` (bytes of a row)")),
        int_const("kKBlocks", kb, "scale blocks along K: kK / 128"),
        int_const(
            "kRowsPerTask",
            l.rows_per_task,
            format!("rows of `{wn}` per task: ceil(kN / kNumTasks)"),
        ),
        int_const(
            "kScaleRowBlocks",
            blocks,
            "128-row blocks of the weight scales a task's rows can touch: 1 + ceil((kRowsPerTask - 1) / 128)",
        ),
    ];
    constants.extend(tile_constants(&l));
    constants.extend([
        int_const(
            "kChunk",
            chunk,
            format!(
                "e4m3 (bytes) of K per chunk: the longest of {}, {}, {} that divides kK / 4 and leaves 4 slots of `w_ring` (or every chunk in flight)",
                2 * CHUNKS[0],
                2 * CHUNKS[1],
                2 * CHUNKS[2]
            ),
        ),
        int_const("kChunks", l.chunks, "chunks per warp: kK / 4 / kChunk"),
        int_const(
            "kRing",
            ring,
            format!("chunks in the ring: the bytes of `w_ring` / (4 warps * kLines * kChunk), at most {MAX_RING} and one more than a warp's chunks; kRing - 2 in flight while one computes"),
        ),
    ]);
    let regions = vec![
        ring_region(&l, ring_use),
        RegionNeed {
            name: "scales",
            min_bytes: 4 * (blocks + m) * kb,
            what:
                "the weight scales of the row blocks a task's rows touch, then the tokens' scales",
            min_align: 4,
            ring: None,
        },
        partials_region(&l, m),
    ];
    Ok((
        constants,
        regions,
        include_str!("../../stdlib/bodies/gemv_mma_fp8.cu"),
        "stdlib/bodies/gemv_mma_fp8.cu",
    ))
}

#[cfg(test)]
// The mma.sync fragments are written per (lane, register) as the PTX ISA's tables give them:
// indexing by lane and register reads as those tables do.
#[allow(clippy::needless_range_loop)]
mod tests {
    use super::*;

    /// One `mma.m16n8k32` (e4m3 in, f32 out) over the 32 lanes' registers, each byte placed by
    /// CUTLASS's layouts for SM89_16x8x32_F32E4M3E4M3F32_TN (include/cute/atom/mma_traits_sm89.hpp,
    /// an independent source for the fragment order): lane (g, t) = (lane / 4, lane % 4), value
    /// v = v0 + 4 v1 + 8 v2 of A (byte v % 4 of register v / 4) at A[g + 8 v1][4 t + v0 + 16 v2];
    /// value v = v0 + 4 v1 of B at B[4 t + v0 + 16 v1][g]; D as m16n8k16's, D[g + 8 (v / 2)][2 t +
    /// v % 2].
    fn mma(d: &mut [[i64; 4]; 32], a: &[[[i64; 4]; 4]; 32], b: &[[[i64; 4]; 2]; 32]) {
        let (mut am, mut bm) = ([[0i64; 32]; 16], [[0i64; 8]; 32]);
        for lane in 0..32 {
            let (g, t) = (lane / 4, lane % 4);
            for v in 0..16 {
                let (v0, v1, v2) = (v % 4, (v / 4) % 2, v / 8);
                am[g + 8 * v1][4 * t + v0 + 16 * v2] = a[lane][v / 4][v % 4];
            }
            for v in 0..8 {
                let (v0, v1) = (v % 4, v / 4);
                bm[4 * t + v0 + 16 * v1][g] = b[lane][v / 4][v % 4];
            }
        }
        for lane in 0..32 {
            let (g, t) = (lane / 4, lane % 4);
            for v in 0..4 {
                let (m, n) = (g + 8 * (v >> 1), 2 * t + (v & 1));
                d[lane][v] += (0..32).map(|k| am[m][k] * bm[k][n]).sum::<i64>();
            }
        }
    }

    /// The body's operands of one k-block (stdlib/bodies/gemv_mma_fp8.cu, `compute`): lane (g, t)
    /// holds the 16 bytes at k = 16 t of rows g (`lo`) and g + 8 (`hi`) and of token g (`xv`); step
    /// s passes A = {lo word 2s, hi word 2s, lo word 2s + 1, hi word 2s + 1} and B = {xv word 2s,
    /// xv word 2s + 1}. Their two MMAs must sum each row's 64 products with each token.
    #[test]
    fn a_k_block_s_two_mmas_are_the_dot_products() {
        let w = |r: usize, k: usize| ((r * 37 + k * 11) % 17) as i64 - 8;
        let x = |n: usize, k: usize| ((n * 13 + k * 7) % 19) as i64 - 9;
        let word = |f: &dyn Fn(usize) -> i64, t: usize, i: usize| {
            [0, 1, 2, 3].map(|j| f(16 * t + 4 * i + j))
        };
        let mut d = [[0i64; 4]; 32];
        for s in 0..2 {
            let mut a = [[[0i64; 4]; 4]; 32];
            let mut b = [[[0i64; 4]; 2]; 32];
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
                let (r, n) = (g + 8 * (v >> 1), 2 * t + (v & 1));
                let want: i64 = (0..64).map(|k| w(r, k) * x(n, k)).sum();
                assert_eq!(d[lane][v], want, "lane {lane} value {v}");
            }
        }
    }

    #[test]
    fn chunks_of_the_fp8_decode_shapes() {
        // qkv_a [2176 x 7168] e4m3 on 128 tasks at 16 tokens: 17 rows (2 tiles), 33 lines; a
        // 256-byte line leaves 4 slots of 96 KB... the bf16 layout of K 3584 decides.
        let l = layout(2176, 3584, 16, 128, 98304);
        assert_eq!(
            (l.rows_per_task, l.tiles, l.token_tiles, l.lines),
            (17, 2, 2, 33)
        );
        assert!(l.tiles * l.token_tiles <= MAX_ACC_TILES);
        // A quarter of K is whole scale blocks for every chunk: 2 * chunk divides K / 4.
        for c in CHUNKS {
            assert_eq!((2 * c) % SCALE_BLOCK, 0);
        }
        assert_eq!((7168 / 4) % (2 * l.chunk), 0);
    }
}
