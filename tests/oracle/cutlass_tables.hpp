// tests/oracle/cutlass_tables.hpp — what CUTLASS 4.2's CuTe derives for a pipeline tile, as plain
// tables: one set per tile shape (element bytes, tile N, tile K, accumulator slots, tcgen05.ld
// width), computed once and shared by every unit of that shape (CuTe host code is slow to compile;
// the per-unit comparison in oracle.hpp is cheap).
//
// Host C++17 (a `.cpp` compiled by nvcc: no device pass; CUTE_HOST_DEVICE is plain `inline`).
// `cast_smem_ptr_to_uint` has no host implementation (it prints an error and returns 0): the SMEM
// descriptors here carry start address 0 plus the offsets CuTe's descriptor iterator adds, i.e.
// they are relative to the stage's SMEM address, which the comparison adds (>> 4) as the device
// would. Only CUTLASS's headers are consulted; nothing here knows mpkc.
#pragma once

#define CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED 1

#include <cstdint>
#include <set>
#include <tuple>
#include <type_traits>
#include <utility>
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

template <int ELEM_BYTES>
using Elem = std::conditional_t<ELEM_BYTES == 2, bfloat16_t, float_e4m3_t>;

/// (lane, column, byte) in TMEM.
using TmemByte = std::tuple<int, int, int>;

// -------------------------------------------------------------------------------------------------
// Operand tiles: CuTe's K-major 128-byte-swizzle atoms tiled over the stage.
// -------------------------------------------------------------------------------------------------

/// Byte offset of element (row, k) (index row * BK + k) under UMMA's and GMMA's K-major SW128 atoms,
/// and the tensor-map swizzle CuTe derives from the layout (detail::get_tma_swizzle_bits).
struct TileTable {
  std::vector<uint32_t> umma, gmma;
  bool swizzle_128b = false;
};

template <int EB, int ROWS, int BK>
TileTable const &tile_table() {
  static TileTable const t = [] {
    using T = Elem<EB>;
    TileTable out;
    constexpr uintptr_t base = 0x10000;  // a 1024-aligned SMEM address
    auto fill = [&](auto atom, std::vector<uint32_t> &v) {
      auto sl = tile_to_shape(atom, make_shape(Int<ROWS>{}, Int<BK>{}));
      Tensor s = make_tensor(make_smem_ptr(reinterpret_cast<T *>(base)), sl);
      for (int row = 0; row < ROWS; ++row) {
        for (int k = 0; k < BK; ++k) v.push_back(uint32_t(reinterpret_cast<uintptr_t>(&s(row, k)) - base));
      }
    };
    fill(UMMA::Layout_K_SW128_Atom<T>{}, out.umma);
    fill(GMMA::Layout_K_SW128_Atom<T>{}, out.gmma);
    auto sl = tile_to_shape(UMMA::Layout_K_SW128_Atom<T>{}, make_shape(Int<ROWS>{}, Int<BK>{}));
    out.swizzle_128b = detail::get_tma_swizzle_bits(sl) == TMA::SmemSwizzleBits::B128;
    return out;
  }();
  return t;
}

// -------------------------------------------------------------------------------------------------
// sm_100a: tcgen05.mma.
// -------------------------------------------------------------------------------------------------

/// The UMMA atom: kind::f16 (bf16, M = 128 or 64) or kind::mxf8f6f4 with UE8M0 scales (e4m3,
/// M = 128), K-major.
template <int EB, int N, int M = 128>
auto umma_op() {
  if constexpr (EB == 2) {
    return SM100_MMA_F16BF16_SS<bfloat16_t, bfloat16_t, float, M, N, UMMA::Major::K, UMMA::Major::K>{};
  } else {
    return SM100_MMA_MXF8F6F4_SS<float_e4m3_t, float_e4m3_t, float, float_ue8m0_t, 128, N, UMMA::Major::K,
                                 UMMA::Major::K>{};
  }
}

