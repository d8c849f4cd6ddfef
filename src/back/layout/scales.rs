//! `layout::Scales`: the UE8M0 scale-factor block of a stage and the loader's staging function,
//! one definition for both targets (the sm_100a launcher copies the block to TMEM, the sm_90a
//! consumers read its bytes).

use super::member;
use crate::back::writer::Writer;
use crate::lower::LinearMath;

/// 128-token blocks of the B (activation) scale factors: CUTLASS rounds MMA-N up to 128 for them
/// (`MMA_Traits<SM100_MMA_MXF8F6F4_SS>::MMA_ScaleFactor`, `deduce_smem_layoutSFB`).
pub(crate) fn b_blocks(p: &LinearMath) -> i64 {
    (p.block_n + 127) / 128
}

/// Emits `struct Scales`: the K-major scale-factor atom of CUTLASS
/// (cutlass/detail/sm100_blockscaled_layout.hpp, `Sm1xxBlockScaledBasicChunk::SfKMajorAtom`):
/// 512 bytes per 128 rows, row m = m0 + 32 j at byte 16 m0 + 4 j, K sub-block s at + s.
pub(super) fn emit(w: &mut Writer, p: &LinearMath, w_name: &str, a_name: &str) {
    let blocks = b_blocks(p);
    w.comment("UE8M0 scale factors of one stage (block32: one per row and 32 K elements, the MMA's K), in the");
    w.comment("K-major atom of CUTLASS's block-scaled layout: per 128 rows 512 bytes, row m0 + 32j (m0 < 32) at");
    w.comment("16 m0 + 4j, K sub-block s at + s. The A block (the 128 weight rows, one weight block scale) comes");
    w.comment("first, then one block per 128 tokens. tcgen05.cp.32x128b.warpx4 copies each block to 4 TMEM");
    w.comment("columns of all four lane quarters; the MMA reads row m0 + 32j from column j, byte s (scale id).");
    w.open("struct Scales");
    member(
        w,
        "int",
        "SF_VEC",
        32,
        "K elements per scale factor (block32)",
    );
    member(
        w,
        "int",
        "SUB_BLOCKS",
        p.block_k / 32,
        "scale factors per row and stage: BLOCK_K / SF_VEC",
    );
    let act_k = p.route.map_or(p.k, |r| r.act_k);
    member(
        w,
        "int",
        "K_BLOCKS",
        act_k / 128,
        "columns of the activations' f32 scales: K / 128 (SLOTS * K / 128 summing routed slots)",
    );
    member(
        w,
        "int",
        "W_K_BLOCKS",
        p.k / 128,
        "columns of the weights' f32 block scales: K / 128",
    );
    member(
        w,
        "int",
        "TOKENS",
        p.m_real.min(p.block_n),
        "tokens with a scale: min(M_REAL, BLOCK_N)",
    );
    member(
        w,
        "int",
        "READ_TOKENS",
        p.block_n,
        "tokens whose scale the sm_90a consumer reads: BLOCK_N (past TOKENS, the pad)",
    );
    member(
        w,
        "int",
        "B_BLOCKS",
        blocks,
        "128-token blocks of B scale factors: ceil(BLOCK_N / 128)",
    );
    member(
        w,
        "uint32_t",
        "BLOCK_BYTES",
        512,
        "one block: 32 rows of 16 bytes",
    );
    member(
        w,
        "uint32_t",
        "B_OFFSET",
        512,
        "the B blocks follow the A block",
    );
    member(
        w,
        "uint32_t",
        "BYTES",
        512 * (1 + blocks),
        "a stage's scale factors",
    );
    member(
        w,
        "uint32_t",
        "PAD_WORD",
        "0x7F7F7F7Fu",
        "UE8M0 127 = 1.0 for tokens past TOKENS",
    );
    w.comment("Byte of A-operand row m (weight row of the tile, m < 128), K sub-block s.");
    w.open("MPKC_HD static constexpr uint32_t a_byte(uint32_t m, uint32_t s)");
    w.line("return 16 * (m % 32) + 4 * (m / 32) + s;");
    w.close("");
    w.comment("Byte of B-operand row n (token n < 128 * B_BLOCKS), K sub-block s.");
    w.open("MPKC_HD static constexpr uint32_t b_byte(uint32_t n, uint32_t s)");
    w.line("return B_OFFSET + BLOCK_BYTES * (n / 128) + 16 * (n % 32) + 4 * (n % 128 / 32) + s;");
    w.close("");
    w.comment("The bits of an f32.");
    w.open("MPKC_HD static inline uint32_t f32_bits(float x)");
    w.line("#if defined(__CUDA_ARCH__)");
    w.line("return __float_as_uint(x);");
    w.line("#else");
    w.line("uint32_t u = 0;");
    w.line("std::memcpy(&u, &x, sizeof u);");
    w.line("return u;");
    w.line("#endif");
    w.close("");
    w.comment("True when x is 2^e with -126 <= e <= 127, exactly what a UE8M0 byte holds (2^(byte - 127)).");
    w.open("MPKC_HD static inline bool exact_in_ue8m0(float x)");
    w.line("uint32_t const b = f32_bits(x);");
    w.line("uint32_t const e = (b >> 23) & 0xFFu;");
    w.line("return (b & 0x807FFFFFu) == 0u && e != 0u && e != 0xFFu;");
    w.close("");
    w.comment("The UE8M0 byte of a power-of-two f32 scale: its biased exponent.");
    w.open("MPKC_HD static inline uint32_t ue8m0(float x)");
    w.line("return (f32_bits(x) >> 23) & 0xFFu;");
    w.close("");
    w.comment("One 16-byte row of a block.");
    w.line("struct alignas(16) Row { uint32_t word[4]; };");
    w.comment("The raw f32 scales of one K block: the weight block's and each token's.");
    w.line("struct Raw { float ws; float as[TOKENS]; };");
    w.comment("The global loads of K block `kb`'s scales for tile `tile`, all issued together. The loader issues");
    w.comment("them one K iteration ahead of `write` (they are in flight while it waits the ring), since a");
    w.comment(
        "round trip per stage in the only thread that issues TMA would bound the whole pipeline.",
    );
    w.comment("`w_block` points at the weight block's scale; `kb` is the activations' K block.");
    w.open(
        "MPKC_HD static inline Raw fetch_at(float const *w_block, float const *a_scale, int kb)",
    );
    w.line("Raw r;");
    w.line("r.ws = *w_block;");
    w.line("MPKC_UNROLL");
    w.line("for (int n = 0; n < TOKENS; ++n) r.as[n] = a_scale[n * K_BLOCKS + kb];");
    w.line("return r;");
    w.close("");
    w.comment(
        "K block `kb` of weight tile `tile` (the unrouted weights' [N / 128, K / 128] scales).",
    );
    w.open("MPKC_HD static inline Raw fetch(float const *w_scale, float const *a_scale, int tile, int kb)");
    w.line("return fetch_at(w_scale + static_cast<int64_t>(tile) * W_K_BLOCKS + kb, a_scale, kb);  // 64-bit: N / 128 x K / 128 may pass 2^31");
    w.close("");
    w.comment("The loader's staging of K block `kb` for tile `tile` into the stage's block at `sf`, from its");
    w.comment("fetched scales `r` (the compiler cannot tell the f32 scales from the SMEM block, so loads after a");
    w.comment("store would each wait for it: `fetch` loads them all first). Every word of the A block carries");
    w.comment("the weight block's scale (all 128 rows share it); word j of B row n carries token n + 32j's.");
    w.comment(format!("Test builds (MPKC_BOUNDED_WAITS) trap on a scale that is not a power of two, naming `{w_name}` or"));
    w.comment(format!("`{a_name}` and the element."));
    w.comment("`w_at`: the weight scale's element index (what a report names); `kb`: the activations' K block.");
    w.comment("ASYNC_READER (sm_100a: tcgen05.cp copies the whole block) writes every row; without it (sm_90a:");
    w.comment("the consumer threads read bytes a_byte(0, 0) and b_byte(n, 0) for n < BLOCK_N with ld.shared)");
    w.comment("only the words holding those bytes are written: 1 + BLOCK_N 4-byte stores instead of 64 rows.");
    w.line("template <bool ASYNC_READER = true>");
    w.open("MPKC_HD static inline void write_at(uint8_t *sf, Raw const &r, int w_at, int kb)");
    w.line("float ws = r.ws;");
    w.line("float const *const as = r.as;");
    w.line("(void)w_at;");
    w.line("(void)kb;");
    w.line("#if defined(__CUDA_ARCH__) && defined(MPKC_BOUNDED_WAITS)");
    w.line("#ifdef MPKC_INJECT_BAD_SCALE");
    w.line("// fault injection (mpkc verify --inject bad-scale=I): CTA 0 sees weight scale I times 1.5");
    w.line("if (blockIdx.x == 0 && w_at == MPKC_INJECT_BAD_SCALE) ws *= 1.5f;");
    w.line("#endif");
    w.line(format!(
        "if (!exact_in_ue8m0(ws)) ::mpkc::rt::report_bad_scale(\"{w_name}\", w_at, ws);"
    ));
    w.line("MPKC_UNROLL");
    w.line(format!("for (int n = 0; n < TOKENS; ++n) if (!exact_in_ue8m0(as[n])) ::mpkc::rt::report_bad_scale(\"{a_name}\", n * K_BLOCKS + kb, as[n]);"));
    w.line("#endif");
    w.line("uint32_t const wword = ue8m0(ws) * 0x01010101u;");
    w.line("uint32_t aword[TOKENS];");
    w.line("MPKC_UNROLL");
    w.line("for (int n = 0; n < TOKENS; ++n) aword[n] = ue8m0(as[n]) * 0x01010101u;");
    w.open("if (!ASYNC_READER)");
    w.line("*reinterpret_cast<uint32_t *>(sf + a_byte(0, 0)) = wword;");
    w.line("MPKC_UNROLL");
    w.line("for (int n = 0; n < READ_TOKENS; ++n) *reinterpret_cast<uint32_t *>(sf + b_byte(static_cast<uint32_t>(n), 0)) = n < TOKENS ? aword[n] : PAD_WORD;");
    w.line("return;");
    w.close("");
    w.line("Row *const rows = reinterpret_cast<Row *>(sf);");
    w.line("MPKC_UNROLL");
    w.line("for (int r = 0; r < 32; ++r) rows[r] = Row{{wword, wword, wword, wword}};");
    w.line("MPKC_UNROLL");
    w.open("for (int b = 0; b < B_BLOCKS; ++b)");
    w.line("MPKC_UNROLL");
    w.open("for (int r = 0; r < 32; ++r)");
    w.line("Row row{};");
    w.line("MPKC_UNROLL");
    w.open("for (int j = 0; j < 4; ++j)");
    w.line("int const n = 128 * b + 32 * j + r;");
    w.line("row.word[j] = n < TOKENS ? aword[n] : PAD_WORD;");
    w.close("");
    w.line("rows[(B_OFFSET + BLOCK_BYTES * b) / 16 + r] = row;");
    w.close("");
    w.close("");
    w.close("");
    w.comment("Staging of K block `kb` of weight tile `tile` (unrouted).");
    w.line("template <bool ASYNC_READER = true>");
    w.open("MPKC_HD static inline void write(uint8_t *sf, Raw const &r, int tile, int kb)");
    w.line("write_at<ASYNC_READER>(sf, r, tile * W_K_BLOCKS + kb, kb);");
    w.close("");
    w.comment("`fetch` then `write`: the staging of one K block in one call (host tests, the CPU reference).");
    w.open("MPKC_HD static inline void stage(uint8_t *sf, float const *w_scale, float const *a_scale, int tile, int kb)");
    w.line("write(sf, fetch(w_scale, a_scale, tile, kb), tile, kb);");
    w.close("");
    w.close(";");
    w.line("static_assert(Scales::SUB_BLOCKS == 4, \"E0013: block-scaled fp8 lowers one 128-wide scale block per stage (tile K 128)\");");
    w.blank();
}
