//! The persistent method's samples (the whole queue in one launch, timed by the worker's
//! `%globaltimer` stamps) and the per-task fixed cost built on them (issue 12, Deliver 2).

use super::case::{BenchCase, CaseOp, Cubins, Options};
use super::queue;
use super::report::FixedCost;
use super::setup::{setup, tables};
use super::shape::rotated_bytes;
use super::stats;
use super::timing::{self, Plan};
use crate::gpu::device::Kernel;
use crate::gpu::run::{dynamic_smem, TaskTables};
use crate::gpu::{Gpu, GpuError};
use cudarc::driver::CudaStream;
use std::sync::Arc;

/// The stamped build of `c`, or an error when it was not compiled.
pub(super) fn stamped_cubin(c: &Cubins) -> Result<&[u8], GpuError> {
    c.stamped
        .as_deref()
        .ok_or_else(|| GpuError::Kernel("the stamped build was not compiled".into()))
}

/// The samples of [`persistent_samples`] (microseconds) and the timer's step.
pub(super) struct Persistent {
    /// Per launch: the first task's publication to the last task's end.
    pub(super) samples: Vec<f64>,
    /// Per launch: the first CTA's start to the first publication (the runtime's copy of the
    /// first TaskDesc).
    pub(super) setup: Vec<f64>,
    /// `%globaltimer`'s update step (ns).
    pub(super) step: u64,
}

/// `plan.runs` samples (after `plan.warmup` untimed launches) of one launch each, weight copy
/// `i mod copies`, from the worker's stamps.
#[allow(clippy::too_many_arguments)]
pub(super) fn persistent_samples(
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
    let mut f = FixedCost {
        name: case.name.clone(),
        m: case.m,
        status: "skipped".into(),
        reason: None,
        ctas: 0,
        k_iters: 0,
        weight_bytes: 0,
        t1_us: f64::NAN,
        p: opts.fixed_cost_p,
        tp_us: f64::NAN,
        per_task_us: None,
        timer_step_ns: None,
        timeline: Vec::new(),
    };
    let sh = match &case.op {
        CaseOp::Linear(sh) => sh,
        CaseOp::Consumer(_) => {
            f.reason =
                Some("a consumer op: the fixed cost is measured on a one-stage linear".into());
            return f;
        }
    };
    let weight_bytes = rotated_bytes(case.tasks[0], sh);
    let mut f = FixedCost {
        status: "ok".into(),
        k_iters: sh.k_iters,
        weight_bytes,
        ..f
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
            "`split_k bf16` and `split_k atomic` count each task's arrival once: their tasks cannot repeat in a queue"
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
