//! Timing on the device: CUDA events around CUDA-graph replays of back-to-back runs (or plain
//! back-to-back launches where a graph cannot be captured, and said so), the `%globaltimer`
//! stamps of the persistent method, and the copy ceiling (a device-to-device copy).

use crate::gpu::GpuError;
use cudarc::driver::sys;
use cudarc::driver::{CudaContext, CudaEvent, CudaStream};
use std::sync::Arc;

/// How a series was timed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timing {
    /// CUDA-graph replay of the runs.
    Graph,
    /// Plain back-to-back launches on the stream (the graph could not be captured).
    Stream,
}

impl Timing {
    /// `graph` or `stream`.
    pub fn as_str(self) -> &'static str {
        match self {
            Timing::Graph => "graph",
            Timing::Stream => "stream",
        }
    }
}

/// A failed driver call, named.
pub fn drv(call: &'static str, r: sys::CUresult) -> Result<(), GpuError> {
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(GpuError::Driver {
            call,
            error: format!("{r:?}"),
        })
    }
}

fn wrap<T>(call: &'static str, r: Result<T, cudarc::driver::DriverError>) -> Result<T, GpuError> {
    r.map_err(|e| GpuError::Driver {
        call,
        error: format!("{e:?}"),
    })
}

/// Two timing events.
pub struct Events {
    start: CudaEvent,
    end: CudaEvent,
}

impl Events {
    /// Timing-enabled events in `ctx`.
    pub fn new(ctx: &Arc<CudaContext>) -> Result<Events, GpuError> {
        let flag = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        Ok(Events {
            start: wrap("cuEventCreate", ctx.new_event(flag))?,
            end: wrap("cuEventCreate", ctx.new_event(flag))?,
        })
    }

    /// Microseconds `work` takes on `stream`, between events recorded before and after it.
    pub fn time(
        &self,
        stream: &Arc<CudaStream>,
        work: &mut dyn FnMut() -> Result<(), GpuError>,
    ) -> Result<f64, GpuError> {
        wrap("cuEventRecord", self.start.record(stream))?;
        work()?;
        wrap("cuEventRecord", self.end.record(stream))?;
        let ms = wrap("cuEventElapsedTime", self.start.elapsed_ms(&self.end))?;
        Ok(f64::from(ms) * 1000.0)
    }
}

/// How many runs, repeats and warm-ups a series takes.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// Back-to-back runs per sample.
    pub runs: usize,
    /// Samples.
    pub repeats: usize,
    /// Untimed series first.
    pub warmup: usize,
}

/// Times `runs` back-to-back runs (`prologue()` once, then `record(i)` for each run `i`) per
/// sample, `repeats` samples, after `warmup` untimed series. The series is captured into a CUDA
/// graph and replayed when the capture succeeds; else it is issued directly, and the result
/// says so. Returns the microseconds per run of each sample.
pub fn time_series(
    ctx: &Arc<CudaContext>,
    stream: &Arc<CudaStream>,
    plan: Plan,
    prologue: &mut dyn FnMut() -> Result<(), GpuError>,
    record: &mut dyn FnMut(usize) -> Result<(), GpuError>,
) -> Result<(Vec<f64>, Timing), GpuError> {
    let ev = Events::new(ctx)?;
    let runs = plan.runs.max(1);
    let series = |p: &mut dyn FnMut() -> Result<(), GpuError>,
                  r: &mut dyn FnMut(usize) -> Result<(), GpuError>|
     -> Result<(), GpuError> {
        p()?;
        for i in 0..runs {
            r(i)?;
        }
        Ok(())
    };
    // Capture.
    let graph = match stream.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED)
    {
        Ok(()) => {
            let recorded = series(prologue, record);
            let ended = stream.end_capture(sys::CUgraphInstantiate_flags(0));
            match (recorded, ended) {
                (Ok(()), Ok(Some(g))) => Some(g),
                _ => None,
            }
        }
        Err(_) => None,
    };
    // A failed capture can leave a sticky error on nothing but the capture: clear the stream.
    wrap("cuStreamSynchronize", stream.synchronize())?;
    let mut samples = Vec::with_capacity(plan.repeats);
    match graph {
        Some(g) => {
            wrap("cuGraphUpload", g.upload())?;
            for _ in 0..plan.warmup.max(1) {
                wrap("cuGraphLaunch", g.launch())?;
            }
            wrap("cuStreamSynchronize", stream.synchronize())?;
            for _ in 0..plan.repeats.max(1) {
                let us = ev.time(stream, &mut || wrap("cuGraphLaunch", g.launch()))?;
                samples.push(us / runs as f64);
            }
            Ok((samples, Timing::Graph))
        }
        None => {
            for _ in 0..plan.warmup.max(1) {
                series(prologue, record)?;
            }
            wrap("cuStreamSynchronize", stream.synchronize())?;
            for _ in 0..plan.repeats.max(1) {
                let us = ev.time(stream, &mut || series(prologue, record))?;
                samples.push(us / runs as f64);
            }
            Ok((samples, Timing::Stream))
        }
    }
}