/// Block-scaled fp8: CUTLASS's block-scaled collective set-up for one tile
/// (cutlass/gemm/collective/sm100_blockscaled_mma_warpspecialized.hpp): the scale-factor SMEM
/// layouts (Sm1xxBlockScaledConfig<32>::deduce_smem_layoutSF*), the TMEM fragments
/// (FrgTypeSFA/FrgTypeSFB = UMMA::tmem_sf_frg), the tcgen05.cp copies of their compact forms
/// (make_utccp_copy, get_utccp_smem_desc_tensor), the scale operand of each k-block's MMA and
/// where in TMEM it reads each row.
struct ScaleTable {
  int sub_blocks = 0;           ///< k-blocks (MMAs) per tile K
  int rows_b = 0;               ///< B rows laid out: N rounded up to 128
  std::vector<int> sfa, sfb;    ///< SMEM byte of (row, k-block): [row * sub_blocks + s]
  std::vector<std::pair<uint64_t, uint32_t>> copies_a, copies_b;  ///< (descriptor, TMEM destination) per tcgen05.cp
  std::vector<uint32_t> op_a, op_b;  ///< scale operand (TMEM address) of MMA j, relative to the fragment
  /// (j, row, replica) -> the TMEM byte MMA j reads for that row's scale, relative to the fragment.
  std::vector<std::tuple<int, int, int, TmemByte>> reads_a, reads_b;
  std::vector<uint32_t> idesc;  ///< runtime instruction descriptor of MMA j (scale ids from the operands)
};

template <int N, int BK>
ScaleTable const &scale_table() {
  static ScaleTable const t = [] {
    using TM = decltype(make_tiled_mma(umma_op<1, N>()));
    TM tiled_mma;
    using Cfg = cutlass::detail::Sm1xxBlockScaledConfig<32>;
    auto tile = make_shape(Int<128>{}, Int<N>{}, Int<BK>{});
    auto sSFA = Cfg::deduce_smem_layoutSFA(tiled_mma, tile);
    auto sSFB = Cfg::deduce_smem_layoutSFB(tiled_mma, tile);
    Tensor tCtSFA = make_tensor<typename TM::FrgTypeSFA>(shape(sSFA));
    Tensor tCtSFB = make_tensor<typename TM::FrgTypeSFB>(shape(sSFB));
    ScaleTable out;
    out.sub_blocks = int(size<2>(sSFA));
    out.rows_b = int(size<0, 0>(sSFB));
    for (int m = 0; m < 128; ++m) {
      for (int s = 0; s < out.sub_blocks; ++s) out.sfa.push_back(int(sSFA(make_coord(make_coord(m, 0), 0, s))));
    }
    for (int n = 0; n < out.rows_b; ++n) {
      for (int s = 0; s < out.sub_blocks; ++s) out.sfb.push_back(int(sSFB(make_coord(make_coord(n, 0), 0, s))));
    }
    auto copies = [](auto s_layout, auto t_tensor) {
      auto s_c = make_tensor(make_smem_ptr(reinterpret_cast<float_ue8m0_t *>(0)), filter_zeros(s_layout));
      auto t_c = make_tensor(t_tensor.data(), filter_zeros(t_tensor.layout()));
      auto cp = make_utccp_copy(SM100_UTCCP_4x32dp128bit_1cta{}, t_c);
      auto thr = cp.get_slice(0);
      auto S = get_utccp_smem_desc_tensor<SM100_UTCCP_4x32dp128bit_1cta>(thr.partition_S(s_c));
      auto D = thr.partition_D(t_c);
      auto Sg = group_modes<1, decltype(rank(S))::value>(S);
      auto Dg = group_modes<1, decltype(rank(D))::value>(D);
      std::vector<std::pair<uint64_t, uint32_t>> v;
      for (int i = 0; i < int(size<1>(Sg)); ++i) v.push_back({uint64_t(Sg(0, i)), raw_pointer_cast(Dg(_, i).data())});
      return v;
    };
    out.copies_a = copies(sSFA, tCtSFA);
    out.copies_b = copies(sSFB, tCtSFB);
    auto reads = [&](auto const &frg, std::vector<uint32_t> &ops, std::vector<std::tuple<int, int, int, TmemByte>> &v) {
      constexpr int R = decltype(size<0, 0>(frg))::value;  // rows x 4 lane-quarter replicas
      for (int j = 0; j < out.sub_blocks; ++j) {
        auto f = frg(_, _, j);
        ops.push_back(raw_pointer_cast(f.data()));
        for (int i = 0; i < R; ++i) {
          uint32_t const a = raw_pointer_cast(f.data() + f.layout()(make_coord(make_coord(i, 0), 0)));
          v.push_back({j, i % (R / 4), i / (R / 4), TmemByte{int((a >> 16) & 0x3FFF), int(a & 0xFFFF), int(a >> 30)}});
        }
      }
    };
    reads(tCtSFA, out.op_a, out.reads_a);
    reads(tCtSFB, out.op_b, out.reads_b);
    auto base = UMMA::make_instr_desc_block_scaled<float_e4m3_t, float_e4m3_t, float, float_ue8m0_t, 128, N, UMMA::Major::K,
                                                   UMMA::Major::K>();
    for (int j = 0; j < out.sub_blocks; ++j) {
      out.idesc.push_back(uint32_t(UMMA::make_runtime_instr_desc_block_scaled<>(base, out.op_a[j], out.op_b[j]) >> 32));
    }
    return out;
  }();
  return t;
}

