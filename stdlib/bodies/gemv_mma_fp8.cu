// gemv_mma_fp8: y[t, n] = sum_k (x[t, k] * x_scale[t, k / 128]) * (W[n, k] * W_scale[n / 128, k / 128])
// for this task's rows of W with warp tensor-core MMAs (mma.sync m16n8k32, e4m3 in, f32
// accumulation), bf16 out. gemv_mma's layout (stdlib/bodies/gemv_mma.cu) over bytes: warp w
// takes the K quarter [w * kK / 4, (w + 1) * kK / 4) of every row in chunks of kChunk e4m3; a
// chunk is kLines lines of kChunk bytes (the task's kRowsPerTask weight rows, then its kRows
// tokens) copied with cp.async, kLanesPerLine lanes per line (16 bytes each); unit u of line L
// sits at unit u ^ (4 * (L & 1)) of the line in shared memory. A k-block is 64 elements (units
// 4 b .. 4 b + 3): lane (g, t) = (lane / 4, lane % 4) loads unit 4 b + t of rows 16 i + g and
// 16 i + g + 8 of each tile i and of token 8 j + g of each token tile j, and step s (0, 1) passes
// words 2s and 2s + 1 of them (A: rows g, g + 8; B: token g): an MMA's k order is free as long
// as A and B share it. A scale block (128 elements) is two k-blocks: its four MMAs per tile pair
// sum into a fresh f32 fragment, which is multiplied by its rows' weight scales and its tokens'
// activation scales into the sums (staged in `scales` first: the weight scales of the task's
// row blocks, then the tokens'). Rows past the task's last and tokens past kRows read the last
// one: their sums are not stored. The four warps' sums meet in `partials`, added in warp order.
float *const s_part = reinterpret_cast<float *>(buf.partials);
float *const s_ws = reinterpret_cast<float *>(buf.scales);
float *const s_xs = s_ws + kScaleRowBlocks * kKBlocks;
char *const s_ring = reinterpret_cast<char *>(buf.w_ring);
int const tid = static_cast<int>(threadIdx.x);
int const warp = tid >> 5;
int const lane = tid & 31;
int const g = lane >> 2;  // the fragment row (a weight row) and column (a token)
int const t = lane & 3;   // the lane in its group of four
int const row0 = task_offset * kRowsPerTask;
int const task_rows = kN - row0 < kRowsPerTask ? kN - row0 : kRowsPerTask;
static_assert(kRing >= 2, "a ring of two chunks at least");
static_assert(kChunk == 128 || kChunk == 256 || kChunk == 512, "a line is 1, 2 or 4 scale blocks (8, 16 or 32 lanes' copies)");
static_assert(kK % 512 == 0 && kKBlocks * 128 == kK, "K quarters of whole scale blocks");
constexpr int kLanesPerLine = kChunk / 16;  // 16 bytes (16 e4m3) a lane
constexpr int kLineBytes = kChunk;
constexpr int kLinesPerCopy = 32 / kLanesPerLine;
constexpr int kCopies = (kLines + kLinesPerCopy - 1) / kLinesPerCopy;
constexpr int kWarpBytes = kLines * kLineBytes;  // a warp's bytes of a slot
// The weight scales' first row block for this task, and the blocks it stages (fewer past the
// last block of W).
int const rb0 = row0 / 128;
int const rb_count = min(kScaleRowBlocks, (kN + 127) / 128 - rb0);

uint64_t const policy = mpkc::l2_evict_first_policy();
int const k_warp = warp * (kK / 4);
int const copy_line = lane / kLanesPerLine;
int const copy_unit = lane % kLanesPerLine;
uint8_t const *const w_bytes = reinterpret_cast<uint8_t const *>(W);
uint8_t const *const x_bytes = reinterpret_cast<uint8_t const *>(x);

auto warp_slot = [&](int slot) { return s_ring + (slot * 4 + warp) * kWarpBytes; };
auto at = [](int line, int unit) { return line * kLineBytes + ((unit ^ ((line & 1) << 2)) << 4); };

// Copies chunk `c` (empty past the last: the commit count stays exact) into `slot`.
auto issue = [&](int c, int slot) {
  if (c < kChunks) {
    char *const d = warp_slot(slot);
    int const k = k_warp + c * kChunk + copy_unit * 16;
    #pragma unroll
    for (int i = 0; i < kCopies; ++i) {
      int const line = i * kLinesPerCopy + copy_line;
      if (line < kRowsPerTask) {
        if (line < task_rows) {
          mpkc::cp_async_weight16(d + at(line, copy_unit), w_bytes + (static_cast<int64_t>(row0 + line) * kK + k), policy);
        }
      } else if (line < kLines) {
        int const token = line - kRowsPerTask;
        mpkc::cp_async_activation16(d + at(line, copy_unit), x_bytes + (static_cast<int64_t>(token) * kK + k));
      }
    }
  }
  mpkc::cp_async_commit();
};

