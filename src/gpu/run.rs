//! Running one verification case on the GPU: inputs, poisoned outputs, tensor maps, the task
//! queues of every CTA, the launch, and the comparison with the references.
//!
//! A case is one task instance, or a chain of them (a producer and the task that depends on it
//! through an event, e.g. argmax partial → reduce). Each CTA's queue holds several tasks so that
//! ring-slot reuse, role re-init and page parity across consecutive tasks are exercised: a
//! single instance's tasks are dealt round-robin and repeated until every CTA has
//! `tasks_per_cta` of them (a repeated task writes the same values again).

use super::abi::{SmemPageRegionDesc, TaskDesc, WorkerArgs, MAX_INPUTS, MAX_OUTPUTS, MAX_REGIONS};
use super::compare::OutputResult;
use super::data::{Fill, HostTensor};
use super::device::{encode_tensor_map, Gpu, GpuError, TmaView};
use super::reference::{make_inputs, semantics, Semantics};
use crate::ir::{Dtype, Target};
use crate::valid::CheckedTask;
use cudarc::driver::sys::CUtensorMapDataType;

/// Output `from_output` of task `from_task` is input `to_input` of task `to_task`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Link {
    /// Producer (index into the case's tasks).
    pub from_task: usize,
    /// Producer output index.
    pub from_output: usize,
    /// Consumer (index into the case's tasks).
    pub to_task: usize,
    /// Consumer input index.
    pub to_input: usize,
}

/// The reference of a whole chain (`mpkc verify --chain`, `driver::chain`): a Python function
/// given the chain's random inputs and some of the kernels' outputs, whose one result is
/// compared with the chain's output.
#[derive(Clone, Debug, PartialEq)]
pub struct LayerReference {
    /// The Python file.
    pub module: std::path::PathBuf,
    /// The function it defines.
    pub function: String,
    /// Every input no link fills: `unit.tensor` and (stage, input index), in stage order.
    pub inputs: Vec<(String, (usize, usize))>,
    /// What the kernels wrote, passed after them: `unit.tensor` and (stage, index among the
    /// stage's written tensors, `TaskIr::written`: its outputs and `inout` tensors, the latter
    /// as the launch left them).
    pub feeds: Vec<(String, (usize, usize))>,
    /// The chain's result: (stage, output index).
    pub output: (usize, usize),
    /// Relative-L2 tolerance.
    pub rel_l2: f64,
    /// Stages whose own references cannot be checked because a tensor they read or wrote is
    /// updated in place later in the launch (`driver::in_place`), with why: checked through the
    /// chain's output alone.
    pub alone_unchecked: Vec<(usize, String)>,
}

/// One verification case.
#[derive(Clone, Debug, Default)]
pub struct Case<'a> {
    /// Display name: the unit, or `producer -> consumer`.
    pub name: String,
    /// Task types in registration order (the producer first).
    pub tasks: Vec<&'a CheckedTask>,
    /// Tensors passed from a producer to its dependent.
    pub links: Vec<Link>,
    /// The token count of this run, for the tasks whose count is decided at run time
    /// (`= runtime`, docs/runtime-m.md): what `RuntimeConfig::qo_indptr_buffer` says, clamped to
    /// each task's maximum; `None` runs them at their maximum.
    pub tokens: Option<i64>,
    /// The context length of this run, for a case with a paged KV cache (`paged(...)`,
    /// docs/language.md "Paged KV caches"): what the run's page table states for every request;
    /// `None` runs it at the cache's `max_context`.
    pub context: Option<i64>,
    /// Inputs that take an earlier stage's input values (`from_output` indexes that stage's
    /// inputs): a chain's stages that read the same tensor (`mpkc verify --chain`).
    pub shared: Vec<Link>,
    /// The whole chain's reference (`mpkc verify --chain`).
    pub layer: Option<LayerReference>,
}

