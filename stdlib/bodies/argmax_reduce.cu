// argmax_reduce: for every row, the best of the per-chunk candidates of argmax_partial; the
// packed (chunk << 32) | index-in-chunk becomes chunk * kChunk + index-in-chunk. Ties go to
// the lowest index.
__nv_bfloat16 *const s_val = reinterpret_cast<__nv_bfloat16 *>(buf.val);
int64_t *const s_idx = reinterpret_cast<int64_t *>(buf.idx);
int const tid = static_cast<int>(threadIdx.x);
int const warp = tid >> 5;
int const lane = tid & 31;
for (int row = 0; row < kRows; ++row) {
  float best = -INFINITY;
  int64_t best_i = INT64_MAX;
  for (int c = tid; c < kChunks; c += kConsumerThreads) {
    int64_t const packed = idx[static_cast<int64_t>(row) * kChunks + c];
    int64_t const i = (packed >> 32) * kChunk + (packed & 0xffffffffll);
    float const v = __bfloat162float(val[static_cast<int64_t>(row) * kChunks + c]);
    if (v > best || (v == best && i < best_i)) {
      best = v;
      best_i = i;
    }
  }
  mpkc::warp_argmax(best, best_i);
  if (lane == 0) {
    s_val[warp] = __float2bfloat16_rn(best);
    s_idx[warp] = best_i;
  }
  mpkc::named_barrier_sync(kSyncBarrier, kConsumerThreads);
  if (tid == 0) {
    float b = __bfloat162float(s_val[0]);
    int64_t bi = s_idx[0];
    for (int w2 = 1; w2 < kConsumerThreads / 32; ++w2) {
      float const v = __bfloat162float(s_val[w2]);
      if (v > b || (v == b && s_idx[w2] < bi)) {
        b = v;
        bi = s_idx[w2];
      }
    }
    token[row] = bi;
  }
  mpkc::named_barrier_sync(kSyncBarrier, kConsumerThreads);
}
