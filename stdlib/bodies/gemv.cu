// gemv: y[t, n] = sum_k x[t, k] * W[n, k] for this task's rows of W, fp32 accumulation, bf16 out.
// Warp w is row warp w / kKGroups (rows row0 + w / kKGroups, + kRowWarps, ...) and K group
// w % kKGroups (columns kgroup * kK / kKGroups, + kK / kKGroups). Each lane loads 16-byte
// vectors of its rows at lane * 8 + 256 * c: a warp instruction reads 512 contiguous bytes.
// A warp's work is kSteps steps (kBatchRows rows x kChunkBatch vectors per lane each). Where a
// step is at most 16 vectors (kDoubleBuffer) they go into two register buffers in turn, step
// s + 1's loads in flight while step s computes; a longer row's step (up to 32 vectors) has one.
// `W` is a weight (non-coherent loads, L2 evict-first: read once per step); `x` is written by an
// earlier task of the launch: it is staged with coherent loads (ld.global.cg) issued after the
// first step's weights.
__nv_bfloat16 *const s_x = reinterpret_cast<__nv_bfloat16 *>(buf.x_rows);
float *const s_part = reinterpret_cast<float *>(buf.partials);
int const tid = static_cast<int>(threadIdx.x);
int const warp = tid >> 5;
int const lane = tid & 31;
int const row_warp = warp / kKGroups;
int const kgroup = warp % kKGroups;
int const row0 = task_offset * kRowsPerTask;
int const k0 = kgroup * (kK / kKGroups) + lane * 8;
constexpr int kChunkSteps = (kChunks + kChunkBatch - 1) / kChunkBatch;
constexpr int kBatches = (kWaves + kBatchRows - 1) / kBatchRows;
constexpr int kSteps = kBatches * kChunkSteps;
static_assert((kDoubleBuffer ? 2 : 1) * kBatchRows * kChunkBatch <= 32 && kBatchRows * kRows <= 32, "registers: 32 vectors and 32 accumulators per lane");

uint64_t const policy = mpkc::l2_evict_first_policy();

// Row `b` of batch `bi`, as an index into the task's rows; valid while inside the task and W.
auto local_row = [&](int bi, int b) { return (bi * kBatchRows + b) * kRowWarps + row_warp; };
auto valid_row = [&](int local) { return local < kRowsPerTask && row0 + local < kN; };

auto load = [&](uint4 (&dst)[kBatchRows][kChunkBatch], int s) {
  int const bi = s / kChunkSteps;
  int const c0 = (s % kChunkSteps) * kChunkBatch;
  #pragma unroll
  for (int b = 0; b < kBatchRows; ++b) {
    // A row past the task or W loads W's last row instead: a valid address, its sum never stored.
    int const local = local_row(bi, b);
    int64_t const row = valid_row(local) ? row0 + local : kN - 1;
    #pragma unroll
    for (int c = 0; c < kChunkBatch; ++c) {
      if (c0 + c < kChunks) dst[b][c] = mpkc::ld_weight_v4(W + (row * kK + k0 + (c0 + c) * 256), policy);
    }
  }
};

float acc[kBatchRows][kRows];
#pragma unroll
for (int b = 0; b < kBatchRows; ++b) {
  #pragma unroll
  for (int t = 0; t < kRows; ++t) acc[b][t] = 0.f;
}

