// argmax_partial: for every row, the best logit of chunk `task_offset` and its index, packed as
// (chunk << 32) | index-in-chunk; ties go to the lowest index. Rows go in batches of kBatch:
// each thread scans its slice of the chunk for every row of the batch at once (kBatch
// independent loads in flight, 16-byte vectors where the row stride and chunk allow), the
// per-warp winners of the batch meet in `val`/`idx` (kBatch x kWarps = 32 candidates), and
// thread r picks row r's winner. Two barriers per batch, not per row.
constexpr int kWarps = kConsumerThreads / 32;
constexpr int kBatch = 32 / kWarps;
static_assert(kBatch >= 1, "argmax_partial: at most 32 consumer warps");
// 16-byte loads need every row and chunk start on 8 logits; the base pointer is checked below.
constexpr bool kVec = kVocab % 8 == 0 && kChunk % 8 == 0;
__nv_bfloat16 *const s_val = reinterpret_cast<__nv_bfloat16 *>(buf.val);
int64_t *const s_idx = reinterpret_cast<int64_t *>(buf.idx);
int const tid = static_cast<int>(threadIdx.x);
int const warp = tid >> 5;
int const lane = tid & 31;
int const chunk_id = task_offset;
int64_t const begin = static_cast<int64_t>(chunk_id) * kChunk;
int64_t const end = begin + kChunk < kVocab ? begin + kChunk : kVocab;
bool const vec = kVec && (reinterpret_cast<uintptr_t>(logits) & 15) == 0;
for (int row0 = 0; row0 < kRows; row0 += kBatch) {
  float best[kBatch];
  int64_t best_i[kBatch];
#pragma unroll
  for (int r = 0; r < kBatch; ++r) {
    best[r] = -INFINITY;
    best_i[r] = INT64_MAX;
  }
  if (vec) {
    // Each thread visits its indices in increasing order: a tie keeps the first (lowest).
    for (int64_t i = begin + 8 * tid; i < end; i += 8 * kConsumerThreads) {
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
            // The tie clause keeps an all -inf chunk's first index (not the INT64_MAX start).
            if (v.x > best[r] || (v.x == best[r] && i + 2 * j < best_i[r])) {
              best[r] = v.x;
              best_i[r] = i + 2 * j;
            }
            if (v.y > best[r] || (v.y == best[r] && i + 2 * j + 1 < best_i[r])) {
              best[r] = v.y;
              best_i[r] = i + 2 * j + 1;
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
          if (v > best[r] || (v == best[r] && i < best_i[r])) {
            best[r] = v;
            best_i[r] = i;
          }
        }
      }
    }
  }
#pragma unroll
  for (int r = 0; r < kBatch; ++r) {
    mpkc::warp_argmax(best[r], best_i[r]);
    if (lane == 0) {
      s_val[r * kWarps + warp] = __float2bfloat16_rn(best[r]);
      s_idx[r * kWarps + warp] = best_i[r];
    }
  }
  mpkc::named_barrier_sync(kSyncBarrier, kConsumerThreads);
  if (tid < kBatch && row0 + tid < kRows) {
    int const row = row0 + tid;
    float b = __bfloat162float(s_val[tid * kWarps]);
    int64_t bi = s_idx[tid * kWarps];
    for (int w2 = 1; w2 < kWarps; ++w2) {
      float const v = __bfloat162float(s_val[tid * kWarps + w2]);
      int64_t const vi = s_idx[tid * kWarps + w2];
      if (v > b || (v == b && vi < bi)) {
        b = v;
        bi = vi;
      }
    }
    val[static_cast<int64_t>(row) * kChunks + chunk_id] = __float2bfloat16_rn(b);
    idx[static_cast<int64_t>(row) * kChunks + chunk_id] = (static_cast<int64_t>(chunk_id) << 32) | (bi - begin);
  }
  // `val`/`idx` are rewritten by the next batch: its winners must have been read.
  mpkc::named_barrier_sync(kSyncBarrier, kConsumerThreads);
}
