//! The competitor: cuBLAS (loaded at run time through cudarc's dynamic loading, so nothing links
//! at build time) computing the same linear on the same device buffers:
//! `y[M, N] = x[M, K] · W[N, K]ᵀ (+ y)` with bf16 operands and output and f32 compute
//! (`cublasGemmEx`, `CUBLAS_COMPUTE_32F`), the default algorithm heuristics.

use cudarc::cublas::{result as blas, sys as bsys, CudaBlas};
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr};
use std::sync::Arc;

/// The competitor's name in the report.
pub const NAME: &str = "cublasGemmEx bf16 (f32 compute)";

/// Bytes of the workspace given to cuBLAS (so that graph capture allocates nothing).
const WORKSPACE: usize = 32 << 20;

/// Whether libcublas can be opened (else the competitor is reported absent, with why).
pub fn library() -> Result<(), String> {
    // SAFETY: only probes whether the shared library can be opened.
    if unsafe { bsys::is_culib_present() } {
        Ok(())
    } else {
        Err("libcublas cannot be opened: put the CUDA toolkit's lib64 (or PyTorch's nvidia/cublas/lib) on LD_LIBRARY_PATH".into())
    }
}

/// A cuBLAS handle on the bench stream, with its workspace.
pub struct Blas {
    blas: CudaBlas,
    _workspace: CudaSlice<u8>,
}

impl Blas {
    /// A handle bound to `stream`, with a fixed workspace. Errors: the library is absent, or
    /// cuBLAS refused.
    pub fn new(stream: &Arc<CudaStream>) -> Result<Blas, String> {
        library()?;
        let blas = CudaBlas::new(stream.clone()).map_err(|e| format!("cublasCreate: {e:?}"))?;
        // SAFETY: the workspace is only handed to cuBLAS.
        let ws = unsafe { stream.alloc::<u8>(WORKSPACE) }.map_err(|e| format!("{e:?}"))?;
        let p = {
            let (p, _g) = ws.device_ptr(stream);
            p
        };
        // SAFETY: the workspace outlives the handle (both in `Blas`).
        let r = unsafe { bsys::cublasSetWorkspace_v2(*blas.handle(), p as *mut _, WORKSPACE) };
        if r != bsys::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
            return Err(format!("cublasSetWorkspace: {r:?}"));
        }
        Ok(Blas {
            blas,
            _workspace: ws,
        })
    }

    /// Queues `y[m, n] = x[m, k] · W[n, k]ᵀ + beta · y` (bf16 row-major tensors at the given
    /// device addresses; f32 compute). In cuBLAS's column-major terms: `yᵀ (n × m) = op(W) · xᵀ`
    /// with W read transposed (`lda = k`), `ldb = k`, `ldc = n`.
    pub fn gemm_bf16(
        &self,
        w: u64,
        x: u64,
        y: u64,
        (n, k, m): (i64, i64, i64),
        beta: f32,
    ) -> Result<(), String> {
        let alpha = 1.0f32;
        let dt = bsys::cudaDataType::CUDA_R_16BF;
        // SAFETY: the addresses are live device buffers of the extents given; alpha and beta
        // are host f32 (the default pointer mode) read before the call returns.
        unsafe {
            blas::gemm_ex(
                *self.blas.handle(),
                bsys::cublasOperation_t::CUBLAS_OP_T,
                bsys::cublasOperation_t::CUBLAS_OP_N,
                n as i32,
                m as i32,
                k as i32,
                (&alpha as *const f32).cast(),
                w as *const _,
                dt,
                k as i32,
                x as *const _,
                dt,
                k as i32,
                (&beta as *const f32).cast(),
                y as *mut _,
                dt,
                n as i32,
                bsys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                bsys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        }
        .map_err(|e| format!("cublasGemmEx: {e:?}"))
    }
}
