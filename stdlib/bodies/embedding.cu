// embedding: y[r, c] = table[ids[r], c] for this task's column slice; an id outside
// [0, kVocab) gives a zero row. `table` is a weight (read-only for the launch: the non-coherent
// path); `ids` may be written in the launch (the previous step's argmax): ordinary loads.
int const col_begin = task_offset * kColsPerTask;
int const col_end = col_begin + kColsPerTask < kHidden ? col_begin + kColsPerTask : kHidden;
int const width = col_end - col_begin;
for (int64_t e = static_cast<int64_t>(threadIdx.x) * 8; e < static_cast<int64_t>(kRows) * width; e += kConsumerThreads * 8) {
  int const row = static_cast<int>(e / width);
  int const col = col_begin + static_cast<int>(e % width);
  int32_t const id = ids[row];
  mpkc::Bf16x8 v;
  if (id >= 0 && id < kVocab) {
    v = mpkc::ld_global_nc_v8(table + static_cast<int64_t>(id) * kHidden + col);
  } else {
    #pragma unroll
    for (int j = 0; j < 4; ++j) v.h[j] = __floats2bfloat162_rn(0.f, 0.f);
  }
  mpkc::st_v8(y + static_cast<int64_t>(row) * kHidden + col, v);
}
