//! The comparisons of one verification run (`run::run_case`): each task's outputs against its
//! reference on the inputs it received (a run-time-M task on its first `m` rows, every row past
//! them still poisoned), a chain's stages an in-place update hides left to the chain's output,
//! and a chain's output against the chain's own reference.

use super::compare::{compare, OutputResult};
use super::data::HostTensor;
use super::device::GpuError;
use super::reference::{expected_in, Semantics};
use super::run::{Case, RunOptions};
use crate::valid::CheckedTask;

/// Every output of `case` against its reference: each task's (what it wrote, `finals[task]`, on
/// the inputs it received, `inputs`), then a chain's output against the chain reference (on the
/// inputs as generated, `original`). Errors: a reference that cannot run.
pub(super) fn check_outputs(
    case: &Case<'_>,
    sems: &[Semantics],
    (inputs, original): (&[Vec<HostTensor>], &[Vec<HostTensor>]),
    (finals, outputs): (&[Vec<HostTensor>], &[Vec<HostTensor>]),
    table: Option<&super::paged::PagedRun>,
    (run_m, passes): (i64, usize),
    opts: &RunOptions,
) -> Result<Vec<OutputResult>, GpuError> {
    let mut results = Vec::new();
    for (ti, t) in case.tasks.iter().enumerate() {
        if case
            .layer
            .as_ref()
            .is_some_and(|l| l.alone_unchecked.iter().any(|(s, _)| *s == ti))
        {
            continue;
        }
        let unit = t.ir.unit_name();
        let finals = &finals[ti];
        results.extend(
            grid_barrier_counts(t, passes)
                .iter()
                .map(|e| compare(&unit, finals, e)),
        );
        let scratch = opts.scratch.join(format!("{ti}_{unit}"));
        match tokens_of(t, run_m) {
            None => {
                let exp = expected_in(t, &sems[ti], &inputs[ti], table, &scratch, opts.device)
                    .map_err(|e| GpuError::Reference(format!("{unit}: {e}")))?;
                for e in exp {
                    results.push(compare(&unit, finals, &e));
                }
            }
            Some(m) => results.extend(
                compare_at(
                    t,
                    &sems[ti],
                    &inputs[ti],
                    finals,
                    m,
                    table,
                    (&scratch, opts.device),
                )
                .map_err(|e| GpuError::Reference(format!("{unit}: {e}")))?,
            ),
        }
    }
    // The whole chain's output against its own reference (`mpkc verify --chain`).
    if let Some(layer) = &case.layer {
        let (st, oi) = layer.output;
        let out = &outputs[st][oi];
        let values = super::chain_reference::run_chain_reference(
            layer,
            original,
            finals,
            (&out.name, out.dtype, &out.dims),
            table,
            &opts.scratch.join("chain"),
            opts.device,
        )
        .map_err(|e| GpuError::Reference(format!("{}: {e}", case.name)))?;
        results.push(compare(
            &case.name,
            std::slice::from_ref(out),
            &super::reference::Expected {
                output: 0,
                values,
                check: super::reference::Check::RelL2(layer.rel_l2),
            },
        ));
    }
    Ok(results)
}

/// What a grid-wide task's `grid_barrier` counters hold after `passes` = workers x steps:
/// every site passed once by each of the workers' tasks in each step (seeded zero at step 0
/// only, `need = workers x (iter_num + 1)`), compared exactly; a site the body never passes
/// stays 0 and fails. Nothing for a per-tile task.
fn grid_barrier_counts(t: &CheckedTask, passes: usize) -> Vec<super::reference::Expected> {
    if !t.ir.granularity.is_grid_wide() {
        return Vec::new();
    }
    t.ir.written()
        .enumerate()
        .filter(|(_, (_, x))| x.role() == Some(crate::ir::TensorRole::GridBarrier))
        .map(|(o, (_, x))| super::reference::Expected {
            output: o,
            values: vec![passes as f64; x.elements().unwrap_or(0).max(0) as usize],
            check: super::reference::Check::Exact,
        })
        .collect()
}

/// The token count task `t` runs at in a run whose `qo_indptr_buffer` states `run_m`, if its
/// count is decided at run time: `run_m` clamped to its range, as the generated code clamps it.
pub(super) fn tokens_of(t: &CheckedTask, run_m: i64) -> Option<i64> {
    super::tokens::runtime_range(t).map(|(_, max)| run_m.clamp(0, max))
}

/// The comparison of a run-time-M task run at `m` tokens: the reference on the first `m` rows of
/// its token tensors (with the run's page table, if any), run in `scratch` on GPU `cuda_device`,
/// and every output row at or past `m` still poisoned (`past_m`).
fn compare_at(
    t: &CheckedTask,
    sem: &Semantics,
    inputs: &[HostTensor],
    outputs: &[HostTensor],
    m: i64,
    table: Option<&super::paged::PagedRun>,
    (scratch, cuda_device): (&std::path::Path, usize),
) -> Result<Vec<OutputResult>, String> {
    use super::tokens::{first_rows, semantics_at, written_past};
    let ins: Vec<HostTensor> = inputs
        .iter()
        .zip(t.ir.inputs())
        .map(|(x, (_, ti))| {
            if ti.runtime_rows {
                first_rows(x, m)
            } else {
                x.clone()
            }
        })
        .collect();
    let rt: Vec<bool> = t.ir.written().map(|(_, o)| o.runtime_rows).collect();
    let outs: Vec<HostTensor> = outputs
        .iter()
        .zip(&rt)
        .map(|(o, r)| if *r { first_rows(o, m) } else { o.clone() })
        .collect();
    let unit = t.ir.unit_name();
    Ok(
        expected_in(t, &semantics_at(sem, m), &ins, table, scratch, cuda_device)?
            .iter()
            .map(|e| {
                let mut r = compare(&unit, &outs, e);
                if rt.get(e.output).copied().unwrap_or(false) {
                    r.past_m = written_past(&outputs[e.output], m);
                    r.pass &= r.past_m == 0;
                }
                r
            })
            .collect(),
    )
}

/// The name of the first output of `tasks` that must be left zero
/// ([`CheckedTask::zero_between_runs`]) and
/// that a run left other than all zero, if any; `outputs[t]` are task `t`'s outputs after the run.
pub(crate) fn counters_left(tasks: &[&CheckedTask], outputs: &[Vec<HostTensor>]) -> Option<String> {
    tasks.iter().zip(outputs).find_map(|(t, outs)| {
        t.ir.outputs()
            .zip(outs)
            .find(|((h, _), o)| t.zero_between_runs(*h) && o.bytes.iter().any(|b| *b != 0))
            .map(|((_, x), _)| x.name.clone())
    })
}
