// gemv: y[t, n] = sum_k x[t, k] * W[n, k] for this task's rows of W, fp32 accumulation, bf16 out.
// Warp w is row warp w / kKGroups (the task's rows w / kKGroups, + kRowWarps, ...) and K group
// w % kKGroups (columns kgroup * kK / kKGroups, + kK / kKGroups). Each lane loads 16-byte
// vectors of its rows at lane * 8 + 256 * c: a warp instruction reads 512 contiguous bytes.
// A warp's rows are one stream of vectors per lane (kChunks per row, row after row) in groups of
// kGroup (a group lies in one row, or is whole rows), copied asynchronously (cp.async, one commit
// group each) into a ring of kRing group slots in `w_ring`: while group g computes, groups g + 1
// .. g + kRing - 2 are in flight, and then group g + kRing - 1 goes into the slot group g - 1
// was read from. Each thread reads back only the vectors it copied (its own 16 bytes of each
// slot), so no barrier orders the ring: cp.async.wait_group does. `W` is a weight (read once per
// step: L2 evict-first); `x` is written by an earlier task of the launch: it is staged with
// coherent loads (ld.global.cg), its first batch issued before the first groups' copies (not
// queued behind them). It stays bf16: in f32 (H200, 2026-12-04) its shared-memory reads doubled
// and every shape slowed (q_a M = 1 7.74 -> 8.35 us, M = 4 11.0 -> 18.3).
__nv_bfloat16 *const s_x = reinterpret_cast<__nv_bfloat16 *>(buf.x_rows);
float *const s_part = reinterpret_cast<float *>(buf.partials);
char *const s_ring = reinterpret_cast<char *>(buf.w_ring);
int const tid = static_cast<int>(threadIdx.x);
int const warp = tid >> 5;
int const lane = tid & 31;
int const row_warp = warp / kKGroups;
int const kgroup = warp % kKGroups;
int const row0 = task_offset * kRowsPerTask;
int const k0 = kgroup * (kK / kKGroups) + lane * 8;
static_assert(kRing >= 2 && kRows <= 32, "a ring of two groups at least; 32 accumulators per lane");
static_assert(kChunks % kGroup == 0 || kGroup % kChunks == 0, "a group lies in one row or is whole rows");
// A group of whole rows (kGroup a multiple of kChunks), else a part of one row.
constexpr bool kWholeRows = kGroup % kChunks == 0;
constexpr int kRowsPerGroup = kWholeRows ? kGroup / kChunks : 1;

// This warp's rows of the task: row_warp, row_warp + kRowWarps, ... below the task's last.
int const task_rows = kN - row0 < kRowsPerTask ? kN - row0 : kRowsPerTask;
int const my_rows = task_rows > row_warp ? (task_rows - row_warp + kRowWarps - 1) / kRowWarps : 0;
int const vectors = my_rows * kChunks;
int const groups = (vectors + kGroup - 1) / kGroup;

uint64_t const policy = mpkc::l2_evict_first_policy();

// A group's place in the stream: the warp's row (0, 1, ... of its own) of its first vector and
// the chunk it starts at (0 for whole rows); vector j is at row + j / kChunks, chunk cb + j % kChunks
// for whole rows, else at row, chunk cb + j.
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
constexpr int kRowStride = kRowWarps * kK;  // elements between a warp's consecutive rows
__nv_bfloat16 const *const w_warp = W + (static_cast<int64_t>(row0 + row_warp) * kK + k0);
// This thread's 16 bytes of the slot's vector j: s_ring + slot_base(slot) + j * 2048.
auto slot_base = [&](int slot) { return s_ring + (slot * kGroup * kConsumerThreads + tid) * 16; };
// Vector j of a group: rows after the group's first (whole rows only) and its chunk offset.
auto drow = [](int j) { return kWholeRows ? j / kChunks : 0; };
auto dchunk = [](int j) { return kWholeRows ? j % kChunks : j; };

auto issue = [&](Cursor const &c, int slot) {
  __nv_bfloat16 const *const p = w_warp + (static_cast<int64_t>(c.row) * kRowStride + c.cb * 256);
  char *const d = slot_base(slot);
  #pragma unroll
  for (int j = 0; j < kGroup; ++j) {
    int const dr = drow(j);
    int const dc = dchunk(j);
    if (c.row + dr < my_rows) {
      mpkc::cp_async_weight16(d + j * kConsumerThreads * 16, p + (static_cast<int64_t>(dr) * kRowStride + dc * 256), policy);
    }
  }
  mpkc::cp_async_commit();
};

