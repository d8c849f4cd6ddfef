// rmsnorm: y = x * rsqrt(mean(x^2) + eps) * w per row, fp32 accumulation.
// Stage the weight once, then per row: stage x, reduce the sum of squares over the four
// consumer warps through `reduce`, scale into `output`, store. `w` is a weight (read-only for the
// launch: the non-coherent path); `x` is written by an earlier task of the launch (coherent loads).
// Rows are kXRowStride / kYRowStride elements apart (a view's stride, else kHidden); `y` may be
// `x` itself (in place): a row is staged whole before any of it is stored.
__nv_bfloat16 *const s_in = reinterpret_cast<__nv_bfloat16 *>(buf.input);
__nv_bfloat16 *const s_w = reinterpret_cast<__nv_bfloat16 *>(buf.weight);
__nv_bfloat16 *const s_out = reinterpret_cast<__nv_bfloat16 *>(buf.output);
float *const s_red = reinterpret_cast<float *>(buf.reduce);
int const tid = static_cast<int>(threadIdx.x);
int const warp = tid >> 5;
int const lane = tid & 31;

for (int i = tid * 8; i < kHidden; i += kConsumerThreads * 8) {
  mpkc::st_v8(s_w + i, mpkc::ld_global_nc_v8(w + i));
}

int const row_begin = task_offset * kRowsPerTask;
int const row_end = row_begin + kRowsPerTask < kRows ? row_begin + kRowsPerTask : kRows;
for (int row = row_begin; row < row_end; ++row) {
  __nv_bfloat16 const *const xr = x + static_cast<int64_t>(row) * kXRowStride;
  float sum_sq = 0.f;
  for (int i = tid * 8; i < kHidden; i += kConsumerThreads * 8) {
    mpkc::Bf16x8 const v = mpkc::ld_global_v8(xr + i);
    mpkc::st_v8(s_in + i, v);
    #pragma unroll
    for (int j = 0; j < 4; ++j) {
      float2 const f = __bfloat1622float2(v.h[j]);
      sum_sq = fmaf(f.x, f.x, sum_sq);
      sum_sq = fmaf(f.y, f.y, sum_sq);
    }
  }
  sum_sq = mpkc::warp_sum(sum_sq);
  if (lane == 0) s_red[warp] = sum_sq;
  mpkc::named_barrier_sync(kSyncBarrier, kConsumerThreads);
  float const total = s_red[0] + s_red[1] + s_red[2] + s_red[3];
  float const inv_rms = rsqrtf(total / static_cast<float>(kHidden) + eps);
  __nv_bfloat16 *const yr = y + static_cast<int64_t>(row) * kYRowStride;
  for (int i = tid * 8; i < kHidden; i += kConsumerThreads * 8) {
    mpkc::Bf16x8 const xv = *reinterpret_cast<mpkc::Bf16x8 const *>(s_in + i);
    mpkc::Bf16x8 const wv = *reinterpret_cast<mpkc::Bf16x8 const *>(s_w + i);
    mpkc::Bf16x8 o;
    #pragma unroll
    for (int j = 0; j < 4; ++j) {
      float2 const xf = __bfloat1622float2(xv.h[j]);
      float2 const wf = __bfloat1622float2(wv.h[j]);
      o.h[j] = __floats2bfloat162_rn(xf.x * inv_rms * wf.x, xf.y * inv_rms * wf.y);
    }
    mpkc::st_v8(s_out + i, o);
    mpkc::st_v8(yr + i, *reinterpret_cast<mpkc::Bf16x8 const *>(s_out + i));
  }
  // `reduce` is rewritten by the next row: every warp must have read it.
  mpkc::named_barrier_sync(kSyncBarrier, kConsumerThreads);
}
