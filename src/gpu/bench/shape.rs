//! What `mpkc bench` needs to know of a linear: its extents, operands, epilogue and tiles, read
//! through one accessor ([`linear_of`]) so that the day the pipeline's shape moves (issue 11:
//! `lower::LinearMath` of the role program) only that function changes; and the bytes a case
//! moves, from the contract's tensors (counted by [`crate::traffic`], which `mpkc roofline`
//! shares).

use crate::lower::{Epilogue, Operands};
pub use crate::traffic::{bytes_moved, tensor_bytes};
use crate::valid::CheckedTask;

/// The epilogue of a benched linear.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LinearEpilogue {
    /// `C = bf16(acc)`.
    Store,
    /// `C = bf16(bf16(acc) + R)`.
    Residual,
    /// f32 partials per K split, summed by the derived reduce task.
    SplitK,
    /// f32 partials per K split, summed into bf16 by each tile's last split (`split_k bf16`),
    /// or added into one f32 accumulator that the last split stores (`split_k atomic`).
    SplitKSum,
    /// e4m3 output with one f32 scale per token per 128 columns.
    QuantE4m3,
}

/// A linear `y[M, N] = x[M, K] · W[N, K]ᵀ` as `mpkc bench` sees it. Tensor positions are indices
/// into the task's inputs (`input_ptrs` order) and outputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinearShape {
    /// Output features (weight rows).
    pub n: i64,
    /// Reduction length.
    pub k: i64,
    /// Tokens (the contract's `m_real`).
    pub m: i64,
    /// K splits (1 unless split-K).
    pub splits: i64,
    /// Block-scaled fp8 operands (e4m3 with f32 scales per 128x128 weight block and per 1x128
    /// activation group); bf16 otherwise.
    pub fp8: bool,
    /// The epilogue.
    pub epilogue: LinearEpilogue,
    /// Tile rows (weight rows per task tile), tile tokens, tile depth (K per stage), stages.
    pub tile: [i64; 4],
    /// K iterations (stages' worth of K) per task.
    pub k_iters: i64,
    /// Input position of the weights `[N, K]`.
    pub w: usize,
    /// Input position of the activations `[M, K]`.
    pub x: usize,
    /// Input position of the residual `[M, N]`.
    pub residual: Option<usize>,
    /// Input positions of the weight and activation scales (fp8).
    pub scales: Option<(usize, usize)>,
    /// Output position of `y` (or of the partials, for split-K).
    pub y: usize,
}

/// The linear `task` computes, or `None` for a task that is not a pipeline linear.
///
/// The one place `mpkc bench` reads the pipeline's shape: the role programs' `compute`. A
/// linear over a row-strided view is not benched: the bench lays every operand out contiguous
/// (and cuBLAS's baseline with it), so its numbers would not be the kernel's.
pub fn linear_of(task: &CheckedTask) -> Option<LinearShape> {
    let Some(p) = task.linear() else {
        return gemv_of(task);
    };
    let ir = &task.ir;
    // A routed linear (`route`) multiplies each token by the experts its ids choose: its cuBLAS
    // equivalent is a grouped GEMM, not one `[M, K] x [N, K]^T`.
    if ir.tensors.values().any(|t| t.view.is_some()) || p.route.is_some() {
        return None;
    }
    let input = |h| ir.inputs().position(|(x, _)| x == h);
    let epilogue = match p.epilogue {
        Epilogue::StoreBf16 => LinearEpilogue::Store,
        Epilogue::ResidualAdd => LinearEpilogue::Residual,
        Epilogue::SplitKF32 => LinearEpilogue::SplitK,
        Epilogue::SplitKBf16 | Epilogue::SplitKAtomic => LinearEpilogue::SplitKSum,
        Epilogue::QuantE4m3 => LinearEpilogue::QuantE4m3,
    };
    let scales = match &p.operands {
        Operands::Fp8BlockScale {
            w_scale, a_scale, ..
        } => Some((input(*w_scale)?, input(*a_scale)?)),
        Operands::Bf16 => None,
    };
    Some(LinearShape {
        n: p.n,
        k: p.k,
        m: p.m_real,
        splits: p.splits,
        fp8: scales.is_some(),
        epilogue,
        tile: [p.block_m, p.block_n, p.block_k, p.stages],
        k_iters: p.k_iters,
        w: input(p.weights)?,
        x: input(p.acts)?,
        residual: match p.residual {
            Some(h) => Some(input(h)?),
            None => None,
        },
        scales,
        y: ir.outputs().position(|(h, _)| h == p.output)?,
    })
}

/// The consumer GEMVs (`body gemv(x, W -> y)`, src/templates/gemv.rs, `gemv_mma`, and
/// `gemv_fp8` and `gemv_mma_fp8` over block-scaled e4m3) as a linear with a store epilogue: the same `y = x W^T`,
/// timed against the same cuBLAS GEMM (cuBLASLt's fp8, or `torch._scaled_mm`, for `gemv_fp8`).
/// Their "tile" is the task's weight rows by the tokens by the whole K, one pass.
fn gemv_of(task: &CheckedTask) -> Option<LinearShape> {
    task.binding.as_ref().filter(|b| {
        matches!(
            b.sig.name,
            "gemv" | "gemv_mma" | "gemv_fp8" | "gemv_mma_fp8"
        )
    })?;
    let ir = &task.ir;
    if ir.tensors.values().any(|t| t.view.is_some()) {
        return None;
    }
    let input = |f| crate::gpu::reference::input_of(task, f);
    let (w, x) = (input("W")?, input("x")?);
    let (wt, xt) = (ir.inputs().nth(w)?.1, ir.inputs().nth(x)?.1);
    let (n, k, m) = (wt.dims[0], wt.dims[1], xt.dims[0]);
    // `gemv_fp8`'s block scales, as the fp8 pipeline linear's (W [N / 128, K / 128], x [M, K / 128]).
    let scales = match (input("W_scale"), input("x_scale")) {
        (Some(ws), Some(xs)) => Some((ws, xs)),
        _ => None,
    };
    // All give each task ceil(N / tasks) rows.
    let rows_per_task = crate::ir::exact::ceil_div(n, ir.granularity.tasks().max(1));
    Some(LinearShape {
        n,
        k,
        m,
        splits: 1,
        fp8: scales.is_some(),
        epilogue: LinearEpilogue::Store,
        tile: [rows_per_task, m, k, 1],
        k_iters: 1,
        w,
        x,
        residual: None,
        scales,
        y: crate::gpu::reference::output_of(task, "y")?,
    })
}

