//! `gemv_mma(x, W -> y)`: y[m, n] = Σ_k x[m, k] · W[n, k] in fp32, bf16 out, with warp
//! tensor-core MMAs (`mma.sync.m16n8k16`, bf16 in, f32 accumulation): the consumer GEMV of
//! [`super::gemv`] for 5-64 tokens, where the FMA GEMV's work per weight byte grows with the
//! tokens (every product an f32 FMA) and the MMA's does not.
//!
//! Task t covers the weight rows `[t · kRowsPerTask, (t + 1) · kRowsPerTask)`, as the FMA GEMV's.
//! Every one of its four consumer warps takes all of them (`kTiles` tiles of 16 rows, the MMA's
//! A operand) over a quarter of K, so `x` is read once per task (the token tiles of 8, the MMA's
//! B), and the quarters are summed through `partials`. A warp streams its quarter in chunks of
//! `kChunk` elements: a chunk is a line of `kChunk * 2` bytes of each of the task's rows and
//! tokens, copied by `kChunk / 8` lanes of 16 bytes each (whole runs of a row per instruction,
//! as DRAM serves them best) into the warp's bytes of a slot of the `w_ring` region, `kRing`
//! slots deep as the contract declares it, one cp.async commit group a chunk. Lanes then load
//! their MMA fragments from lines other lanes copied (`cp.async.wait_group`, then `__syncwarp`),
//! each operand register a 32-bit word of a 16-byte unit (the MMA's k order is free as long as A
//! and B share it: no ldmatrix); the units of odd lines are swizzled by 4 so that a phase's
//! eight lanes hit all 32 banks. Rows past the task's last and tokens past `m` are not copied:
//! their fragments read the last row or token, whose extra sums are not stored.

use super::gemv::{
    linear_shapes, tasks_fit, Bound, Limits, BF16_K_HELP, INPUTS, MAX_RING, OUTPUTS,
};
use super::{int_const, RegionNeed, RingUse, Shapes, Signature};
use crate::diag::Diagnostic;
use crate::ir::exact::ceil_div;

/// The signature.
pub const SIG: Signature = Signature {
    name: "gemv_mma",
    inputs: INPUTS,
    outputs: OUTPUTS,
    scalars: &[],
    positive: &[],
    at_most: &[],
    needs_barrier: true,
    strided: &[],
    in_place: &[],
    // The accumulators are a register array per token tile: the token count is a compile-time one.
    token_rows: &[],
    summary: "y = x W^T for up to 64 tokens with warp MMAs (mma.sync), fp32 accumulation",
};

/// Elements of K a warp's chunk may be: a line of 128, 256 or 512 bytes of each row, copied by
/// 8, 16 or 32 lanes (16 bytes each), the longest first.
pub const CHUNKS: [i64; 3] = [256, 128, 64];

/// K in multiples of this: four warps each take a quarter of K in chunks of 64 elements at least.
pub const K_UNIT: i64 = 4 * 64;

/// Tokens at most: eight token tiles of 8 (the MMA's N).
pub const MAX_TOKENS: i64 = 64;

/// Row tiles of 16 times token tiles of 8 per task at most: a lane keeps 4 f32 sums of each
/// pair in registers, 64 in all (8 row tiles at 16 tokens, 2 at 64).
pub const MAX_ACC_TILES: i64 = 16;

/// Slots a chunk's length must leave in the ring: two chunks in flight while one computes (the
/// shorter chunk is taken where the longer one would leave fewer).
pub const MIN_SLOTS: i64 = 4;

