//! The sm_100a lowering of the pipeline family (family A): `<unit>.cuh` with one
//! `__device__ __noinline__` function per role (loader W4 issuing TMA, launcher W5 issuing
//! tcgen05.mma into TMEM, consumers W0-3 running the epilogue), force-inlined role re-inits
//! ending with the init fence, `init_semaphores`, the descriptors as decoded constants, and the
//! `Registration` that states MPK's flags (page mode 1, the launcher's blanket release).
//!
//! The protocol is the house linear's (contract doc §3.2), with one deliberate change for race
//! freedom: the launcher allocates TMEM (writing its address into the scratch region) only after
//! the first stage landed, i.e. after the loader, the pages' dense observer, saw every page the
//! task uses ready (I-P5; the scratch region is on one of them); and it releases the used pages after `consumer_done`, when every MMA has
//! completed and no role reads SMEM any more.

pub mod desc;
mod roles;

use super::banner::ContractInfo;
use super::epilogue::fragment_helpers;
use super::pipeline::{kernel_prologue, loader, registration, reinit_helpers, ring_group};
use super::writer::Writer;
use super::GenOptions;
use crate::lower::{LinearMath, Operands, RoleProgram};
use crate::valid::CheckedTask;

/// Emits the pipeline kernel header.
///
/// Renders `prog`, this target's role program, with its `compute` (the linear engine's binding):
/// `None` where the program has no linear engine (`files::sources` plans the kernel only for a
/// lowered program).
pub fn emit(
    task: &CheckedTask,
    prog: &RoleProgram,
    info: &ContractInfo,
    opts: &GenOptions,
) -> Option<String> {
    let unit = task.ir.unit_name();
    let mut w = Writer::new();
    let p = prog.compute.as_ref()?;
    kernel_prologue(
        &mut w,
        task,
        p,
        prog,
        info,
        "sm_100a: TMA ring -> tcgen05.mma into TMEM",
        "mpkc_sm100.cuh",
    );
    descriptors(&mut w, task, p);
    fragment_helpers(&mut w, roles::fragment(p));
    super::epilogue::map_function(&mut w, task, p, info);
    let engine = roles::Sm100 { task, p };
    reinit_helpers(&mut w, prog, opts);
    loader(&mut w, task, prog, &engine);
    roles::launcher(&mut w, &engine, prog);
    roles::consumer(&mut w, &engine, prog);
    registration(&mut w, task, prog);
    w.close_namespace(&format!("kernel::{unit}"));
    Some(w.finish())
}

/// The kernel's ties to `<unit>_layout.h` (which holds the descriptors, offsets and TMEM
/// addresses; `layout::Sm100`): static_asserts that it is this kernel's, and `smem_desc`.
fn descriptors(w: &mut Writer, task: &CheckedTask, p: &LinearMath) {
    w.comment("Descriptors, SMEM offsets, TMEM addresses and scale positions come from layout:: (the unit's");
    w.comment("_layout.h, checked against CUTLASS by tests/oracle.rs).");
    w.line("static_assert(layout::Tiles::BLOCK_M == BLOCK_M && layout::Tiles::BLOCK_N == BLOCK_N && layout::Tiles::BLOCK_K == BLOCK_K && layout::Tiles::ELEM_BYTES == ELEM_BYTES && layout::Tiles::MMA_K == MMA_K && layout::Sm100::ACC_SLOTS == ACC_SLOTS, \"the layout header is this kernel's\");");
    w.line("static_assert(layout::Sm100::TMEM_END <= TMEM_COLS, \"E0013: the accumulator slots and the scale factors fit the allocated TMEM columns (I-T2)\");");
    if let Operands::Fp8BlockScale { sf_ring, .. } = &p.operands {
        let ir = &task.ir;
        let sf = ir.regions[ir.region_groups[ring_group(ir, *sf_ring)].members[0]]
            .name
            .to_ascii_lowercase();
        w.line(format!("static_assert(layout::Scales::BYTES <= raw_{sf}_bytes(), \"E0304: a stage's scale factors exceed its SF region\");"));
    }
    w.blank();
    w.comment(
        "The descriptor of the operand at `p`: SMEM_DESC with the start address (>> 4) OR-ed in.",
    );
    w.open("__device__ __forceinline__ uint64_t smem_desc(void const *p)");
    w.line("return layout::Sm100::desc_at(layout::Sm100::SMEM_DESC, mpkc::sm100::smem_u32(p));");
    w.close("");
    w.blank();
}
