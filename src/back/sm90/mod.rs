//! The sm_90a lowering of the pipeline family (family A): `<unit>_sm90.cuh`, the same contract
//! compiled for Hopper (docs/design.md, "Engines"). The loader's TMA ring, its full/empty barriers,
//! the page protocol, init and re-init, region addressing, the dependency prefix and the epilogue
//! (`back::epilogue`, over this target's accumulator fragment) are the sm_100a kernel's,
//! unchanged; what differs is where the MMA runs and where the accumulator lives:
//!
//! - the consumer warpgroup (W0-3, warp 0 divisible by 4, I-R5) issues `wgmma.mma_async` itself,
//!   A (the 128 weight rows, as two m64 halves) and B (the tokens) from SMEM through matrix
//!   descriptors, the accumulator in its registers (the contract's TMEM maps to registers);
//! - the stage is freed by one consumer arrival on the ring's empty barrier after
//!   `wgmma.wait_group 0` (the tcgen05.commit of sm_100a, same count 1);
//! - fp8 (e4m3) multiplies with fp8 wgmma (k32) into a per-block accumulator and applies the
//!   weight-block and activation-group scales of each 128-element K block in f32 outside the MMA;
//! - the launcher (W5) keeps its protocol duties without TMEM: it re-initialises the barriers it
//!   owns, arrives `tmem_ready` (the handshake that orders that re-init before any consumer
//!   arrival, contract doc §2.4), waits `consumer_done` and releases the used pages once.
//!
//! The accumulator channel's barriers are initialised (the ordinals are the same on both
//! targets) but never used on sm_90a: its role program has no operation on them.

pub mod desc;
mod roles;

use super::banner::ContractInfo;
use super::epilogue::fragment_helpers;
use super::pipeline::{kernel_prologue, loader, registration, reinit_helpers};
use super::writer::Writer;
use super::GenOptions;
use crate::lower::{LinearMath, MmaKind, MmaShape, Operands, RoleProgram};
use crate::valid::CheckedTask;

/// Emits `<unit>_sm90.cuh`.
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
        "sm_90a: TMA ring -> wgmma by the consumer warpgroup into registers",
        "mpkc_sm90.cuh",
    );
    descriptors(&mut w, p);
    wgmma_wrapper(&mut w, p, prog.stage_mma()?);
    fragment_helpers(&mut w, &roles::FRAGMENT);
    super::epilogue::map_function(&mut w, task, p, info);
    w.comment("On sm_90a the ring's empty barriers are arrived by the 128 consumer threads, each after its");
    w.comment("wgmma.wait_group and its last read of the stage (count 128), not by a tcgen05.commit (count 1).");
    w.blank();
    let engine = roles::Sm90 { task, p };
    reinit_helpers(&mut w, prog, opts);
    loader(&mut w, task, prog, &engine);
    roles::launcher(&mut w, &engine, prog);
    roles::consumer(&mut w, &engine, prog);
    registration(&mut w, task, prog);
    w.close_namespace(&format!("kernel::{unit}"));
    Some(w.finish())
}

/// The kernel's ties to `<unit>_layout.h` (`layout::Sm90` holds the descriptors and the
/// accumulator fragment): static_asserts that it is this kernel's, and `smem_desc`.
fn descriptors(w: &mut Writer, p: &LinearMath) {
    w.comment("Descriptors, SMEM offsets, the accumulator fragment and scale positions come from layout:: (the");
    w.comment("unit's _layout.h, checked against CUTLASS by tests/oracle.rs).");
    w.line("static_assert(layout::Tiles::BLOCK_M == BLOCK_M && layout::Tiles::BLOCK_N == BLOCK_N && layout::Tiles::BLOCK_K == BLOCK_K && layout::Tiles::ELEM_BYTES == ELEM_BYTES && layout::Tiles::MMA_K == MMA_K, \"the layout header is this kernel's\");");
    w.line("constexpr int ACC_REGS = layout::Sm90::ACC_REGS;  // accumulator registers per thread and m64 half");
    w.line("constexpr int HALVES = (BLOCK_M + 63) / 64;  // m64 wgmma halves of the tile (weight rows 64h .. 64h + 63; a tile of fewer rows discards those past BLOCK_M)");
    w.line(format!(
        "static_assert((BLOCK_M == 128 || (BLOCK_M <= 64 && BLOCK_M % 8 == 0)) && BLOCK_N % 8 == 0 && BLOCK_N >= 8 && BLOCK_N <= 256, \"E0504: wgmma m64nNk{} needs N a multiple of 8 in [8, 256]\");",
        p.mma_k
    ));
    if matches!(p.operands, Operands::Fp8BlockScale { .. }) {
        w.line("static_assert(BLOCK_K == 128 && HALVES == 2, \"E0013: one 128 x 128 scale block per stage and tile\");");
    }
    w.blank();
    w.comment(
        "The descriptor of the operand at `p`: SMEM_DESC with the start address (>> 4) OR-ed in.",
    );
    w.open("__device__ __forceinline__ uint64_t smem_desc(void const *p)");
    w.line("return layout::Sm90::desc_at(mpkc::sm90::smem_u32(p));");
    w.close("");
    w.blank();
}

/// The `wgmma.mma_async` wrapper for this tile's shape: its register list has BLOCK_N / 2 entries,
/// so mpkc writes it per contract.
fn wgmma_wrapper(w: &mut Writer, p: &LinearMath, mma: MmaShape) {
    let regs = (p.block_n / 2) as usize;
    // The instruction is the program's (`lower::target::mma`); the operand tail: scale-d, then
    // imm-scale-a/b, and for bf16 the K-major transpose bits.
    let ptx = mma.ptx();
    let tail = match mma.kind {
        MmaKind::WgmmaE4m3 => "p, 1, 1",
        _ => "p, 1, 1, 0, 0",
    };
    let d: Vec<String> = (0..regs).map(|i| format!("%{i}")).collect();
    w.comment(format!(
        "`{ptx}`: D (+)= A[smem desc] x B[smem desc]^T, both K-major;"
    ));
    w.comment("`accumulate` false overwrites D (scale-d = 0).");
    w.open("__device__ __forceinline__ void wgmma(float (&d)[ACC_REGS], uint64_t a_desc, uint64_t b_desc, bool accumulate)");
    w.line("asm volatile(");
    w.line(format!(
        "    \"{{\\n .reg .pred p;\\n setp.ne.b32 p, %{}, 0;\\n\"",
        regs + 2
    ));
    w.line(format!(
        "    \" {ptx} {{{}}}, %{}, %{}, {tail};\\n}}\"",
        d.join(", "),
        regs,
        regs + 1
    ));
    let outs: Vec<String> = (0..regs).map(|i| format!("\"+f\"(d[{i}])")).collect();
    for chunk in outs.chunks(8) {
        let last = std::ptr::eq(chunk.as_ptr_range().end, outs.as_ptr_range().end);
        let lead = if std::ptr::eq(chunk.as_ptr(), outs.as_ptr()) {
            "    : "
        } else {
            "      "
        };
        w.line(format!(
            "{lead}{}{}",
            chunk.join(", "),
            if last { "" } else { "," }
        ));
    }
    w.line("    : \"l\"(a_desc), \"l\"(b_desc), \"r\"(static_cast<uint32_t>(accumulate))");
    w.line("    : \"memory\");");
    w.close("");
    w.blank();
}