/// The work of a task and its lanes (every quantity the body's constants give).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Weight rows per task: ceil(N / tasks).
    pub rows_per_task: i64,
    /// Row tiles of 16: ceil(rows_per_task / 16).
    pub tiles: i64,
    /// Token tiles of 8: ceil(m / 8).
    pub token_tiles: i64,
    /// Lines of a warp's chunk: the task's rows, then its tokens (rows_per_task + m).
    pub lines: i64,
    /// Elements of K per chunk (one of [`CHUNKS`]): the longest that divides K / 4 and leaves
    /// [`MIN_SLOTS`] slots (or every chunk in flight) in a ring of the given bytes, else 64.
    pub chunk: i64,
    /// Chunks per warp: K / 4 / chunk.
    pub chunks: i64,
}

/// Bytes of a ring slot (one chunk of every warp) of `lines` lines of `chunk` elements.
fn slot_bytes_of(lines: i64, chunk: i64) -> i64 {
    4 * lines * chunk * 2
}

/// The layout of `tasks` tasks over `W` [`n`, `k`] at `m` tokens (`k` a positive multiple of
/// [`K_UNIT`]) with a `w_ring` of `ring_bytes`.
pub fn layout(n: i64, k: i64, m: i64, tasks: i64, ring_bytes: i64) -> Layout {
    let rows_per_task = ceil_div(n, tasks.max(1));
    let lines = rows_per_task + m.max(1);
    let quarter = (k / 4).max(K_UNIT / 4);
    let chunk = CHUNKS
        .into_iter()
        .find(|&c| {
            quarter % c == 0
                && ring_bytes / slot_bytes_of(lines, c) >= MIN_SLOTS.min(quarter / c + 1)
        })
        .unwrap_or(64);
    Layout {
        rows_per_task,
        tiles: ceil_div(rows_per_task, 16),
        token_tiles: ceil_div(m.max(1), 8),
        lines,
        chunk,
        chunks: (quarter / chunk).max(1),
    }
}

/// Bytes of one chunk's slot: every warp's lines of `chunk` elements.
pub fn slot_bytes(l: &Layout) -> i64 {
    slot_bytes_of(l.lines, l.chunk)
}

/// E0009 where layout `l` of `n` weight rows at `m` tokens over `tasks` tasks gives a task more
/// than `max` pairs of a row tile and a token tile (a lane keeps 4 f32 sums of each in
/// registers), with the task count that fits.
pub(super) fn tile_pairs_fit(
    s: &Shapes<'_>,
    l: &Layout,
    n: i64,
    m: i64,
    tasks: i64,
    max: i64,
) -> Result<(), Vec<Diagnostic>> {
    if l.tiles * l.token_tiles > max {
        let max_rows = max / l.token_tiles * 16;
        return Err(vec![s.error(
            "W",
            format!(
                "{tasks} tasks give each {} rows of `{}`, {} tiles of 16, and {m} tokens are {} tiles of 8, but a lane keeps the sums of at most {max} pairs of tiles in registers (at most {max_rows} rows per task at {m} tokens)",
                l.rows_per_task,
                s.tensor_name("W"),
                l.tiles,
                l.token_tiles,
            ),
            format!("use at least {} tasks (fewer rows per task)", ceil_div(n, max_rows)),
        )]);
    }
    Ok(())
}

/// The constants of layout `l` both MMA GEMVs' bodies share: `kTiles`, `kNTiles`, `kLines`.
pub(super) fn tile_constants(l: &Layout) -> [super::Constant; 3] {
    [
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
            "kLines",
            l.lines,
            "lines of a warp's chunk: kRowsPerTask weight rows, then kRows tokens",
        ),
    ]
}

/// The MMA GEMVs' `w_ring`: two slots of layout `l` at the least, used as `ring_use` says.
pub(super) fn ring_region(l: &Layout, ring_use: RingUse) -> RegionNeed {
    RegionNeed {
        name: "w_ring",
        min_bytes: 2 * slot_bytes(l),
        what: "the weight and activation ring, two chunks at the least (each warp's rows and tokens, 128 bytes a line at the least)",
        min_align: 16,
        ring: Some(ring_use),
    }
}

