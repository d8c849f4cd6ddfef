//! The fp8 competitor: cuBLASLt's block-scaled e4m3 matmul (cuBLAS 12.9 and later on sm_90),
//! loaded at run time through cudarc: `y[M, N] = (W ⊙ s_W) · (x ⊙ s_x)ᵀ` with one f32 scale per
//! 128x128 weight block (`CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F` on A) and one per 1x128
//! activation group (`VEC128_32F` on B), bf16 out, f32 compute — DeepSeek-V3's quantization, the
//! one mpkc's `linear_fp8_blockscale` contracts take, on the same device buffers.
//!
//! The scale tensors are passed as the contracts lay them out: weights `[N/128, K/128]` and
//! activations `[M, K/128]`, both row-major (the activation layout is the column-major
//! `[K/128, M]` tensor cuBLASLt reads for B). The check before timing compares the two results;
//! a competitor that disagrees is reported, not timed.

use cudarc::cublaslt::sys as lt;
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr};
use std::ffi::c_void;
use std::sync::Arc;

/// The competitor's name in the report.
pub const NAME: &str =
    "cublasLtMatmul fp8 e4m3 block-scaled (128x128 weights, 1x128 activations; bf16 out, f32 compute)";

/// Bytes of the workspace (NVIDIA's recommendation for Hopper).
const WORKSPACE: usize = 32 << 20;

fn ok(call: &str, s: lt::cublasStatus_t) -> Result<(), String> {
    if s == lt::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(format!("{call}: {s:?}"))
    }
}

/// Whether libcublasLt can be opened.
pub fn library() -> Result<(), String> {
    // SAFETY: only probes whether the shared library can be opened.
    if unsafe { lt::is_culib_present() } {
        Ok(())
    } else {
        Err("libcublasLt cannot be opened: put the CUDA toolkit's lib64 (or PyTorch's nvidia/cublas/lib) on LD_LIBRARY_PATH".into())
    }
}

/// A cuBLASLt handle with its workspace, on the bench stream.
pub struct Lt {
    handle: lt::cublasLtHandle_t,
    workspace: CudaSlice<u8>,
    stream: Arc<CudaStream>,
}

impl Drop for Lt {
    fn drop(&mut self) {
        // SAFETY: created by cublasLtCreate, destroyed once.
        let _ = unsafe { lt::cublasLtDestroy(self.handle) };
    }
}

/// The descriptors and the algorithm of one fp8 shape.
pub struct Fp8Plan {
    desc: lt::cublasLtMatmulDesc_t,
    a: lt::cublasLtMatrixLayout_t,
    b: lt::cublasLtMatrixLayout_t,
    d: lt::cublasLtMatrixLayout_t,
    algo: lt::cublasLtMatmulAlgo_t,
}

impl Drop for Fp8Plan {
    fn drop(&mut self) {
        // SAFETY: each was created once by the plan and is destroyed once.
        unsafe {
            let _ = lt::cublasLtMatrixLayoutDestroy(self.a);
            let _ = lt::cublasLtMatrixLayoutDestroy(self.b);
            let _ = lt::cublasLtMatrixLayoutDestroy(self.d);
            let _ = lt::cublasLtMatmulDescDestroy(self.desc);
        }
    }
}

fn set<T>(
    desc: lt::cublasLtMatmulDesc_t,
    attr: lt::cublasLtMatmulDescAttributes_t,
    v: &T,
) -> Result<(), String> {
    // SAFETY: `v` is a live value of the size passed, read before the call returns.
    ok("cublasLtMatmulDescSetAttribute", unsafe {
        lt::cublasLtMatmulDescSetAttribute(
            desc,
            attr,
            (v as *const T).cast(),
            std::mem::size_of::<T>(),
        )
    })
}

fn layout(
    dt: lt::cudaDataType,
    rows: i64,
    cols: i64,
    ld: i64,
) -> Result<lt::cublasLtMatrixLayout_t, String> {
    let mut l: lt::cublasLtMatrixLayout_t = std::ptr::null_mut();
    // SAFETY: `l` receives a new layout owned by the caller.
    ok("cublasLtMatrixLayoutCreate", unsafe {
        lt::cublasLtMatrixLayoutCreate(&mut l, dt, rows as u64, cols as u64, ld)
    })?;
    Ok(l)
}

impl Lt {
    /// A handle on `stream` with a 32 MiB workspace. Errors: the library is absent, or refused.
    pub fn new(stream: &Arc<CudaStream>) -> Result<Lt, String> {
        library()?;
        let mut handle: lt::cublasLtHandle_t = std::ptr::null_mut();
        // SAFETY: `handle` receives a new handle, destroyed by Drop.
        ok("cublasLtCreate", unsafe { lt::cublasLtCreate(&mut handle) })?;
        // SAFETY: the workspace is only handed to cuBLASLt.
        let workspace = match unsafe { stream.alloc::<u8>(WORKSPACE) } {
            Ok(w) => w,
            Err(e) => {
                // SAFETY: created just above.
                let _ = unsafe { lt::cublasLtDestroy(handle) };
                return Err(format!("{e:?}"));
            }
        };
        Ok(Lt {
            handle,
            workspace,
            stream: stream.clone(),
        })
    }

