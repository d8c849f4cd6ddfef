//! `layout::Sm90`: what the sm_90a kernel computes for wgmma — the descriptors of each MMA of
//! both m64 halves, and the accumulator fragment (register → row, token).

use crate::back::writer::Writer;
use crate::ir::Target;
use crate::lower::LinearMath;

/// Emits `struct Sm90`.
pub(super) fn emit(w: &mut Writer, p: &LinearMath) {
    w.comment("sm_90a: wgmma.mma_async m64nNk operands of the consumer warpgroup and its accumulator fragment.");
    w.open("struct Sm90");
    for d in super::descriptors::of(p, Target::Sm90a) {
        super::emit_descriptor(w, &d);
    }
    super::member(
        w,
        "int",
        "ACC_REGS",
        p.block_n / 2,
        "f32 accumulator registers per thread and m64 half: 64 x BLOCK_N / 128",
    );
    w.comment(
        "`SMEM_DESC` with the start address of SMEM byte address `addr` (>> 4) in bits 0-13.",
    );
    w.open("MPKC_HD static constexpr uint64_t desc_at(uint32_t addr)");
    w.line("return SMEM_DESC | static_cast<uint64_t>((addr & 0x3FFFFu) >> 4);");
    w.close("");
    w.comment("Descriptor of wgmma j's weight operand in m64 half h (rows 64h .. 64h + 63), from the stage base's.");
    w.open("MPKC_HD static constexpr uint64_t w_mma(uint64_t stage_desc, int h, int j)");
    w.line("return stage_desc + (Tiles::w_offset(static_cast<uint32_t>(64 * h), static_cast<uint32_t>(j * Tiles::MMA_K)) >> 4);");
    w.close("");
    w.comment("Descriptor of wgmma j's activation operand, from the stage base's.");
    w.open("MPKC_HD static constexpr uint64_t a_mma(uint64_t stage_desc, int j)");
    w.line(
        "return stage_desc + (Tiles::a_offset(0, static_cast<uint32_t>(j * Tiles::MMA_K)) >> 4);",
    );
    w.close("");
    w.comment(
        "Row (weight row of the tile) of accumulator register i of thread (warp, lane) in half h.",
    );
    w.open("MPKC_HD static constexpr int acc_row(int h, int warp, int lane, int i)");
    w.line("return 64 * h + 16 * warp + lane / 4 + 8 * ((i / 2) % 2);");
    w.close("");
    w.comment("Token (accumulator column) of register i of lane `lane`.");
    w.open("MPKC_HD static constexpr int acc_col(int lane, int i)");
    w.line("return 8 * (i / 4) + 2 * (lane % 4) + i % 2;");
    w.close("");
    w.close(";");
    w.blank();
}
