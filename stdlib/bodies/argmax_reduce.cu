// argmax_reduce: for every row, the best of the per-chunk candidates of argmax_partial; the
// packed (chunk << 32) | index-in-chunk becomes chunk * kChunk + index-in-chunk. Ties go to
// the lowest index. Rows go in batches of kBatch, as in argmax_partial: kBatch candidate loads
// in flight per thread, and mpkc::batch_argmax meets the batch's per-warp winners (kBatch x
// kWarps = 32) in `val`/`idx`, thread r holding row r's token; two barriers per batch.
constexpr int kWarps = kConsumerThreads / 32;
constexpr int kBatch = 32 / kWarps;
static_assert(kBatch >= 1, "argmax_reduce: at most 32 consumer warps");
__nv_bfloat16 *const s_val = reinterpret_cast<__nv_bfloat16 *>(buf.val);
int64_t *const s_idx = reinterpret_cast<int64_t *>(buf.idx);
int const tid = static_cast<int>(threadIdx.x);
for (int row0 = 0; row0 < kRows; row0 += kBatch) {
  float best[kBatch];
  int64_t best_i[kBatch];
#pragma unroll
  for (int r = 0; r < kBatch; ++r) {
    best[r] = -INFINITY;
    best_i[r] = INT64_MAX;
  }
  for (int c = tid; c < kChunks; c += kConsumerThreads) {
#pragma unroll
    for (int r = 0; r < kBatch; ++r) {
      if (row0 + r < kRows) {
        int64_t const at = static_cast<int64_t>(row0 + r) * kChunks + c;
        int64_t const packed = idx[at];
        int64_t const i = (packed >> 32) * kChunk + (packed & 0xffffffffll);
        float const v = __bfloat162float(val[at]);
        if (mpkc::argmax_takes(v, i, best[r], best_i[r])) {
          best[r] = v;
          best_i[r] = i;
        }
      }
    }
  }
  float b;
  int64_t bi;
  if (mpkc::batch_argmax<kBatch, kConsumerThreads>(best, best_i, s_val, s_idx, kRows - row0, kSyncBarrier, b, bi)) {
    token[row0 + tid] = bi;
  }
}