/// Bytes of the tensors a run rotates over copies so that each run reads them from DRAM: the
/// weights and, for fp8, their block scales.
pub fn rotated_bytes(task: &CheckedTask, s: &LinearShape) -> u64 {
    let mut at = vec![s.w];
    if let Some((ws, _)) = s.scales {
        at.push(ws);
    }
    task.ir
        .inputs()
        .enumerate()
        .filter(|(i, _)| at.contains(i))
        .map(|(_, (_, x))| tensor_bytes(&x.dims, x.dtype.bytes()))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stdlib_at(unit: &str, m: i64) -> CheckedTask {
        unit_at(crate::driver::stdlib::sources(), unit, m)
    }

    fn unit_at(sources: Vec<crate::driver::Source>, unit: &str, m: i64) -> CheckedTask {
        let checked = crate::driver::check_sources_with(
            &sources,
            |s| crate::sema::SemaOptions {
                overrides: crate::driver::token_overrides(s, m),
                instance: None,
                ..Default::default()
            },
            &Default::default(),
        );
        checked
            .into_iter()
            .flat_map(|c| c.tasks)
            .find(|t| t.ir.unit_name() == unit)
            .expect("stdlib unit")
    }

    #[test]
    fn the_house_linear_reads_as_7168_by_2048() {
        let t = stdlib_at("linear_sm100_v2", 16);
        let s = linear_of(&t).expect("a linear");
        assert_eq!((s.n, s.k, s.m, s.splits), (7168, 2048, 16, 1));
        assert_eq!(s.epilogue, LinearEpilogue::Store);
        assert!(!s.fp8);
        assert_eq!(s.tile, [128, 16, 128, 6]);
        assert_eq!(s.k_iters, 2048 / 128);
        // W [7168, 2048] bf16 + A [16, 2048] bf16 in, C [16, 7168] bf16 out.
        let bytes = bytes_moved(&[&t], &[vec![]], &[vec![]]);
        assert_eq!(bytes, 7168 * 2048 * 2 + 16 * 2048 * 2 + 16 * 7168 * 2);
        assert_eq!(rotated_bytes(&t, &s), 7168 * 2048 * 2);
    }

    #[test]
    fn fp8_counts_its_scales_and_m_follows_the_override() {
        let t = stdlib_at("linear_fp8_blockscale_o_proj", 1);
        let s = linear_of(&t).expect("a linear");
        assert!(s.fp8 && s.scales.is_some());
        assert_eq!(s.m, 1);
        let (n, k) = (7168u64, 2048u64);
        let want = n * k + k + 4 * (n / 128) * (k / 128) + 4 * (k / 128) + 2 * n;
        assert_eq!(bytes_moved(&[&t], &[vec![]], &[vec![]]), want);
        assert_eq!(rotated_bytes(&t, &s), n * k + 4 * (n / 128) * (k / 128));
    }

    #[test]
    fn linked_tensors_are_not_counted() {
        let t = stdlib_at("linear_sm100_v2", 1);
        let all = bytes_moved(&[&t], &[vec![]], &[vec![]]);
        let no_out = bytes_moved(&[&t], &[vec![]], &[vec![0]]);
        assert_eq!(all - no_out, 7168 * 2);
    }

    #[test]
    fn the_consumer_gemv_reads_as_its_linear() {
        let t = stdlib_at("linear_bf16_gemv_router", 1);
        let s = linear_of(&t).expect("a linear");
        assert_eq!((s.n, s.k, s.m, s.splits), (256, 7168, 1, 1));
        assert_eq!(s.epilogue, LinearEpilogue::Store);
        assert_eq!(s.tile, [2, 1, 7168, 1]);
        assert_eq!((s.x, s.w, s.y), (0, 1, 0));
        assert_eq!(rotated_bytes(&t, &s), 256 * 7168 * 2);
    }

    #[test]
    fn the_mma_gemv_reads_as_its_linear() {
        let path = "stdlib/linear_bf16_gemv_mma.mpk";
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/stdlib/linear_bf16_gemv_mma.mpk"
        ))
        .expect("the example");
        let src = crate::driver::Source {
            path: path.to_string(),
            text,
        };
        let t = unit_at(vec![src], "linear_bf16_gemv_mma_o_proj", 16);
        let s = linear_of(&t).expect("a linear");
        assert_eq!((s.n, s.k, s.m, s.splits), (7168, 2048, 16, 1));
        assert_eq!(s.tile, [55, 16, 2048, 1]);
        assert_eq!(rotated_bytes(&t, &s), 7168 * 2048 * 2);
    }

    #[test]
    fn a_consumer_task_is_not_a_linear() {
        let t = stdlib_at("rmsnorm_v2_h4096", 1);
        assert!(linear_of(&t).is_none());
    }
}
