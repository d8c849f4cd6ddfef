//! One benchmark case on the device: random inputs, the weights copied enough times to exceed
//! the L2, one set of task tables per copy (a TMA map holds its tensor's address), the check of
//! mpkc's result (against cuBLAS, or the float64 CPU reference where there is no competitor),
//! then the standalone and persistent timings, and the per-task fixed cost.

pub use super::competitor::Libraries;
use super::competitor::{competitor, Comp};
use super::queue;
use super::report::{CaseReport, CheckInfo, FixedCost, MethodResult, ShapeInfo};
use super::shape::{bytes_moved, rotated_bytes, LinearShape};
use super::stats;
use super::timing::{self, Plan, Timing};
use crate::gpu::compare::compare;
use crate::gpu::data::{Fill, HostTensor};
use crate::gpu::device::Kernel;
use crate::gpu::reference::{expected_in, make_inputs, semantics, tolerance, Check, Expected};
use crate::gpu::run::{dynamic_smem, task_tables, Addresses, Case, Link, TaskTables};
use crate::gpu::{Gpu, GpuError};
use crate::ir::Target;
use crate::valid::CheckedTask;
use cudarc::driver::{CudaSlice, CudaStream};
use std::sync::Arc;

/// A case: a linear, or a split-K linear and its reduce, at one M.
pub struct BenchCase<'a> {
    /// The unit, or `producer -> reduce`.
    pub name: String,
    /// Tokens.
    pub m: i64,
    /// The task types, the linear first.
    pub tasks: Vec<&'a CheckedTask>,
    /// The partials passed to the reduce.
    pub links: Vec<Link>,
    /// The linear.
    pub shape: LinearShape,
}

/// The cubins of a case: the production build (standalone) and the same with the worker's
/// bench stamps (persistent, fixed cost); the harness entry.
pub struct Cubins {
    /// Production build.
    pub production: Vec<u8>,
    /// Production build with `MPKC_BENCH_STAMPS` (persistent method, fixed cost).
    pub stamped: Option<Vec<u8>>,
    /// Kernel symbol.
    pub entry: String,
}

/// How to run the cases.
#[derive(Clone, Debug)]
pub struct Options {
    /// Runs, repeats and warm-ups.
    pub plan: Plan,
    /// Seed of the random inputs.
    pub seed: u64,
    /// The target whose page plans the TaskDescs carry.
    pub target: Target,
    /// Run the standalone method.
    pub standalone: bool,
    /// Run the persistent method.
    pub persistent: bool,
    /// Rotate the weights over copies totalling this many times the L2.
    pub rotate_l2_factor: u64,
    /// L2 bytes.
    pub l2_bytes: u64,
    /// The measured copy ceiling, TB/s.
    pub ceiling: Option<f64>,
    /// Tasks per CTA of the fixed-cost measurement's second point.
    pub fixed_cost_p: usize,
    /// Persistent method: read CTA 0's timeline of the last launch (`--timeline`).
    pub timeline: bool,
}

/// A report of a case that did not get to its timings.
pub fn unrun(name: &str, m: i64, status: &str, reason: String) -> CaseReport {
    CaseReport {
        name: name.to_string(),
        m,
        status: status.to_string(),
        reason: Some(reason),
        shape: None,
        tasks: 0,
        ctas: 0,
        max_queue: 0,
        bytes: 0,
        weight_copies: 0,
        check: None,
        competitor: None,
        no_competitor: None,
        methods: Vec::new(),
    }
}

/// The device state of a case.
struct Setup {
    inputs: Vec<Vec<HostTensor>>,
    outputs: Vec<Vec<HostTensor>>,
    out_bufs: Vec<Vec<CudaSlice<u8>>>,
    in_addr: Vec<Vec<u64>>,
    /// Per weight copy: the address of each rotated input of task 0 (position, address).
    rotated: Vec<Vec<(usize, u64)>>,
    _keep: Vec<CudaSlice<u8>>,
    events: CudaSlice<u8>,
    step: CudaSlice<u8>,
    /// `RuntimeConfig::qo_indptr_buffer`: a run-time-M task runs at its maximum.
    qo_indptr: CudaSlice<u8>,
    /// `RuntimeConfig::paged_kv_*`: a paged KV cache runs at its `max_context` (an empty table
    /// without one).
    paged_kv: [CudaSlice<u8>; 3],
}