    /// The descriptors of `y[m, n] = x[m, k] · W[n, k]ᵀ` in block-scaled e4m3 and the algorithm
    /// cuBLASLt's heuristic picks for it, or why there is none (a cuBLAS before 12.9, a shape
    /// it refuses).
    pub fn plan_fp8(&self, (n, k, m): (i64, i64, i64)) -> Result<Fp8Plan, String> {
        let mut desc: lt::cublasLtMatmulDesc_t = std::ptr::null_mut();
        // SAFETY: `desc` receives a new descriptor, owned by the plan.
        ok("cublasLtMatmulDescCreate", unsafe {
            lt::cublasLtMatmulDescCreate(
                &mut desc,
                lt::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                lt::cudaDataType::CUDA_R_32F,
            )
        })?;
        let mut plan = Fp8Plan {
            desc,
            a: std::ptr::null_mut(),
            b: std::ptr::null_mut(),
            d: std::ptr::null_mut(),
            // SAFETY: plain data, overwritten by the heuristic's answer.
            algo: unsafe { std::mem::zeroed() },
        };
        use lt::cublasLtMatmulDescAttributes_t as A;
        // cublasOperation_t: 1 = T (W read transposed), 0 = N.
        set(desc, A::CUBLASLT_MATMUL_DESC_TRANSA, &1i32)?;
        set(desc, A::CUBLASLT_MATMUL_DESC_TRANSB, &0i32)?;
        let blk =
            lt::cublasLtMatmulMatrixScale_t::CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F as i32;
        let vec = lt::cublasLtMatmulMatrixScale_t::CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F as i32;
        set(desc, A::CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &blk)?;
        set(desc, A::CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &vec)?;
        plan.a = layout(lt::cudaDataType::CUDA_R_8F_E4M3, k, n, k)?;
        plan.b = layout(lt::cudaDataType::CUDA_R_8F_E4M3, k, m, k)?;
        plan.d = layout(lt::cudaDataType::CUDA_R_16BF, n, m, n)?;
        let mut pref: lt::cublasLtMatmulPreference_t = std::ptr::null_mut();
        // SAFETY: `pref` receives a new preference, destroyed below.
        ok("cublasLtMatmulPreferenceCreate", unsafe {
            lt::cublasLtMatmulPreferenceCreate(&mut pref)
        })?;
        let ws = WORKSPACE;
        // SAFETY: `ws` is a live usize.
        let r = ok("cublasLtMatmulPreferenceSetAttribute", unsafe {
            lt::cublasLtMatmulPreferenceSetAttribute(
                pref,
                lt::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                (&ws as *const usize).cast(),
                std::mem::size_of::<usize>(),
            )
        });
        // SAFETY: plain data written by the heuristic.
        let mut heur: lt::cublasLtMatmulHeuristicResult_t = unsafe { std::mem::zeroed() };
        let mut found = 0i32;
        let h = r.and_then(|()| {
            // SAFETY: every descriptor is live; one result is asked for and there is room for one.
            ok("cublasLtMatmulAlgoGetHeuristic", unsafe {
                lt::cublasLtMatmulAlgoGetHeuristic(
                    self.handle,
                    plan.desc,
                    plan.a,
                    plan.b,
                    plan.d,
                    plan.d,
                    pref,
                    1,
                    &mut heur,
                    &mut found,
                )
            })
        });
        // SAFETY: created above, destroyed once.
        let _ = unsafe { lt::cublasLtMatmulPreferenceDestroy(pref) };
        h?;
        if found < 1 {
            return Err("cuBLASLt has no algorithm for this block-scaled fp8 shape".into());
        }
        plan.algo = heur.algo;
        Ok(plan)
    }

    /// Queues the block-scaled matmul of `plan` on the tensors at the given device addresses:
    /// weights `[n, k]` e4m3 and their scales, activations `[m, k]` e4m3 and theirs, `y [m, n]`
    /// bf16 (overwritten).
    pub fn matmul_fp8(
        &self,
        plan: &Fp8Plan,
        (w, w_scale): (u64, u64),
        (x, x_scale): (u64, u64),
        y: u64,
    ) -> Result<(), String> {
        use lt::cublasLtMatmulDescAttributes_t as A;
        set(
            plan.desc,
            A::CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
            &(w_scale as *const c_void),
        )?;
        set(
            plan.desc,
            A::CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
            &(x_scale as *const c_void),
        )?;
        let (alpha, beta) = (1.0f32, 0.0f32);
        let ws = {
            let (p, _g) = self.workspace.device_ptr(&self.stream);
            p
        };
        // SAFETY: every address is a live device buffer of the extents `plan` was made for; the
        // workspace outlives the call (it lives in `self`).
        ok("cublasLtMatmul", unsafe {
            lt::cublasLtMatmul(
                self.handle,
                plan.desc,
                (&alpha as *const f32).cast(),
                w as *const c_void,
                plan.a,
                x as *const c_void,
                plan.b,
                (&beta as *const f32).cast(),
                y as *const c_void,
                plan.d,
                y as *mut c_void,
                plan.d,
                &plan.algo,
                ws as *mut c_void,
                WORKSPACE,
                self.stream.cu_stream() as lt::cudaStream_t,
            )
        })
    }
}
