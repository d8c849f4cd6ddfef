//! A grid-wide consumer task's locals (contract doc §5, I-H4; checked by `valid::grid`):
//! `kNumTasks`, the runtime's worker count (one task per worker), and the consumer's
//! `grid_sync(site)`, the in-op grid barrier on counter `site` of the `grid_barrier` tensor.

use super::writer::Writer;
use crate::ir::{GranularityIr, TaskIr, TensorRole};

/// `int const kNumTasks = runtime_config.num_workers;` in a role function of a grid-wide task
/// (its count is the runtime's: the generated layer asserts `num_tasks == num_workers`, I-H4);
/// nothing for a per-tile task, whose `kNumTasks` is the namespace's constant.
pub(super) fn task_count(w: &mut Writer, ir: &TaskIr) {
    if ir.granularity.is_grid_wide() {
        w.line("int const kNumTasks = runtime_config.num_workers;  // grid-wide: one task per worker (I-H4)");
        w.line("(void)kNumTasks;");
    }
}

/// The consumer's grid-wide locals: [`task_count`], then `grid_sync(site)`: every thread's
/// writes fenced (`__threadfence`), the warpgroup gathered on the granularity's barrier,
/// thread 0 adding one to counter `site` (release) and waiting until it reaches
/// `kNumTasks * (iter_num + 1)` (acquire; the counters are seeded zero at step 0 only and never
/// reset), the warpgroup gathered again (`mpkc::grid_barrier`, stdlib/include/mpkc_prelude.cuh).
/// Nothing for a per-tile task, or where the checker reported the barrier or the counters
/// missing (E0602).
pub(super) fn consumer_locals(w: &mut Writer, ir: &TaskIr) {
    let GranularityIr::GridWide {
        barrier: Some((bar, _)),
        ..
    } = &ir.granularity
    else {
        return;
    };
    let Some((_, counters)) = ir.tensor_with_role(TensorRole::GridBarrier) else {
        return;
    };
    task_count(w, ir);
    w.comment(format!(
        "grid_sync(site): the in-op grid barrier on counter `site` of `{}` (contract doc §5): all 128 threads'",
        counters.name
    ));
    w.comment(format!(
        "writes fenced, then gathered on `{bar}`; thread 0 adds 1 (release) and waits for kNumTasks * (iter_num + 1)"
    ));
    w.comment("(acquire): the counters are seeded zero at step 0 only (skip_after_step0) and never reset. Each");
    w.comment("site is passed once per step.");
    w.open("auto const grid_sync = [&](int mpkc_site)");
    w.line(format!(
        "mpkc::grid_barrier(reinterpret_cast<unsigned long long *>({}) + mpkc_site, static_cast<unsigned long long>(kNumTasks) * static_cast<unsigned long long>(iter_num + 1), BAR_{}, kConsumerThreads);",
        counters.name,
        super::names::upper(bar)
    ));
    w.close(";");
}
