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
            justification,
            ..
        } => {
            let _ = writeln!(
                s,
                "Grid-wide: one task per worker (`num_tasks == num_workers`){}{}.\n",
                if *skip_after_step0 {
                    ", skipped after step 0"
                } else {
                    ""
                },
                justification
                    .as_ref()
                    .map_or(String::new(), |j| format!("; why: {j}"))
            );
        }
    }
}