impl Case<'_> {
    /// The page table of this run, when a task of the case has a paged KV cache (seeded by
    /// `seed`, as the inputs are).
    pub fn page_table(&self, seed: u64) -> Option<super::paged::PagedRun> {
        self.tasks.iter().find_map(|t| {
            let (x, p) = super::paged::paged_of(t)?;
            let context = self.context.unwrap_or(p.max_context);
            Some(super::paged::PagedRun::new(&p, x.dims[0], context, seed))
        })
    }

    /// The token count the run's `qo_indptr_buffer` states: `tokens`, else the largest maximum of
    /// the run-time-M tasks (0 when there is none: no task reads it).
    pub fn runtime_tokens(&self) -> i64 {
        let max = self
            .tasks
            .iter()
            .filter_map(|t| super::tokens::runtime_range(t).map(|(_, hi)| hi))
            .max()
            .unwrap_or(0);
        self.tokens.unwrap_or(max)
    }
}

/// How to run a case.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Tasks per CTA queue (at least; more when the op has more tasks than CTAs can take).
    pub tasks_per_cta: usize,
    /// Random seed of the inputs.
    pub seed: u64,
    /// The target whose page plan the TaskDescs carry.
    pub target: Target,
    /// Where a Python reference's exchange goes (one directory per task below it).
    pub scratch: std::path::PathBuf,
    /// The GPU's ordinal, where a Python reference runs torch on CUDA.
    pub device: usize,
}

/// The outcome of a case that ran to completion.
#[derive(Clone, Debug)]
pub struct CaseRun {
    /// CTAs launched.
    pub ctas: u32,
    /// Tasks in all queues.
    pub tasks: usize,
    /// Longest queue.
    pub max_queue: usize,
    /// Per output of every task.
    pub outputs: Vec<OutputResult>,
}

/// The plan `task` has for `target` (its first plan when it does not declare that target).
pub(super) fn plan_for(
    task: &CheckedTask,
    target: Target,
) -> Option<&(
    crate::ir::TargetIr,
    crate::plan::pages::Geometry,
    crate::plan::pages::PagePlan,
)> {
    task.plans
        .iter()
        .find(|(x, _, _)| x.target == target)
        .or(task.plans.first())
}

/// The dynamic SMEM a harness launch needs: the target's capacity when some task has regions.
pub fn dynamic_smem(tasks: &[&CheckedTask], target: Target) -> u32 {
    tasks
        .iter()
        .filter(|t| !t.ir.regions.is_empty())
        .filter_map(|t| plan_for(t, target))
        .map(|(_, g, _)| g.capacity_bytes as u32)
        .max()
        .unwrap_or(0)
}

/// The TaskDesc's region table of `plan` (physical page start, page count and byte offset per
/// region ordinal) and its region count.
fn region_table(plan: &crate::plan::pages::PagePlan) -> (i32, [SmemPageRegionDesc; MAX_REGIONS]) {
    let mut table = [SmemPageRegionDesc::default(); MAX_REGIONS];
    for r in &plan.regions {
        if r.ordinal < MAX_REGIONS {
            table[r.ordinal] = SmemPageRegionDesc {
                physical_page_start: r.pages.first().copied().unwrap_or(0) as i32,
                page_count: r.pages.len() as i32,
                byte_offset: r.offset as i32,
            };
        }
    }
    (plan.regions.len().min(MAX_REGIONS) as i32, table)
}

/// The tensor map of a tensor whose rows are `row_stride` elements apart (a view's stride, else
/// its row length): rank 2, or a routed pipeline's `[experts, N, K]` weights, whose map spans
/// `[experts * N, K]` (the loader's box row is `expert * N + tile * BLOCK_M`).
fn tma_view(dtype: Dtype, dims: &[i64], row_stride: i64, box_dims: &[i64]) -> Option<TmaView> {
    let dt = match dtype {
        Dtype::Bf16 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        Dtype::F16 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        Dtype::F32 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
        Dtype::E4m3 | Dtype::E5m2 | Dtype::U8 | Dtype::Ue8m0 => {
            CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT8
        }
        Dtype::I32 | Dtype::I64 => return None,
    };
    if !(2..=3).contains(&dims.len()) || box_dims.len() != 3 {
        return None;
    }
    let (lead, cols) = dims.split_at(dims.len() - 1);
    Some(TmaView {
        dtype: dt,
        elem_bytes: dtype.bytes() as u64,
        rows: lead.iter().product::<i64>() as u64,
        cols: cols[0] as u64,
        row_stride: row_stride as u64,
        box_dims: [box_dims[0] as u32, box_dims[1] as u32, box_dims[2] as u32],
    })
}

