// silu_mul: y[r, c] = silu(x[r, c]) * x[r, kCols + c], fp32 math, for this task's column slice.
// `x` is written by an earlier task of the launch: coherent loads.
int const col_begin = task_offset * kColsPerTask;
int const col_end = col_begin + kColsPerTask < kCols ? col_begin + kColsPerTask : kCols;
int const width = col_end - col_begin;
for (int64_t e = static_cast<int64_t>(threadIdx.x) * 8; e < static_cast<int64_t>(kRows) * width; e += kConsumerThreads * 8) {
  int const row = static_cast<int>(e / width);
  int const col = col_begin + static_cast<int>(e % width);
  __nv_bfloat16 const *const xr = x + static_cast<int64_t>(row) * (2 * kCols);
  mpkc::Bf16x8 const g = mpkc::ld_global_v8(xr + col);
  mpkc::Bf16x8 const u = mpkc::ld_global_v8(xr + kCols + col);
  mpkc::Bf16x8 o;
  #pragma unroll
  for (int j = 0; j < 4; ++j) {
    float2 const gf = __bfloat1622float2(g.h[j]);
    float2 const uf = __bfloat1622float2(u.h[j]);
    float const a = gf.x / (1.f + __expf(-gf.x)) * uf.x;
    float const b = gf.y / (1.f + __expf(-gf.y)) * uf.y;
    o.h[j] = __floats2bfloat162_rn(a, b);
  }
  mpkc::st_v8(y + static_cast<int64_t>(row) * kCols + col, o);
}
