//! The second decode step of a grid-wide task (docs/language.md, "granularity grid_wide"): its
//! `grid_barrier` counters are monotonic, seeded zero at step 0 only, and each barrier waits
//! for `kNumTasks * (iter_num + 1)` arrivals, so a step-0 run proves nothing about step 1, where
//! the classic fault shows ("iter-0 fine, iter-1 hang": counters re-zeroed, or a `need` that
//! does not grow with `iter_num`; mpk-v2-contract.md §5, I-H4). After step 0 is compared,
//! verify launches the same queues again at `iter_num = 1` (`runtime_config.step[0] = 1`) with
//! the event and barrier counters as step 0 left them, as the runtime's next step finds them;
//! the outputs are poisoned again and the op's `inout` tensors (its own state apart) restored,
//! so the step must write everything anew; then it compares the outputs with the reference
//! once more and each counter with `workers x 2`, exactly.
//!
//! Only a case of one grid-wide task runs it (`mpkc verify` of the op itself); a chain with a
//! grid-wide stage is checked at step 0.

use super::compare::OutputResult;
use super::data::HostTensor;
use super::device::{Gpu, GpuError, Kernel};
use super::reference::Semantics;
use super::run::{device_bytes, read_back, Case, RunOptions};
use crate::ir::{Direction, TensorIr};
use cudarc::driver::CudaSlice;

/// Whether `case` runs a second step: one grid-wide task, linked to nothing.
pub fn applies(case: &Case<'_>) -> bool {
    case.tasks.len() == 1
        && case.tasks[0].ir.granularity.is_grid_wide()
        && case.links.is_empty()
        && case.shared.is_empty()
        && case.layer.is_none()
}

/// The device state of a case after its step-0 launch.
pub(super) struct Launched<'a> {
    /// The loaded harness, its grid and dynamic SMEM.
    pub kernel: &'a Kernel,
    pub grid: u32,
    pub smem: u32,
    /// The step-0 launch's arguments (the same queues and buffers).
    pub args: super::abi::WorkerArgs,
    /// `runtime_config.step`.
    pub step: &'a mut CudaSlice<u8>,
    /// The task's output buffers, in `outputs()` order.
    pub outputs: &'a mut [CudaSlice<u8>],
    /// The task's input buffers, in `inputs()` order.
    pub inputs: &'a mut [Option<CudaSlice<u8>>],
}

/// Runs step 1 of the one task of `case` and compares it: `inputs` and `outputs_before` are the
/// host tensors as step 0 received them (the inputs, the poisoned outputs); `workers` the CTAs.
/// Each result's tensor is labelled `at step 1`.
#[allow(clippy::too_many_arguments)]
pub(super) fn run(
    gpu: &Gpu,
    case: &Case<'_>,
    sems: &[Semantics],
    dev: Launched<'_>,
    (inputs, outputs_before): (&[HostTensor], &[HostTensor]),
    table: Option<&super::paged::PagedRun>,
    (run_m, workers): (i64, usize),
    opts: &RunOptions,
) -> Result<Vec<OutputResult>, GpuError> {
    let task = case.tasks[0];
    // Poison the outputs again and restore the op's `inout` operands: step 1 reads what step 0
    // read and must write every element itself. The op's own state keeps what step 0 left.
    for ((buf, x), (_, t)) in dev
        .outputs
        .iter_mut()
        .zip(outputs_before)
        .zip(task.ir.outputs())
    {
        gpu.write(buf, &device_bytes(x, Some(t)))?;
    }
    for ((buf, x), (_, t)) in dev.inputs.iter_mut().zip(inputs).zip(task.ir.inputs()) {
        if t.direction == Direction::InOut && !t.is_state() {
            if let Some(b) = buf.as_mut() {
                gpu.write(b, &device_bytes(x, Some(t)))?;
            }
        }
    }
    gpu.write(dev.step, &1i32.to_le_bytes())?;
    let mut args = dev.args;
    args.iter_num = 1;
    gpu.run(dev.kernel, dev.grid, dev.smem, &args)?;
    // What the step wrote, in `written()` order.
    let read = |x: &HostTensor, buf: &CudaSlice<u8>, t: &TensorIr| {
        let mut x = x.clone();
        read_back(gpu, &mut x, buf, Some(t)).map(|()| x)
    };
    let mut outputs = Vec::new();
    for ((buf, x), (_, t)) in dev
        .outputs
        .iter()
        .zip(outputs_before)
        .zip(task.ir.outputs())
    {
        outputs.push(read(x, buf, t)?);
    }
    let mut finals = Vec::new();
    let (mut ii, mut oi) = (0, 0);
    for (_, t) in task.ir.tensors.iter() {
        match t.direction {
            Direction::In => ii += 1,
            Direction::Out => {
                finals.push(outputs[oi].clone());
                oi += 1;
            }
            Direction::InOut => {
                let buf = dev.inputs.get(ii).and_then(Option::as_ref).ok_or_else(|| {
                    GpuError::Kernel(format!(
                        "{}: `inout` tensor `{}` has no buffer",
                        task.ir.unit_name(),
                        t.name
                    ))
                })?;
                finals.push(read(&inputs[ii], buf, t)?);
                ii += 1;
            }
        }
    }
    let mut results = super::outputs::check_outputs(
        case,
        sems,
        (std::slice::from_ref(&inputs.to_vec()), &[]),
        (
            std::slice::from_ref(&finals),
            std::slice::from_ref(&outputs),
        ),
        table,
        (run_m, workers * 2),
        opts,
    )?;
    for r in &mut results {
        r.tensor = format!("{} at step 1", r.tensor);
    }
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case_of<'a>(tasks: Vec<&'a crate::valid::CheckedTask>) -> Case<'a> {
        Case {
            name: "c".into(),
            tasks,
            ..Default::default()
        }
    }

    #[test]
    fn a_grid_wide_op_alone_runs_a_second_step_and_a_per_tile_op_does_not() {
        let c = crate::driver::check_sources(
            &[crate::driver::Source {
                path: "examples/softmax_grid.mpk".into(),
                text: include_str!("../../examples/softmax_grid.mpk").into(),
            }],
            &Default::default(),
            &Default::default(),
        );
        let grid = &c[0].tasks[0];
        assert!(applies(&case_of(vec![grid])));
        let tile = crate::driver::stdlib::unit("argmax_partial_v2");
        assert!(!applies(&case_of(vec![&tile])));
        // In a chain the stage is checked at step 0 only.
        assert!(!applies(&case_of(vec![grid, &tile])));
    }
}
