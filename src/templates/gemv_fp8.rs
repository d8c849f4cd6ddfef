//! `gemv_fp8(x, x_scale, W, W_scale -> y)`: the consumer GEMV of [`super::gemv`] over DeepSeek-V3's
//! block-scaled fp8 operands: y[m, n] = Σ_k (x[m, k] · x_scale[m, k / 128]) · (W[n, k] ·
//! W_scale[n / 128, k / 128]) in fp32, bf16 out; `x` and `W` e4m3, their scales f32 (one per 1x128
//! activation group and per 128x128 weight block, as `stdlib/linear_fp8_blockscale.mpk`'s).
//!
//! The layout is the bf16 GEMV's over bytes: a lane's 16-byte vector is 16 e4m3 of a row (K
//! offsets `lane * 16 + 512 * c`, a warp instruction 512 contiguous bytes), so the chunks, groups,
//! ring and warp layout ([`super::gemv::layout`]) are those of a bf16 row of K / 2 elements. `x`
//! is staged as f16 times 2^-6 with its 1x128 scales beside it in f32 (`x_rows`, 2 · m · K +
//! 4 · m · K / 128 bytes; e4m3 · 2^-6 is an f16 value, so the staging is exact); the weight
//! scales of the row blocks a task's rows touch are staged in `w_scales`. Each vector's 16
//! products are formed and summed in f16x2 (HFMA2: each product exact, at most 3136, a vector's
//! sum per half at most 25088, below f16's 65504 for any e4m3 data), widened to f32 and multiplied
//! by the two scales of its 128-column block. An e4m3 pair is one conversion (F2FP) where the
//! f32 form took three: about half the instructions per weight byte. Half the weight bytes of the
//! bf16 GEMV for the same N x K.

use super::gemv::{
    layout, linear_shapes, partials_region, ring_region, ring_use, tasks_fit, warp_constants,
    Bound, Layout, Limits,
};
use super::{int_const, Access, Formal, RegionNeed, Shapes, Signature};
use crate::diag::Diagnostic;
use crate::ir::exact::ceil_div;
use crate::ir::Dtype;

/// The formals: `x` e4m3 [m, K] and its scales `x_scale` f32 [m, K / 128] (written in the launch,
/// by the quantizing norm), `W` e4m3 [N, K] and its block scales `W_scale` f32 [ceil(N / 128),
/// K / 128] (weights).
const INPUTS: &[Formal] = &[
    Formal {
        name: "x",
        dtypes: &[Dtype::E4m3],
        rank: 2,
        access: Access::Activation,
    },
    Formal {
        name: "x_scale",
        dtypes: &[Dtype::F32],
        rank: 2,
        access: Access::Activation,
    },
    Formal {
        name: "W",
        dtypes: &[Dtype::E4m3],
        rank: 2,
        access: Access::Weight,
    },
    Formal {
        name: "W_scale",
        dtypes: &[Dtype::F32],
        rank: 2,
        access: Access::Weight,
    },
];

/// The signature (its output is the bf16 GEMV's `y` [m, N]).
pub const SIG: Signature = Signature {
    name: "gemv_fp8",
    inputs: INPUTS,
    outputs: super::gemv::OUTPUTS,
    scalars: &[],
    positive: &[],
    at_most: &[],
    needs_barrier: true,
    strided: &[],
    in_place: &[],
    // The accumulators are a register array per token: the token count is a compile-time one.
    token_rows: &[],
    summary: "y = x W^T for few tokens over block-scaled e4m3 operands without tensor cores (consumer GEMV), f16x2 products per 16 columns, fp32 accumulation",
};

/// Elements (bytes) of K one warp load instruction covers: 32 lanes × one 16-byte vector (16 e4m3).
pub const K_PER_WARP_LOAD: i64 = 32 * 16;

/// Columns per scale block, along K and along N (DeepSeek-V3's 1x128 and 128x128 blocks).
pub const SCALE_BLOCK: i64 = 128;

/// Tokens at most: an f32 accumulator per token and lane in registers, beside a vector's 8
/// decoded weight pairs and each token's two 16-byte x loads.
pub const MAX_TOKENS: i64 = 8;

/// Row blocks of 128 that `rows` consecutive weight rows starting anywhere can touch.
pub fn scale_row_blocks(rows: i64) -> i64 {
    1 + ceil_div((rows - 1).max(0), SCALE_BLOCK)
}

/// The layout of `tasks` tasks over e4m3 `W` [`n`, `k`] (`k` a positive multiple of
/// [`K_PER_WARP_LOAD`]): the bf16 GEMV's over a row of `k / 2` elements, the same bytes.
pub fn fp8_layout(n: i64, k: i64, tasks: i64) -> Layout {
    layout(n, k / 2, tasks)
}

