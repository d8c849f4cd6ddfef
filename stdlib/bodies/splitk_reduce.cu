// splitk_reduce: y[m, n] = bf16(sum over s of partials[s, m, n]) for this task's column slice,
// summing the f32 split-K partials in split order.
int const col_begin = task_offset * kColsPerTask;
int const col_end = col_begin + kColsPerTask < kCols ? col_begin + kColsPerTask : kCols;
int const width = col_end - col_begin;
for (int64_t e = threadIdx.x; e < static_cast<int64_t>(kRows) * width; e += kConsumerThreads) {
  int const row = static_cast<int>(e / width);
  int const col = col_begin + static_cast<int>(e % width);
  float sum = 0.f;
  #pragma unroll 4
  for (int s = 0; s < kSplits; ++s) sum += partials[(static_cast<int64_t>(s) * kRows + row) * kCols + col];
  y[static_cast<int64_t>(row) * kCols + col] = __float2bfloat16_rn(sum);
}
