//! The device state of a benchmark case: random inputs (the weights copied enough times to
//! exceed the L2 for a linear), the output buffers, and one set of task tables per weight copy
//! (a TMA map holds its tensor's address).

use super::case::{BenchCase, CaseOp, Options};
use super::queue;
use crate::gpu::data::{Fill, HostTensor};
use crate::gpu::reference::{make_inputs, semantics, Semantics};
use crate::gpu::run::{task_tables, Addresses, Case, TaskTables};
use crate::gpu::{Gpu, GpuError};
use crate::ir::Target;
use cudarc::driver::{CudaSlice, CudaStream};
use std::sync::Arc;

/// The device state of a case.
pub(super) struct Setup {
    pub(super) inputs: Vec<Vec<HostTensor>>,
    pub(super) outputs: Vec<Vec<HostTensor>>,
    pub(super) out_bufs: Vec<Vec<CudaSlice<u8>>>,
    pub(super) in_addr: Vec<Vec<u64>>,
    /// Per weight copy: the address of each rotated input of task 0 (position, address).
    pub(super) rotated: Vec<Vec<(usize, u64)>>,
    _keep: Vec<CudaSlice<u8>>,
    pub(super) events: CudaSlice<u8>,
    step: CudaSlice<u8>,
    /// `RuntimeConfig::qo_indptr_buffer`: a run-time-M task runs at its maximum.
    qo_indptr: CudaSlice<u8>,
    /// `RuntimeConfig::paged_kv_*`: a paged KV cache runs at its `max_context` (an empty table
    /// without one).
    paged_kv: [CudaSlice<u8>; 3],
}

/// `case` as the harness runner takes it (with its links between tasks, or without, for what
/// only reads the tasks).
fn harness_case<'a>(case: &BenchCase<'a>, links: bool) -> Case<'a> {
    Case {
        name: case.name.clone(),
        tasks: case.tasks.clone(),
        links: if links {
            case.links.clone()
        } else {
            Vec::new()
        },
        tokens: None,
        context: None,
        shared: Vec::new(),
        layer: None,
    }
}

/// Uploads `case`'s random inputs (seeded by `opts.seed` and the task's position) and its
/// outputs before a run, a linear's weights (and fp8 block scales) `copies` times.
pub(super) fn setup(
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
        let mut ins = make_inputs(t, &sem, &mut fill);
        if matches!(sem, Semantics::Embedding) {
            ids_inside_the_table(t, &mut ins, &mut fill);
        }
        inputs.push(ins);
        outputs.push(
            t.ir.outputs()
                .map(|(h, o)| HostTensor::output_before_run(o, t.zero_between_runs(h)))
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
    // A linear's weights are read once per run: copies keep them out of the L2. A consumer op
    // reads activations its producer has just written (in the L2 in the decode step), and
    // PyTorch's side reads the same: no copies.
    let rotate: Vec<usize> = match &case.op {
        CaseOp::Linear(sh) => std::iter::once(sh.w)
            .chain(sh.scales.map(|(ws, _)| ws))
            .collect(),
        CaseOp::Consumer(_) => Vec::new(),
    };
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
    // The page table and the token counts read only the tasks: one unlinked case serves both.
    let unlinked = harness_case(case, false);
    let table = unlinked.page_table(opts.seed);
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
        qo_indptr: gpu.upload(&crate::gpu::run::qo_indptr_bytes(unlinked.runtime_tokens()))?,
    })
}

/// Moves the ids `make_inputs` put outside the table (the kernel's zero row, which verify
/// exercises) inside it: PyTorch's embedding asserts on an id outside the table, and both sides
/// of the bench must read the same ids.
fn ids_inside_the_table(
    task: &crate::valid::CheckedTask,
    inputs: &mut [HostTensor],
    fill: &mut Fill,
) {
    let ids = crate::gpu::reference::input_of(task, "ids");
    let table = crate::gpu::reference::input_of(task, "table");
    let (Some(i), Some(t)) = (ids, table) else {
        return;
    };
    let vocab = inputs[t].dims.first().copied().unwrap_or(1).max(1);
    let x = &mut inputs[i];
    for k in 0..x.len() {
        // `get` reads i32 and i64 ids alike.
        if !(0.0..vocab as f64).contains(&x.get(k)) {
            x.set(k, fill.int(0, vocab) as f64);
        }
    }
}

/// The task tables of each weight copy for `queues`.
pub(super) fn tables(
    gpu: &Gpu,
    case: &BenchCase<'_>,
    s: &Setup,
    queues: &queue::Queues,
    target: Target,
) -> Result<Vec<TaskTables>, GpuError> {
    let c = harness_case(case, true);
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

/// Waits for `stream`.
pub(super) fn sync(stream: &Arc<CudaStream>) -> Result<(), GpuError> {
    stream
        .synchronize()
        .map_err(|e| GpuError::Kernel(format!("{e:?}")))
}
