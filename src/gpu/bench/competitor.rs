//! The competitor of a linear: cuBLAS (bf16, with the residual as `beta = 1`) or cuBLASLt
//! (block-scaled fp8) on the case's shape, or why there is none; its check against mpkc's
//! result on the same buffers and its timing ([`linear_side`]).

use super::case::{cpu_check, result_at, BenchCase, Options};
use super::cublas::{self, Blas};
use super::cublaslt::{self, Fp8Plan, Lt};
use super::report::{CaseReport, CheckInfo};
use super::setup::{sync, Setup};
use super::shape::{LinearEpilogue, LinearShape};
use super::stats;
use super::timing;
use crate::gpu::compare::compare;
use crate::gpu::data::HostTensor;
use crate::gpu::reference::{tolerance, Check, Expected};
use crate::gpu::{Gpu, GpuError};
use cudarc::driver::CudaStream;
use std::sync::Arc;

/// The competitor's median time per run (microseconds) and how it was taken (`graph`,
/// `stream`, `eager`).
pub(super) type Theirs = (f64, String);

/// The competitors' libraries, opened once per invocation (or why not).
pub struct Libraries {
    /// cuBLAS (bf16).
    pub blas: Result<Blas, String>,
    /// cuBLASLt (block-scaled fp8).
    pub lt: Result<Lt, String>,
}

/// The competitor of one case.
pub(super) enum Comp<'a> {
    /// `cublasGemmEx` with this beta (1 over the residual).
    Gemm(&'a Blas, f32),
    /// cuBLASLt's block-scaled fp8 matmul.
    Fp8(&'a Lt, Fp8Plan),
}

impl Comp<'_> {
    pub(super) fn name(&self) -> &'static str {
        match self {
            Comp::Gemm(..) => cublas::NAME,
            Comp::Fp8(..) => cublaslt::NAME,
        }
    }

    pub(super) fn short(&self) -> &'static str {
        match self {
            Comp::Gemm(..) => "cublas",
            Comp::Fp8(..) => "cublaslt",
        }
    }
}

/// The competitor of a linear of shape `sh` whose result is `y` (bf16 only), or why none.
pub(super) fn competitor<'a>(
    libs: &'a Libraries,
    sh: &LinearShape,
    y: crate::ir::Dtype,
) -> Result<Comp<'a>, String> {
    if sh.epilogue == LinearEpilogue::QuantE4m3 {
        return Err("an e4m3 output with per-128-column scales has no cuBLAS equivalent".into());
    }
    if y != crate::ir::Dtype::Bf16 {
        return Err(format!("the result is {y}, not bf16"));
    }
    if sh.fp8 {
        if sh.epilogue != LinearEpilogue::Store {
            return Err(
                "block-scaled fp8 with this epilogue: no cuBLASLt equivalent wired in".into(),
            );
        }
        let l = libs.lt.as_ref().map_err(Clone::clone)?;
        let plan = l
            .plan_fp8((sh.n, sh.k, sh.m))
            .map_err(|e| format!("cuBLASLt block-scaled fp8: {e}"))?;
        return Ok(Comp::Fp8(l, plan));
    }
    let b = libs.blas.as_ref().map_err(Clone::clone)?;
    let beta = if sh.epilogue == LinearEpilogue::Residual {
        1.0
    } else {
        0.0
    };
    Ok(Comp::Gemm(b, beta))
}

