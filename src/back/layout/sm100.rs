//! `layout::Sm100`: what the sm_100a kernel computes for tcgen05 — descriptors per MMA, TMEM
//! columns of the accumulator slots and scale factors, and the epilogue's `tcgen05.ld` fragment.

use super::member;
use super::scales::b_blocks;
use crate::back::writer::Writer;
use crate::ir::Target;
use crate::lower::{LinearMath, Operands};

/// Columns of the `tcgen05.ld.32x32b` the epilogue issues: `.x16` when BLOCK_N allows, else `.x8`.
pub fn ld_cols(p: &LinearMath) -> i64 {
    if p.block_n % 16 == 0 {
        16
    } else {
        8
    }
}

/// Emits `struct Sm100`.
pub(super) fn emit(w: &mut Writer, p: &LinearMath) {
    let fp8 = matches!(p.operands, Operands::Fp8BlockScale { .. });
    w.comment("sm_100a: tcgen05.mma operands, TMEM and the epilogue's loads.");
    w.open("struct Sm100");
    for d in super::descriptors::of(p, Target::Sm100a) {
        super::emit_descriptor(w, &d);
    }
    w.comment("`desc` with the start address of SMEM byte address `addr` (>> 4) in bits 0-13.");
    w.open("MPKC_HD static constexpr uint64_t desc_at(uint64_t desc, uint32_t addr)");
    w.line("return desc | static_cast<uint64_t>((addr & 0x3FFFFu) >> 4);");
    w.close("");
    if fp8 {
        w.comment("Scale id of MMA j of a stage: the byte of the scale-factor words it reads (K sub-block j).");
        w.open("MPKC_HD static constexpr uint32_t sf_id(int j)");
        w.line("return static_cast<uint32_t>(j % 4);");
        w.close("");
        w.comment("Instruction descriptor of MMA j of a stage: I_DESC with the scale ids of B (bits 4-5) and A (29-30).");
        w.open("MPKC_HD static constexpr uint32_t idesc(int j)");
        w.line("return I_DESC | (sf_id(j) << 4) | (sf_id(j) << 29);");
        w.close("");
    } else {
        w.comment("Instruction descriptor of MMA j of a stage.");
        w.open("MPKC_HD static constexpr uint32_t idesc(int)");
        w.line("return I_DESC;");
        w.close("");
    }
    w.comment("Descriptor of MMA j's weight (A) operand, from the descriptor of the stage base: the start address");
    w.comment("of element (0, j * MMA_K).");
    w.open("MPKC_HD static constexpr uint64_t w_mma(uint64_t stage_desc, int j)");
    w.line(
        "return stage_desc + (Tiles::w_offset(0, static_cast<uint32_t>(j * Tiles::MMA_K)) >> 4);",
    );
    w.close("");
    w.comment("Descriptor of MMA j's activation (B) operand, likewise.");
    w.open("MPKC_HD static constexpr uint64_t a_mma(uint64_t stage_desc, int j)");
    w.line(
        "return stage_desc + (Tiles::a_offset(0, static_cast<uint32_t>(j * Tiles::MMA_K)) >> 4);",
    );
    w.close("");
    member(w, "int", "ACC_SLOTS", p.acc_slots, "accumulator slots");
    w.comment("TMEM address (lane << 16 | column, from the allocation's base) of accumulator element (row m, token n)");
    if p.block_m == 64 {
        w.comment("of slot `slot`: M = 64 (cta_group::1, PTX ISA data-path layout F) puts rows 16q .. 16q + 15 in");
        w.comment("lanes 32q .. 32q + 15 of lane quarter q (lanes 16-31 of each quarter hold none), one f32 column");
        w.comment("per token.");
        w.open("MPKC_HD static constexpr uint32_t acc_tmem(int slot, uint32_t m, uint32_t n)");
        w.line("return ((32u * (m / 16u) + m % 16u) << 16) + static_cast<uint32_t>(slot * Tiles::BLOCK_N) + n;");
    } else {
        w.comment("of slot `slot`: M = 128 puts row m in lane m, one f32 column per token.");
        w.open("MPKC_HD static constexpr uint32_t acc_tmem(int slot, uint32_t m, uint32_t n)");
        w.line("return (m << 16) + static_cast<uint32_t>(slot * Tiles::BLOCK_N) + n;");
    }
    w.close("");
    member(
        w,
        "int",
        "LD_COLS",
        ld_cols(p),
        &format!("the epilogue's tcgen05.ld.32x32b.x{}", ld_cols(p)),
    );
    w.comment("The address warp `warp` (0-3) of the consumers passes to its tcgen05.ld of columns c .. c + LD_COLS - 1");
    w.comment("(a warp reaches lanes 32w .. 32w + 31 only).");
    w.open("MPKC_HD static constexpr uint32_t ld_tmem(int slot, int warp, int c)");
    if p.block_m == 64 {
        w.line("return (static_cast<uint32_t>(32 * warp) << 16) + static_cast<uint32_t>(slot * Tiles::BLOCK_N + c);");
        w.close("");
        w.comment("Whether lane `lane`'s registers of that load hold accumulator rows: lanes 0-15 of each warp");
        w.comment(
            "(layout F); lanes 16-31 load TMEM lanes the MMA does not write, and store nothing.",
        );
        w.open("MPKC_HD static constexpr bool ld_live(int lane)");
        w.line("return lane < 16;");
        w.close("");
        w.comment("Accumulator row (weight row of the tile) the registers of a live lane of that load hold.");
        w.open("MPKC_HD static constexpr int ld_row(int warp, int lane)");
        w.line("return 16 * warp + lane;");
    } else {
        w.line(
            "return acc_tmem(slot, static_cast<uint32_t>(32 * warp), static_cast<uint32_t>(c));",
        );
        w.close("");
        w.comment(
            "Accumulator row (weight row of the tile) the lane's registers of that load hold.",
        );
        w.open("MPKC_HD static constexpr int ld_row(int warp, int lane)");
        w.line("return 32 * warp + lane;");
    }
    w.close("");
    w.comment("Token (accumulator column) of register j of the load of columns c ...");
    w.open("MPKC_HD static constexpr int ld_col(int c, int j)");
    w.line("return c + j;");
    w.close("");
    if fp8 {
        let blocks = b_blocks(p);
        member(
            w,
            "uint32_t",
            "SF_COL",
            p.acc_slots * p.block_n,
            "first TMEM column of the scale factors",
        );
        member(
            w,
            "uint32_t",
            "SF_STAGE_COLS",
            4 * (1 + blocks),
            "TMEM columns of a stage's scale factors: 4 for A, 4 per B block",
        );
        member(
            w,
            "uint32_t",
            "TMEM_END",
            format!("SF_COL + {} * SF_STAGE_COLS", p.stages),
            "one past the last TMEM column used",
        );
        w.comment("TMEM column of stage `stage`'s A scale factors: the tcgen05.cp destination.");
        w.open("MPKC_HD static constexpr uint32_t sfa_tmem(int stage)");
        w.line("return SF_COL + static_cast<uint32_t>(stage) * SF_STAGE_COLS;");
        w.close("");
        w.comment("TMEM column of stage `stage`'s B scale factors of tokens 128b .. 128b + 127.");
        w.open("MPKC_HD static constexpr uint32_t sfb_tmem(int stage, int b)");
        w.line("return sfa_tmem(stage) + 4u + 4u * static_cast<uint32_t>(b);");
        w.close("");
        w.comment("The scale operand of MMA j (CuTe's tmem_ptr of the scale factors of K block j: the byte, the scale");
        w.comment("id, in bits 30-31 of the column address).");
        w.open("MPKC_HD static constexpr uint32_t sf_operand(uint32_t col, int j)");
        w.line("return col | (sf_id(j) << 30);");
        w.close("");
        w.comment("The tcgen05.cp source descriptor of the scale-factor block at SMEM byte address `addr`.");
        w.open("MPKC_HD static constexpr uint64_t sf_desc(uint32_t addr)");
        w.line("return desc_at(SF_DESC, addr);");
        w.close("");
    } else {
        member(
            w,
            "uint32_t",
            "TMEM_END",
            "ACC_SLOTS * Tiles::BLOCK_N",
            "one past the last TMEM column used",
        );
    }
    w.close(";");
    w.blank();
}