/// The TMEM bytes tcgen05.cp.32x128b.warpx4 writes SMEM byte `b` of a 512-byte block to, relative
/// to its destination: Copy_Traits<SM100_UTCCP_4x32dp128bit_1cta>::ValID maps (row, bit, broadcast)
/// of the 32 x 128-bit source to TMEM bit addresses (DP_b bits per lane).
inline std::set<TmemByte> utccp_image(uint32_t b) {
  using VID = typename Copy_Traits<SM100_UTCCP_4x32dp128bit_1cta>::ValID;
  constexpr long DPB = TMEM::DP_b::value;
  std::set<TmemByte> out;
  int const row = int(b / 16), bit = int(b % 16) * 8;
  for (int q = 0; q < 4; ++q) {
    long const a = long(VID{}(row, bit, q));
    out.insert(TmemByte{int(a / DPB), int((a % DPB) / 32), int((a % 32) / 8)});
  }
  return out;
}

/// One register of the epilogue's tcgen05.ld: the accumulator element (row, token) it holds and the
/// TMEM address it comes from.
struct LdReg {
  int m, n;
  uint32_t addr;
};

/// tcgen05 for one tile: the SMEM descriptor of each MMA's operands (relative to the stage), the
/// instruction descriptors, the TMEM address of each accumulator element per slot
/// (make_fragment_C over (tile, slots), as cutlass::detail::make_sm100_accumulator builds it) and
/// the tcgen05.ld.32x32b.xLD fragment per thread (make_tmem_copy) with the lanes its warp reaches.
struct Sm100Table {
  int mma_k = 0, mmas = 0;
  std::vector<uint64_t> w, a;     ///< per MMA j
  std::vector<uint32_t> idesc;    ///< per MMA j
  std::vector<uint32_t> acc;      ///< [(slot * M + m) * N + n]
  std::vector<std::vector<LdReg>> ld;           ///< [slot * 128 + thread] -> registers in order
  std::vector<std::set<uint32_t>> reach;        ///< [slot * 128 + thread] -> TMEM addresses its warp's load covers
};

/// CuTe's UMMA partition of an M x N x BK tile (M = 128, or 64 for bf16). For M = 64 the ld and
/// reach tables stay empty: CuTe's 32-lane tcgen05.ld atoms do not partition a layout-F
/// accumulator, so the oracle checks the kernel's loads against the accumulator layout itself.
template <int EB, int N, int BK, int SLOTS, int LD, int M = 128>
Sm100Table const &sm100_table() {
  static Sm100Table const t = [] {
    using T = Elem<EB>;
    using TM = decltype(make_tiled_mma(umma_op<EB, N, M>()));
    TM tiled_mma;
    Sm100Table out;
    out.mma_k = int(size<2>(typename TM::AtomShape_MNK{}));
    auto sW = tile_to_shape(UMMA::Layout_K_SW128_Atom<T>{}, make_shape(Int<M>{}, Int<BK>{}));
    auto sA = tile_to_shape(UMMA::Layout_K_SW128_Atom<T>{}, make_shape(Int<N>{}, Int<BK>{}));
    auto cta = tiled_mma.get_slice(0);
    Tensor tW = cta.make_fragment_A(cta.partition_A(make_tensor(make_smem_ptr(reinterpret_cast<T *>(0)), sW)));
    Tensor tA = cta.make_fragment_B(cta.partition_B(make_tensor(make_smem_ptr(reinterpret_cast<T *>(0)), sA)));
    out.mmas = int(size<2>(tW));
    for (int j = 0; j < out.mmas; ++j) {
      out.w.push_back(uint64_t(tW(0, 0, j)));
      out.a.push_back(uint64_t(tA(0, 0, j)));
      if constexpr (EB == 2) {
        out.idesc.push_back(uint32_t(UMMA::make_instr_desc<T, T, float, M, N, UMMA::Major::K, UMMA::Major::K>()));
      }
    }
    if constexpr (EB == 1) out.idesc = scale_table<N, BK>().idesc;
    auto acc_shape = partition_shape_C(tiled_mma, make_shape(Int<M>{}, Int<N>{}));
    Tensor acc = TM::make_fragment_C(append(acc_shape, Int<SLOTS>{}));
    using Op = std::conditional_t<LD == 16, SM100_TMEM_LOAD_32dp32b16x, SM100_TMEM_LOAD_32dp32b8x>;
    static_assert(LD == 16 || LD == 8, "tcgen05.ld.32x32b.x8 or .x16");
    Tensor cD = make_identity_tensor(make_shape(Int<M>{}, Int<N>{}));
    for (int s = 0; s < SLOTS; ++s) {
      Tensor a = acc(make_coord(_, _), 0, 0, s);
      for (int m = 0; m < M; ++m) {
        for (int n = 0; n < N; ++n) out.acc.push_back(raw_pointer_cast(a.data() + a.layout()(m, n)));
      }
      if constexpr (M == 128) {
        auto t2r = make_tmem_copy(Op{}, a);
        for (int th = 0; th < 128; ++th) {
          auto thr = t2r.get_slice(th);
          Tensor src = thr.partition_S(a);
          std::set<uint32_t> reach;
          for (int i = 0; i < int(size(src)); ++i) reach.insert(raw_pointer_cast(src.data() + src.layout()(i)));
          out.reach.push_back(reach);
          Tensor dst = thr.partition_D(cD);
          std::vector<LdReg> regs;
          for (int i = 0; i < int(size(dst)); ++i) {
            auto xy = dst(i);
            int const m = int(get<0>(xy)), n = int(get<1>(xy));
            regs.push_back({m, n, raw_pointer_cast(a.data() + a.layout()(m, n))});
          }
          out.ld.push_back(regs);
        }
      }
    }
    return out;
  }();
  return t;
}