fn setup(
    gpu: &Gpu,
    case: &BenchCase<'_>,
    opts: &Options,
    copies: usize,
) -> Result<Setup, GpuError> {
    let mut inputs = Vec::new();
    let mut outputs = Vec::new();
    for (i, t) in case.tasks.iter().enumerate() {
        let sem =
            semantics(t).map_err(|e| GpuError::Kernel(format!("{}: {e}", t.ir.unit_name())))?;
        let mut fill = Fill::new(
            opts.seed
                .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                .wrapping_add(i as u64),
        );
        inputs.push(make_inputs(t, &sem, &mut fill));
        outputs.push(
            t.ir.outputs()
                .map(|(_, o)| HostTensor::output_before_run(o))
                .collect::<Vec<_>>(),
        );
    }
    let out_bufs = outputs
        .iter()
        .map(|outs| {
            outs.iter()
                .map(|o| gpu.upload(&o.bytes))
                .collect::<Result<Vec<_>, _>>()
        })
        .collect::<Result<Vec<_>, _>>()?;
    let rotate: Vec<usize> = std::iter::once(case.shape.w)
        .chain(case.shape.scales.map(|(ws, _)| ws))
        .collect();
    let mut keep = Vec::new();
    let mut in_addr = Vec::new();
    let mut rotated = vec![Vec::new(); copies];
    for (ti, ins) in inputs.iter().enumerate() {
        let mut addrs = Vec::new();
        for (ii, x) in ins.iter().enumerate() {
            if let Some(l) = case
                .links
                .iter()
                .find(|l| l.to_task == ti && l.to_input == ii)
            {
                addrs.push(gpu.addr(&out_bufs[l.from_task][l.from_output]));
                continue;
            }
            let b = gpu.upload(&x.bytes)?;
            let a = gpu.addr(&b);
            keep.push(b);
            if ti == 0 && rotate.contains(&ii) {
                rotated[0].push((ii, a));
                for r in rotated.iter_mut().skip(1) {
                    let c = gpu.upload(&x.bytes)?;
                    r.push((ii, gpu.addr(&c)));
                    keep.push(c);
                }
            }
            addrs.push(a);
        }
        in_addr.push(addrs);
    }
    let table = Case {
        name: case.name.clone(),
        tasks: case.tasks.clone(),
        links: Vec::new(),
        tokens: None,
        context: None,
        shared: Vec::new(),
        layer: None,
    }
    .page_table(opts.seed);
    let int_bytes = |v: Option<&Vec<i32>>, n: usize| {
        v.map_or_else(
            || vec![0u8; 4 * n],
            |v| crate::gpu::paged::PagedRun::bytes(v),
        )
    };
    let reqs = crate::gpu::abi::MAX_NUM_BATCHED_REQUESTS;
    let paged_kv = [
        gpu.upload(&int_bytes(table.as_ref().map(|t| &t.indptr), reqs + 1))?,
        gpu.upload(&int_bytes(table.as_ref().map(|t| &t.indices), 1))?,
        gpu.upload(&int_bytes(table.as_ref().map(|t| &t.last_page_len), reqs))?,
    ];
    Ok(Setup {
        paged_kv,
        inputs,
        outputs,
        out_bufs,
        in_addr,
        rotated,
        _keep: keep,
        events: gpu.upload(&[0u8; 64])?,
        step: gpu.upload(&[0u8; 16])?,
        qo_indptr: gpu.upload(&crate::gpu::run::qo_indptr_bytes(
            Case {
                name: case.name.clone(),
                tasks: case.tasks.clone(),
                links: Vec::new(),
                tokens: None,
                context: None,
                shared: Vec::new(),
                layer: None,
            }
            .runtime_tokens(),
        ))?,
    })
}

