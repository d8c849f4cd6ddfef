// gemv_mma: y[t, n] = sum_k x[t, k] * W[n, k] for this task's rows of W with warp tensor-core
// MMAs (mma.sync m16n8k16, bf16 in, f32 accumulation), bf16 out. Warp w takes the K quarter
// [w * kK / 4, (w + 1) * kK / 4) of every row, in chunks of kChunk elements. A chunk is kLines
// lines of kChunk * 2 bytes: the task's kRowsPerTask weight rows, then its kRows tokens. The
// warp copies a chunk with cp.async, kLanesPerLine lanes per line (16 bytes each), so one
// instruction reads 32 / kLanesPerLine whole lines: runs of kChunk * 2 contiguous bytes of
// each row. Unit u (16 bytes) of line L sits at unit u ^ (4 * (L & 1)) of the line in shared memory.
// The MMAs then read fragments: the task's rows are kTiles tiles of 16 (the MMA's A), the tokens
// kNTiles tiles of 8 (its B); at k-block b (32 elements) of a chunk, lane (g, t) = (lane / 4,
// lane % 4) loads unit 4 b + t of rows 16 i + g and 16 i + g + 8 of each tile i and of token
// 8 j + g of each token tile j. Rows past the task's last and tokens past kRows read the last
// one instead: their sums are dropped, and an MMA's row of D reads only its row of A, a column
// only its column of B. The eight lanes of a shared-memory phase (g = 2p, 2p + 1) read lines of
// both parities, so the swizzle puts them in different halves of the 32 banks. An MMA's k order
// is free as long as A and B follow the same one: step s (0, 1) of a k-block takes elements
// 4s .. 4s + 3 of each lane's vectors (A: words 2s and 2s + 1 of rows g and g + 8; B: words 2s
// and 2s + 1 of token g). A chunk is one cp.async commit group, its slot in `w_ring` one of
// kRing; the lanes read what other lanes of their warp copied, so cp.async.wait_group and
// __syncwarp order the ring (each warp has its own bytes of every slot). `W` is a weight (L2
// evict-first); `x` is written by an earlier task of the launch: its copies read L2
// (cp.async.cg). The four warps' sums meet in `partials`, added in warp order.
float *const s_part = reinterpret_cast<float *>(buf.partials);
char *const s_ring = reinterpret_cast<char *>(buf.w_ring);
int const tid = static_cast<int>(threadIdx.x);
int const warp = tid >> 5;
int const lane = tid & 31;
int const g = lane >> 2;  // the fragment row (a weight row) and column (a token)
int const t = lane & 3;   // the lane in its group of four
int const row0 = task_offset * kRowsPerTask;
int const task_rows = kN - row0 < kRowsPerTask ? kN - row0 : kRowsPerTask;
static_assert(kRing >= 2, "a ring of two chunks at least");
static_assert(kChunk == 64 || kChunk == 128 || kChunk == 256, "a line is 2, 4 or 8 k-blocks of 32 (8, 16 or 32 lanes' copies)");
constexpr int kLanesPerLine = kChunk / 8;  // 16 bytes (8 elements) a lane
constexpr int kLineBytes = kChunk * 2;
constexpr int kLinesPerCopy = 32 / kLanesPerLine;
constexpr int kCopies = (kLines + kLinesPerCopy - 1) / kLinesPerCopy;
constexpr int kWarpBytes = kLines * kLineBytes;  // a warp's bytes of a slot

uint64_t const policy = mpkc::l2_evict_first_policy();
// This warp's first element of K, and this lane's line (of each copy) and unit.
int const k_warp = warp * (kK / 4);
int const copy_line = lane / kLanesPerLine;
int const copy_unit = lane % kLanesPerLine;

// The warp's bytes of slot `slot`; byte offset of unit u of line L in it.
auto warp_slot = [&](int slot) { return s_ring + (slot * 4 + warp) * kWarpBytes; };
auto at = [](int line, int unit) { return line * kLineBytes + ((unit ^ ((line & 1) << 2)) << 4); };

// Copies chunk `c` (empty past the last: the commit count stays exact) into `slot`.
auto issue = [&](int c, int slot) {
  if (c < kChunks) {
    char *const d = warp_slot(slot);
    int const k = k_warp + c * kChunk + copy_unit * 8;
    #pragma unroll
    for (int i = 0; i < kCopies; ++i) {
      int const line = i * kLinesPerCopy + copy_line;
      if (line < kRowsPerTask) {
        if (line < task_rows) {
          mpkc::cp_async_weight16(d + at(line, copy_unit), W + (static_cast<int64_t>(row0 + line) * kK + k), policy);
        }
      } else if (line < kLines) {
        int const token = line - kRowsPerTask;
        mpkc::cp_async_activation16(d + at(line, copy_unit), x + (static_cast<int64_t>(token) * kK + k));
      }
    }
  }
  mpkc::cp_async_commit();
};

