// gemv_fp8: y[t, n] = sum_k (x[t, k] * x_scale[t, k / 128]) * (W[n, k] * W_scale[n / 128, k / 128])
// for this task's rows of W, x and W e4m3, fp32 accumulation, bf16 out. The bf16 GEMV's
// layout (stdlib/bodies/gemv.cu) over bytes: warp w is row warp w / kKGroups and K group
// w % kKGroups; each lane copies 16-byte vectors (16 e4m3) of its rows at lane * 16 + 512 * c,
// a warp instruction 512 contiguous bytes, in groups of kGroup vectors (a part of one row or
// whole rows) into a ring of kRing group slots in `w_ring` (cp.async, one commit group per
// group; a thread reads back only its own 16 bytes of each slot, so cp.async.wait_group alone
// orders the ring). `x` is staged in `x_rows` as f16 times 2^-kXShift, its 1x128 scales beside
// it in f32 (coherent loads: an earlier task of the launch wrote them; lane-interleaved per 512
// columns, x_store); the weight scales of the 128-row blocks this task's rows touch are staged in
// `w_scales`. A vector lies in one 128-column block: its 16 products are formed and summed in
// f16x2 (HFMA2, two chains of four pairs), the sum widened to f32 and multiplied by the block's
// two scales into the token's f32 accumulator.
// Why f16 is exact enough: e4m3 and e4m3 x 2^-6 are f16 values, so each product w x is exact
// (4 x 4 significant bits) unless below f16's 2^-24 (a product under 2^-18 of an unscaled one);
// |w x| <= 448 * 448 * 2^-6 = 3136 and a vector's eight products per half <= 25088, below f16's
// 65504: no overflow whatever the data (DeepSeek-V3's blocks reach 448). The f16 sums round once
// per addition, 8 additions of at most 2^-11 relative each, before the f32 accumulation.
// kRows x kK f16 (x times 2^-kXShift), then kRows x kKBlocks f32 scales.
char *const s_xh = reinterpret_cast<char *>(buf.x_rows);
float *const s_xs = reinterpret_cast<float *>(s_xh + 2 * kRows * kK);
constexpr int kXShift = 6;
float *const s_ws = reinterpret_cast<float *>(buf.w_scales);
float *const s_part = reinterpret_cast<float *>(buf.partials);
char *const s_ring = reinterpret_cast<char *>(buf.w_ring);
int const tid = static_cast<int>(threadIdx.x);
int const warp = tid >> 5;
int const lane = tid & 31;
int const row_warp = warp / kKGroups;
int const kgroup = warp % kKGroups;
int const row0 = task_offset * kRowsPerTask;
int const k0 = kgroup * (kK / kKGroups) + lane * 16;
static_assert(kRing >= 2 && kRows <= 8, "a ring of two groups at least; 8 tokens at most");
static_assert(kChunks % kGroup == 0 || kGroup % kChunks == 0, "a group lies in one row or is whole rows");
static_assert(kK % (512 * kKGroups) == 0 && kKBlocks * 128 == kK, "each K group whole warp loads; K whole 128-column blocks");
constexpr bool kWholeRows = kGroup % kChunks == 0;
constexpr int kRowsPerGroup = kWholeRows ? kGroup / kChunks : 1;

int const task_rows = kN - row0 < kRowsPerTask ? kN - row0 : kRowsPerTask;
int const my_rows = task_rows > row_warp ? (task_rows - row_warp + kRowWarps - 1) / kRowWarps : 0;
int const vectors = my_rows * kChunks;
int const groups = (vectors + kGroup - 1) / kGroup;
// The weight scales' first row block for this task; it stages kScaleRowBlocks of them (fewer
// past the last block of W).
int const rb0 = row0 / 128;
int const rb_count = min(kScaleRowBlocks, (kN + 127) / 128 - rb0);

uint64_t const policy = mpkc::l2_evict_first_policy();

struct Cursor {
  int row;
  int cb;
  __device__ void next() {
    cb += kGroup;
    if (cb >= kChunks) {
      cb = 0;
      row += kRowsPerGroup;
    }
  }
};
constexpr int kRowStride = kRowWarps * kK;  // bytes between a warp's consecutive rows
uint8_t const *const w_warp =
    reinterpret_cast<uint8_t const *>(W) + (static_cast<int64_t>(row0 + row_warp) * kK + k0);