/// The task tables of each weight copy for `queues`.
fn tables(
    gpu: &Gpu,
    case: &BenchCase<'_>,
    s: &Setup,
    queues: &queue::Queues,
    target: Target,
) -> Result<Vec<TaskTables>, GpuError> {
    let c = Case {
        name: case.name.clone(),
        tasks: case.tasks.clone(),
        links: case.links.clone(),
        tokens: None,
        context: None,
        shared: Vec::new(),
        layer: None,
    };
    let out_addr: Vec<Vec<u64>> = s
        .out_bufs
        .iter()
        .map(|bs| bs.iter().map(|b| gpu.addr(b)).collect())
        .collect();
    // The queues' page plans, the same for every weight copy.
    let plans = super::super::queue::plans(&c, target, queues).map_err(GpuError::Kernel)?;
    s.rotated
        .iter()
        .map(|copy| {
            let mut ins = s.in_addr.clone();
            for (pos, a) in copy {
                ins[0][*pos] = *a;
            }
            task_tables(
                gpu,
                &c,
                &Addresses {
                    inputs: &ins,
                    outputs: &out_addr,
                    events: gpu.addr(&s.events),
                    step: gpu.addr(&s.step),
                    qo_indptr: gpu.addr(&s.qo_indptr),
                    paged_kv: [
                        gpu.addr(&s.paged_kv[0]),
                        gpu.addr(&s.paged_kv[1]),
                        gpu.addr(&s.paged_kv[2]),
                    ],
                },
                queues,
                &plans,
            )
        })
        .collect()
}

fn sync(stream: &Arc<CudaStream>) -> Result<(), GpuError> {
    stream
        .synchronize()
        .map_err(|e| GpuError::Kernel(format!("{e:?}")))
}

/// Where the op's result is: (task, output).
fn result_at(case: &BenchCase<'_>) -> (usize, usize) {
    if case.tasks.len() > 1 {
        (case.tasks.len() - 1, 0)
    } else {
        (0, case.shape.y)
    }
}

/// Every output of every task of the case against the float64 CPU reference (a dependent's on
/// its producer's actual outputs), summarized by the worst.
fn cpu_check(
    case: &BenchCase<'_>,
    s: &Setup,
    outputs: &[Vec<HostTensor>],
) -> Result<CheckInfo, GpuError> {
    let mut inputs = s.inputs.clone();
    for l in &case.links {
        inputs[l.to_task][l.to_input] = outputs[l.from_task][l.from_output].clone();
    }
    let mut results = Vec::new();
    for (ti, t) in case.tasks.iter().enumerate() {
        let sem = semantics(t).map_err(GpuError::Kernel)?;
        let scratch = std::env::temp_dir().join(format!(
            "mpkc-bench-reference-{}/{ti}_{}",
            std::process::id(),
            t.ir.unit_name()
        ));
        let exp =
            expected_in(t, &sem, &inputs[ti], None, &scratch, 0).map_err(GpuError::Reference)?;
        for e in exp {
            results.push(compare(&case.name, &outputs[ti], &e));
        }
    }
    let score = |r: &crate::gpu::compare::OutputResult| {
        if r.tol > 0.0 {
            r.error / r.tol
        } else {
            r.error
        }
    };
    let worst = results
        .iter()
        .max_by(|a, b| score(a).total_cmp(&score(b)))
        .cloned()
        .ok_or_else(|| GpuError::Kernel("no reference for the result".into()))?;
    Ok(CheckInfo {
        against: "cpu reference".into(),
        metric: worst.metric,
        error: worst.error,
        tol: worst.tol,
        bad_elements: results.iter().map(|r| r.unwritten + r.nans).sum(),
        pass: results.iter().all(|r| r.pass),
    })
}

