// tests/oracle/oracle.hpp — the layout oracle: what CUTLASS 4.2's CuTe derives for a pipeline tile,
// compared with what mpkc's generated layout header (<unit>_layout.h, the very functions the kernels
// call) computes, number by number.
//
// Host C++17, compiled with the .toolchain nvcc as plain C++ (a `.cpp`: no device pass, CuTe's
// CUTE_HOST_DEVICE is plain `inline`), against CUTLASS's headers from .toolchain/cutlass
// (scripts/setup). tests/oracle.rs generates one translation unit per batch of units that includes
// this file and the units' layout headers and calls `oracle::check_unit` on each.
//
// Independent sources only: CUTLASS's headers (the UMMA/GMMA atoms, descriptors, the swizzle atoms,
// the TMEM copy traits, the block-scaled layouts, and the set-up of the block-scaled collective
// mirrored from cutlass/gemm/collective/sm100_blockscaled_mma_warpspecialized.hpp) and the PTX ISA
// (the order in which a TMA box is written, the descriptor field it declares unused). No expected
// value comes from mpkc.
//
// CuTe on the host: `cast_smem_ptr_to_uint` has no host implementation (it prints an error and
// returns 0), so descriptors come out with start address 0 plus the offsets CuTe's descriptor
// iterator adds; the oracle adds the stage's SMEM address (>> 4) itself, as the device would.
//
// Output: `FAIL <unit> <check>: ...` for the first mismatches of each check, then one line
// `UNIT <unit> checks <n> failures <m>` per unit.
#pragma once

#define CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED 1

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <cute/tensor.hpp>
#include <cute/atom/copy_atom.hpp>
#include <cute/atom/mma_atom.hpp>
#include <cute/atom/copy_traits_sm100.hpp>
#include <cute/atom/copy_traits_sm90_tma_swizzle.hpp>
#include <cute/atom/mma_traits_sm100.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>
#include <cute/arch/mma_sm100_umma.hpp>
#include <cute/arch/mma_sm90.hpp>
#include <cutlass/detail/sm100_blockscaled_layout.hpp>

namespace oracle {
using namespace cute;

/// Counts the checks of one unit and prints the first mismatches of each kind.
struct Report {
  std::string unit;
  long checks = 0;
  long failures = 0;
  std::map<std::string, int> shown;

  template <class... A>
  void check(bool ok, char const *what, char const *fmt, A... a) {
    ++checks;
    if (ok) return;
    ++failures;
    if (shown[what]++ < 3) {
      std::printf("FAIL %s %s: ", unit.c_str(), what);
      std::printf(fmt, a...);
      std::printf("\n");
    }
  }

