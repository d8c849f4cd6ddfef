//! The consumer rings of a consumer-only family (docs/language.md, "Consumer rings"): the loader
//! role that runs the contract's `body loader cuda { … }`, and each ring's two ends
//! (`mpkc::ring::RingProducer` / `RingConsumer`, `mpkc_ring.cuh`) built from the role program's
//! barriers, so that the bodies name a ring and never an ordinal, a parity or a byte count the
//! contract did not give.

use super::consumer::ROLE_PARAMS;
use super::writer::Writer;
use crate::ir::{BodyIr, ChannelIr, ChannelStorageIr, Handle, TaskIr};
use crate::lower::{BarrierSource, RoleProgram};
use crate::valid::CheckedTask;

/// One ring as the kernel builds it.
struct Ring<'a> {
    ch: &'a ChannelIr,
    /// `SEM_KV_RING_FULL`: the ordinal constant of slot 0's full barrier.
    full: String,
    /// `SEM_KV_RING_EMPTY`.
    empty: String,
    /// The slots' storage: `buf.kv` cut into `depth` slots, or `buf.kv` an array of regions.
    staged: bool,
    /// The region group's name (`buf.<name>`).
    group: String,
    /// Bytes of one slot.
    slot_bytes: i64,
}

fn rings<'a>(ir: &'a TaskIr, prog: &RoleProgram) -> Vec<Ring<'a>> {
    let c_name = |src: BarrierSource| {
        prog.barriers
            .iter()
            .find(|b| b.source == src)
            .map(|b| b.c_name.clone())
    };
    ir.channels
        .iter()
        .filter(|(_, c)| crate::valid::rings::is_consumer_ring(c))
        .filter_map(|(h, ch): (Handle<ChannelIr>, &ChannelIr)| {
            let ChannelStorageIr::Region(g) = ch.storage else {
                return None;
            };
            let group = &ir.region_groups[g];
            Some(Ring {
                ch,
                full: c_name(BarrierSource::Full(h))?,
                empty: c_name(BarrierSource::Empty(h))?,
                staged: group.staged,
                group: group.name.clone(),
                slot_bytes: crate::valid::rings::slot_bytes(ir, ch),
            })
        })
        .collect()
}

/// Whether the task has a consumer ring (the kernel then includes `mpkc_ring.cuh`).
pub(crate) fn has_rings(ir: &TaskIr) -> bool {
    ir.channels
        .values()
        .any(crate::valid::rings::is_consumer_ring)
}

/// One ring end's constructor arguments: barriers, slots, slot bytes, name.
fn ring_args(r: &Ring<'_>) -> String {
    let (slot0, slots) = if r.staged {
        ("nullptr".to_string(), format!("buf.{}", r.group))
    } else {
        (format!("buf.{}", r.group), "nullptr".to_string())
    };
    format!(
        "{{&sem[{}], &sem[{}], {slot0}, {slots}, {}u, \"{}\"}}",
        r.full, r.empty, r.slot_bytes, r.ch.name
    )
}

/// The consumer's end of every ring, declared before the body.
pub(super) fn consumer_ends(w: &mut Writer, task: &CheckedTask) {
    let Some(prog) = task.programs.first() else {
        return;
    };
    let rs = rings(&task.ir, prog);
    if rs.is_empty() {
        return;
    }
    w.line("uint64_t *const sem = mpkc::rt::op_sem_base(runtime_smem, instruction_index);");
    for r in &rs {
        w.line(format!(
            "mpkc::ring::RingConsumer<{}> {}{};  // ring `{}`: wait() a use's slot, release() it; {} slots of {} B",
            r.ch.depth,
            r.ch.name,
            ring_args(r),
            r.ch.name,
            r.ch.depth,
            r.slot_bytes
        ));
    }
}

