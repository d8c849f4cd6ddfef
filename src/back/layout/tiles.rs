//! `layout::Tiles`: the operand tiles of a stage in SMEM, as the TMA boxes write them.

use super::member;
use crate::back::writer::Writer;
use crate::lower::LinearMath;
use crate::valid::CheckedTask;

/// Emits `struct Tiles`: shape constants, the TMA boxes and the byte offset of operand element
/// (row, k) in a stage under the 128-byte swizzle (PTX ISA, tensor copy "swizzling modes": the
/// 16-byte unit u of the 128-byte row r of a 1024-byte-aligned block lands at unit u ^ (r % 8)).
pub(super) fn emit(w: &mut Writer, task: &CheckedTask, p: &LinearMath) {
    let ir = &task.ir;
    let boxes = |h| {
        ir.tensors[h]
            .tma
            .as_ref()
            .map(|t| t.box_dims.clone())
            .unwrap_or_default()
    };
    let list = |v: Vec<i64>| {
        v.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    w.comment(
        "Operand tiles of one stage in SMEM, K-major under the 128-byte swizzle, as the TMA boxes",
    );
    w.comment("{128-byte row, rows, K chunks} write them: chunk c holds every row's elements");
    w.comment("[c * ROW_ELEMS, (c + 1) * ROW_ELEMS), row r at r * 128 bytes, and the 16-byte unit u of a row");
    w.comment(
        "at unit u ^ (r % 8). Stage bases are 1024-aligned (the pattern repeats every 8 rows).",
    );
    w.open("struct Tiles");
    member(
        w,
        "int",
        "BLOCK_M",
        p.block_m,
        "weight rows per tile (MMA-M)",
    );
    member(w, "int", "BLOCK_N", p.block_n, "tokens per tile (MMA-N)");
    member(w, "int", "BLOCK_K", p.block_k, "K elements per stage");
    member(
        w,
        "int",
        "ELEM_BYTES",
        p.elem_bytes,
        "bytes per operand element",
    );
    member(w, "int", "MMA_K", p.mma_k, "K elements per MMA instruction");
    member(
        w,
        "int",
        "ROW_ELEMS",
        128 / p.elem_bytes,
        "elements in one 128-byte swizzle row",
    );
    member(
        w,
        "int",
        "K_CHUNKS",
        p.block_k * p.elem_bytes / 128,
        "128-byte rows per operand row and stage",
    );
    member(
        w,
        "int",
        "MMAS_PER_STAGE",
        p.block_k / p.mma_k,
        "MMA instructions per stage",
    );
    member(
        w,
        "int",
        "SWIZZLE_BYTES",
        128,
        "the tensor maps' swizzle (`swizzle 128B`)",
    );
    w.line(format!(
        "static constexpr int W_BOX[3] = {{{}}};  // weight tensor map box (elements, innermost first)",
        list(boxes(p.weights))
    ));
    w.line(format!(
        "static constexpr int A_BOX[3] = {{{}}};  // activation tensor map box (elements, innermost first)",
        list(boxes(p.acts))
    ));
    w.comment("Byte offset of element (r, k) of a stage of `rows` rows.");
    w.open("MPKC_HD static constexpr uint32_t offset(uint32_t rows, uint32_t r, uint32_t k)");
    w.line("return (k * ELEM_BYTES / 128) * rows * 128 + r * 128 + (((k * ELEM_BYTES) % 128) ^ ((r % 8) * 16));");
    w.close("");
    w.comment("Byte offset of weight element (row, k) in a W stage (row < BLOCK_M, k < BLOCK_K).");
    w.open("MPKC_HD static constexpr uint32_t w_offset(uint32_t row, uint32_t k)");
    w.line("return offset(BLOCK_M, row, k);");
    w.close("");
    w.comment(
        "Byte offset of activation element (token n, k) in an A stage (n < BLOCK_N, k < BLOCK_K).",
    );
    w.open("MPKC_HD static constexpr uint32_t a_offset(uint32_t n, uint32_t k)");
    w.line("return offset(BLOCK_N, n, k);");
    w.close("");
    w.close(";");
    w.line("static_assert(Tiles::W_BOX[0] * Tiles::ELEM_BYTES == Tiles::SWIZZLE_BYTES && Tiles::W_BOX[1] == Tiles::BLOCK_M && Tiles::W_BOX[2] == Tiles::K_CHUNKS, \"E0013: the weight box is one 128-byte row of BLOCK_M rows per K chunk\");");
    w.line("static_assert(Tiles::A_BOX[0] * Tiles::ELEM_BYTES == Tiles::SWIZZLE_BYTES && Tiles::A_BOX[1] == Tiles::BLOCK_N && Tiles::A_BOX[2] == Tiles::K_CHUNKS, \"E0013: the activation box is one 128-byte row of BLOCK_N rows per K chunk\");");
    w.blank();
}