auto slot_base = [&](int slot) { return s_ring + (slot * kGroup * kConsumerThreads + tid) * 16; };
auto drow = [](int j) { return kWholeRows ? j / kChunks : 0; };
auto dchunk = [](int j) { return kWholeRows ? j % kChunks : j; };

auto issue = [&](Cursor const &c, int slot) {
  uint8_t const *const p = w_warp + (static_cast<int64_t>(c.row) * kRowStride + c.cb * 512);
  char *const d = slot_base(slot);
  #pragma unroll
  for (int j = 0; j < kGroup; ++j) {
    int const dr = drow(j);
    int const dc = dchunk(j);
    if (c.row + dr < my_rows) {
      mpkc::cp_async_weight16(d + j * kConsumerThreads * 16, p + (static_cast<int64_t>(dr) * kRowStride + dc * 512), policy);
    }
  }
  mpkc::cp_async_commit();
};

// One f32 accumulator per token (a vector's products are summed in f16 first).
float acc[kRows];
#pragma unroll
for (int t = 0; t < kRows; ++t) acc[t] = 0.f;

auto compute = [&](Cursor const &c, int slot) {
  char const *const d = slot_base(slot);
  #pragma unroll
  for (int j = 0; j < kGroup; ++j) {
    int const dr = drow(j);
    int const dc = dchunk(j);
    if (kWholeRows && c.row + dr >= my_rows) break;
    int const local = row_warp + (c.row + dr) * kRowWarps;
    int const k = k0 + (c.cb + dc) * 512;
    float const ws = s_ws[((row0 + local) / 128 - rb0) * kKBlocks + k / 128];
    uint4 const wv = *reinterpret_cast<uint4 const *>(d + j * kConsumerThreads * 16);
    // w[2i] = columns k + 4i, k + 4i + 1; w[2i + 1] = k + 4i + 2, k + 4i + 3.
    __half2 w[8];
    mpkc::e4m3x4_to_f16x2(wv.x, w[0], w[1]);
    mpkc::e4m3x4_to_f16x2(wv.y, w[2], w[3]);
    mpkc::e4m3x4_to_f16x2(wv.z, w[4], w[5]);
    mpkc::e4m3x4_to_f16x2(wv.w, w[6], w[7]);
    #pragma unroll
    for (int t = 0; t < kRows; ++t) {
      // This lane's 16 values of the 512-column run that starts at k - lane * 16 (see x_store):
      // columns k .. k + 7, then k + 8 .. k + 15, 512 bytes apart.
      uint4 const *const xs = reinterpret_cast<uint4 const *>(s_xh + 2 * (t * kK + (k - lane * 16))) + lane;
      uint4 const x0 = xs[0];
      uint4 const x1 = xs[32];
      __half2 a = __hmul2(w[0], mpkc::bits_to_half2(x0.x));
      __half2 b = __hmul2(w[4], mpkc::bits_to_half2(x1.x));
      a = __hfma2(w[1], mpkc::bits_to_half2(x0.y), a);
      b = __hfma2(w[5], mpkc::bits_to_half2(x1.y), b);
      a = __hfma2(w[2], mpkc::bits_to_half2(x0.z), a);
      b = __hfma2(w[6], mpkc::bits_to_half2(x1.z), b);
      a = __hfma2(w[3], mpkc::bits_to_half2(x0.w), a);
      b = __hfma2(w[7], mpkc::bits_to_half2(x1.w), b);
      float2 const f = __half22float2(__hadd2(a, b));
      acc[t] = fmaf(f.x + f.y, ws * s_xs[t * kKBlocks + k / 128], acc[t]);
    }
    if (kWholeRows ? dc == kChunks - 1 : (j == kGroup - 1 && c.cb + kGroup == kChunks)) {
      // The row's K part is complete: reduce over the lanes, undo x's 2^-kXShift, store (or
      // keep the K group's part).
      #pragma unroll
      for (int t = 0; t < kRows; ++t) {
        float const v = mpkc::warp_sum(acc[t]) * static_cast<float>(1 << kXShift);
        acc[t] = 0.f;
        if (lane == 0) {
          if constexpr (kKGroups == 1) {
            y[static_cast<int64_t>(t) * kN + row0 + local] = __float2bfloat16_rn(v);
          } else {
            s_part[(kgroup * kRowsPerTask + local) * kRows + t] = v;
          }
        }
      }
    }
  }
};