/// Where a case's tensors and runtime counters live on the device.
pub struct Addresses<'a> {
    /// Per task type, per input (`input_ptrs` order): the device address.
    pub inputs: &'a [Vec<u64>],
    /// Per task type, per output: the device address.
    pub outputs: &'a [Vec<u64>],
    /// The event counters (`RuntimeConfig::event_counters`, 8 of them).
    pub events: u64,
    /// The step counter (`RuntimeConfig::step`).
    pub step: u64,
    /// The token offsets (`RuntimeConfig::qo_indptr_buffer`, [`qo_indptr`](super::abi::qo_indptr)).
    pub qo_indptr: u64,
    /// The page table (`RuntimeConfig::paged_kv_indptr_buffer`, `paged_kv_indices_buffer`,
    /// `paged_kv_last_page_len_buffer`; [`PagedRun`](super::paged::PagedRun)).
    pub paged_kv: [u64; 3],
}

/// The device-side task tables of one launch: the tensor maps of every TMA input, one TaskDesc
/// per queued task (queue after queue) and the per-CTA queue bounds, with the worker's
/// arguments pointing at them. The buffers live as long as the tables.
pub struct TaskTables {
    /// The harness kernel's argument (iteration 0).
    pub args: WorkerArgs,
    /// CTAs (one per queue).
    pub ctas: u32,
    /// Tasks in all queues.
    pub tasks: usize,
    /// Longest queue.
    pub max_queue: usize,
    _buffers: Vec<cudarc::driver::CudaSlice<u8>>,
}