/// The MMA GEMVs' `partials` at `m` tokens: one f32 sum per warp (K quarter), row and token.
pub(super) fn partials_region(l: &Layout, m: i64) -> RegionNeed {
    RegionNeed {
        name: "partials",
        min_bytes: 4 * 4 * l.rows_per_task * m,
        what: "one fp32 sum per warp (K quarter), row and token",
        min_align: 4,
        ring: None,
    }
}

/// Checks the shapes (K a multiple of [`K_UNIT`], at most [`MAX_TOKENS`] tokens, at most
/// [`MAX_ACC_TILES`] row tiles times token tiles per task); derives the layout and the ring depth.
pub(super) fn bind(s: &Shapes<'_>) -> Bound {
    let (m, n, k) = linear_shapes(
        s,
        &Limits {
            k_unit: K_UNIT,
            k_unit_why: "four warps each take a quarter of K in chunks of 64 elements at least",
            k_unit_help: BF16_K_HELP,
            max_tokens: MAX_TOKENS,
            tokens_why: "the MMA GEMV's tokens are at most eight tiles of 8 (mma.sync's N)",
            tokens_help:
                "give a task at most 64 tokens; a pipeline linear takes 64 per tile too (examples/linear_bf16_m64.mpk)",
        },
    )?;
    let tasks = s.tasks().max(1);
    let ring_bytes = s.region_bytes("w_ring").unwrap_or(0);
    let l = layout(n, k, m, tasks, ring_bytes);
    tile_pairs_fit(s, &l, n, m, tasks, MAX_ACC_TILES)?;
    tasks_fit(s, tasks, l.rows_per_task, n)?;
    let ring_use = RingUse::new(slot_bytes(&l), l.chunks, MAX_RING);
    let ring = ring_use.slots(ring_bytes).max(2);
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
    constants.extend(tile_constants(&l));
    constants.extend([
        int_const(
            "kChunk",
            l.chunk,
            format!("elements of K per chunk: the longest of 256, 128, 64 that divides kK / 4 and leaves {MIN_SLOTS} slots of `w_ring` (or every chunk in flight)"),
        ),
        int_const(
            "kChunks",
            l.chunks,
            "chunks per warp: kK / 4 / kChunk",
        ),
        int_const(
            "kRing",
            ring,
            format!("chunks in the ring: the bytes of `w_ring` / (4 warps * kLines * kChunk * 2), at most {MAX_RING} and one more than a warp's chunks; kRing - 2 in flight while one computes"),
        ),
    ]);
    let regions = vec![ring_region(&l, ring_use), partials_region(&l, m)];
    Ok((
        constants,
        regions,
        include_str!("../../stdlib/bodies/gemv_mma.cu"),
        "stdlib/bodies/gemv_mma.cu",
    ))
}