// -------------------------------------------------------------------------------------------------
// sm_90a: wgmma.
// -------------------------------------------------------------------------------------------------

/// wgmma for one tile: CuTe's atom (GMMA::ss_op_selector with every N shape enabled), the
/// descriptors of each (m64 half, MMA) of the weights and each MMA of the activations (relative to
/// the stage), and the accumulator fragment: (row, token) of register i of thread t in half h.
struct Sm90Table {
  int atom_n = 0, mma_k = 0, halves = 0, mmas = 0, regs = 0;
  std::vector<uint64_t> w;  ///< [j * halves + h]
  std::vector<uint64_t> a;  ///< [j]
  std::vector<std::pair<int, int>> frag;  ///< [(t * halves + h) * regs + i]
};

/// CuTe's GMMA partition of an M x N x BK tile (M = 128 or 64 rows: two or one m64 halves).
template <int EB, int M, int N, int BK>
Sm90Table const &sm90_table() {
  static Sm90Table const t = [] {
    using T = Elem<EB>;
    auto op = GMMA::ss_op_selector<T, T, float, Shape<_64, Int<N>, Int<BK>>, GMMA::Major::K, GMMA::Major::K>();
    auto tiled_mma = make_tiled_mma(op);
    using AtomShape = typename decltype(tiled_mma)::AtomShape_MNK;
    Sm90Table out;
    out.atom_n = int(size<1>(AtomShape{}));
    out.mma_k = int(size<2>(AtomShape{}));
    auto sW = tile_to_shape(GMMA::Layout_K_SW128_Atom<T>{}, make_shape(Int<M>{}, Int<BK>{}));
    auto sA = tile_to_shape(GMMA::Layout_K_SW128_Atom<T>{}, make_shape(Int<N>{}, Int<BK>{}));
    auto thr = tiled_mma.get_slice(0);
    Tensor tW = thr.make_fragment_A(thr.partition_A(make_tensor(make_smem_ptr(reinterpret_cast<T *>(0)), sW)));
    Tensor tA = thr.make_fragment_B(thr.partition_B(make_tensor(make_smem_ptr(reinterpret_cast<T *>(0)), sA)));
    out.halves = int(size<1>(tW));
    out.mmas = int(size<2>(tW));
    for (int j = 0; j < out.mmas; ++j) {
      for (int h = 0; h < out.halves; ++h) out.w.push_back(uint64_t(tW(0, h, j)));
      out.a.push_back(uint64_t(tA(0, 0, j)));
    }
    Tensor cC = make_identity_tensor(make_shape(Int<M>{}, Int<N>{}));
    for (int th = 0; th < 128; ++th) {
      Tensor c = tiled_mma.get_slice(th).partition_C(cC);
      out.regs = int(size<0>(c));
      for (int h = 0; h < int(size<1>(c)); ++h) {
        for (int i = 0; i < out.regs; ++i) {
          auto xy = c(i, h, 0);
          out.frag.push_back({int(get<0>(xy)), int(get<1>(xy))});
        }
      }
    }
    return out;
  }();
  return t;
}

}  // namespace oracle