/// The competitor side of a linear case, after mpkc's check run left its `outputs`: the
/// competitor (named in `report`, or why none) runs once on weight copy 0 and mpkc's result is
/// checked against it; where it fails or disagrees, the float64 CPU reference says which side is
/// wrong (a wrong competitor is dropped, not timed). When mpkc's result passes, the competitor is
/// timed as the standalone method times mpkc (the weights rotated over `copies`). Returns the
/// check and the competitor's time.
#[allow(clippy::too_many_arguments)]
pub(super) fn linear_side(
    gpu: &Gpu,
    stream: &Arc<CudaStream>,
    libs: &Libraries,
    case: &BenchCase<'_>,
    sh: &LinearShape,
    s: &Setup,
    outputs: &[Vec<HostTensor>],
    copies: usize,
    opts: &Options,
    report: &mut CaseReport,
) -> Result<(CheckInfo, Option<Theirs>), GpuError> {
    let (rt, ro) = result_at(case);
    let y_tensor = s.outputs[rt][ro].clone();
    let mut comp = match competitor(libs, sh, y_tensor.dtype) {
        Ok(c) => {
            report.competitor = Some(c.name().to_string());
            Some(c)
        }
        // Block-scaled fp8 without a cuBLASLt kernel for it (sm_90), or split-K (whose reduce, or
        // in-task sum, writes the same bf16 y): PyTorch's `_scaled_mm` with per-tensor scales
        // instead.
        Err(why)
            if sh.fp8
                && matches!(
                    sh.epilogue,
                    LinearEpilogue::Store | LinearEpilogue::SplitK | LinearEpilogue::SplitKSum
                )
                && y_tensor.dtype == crate::ir::Dtype::Bf16 =>
        {
            return super::eager::fp8_side(case, sh, s, outputs, copies, opts, report, why);
        }
        Err(why) => {
            report.no_competitor = Some(why);
            None
        }
    };
    let comp_y = gpu.upload(&y_tensor.bytes)?;
    let comp_y_addr = gpu.addr(&comp_y);
    // The upload ran on the context's own stream: finish it before the bench stream reads it.
    gpu.context()
        .synchronize()
        .map_err(|e| GpuError::Kernel(format!("{e:?}")))?;
    let residual = sh.residual.map(|r| s.in_addr[0][r]);
    let x_addr = s.in_addr[0][sh.x];
    let x_scale = sh.scales.map_or(0, |(_, xs)| s.in_addr[0][xs]);
    let rotated_at = |copy: usize, pos: usize| {
        s.rotated[copy]
            .iter()
            .find(|(p, _)| *p == pos)
            .map_or(0, |(_, a)| *a)
    };
    let w_scale_pos = sh.scales.map(|(ws, _)| ws);
    let run_comp = |c: &Comp<'_>, copy: usize| -> Result<(), GpuError> {
        let w = rotated_at(copy, sh.w);
        match c {
            Comp::Gemm(b, beta) => b
                .gemm_bf16(w, x_addr, comp_y_addr, (sh.n, sh.k, sh.m), *beta)
                .map_err(|e| GpuError::Driver {
                    call: "cublasGemmEx",
                    error: e,
                }),
            Comp::Fp8(l, plan) => {
                let ws = w_scale_pos.map_or(0, |p| rotated_at(copy, p));
                l.matmul_fp8(plan, (w, ws), (x_addr, x_scale), comp_y_addr)
                    .map_err(|e| GpuError::Driver {
                        call: "cublasLtMatmul",
                        error: e,
                    })
            }
        }
    };
    let check = match &comp {
        Some(c) => {
            if let Some(r) = residual {
                // cuBLAS accumulates into y (beta = 1): start it from the residual.
                // SAFETY: both buffers are live and hold m x N bf16.
                timing::drv("cuMemcpyDtoDAsync", unsafe {
                    cudarc::driver::sys::cuMemcpyDtoDAsync_v2(
                        comp_y_addr,
                        r,
                        y_tensor.bytes.len(),
                        stream.cu_stream(),
                    )
                })?;
            }
            let against = match run_comp(c, 0).and_then(|()| sync(stream)) {
                Ok(()) => {
                    let mut theirs = y_tensor.clone();
                    theirs.bytes = gpu.download(&comp_y)?;
                    let exp = Expected {
                        output: ro,
                        values: (0..theirs.len()).map(|i| theirs.get(i)).collect(),
                        check: Check::RelL2(tolerance(y_tensor.dtype, sh.fp8)),
                    };
                    let r = compare(&case.name, &outputs[rt], &exp);
                    Ok(CheckInfo::of(c.short(), &r))
                }
                Err(e) => Err(e.to_string()),
            };
            match against {
                Ok(k) if k.pass => k,
                // The competitor failed or disagrees: the CPU reference says which side is wrong.
                other => {
                    let cpu = cpu_check(case, s, outputs)?;
                    if cpu.pass {
                        report.no_competitor = Some(match other {
                            Ok(k) => format!(
                                "{} disagrees with mpkc and the CPU reference ({} {:.2e} >= {:.0e}): not timed",
                                c.short(),
                                k.metric,
                                k.error,
                                k.tol
                            ),
                            Err(e) => format!("{} failed: {e}", c.short()),
                        });
                        report.competitor = None;
                        comp = None;
                    }
                    cpu
                }
            }
        }
        None => cpu_check(case, s, outputs)?,
    };
    let (Some(c), true) = (&comp, check.pass) else {
        return Ok((check, None));
    };
    let ctx = gpu.context().clone();
    let (samples, how) = timing::time_series(&ctx, stream, opts.plan, &mut || Ok(()), &mut |i| {
        run_comp(c, i % copies)
    })?;
    let theirs = stats::median(&samples).map(|m| (m, how.as_str().to_string()));
    Ok((check, theirs))
}
