//! The CUDA driver through cudarc (dynamic loading: mpkc builds and runs where no CUDA is
//! installed, and says so when `verify` needs it): device discovery, cubin loading, buffers,
//! TMA tensor maps (`cuTensorMapEncodeTiled`), and the harness launch.

use super::abi::{DevPtr, WorkerArgs};
use cudarc::driver::sys;
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr, LaunchConfig,
    PushKernelArg,
};
use std::sync::Arc;

/// Why the GPU path cannot run or failed.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    /// No libcuda on this machine (exit 4).
    #[error("no CUDA driver (libcuda) on this machine: run `mpkc verify` where an NVIDIA driver and GPU are present")]
    NoDriver,
    /// A driver, but no usable device (exit 4).
    #[error("no CUDA device: {0}")]
    NoDevice(String),
    /// A driver call failed outside the kernel under test (exit 3).
    #[error("CUDA driver call `{call}` failed: {error}")]
    Driver {
        /// What was called.
        call: &'static str,
        /// The driver's error.
        error: String,
    },
    /// The kernel under test faulted or trapped (a verification failure, exit 1).
    #[error("the kernel failed: {0}")]
    Kernel(String),
    /// The contract's Python reference could not run or gave outputs the contract does not
    /// declare (a verification failure, exit 1: nothing checked the kernel).
    #[error("{0}")]
    Reference(String),
}

fn driver<T>(call: &'static str, r: Result<T, cudarc::driver::DriverError>) -> Result<T, GpuError> {
    r.map_err(|e| GpuError::Driver {
        call,
        error: format!("{e:?}"),
    })
}

/// One GPU, its context and stream.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    /// Device name.
    pub name: String,
    /// Compute capability (major, minor).
    pub cc: (i32, i32),
    /// Streaming multiprocessors.
    pub sms: i32,
}

/// A loaded harness kernel.
pub struct Kernel {
    _module: Arc<CudaModule>,
    func: CudaFunction,
}

impl Gpu {
    /// Opens device 0, or says why not.
    pub fn open() -> Result<Gpu, GpuError> {
        Gpu::open_ordinal(0)
    }

    /// The number of CUDA devices the driver shows this process (after `CUDA_VISIBLE_DEVICES`),
    /// or why there are none.
    pub fn count() -> Result<usize, GpuError> {
        // SAFETY: only probes whether the shared library can be opened.
        if !unsafe { sys::is_culib_present() } {
            return Err(GpuError::NoDriver);
        }
        let count =
            CudaContext::device_count().map_err(|e| GpuError::NoDevice(format!("{e:?}")))?;
        if count < 1 {
            return Err(GpuError::NoDevice("the driver reports no devices".into()));
        }
        Ok(count as usize)
    }

    /// Opens device `ordinal` (0-based, among the devices this process sees), or says why not.
    pub fn open_ordinal(ordinal: usize) -> Result<Gpu, GpuError> {
        let count = Gpu::count()?;
        if ordinal >= count {
            return Err(GpuError::NoDevice(format!(
                "device {ordinal} asked for, the driver shows {count} (0..={})",
                count - 1
            )));
        }
        let ctx = CudaContext::new(ordinal).map_err(|e| GpuError::NoDevice(format!("{e:?}")))?;
        // One stream, ordered work: no per-buffer event tracking.
        // SAFETY: called before any buffer is allocated.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.default_stream();
        let name = driver("cuDeviceGetName", ctx.name())?;
        let cc = driver("cuDeviceGetAttribute", ctx.compute_capability())?;
        let sms = driver(
            "cuDeviceGetAttribute",
            ctx.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
        )?;
        Ok(Gpu {
            ctx,
            stream,
            name,
            cc,
            sms,
        })
    }

    /// Loads `entry` from a cubin and lets it use `dynamic_smem` bytes of dynamic shared memory.
    pub fn load(&self, cubin: &[u8], entry: &str, dynamic_smem: u32) -> Result<Kernel, GpuError> {
        let module = driver(
            "cuModuleLoadData",
            self.ctx
                .load_module(cudarc::nvrtc::Ptx::from_binary(cubin.to_vec())),
        )?;
        let func = driver("cuModuleGetFunction", module.load_function(entry))?;
        driver(
            "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)",
            func.set_attribute(
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                dynamic_smem as i32,
            ),
        )?;
        Ok(Kernel {
            _module: module,
            func,
        })
    }

    /// Copies `bytes` to a new device buffer.
    pub fn upload(&self, bytes: &[u8]) -> Result<CudaSlice<u8>, GpuError> {
        let data = if bytes.is_empty() {
            vec![0u8; 16]
        } else {
            bytes.to_vec()
        };
        driver("cuMemcpyHtoD", self.stream.clone_htod(&data))
    }

    /// Copies `bytes` into `buf` (its first `bytes.len()` bytes; `buf` is at least that long).
    pub fn write(&self, buf: &mut CudaSlice<u8>, bytes: &[u8]) -> Result<(), GpuError> {
        if bytes.len() > buf.len() {
            return Err(GpuError::Kernel(format!(
                "write of {} bytes into a buffer of {}",
                bytes.len(),
                buf.len()
            )));
        }
        driver("cuMemcpyHtoD", self.stream.memcpy_htod(bytes, buf))
    }