auto compute = [&](uint4 const (&src)[kBatchRows][kChunkBatch], int s) {
  int const bi = s / kChunkSteps;
  int const c0 = (s % kChunkSteps) * kChunkBatch;
  #pragma unroll
  for (int c = 0; c < kChunkBatch; ++c) {
    if (c0 + c < kChunks) {
      #pragma unroll
      for (int t = 0; t < kRows; ++t) {
        uint4 const xv = *reinterpret_cast<uint4 const *>(s_x + t * kK + k0 + (c0 + c) * 256);
        __nv_bfloat162 const *const xh = reinterpret_cast<__nv_bfloat162 const *>(&xv);
        float2 xf[4];
        #pragma unroll
        for (int j = 0; j < 4; ++j) xf[j] = __bfloat1622float2(xh[j]);
        #pragma unroll
        for (int b = 0; b < kBatchRows; ++b) {
          __nv_bfloat162 const *const wh = reinterpret_cast<__nv_bfloat162 const *>(&src[b][c]);
          #pragma unroll
          for (int j = 0; j < 4; ++j) {
            float2 const wf = __bfloat1622float2(wh[j]);
            acc[b][t] = fmaf(wf.x, xf[j].x, acc[b][t]);
            acc[b][t] = fmaf(wf.y, xf[j].y, acc[b][t]);
          }
        }
      }
    }
  }
  if (s % kChunkSteps != kChunkSteps - 1) return;
  // The batch's rows are complete: reduce over the lanes, store (or keep the K group's part).
  #pragma unroll
  for (int b = 0; b < kBatchRows; ++b) {
    int const local = local_row(bi, b);
    bool const ok = valid_row(local);
    #pragma unroll
    for (int t = 0; t < kRows; ++t) {
      float const v = mpkc::warp_sum(acc[b][t]);
      acc[b][t] = 0.f;
      if (lane == 0 && ok) {
        if constexpr (kKGroups == 1) {
          y[static_cast<int64_t>(t) * kN + row0 + local] = __float2bfloat16_rn(v);
        } else {
          s_part[(kgroup * kRowsPerTask + local) * kRows + t] = v;
        }
      }
    }
  }
};

uint4 wa[kBatchRows][kChunkBatch];
load(wa, 0);
// Every warp has its first weights in flight: stage x (coherent loads), then meet. (With
// cp.async here ptxas put its wait before the weight loads, a whole round trip earlier.)
// Up to 8 vectors per thread in flight at once: one L2 round trip for a row of 7168.
constexpr int kXVecs = (kRows * kK / 8 + kConsumerThreads - 1) / kConsumerThreads;
#pragma unroll 1
for (int g = 0; g < kXVecs; g += 8) {
  mpkc::Bf16x8 xv[8];
  #pragma unroll
  for (int j = 0; j < 8; ++j) {
    int const i = (tid + (g + j) * kConsumerThreads) * 8;
    if (g + j < kXVecs && i < kRows * kK) xv[j] = mpkc::ld_global_v8(x + i);
  }
  #pragma unroll
  for (int j = 0; j < 8; ++j) {
    int const i = (tid + (g + j) * kConsumerThreads) * 8;
    if (g + j < kXVecs && i < kRows * kK) mpkc::st_v8(s_x + i, xv[j]);
  }
}
mpkc::named_barrier_sync(kSyncBarrier, kConsumerThreads);
if constexpr (kDoubleBuffer) {
  uint4 wb[kBatchRows][kChunkBatch];
  #pragma unroll 1
  for (int s = 0; s < kSteps; s += 2) {
    if (s + 1 < kSteps) load(wb, s + 1);
    compute(wa, s);
    if (s + 1 < kSteps) {
      if (s + 2 < kSteps) load(wa, s + 2);
      compute(wb, s + 1);
    }
  }
} else {
  #pragma unroll 1
  for (int s = 0; s < kSteps; ++s) {
    if (s > 0) load(wa, s);
    compute(wa, s);
  }
}

if constexpr (kKGroups > 1) {
  // The K groups' partials of every row: sum them in group order (the same order every run).
  mpkc::named_barrier_sync(kSyncBarrier, kConsumerThreads);
  int const rows = kN - row0 < kRowsPerTask ? kN - row0 : kRowsPerTask;
  for (int i = tid; i < rows * kRows; i += kConsumerThreads) {
    int const local = i / kRows;
    int const t = i % kRows;
    float v = 0.f;
    #pragma unroll
    for (int g = 0; g < kKGroups; ++g) v += s_part[(g * kRowsPerTask + local) * kRows + t];
    y[static_cast<int64_t>(t) * kN + row0 + local] = __float2bfloat16_rn(v);
  }
}