/// Sets the `count` 32-bit words at `ptr` to `value` on `stream` (capturable).
pub fn memset32(stream: &CudaStream, ptr: u64, value: u32, count: usize) -> Result<(), GpuError> {
    // SAFETY: `ptr` is a live device allocation of at least `count` words, owned by the caller.
    drv("cuMemsetD32Async", unsafe {
        sys::cuMemsetD32Async(ptr, value, count, stream.cu_stream())
    })
}

/// Reads `N` u64 words at `ptr` after the stream's work finished.
pub fn read_u64<const N: usize>(stream: &CudaStream, ptr: u64) -> Result<[u64; N], GpuError> {
    wrap("cuStreamSynchronize", stream.synchronize())?;
    let mut out = [0u64; N];
    // SAFETY: `out` holds N words; `ptr` is a live device allocation of at least N words.
    drv("cuMemcpyDtoH", unsafe {
        sys::cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), ptr, 8 * N)
    })?;
    Ok(out)
}

/// Resets the worker's bench stamps at `stamps` (`mpkc_bench_stamps[3]`: first publication and
/// first CTA start = u64::MAX, last end = 0).
pub fn reset_stamps(stream: &CudaStream, stamps: u64) -> Result<(), GpuError> {
    memset32(stream, stamps, u32::MAX, 2)?;
    memset32(stream, stamps + 8, 0, 2)?;
    memset32(stream, stamps + 16, u32::MAX, 2)
}

/// One stamped launch (ns): `ns` from the first task's publication to the last task's end (the
/// persistent sample), `setup_ns` from the first CTA's start to that publication (the runtime's
/// copy of the first TaskDesc, left out of `ns`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamped {
    pub ns: u64,
    pub setup_ns: u64,
}

/// The stamps of the last launch, or a kernel error when the worker did not write them (no CTA
/// ran a task).
pub fn stamped(stream: &CudaStream, stamps: u64) -> Result<Stamped, GpuError> {
    let [first, last, start] = read_u64::<3>(stream, stamps)?;
    if first == u64::MAX || start == u64::MAX || last == 0 {
        return Err(GpuError::Kernel(format!(
            "the worker wrote no bench stamps (start {start}, first publication {first}, last {last})"
        )));
    }
    if last < first || first < start {
        return Err(GpuError::Kernel(format!(
            "the bench stamps are out of order (start {start}, first publication {first}, last {last})"
        )));
    }
    Ok(Stamped {
        ns: last - first,
        setup_ns: first - start,
    })
}

/// Bytes of the copy-ceiling measurement (1 GiB, at least the 1 GB the method asks for).
pub const CEILING_BYTES: u64 = 1 << 30;

/// The copy ceiling: median microseconds of a device-to-device copy of [`CEILING_BYTES`], over
/// `repeats` copies after two untimed ones. Errors: the 2 GiB cannot be allocated, a driver call.
pub fn copy_ceiling_us(
    ctx: &Arc<CudaContext>,
    stream: &Arc<CudaStream>,
    repeats: usize,
) -> Result<Vec<f64>, GpuError> {
    let n = CEILING_BYTES as usize;
    // SAFETY: the buffers are only copied between, never read on the host.
    let src = wrap("cuMemAlloc", unsafe { stream.alloc::<u8>(n) })?;
    let dst = wrap("cuMemAlloc", unsafe { stream.alloc::<u8>(n) })?;
    let (sp, dp) = {
        use cudarc::driver::DevicePtr;
        let (s, _g1) = src.device_ptr(stream);
        let (d, _g2) = dst.device_ptr(stream);
        (s, d)
    };
    memset32(stream, sp, 0x3f80_0000, n / 4)?;
    let copy = || {
        // SAFETY: both buffers are live and n bytes long.
        drv("cuMemcpyDtoDAsync", unsafe {
            sys::cuMemcpyDtoDAsync_v2(dp, sp, n, stream.cu_stream())
        })
    };
    copy()?;
    copy()?;
    let ev = Events::new(ctx)?;
    let mut out = Vec::new();
    for _ in 0..repeats.max(1) {
        out.push(ev.time(stream, &mut || copy())?);
    }
    drop((src, dst));
    let _ = ctx;
    Ok(out)
}

/// The update step of `%globaltimer` in nanoseconds (the resolution of one stamped sample), from
/// the stamped build's probe kernel `mpkc_bench_timer_probe`, which leaves it in the stamps.
pub fn timer_step_ns(
    k: &crate::gpu::device::Kernel,
    stream: &Arc<CudaStream>,
    stamps: u64,
) -> Result<u64, GpuError> {
    k.run_sibling("mpkc_bench_timer_probe", stream)?;
    let [step] = read_u64::<1>(stream, stamps)?;
    Ok(step)
}