  void done() const { std::printf("UNIT %s checks %ld failures %ld\n", unit.c_str(), checks, failures); }
};

/// The no-unit placeholder for a unit without sm_90a or without block scales.
struct None {};

/// SMEM byte addresses of stage bases the descriptors are checked at (1024-aligned, as planned).
inline std::vector<uint32_t> stage_bases() { return {0x0u, 0x400u, 0x8000u, 0x1c000u, 0x37c00u}; }

template <int ELEM_BYTES>
using Elem = std::conditional_t<ELEM_BYTES == 2, bfloat16_t, float_e4m3_t>;

/// Field (lo, width) of a 64-bit descriptor.
inline uint64_t field(uint64_t d, int lo, int width) { return (d >> lo) & ((uint64_t(1) << width) - 1); }

// -------------------------------------------------------------------------------------------------
// Operand tiles in SMEM: CuTe's K-major SW128 atom tiled to the stage, and the TMA box's write order.
// -------------------------------------------------------------------------------------------------

template <class T, int ROWS, int BK, class Off>
void check_tile(Report &r, char const *what, Off mpkc_offset, int const *box, int swizzle_bytes, bool umma_atom) {
  auto sl_umma = tile_to_shape(UMMA::Layout_K_SW128_Atom<T>{}, make_shape(Int<ROWS>{}, Int<BK>{}));
  auto sl_gmma = tile_to_shape(GMMA::Layout_K_SW128_Atom<T>{}, make_shape(Int<ROWS>{}, Int<BK>{}));
  constexpr uintptr_t base = 0x10000;  // a 1024-aligned SMEM address
  auto check_with = [&](auto sl, char const *atom) {
    Tensor s = make_tensor(make_smem_ptr(reinterpret_cast<T *>(base)), sl);
    for (int row = 0; row < ROWS; ++row) {
      for (int k = 0; k < BK; ++k) {
        uint32_t const cute_off = uint32_t(reinterpret_cast<uintptr_t>(&s(row, k)) - base);
        uint32_t const m = mpkc_offset(uint32_t(row), uint32_t(k));
        r.check(m == cute_off, what, "%s element (%d, %d): mpkc %u, CuTe %s %u", what, row, k, m, atom, cute_off);
      }
    }
  };
  if (umma_atom) {
    check_with(sl_umma, "UMMA::Layout_K_SW128_Atom");
  } else {
    check_with(sl_gmma, "GMMA::Layout_K_SW128_Atom");
  }
  // The tensor map's swizzle: CuTe derives it from the layout (TMA::SmemSwizzleBits::B128 = 128 B).
  auto bits = detail::get_tma_swizzle_bits(sl_umma);
  r.check(bits == TMA::SmemSwizzleBits::B128 && swizzle_bytes == 128, what, "%s: tensor map swizzle %d B, CuTe wants B128 (%d)",
          what, swizzle_bytes, int(bits));
  // The TMA box {B0 elements, B1 rows, B2 chunks}: PTX ISA (tensor copy, "Tensor-map" bounding box and
  // swizzling modes) writes it densely, innermost first, then XORs byte-address bits [4,7) with [7,10)
  // for the 128-byte swizzle: CuTe's Swizzle<3,4,3> on the byte offset from a 1024-aligned base.
  constexpr int eb = int(sizeof(T));
  r.check(box[0] * eb == 128 && box[1] == ROWS && box[0] * box[2] == BK, what, "%s: box {%d, %d, %d} is not {128 B, %d, %d}",
          what, box[0], box[1], box[2], ROWS, BK * eb / 128);
  if (box[0] * eb != 128 || box[1] != ROWS || box[0] * box[2] != BK) return;
  Swizzle<3, 4, 3> sw;
  for (int row = 0; row < ROWS; ++row) {
    for (int k = 0; k < BK; ++k) {
      int const c0 = k % box[0], c1 = row, c2 = k / box[0];
      uint32_t const dense = uint32_t(((c2 * box[1] + c1) * box[0] + c0) * eb);
      uint32_t const tma = uint32_t(sw(int(dense)));
      uint32_t const m = mpkc_offset(uint32_t(row), uint32_t(k));
      r.check(m == tma, what, "%s element (%d, %d): mpkc %u, TMA box write %u", what, row, k, m, tma);
    }
  }
}

// -------------------------------------------------------------------------------------------------
// sm_100a.
// -------------------------------------------------------------------------------------------------

/// The UMMA atom of the tile: kind::f16 (bf16) or kind::mxf8f6f4 with UE8M0 scales (e4m3).
template <class Tiles>
auto umma_op() {
  constexpr int N = Tiles::BLOCK_N;
  if constexpr (Tiles::ELEM_BYTES == 2) {
    return SM100_MMA_F16BF16_SS<bfloat16_t, bfloat16_t, float, 128, N, UMMA::Major::K, UMMA::Major::K>{};
  } else {
    return SM100_MMA_MXF8F6F4_SS<float_e4m3_t, float_e4m3_t, float, float_ue8m0_t, 128, N, UMMA::Major::K,
                                 UMMA::Major::K>{};
  }
}

/// Compares a 64-bit SMEM descriptor field by field. `lbo_unused`: PTX ISA (tcgen05 and wgmma
/// "leading dimension byte offset") says the field is "not used, assumed to be 1" for swizzled
/// K-major layouts; CuTe writes 1, MPK's linear writes 0: both are accepted, nothing else.
inline void check_desc(Report &r, char const *what, uint64_t m, uint64_t c, bool lbo_unused, char const *ctx, int j,
                       uint32_t base) {
  uint64_t const lbo_mask = uint64_t(0x3FFF) << 16;
  bool ok = (m & ~lbo_mask) == (c & ~lbo_mask);
  uint64_t const lm = field(m, 16, 14), lc = field(c, 16, 14);
  ok = ok && (lm == lc || (lbo_unused && lm == 0));
  r.check(ok, what, "%s MMA %d at SMEM 0x%x: mpkc 0x%016llx, CuTe 0x%016llx", ctx, j, base, (unsigned long long)m,
          (unsigned long long)c);
}

template <class Tiles, class Sm100>
void check_sm100_operands(Report &r) {
  using T = Elem<Tiles::ELEM_BYTES>;
  constexpr int N = Tiles::BLOCK_N, BK = Tiles::BLOCK_K;
  auto tiled_mma = make_tiled_mma(umma_op<Tiles>());
  static_assert(decltype(size<2>(typename decltype(tiled_mma)::AtomShape_MNK{}))::value == Tiles::MMA_K, "MMA K");
  auto sW = tile_to_shape(UMMA::Layout_K_SW128_Atom<T>{}, make_shape(Int<128>{}, Int<BK>{}));
  auto sA = tile_to_shape(UMMA::Layout_K_SW128_Atom<T>{}, make_shape(Int<N>{}, Int<BK>{}));
  auto cta = tiled_mma.get_slice(0);
  Tensor tW = cta.make_fragment_A(cta.partition_A(make_tensor(make_smem_ptr(reinterpret_cast<T *>(0)), sW)));
  Tensor tA = cta.make_fragment_B(cta.partition_B(make_tensor(make_smem_ptr(reinterpret_cast<T *>(0)), sA)));
  r.check(int(size<2>(tW)) == Tiles::MMAS_PER_STAGE, "sm100 MMAs per stage", "mpkc %d, CuTe %d", Tiles::MMAS_PER_STAGE,
          int(size<2>(tW)));
  for (uint32_t base : stage_bases()) {
    uint64_t const stage_desc = Sm100::desc_at(Sm100::SMEM_DESC, base);
    for (int j = 0; j < int(size<2>(tW)); ++j) {
      uint64_t const cw = uint64_t(tW(0, 0, j)) + (base >> 4);
      uint64_t const ca = uint64_t(tA(0, 0, j)) + (base >> 4);
      check_desc(r, "sm100 W descriptor", Sm100::w_mma(stage_desc, j), cw, true, "weights", j, base);
      check_desc(r, "sm100 A descriptor", Sm100::a_mma(stage_desc, j), ca, true, "activations", j, base);
    }
  }
}

/// The instruction descriptor of each MMA of a stage (and, for block scaling, its scale ids from the
/// TMEM addresses of CuTe's scale-factor fragments, `make_runtime_instr_desc_block_scaled`).
template <class Tiles, class Sm100, class SfaT, class SfbT>
void check_sm100_idesc(Report &r, SfaT const &tCtSFA, SfbT const &tCtSFB) {
  using T = Elem<Tiles::ELEM_BYTES>;
  constexpr int N = Tiles::BLOCK_N;
  for (int j = 0; j < Tiles::MMAS_PER_STAGE; ++j) {
    uint32_t cute = 0;
    if constexpr (Tiles::ELEM_BYTES == 2) {
      cute = uint32_t(UMMA::make_instr_desc<T, T, float, 128, N, UMMA::Major::K, UMMA::Major::K>());
    } else {
      auto base = UMMA::make_instr_desc_block_scaled<T, T, float, float_ue8m0_t, 128, N, UMMA::Major::K, UMMA::Major::K>();
      uint32_t const sfa = raw_pointer_cast(tCtSFA(_, _, j).data());
      uint32_t const sfb = raw_pointer_cast(tCtSFB(_, _, j).data());
      cute = uint32_t(UMMA::make_runtime_instr_desc_block_scaled<>(base, sfa, sfb) >> 32);
    }
    r.check(Sm100::idesc(j) == cute, "sm100 instruction descriptor", "MMA %d: mpkc 0x%08x, CuTe 0x%08x", j,
            Sm100::idesc(j), cute);
  }
}

/// Accumulator slots in TMEM (CuTe's make_fragment_C over (tile, slots), as make_sm100_accumulator
/// builds it) and the epilogue's tcgen05.ld.32x32b fragment (CuTe's make_tmem_copy).
template <class Tiles, class Sm100>
void check_sm100_accumulator(Report &r) {
  constexpr int N = Tiles::BLOCK_N;
  using TM = decltype(make_tiled_mma(umma_op<Tiles>()));
  TM tiled_mma;
  auto acc_shape = partition_shape_C(tiled_mma, make_shape(Int<128>{}, Int<N>{}));
  Tensor acc = TM::make_fragment_C(append(acc_shape, Int<Sm100::ACC_SLOTS>{}));
  for (int s = 0; s < Sm100::ACC_SLOTS; ++s) {
    Tensor a = acc(make_coord(_, _), 0, 0, s);
    for (int m = 0; m < 128; ++m) {
      for (int n = 0; n < N; ++n) {
        uint32_t const c = raw_pointer_cast(a.data() + a.layout()(m, n));
        uint32_t const p = Sm100::acc_tmem(s, uint32_t(m), uint32_t(n));
        r.check(p == c, "sm100 accumulator TMEM", "slot %d (%d, %d): mpkc 0x%08x, CuTe 0x%08x", s, m, n, p, c);
      }
    }
  }
  // The load the epilogue issues, per thread and register, for each slot.
  auto check_ld = [&](auto op) {
    for (int s = 0; s < Sm100::ACC_SLOTS; ++s) {
      Tensor a = acc(make_coord(_, _), 0, 0, s);
      auto t2r = make_tmem_copy(op, a);
      Tensor cD = make_identity_tensor(make_shape(Int<128>{}, Int<N>{}));
      for (int t = 0; t < 128; ++t) {
        auto thr = t2r.get_slice(t);
        Tensor src = thr.partition_S(a);
        std::set<uint32_t> reach;
        for (int i = 0; i < int(size(src)); ++i) reach.insert(raw_pointer_cast(src.data() + src.layout()(i)));
        Tensor dst = thr.partition_D(cD);
        int const warp = t / 32, lane = t % 32;
        int reg = 0;
        for (int c = 0; c < N; c += Sm100::LD_COLS) {
          for (int j = 0; j < Sm100::LD_COLS; ++j, ++reg) {
            auto xy = dst(reg);
            int const cm = int(get<0>(xy)), cn = int(get<1>(xy));
            int const pm = Sm100::ld_row(warp, lane), pn = Sm100::ld_col(c, j);
            uint32_t const paddr = Sm100::ld_tmem(s, warp, c) + (uint32_t(lane) << 16) + uint32_t(j);
            uint32_t const caddr = raw_pointer_cast(a.data() + a.layout()(cm, cn));
            r.check(pm == cm && pn == cn, "sm100 tcgen05.ld fragment",
                    "slot %d thread %d register %d: mpkc (%d, %d), CuTe (%d, %d)", s, t, reg, pm, pn, cm, cn);
            r.check(paddr == caddr && reach.count(paddr) == 1, "sm100 tcgen05.ld address",
                    "slot %d thread %d register %d: mpkc 0x%08x, CuTe 0x%08x (%s the warp's lanes)", s, t, reg, paddr,
                    caddr, reach.count(paddr) ? "in" : "outside");
          }
        }
        r.check(reg == int(size(dst)), "sm100 tcgen05.ld fragment", "thread %d: mpkc loads %d registers, CuTe %d", t,
                reg, int(size(dst)));
      }
    }
  };
  if constexpr (Sm100::LD_COLS == 16) {
    check_ld(SM100_TMEM_LOAD_32dp32b16x{});
  } else {
    static_assert(Sm100::LD_COLS == 8, "tcgen05.ld.32x32b.x8 or .x16");
    check_ld(SM100_TMEM_LOAD_32dp32b8x{});
  }
}

/// The TMEM bit addresses tcgen05.cp.32x128b.warpx4 writes SMEM byte `b` of a 512-byte block to,
/// relative to its destination: Copy_Traits<SM100_UTCCP_4x32dp128bit_1cta>::ValID maps (row, bit,
/// broadcast) of the 32 x 128-bit source to TMEM (DP_b per lane).
inline std::set<std::tuple<int, int, int>> utccp_image(uint32_t b) {
  using VID = typename Copy_Traits<SM100_UTCCP_4x32dp128bit_1cta>::ValID;
  constexpr long DPB = TMEM::DP_b::value;
  std::set<std::tuple<int, int, int>> out;
  int const row = int(b / 16), bit = int(b % 16) * 8;
  for (int q = 0; q < 4; ++q) {
    long const a = long(VID{}(row, bit, q));
    long const lane = a / DPB, colbit = a % DPB;
    out.insert({int(lane), int(colbit / 32), int((colbit % 32) / 8)});
  }
  return out;
}

/// (lane, column, byte) of a TMEM address of an 8-bit tensor (CuTe's tmem_ptr keeps the byte in bits 30-31).
inline std::tuple<int, int, int> tmem_byte(uint32_t a) {
  return {int((a >> 16) & 0x3FFF), int(a & 0xFFFF), int(a >> 30)};
}

/// Block-scaled fp8 on sm_100a: the scale-factor blocks in SMEM, the loader's staging, the
/// tcgen05.cp copies and the TMEM the MMAs read, per CUTLASS's block-scaled collective.
template <class Tiles, class Sm100, class Scales>
void check_sm100_scales(Report &r) {
  constexpr int N = Tiles::BLOCK_N;
  using TM = decltype(make_tiled_mma(umma_op<Tiles>()));
  TM tiled_mma;
  using Cfg = cutlass::detail::Sm1xxBlockScaledConfig<32>;
  auto tile = make_shape(Int<128>{}, Int<N>{}, Int<Tiles::BLOCK_K>{});
  auto sSFA = Cfg::deduce_smem_layoutSFA(tiled_mma, tile);
  auto sSFB = Cfg::deduce_smem_layoutSFB(tiled_mma, tile);
  Tensor tCtSFA = make_tensor<typename TM::FrgTypeSFA>(shape(sSFA));
  Tensor tCtSFB = make_tensor<typename TM::FrgTypeSFB>(shape(sSFB));
  check_sm100_idesc<Tiles, Sm100>(r, tCtSFA, tCtSFB);
  constexpr int NSFB = decltype(size<0, 0>(sSFB))::value;  // B rows CUTLASS lays out: N rounded up to 128
  r.check(Scales::SUB_BLOCKS == int(size<2>(sSFA)) && Scales::SUB_BLOCKS == Tiles::MMAS_PER_STAGE, "scale sub-blocks",
          "mpkc %d, CuTe %d, MMAs %d", Scales::SUB_BLOCKS, int(size<2>(sSFA)), Tiles::MMAS_PER_STAGE);
  r.check(Scales::B_BLOCKS * 128 == NSFB, "scale B blocks", "mpkc %d x 128 rows, CuTe %d", Scales::B_BLOCKS, NSFB);
  // SMEM: the byte of each (row, K sub-block).
  for (int s = 0; s < Scales::SUB_BLOCKS; ++s) {
    for (int m = 0; m < 128; ++m) {
      int const c = int(sSFA(make_coord(make_coord(m, 0), 0, s)));
      r.check(int(Scales::a_byte(uint32_t(m), uint32_t(s))) == c, "scale SMEM A", "row %d sub-block %d: mpkc %u, CuTe %d", m,
              s, Scales::a_byte(uint32_t(m), uint32_t(s)), c);
    }
    for (int n = 0; n < NSFB; ++n) {
      int const c = int(Scales::B_OFFSET) + int(sSFB(make_coord(make_coord(n, 0), 0, s)));
      r.check(int(Scales::b_byte(uint32_t(n), uint32_t(s))) == c, "scale SMEM B", "token %d sub-block %d: mpkc %u, CuTe %d",
              n, s, Scales::b_byte(uint32_t(n), uint32_t(s)), c);
    }
  }
  // The loader's staging function, run here: distinct powers of two per token, every byte checked
  // where CUTLASS's layout puts it (tokens past M_REAL or BLOCK_N: 1.0 = UE8M0 127).
  for (int tile_i : {0, 1}) {
    for (int kb : {0, Scales::K_BLOCKS - 1}) {
      std::vector<float> w((tile_i + 1) * Scales::K_BLOCKS, 0.f), a(Scales::TOKENS * Scales::K_BLOCKS, 0.f);
      for (size_t i = 0; i < w.size(); ++i) w[i] = std::ldexp(1.f, int(i % 40) - 20);
      for (size_t i = 0; i < a.size(); ++i) a[i] = std::ldexp(1.f, int((i * 7) % 60) - 30);
      alignas(16) static uint8_t block[4096];
      std::memset(block, 0xA5, sizeof block);
      Scales::stage(block, w.data(), a.data(), tile_i, kb);
      auto ue = [](float x) { return int(std::ilogb(x)) + 127; };
      for (int s = 0; s < Scales::SUB_BLOCKS; ++s) {
        for (int m = 0; m < 128; ++m) {
          int const at = int(sSFA(make_coord(make_coord(m, 0), 0, s)));
          int const want = ue(w[tile_i * Scales::K_BLOCKS + kb]);
          r.check(block[at] == want, "scale staging A", "tile %d K block %d row %d sub-block %d: byte %d holds %d, want %d",
                  tile_i, kb, m, s, at, int(block[at]), want);
        }
        for (int n = 0; n < NSFB; ++n) {
          int const at = int(Scales::B_OFFSET) + int(sSFB(make_coord(make_coord(n, 0), 0, s)));
          int const want = n < Scales::TOKENS ? ue(a[n * Scales::K_BLOCKS + kb]) : 127;
          r.check(block[at] == want, "scale staging B", "tile %d K block %d token %d sub-block %d: byte %d holds %d, want %d",
                  tile_i, kb, n, s, at, int(block[at]), want);
        }
      }
      for (uint32_t i = Scales::BYTES; i < sizeof block; ++i) {
        r.check(block[i] == 0xA5, "scale staging bounds", "byte %u past the %u-byte block was written", i, Scales::BYTES);
      }
    }
  }
  // UE8M0 exactness: the values a UE8M0 byte holds (2^-126 .. 2^127 as normal f32) and nothing else.
  for (float x : {1.f, 0.5f, 2.f, std::ldexp(1.f, -126), std::ldexp(1.f, 127), 3.f, 0.75f, -1.f, 0.f, -0.f,
                  std::ldexp(1.f, -127), INFINITY, NAN, 1.0000001f}) {
    int e = 0;
    float const mant = std::frexp(x, &e);
    bool const want = std::isfinite(x) && mant == 0.5f && e - 1 >= -126 && e - 1 <= 127;
    r.check(Scales::exact_in_ue8m0(x) == want, "UE8M0 exactness", "%a: mpkc %d, want %d", double(x),
            int(Scales::exact_in_ue8m0(x)), int(want));
    if (want) {
      r.check(int(Scales::ue8m0(x)) == e - 1 + 127, "UE8M0 byte", "%a: mpkc %u, want %d", double(x), Scales::ue8m0(x), e - 1 + 127);
    }
  }
  // tcgen05.cp: CUTLASS's copies of the compact SF tensors (make_utccp_copy, get_utccp_smem_desc_tensor).
  auto copies = [&](auto s_layout, auto t_tensor) {
    auto s_c = make_tensor(make_smem_ptr(reinterpret_cast<float_ue8m0_t *>(0)), filter_zeros(s_layout));
    auto t_c = make_tensor(t_tensor.data(), filter_zeros(t_tensor.layout()));
    auto cp = make_utccp_copy(SM100_UTCCP_4x32dp128bit_1cta{}, t_c);
    auto thr = cp.get_slice(0);
    auto S = get_utccp_smem_desc_tensor<SM100_UTCCP_4x32dp128bit_1cta>(thr.partition_S(s_c));
    auto D = thr.partition_D(t_c);
    auto Sg = group_modes<1, decltype(rank(S))::value>(S);
    auto Dg = group_modes<1, decltype(rank(D))::value>(D);
    std::vector<std::pair<uint64_t, uint32_t>> out;
    for (int i = 0; i < int(size<1>(Sg)); ++i) {
      out.push_back({uint64_t(Sg(0, i)), raw_pointer_cast(Dg(_, i).data())});
    }
    return out;
  };
  auto ca = copies(sSFA, tCtSFA);
  auto cb = copies(sSFB, tCtSFB);
  for (int stage : {0, 1}) {
    uint32_t const base = 0x2400u + uint32_t(stage) * 0x400u;  // the SF block's SMEM address
    r.check(ca.size() == 1, "tcgen05.cp A", "CuTe copies the A block with %d instructions, mpkc 1", int(ca.size()));
    r.check(int(cb.size()) == Scales::B_BLOCKS, "tcgen05.cp B", "CuTe copies the B blocks with %d instructions, mpkc %d",
            int(cb.size()), Scales::B_BLOCKS);
    for (size_t i = 0; i < ca.size(); ++i) {
      uint64_t const c = ca[i].first + (base >> 4);
      uint64_t const m = Sm100::sf_desc(base);
      r.check(m == c, "tcgen05.cp A descriptor", "stage %d: mpkc 0x%016llx, CuTe 0x%016llx", stage, (unsigned long long)m,
              (unsigned long long)c);
      r.check(ca[i].second == 0u, "tcgen05.cp A destination", "CuTe writes the A block at +0x%08x", ca[i].second);
    }
    for (size_t i = 0; i < cb.size() && int(i) < Scales::B_BLOCKS; ++i) {
      uint32_t const bb = base + Scales::B_OFFSET;
      uint64_t const c = cb[i].first + (bb >> 4);
      uint64_t const m = Sm100::sf_desc(bb + uint32_t(i) * Scales::BLOCK_BYTES);
      r.check(m == c, "tcgen05.cp B descriptor", "stage %d block %d: mpkc 0x%016llx, CuTe 0x%016llx", stage, int(i),
              (unsigned long long)m, (unsigned long long)c);
      uint32_t const md = Sm100::sfb_tmem(stage, int(i)) - Sm100::sfb_tmem(stage, 0);
      r.check(md == cb[i].second, "tcgen05.cp B destination", "stage %d block %d: mpkc +0x%08x, CuTe +0x%08x", stage, int(i),
              md, cb[i].second);
    }
  }
  // What each MMA reads (CuTe's tmem_sf_frg: every lane-quarter replica of every row) against what
  // mpkc's copies put there: the SMEM byte mpkc stages the scale of (row, sub-block) at, through the
  // copy of its block (CuTe's UTCCP ValID), relative to the MMA's scale operand.
  auto reads = [&](auto const &frg, char const *what, int rows, auto landed, uint32_t operand_col) {
    constexpr int R = decltype(size<0, 0>(frg))::value;  // rows x 4 replicas
    for (int j = 0; j < Tiles::MMAS_PER_STAGE; ++j) {
      auto f = frg(_, _, j);
      uint32_t const cute_op = raw_pointer_cast(f.data());
      uint32_t const mpkc_op = Sm100::sf_operand(operand_col, j) - operand_col;
      r.check(cute_op == mpkc_op, what, "MMA %d scale operand: mpkc +0x%08x, CuTe +0x%08x", j, mpkc_op, cute_op);
      for (int i = 0; i < R; ++i) {
        int const row = i % (R / 4);
        if (row >= rows) continue;
        uint32_t const a = raw_pointer_cast(f.data() + f.layout()(make_coord(make_coord(i, 0), 0)));
        auto [lane, col, byte] = tmem_byte(a);
        auto img = landed(row, j);
        bool const ok = img.count({lane, col, byte}) == 1;
        r.check(ok, what, "MMA %d row %d replica %d reads lane %d column %d byte %d, not where mpkc's copy put its scale", j,
                row, i / (R / 4), lane, col, byte);
      }
    }
  };
  reads(tCtSFA, "scale TMEM A", 128,
        [](int m, int s) { return utccp_image(Scales::a_byte(uint32_t(m), uint32_t(s))); }, Sm100::sfa_tmem(1));
  reads(tCtSFB, "scale TMEM B", N,
        [](int n, int s) {
          uint32_t const off = Scales::b_byte(uint32_t(n), uint32_t(s)) - Scales::B_OFFSET;
          int const blk = int(off / Scales::BLOCK_BYTES);
          int const shift = int(Sm100::sfb_tmem(1, blk) - Sm100::sfb_tmem(1, 0));
          std::set<std::tuple<int, int, int>> out;
          for (auto [l, c, b] : utccp_image(off % Scales::BLOCK_BYTES)) out.insert({l, c + shift, b});
          return out;
        },
        Sm100::sfb_tmem(1, 0));
  // Columns: the accumulator slots, then per stage 4 (A) + 4 per B block, all inside TMEM_END.
  r.check(Sm100::sfa_tmem(0) >= uint32_t(Sm100::ACC_SLOTS * N) && Sm100::sfb_tmem(0, 0) >= Sm100::sfa_tmem(0) + 4 &&
              Sm100::sfa_tmem(1) >= Sm100::sfb_tmem(0, Scales::B_BLOCKS - 1) + 4,
          "scale TMEM columns", "A at %u, B at %u, next stage at %u overlap (accumulators end at %d)", Sm100::sfa_tmem(0),
          Sm100::sfb_tmem(0, 0), Sm100::sfa_tmem(1), Sm100::ACC_SLOTS * N);
}

// -------------------------------------------------------------------------------------------------
// sm_90a.
// -------------------------------------------------------------------------------------------------

template <class Tiles, class Sm90>
void check_sm90(Report &r) {
  using T = Elem<Tiles::ELEM_BYTES>;
  constexpr int N = Tiles::BLOCK_N, BK = Tiles::BLOCK_K;
  auto op = GMMA::ss_op_selector<T, T, float, Shape<_64, Int<N>, Int<BK>>, GMMA::Major::K, GMMA::Major::K>();
  auto tiled_mma = make_tiled_mma(op);
  using AtomShape = typename decltype(tiled_mma)::AtomShape_MNK;
  static_assert(decltype(size<1>(AtomShape{}))::value == N, "CuTe's wgmma atom is m64nNk with N = BLOCK_N");
  r.check(int(size<2>(AtomShape{})) == Tiles::MMA_K, "sm90 MMA K", "mpkc %d, CuTe %d", Tiles::MMA_K, int(size<2>(AtomShape{})));
  auto sW = tile_to_shape(GMMA::Layout_K_SW128_Atom<T>{}, make_shape(Int<128>{}, Int<BK>{}));
  auto sA = tile_to_shape(GMMA::Layout_K_SW128_Atom<T>{}, make_shape(Int<N>{}, Int<BK>{}));
  auto thr = tiled_mma.get_slice(0);
  Tensor tW = thr.make_fragment_A(thr.partition_A(make_tensor(make_smem_ptr(reinterpret_cast<T *>(0)), sW)));
  Tensor tA = thr.make_fragment_B(thr.partition_B(make_tensor(make_smem_ptr(reinterpret_cast<T *>(0)), sA)));
  r.check(int(size<1>(tW)) == 2 && int(size<2>(tW)) == Tiles::MMAS_PER_STAGE, "sm90 MMAs per stage",
          "CuTe: %d halves x %d, mpkc 2 x %d", int(size<1>(tW)), int(size<2>(tW)), Tiles::MMAS_PER_STAGE);
  for (uint32_t base : stage_bases()) {
    uint64_t const stage_desc = Sm90::desc_at(base);
    for (int j = 0; j < int(size<2>(tW)); ++j) {
      for (int h = 0; h < 2; ++h) {
        uint64_t const c = uint64_t(tW(0, h, j)) + (base >> 4);
        check_desc(r, "sm90 W descriptor", Sm90::w_mma(stage_desc, h, j), c, false, h ? "weights (half 1)" : "weights (half 0)",
                   j, base);
      }
      uint64_t const c = uint64_t(tA(0, 0, j)) + (base >> 4);
      check_desc(r, "sm90 A descriptor", Sm90::a_mma(stage_desc, j), c, false, "activations", j, base);
    }
  }
  // The accumulator fragment: register i of thread t in half h holds (row, token).
  Tensor cC = make_identity_tensor(make_shape(Int<128>{}, Int<N>{}));
  r.check(Sm90::ACC_REGS * 128 * 2 == 128 * N, "sm90 accumulator registers", "mpkc %d per half", Sm90::ACC_REGS);
  for (int t = 0; t < 128; ++t) {
    Tensor c = tiled_mma.get_slice(t).partition_C(cC);
    r.check(int(size<0>(c)) == Sm90::ACC_REGS && int(size<1>(c)) == 2, "sm90 accumulator registers",
            "CuTe %d registers x %d halves, mpkc %d x 2", int(size<0>(c)), int(size<1>(c)), Sm90::ACC_REGS);
    for (int h = 0; h < 2; ++h) {
      for (int i = 0; i < Sm90::ACC_REGS && i < int(size<0>(c)); ++i) {
        auto xy = c(i, h, 0);
        int const cm = int(get<0>(xy)), cn = int(get<1>(xy));
        int const pm = Sm90::acc_row(h, t / 32, t % 32, i), pn = Sm90::acc_col(t % 32, i);
        r.check(pm == cm && pn == cn, "sm90 accumulator fragment", "thread %d half %d register %d: mpkc (%d, %d), CuTe (%d, %d)",
                t, h, i, pm, pn, cm, cn);
      }
    }
  }
}

// -------------------------------------------------------------------------------------------------
// One unit.
// -------------------------------------------------------------------------------------------------

template <class Tiles, class Sm100, class Sm90, class Scales>
void check_unit(char const *unit) {
  Report r;
  r.unit = unit;
  using T = Elem<Tiles::ELEM_BYTES>;
  check_tile<T, 128, Tiles::BLOCK_K>(r, "W tile", &Tiles::w_offset, Tiles::W_BOX, Tiles::SWIZZLE_BYTES, true);
  check_tile<T, Tiles::BLOCK_N, Tiles::BLOCK_K>(r, "A tile", &Tiles::a_offset, Tiles::A_BOX, Tiles::SWIZZLE_BYTES, true);
  check_sm100_operands<Tiles, Sm100>(r);
  check_sm100_accumulator<Tiles, Sm100>(r);
  if constexpr (std::is_same_v<Scales, None>) {
    static_assert(Tiles::ELEM_BYTES == 2, "block-scaled fp8 has a Scales");
    int dummy = 0;
    check_sm100_idesc<Tiles, Sm100>(r, make_tensor(&dummy, make_layout(make_shape(_1{}, _1{}, Int<Tiles::MMAS_PER_STAGE>{}))),
                                    make_tensor(&dummy, make_layout(make_shape(_1{}, _1{}, Int<Tiles::MMAS_PER_STAGE>{}))));
  } else {
    check_sm100_scales<Tiles, Sm100, Scales>(r);
  }
  if constexpr (!std::is_same_v<Sm90, None>) {
    check_tile<T, 128, Tiles::BLOCK_K>(r, "W tile (wgmma atom)", &Tiles::w_offset, Tiles::W_BOX, Tiles::SWIZZLE_BYTES, false);
    check_tile<T, Tiles::BLOCK_N, Tiles::BLOCK_K>(r, "A tile (wgmma atom)", &Tiles::a_offset, Tiles::A_BOX,
                                                   Tiles::SWIZZLE_BYTES, false);
    check_sm90<Tiles, Sm90>(r);
  }
  r.done();
}

}  // namespace oracle