/// The loader role of a task with rings: lane 0 re-initialises the rings' barriers (I-M4); the
/// warp waits the used pages ([`super::page_prefix::acquire_used`]); lane 0 fences the async
/// proxy before its first bulk copy into the pages (earlier tasks wrote them with generic
/// stores), hands the pages to the consumer, waits the dependency (the copies read what other
/// tasks wrote, I-M9), and runs the loader body with each ring's producer end (in a lambda: a
/// `return` of the body ends only the body); last, the warp waits and frees the unused pages
/// ([`super::page_prefix::free_unused`]).
pub(super) fn loader_fn(
    w: &mut Writer,
    task: &CheckedTask,
    info: &super::banner::ContractInfo,
) -> bool {
    let ir = &task.ir;
    let (
        Some(prog),
        Some(BodyIr::Cuda {
            code, code_span, ..
        }),
    ) = (task.programs.first(), &ir.loader_body)
    else {
        return false;
    };
    let rs = rings(ir, prog);
    if rs.is_empty() {
        return false;
    }
    w.comment("The loader role (W4), the page prefix itself (the registration's auto_loader_page_lifecycle =");
    w.comment("false): lane p waits page p with this task's parity if the task uses it; lane 0 then hands the");
    w.comment("pages to the consumer and fills the rings through the contract's loader body; last, lane p waits");
    w.comment("and frees page p if the task does not use it. The one role observing page parity, on every page of");
    w.comment("every task of the queue (I-P5); the used pages first, so that where MPK's planner gave this task");
    w.comment(
        "pages the task before it leaves unused (I-S12) its copies start while that task computes.",
    );
    w.open(format!(
        "__device__ __noinline__ void loader({ROLE_PARAMS})"
    ));
    w.line("uint64_t *const sem = mpkc::rt::op_sem_base(runtime_smem, instruction_index);");
    super::page_prefix::used_mask(w);
    let reinit = super::roles::reinit_of(prog, crate::ir::RoleKind::Loader);
    w.comment("I-M4: the rings' barriers (the full ones completed asynchronously, by the bulk copies) are");
    w.comment("re-initialised at task start, before the hand-off that lets the consumer use them, then the init");
    w.comment("fence (I-M5). No consumer thread arrives an empty barrier before that hand-off. They need no page:");
    w.comment("lane 0 re-inits them before the page wait (the ring slot's last task, three before, has finished).");
    w.open("if (mpkc::lane_id() == 0)");
    for (_, b, slot) in prog.ordinals().filter(|(k, _, _)| reinit.contains(k)) {
        w.line(format!(
            "mpkc::rt::mbar_reinit(&sem[{}], {});  // {}",
            ordinal_expr(&b.c_name, slot),
            b.count(slot),
            b.slot_name(slot)
        ));
    }
    w.line("mpkc::rt::fence_mbar_init();");
    w.close("");
    super::page_prefix::acquire_used(w);
    w.open("if (page == 0)");
    w.comment("An earlier task on this SM may have read or written these pages with generic accesses; the bulk");
    w.comment("copies write them in the async proxy: the reader-side proxy fence after the page acquire (the lane");
    w.comment("waits, then the __syncwarp), as for a pipeline's first TMA (PTX ISA 9.0 §8.6, \"Proxies\").");
    w.line("mpkc::ring::fence_proxy_async_smem();");
    if crate::plan::sems::needs_page_handoff(ir) {
        w.line("mpkc::rt::mbar_arrive(&sem[SEM_PAGES_READY]);  // pages_ready: 1 arrival");
    }
    w.comment("I-M9: the copies read tensors the tasks this one depends on wrote: wait the dependency, then");
    w.comment("order those generic stores before this thread's async-proxy reads of them.");
    w.line("mpkc::rt::mbar_wait(&runtime_smem.dynamic_semaphores[instruction_index % INSTRUCTION_RING_SIZE][SEM_DEP_READY], mpkc::rt::ring_phase(instruction_index), \"SEM_DEP_READY\", instruction_index);");
    w.line("mpkc::ring::fence_proxy_async_global();");
    super::consumer::inline_tensor_decls(w, ir);
    w.line("int const task_offset = task_desc->task_metadata.task_offset;");
    super::grid::task_count(w, ir);
    w.line("extern __shared__ __align__(1024) char smem[];");
    w.line("SmemView const buf(smem, task_desc);");
    for r in &rs {
        w.line(format!(
            "mpkc::ring::RingProducer<{}> {}{};  // ring `{}`: load(src, bytes) one use, or acquire(bytes) / copy(offset, src, bytes) / commit()",
            r.ch.depth,
            r.ch.name,
            ring_args(r),
            r.ch.name
        ));
    }
    w.line("(void)runtime_config;");
    w.line("(void)iter_num;");
    w.line("(void)task_offset;");
    w.comment("---- loader body: inline CUDA from the contract (one thread), a lambda: its `return` ends the");
    w.comment("body, not the role, whose unused pages are still to be freed ----");
    w.open("[&]()");
    // contract_block closes the lambda's brace itself; the call follows its `#line`.
    super::banner::contract_block(w, info, code, *code_span, &ir.unit_name());
    w.line("();");
    w.close("");
    super::page_prefix::free_unused(w);
    w.close("");
    w.blank();
    true
}

/// `SEM_KV_RING_FULL + 1` for slot 1 (the constant names slot 0).
fn ordinal_expr(c_name: &str, slot: u32) -> String {
    if slot == 0 {
        c_name.to_string()
    } else {
        format!("{c_name} + {slot}")
    }
}
