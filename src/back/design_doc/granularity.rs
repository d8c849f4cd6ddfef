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
            if p.splits > 1 {
                format!(", `task_offset / {}` the K split", p.num_tiles)
            } else {
                String::new()
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
