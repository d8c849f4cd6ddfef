// argmax_partial: for every row, the best logit of chunk `task_offset` and its index, packed as
// (chunk << 32) | index-in-chunk; ties go to the lowest index. Rows go in batches of kBatch:
// each thread scans its slice of the chunk for every row of the batch at once (kBatch
// independent loads in flight, 16-byte vectors where the row stride and chunk allow), and
// mpkc::batch_argmax meets the per-warp winners of the batch in `val`/`idx` (kBatch x kWarps =
// 32 candidates), thread r holding row r's; two barriers per batch, not per row.
constexpr int kWarps = kConsumerThreads / 32;
constexpr int kBatch = 32 / kWarps;
static_assert(kBatch >= 1, "argmax_partial: at most 32 consumer warps");
// 16-byte loads need every row and chunk start on 8 logits; the base pointer is checked below.
constexpr bool kVec = kVocab % 8 == 0 && kChunk % 8 == 0;
__nv_bfloat16 *const s_val = reinterpret_cast<__nv_bfloat16 *>(buf.val);
int64_t *const s_idx = reinterpret_cast<int64_t *>(buf.idx);
int const tid = static_cast<int>(threadIdx.x);
int const chunk_id = task_offset;
int64_t const begin = static_cast<int64_t>(chunk_id) * kChunk;
int64_t const end = begin + kChunk < kVocab ? begin + kChunk : kVocab;
bool const vec = kVec && (reinterpret_cast<uintptr_t>(logits) & 15) == 0;
for (int row0 = 0; row0 < kRows; row0 += kBatch) {
  // The scan keeps each candidate's offset in the chunk (32 bits: kChunk < 2^31) and widens it
  // once, for the meeting: the tie test in the inner loop is a 32-bit compare.
  float best[kBatch];
  int best_o[kBatch];
#pragma unroll
  for (int r = 0; r < kBatch; ++r) {
    best[r] = -INFINITY;
    best_o[r] = INT_MAX;
  }
  if (vec) {
    for (int64_t i = begin + 8 * tid; i < end; i += 8 * kConsumerThreads) {
      int const o = static_cast<int>(i - begin);
      mpkc::Bf16x8 q[kBatch];
#pragma unroll
      for (int r = 0; r < kBatch; ++r) {
        if (row0 + r < kRows) {
          q[r] = mpkc::ld_global_v8(logits + static_cast<int64_t>(row0 + r) * kVocab + i);
        }
      }
#pragma unroll
      for (int r = 0; r < kBatch; ++r) {
        if (row0 + r < kRows) {
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            float2 const v = __bfloat1622float2(q[r].h[j]);
            if (mpkc::argmax_takes(v.x, o + 2 * j, best[r], best_o[r])) {
              best[r] = v.x;
              best_o[r] = o + 2 * j;
            }
            if (mpkc::argmax_takes(v.y, o + 2 * j + 1, best[r], best_o[r])) {
              best[r] = v.y;
              best_o[r] = o + 2 * j + 1;
            }
          }
        }
      }
    }
  } else {
    for (int64_t i = begin + tid; i < end; i += kConsumerThreads) {
#pragma unroll
      for (int r = 0; r < kBatch; ++r) {
        if (row0 + r < kRows) {
          float const v = __bfloat162float(logits[static_cast<int64_t>(row0 + r) * kVocab + i]);
          int const o = static_cast<int>(i - begin);
          if (mpkc::argmax_takes(v, o, best[r], best_o[r])) {
            best[r] = v;
            best_o[r] = o;
          }
        }
      }
    }
  }
  int64_t best_i[kBatch];
#pragma unroll
  for (int r = 0; r < kBatch; ++r) {
    best_i[r] = best_o[r] == INT_MAX ? INT64_MAX : begin + best_o[r];
  }
  float b;
  int64_t bi;
  if (mpkc::batch_argmax<kBatch, kConsumerThreads>(best, best_i, s_val, s_idx, kRows - row0, kSyncBarrier, b, bi)) {
    int64_t const at = static_cast<int64_t>(row0 + tid) * kChunks + chunk_id;
    val[at] = __float2bfloat16_rn(b);
    idx[at] = (static_cast<int64_t>(chunk_id) << 32) | (bi - begin);
  }
}
