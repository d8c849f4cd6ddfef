//! One benchmark case on the device: its production build run once and checked (against the
//! competitor, or the float64 CPU reference where there is none), then timed by the standalone
//! and persistent methods beside the competitor's time. [`super::setup`] makes the device state,
//! [`super::competitor`] runs cuBLAS / cuBLASLt beside a linear, [`super::eager`] PyTorch eager
//! beside a consumer op, [`super::persistent`] the stamped samples and the fixed cost.

pub use super::competitor::Libraries;
use super::competitor::{linear_side, Theirs};
use super::consumer::ConsumerShape;
use super::persistent::{persistent_samples, stamped_cubin};
use super::queue;
use super::report::{CaseReport, CheckInfo, Family, MethodResult, ShapeInfo};
use super::setup::{setup, sync, tables, Setup};
use super::shape::{bytes_moved, rotated_bytes, LinearShape};
use super::stats;
use super::timing::{self, Plan};
use crate::gpu::compare::compare;
use crate::gpu::data::HostTensor;
use crate::gpu::reference::{expected_in, semantics};
use crate::gpu::run::{dynamic_smem, Link};
use crate::gpu::{Gpu, GpuError};
use crate::ir::Target;
use crate::valid::CheckedTask;
use cudarc::driver::CudaStream;
use std::sync::Arc;

/// What a case computes.
#[derive(Clone, Debug)]
pub enum CaseOp {
    /// A pipeline linear (family A), timed against cuBLAS / cuBLASLt.
    Linear(LinearShape),
    /// A consumer op, timed against PyTorch eager.
    Consumer(ConsumerShape),
}

impl CaseOp {
    /// The case's family in the report.
    pub fn family(&self) -> Family {
        match self {
            CaseOp::Linear(_) => Family::Linear,
            CaseOp::Consumer(_) => Family::Consumer,
        }
    }

    fn shape_info(&self) -> Option<ShapeInfo> {
        match self {
            CaseOp::Linear(sh) => Some(ShapeInfo::from(sh)),
            CaseOp::Consumer(_) => None,
        }
    }
}

/// A case at one M: a linear, a split-K linear and its reduce, a consumer op, or the argmax
/// partial and its reduce.
pub struct BenchCase<'a> {
    /// The unit, or `producer -> dependent`.
    pub name: String,
    /// Tokens.
    pub m: i64,
    /// The task types, the producer first.
    pub tasks: Vec<&'a CheckedTask>,
    /// The tensors the dependent reads from the producer.
    pub links: Vec<Link>,
    /// What it computes.
    pub op: CaseOp,
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
    /// Run the competitor (cuBLAS, cuBLASLt or PyTorch) and check against it; without it
    /// (`--no-competitor`) the float64 CPU reference checks mpkc's result.
    pub competitor: bool,
}

/// A report of a case that did not get to its timings.
pub fn unrun(name: &str, m: i64, status: &str, reason: String) -> CaseReport {
    CaseReport {
        name: name.to_string(),
        m,
        status: status.to_string(),
        reason: Some(reason),
        family: None,
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

/// Where the op's result is: (task, output).
pub(super) fn result_at(case: &BenchCase<'_>) -> (usize, usize) {
    let last = case.tasks.len().saturating_sub(1);
    match &case.op {
        CaseOp::Linear(_) if last > 0 => (last, 0),
        CaseOp::Linear(sh) => (0, sh.y),
        CaseOp::Consumer(c) => (last, c.output),
    }
}

/// The bytes a run of `case` moves: its tensors once, less what one task passes to the other;
/// a gather (the embedding) reads only the rows it gathers (`traffic::instance_bytes`).
fn case_bytes(case: &BenchCase<'_>) -> u64 {
    if let (CaseOp::Consumer(_), [t]) = (&case.op, case.tasks.as_slice()) {
        return crate::traffic::instance_bytes(t);
    }
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
    bytes_moved(&case.tasks, &linked_in, &linked_out)
}

/// Every output of every task of the case against the float64 CPU reference (a dependent's on
/// its producer's actual outputs), summarized by the worst.
pub(super) fn cpu_check(
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
            r.shape = case.op.shape_info();
            r.family = Some(case.op.family());
            r
        }
    }
}

fn run_inner(
    gpu: &Gpu,
    stream: &Arc<CudaStream>,
    libs: &Libraries,
    case: &BenchCase<'_>,
    cubins: &Cubins,
    opts: &Options,
) -> Result<CaseReport, GpuError> {
    let bytes = case_bytes(case);
    let copies = match &case.op {
        CaseOp::Linear(sh) => stats::copies_for(
            rotated_bytes(case.tasks[0], sh),
            opts.l2_bytes,
            opts.rotate_l2_factor,
        ),
        CaseOp::Consumer(_) => 1,
    };
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
        family: Some(case.op.family()),
        shape: case.op.shape_info(),
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
    // 1. The check, before any timing: one run of mpkc's side on weight copy 0, then the
    // competitor's run on the same inputs and the comparison.
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
    let (check, theirs): (CheckInfo, Option<Theirs>) = match &case.op {
        _ if !opts.competitor => {
            report.no_competitor = Some("not run (--no-competitor)".into());
            (cpu_check(case, &s, &outputs)?, None)
        }
        CaseOp::Linear(sh) => linear_side(
            gpu,
            stream,
            libs,
            case,
            sh,
            &s,
            &outputs,
            copies,
            opts,
            &mut report,
        )?,
        CaseOp::Consumer(c) => {
            super::eager::consumer_side(case, c, &s, &outputs, opts, &mut report)?
        }
    };
    let pass = check.pass;
    report.check = Some(check);
    if !pass {
        report.status = "mismatch".into();
        report.reason = Some("mpkc's result differs from the check's: not timed".into());
        return Ok(report);
    }
    // `split_k bf16` / `atomic`: every split of every tile arrived once and the last reset its
    // counter (and zeroed the accumulator).
    if let Some(name) = crate::gpu::outputs::counters_left(&case.tasks, &outputs) {
        report.status = "mismatch".into();
        report.reason = Some(format!(
            "`{name}` is not all zero after the run (a split arrived twice, or a tile's last split did not reset its counter or zero the accumulator): not timed"
        ));
        return Ok(report);
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
            competitor_us: theirs.as_ref().map(|c| c.0),
            competitor_timing: theirs.as_ref().map(|c| c.1.clone()),
            speedup: theirs.as_ref().and_then(|c| stats::speedup(us, c.0)),
            timer_step_ns: None,
            setup_us: None,
            timeline: Vec::new(),
        }
    };
    // 2. The standalone method: each run its own launch, the weights rotated.
    let ctx = gpu.context().clone();
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
