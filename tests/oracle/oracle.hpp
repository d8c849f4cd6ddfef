// tests/oracle/oracle.hpp — the layout oracle: a unit's generated layout header (<unit>_layout.h, the
// very functions its kernels call) compared, number by number, with what CUTLASS 4.2's CuTe derives
// for the same tile (cutlass_tables.hpp) and with the PTX ISA where CUTLASS has nothing to say (the
// order in which a TMA box is written; the descriptor field it declares unused).
//
// tests/oracle.rs generates one translation unit per batch of units that includes this file and the
// units' headers and calls `oracle::check_unit` on each. Output: `FAIL <unit> <check>: ...` for the
// first mismatches of each check, then `UNIT <unit> checks <n> failures <m>` per unit.
#pragma once

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>

#include "cutlass_tables.hpp"

namespace oracle {

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

/// Stands for the Sm100, Sm90 or Scales of a unit that has none.
struct None {};

/// SMEM byte addresses of stage bases the descriptors are checked at (1024-aligned, as planned).
inline std::vector<uint32_t> stage_bases() { return {0x0u, 0x400u, 0x8000u, 0x1c000u, 0x37c00u}; }

inline uint64_t field(uint64_t d, int lo, int width) { return (d >> lo) & ((uint64_t(1) << width) - 1); }

/// Compares 64-bit SMEM descriptors field by field; two fields may differ where the operand never
/// uses them. `lbo_unused`: the PTX ISA (tcgen05 "Leading dimension byte offset") says LBO is "not
/// used, assumed to be 1" for swizzled K-major layouts: CuTe writes 1, MPK's linear (and mpkc) 0.
/// `sbo_unused`: SBO strides from one 8-row core-matrix group to the next, and an operand of 8 rows
/// has one group (CuTe's canonical K-major form ((8,n),2):((8T,SBO),1) with n = 1 gives it stride 0).
/// There the other's value is accepted as well as CuTe's, and nothing else anywhere.
inline void check_desc(Report &r, char const *what, uint64_t m, uint64_t c, bool lbo_unused, bool sbo_unused, int h, int j,
                       uint32_t base) {
  uint64_t const lbo = uint64_t(0x3FFF) << 16, sbo = uint64_t(0x3FFF) << 32;
  bool const lbo_ok = field(m, 16, 14) == field(c, 16, 14) || (lbo_unused && field(m, 16, 14) == 0);
  bool const sbo_ok = field(m, 32, 14) == field(c, 32, 14) || (sbo_unused && field(c, 32, 14) == 0);
  bool const ok = (m & ~lbo & ~sbo) == (c & ~lbo & ~sbo) && lbo_ok && sbo_ok;
  r.check(ok, what, "half %d MMA %d at SMEM 0x%x: mpkc 0x%016llx, CuTe 0x%016llx", h, j, base, (unsigned long long)m,
          (unsigned long long)c);
}

/// Operand element offsets: CuTe's K-major SW128 layouts (the UMMA and, for sm_90a, the GMMA atom),
/// the tensor-map swizzle CuTe derives, and the TMA box's write order (PTX ISA, tensor copy: the box
/// {B0, B1, B2} lands densely, innermost first, then the 128-byte swizzle XORs byte-address bits
/// [4,7) with [7,10) from a 1024-aligned base: CuTe's Swizzle<3,4,3> on the byte offset).
template <int EB, int ROWS, int BK, class Off>
void check_tile(Report &r, char const *what, Off off, int const *box, int swizzle_bytes, bool gmma) {
  TileTable const &t = tile_table<EB, ROWS, BK>();
  for (int row = 0; row < ROWS; ++row) {
    for (int k = 0; k < BK; ++k) {
      uint32_t const m = off(uint32_t(row), uint32_t(k));
      uint32_t const c = t.umma[size_t(row * BK + k)];
      r.check(m == c, what, "element (%d, %d): mpkc %u, CuTe UMMA atom %u", row, k, m, c);
      if (gmma) {
        uint32_t const g = t.gmma[size_t(row * BK + k)];
        r.check(m == g, what, "element (%d, %d): mpkc %u, CuTe GMMA atom %u", row, k, m, g);
      }
    }
  }
  r.check(t.swizzle_128b && swizzle_bytes == 128, what, "tensor map swizzle %d B, CuTe derives 128 B: %d", swizzle_bytes,
          int(t.swizzle_128b));
  bool const box_ok = box[0] * EB == 128 && box[1] == ROWS && box[0] * box[2] == BK;
  r.check(box_ok, what, "box {%d, %d, %d} is not {128 B, %d rows, %d chunks}", box[0], box[1], box[2], ROWS, BK * EB / 128);
  if (!box_ok) return;
  cute::Swizzle<3, 4, 3> sw;
  for (int row = 0; row < ROWS; ++row) {
    for (int k = 0; k < BK; ++k) {
      int const dense = ((k / box[0] * box[1] + row) * box[0] + k % box[0]) * EB;
      uint32_t const tma = uint32_t(sw(dense));
      uint32_t const m = off(uint32_t(row), uint32_t(k));
      r.check(m == tma, what, "element (%d, %d): mpkc %u, TMA box write %u", row, k, m, tma);
    }
  }
}

/// The tcgen05.ld of a 64-row tile (layout F) against CuTe's accumulator layout: CuTe's 32-lane
/// load atoms do not partition it, so each consumer lane's row and addresses are checked against
/// where CuTe puts the rows.
template <class Tiles, class Sm100>
void check_sm100_ld_layout_f(Report &r, Sm100Table const &t, int s) {
  constexpr int M = Tiles::BLOCK_M, N = Tiles::BLOCK_N;
  // Layout F: CuTe's accumulator places a row on TMEM lane q for some q; the kernel's lane l
  // of warp w reads lane 32w + l (the lane-quarter rule). It must call that lane live exactly
  // when CuTe put a row there, name CuTe's row, and load CuTe's address for every column.
  std::map<uint32_t, int> row_at;  // TMEM lane -> tile row (column 0 of the slot)
  for (int m = 0; m < M; ++m) row_at[t.acc[size_t((s * M + m) * N)] >> 16] = m;
  for (int th = 0; th < 128; ++th) {
    int const warp = th / 32, lane = th % 32;
    uint32_t const tmem_lane = uint32_t(32 * warp + lane);
    bool const cute_live = row_at.count(tmem_lane) == 1;
    r.check(Sm100::ld_live(lane) == cute_live, "sm100 tcgen05.ld live lanes", "thread %d: mpkc %s, CuTe %s", th,
            Sm100::ld_live(lane) ? "live" : "dead", cute_live ? "holds a row" : "holds none");
    if (!cute_live || !Sm100::ld_live(lane)) continue;
    int const pm = Sm100::ld_row(warp, lane);
    r.check(pm == row_at[tmem_lane], "sm100 tcgen05.ld fragment", "thread %d: mpkc row %d, CuTe row %d", th, pm,
            row_at[tmem_lane]);
    for (int c = 0; c < N; c += Sm100::LD_COLS) {
      for (int j = 0; j < Sm100::LD_COLS; ++j) {
        int const pn = Sm100::ld_col(c, j);
        uint32_t const pa = Sm100::ld_tmem(s, warp, c) + (uint32_t(lane) << 16) + uint32_t(j);
        uint32_t const ca = t.acc[size_t((s * M + row_at[tmem_lane]) * N + pn)];
        r.check(pa == ca && (pa >> 16) / 32 == uint32_t(warp), "sm100 tcgen05.ld address",
                "slot %d thread %d column %d: mpkc 0x%08x, CuTe 0x%08x", s, th, pn, pa, ca);
      }
    }
  }
}

/// The tcgen05.ld of a 128-row tile against CuTe's tmem copy of the 32-lane load atom.
template <class Tiles, class Sm100>
void check_sm100_ld_atoms(Report &r, Sm100Table const &t, int s) {
  constexpr int N = Tiles::BLOCK_N;
  for (int th = 0; th < 128; ++th) {
    std::vector<LdReg> const &regs = t.ld[size_t(s * 128 + th)];
    std::set<uint32_t> const &reach = t.reach[size_t(s * 128 + th)];
    int const warp = th / 32, lane = th % 32;
    size_t reg = 0;
    for (int c = 0; c < N; c += Sm100::LD_COLS) {
      for (int j = 0; j < Sm100::LD_COLS; ++j, ++reg) {
        int const pm = Sm100::ld_row(warp, lane), pn = Sm100::ld_col(c, j);
        uint32_t const pa = Sm100::ld_tmem(s, warp, c) + (uint32_t(lane) << 16) + uint32_t(j);
        bool const have = reg < regs.size();
        r.check(have && pm == regs[reg].m && pn == regs[reg].n, "sm100 tcgen05.ld fragment",
                "slot %d thread %d register %d: mpkc (%d, %d), CuTe (%d, %d)", s, th, int(reg), pm, pn,
                have ? regs[reg].m : -1, have ? regs[reg].n : -1);
        r.check(have && pa == regs[reg].addr && reach.count(pa) == 1, "sm100 tcgen05.ld address",
                "slot %d thread %d register %d: mpkc 0x%08x, CuTe 0x%08x (%s the warp's lanes)", s, th, int(reg), pa,
                have ? regs[reg].addr : 0u, reach.count(pa) ? "in" : "outside");
      }
    }
    r.check(reg == regs.size(), "sm100 tcgen05.ld fragment", "thread %d: mpkc loads %d registers, CuTe %d", th, int(reg),
            int(regs.size()));
  }
}

template <class Tiles, class Sm100>
void check_sm100(Report &r) {
  constexpr int EB = Tiles::ELEM_BYTES, M = Tiles::BLOCK_M, N = Tiles::BLOCK_N, BK = Tiles::BLOCK_K;
  Sm100Table const &t = sm100_table<EB, N, BK, Sm100::ACC_SLOTS, Sm100::LD_COLS, M>();
  r.check(t.mma_k == Tiles::MMA_K && t.mmas == Tiles::MMAS_PER_STAGE, "sm100 MMA shape",
          "mpkc K %d x %d MMAs per stage, CuTe K %d x %d", Tiles::MMA_K, Tiles::MMAS_PER_STAGE, t.mma_k, t.mmas);
  for (uint32_t base : stage_bases()) {
    uint64_t const stage = Sm100::desc_at(Sm100::SMEM_DESC, base);
    for (int j = 0; j < t.mmas; ++j) {
      check_desc(r, "sm100 W descriptor", Sm100::w_mma(stage, j), t.w[size_t(j)] + (base >> 4), true, false, 0, j, base);
      check_desc(r, "sm100 A descriptor", Sm100::a_mma(stage, j), t.a[size_t(j)] + (base >> 4), true, N == 8, 0, j, base);
    }
  }
  for (int j = 0; j < t.mmas; ++j) {
    r.check(Sm100::idesc(j) == t.idesc[size_t(j)], "sm100 instruction descriptor", "MMA %d: mpkc 0x%08x, CuTe 0x%08x", j,
            Sm100::idesc(j), t.idesc[size_t(j)]);
  }
  for (int s = 0; s < Sm100::ACC_SLOTS; ++s) {
    for (int m = 0; m < M; ++m) {
      for (int n = 0; n < N; ++n) {
        uint32_t const c = t.acc[size_t((s * M + m) * N + n)];
        uint32_t const p = Sm100::acc_tmem(s, uint32_t(m), uint32_t(n));
        r.check(p == c, "sm100 accumulator TMEM", "slot %d (%d, %d): mpkc 0x%08x, CuTe 0x%08x", s, m, n, p, c);
      }
    }
    if constexpr (M == 64) {
      check_sm100_ld_layout_f<Tiles, Sm100>(r, t, s);
    } else {
      check_sm100_ld_atoms<Tiles, Sm100>(r, t, s);
    }
  }
}

/// Block-scaled fp8: the scale-factor bytes in SMEM, the loader's staging function run on the host,
/// UE8M0 exactness, the tcgen05.cp copies, the MMAs' scale operands and what each reads in TMEM.
template <class Tiles, class Sm100, class Scales>
void check_scales(Report &r) {
  constexpr int N = Tiles::BLOCK_N;
  ScaleTable const &t = scale_table<N, Tiles::BLOCK_K>();
  int const S = t.sub_blocks;
  r.check(Scales::SUB_BLOCKS == S && S == Tiles::MMAS_PER_STAGE, "scale sub-blocks", "mpkc %d, CuTe %d, MMAs %d",
          Scales::SUB_BLOCKS, S, Tiles::MMAS_PER_STAGE);
  r.check(Scales::B_BLOCKS * 128 == t.rows_b, "scale B blocks", "mpkc %d x 128 rows, CuTe %d", Scales::B_BLOCKS, t.rows_b);
  if (Scales::SUB_BLOCKS != S) return;
  for (int s = 0; s < S; ++s) {
    for (int m = 0; m < 128; ++m) {
      int const c = t.sfa[size_t(m * S + s)];
      uint32_t const p = Scales::a_byte(uint32_t(m), uint32_t(s));
      r.check(int(p) == c, "scale SMEM A", "row %d sub-block %d: mpkc %u, CuTe %d", m, s, p, c);
    }
    for (int n = 0; n < t.rows_b; ++n) {
      int const c = int(Scales::B_OFFSET) + t.sfb[size_t(n * S + s)];
      uint32_t const p = Scales::b_byte(uint32_t(n), uint32_t(s));
      r.check(int(p) == c, "scale SMEM B", "token %d sub-block %d: mpkc %u, CuTe %d", n, s, p, c);
    }
  }
  // The staging function itself, on the host: distinct powers of two per token and tile, every byte
  // where CUTLASS's layout puts it (tokens past M_REAL or BLOCK_N: 1.0 = UE8M0 127), nothing past.
  auto ue = [](float x) { return int(std::ilogb(x)) + 127; };
  for (int tile : {0, 1}) {
    for (int kb : {0, Scales::K_BLOCKS - 1}) {
      std::vector<float> w(size_t((tile + 1) * Scales::W_K_BLOCKS + Scales::K_BLOCKS)), a(size_t(Scales::TOKENS * Scales::K_BLOCKS));
      for (size_t i = 0; i < w.size(); ++i) w[i] = std::ldexp(1.f, int(i % 40) - 20);
      for (size_t i = 0; i < a.size(); ++i) a[i] = std::ldexp(1.f, int((i * 7) % 60) - 30);
      alignas(16) static uint8_t block[4096];
      std::memset(block, 0xA5, sizeof block);
      Scales::stage(block, w.data(), a.data(), tile, kb);
      for (int s = 0; s < S; ++s) {
        for (int m = 0; m < 128; ++m) {
          int const at = t.sfa[size_t(m * S + s)];
          int const want = ue(w[size_t(tile * Scales::W_K_BLOCKS + kb)]);
          r.check(block[at] == want, "scale staging A", "tile %d K block %d row %d sub-block %d: byte %d holds %d, want %d", tile,
                  kb, m, s, at, int(block[at]), want);
        }
        for (int n = 0; n < t.rows_b; ++n) {
          int const at = int(Scales::B_OFFSET) + t.sfb[size_t(n * S + s)];
          int const want = n < Scales::TOKENS ? ue(a[size_t(n * Scales::K_BLOCKS + kb)]) : 127;
          r.check(block[at] == want, "scale staging B", "tile %d K block %d token %d sub-block %d: byte %d holds %d, want %d",
                  tile, kb, n, s, at, int(block[at]), want);
        }
      }
      for (uint32_t i = Scales::BYTES; i < sizeof block; ++i) {
        r.check(block[i] == 0xA5, "scale staging bounds", "byte %u past the %u-byte block was written", i, Scales::BYTES);
      }
      // The sm_90a staging (write<false>, no tcgen05.cp): the words its consumer threads read with
      // ld.shared, a_byte(0, s) and b_byte(n, s) for every token column n < BLOCK_N, hold what the
      // full staging puts there; no other byte is written.
      alignas(16) static uint8_t part[4096];
      std::memset(part, 0xA5, sizeof part);
      Scales::template write<false>(part, Scales::fetch(w.data(), a.data(), tile, kb), tile, kb);
      std::vector<bool> read(sizeof part, false);
      for (int s = 0; s < S; ++s) {
        uint32_t const at = Scales::a_byte(0, uint32_t(s));
        read[at] = true;
        r.check(part[at] == block[at], "sm_90a scale staging A", "tile %d K block %d sub-block %d: byte %u holds %d, want %d",
                tile, kb, s, at, int(part[at]), int(block[at]));
        for (int n = 0; n < N; ++n) {
          uint32_t const bt = Scales::b_byte(uint32_t(n), uint32_t(s));
          read[bt] = true;
          r.check(part[bt] == block[bt], "sm_90a scale staging B", "tile %d K block %d token %d sub-block %d: byte %u holds %d, want %d",
                  tile, kb, n, s, bt, int(part[bt]), int(block[bt]));
        }
      }
      for (uint32_t i = 0; i < sizeof part; ++i) {
        if (!read[i]) r.check(part[i] == 0xA5, "sm_90a scale staging bounds", "byte %u, which no consumer reads, was written", i);
      }
    }
  }
  // UE8M0 holds 2^e for -127 <= e <= 127; mpkc accepts the normal f32 powers of two among them.
  for (float x : {1.f, 0.5f, 2.f, std::ldexp(1.f, -126), std::ldexp(1.f, 127), 3.f, 0.75f, -1.f, 0.f, -0.f,
                  std::ldexp(1.f, -127), float(INFINITY), float(NAN), 1.0000001f}) {
    int e = 0;
    float const mant = std::frexp(x, &e);
    bool const want = std::isfinite(x) && mant == 0.5f && e - 1 >= -126 && e - 1 <= 127;
    r.check(Scales::exact_in_ue8m0(x) == want, "UE8M0 exactness", "%a: mpkc %d, want %d", double(x),
            int(Scales::exact_in_ue8m0(x)), int(want));
    if (want) {
      r.check(int(Scales::ue8m0(x)) == e - 1 + 127, "UE8M0 byte", "%a: mpkc %u, want %d", double(x), Scales::ue8m0(x),
              e - 1 + 127);
    }
  }
  // tcgen05.cp: the copies CUTLASS issues (descriptor, destination relative to the fragment).
  r.check(t.copies_a.size() == 1 && int(t.copies_b.size()) == Scales::B_BLOCKS, "tcgen05.cp count",
          "CuTe copies A with %d and B with %d instructions, mpkc 1 and %d", int(t.copies_a.size()), int(t.copies_b.size()),
          Scales::B_BLOCKS);
  for (int stage : {0, 1, 3}) {
    uint32_t const base = 0x2400u + uint32_t(stage) * 0x800u;  // the stage's SF block in SMEM
    for (size_t i = 0; i < t.copies_a.size() && i < 1; ++i) {
      uint64_t const c = t.copies_a[i].first + (base >> 4), m = Sm100::sf_desc(base);
      r.check(m == c, "tcgen05.cp A descriptor", "stage %d: mpkc 0x%016llx, CuTe 0x%016llx", stage, (unsigned long long)m,
              (unsigned long long)c);
      r.check(t.copies_a[i].second == 0u, "tcgen05.cp A destination", "CuTe writes the A block at +0x%08x, mpkc +0",
              t.copies_a[i].second);
    }
    uint32_t const bb = base + Scales::B_OFFSET;
    for (size_t i = 0; i < t.copies_b.size() && int(i) < Scales::B_BLOCKS; ++i) {
      uint64_t const c = t.copies_b[i].first + (bb >> 4);
      uint64_t const m = Sm100::sf_desc(bb + uint32_t(i) * Scales::BLOCK_BYTES);
      r.check(m == c, "tcgen05.cp B descriptor", "stage %d block %d: mpkc 0x%016llx, CuTe 0x%016llx", stage, int(i),
              (unsigned long long)m, (unsigned long long)c);
      uint32_t const md = Sm100::sfb_tmem(stage, int(i)) - Sm100::sfb_tmem(stage, 0);
      r.check(md == t.copies_b[i].second, "tcgen05.cp B destination", "stage %d block %d: mpkc +0x%08x, CuTe +0x%08x", stage,
              int(i), md, t.copies_b[i].second);
    }
  }
  // Each MMA's scale operands, and what it reads for every row in every lane quarter: the byte mpkc
  // staged that row's scale at, through its block's copy (relative to the operand's column).
  for (int stage : {0, 2}) {
    uint32_t const ca = Sm100::sfa_tmem(stage), cb = Sm100::sfb_tmem(stage, 0);
    for (int j = 0; j < S; ++j) {
      uint32_t const pa = Sm100::sf_operand(ca, j) - ca, pb = Sm100::sf_operand(cb, j) - cb;
      r.check(pa == t.op_a[size_t(j)], "scale operand A", "stage %d MMA %d: mpkc +0x%08x, CuTe +0x%08x", stage, j, pa,
              t.op_a[size_t(j)]);
      r.check(pb == t.op_b[size_t(j)], "scale operand B", "stage %d MMA %d: mpkc +0x%08x, CuTe +0x%08x", stage, j, pb,
              t.op_b[size_t(j)]);
    }
    for (auto const &[j, row, rep, at] : t.reads_a) {
      std::set<TmemByte> img = utccp_image(Scales::a_byte(uint32_t(row), uint32_t(j)));
      r.check(img.count(at) == 1, "scale TMEM A", "stage %d MMA %d row %d quarter %d reads lane %d column %d byte %d, not "
              "where mpkc's copy put the row's scale", stage, j, row, rep, std::get<0>(at), std::get<1>(at), std::get<2>(at));
    }
    for (auto const &[j, row, rep, at] : t.reads_b) {
      if (row >= N) continue;  // the MMA reads the tile's N rows
      uint32_t const off = Scales::b_byte(uint32_t(row), uint32_t(j)) - Scales::B_OFFSET;
      int const blk = int(off / Scales::BLOCK_BYTES);
      int const shift = int(Sm100::sfb_tmem(stage, blk) - cb);
      std::set<TmemByte> img;
      for (auto const &[l, c, b] : utccp_image(off % Scales::BLOCK_BYTES)) img.insert(TmemByte{l, c + shift, b});
      r.check(img.count(at) == 1, "scale TMEM B", "stage %d MMA %d token %d quarter %d reads lane %d column %d byte %d, not "
              "where mpkc's copy put the token's scale", stage, j, row, rep, std::get<0>(at), std::get<1>(at), std::get<2>(at));
    }
  }
  // TMEM columns: accumulator slots first, then per stage 4 (A) and 4 per B block, no overlap.
  uint32_t const acc_end = uint32_t(Sm100::ACC_SLOTS * N);
  r.check(Sm100::sfa_tmem(0) >= acc_end && Sm100::sfb_tmem(0, 0) >= Sm100::sfa_tmem(0) + 4 &&
              Sm100::sfa_tmem(1) >= Sm100::sfb_tmem(0, Scales::B_BLOCKS - 1) + 4,
          "scale TMEM columns", "A at %u, B at %u, the next stage at %u overlap (accumulators end at %u)", Sm100::sfa_tmem(0),
          Sm100::sfb_tmem(0, 0), Sm100::sfa_tmem(1), acc_end);
}

/// A short tile (BLOCK_M a multiple of 8 below 64, sm_90a alone): wgmma j reads a 64-row operand
/// from the base of its K chunk (chunk c of the stage at c * BLOCK_M * 128 bytes, as the W box
/// writes it), so each of its descriptors must be CuTe's for a 64-row, one-chunk (128-byte row)
/// K-major SW128 tile at that base, and the fragment CuTe's m64 partition (rows past BLOCK_M are
/// the kernel's to discard).
template <class Tiles, class Sm90>
void check_sm90_short(Report &r) {
  constexpr int EB = Tiles::ELEM_BYTES, M = Tiles::BLOCK_M, N = Tiles::BLOCK_N, CHUNK = Tiles::ROW_ELEMS;
  Sm90Table const &t = sm90_table<EB, 64, N, CHUNK>();
  constexpr int per_chunk = CHUNK / Tiles::MMA_K;
  r.check(t.atom_n == N && t.mma_k == Tiles::MMA_K && t.halves == 1 && t.mmas == per_chunk &&
              Tiles::MMAS_PER_STAGE == per_chunk * Tiles::K_CHUNKS,
          "sm90 MMA shape", "CuTe m64n%dk%d, %d halves x %d MMAs per chunk; mpkc m64n%dk%d, %d MMAs over %d chunks", t.atom_n,
          t.mma_k, t.halves, t.mmas, N, Tiles::MMA_K, Tiles::MMAS_PER_STAGE, Tiles::K_CHUNKS);
  if (t.halves != 1 || t.mmas != per_chunk) return;
  for (uint32_t base : stage_bases()) {
    uint64_t const stage = Sm90::desc_at(base);
    for (int j = 0; j < Tiles::MMAS_PER_STAGE; ++j) {
      uint32_t const chunk = uint32_t(j / per_chunk) * uint32_t(M) * 128u;
      check_desc(r, "sm90 W descriptor (short tile)", Sm90::w_mma(stage, 0, j), t.w[size_t(j % per_chunk)] + ((base + chunk) >> 4),
                 false, false, 0, j, base);
    }
  }
  r.check(Sm90::ACC_REGS == t.regs, "sm90 accumulator registers", "mpkc %d per half, CuTe %d", Sm90::ACC_REGS, t.regs);
  if (Sm90::ACC_REGS != t.regs) return;
  for (int th = 0; th < 128; ++th) {
    for (int i = 0; i < t.regs; ++i) {
      auto const &[cm, cn] = t.frag[size_t(th * t.regs + i)];
      int const pm = Sm90::acc_row(0, th / 32, th % 32, i), pn = Sm90::acc_col(th % 32, i);
      r.check(pm == cm && pn == cn, "sm90 accumulator fragment", "thread %d register %d: mpkc (%d, %d), CuTe (%d, %d)", th, i, pm,
              pn, cm, cn);
    }
  }
}

template <class Tiles, class Sm90>
void check_sm90(Report &r) {
  constexpr int EB = Tiles::ELEM_BYTES, M = Tiles::BLOCK_M, N = Tiles::BLOCK_N, BK = Tiles::BLOCK_K;
  if constexpr (M < 64) {
    check_sm90_short<Tiles, Sm90>(r);
    return;
  }
  constexpr int H = M / 64;  // the kernel's m64 halves (HALVES)
  Sm90Table const &t = sm90_table<EB, M, N, BK>();
  r.check(t.atom_n == N && t.mma_k == Tiles::MMA_K && t.halves == H && t.mmas == Tiles::MMAS_PER_STAGE, "sm90 MMA shape",
          "CuTe m64n%dk%d, %d halves x %d MMAs; mpkc m64n%dk%d, %d x %d", t.atom_n, t.mma_k, t.halves, t.mmas, N,
          Tiles::MMA_K, H, Tiles::MMAS_PER_STAGE);
  if (t.halves != H || t.mmas != Tiles::MMAS_PER_STAGE) return;
  for (uint32_t base : stage_bases()) {
    uint64_t const stage = Sm90::desc_at(base);
    for (int j = 0; j < t.mmas; ++j) {
      for (int h = 0; h < H; ++h) {
        check_desc(r, "sm90 W descriptor", Sm90::w_mma(stage, h, j), t.w[size_t(j * H + h)] + (base >> 4), false, false, h, j,
                   base);
      }
      check_desc(r, "sm90 A descriptor", Sm90::a_mma(stage, j), t.a[size_t(j)] + (base >> 4), false, N == 8, 0, j, base);
    }
  }
  r.check(Sm90::ACC_REGS == t.regs, "sm90 accumulator registers", "mpkc %d per half, CuTe %d", Sm90::ACC_REGS, t.regs);
  if (Sm90::ACC_REGS != t.regs) return;
  for (int th = 0; th < 128; ++th) {
    for (int h = 0; h < H; ++h) {
      for (int i = 0; i < t.regs; ++i) {
        auto const &[cm, cn] = t.frag[size_t((th * H + h) * t.regs + i)];
        int const pm = Sm90::acc_row(h, th / 32, th % 32, i), pn = Sm90::acc_col(th % 32, i);
        r.check(pm == cm && pn == cn, "sm90 accumulator fragment", "thread %d half %d register %d: mpkc (%d, %d), CuTe (%d, %d)",
                th, h, i, pm, pn, cm, cn);
      }
    }
  }
}

/// Every check of one unit.
template <class Tiles, class Sm100, class Sm90, class Scales>
void check_unit(char const *unit) {
  Report r;
  r.unit = unit;
  constexpr int EB = Tiles::ELEM_BYTES, N = Tiles::BLOCK_N, BK = Tiles::BLOCK_K;
  constexpr bool sm90 = !std::is_same_v<Sm90, None>;
  check_tile<EB, Tiles::BLOCK_M, BK>(r, "W tile", [](uint32_t row, uint32_t k) { return Tiles::w_offset(row, k); },
                                     Tiles::W_BOX, Tiles::SWIZZLE_BYTES, sm90);
  check_tile<EB, N, BK>(r, "A tile", [](uint32_t n, uint32_t k) { return Tiles::a_offset(n, k); }, Tiles::A_BOX,
                        Tiles::SWIZZLE_BYTES, sm90);
  // An sm_90a-only unit (e.g. a 64-row tile) has no Sm100.
  if constexpr (!std::is_same_v<Sm100, None>) check_sm100<Tiles, Sm100>(r);
  if constexpr (std::is_same_v<Scales, None>) {
    static_assert(EB == 2, "block-scaled fp8 has Scales");
  } else {
    check_scales<Tiles, Sm100, Scales>(r);
  }
  if constexpr (sm90) check_sm90<Tiles, Sm90>(r);
  r.done();
}

}  // namespace oracle