// Four independent chains per token (one per bf16 pair of a vector): the FMAs of a vector do
// not wait for each other.
float acc[kRows][4];
#pragma unroll
for (int t = 0; t < kRows; ++t) {
  #pragma unroll
  for (int i = 0; i < 4; ++i) acc[t][i] = 0.f;
}

auto compute = [&](Cursor const &c, int slot) {
  char const *const d = slot_base(slot);
  __nv_bfloat16 const *const xs = s_x + k0 + c.cb * 256;
  #pragma unroll
  for (int j = 0; j < kGroup; ++j) {
    int const dr = drow(j);
    int const dc = dchunk(j);
    if (kWholeRows && c.row + dr >= my_rows) break;
    uint4 const wv = *reinterpret_cast<uint4 const *>(d + j * kConsumerThreads * 16);
    uint32_t const w32[4] = {wv.x, wv.y, wv.z, wv.w};
    #pragma unroll
    for (int t = 0; t < kRows; ++t) {
      uint4 const xv = *reinterpret_cast<uint4 const *>(xs + t * kK + dc * 256);
      uint32_t const x32[4] = {xv.x, xv.y, xv.z, xv.w};
      #pragma unroll
      for (int i = 0; i < 4; ++i) {
        // bf16 -> f32 is a shift into the high half: the low element << 16, the high one masked.
        acc[t][i] = fmaf(__uint_as_float(w32[i] << 16), __uint_as_float(x32[i] << 16), acc[t][i]);
        acc[t][i] = fmaf(__uint_as_float(w32[i] & 0xffff0000u), __uint_as_float(x32[i] & 0xffff0000u), acc[t][i]);
      }
    }
    // A row ends at its last chunk: within whole rows at a known j, else only at a group's end.
    if (kWholeRows ? dc == kChunks - 1 : (j == kGroup - 1 && c.cb + kGroup == kChunks)) {
      // The row's K part is complete: reduce over the lanes, store (or keep the K group's part).
      int const local = row_warp + (c.row + dr) * kRowWarps;
      #pragma unroll
      for (int t = 0; t < kRows; ++t) {
        float const v = mpkc::warp_sum((acc[t][0] + acc[t][1]) + (acc[t][2] + acc[t][3]));
        #pragma unroll
        for (int i = 0; i < 4; ++i) acc[t][i] = 0.f;
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

// x (bf16) into x_rows, 8 vectors per thread at a time: the first batch's loads go out before
// the weights' first groups (its round trip not queued behind theirs), the rest after.
constexpr int kXVecs = (kRows * kK / 8 + kConsumerThreads - 1) / kConsumerThreads;
mpkc::Bf16x8 xv[8];
auto x_load = [&](int g0) {
  #pragma unroll
  for (int j = 0; j < 8; ++j) {
    int const i = (tid + (g0 + j) * kConsumerThreads) * 8;
    if (i < kRows * kK) xv[j] = mpkc::ld_global_v8(x + i);
  }
};
auto x_store = [&](int g0) {
  #pragma unroll
  for (int j = 0; j < 8; ++j) {
    int const i = (tid + (g0 + j) * kConsumerThreads) * 8;
    if (i < kRows * kK) mpkc::st_v8(s_x + i, xv[j]);
  }
};
x_load(0);

Cursor ci{0, 0};  // the next group to copy
#pragma unroll 1
for (int g = 0; g < kRing - 1; ++g) {
  issue(ci, g);
  ci.next();
}

x_store(0);
#pragma unroll 1
for (int g0 = 8; g0 < kXVecs; g0 += 8) {
  x_load(g0);
  x_store(g0);
}
mpkc::named_barrier_sync(kSyncBarrier, kConsumerThreads);
// Group g: wait for it (the kRing - 2 after it may still be in flight), compute it, then copy
// group g + kRing - 1 into the slot group g - 1 was read from (one commit group each, empty past
// the stream, so the count stays exact).
Cursor cc{0, 0};  // the group to compute
int slot = 0;     // its slot, g % kRing
#pragma unroll 1
for (int g = 0; g < groups; ++g) {
  mpkc::cp_async_wait<kRing - 2>();
  compute(cc, slot);
  cc.next();
  issue(ci, slot == 0 ? kRing - 1 : slot - 1);  // (g + kRing - 1) % kRing: group g - 1's slot
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