// The lines this lane's fragments read: rows g and g + 8 of each tile, token g of each token
// tile, past the last row or token the last one.
int lo_line[kTiles], hi_line[kTiles], x_line[kNTiles];
#pragma unroll
for (int i = 0; i < kTiles; ++i) {
  lo_line[i] = min(i * 16 + g, task_rows - 1);
  hi_line[i] = min(i * 16 + g + 8, task_rows - 1);
}
#pragma unroll
for (int j = 0; j < kNTiles; ++j) x_line[j] = kRowsPerTask + min(j * 8 + g, kRows - 1);

float acc[kTiles][kNTiles][4];
#pragma unroll
for (int i = 0; i < kTiles; ++i) {
  #pragma unroll
  for (int j = 0; j < kNTiles; ++j) {
    #pragma unroll
    for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;
  }
}

auto compute = [&](int slot) {
  char const *const d = warp_slot(slot);
  #pragma unroll
  for (int b = 0; b < kChunk / 32; ++b) {
    int const unit = 4 * b + t;
    uint4 xv[kNTiles];
    #pragma unroll
    for (int j = 0; j < kNTiles; ++j) xv[j] = *reinterpret_cast<uint4 const *>(d + at(x_line[j], unit));
    #pragma unroll
    for (int i = 0; i < kTiles; ++i) {
      uint4 const lo = *reinterpret_cast<uint4 const *>(d + at(lo_line[i], unit));  // row g
      uint4 const hi = *reinterpret_cast<uint4 const *>(d + at(hi_line[i], unit));  // row g + 8
      #pragma unroll
      for (int j = 0; j < kNTiles; ++j) {
        mpkc::mma_bf16_m16n8k16(acc[i][j], lo.x, hi.x, lo.y, hi.y, xv[j].x, xv[j].y);  // step 0
        mpkc::mma_bf16_m16n8k16(acc[i][j], lo.z, hi.z, lo.w, hi.w, xv[j].z, xv[j].w);  // step 1
      }
    }
  }
};

#pragma unroll 1
for (int c = 0; c < kRing - 1; ++c) issue(c, c);
// Chunk c: wait for it (the kRing - 2 after it may still be in flight) and for the warp's other
// lanes' copies of it (__syncwarp: they read what this lane copied, and it theirs), compute it,
// then copy chunk c + kRing - 1 into the slot chunk c - 1 was read from (every lane of the warp
// has passed this chunk's __syncwarp, so it is done reading that slot).
int slot = 0;  // c % kRing
#pragma unroll 1
for (int c = 0; c < kChunks; ++c) {
  mpkc::cp_async_wait<kRing - 2>();
  __syncwarp();
  compute(slot);
  issue(c + kRing - 1, slot == 0 ? kRing - 1 : slot - 1);
  slot = slot + 1 == kRing ? 0 : slot + 1;
}
mpkc::cp_async_wait<0>();

// The warp's sums of its K quarter: acc[i][j][e] is row 16 i + g + 8 (e / 2), token
// 8 j + 2 t + e % 2.
#pragma unroll
for (int i = 0; i < kTiles; ++i) {
  #pragma unroll
  for (int j = 0; j < kNTiles; ++j) {
    #pragma unroll
    for (int e = 0; e < 4; ++e) {
      int const r = i * 16 + g + (e >> 1) * 8;
      int const token = j * 8 + t * 2 + (e & 1);
      if (r < task_rows && token < kRows) s_part[(warp * kRowsPerTask + r) * kRows + token] = acc[i][j][e];
    }
  }
}
mpkc::named_barrier_sync(kSyncBarrier, kConsumerThreads);
// The four quarters of every row and token, summed in warp order (the same order every run);
// consecutive threads store consecutive rows of a token.
for (int i = tid; i < task_rows * kRows; i += kConsumerThreads) {
  int const r = i % task_rows;
  int const token = i / task_rows;
  float v = 0.f;
  #pragma unroll
  for (int w = 0; w < 4; ++w) v += s_part[(w * kRowsPerTask + r) * kRows + token];
  y[static_cast<int64_t>(token) * kN + row0 + r] = __float2bfloat16_rn(v);
}
