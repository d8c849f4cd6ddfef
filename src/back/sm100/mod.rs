//! The sm_100a lowering of the pipeline family (family A): `<unit>.cuh` with one
//! `__device__ __noinline__` function per role (loader W4 issuing TMA, launcher W5 issuing
//! tcgen05.mma into TMEM, consumers W0-3 running the epilogue), force-inlined role re-inits
//! ending with the init fence, `init_semaphores`, the descriptors as decoded constants, and the
//! `Registration` that states MPK's flags (page mode 1, the launcher's blanket release).
//!
//! The protocol is the house linear's (contract doc §3.2), with one deliberate change for race
//! freedom: the launcher allocates TMEM (writing its address into the scratch region) only after
//! the first stage landed, i.e. after the loader, the pages' dense observer, saw every page
//! ready (I-P5); and it releases the used pages after `consumer_done`, when every MMA has
//! completed and no role reads SMEM any more.

pub mod desc;
mod roles;

use super::banner::ContractInfo;
use super::epilogue::fragment_helpers;
use super::pipeline::{kernel_prologue, loader, registration, reinit_helpers, sem_names};
use super::writer::Writer;
use super::GenOptions;
use crate::valid::{CheckedTask, Operands, PipelineShape};
use desc::{decode_lines, instr_desc_f16, instr_desc_mxf8f6f4, smem_desc, F16Format, SmemLayout};

/// Emits the pipeline kernel header.
pub fn emit(
    task: &CheckedTask,
    p: &PipelineShape,
    info: &ContractInfo,
    opts: &GenOptions,
) -> String {
    let unit = task.ir.unit_name();
    let mut w = Writer::new();
    kernel_prologue(
        &mut w,
        task,
        p,
        info,
        "sm_100a: TMA ring -> tcgen05.mma into TMEM",
        "mpkc_sm100.cuh",
    );
    descriptors(&mut w, p);
    fragment_helpers(&mut w, &roles::FRAGMENT);
    let sems = sem_names(task, p);
    reinit_helpers(&mut w, task, opts);
    loader(&mut w, task, p, &sems, "mpkc::sm100");
    roles::launcher(&mut w, task, p, &sems);
    roles::consumer(&mut w, task, p, &sems);
    registration(&mut w, task);
    w.close_namespace(&format!("kernel::{unit}"));
    w.finish()
}

fn descriptors(w: &mut Writer, p: &PipelineShape) {
    let fp8 = matches!(p.operands, Operands::Fp8BlockScale { .. });
    let (idesc, ifields) = if fp8 {
        instr_desc_mxf8f6f4(p.block_m as u32, p.block_n as u32)
    } else {
        instr_desc_f16(
            F16Format::Bf16,
            F16Format::Bf16,
            p.block_m as u32,
            p.block_n as u32,
        )
    };
    w.comment(if fp8 {
        "Instruction descriptor of tcgen05.mma.kind::mxf8f6f4.block_scale (CuTe UMMA::InstrDescriptorBlockScaled):"
    } else {
        "Instruction descriptor of tcgen05.mma.kind::f16 (CuTe UMMA::InstrDescriptor):"
    });
    for l in decode_lines(&ifields) {
        w.comment(format!("  {l}"));
    }
    w.line(format!("constexpr uint32_t I_DESC = 0x{idesc:08X}u;"));
    w.blank();
    let (sdesc, sfields) = smem_desc(SmemLayout::Swizzle128B, 0, 1024);
    w.comment("SMEM matrix descriptor of both operands, K-major under 128-byte swizzle (CuTe UMMA::SmemDescriptor):");
    for l in decode_lines(&sfields) {
        w.comment(format!("  {l}"));
    }
    w.line(format!("constexpr uint64_t SMEM_DESC = 0x{sdesc:016X}ull;"));
    w.comment(
        "Within a stage: the next 128-byte K chunk of W is BLOCK_M rows of 128 bytes further, of A",
    );
    w.comment("BLOCK_N rows; the next MMA inside a chunk is MMA_K elements = 32 bytes further (stays in the atom, I-T5).");
    w.line("constexpr uint32_t W_CHUNK_BYTES = BLOCK_M * 128;");
    w.line("constexpr uint32_t A_CHUNK_BYTES = BLOCK_N * 128;");
    w.line("constexpr uint32_t MMA_K_STEP_BYTES = MMA_K * ELEM_BYTES;");
    w.blank();
    if fp8 {
        let (sf, sfields) = smem_desc(SmemLayout::SwizzleNone, 0, 128);
        w.comment("SMEM descriptor of a scale-factor block for tcgen05.cp.32x128b: 32 rows of 16 bytes, no swizzle:");
        for l in decode_lines(&sfields) {
            w.comment(format!("  {l}"));
        }
        w.line(format!("constexpr uint64_t SF_DESC = 0x{sf:016X}ull;"));
        w.blank();
    }
    w.comment(
        "The descriptor of the operand at `p`: SMEM_DESC with the start address (>> 4) OR-ed in.",
    );
    w.open("__device__ __forceinline__ uint64_t smem_desc(void const *p)");
    w.line("return SMEM_DESC | static_cast<uint64_t>((mpkc::sm100::smem_u32(p) & 0x3FFFFu) >> 4);");
    w.close("");
    w.blank();
}