#[cfg(test)]
// The mma.sync fragments are written per (lane, register) as the PTX ISA's tables give them:
// indexing by lane and register reads as those tables do.
#[allow(clippy::needless_range_loop)]
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
    fn chunks_of_the_decode_shapes() {
        let ring = 163840;
        // q_a [1536 x 7168] on 128 tasks at 16 tokens: 12 rows and 16 tokens a chunk; 512-byte
        // lines would leave 2 slots, 256-byte ones 5.
        let l = layout(1536, 7168, 16, 128, ring);
        assert_eq!(
            (l.rows_per_task, l.tiles, l.token_tiles, l.lines),
            (12, 1, 2, 28)
        );
        assert_eq!((l.chunk, l.chunks, slot_bytes(&l)), (128, 14, 28672));
        // At one token, 13 lines of 512 bytes: 6 slots.
        let l = layout(1536, 7168, 1, 128, ring);
        assert_eq!((l.chunk, l.chunks, l.token_tiles), (256, 7, 1));
        // o_proj [7168 x 2048] on 131 tasks: 55 rows, 4 tiles; only 128-byte lines leave 4 slots.
        let l = layout(7168, 2048, 16, 131, ring);
        assert_eq!((l.tiles, l.lines, l.chunk, l.chunks), (4, 71, 64, 8));
        // q_b [3072 x 1536]: a quarter of 384 is no multiple of 256; 3 chunks of 128 fit 4 slots.
        let l = layout(3072, 1536, 16, 128, ring);
        assert_eq!((l.tiles, l.chunk, l.chunks), (2, 128, 3));
        // lm_head per rank on 132 tasks: 123 rows; no chunk leaves 4 slots of 144 KB: 64.
        let l = layout(16160, 7168, 16, 132, 147456);
        assert_eq!((l.tiles, l.chunk, slot_bytes(&l)), (8, 64, 71168));
        // The router on 128 tasks at 4 tokens: 2 rows, 6 lines of 512 bytes.
        let l = layout(256, 7168, 4, 128, ring);
        assert_eq!((l.tiles, l.token_tiles, l.chunk, l.chunks), (1, 1, 256, 7));
        // q_b at 64 tokens: 24 rows (2 tiles) and 8 token tiles, the 16 pairs a lane may keep;
        // 88 lines of 128 bytes, three 45,056-byte slots of 160 KB.
        let l = layout(3072, 1536, 64, 128, ring);
        assert_eq!((l.tiles, l.token_tiles, l.lines, l.chunk), (2, 8, 88, 64));
        assert!(l.tiles * l.token_tiles <= MAX_ACC_TILES);
        assert_eq!(ring / slot_bytes(&l), 3);
    }

    /// The body's place of unit `unit` (16 bytes) of line `line` in a warp's slot.
    fn at(chunk: usize, line: usize, unit: usize) -> usize {
        line * chunk * 2 + ((unit ^ ((line & 1) << 2)) << 4)
    }

    /// The copies (`issue`: lane l takes unit l % (chunk / 8) of line i * (256 / chunk) + l /
    /// (chunk / 8)) put every unit of every line in a place of its own inside the line.
    #[test]
    fn the_copies_fill_each_line_once() {
        for chunk in CHUNKS.map(|c| c as usize) {
            let lanes_per_line = chunk / 8;
            let lines = 37;
            let mut seen = vec![0u8; lines * chunk * 2 / 16];
            for i in 0..lines.div_ceil(32 / lanes_per_line) {
                for lane in 0..32 {
                    let line = i * (32 / lanes_per_line) + lane / lanes_per_line;
                    if line < lines {
                        let place = at(chunk, line, lane % lanes_per_line);
                        assert_eq!(
                            place / (chunk * 2),
                            line,
                            "chunk {chunk}: a unit leaves its line"
                        );
                        seen[place / 16] += 1;
                    }
                }
            }
            assert!(seen.iter().all(|&n| n == 1), "chunk {chunk}: {seen:?}");
        }
    }

    /// The fragment loads (`compute`: lane (g, t) reads unit 4 b + t of line `base + g`) of the
    /// eight lanes of each shared-memory phase hit the 32 banks once each, for rows (base 16 i or
    /// 16 i + 8) and tokens (base kRowsPerTask + 8 j, either parity).
    #[test]
    fn the_fragment_loads_are_free_of_bank_conflicts() {
        for chunk in CHUNKS.map(|c| c as usize) {
            for base in [0, 8, 16, 55, 123] {
                for b in 0..chunk / 32 {
                    for phase in 0..4 {
                        let mut banks = [0u8; 8];
                        for lane in 8 * phase..8 * phase + 8 {
                            let (g, t) = (lane / 4, lane % 4);
                            banks[(at(chunk, base + g, 4 * b + t) / 16) % 8] += 1;
                        }
                        assert_eq!(
                            banks, [1; 8],
                            "chunk {chunk}, base {base}, k-block {b}, phase {phase}"
                        );
                    }
                }
            }
        }
    }
}