// The lines this lane's fragments read (rows g and g + 8 of each tile, token g of each token
// tile, past the last row or token the last one), and the tokens of its sums (2 t, 2 t + 1 of
// each token tile, likewise).
int lo_line[kTiles], hi_line[kTiles], x_line[kNTiles], tok0[kNTiles], tok1[kNTiles];
#pragma unroll
for (int i = 0; i < kTiles; ++i) {
  lo_line[i] = min(i * 16 + g, task_rows - 1);
  hi_line[i] = min(i * 16 + g + 8, task_rows - 1);
}
#pragma unroll
for (int j = 0; j < kNTiles; ++j) {
  x_line[j] = kRowsPerTask + min(j * 8 + g, kRows - 1);
  tok0[j] = min(j * 8 + 2 * t, kRows - 1);
  tok1[j] = min(j * 8 + 2 * t + 1, kRows - 1);
}

float acc[kTiles][kNTiles][4];
#pragma unroll
for (int i = 0; i < kTiles; ++i) {
  #pragma unroll
  for (int j = 0; j < kNTiles; ++j) {
    #pragma unroll
    for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;
  }
}

// Chunk c in `slot`: scale block after scale block, two k-blocks each.
auto compute = [&](int c, int slot) {
  char const *const d = warp_slot(slot);
  #pragma unroll
  for (int sb = 0; sb < kChunk / 128; ++sb) {
    int const kb = (k_warp + c * kChunk) / 128 + sb;
    uint4 xv[kNTiles][2];
    #pragma unroll
    for (int j = 0; j < kNTiles; ++j) {
      #pragma unroll
      for (int h = 0; h < 2; ++h) xv[j][h] = *reinterpret_cast<uint4 const *>(d + at(x_line[j], 4 * (2 * sb + h) + t));
    }
    #pragma unroll
    for (int i = 0; i < kTiles; ++i) {
      uint4 lo[2], hi[2];
      #pragma unroll
      for (int h = 0; h < 2; ++h) {
        lo[h] = *reinterpret_cast<uint4 const *>(d + at(lo_line[i], 4 * (2 * sb + h) + t));  // row g
        hi[h] = *reinterpret_cast<uint4 const *>(d + at(hi_line[i], 4 * (2 * sb + h) + t));  // row g + 8
      }
      float const ws_lo = s_ws[((row0 + lo_line[i]) / 128 - rb0) * kKBlocks + kb];
      float const ws_hi = s_ws[((row0 + hi_line[i]) / 128 - rb0) * kKBlocks + kb];
      #pragma unroll
      for (int j = 0; j < kNTiles; ++j) {
        float p[4] = {0.f, 0.f, 0.f, 0.f};
        #pragma unroll
        for (int h = 0; h < 2; ++h) {
          mpkc::mma_e4m3_m16n8k32(p, lo[h].x, hi[h].x, lo[h].y, hi[h].y, xv[j][h].x, xv[j][h].y);  // step 0
          mpkc::mma_e4m3_m16n8k32(p, lo[h].z, hi[h].z, lo[h].w, hi[h].w, xv[j][h].z, xv[j][h].w);  // step 1
        }
        float const xs0 = s_xs[tok0[j] * kKBlocks + kb];
        float const xs1 = s_xs[tok1[j] * kKBlocks + kb];
        // p[e] is row g + 8 (e / 2), token 2 t + e % 2 of the tile pair.
        acc[i][j][0] = fmaf(p[0], ws_lo * xs0, acc[i][j][0]);
        acc[i][j][1] = fmaf(p[1], ws_lo * xs1, acc[i][j][1]);
        acc[i][j][2] = fmaf(p[2], ws_hi * xs0, acc[i][j][2]);
        acc[i][j][3] = fmaf(p[3], ws_hi * xs1, acc[i][j][3]);
      }
    }
  }
};

#pragma unroll 1
for (int c = 0; c < kRing - 1; ++c) issue(c, c);
// The scales, while the first chunks are in flight: the weight scales of this task's row blocks
// (a weight: the read-only path), then the tokens' (an activation: through L2).
for (int i = tid; i < rb_count * kKBlocks; i += kConsumerThreads) s_ws[i] = __ldg(W_scale + rb0 * kKBlocks + i);
for (int i = tid; i < kRows * kKBlocks; i += kConsumerThreads) s_xs[i] = __ldcg(x_scale + i);
mpkc::named_barrier_sync(kSyncBarrier, kConsumerThreads);
// Chunk c: wait for it (the kRing - 2 after it may still be in flight) and for the warp's other
// lanes' copies of it (__syncwarp), compute it, then copy chunk c + kRing - 1 into the slot
// chunk c - 1 was read from (every lane of the warp has passed this chunk's __syncwarp).
int slot = 0;  // c % kRing
#pragma unroll 1
for (int c = 0; c < kChunks; ++c) {
  mpkc::cp_async_wait<kRing - 2>();
  __syncwarp();
  compute(c, slot);
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
// The four quarters of every row and token, summed in warp order (the same order every run).
for (int i = tid; i < task_rows * kRows; i += kConsumerThreads) {
  int const r = i % task_rows;
  int const token = i / task_rows;
  float v = 0.f;
  #pragma unroll
  for (int w = 0; w < 4; ++w) v += s_part[(w * kRowsPerTask + r) * kRows + token];
  y[static_cast<int64_t>(token) * kN + row0 + r] = __float2bfloat16_rn(v);
}