// x (e4m3, 16 per vector) into x_rows as f16 times 2^-kXShift (exact), 4 vectors per thread at a
// time: the first batch's loads go out before the weights' first groups, the rest after. Within
// each run of 512 columns (one warp load of a row), lane l's columns 16 l .. 16 l + 7 are the
// run's uint4 l and 16 l + 8 .. 16 l + 15 its uint4 32 + l: a warp's reads of its lanes' first
// (second) halves, and this staging's writes, are 512 contiguous bytes, free of bank conflicts.
// The 1x128 scales go to s_xs as they are.
constexpr int kXVecs = (kRows * kK / 16 + kConsumerThreads - 1) / kConsumerThreads;
uint4 xv[4];
auto x_load = [&](int g0) {
  #pragma unroll
  for (int j = 0; j < 4; ++j) {
    int const i = (tid + (g0 + j) * kConsumerThreads) * 16;
    if (i < kRows * kK) {
      xv[j] = __ldcg(reinterpret_cast<uint4 const *>(reinterpret_cast<uint8_t const *>(x) + i));
    }
  }
};
auto x_store = [&](int g0) {
  __half2 const shift = __float2half2_rn(1.f / static_cast<float>(1 << kXShift));
  #pragma unroll
  for (int j = 0; j < 4; ++j) {
    int const i = (tid + (g0 + j) * kConsumerThreads) * 16;
    if (i < kRows * kK) {
      uint32_t const v32[4] = {xv[j].x, xv[j].y, xv[j].z, xv[j].w};
      uint32_t h[8];
      #pragma unroll
      for (int q = 0; q < 4; ++q) {
        __half2 lo, hi;
        mpkc::e4m3x4_to_f16x2(v32[q], lo, hi);
        h[2 * q] = mpkc::half2_to_bits(__hmul2(lo, shift));
        h[2 * q + 1] = mpkc::half2_to_bits(__hmul2(hi, shift));
      }
      int const l = (i % 512) / 16;  // the lane of the run that reads these 16 columns
      uint4 *const d = reinterpret_cast<uint4 *>(s_xh + 2 * (i - l * 16)) + l;
      d[0] = make_uint4(h[0], h[1], h[2], h[3]);
      d[32] = make_uint4(h[4], h[5], h[6], h[7]);
    }
  }
};
x_load(0);

Cursor ci{0, 0};  // the next group to copy
#pragma unroll 1
for (int g = 0; g < kRing - 1; ++g) {
  issue(ci, g);
  ci.next();
}

// The weight scales of this task's row blocks (a weight: the read-only path).
for (int i = tid; i < rb_count * kKBlocks; i += kConsumerThreads) {
  s_ws[i] = __ldg(W_scale + rb0 * kKBlocks + i);
}
for (int i = tid; i < kRows * kKBlocks; i += kConsumerThreads) {
  s_xs[i] = __ldcg(x_scale + i);
}
x_store(0);
#pragma unroll 1
for (int g0 = 4; g0 < kXVecs; g0 += 4) {
  x_load(g0);
  x_store(g0);
}
mpkc::named_barrier_sync(kSyncBarrier, kConsumerThreads);
Cursor cc{0, 0};  // the group to compute
int slot = 0;     // its slot, g % kRing
#pragma unroll 1
for (int g = 0; g < groups; ++g) {
  mpkc::cp_async_wait<kRing - 2>();
  compute(cc, slot);
  cc.next();
  issue(ci, slot == 0 ? kRing - 1 : slot - 1);
  ci.next();
  slot = slot + 1 == kRing ? 0 : slot + 1;
}
mpkc::cp_async_wait<0>();

if constexpr (kKGroups > 1) {
  // The K groups' partials of every row: sum them in group order (the same order every run).
  mpkc::named_barrier_sync(kSyncBarrier, kConsumerThreads);
  for (int i = tid; i < task_rows * kRows; i += kConsumerThreads) {
    int const local = i / kRows;
    int const t = i % kRows;
    float v = 0.f;
    #pragma unroll
    for (int g = 0; g < kKGroups; ++g) v += s_part[(g * kRowsPerTask + local) * kRows + t];
    y[static_cast<int64_t>(t) * kN + row0 + local] = __float2bfloat16_rn(v);
  }
}