/// Builds the task tables of `case` over the tensors at `at`, for the per-CTA `queues` of
/// (task offset, registration) pairs (registration 0 the producer; in a chain, a dependent waits
/// event 0 for every producer task), each task on the pages of its plan in `plans`
/// ([`super::queue::plans`] of the same queues). Errors: a tensor map the driver rejects, an
/// upload.
pub fn task_tables(
    gpu: &Gpu,
    case: &Case<'_>,
    at: &Addresses<'_>,
    queues: &[Vec<(usize, i32)>],
    plans: &[Vec<crate::plan::pages::PagePlan>],
) -> Result<TaskTables, GpuError> {
    let (in_addr, out_addr) = (at.inputs, at.outputs);
    // Tensor maps, 128 bytes each, in one buffer.
    let mut maps: Vec<u8> = Vec::new();
    let mut map_slot: Vec<Vec<Option<usize>>> = Vec::new();
    for (ti, t) in case.tasks.iter().enumerate() {
        let mut slots = Vec::new();
        for (ii, (_, x)) in t.ir.inputs().enumerate() {
            let view = x
                .tma
                .as_ref()
                .and_then(|m| tma_view(x.dtype, &x.dims, x.row_stride(), &m.box_dims));
            match view {
                Some(v) => {
                    slots.push(Some(maps.len()));
                    maps.extend_from_slice(&encode_tensor_map(&v, in_addr[ti][ii])?);
                }
                None => slots.push(None),
            }
        }
        map_slot.push(slots);
    }
    let map_buf = gpu.upload(&maps)?;
    let map_base = gpu.addr(&map_buf);
    // One TaskDesc per task type, then the queues.
    let mut base = Vec::new();
    for (ti, t) in case.tasks.iter().enumerate() {
        let mut d = TaskDesc {
            task_type: t.ir.task_id.map_or(-1, |x| x as i32),
            registration: ti as i32,
            ..TaskDesc::default()
        };
        d.num_inputs = in_addr[ti].len().min(MAX_INPUTS) as i32;
        for (i, a) in in_addr[ti].iter().take(MAX_INPUTS).enumerate() {
            d.input_ptrs[i] = *a;
            if let Some(Some(off)) = map_slot[ti].get(i) {
                d.input_tma_desc_ptrs[i][0] = map_base + *off as u64;
            }
        }
        d.num_outputs = out_addr[ti].len().min(MAX_OUTPUTS) as i32;
        for (i, a) in out_addr[ti].iter().take(MAX_OUTPUTS).enumerate() {
            d.output_ptrs[i] = *a;
        }
        base.push(d);
    }
    // Each task's pages as MPK plans them: after the task before it in its queue.
    let mut descs: Vec<u8> = Vec::new();
    let mut begin = Vec::new();
    let mut len = Vec::new();
    let mut total = 0usize;
    for (queue, plans) in queues.iter().zip(plans) {
        begin.push(total as i32);
        len.push(queue.len() as i32);
        for ((off, reg), plan) in queue.iter().zip(plans) {
            let mut d = base[*reg as usize];
            d.task_offset = *off as i32;
            (d.num_smem_regions, d.smem_regions) = region_table(plan);
            let ev = super::queue::stage_events(case, queues, *reg as usize);
            d.trigger_event = ev.trigger;
            d.dependent_event = ev.waits;
            d.dependent_triggers = ev.triggers;
            descs.extend_from_slice(d.as_bytes());
            total += 1;
        }
    }
    let to_bytes = |v: &[i32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let tasks_buf = gpu.upload(&descs)?;
    let begin_buf = gpu.upload(&to_bytes(&begin))?;
    let len_buf = gpu.upload(&to_bytes(&len))?;
    let args = WorkerArgs {
        tasks: gpu.addr(&tasks_buf),
        queue_begin: gpu.addr(&begin_buf),
        queue_len: gpu.addr(&len_buf),
        config: super::abi::RuntimeConfig {
            event_counters: at.events,
            step: at.step,
            qo_indptr_buffer: at.qo_indptr,
            paged_kv_indptr_buffer: at.paged_kv[0],
            paged_kv_indices_buffer: at.paged_kv[1],
            paged_kv_last_page_len_buffer: at.paged_kv[2],
            num_workers: queues.len() as i32,
        },
        iter_num: 0,
    };
    Ok(TaskTables {
        args,
        ctas: queues.len() as u32,
        tasks: total,
        max_queue: queues.iter().map(Vec::len).max().unwrap_or(0),
        _buffers: vec![map_buf, tasks_buf, begin_buf, len_buf],
    })
}

/// Runs `case` with the harness `entry` of `cubin`, and compares every output.
pub fn run_case(
    gpu: &Gpu,
    case: &Case<'_>,
    cubin: &[u8],
    entry: &str,
    opts: &RunOptions,
) -> Result<CaseRun, GpuError> {
    let sems: Vec<Semantics> = case
        .tasks
        .iter()
        .map(|t| semantics(t).map_err(|e| GpuError::Kernel(format!("{}: {e}", t.ir.unit_name()))))
        .collect::<Result<_, _>>()?;
    let run_m = case.runtime_tokens();
    let (mut inputs, mut outputs) = host_tensors(case, &sems, opts.seed, run_m);
    // A grid-wide op runs a second step (`step1`) on the inputs and poisoned outputs step 0 got.
    let before = super::step1::applies(case).then(|| (inputs[0].clone(), outputs[0].clone()));
    // Device buffers: outputs first (a linked input is its producer's output buffer). A view
    // (`view(stride, offset)`) gets its whole parent, poisoned but for the view's elements, and
    // its address is the view's first element.
    let tensor_of = |ti: usize, out: bool, i: usize| {
        let ir = &case.tasks[ti].ir;
        let t = if out {
            ir.outputs().nth(i)
        } else {
            ir.inputs().nth(i)
        };
        t.map(|(_, t)| t)
    };
    let view_addr = |base: u64, t: Option<&crate::ir::TensorIr>| match t
        .and_then(|t| t.view.map(|v| (v, t.dtype)))
    {
        Some((v, dt)) => base + (v.offset * dt.bytes()) as u64,
        None => base,
    };
    let mut out_bufs: Vec<Vec<cudarc::driver::CudaSlice<u8>>> = Vec::new();
    for (ti, outs) in outputs.iter().enumerate() {
        out_bufs.push(
            outs.iter()
                .enumerate()
                .map(|(oi, o)| gpu.upload(&device_bytes(o, tensor_of(ti, true, oi))))
                .collect::<Result<Vec<_>, _>>()?,
        );
    }
    // Per task, per input: the buffer uploaded for it (`None` for a linked input).
    let mut in_bufs: Vec<Vec<Option<cudarc::driver::CudaSlice<u8>>>> = Vec::new();
    let mut in_addr: Vec<Vec<u64>> = Vec::new();
    for (ti, ins) in inputs.iter().enumerate() {
        let mut addrs = Vec::new();
        let mut bufs = Vec::new();
        for (ii, x) in ins.iter().enumerate() {
            let t = tensor_of(ti, false, ii);
            match case
                .links
                .iter()
                .find(|l| l.to_task == ti && l.to_input == ii)
            {
                Some(l) => {
                    // A view of the producer's output lies in it at its own columns.
                    let from = tensor_of(l.from_task, true, l.from_output);
                    let base = gpu.addr(&out_bufs[l.from_task][l.from_output]);
                    addrs.push(match t.and_then(|t| t.view) {
                        Some(_) => view_addr(base, t),
                        None => view_addr(base, from),
                    });
                    bufs.push(None);
                }
                None => match crate::driver::in_place::shares_inout_buffer(
                    &case.tasks,
                    &case.shared,
                    ti,
                    ii,
                ) {
                    // The buffer of an earlier stage's `inout` input (the KV cache the append
                    // wrote), not a copy of its values.
                    Some((st, si)) => {
                        let b = in_bufs
                            .get(st)
                            .and_then(|v: &Vec<Option<_>>| v.get(si))
                            .and_then(Option::as_ref)
                            .ok_or_else(|| {
                                GpuError::Kernel(format!(
                                    "{}: input {ii} shares an `inout` buffer that is itself linked",
                                    case.tasks[ti].ir.unit_name()
                                ))
                            })?;
                        addrs.push(view_addr(gpu.addr(b), t));
                        bufs.push(None);
                    }
                    None => {
                        let b = gpu.upload(&device_bytes(x, t))?;
                        addrs.push(view_addr(gpu.addr(&b), t));
                        bufs.push(Some(b));
                    }
                },
            }
        }
        in_addr.push(addrs);
        in_bufs.push(bufs);
    }
    let q = super::queue::queues(case, opts.tasks_per_cta, gpu.sms as usize);
    let plans = super::queue::plans(case, opts.target, &q).map_err(GpuError::Kernel)?;
    super::queue::check_pages_of(case, &q, &plans, 64).map_err(GpuError::Kernel)?;
    let events = gpu.upload(&vec![0u8; 8 * super::queue::event_count(case)])?;
    let mut step = gpu.upload(&[0u8; 16])?;
    // A paged KV cache's page table (one token per request: its qo_indptr too); without one,
    // an empty table (every request holds no page).
    let table = case.page_table(opts.seed);
    let qo_indptr = gpu.upload(&match &table {
        Some(t) if case.tokens.is_none() => super::paged::PagedRun::bytes(&t.qo_indptr),
        _ => qo_indptr_bytes(run_m),
    })?;
    let empty_table = |n: usize| vec![0u8; 4 * n];
    let paged_bufs = [
        gpu.upload(&table.as_ref().map_or_else(
            || empty_table(super::abi::MAX_NUM_BATCHED_REQUESTS + 1),
            |t| super::paged::PagedRun::bytes(&t.indptr),
        ))?,
        gpu.upload(&table.as_ref().map_or_else(
            || empty_table(1),
            |t| super::paged::PagedRun::bytes(&t.indices),
        ))?,
        gpu.upload(&table.as_ref().map_or_else(
            || empty_table(super::abi::MAX_NUM_BATCHED_REQUESTS),
            |t| super::paged::PagedRun::bytes(&t.last_page_len),
        ))?,
    ];
    let out_addr: Vec<Vec<u64>> = out_bufs
        .iter()
        .enumerate()
        .map(|(ti, bs)| {
            bs.iter()
                .enumerate()
                .map(|(oi, b)| view_addr(gpu.addr(b), tensor_of(ti, true, oi)))
                .collect()
        })
        .collect();
    let tables = task_tables(
        gpu,
        case,
        &Addresses {
            inputs: &in_addr,
            outputs: &out_addr,
            events: gpu.addr(&events),
            step: gpu.addr(&step),
            qo_indptr: gpu.addr(&qo_indptr),
            paged_kv: [
                gpu.addr(&paged_bufs[0]),
                gpu.addr(&paged_bufs[1]),
                gpu.addr(&paged_bufs[2]),
            ],
        },
        &q,
        &plans,
    )?;
    let args = tables.args;
    let total = tables.tasks;
    let smem = dynamic_smem(&case.tasks, opts.target);
    let kernel = gpu.load(cubin, entry, smem)?;
    gpu.run(&kernel, q.len() as u32, smem, &args)?;
    // Results, and the references (a dependent's on its producer's actual outputs). A view is
    // read back from its parent; only the view's elements are compared.
    for (ti, outs) in outputs.iter_mut().enumerate() {
        for (oi, o) in outs.iter_mut().enumerate() {
            read_back(gpu, o, &out_bufs[ti][oi], tensor_of(ti, true, oi))?;
        }
    }
    // The chain reference reads the random inputs as generated (the linked ones are replaced
    // below by what the producers wrote).
    let original_inputs = if case.layer.is_some() {
        inputs.clone()
    } else {
        Vec::new()
    };
    for l in &case.links {
        // The consumer's shape of the same elements (a `[m * 8, 512]` output read as
        // `[m, 8 * 512]`), or a view's elements in the producer's buffer.
        let src = outputs[l.from_task][l.from_output].bytes.clone();
        let x = &mut inputs[l.to_task][l.to_input];
        match tensor_of(l.to_task, false, l.to_input).and_then(|t| t.view) {
            Some(v) => x.from_parent(&src, v.row_stride, v.offset),
            None => x.bytes = src,
        }
    }
    // An input in an earlier stage's `inout` buffer read what that stage left there.
    for l in &case.shared {
        if let Some((st, si)) = crate::driver::in_place::shares_inout_buffer(
            &case.tasks,
            &case.shared,
            l.to_task,
            l.to_input,
        ) {
            if let Some(b) = &in_bufs[st][si] {
                let t = tensor_of(l.to_task, false, l.to_input);
                read_back(gpu, &mut inputs[l.to_task][l.to_input], b, t)?;
            }
        }
    }
    // What each task wrote, in `written()` order (the references' `Expected::output`): an `out`
    // tensor from its output buffer, an `inout` one from its input buffer, whose initial value
    // the reference read.
    let mut finals_of: Vec<Vec<HostTensor>> = Vec::new();
    for (ti, t) in case.tasks.iter().enumerate() {
        let unit = t.ir.unit_name();
        let mut finals = Vec::new();
        let (mut ii, mut oi) = (0, 0);
        for (_, x) in t.ir.tensors.iter() {
            match x.direction {
                crate::ir::Direction::In => ii += 1,
                crate::ir::Direction::Out => {
                    finals.push(outputs[ti][oi].clone());
                    oi += 1;
                }
                crate::ir::Direction::InOut => {
                    let mut fin = inputs[ti][ii].clone();
                    // Its own buffer, or the one it is updated in (the stage is then checked
                    // through the chain's output alone, `driver::in_place`).
                    let linked = case
                        .links
                        .iter()
                        .find(|l| l.to_task == ti && l.to_input == ii)
                        .map(|l| &out_bufs[l.from_task][l.from_output]);
                    let shared = crate::driver::in_place::shares_inout_buffer(
                        &case.tasks,
                        &case.shared,
                        ti,
                        ii,
                    )
                    .and_then(|(st, si)| in_bufs[st][si].as_ref());
                    match in_bufs[ti][ii].as_ref().or(linked).or(shared) {
                        Some(b) => read_back(gpu, &mut fin, b, Some(x))?,
                        None => {
                            return Err(GpuError::Kernel(format!(
                                "{unit}: `inout` tensor `{}` has no buffer",
                                x.name
                            )))
                        }
                    }
                    finals.push(fin);
                    ii += 1;
                }
            }
        }
        finals_of.push(finals);
    }
    let mut results = super::outputs::check_outputs(
        case,
        &sems,
        (&inputs, &original_inputs),
        (&finals_of, &outputs),
        table.as_ref(),
        (run_m, q.len()),
        opts,
    )?;
    if let Some((ins, outs)) = &before {
        let launched = super::step1::Launched {
            kernel: &kernel,
            grid: q.len() as u32,
            smem,
            args,
            step: &mut step,
            outputs: &mut out_bufs[0],
            inputs: &mut in_bufs[0],
        };
        results.extend(super::step1::run(
            gpu,
            case,
            &sems,
            launched,
            (ins, outs),
            table.as_ref(),
            (run_m, q.len()),
            opts,
        )?);
    }
    Ok(CaseRun {
        ctas: q.len() as u32,
        tasks: total,
        max_queue: q.iter().map(Vec::len).max().unwrap_or(0),
        outputs: results,
    })
}

/// The bytes of `x` as its device buffer holds them: a view's (`view(stride, offset)`) parent,
/// poisoned but for the view's elements, else `x`'s own.
pub(super) fn device_bytes(x: &HostTensor, t: Option<&crate::ir::TensorIr>) -> Vec<u8> {
    match t.and_then(|t| t.view) {
        Some(v) => x.to_parent(v.row_stride, v.offset),
        None => x.bytes.clone(),
    }
}

/// Reads `buf` back into `x`: a view from its parent (only the view's elements), else whole.
pub(super) fn read_back(
    gpu: &Gpu,
    x: &mut HostTensor,
    buf: &cudarc::driver::CudaSlice<u8>,
    t: Option<&crate::ir::TensorIr>,
) -> Result<(), GpuError> {
    let bytes = gpu.download(buf)?;
    match t.and_then(|t| t.view) {
        Some(v) => x.from_parent(&bytes, v.row_stride, v.offset),
        None => x.bytes = bytes,
    }
    Ok(())
}

/// The host tensors of `case`: per task, its inputs (random, seeded by `seed` and the task's
/// position; a shared chain input copied from the earlier stage's; rows past a run-time count
/// poisoned) and its outputs (poisoned).
fn host_tensors(
    case: &Case<'_>,
    sems: &[Semantics],
    seed: u64,
    run_m: i64,
) -> (Vec<Vec<HostTensor>>, Vec<Vec<HostTensor>>) {
    let mut inputs: Vec<Vec<HostTensor>> = Vec::new();
    let mut outputs: Vec<Vec<HostTensor>> = Vec::new();
    for (i, (t, sem)) in case.tasks.iter().zip(sems).enumerate() {
        let mut fill = Fill::new(
            seed.wrapping_mul(0x9E37_79B9_7F4A_7C15)
                .wrapping_add(i as u64),
        );
        let mut ins = make_inputs(t, sem, &mut fill);
        // A chain's stage that reads an earlier stage's input gets the same values.
        for l in case.shared.iter().filter(|l| l.to_task == i) {
            let dims = ins[l.to_input].dims.clone();
            ins[l.to_input] = inputs[l.from_task][l.from_output].clone();
            ins[l.to_input].dims = dims;
        }
        // A run below the task's maximum: the input rows past the count hold the poison, so a
        // result that reads them is NaN or wrong (docs/runtime-m.md).
        if let Some(m) = super::outputs::tokens_of(t, run_m) {
            for (x, (_, ti)) in ins.iter_mut().zip(t.ir.inputs()) {
                if ti.runtime_rows {
                    super::tokens::poison_rows_from(x, m);
                }
            }
        }
        inputs.push(ins);
        outputs.push(
            t.ir.outputs()
                .map(|(h, o)| HostTensor::output_before_run(o, t.zero_between_runs(h)))
                .collect(),
        );
    }
    (inputs, outputs)
}

/// The bytes of a `qo_indptr_buffer` stating `m` tokens.
pub fn qo_indptr_bytes(m: i64) -> Vec<u8> {
    let m = i32::try_from(m.max(0)).unwrap_or(i32::MAX);
    super::abi::qo_indptr(m)
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::reference::expected;

    use crate::driver::stdlib::unit as stdlib_task;

    #[test]
    fn a_strided_operand_s_tensor_map_steps_rows_by_the_view() {
        let t = stdlib_task("q_b_strided");
        let (_, a) = t.ir.inputs().find(|(_, x)| x.name == "A").unwrap();
        let m = a.tma.as_ref().unwrap();
        let v = tma_view(a.dtype, &a.dims, a.row_stride(), &m.box_dims).unwrap();
        assert_eq!((v.cols, v.row_stride), (1536, 2176));
        let (_, w) = t.ir.inputs().find(|(_, x)| x.name == "W").unwrap();
        let v = tma_view(
            w.dtype,
            &w.dims,
            w.row_stride(),
            &w.tma.as_ref().unwrap().box_dims,
        )
        .unwrap();
        assert_eq!(v.row_stride, v.cols);
    }

    #[test]
    fn an_in_place_norm_is_compared_on_its_input_slot() {
        let t = stdlib_task("qkv_a_norm_kv_a");
        let sem = semantics(&t).unwrap();
        let inputs = make_inputs(&t, &sem, &mut Fill::new(3));
        // `x` (inout) is input 0, the weight input 1; nothing is an output slot.
        assert_eq!(inputs.len(), 2);
        assert_eq!(t.ir.outputs().count(), 0);
        let exp = expected(&t, &sem, &inputs);
        assert_eq!(exp.len(), 1);
        assert_eq!(exp[0].output, 0);
        let (x, w) = (&inputs[0], &inputs[1]);
        let h = x.dims[1] as usize;
        let ss: f64 = (0..h).map(|c| x.get(c).powi(2)).sum();
        let want = x.get(5) / (ss / h as f64 + 1e-6).sqrt() * w.get(5);
        assert!((exp[0].values[5] - want).abs() < 1e-12);
        // The harness lays the view out in its parent: row 0 at column 1536 of 2176.
        let v = t.ir.tensors.values().next().unwrap().view.unwrap();
        let parent = x.to_parent(v.row_stride, v.offset);
        assert_eq!(parent.len(), 2176 * 2 * x.dims[0] as usize);
        assert_eq!(&parent[1536 * 2..1536 * 2 + 2], &x.bytes[..2]);
    }

    #[test]
    fn the_house_linear_region_table_follows_the_plan() {
        let t = stdlib_task("linear_sm100_v2");
        let (n, table) = region_table(&plan_for(&t, Target::Sm90a).unwrap().2);
        assert_eq!(n as usize, t.ir.regions.len());
        // Stage 0 of W starts the first page.
        assert_eq!(
            table[0],
            SmemPageRegionDesc {
                physical_page_start: 0,
                page_count: 2,
                byte_offset: 0
            }
        );
    }
}
