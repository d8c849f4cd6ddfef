//! "Granularity": how many tasks the op is split into per step and what a task's
//! `task_offset` selects.

use crate::ir::GranularityIr;
use crate::valid::CheckedTask;
use std::fmt::Write as _;

/// Writes the "Granularity" section of `task`.
pub(super) fn write(s: &mut String, task: &CheckedTask) {
    let _ = writeln!(s, "## Granularity\n");
    if let Some(p) = task.linear() {
        let _ = writeln!(
            s,
            "Per tile: {} tasks; `task_offset % {}` is the N tile{}. One tile per task (I-P6).\n",
            task.ir.granularity.tasks(),
            p.num_tiles,
            match (&p.route, p.splits > 1) {
                (Some(r), _) => match r.mode {
                    crate::ir::RouteMode::PerSlot => format!(
                        ", `task_offset / {}` the route: token `route / {}`, slot `route % {}`, whose expert `{}[token, slot]` the loader reads at run time (`route ... per slot`, out of {} experts); the output row is the route",
                        p.num_tiles, r.slots, r.slots, task.ir.tensors[r.ids].name, r.experts
                    ),
                    crate::ir::RouteMode::SumSlots => format!(
                        ", `task_offset / {}` the token; K iteration `it` multiplies slot `it / {}`'s expert `{}[token, slot]`, read at run time (`route ... sum slots`, {} slots of {} experts), so the accumulator sums the slots",
                        p.num_tiles, r.slot_k_iters, task.ir.tensors[r.ids].name, r.slots, r.experts
                    ),
                },
                (None, true) => format!(", `task_offset / {}` the K split", p.num_tiles),
                (None, false) => String::new(),
            }
        );
        return;
    }
    match &task.ir.granularity {
        GranularityIr::PerTile {
            tasks,
            tiles_per_task,
            ..
        } => {
            let _ = writeln!(
                s,
                "Per tile: {tasks} task(s) per step, {tiles_per_task} tile(s) each; `task_offset` is the task index, 0 to {} \
(`kNumTasks = {tasks}` in its kernel).\n",
                tasks - 1
            );
        }
        GranularityIr::GridWide {
            skip_after_step0,
            barrier,
            justification,
            ..
        } => {
            let counters = task
                .ir
                .tensor_with_role(crate::ir::TensorRole::GridBarrier)
                .map(|(_, t)| t);
            let _ = writeln!(
                s,
                "Grid-wide: one task per worker (`num_tasks == num_workers`, asserted by the generated layer); \
`kNumTasks` is read at run time from `runtime_config.num_workers` and `task_offset` is the task index, 0 to \
`kNumTasks - 1`.{}\n",
                justification
                    .as_ref()
                    .map_or(String::new(), |j| format!(" Why not per-tile tasks: {j}."))
            );
            if let (Some(c), Some((bar, _))) = (counters, barrier) {
                let _ = writeln!(
                    s,
                    "The body's `grid_sync(site)` is the in-op grid barrier (contract doc §5): the 128 consumer threads fence \
their writes and gather on named barrier `{bar}`, thread 0 adds 1 to counter `site` of `{}` ({} site(s), i64) and \
waits until it reaches `kNumTasks * (iter_num + 1)`, and the threads gather again. The counters are monotonic: \
seeded zero at step 0 only{} and never reset (I-H4), so each site is passed once per step.\n",
                    c.name,
                    c.dims.first().copied().unwrap_or(1),
                    if *skip_after_step0 {
                        " (`skip_after_step0`: the wiring's `tensor_init` runs at step 0 alone)"
                    } else {
                        ""
                    }
                );
            }
        }
    }
}