    /// The device address of `buf`.
    pub fn addr(&self, buf: &CudaSlice<u8>) -> DevPtr {
        let (p, _guard) = buf.device_ptr(&self.stream);
        p
    }

    /// Copies `buf` back.
    pub fn download(&self, buf: &CudaSlice<u8>) -> Result<Vec<u8>, GpuError> {
        self.stream
            .clone_dtoh(buf)
            .map_err(|e| GpuError::Kernel(format!("{e:?}")))
    }

    /// The CUDA context (`mpkc bench` makes its own streams, events and graphs in it).
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// Queues a launch of the harness with `grid` CTAs of 256 threads on `stream`, without
    /// waiting (a stream being captured records it into its graph). A launch the driver refuses
    /// is `GpuError::Kernel`.
    pub fn launch_on(
        &self,
        stream: &Arc<CudaStream>,
        k: &Kernel,
        grid: u32,
        dynamic_smem: u32,
        args: &WorkerArgs,
    ) -> Result<(), GpuError> {
        let cfg = LaunchConfig {
            grid_dim: (grid, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: dynamic_smem,
        };
        let mut b = stream.launch_builder(&k.func);
        b.arg(args);
        // SAFETY: the harness takes one WorkerArgs by value; every address in it is live.
        unsafe { b.launch(cfg) }
            .map(|_| ())
            .map_err(|e| GpuError::Kernel(format!("launch: {e:?}")))
    }

    /// Launches the harness with `grid` CTAs of 256 threads and waits for it; a fault or trap in
    /// the kernel is `GpuError::Kernel`.
    pub fn run(
        &self,
        k: &Kernel,
        grid: u32,
        dynamic_smem: u32,
        args: &WorkerArgs,
    ) -> Result<(), GpuError> {
        self.launch_on(&self.stream, k, grid, dynamic_smem, args)?;
        self.stream
            .synchronize()
            .map_err(|e| GpuError::Kernel(format!("{e:?}")))
    }
}

impl Kernel {
    /// Runs `entry`, another kernel of the same module taking no argument, as one thread on
    /// `stream`, and waits for it.
    pub fn run_sibling(&self, entry: &str, stream: &Arc<CudaStream>) -> Result<(), GpuError> {
        let f = driver("cuModuleGetFunction", self._module.load_function(entry))?;
        let cfg = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (1, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = stream.launch_builder(&f);
        // SAFETY: the kernel takes no argument.
        unsafe { b.launch(cfg) }.map_err(|e| GpuError::Kernel(format!("launch {entry}: {e:?}")))?;
        stream
            .synchronize()
            .map_err(|e| GpuError::Kernel(format!("{entry}: {e:?}")))
    }

    /// The device address and size in bytes of the kernel module's global `name` (a
    /// `__device__` variable), or the driver's error.
    pub fn global(
        &self,
        name: &str,
        stream: &Arc<CudaStream>,
    ) -> Result<(DevPtr, usize), GpuError> {
        let view = driver("cuModuleGetGlobal", self._module.get_global(name, stream))?;
        let (p, _guard) = view.device_ptr(stream);
        Ok((p, view.len()))
    }
}

/// What a TMA tensor map describes: a rank-3 "row-chunked" view of a 2-D `[rows, cols]` tensor
/// (contract doc §7.4): dims `{box0, rows, cols / box0}`, strides `{cols·elem, box0·elem}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TmaView {
    /// Element type for the driver.
    pub dtype: sys::CUtensorMapDataType,
    /// Bytes per element.
    pub elem_bytes: u64,
    /// Rows of the tensor.
    pub rows: u64,
    /// Columns (contiguous).
    pub cols: u64,
    /// Elements from one row to the next: `cols`, or a view's stride.
    pub row_stride: u64,
    /// Box extents, innermost first (3).
    pub box_dims: [u32; 3],
}

/// Encodes the tensor map of `view` over the tensor at `base`: 128-byte swizzle, L2 promotion of
/// 128 B, no OOB fill (zeros past the extents), as MPK's `fill_tma_desc_by_task`.
pub fn encode_tensor_map(view: &TmaView, base: DevPtr) -> Result<[u8; 128], GpuError> {
    let b0 = u64::from(view.box_dims[0]);
    let dims: [u64; 3] = [b0, view.rows, view.cols / b0.max(1)];
    let strides: [u64; 2] = [view.row_stride * view.elem_bytes, b0 * view.elem_bytes];
    let elem_strides: [u32; 3] = [1, 1, 1];
    let mut map = sys::CUtensorMap { opaque: [0; 16] };
    // SAFETY: every array has the length the rank (3) asks for; `base` is a live device address.
    let r = unsafe {
        sys::cuTensorMapEncodeTiled(
            &mut map,
            view.dtype,
            3,
            base as *mut std::ffi::c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            view.box_dims.as_ptr(),
            elem_strides.as_ptr(),
            sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
            sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
            sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    };
    if r != sys::CUresult::CUDA_SUCCESS {
        return Err(GpuError::Driver {
            call: "cuTensorMapEncodeTiled",
            error: format!("{r:?} for {view:?}"),
        });
    }
    let mut out = [0u8; 128];
    for (i, w) in map.opaque.iter().enumerate() {
        out[8 * i..8 * i + 8].copy_from_slice(&w.to_le_bytes());
    }
    Ok(out)
}
