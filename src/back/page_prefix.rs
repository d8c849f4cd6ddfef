//! The loader's own page prefix (page mode 1 with `auto_loader_page_lifecycle = false`, contract
//! doc §1.5), shared by the pipeline loader and the consumer-only families' loaders: the loader
//! warp waits the pages its task uses, hands them on (its loads, or the `pages_ready` hand-off),
//! and only then waits and frees the pages the task does not use. It stays every page's one
//! observer, every task of the queue (I-P5), while a task whose pages MPK's planner took from
//! those the task before it left unused (I-S12) starts before that task releases its own.

use super::writer::Writer;

/// The task's used pages as the warp's mask `used_pages` (bit p = page p): `mpkc::used_page_mask`,
/// a warp collective, so the whole loader warp declares it before anything diverges.
pub(crate) fn used_mask(w: &mut Writer) {
    w.line("uint32_t const used_pages = mpkc::used_page_mask(task_desc);  // a warp collective, before the page wait");
}

/// Lane p waits physical page p with the task's parity if the task uses it (`used_pages`, the
/// warp's mask, declared before), then the warp reconverges: the `__syncwarp` orders whatever
/// one lane does next with the pages after every lane's acquire (PTX ISA, `bar.warp.sync`:
/// memory ordering among the participating threads). Declares `page` (the lane's page). In a
/// `mpkc bench --timeline` build the loader warp stamps the wait's end (slot 3 of W4,
/// `gpu::bench::timeline::EXTRA`), for the pipeline and the consumer-only loaders alike.
pub(crate) fn acquire_used(w: &mut Writer) {
    w.line("__syncwarp();");
    w.line("int const page = mpkc::lane_id();");
    w.line("if (page < MAX_SMEM_PAGES_PER_TASK && (used_pages >> page & 1u)) mpkc::rt::wait_page_ready(runtime_smem, page, instruction_index);");
    w.line("__syncwarp();");
    w.line("#ifdef MPKC_BENCH_STAMPS");
    w.line(
        "mpkc_bench_phase(4, instruction_index, 3);  // mpkc bench --timeline: the used pages waited",
    );
    w.line("#endif");
}

/// After the hand-off: the warp reconverges and lane p waits physical page p with the task's
/// parity if the task does not use it, then frees it (I-P1, I-P2, I-P3).
pub(crate) fn free_unused(w: &mut Writer) {
    w.comment("The pages this task does not use: waited with its parity, so that the loader stays every page's");
    w.comment("observer (I-P5), and freed at once (I-P1, I-P2, I-P3).");
    w.line("__syncwarp();");
    w.open("if (page < MAX_SMEM_PAGES_PER_TASK && !(used_pages >> page & 1u))");
    w.line("mpkc::rt::wait_page_ready(runtime_smem, page, instruction_index);");
    w.line("mpkc::rt::finish_page(runtime_smem, page);");
    w.close("");
}