/// Runs `case`: check, then time. Errors are reported in the case, never returned.
pub fn run(
    gpu: &Gpu,
    stream: &Arc<CudaStream>,
    libs: &Libraries,
    case: &BenchCase<'_>,
    cubins: &Cubins,
    opts: &Options,
) -> CaseReport {
    match run_inner(gpu, stream, libs, case, cubins, opts) {
        Ok(r) => r,
        Err(e) => {
            let mut r = unrun(&case.name, case.m, "failed", e.to_string());
            r.shape = Some(ShapeInfo::from(&case.shape));
            r
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn run_inner(
    gpu: &Gpu,
    stream: &Arc<CudaStream>,
    libs: &Libraries,
    case: &BenchCase<'_>,
    cubins: &Cubins,
    opts: &Options,
) -> Result<CaseReport, GpuError> {
    let sh = &case.shape;
    // Per task, the inputs and outputs another task of the case passes along (not moved
    // through DRAM by the op as a whole).
    let linked = |side: fn(&Link) -> (usize, usize)| -> Vec<Vec<usize>> {
        (0..case.tasks.len())
            .map(|t| {
                case.links
                    .iter()
                    .map(side)
                    .filter(|(task, _)| *task == t)
                    .map(|(_, i)| i)
                    .collect()
            })
            .collect()
    };
    let linked_in = linked(|l| (l.to_task, l.to_input));
    let linked_out = linked(|l| (l.from_task, l.from_output));
    let bytes = bytes_moved(&case.tasks, &linked_in, &linked_out);
    let copies = stats::copies_for(
        rotated_bytes(case.tasks[0], sh),
        opts.l2_bytes,
        opts.rotate_l2_factor,
    );
    let s = setup(gpu, case, opts, copies)?;
    let counts: Vec<usize> = case
        .tasks
        .iter()
        .map(|t| t.ir.granularity.tasks().max(1) as usize)
        .collect();
    let q = queue::whole_op(&counts, gpu.sms as usize);
    let tabs = tables(gpu, case, &s, &q, opts.target)?;
    let smem = dynamic_smem(&case.tasks, opts.target);
    let production = gpu.load(&cubins.production, &cubins.entry, smem)?;
    gpu.context()
        .synchronize()
        .map_err(|e| GpuError::Kernel(format!("{e:?}")))?;
    let events = gpu.addr(&s.events);
    let chain = case.tasks.len() > 1;
    let mut report = CaseReport {
        name: case.name.clone(),
        m: case.m,
        status: "ok".into(),
        reason: None,
        shape: Some(ShapeInfo::from(sh)),
        tasks: tabs[0].tasks,
        ctas: tabs[0].ctas,
        max_queue: tabs[0].max_queue,
        bytes,
        weight_copies: copies,
        check: None,
        competitor: None,
        no_competitor: None,
        methods: Vec::new(),
    };
    // The competitor, on the same buffers (bf16 out).
    let (rt, ro) = result_at(case);
    let y_tensor = s.outputs[rt][ro].clone();
    let comp = competitor(libs, sh, y_tensor.dtype);
    let comp = match comp {
        Ok(c) => {
            report.competitor = Some(c.name().to_string());
            Some(c)
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
    // 1. The check, before any timing: one run of each side on weight copy 0.
    timing::memset32(stream, events, 0, 16)?;
    let mut args = tabs[0].args;
    args.iter_num = 0;
    gpu.launch_on(stream, &production, tabs[0].ctas, smem, &args)?;
    sync(stream)?;
    let mut outputs = s.outputs.clone();
    for (ti, outs) in outputs.iter_mut().enumerate() {
        for (oi, o) in outs.iter_mut().enumerate() {
            o.bytes = gpu.download(&s.out_bufs[ti][oi])?;
        }
    }
    let mut comp = comp;
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
                    Ok(CheckInfo {
                        against: c.short().into(),
                        metric: r.metric,
                        error: r.error,
                        tol: r.tol,
                        bad_elements: r.unwritten + r.nans,
                        pass: r.pass,
                    })
                }
                Err(e) => Err(e.to_string()),
            };
            match against {
                Ok(k) if k.pass => k,
                // The competitor failed or disagrees: the CPU reference says which side is wrong.
                other => {
                    let cpu = cpu_check(case, &s, &outputs)?;
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
        None => cpu_check(case, &s, &outputs)?,
    };
    let pass = check.pass;
    report.check = Some(check);
    if !pass {
        report.status = "mismatch".into();
        report.reason = Some("mpkc's result differs from the check's: not timed".into());
        return Ok(report);
    }
    // `split_k bf16`: every split of every tile arrived once and the last reset its counter.
    if let Some(name) = crate::gpu::outputs::counters_left(&case.tasks, &outputs) {
        report.status = "mismatch".into();
        report.reason = Some(format!(
            "counters `{name}` are not all zero after the run (a split arrived twice, or a tile's last split did not reset its counter): not timed"
        ));
        return Ok(report);
    }
    // 2. The standalone method: each run its own launch, the weights rotated.
    let ctx = gpu.context().clone();
    let mut comp_us: Option<(f64, Timing)> = None;
    if let Some(c) = &comp {
        let (samples, how) =
            timing::time_series(&ctx, stream, opts.plan, &mut || Ok(()), &mut |i| {
                run_comp(c, i % copies)
            })?;
        comp_us = stats::median(&samples).map(|m| (m, how));
    }
    let ceiling = opts.ceiling;
    let method = |name: &str, timing: &str, samples: Vec<f64>| -> MethodResult {
        let us = stats::median(&samples).unwrap_or(f64::NAN);
        let tb = stats::tb_per_s(bytes, us);
        MethodResult {
            method: name.into(),
            timing: timing.into(),
            us,
            samples,
            tb_per_s: tb,
            share: tb.zip(ceiling).and_then(|(t, c)| stats::share(t, c)),
            competitor_us: comp_us.map(|c| c.0),
            competitor_timing: comp_us.map(|c| c.1.as_str().to_string()),
            speedup: comp_us.and_then(|c| stats::speedup(us, c.0)),
            timer_step_ns: None,
            setup_us: None,
            timeline: Vec::new(),
        }
    };
    if opts.standalone {
        let (samples, how) = timing::time_series(
            &ctx,
            stream,
            opts.plan,
            &mut || {
                if chain {
                    timing::memset32(stream, events, 0, 16)
                } else {
                    Ok(())
                }
            },
            &mut |i| {
                let mut a = tabs[i % copies].args;
                a.iter_num = i as i32;
                gpu.launch_on(stream, &production, tabs[0].ctas, smem, &a)
            },
        )?;
        report
            .methods
            .push(method("standalone", how.as_str(), samples));
    }
    // 3. The persistent method: the whole queue in one launch, first publication to last task end.
    if opts.persistent {
        let stamped = gpu.load(stamped_cubin(cubins)?, &cubins.entry, smem)?;
        let p = persistent_samples(
            gpu, stream, &stamped, &tabs, copies, events, smem, opts.plan,
        )?;
        let mut r = method("persistent", "stamps", p.samples);
        r.timer_step_ns = Some(p.step);
        r.setup_us = stats::median(&p.setup);
        if opts.timeline {
            r.timeline =
                super::timeline::read(stream, &stamped, report.max_queue, tabs[0].ctas as usize)?;
        }
        report.methods.push(r);
    }
    Ok(report)
}

fn stamped_cubin(c: &Cubins) -> Result<&[u8], GpuError> {
    c.stamped
        .as_deref()
        .ok_or_else(|| GpuError::Kernel("the stamped build was not compiled".into()))
}

/// The samples of [`persistent_samples`] (microseconds) and the timer's step.
struct Persistent {
    /// Per launch: the first task's publication to the last task's end.
    samples: Vec<f64>,
    /// Per launch: the first CTA's start to the first publication (the runtime's copy of the
    /// first TaskDesc).
    setup: Vec<f64>,
    /// `%globaltimer`'s update step (ns).
    step: u64,
}

/// `plan.runs` samples (after `plan.warmup` untimed launches) of one launch each, weight copy
/// `i mod copies`, from the worker's stamps.
#[allow(clippy::too_many_arguments)]
fn persistent_samples(
    gpu: &Gpu,
    stream: &Arc<CudaStream>,
    k: &Kernel,
    tabs: &[TaskTables],
    copies: usize,
    events: u64,
    smem: u32,
    plan: Plan,
) -> Result<Persistent, GpuError> {
    let (stamps, size) = k.global("mpkc_bench_stamps", stream)?;
    if size < 24 {
        return Err(GpuError::Kernel(
            "mpkc_bench_stamps is not three u64".into(),
        ));
    }
    let step = timing::timer_step_ns(k, stream, stamps)?;
    let mut out = Persistent {
        samples: Vec::new(),
        setup: Vec::new(),
        step,
    };
    let n = plan.runs.max(1);
    for i in 0..plan.warmup + n {
        let t = &tabs[i % copies.min(tabs.len()).max(1)];
        timing::reset_stamps(stream, stamps)?;
        timing::memset32(stream, events, 0, 16)?;
        gpu.launch_on(stream, k, t.ctas, smem, &t.args)?;
        let st = timing::stamped(stream, stamps)?;
        if i >= plan.warmup {
            out.samples.push(st.ns as f64 / 1000.0);
            out.setup.push(st.setup_ns as f64 / 1000.0);
        }
    }
    Ok(out)
}

/// The per-task fixed cost of `case` (issue 12, Deliver 2): the persistent time of one launch with
/// 1 task per CTA and with `opts.fixed_cost_p`, the weights not rotated (resident in L2 when they
/// fit), over the same CTAs.
pub fn fixed_cost(
    gpu: &Gpu,
    stream: &Arc<CudaStream>,
    case: &BenchCase<'_>,
    cubins: &Cubins,
    opts: &Options,
) -> FixedCost {
    let sh = &case.shape;
    let weight_bytes = rotated_bytes(case.tasks[0], sh);
    let mut f = FixedCost {
        name: case.name.clone(),
        m: case.m,
        status: "ok".into(),
        reason: None,
        ctas: 0,
        k_iters: sh.k_iters,
        weight_bytes,
        t1_us: f64::NAN,
        p: opts.fixed_cost_p,
        tp_us: f64::NAN,
        per_task_us: None,
        timer_step_ns: None,
        timeline: Vec::new(),
    };
    if case.tasks.len() > 1 {
        f.status = "skipped".into();
        f.reason =
            Some("a split-K chain: the fixed cost is measured on a one-task-type linear".into());
        return f;
    }
    if sh.epilogue == super::shape::LinearEpilogue::SplitKSum {
        f.status = "skipped".into();
        f.reason = Some(
            "`split_k bf16` counts each task's arrival once: its tasks cannot repeat in a queue"
                .into(),
        );
        return f;
    }
    let inner = || -> Result<(f64, f64, u32, u64, Vec<String>), GpuError> {
        let s = setup(gpu, case, opts, 1)?;
        let tasks = case.tasks[0].ir.granularity.tasks().max(1) as usize;
        let sms = gpu.sms as usize;
        let t1 = tables(gpu, case, &s, &queue::per_cta(tasks, sms, 1), opts.target)?;
        let tp = tables(
            gpu,
            case,
            &s,
            &queue::per_cta(tasks, sms, opts.fixed_cost_p),
            opts.target,
        )?;
        let smem = dynamic_smem(&case.tasks, opts.target);
        let k = gpu.load(stamped_cubin(cubins)?, &cubins.entry, smem)?;
        gpu.context()
            .synchronize()
            .map_err(|e| GpuError::Kernel(format!("{e:?}")))?;
        let ev = gpu.addr(&s.events);
        let one = persistent_samples(gpu, stream, &k, &t1, 1, ev, smem, opts.plan)?;
        let (a, step) = (one.samples, one.step);
        let b = persistent_samples(gpu, stream, &k, &tp, 1, ev, smem, opts.plan)?.samples;
        let line = super::timeline::read(stream, &k, opts.fixed_cost_p, 0)?;
        let med = |v: &[f64]| stats::median(v).unwrap_or(f64::NAN);
        Ok((med(&a), med(&b), t1[0].ctas, step, line))
    };
    match inner() {
        Ok((t1, tp, ctas, step, line)) => {
            f.timeline = line;
            f.timer_step_ns = Some(step);
            f.t1_us = t1;
            f.tp_us = tp;
            f.ctas = ctas;
            f.per_task_us = stats::fixed_cost(t1, tp, opts.fixed_cost_p);
            let mut notes = Vec::new();
            if sh.k_iters != 1 {
                notes.push(format!(
                    "not one stage ({} K iterations per task: pass --param K={})",
                    sh.k_iters, sh.tile[2]
                ));
            }
            if weight_bytes * 2 > opts.l2_bytes {
                notes.push(format!(
                    "weights ({} MB) may not stay resident in the {} MB L2",
                    weight_bytes / 1_000_000,
                    opts.l2_bytes / 1_000_000
                ));
            }
            if !notes.is_empty() {
                f.reason = Some(notes.join("; "));
            }
        }
        Err(e) => {
            f.status = "failed".into();
            f.reason = Some(e.to_string());
        }
    }
    f
}
