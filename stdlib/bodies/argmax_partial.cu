// argmax_partial: for every row, the best logit of chunk `task_offset` and its index, packed as
// (chunk << 32) | index-in-chunk; ties go to the lowest index. Per-warp winners meet in
// `val`/`idx`, thread 0 picks the chunk's winner.
__nv_bfloat16 *const s_val = reinterpret_cast<__nv_bfloat16 *>(buf.val);
int64_t *const s_idx = reinterpret_cast<int64_t *>(buf.idx);
int const tid = static_cast<int>(threadIdx.x);
int const warp = tid >> 5;
int const lane = tid & 31;
int const chunk_id = task_offset;
int64_t const begin = static_cast<int64_t>(chunk_id) * kChunk;
int64_t const end = begin + kChunk < kVocab ? begin + kChunk : kVocab;
for (int row = 0; row < kRows; ++row) {
  __nv_bfloat16 const *const lr = logits + static_cast<int64_t>(row) * kVocab;
  float best = -INFINITY;
  int64_t best_i = INT64_MAX;
  for (int64_t i = begin + tid; i < end; i += kConsumerThreads) {
    float const v = __bfloat162float(lr[i]);
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
    val[static_cast<int64_t>(row) * kChunks + chunk_id] = __float2bfloat16_rn(b);
    idx[static_cast<int64_t>(row) * kChunks + chunk_id] = (static_cast<int64_t>(chunk_id) << 32) | (bi - begin);
  }
  // `val`/`idx` are rewritten by the next row: thread 0 must have read them.
  mpkc::named_barrier_sync(kSyncBarrier, kConsumerThreads);
}