/// The scales' shapes (`E0009`): `x_scale` [m, K / 128] (a scale per token and 128 columns) and
/// `W_scale` [ceil(N / 128), K / 128] (a scale per 128 x 128 block), for both fp8 GEMVs.
pub(super) fn check_scales(s: &Shapes<'_>, m: i64, n: i64, k: i64) -> Result<(), Vec<Diagnostic>> {
    let kb = k / SCALE_BLOCK;
    let mut errs = Vec::new();
    let want = [
        (
            "x_scale",
            vec![m, kb],
            "a scale per token and 128 columns of `x`",
        ),
        (
            "W_scale",
            vec![ceil_div(n, SCALE_BLOCK), kb],
            "a scale per 128 x 128 block of `W`",
        ),
    ];
    for (f, dims, what) in want {
        if s.dims(f) != dims.as_slice() {
            errs.push(s.error(
                f,
                format!(
                    "`{}` must be {dims:?} ({what}), but it is {:?}",
                    s.tensor_name(f),
                    s.dims(f)
                ),
                format!("declare `{}` as {dims:?}", s.tensor_name(f)),
            ));
        }
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs)
    }
}

/// Checks the shapes (the bf16 GEMV's relations, K a multiple of 512, at most [`MAX_TOKENS`]
/// tokens, the scales' shapes); derives the warp layout, the ring depth and the regions.
pub(super) fn bind(s: &Shapes<'_>) -> Bound {
    let (m, n, k) = linear_shapes(
        s,
        &Limits {
            k_unit: K_PER_WARP_LOAD,
            k_unit_why: "a warp's 32 lanes each load 16 bytes, 16 e4m3, of a row",
            k_unit_help: "use a K that is a multiple of 512, or the fp8 pipeline linear (stdlib/linear_fp8_splitk_sum.mpk)",
            max_tokens: MAX_TOKENS,
            tokens_why: "the fp8 GEMV keeps an f32 accumulator and two 16-byte x loads per token in registers",
            tokens_help: "at that many tokens the tensor cores pay: use the fp8 pipeline linear (stdlib/linear_fp8_splitk_sum.mpk)",
        },
    )?;
    check_scales(s, m, n, k)?;
    let kb = k / SCALE_BLOCK;
    let tasks = s.tasks().max(1);
    let l = fp8_layout(n, k, tasks);
    tasks_fit(s, tasks, l.rows_per_task, n)?;
    let ring_use = ring_use(&l);
    let ring = ring_use.slots(s.region_bytes("w_ring").unwrap_or(0)).max(2);
    let blocks = scale_row_blocks(l.rows_per_task);
    let (xn, wn, yn) = (s.tensor_name("x"), s.tensor_name("W"), s.tensor_name("y"));
    let mut constants = vec![
        int_const("kRows", m, format!("tokens: rows of `{xn}` and `{yn}`")),
        int_const("kN", n, format!("rows of `{wn}`, columns of `{yn}`")),
        int_const("kK", k, format!("columns of `{xn}` and `{wn}` (bytes of a row)")),
        int_const(
            "kKBlocks",
            kb,
            "scale blocks along K: kK / 128",
        ),
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
    constants.extend(warp_constants(&l, ring, K_PER_WARP_LOAD));
    let regions = vec![
        ring_region(&l, ring_use),
        RegionNeed {
            name: "x_rows",
            min_bytes: 2 * m * k + 4 * m * kb,
            what: "the activation rows in f16 (times 2^-6) and their scales in f32",
            min_align: 16,
            ring: None,
        },
        RegionNeed {
            name: "w_scales",
            min_bytes: 4 * blocks * kb,
            what: "the weight scales of the row blocks a task's rows touch",
            min_align: 4,
            ring: None,
        },
        partials_region(&l, m),
    ];
    Ok((
        constants,
        regions,
        include_str!("../../stdlib/bodies/gemv_fp8.cu"),
        "stdlib/bodies/gemv_fp8.cu",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_is_the_bf16_one_over_bytes() {
        // qkv_a [2176 x 7168] e4m3 on 128 tasks: 17 rows, 7168 bytes a row, 14 vectors per lane.
        let l = fp8_layout(2176, 7168, 128);
        assert_eq!((l.rows_per_task, l.row_warps, l.k_groups), (17, 4, 1));
        assert_eq!((l.chunks, l.group), (14, 7));
        // The same bytes in bf16 (K 3584): the same layout.
        assert_eq!(l, layout(2176, 3584, 128));
    }

    #[test]
    fn scale_blocks_a_task_can_touch() {
        assert_eq!(scale_row_blocks(1), 1);
        assert_eq!(scale_row_blocks(17), 2);
        assert_eq!(scale_row_blocks(128), 2);
        assert_eq!(scale_row_blocks(129), 2);
        assert_eq!(scale_row_blocks(130), 3);
    }
}
