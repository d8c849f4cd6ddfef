// splitk_reduce: y[m, n] = bf16(sum over s of partials[s, m, n]) for this task's column slice and
// row group (task_offset = row group * kColTasks + slice), summing the f32 split-K partials in
// split order (s = 0, 1, ...), whichever path runs.
int const col_begin = task_offset % kColTasks * kColsPerTask;
int const col_end = col_begin + kColsPerTask < kCols ? col_begin + kColsPerTask : kCols;
int const width = col_end - col_begin;
int const row_begin = task_offset / kColTasks * kRowsPerTask;
int const row_end = row_begin + kRowsPerTask < kRows ? row_begin + kRowsPerTask : kRows;
int const rows = row_end > row_begin ? row_end - row_begin : 0;
if constexpr (kCols % 4 == 0 && kColsPerTask % 4 == 0) {
  // Four columns per thread: 16-byte loads (aligned: cudaMalloc'd base, kCols and col multiples
  // of 4 floats), up to kBatch splits in flight together before they are added, so that a thread
  // waits one memory round trip per kBatch splits, not one per split.
  constexpr int kBatch = kSplits < 8 ? kSplits : 8;
  int const quads = width / 4;
  for (int e = threadIdx.x; e < rows * quads; e += kConsumerThreads) {
    int const row = row_begin + e / quads;
    int const col = col_begin + 4 * (e % quads);
    float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int s0 = 0; s0 < kSplits; s0 += kBatch) {
      float4 v[kBatch];
      #pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        if (s0 + b < kSplits) {
          v[b] = *reinterpret_cast<float4 const *>(&partials[(static_cast<int64_t>(s0 + b) * kRows + row) * kCols + col]);
        }
      }
      #pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        if (s0 + b < kSplits) {
          sum.x += v[b].x;
          sum.y += v[b].y;
          sum.z += v[b].z;
          sum.w += v[b].w;
        }
      }
    }
    __nv_bfloat162 *const out = reinterpret_cast<__nv_bfloat162 *>(&y[static_cast<int64_t>(row) * kCols + col]);
    out[0] = __floats2bfloat162_rn(sum.x, sum.y);
    out[1] = __floats2bfloat162_rn(sum.z, sum.w);
  }
} else {
  for (int64_t e = threadIdx.x; e < static_cast<int64_t>(rows) * width; e += kConsumerThreads) {
    int const row = row_begin + static_cast<int>(e / width);
    int const col = col_begin + static_cast<int>(e % width);
    float sum = 0.f;
    #pragma unroll 4
    for (int s = 0; s < kSplits; ++s) sum += partials[(static_cast<int64_t>(s) * kRows + row) * kCols + col];
    y[static_cast<int64_t>(row) * kCols + col] = __float2bfloat16_rn(sum);
  }
}
