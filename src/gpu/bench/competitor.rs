//! The competitor of a benchmark case: cuBLAS (bf16, with the residual as `beta = 1`) or
//! cuBLASLt (block-scaled fp8) on the case's shape, or why there is none.

use super::cublas::{self, Blas};
use super::cublaslt::{self, Fp8Plan, Lt};
use super::shape::{LinearEpilogue, LinearShape};

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
