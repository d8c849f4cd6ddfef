// gemv_mma: y[t, n] = sum_k x[t, k] * W[n, k] for this task's rows of W with warp tensor-core
// MMAs (mma.sync m16n8k16, bf16 in, f32 accumulation), bf16 out. The task's rows are kTiles
// tiles of 16 (the MMA's A, rows past the task's last are never read: their sums are dropped),
// the tokens kNTiles tiles of 8 (its B, the same for tokens past kRows). Warp w takes the K
// quarter [w * kK / 4, (w + 1) * kK / 4) of every row, in k-blocks of 32: lane (g, t) = (lane / 4,
// lane % 4) holds the 16 bytes at k = 32 * block + 8 * t of weight rows 16 * i + g and
// 16 * i + g + 8 of each tile i, and of tokens 8 * j + g of each token tile j. An MMA's k order
// is free as long as A and B follow the same one: its step s (0, 1) of a k-block takes elements
// 4s .. 4s + 3 of each lane's vectors, so every operand register is a 32-bit word of a vector
// (A: words 2s and 2s + 1 of rows g and g + 8; B: words 2s and 2s + 1 of token g) and no
// shuffle or ldmatrix is needed. A lane's vectors of kGroup k-blocks are one cp.async commit
// group, copied into its own 16 bytes of each vector of a ring slot in `w_ring`, kRing slots
// deep, so cp.async.wait_group alone orders the ring (as the FMA GEMV's, stdlib/bodies/gemv.cu).
// `W` is a weight (L2 evict-first); `x` is written by an earlier task of the launch: its copies
// read L2 (cp.async.cg). The four warps' sums meet in `partials`, added in warp order.
float *const s_part = reinterpret_cast<float *>(buf.partials);
char *const s_ring = reinterpret_cast<char *>(buf.w_ring);
int const tid = static_cast<int>(threadIdx.x);
int const warp = tid >> 5;
int const lane = tid & 31;
int const g = lane >> 2;  // the fragment row (a weight row) and column (a token)
int const t = lane & 3;   // the lane in its group of four
int const row0 = task_offset * kRowsPerTask;
int const task_rows = kN - row0 < kRowsPerTask ? kN - row0 : kRowsPerTask;
static_assert(kRing >= 2, "a ring of two groups at least");
static_assert(kBlocks % kGroup == 0, "a group is whole k-blocks of the warp's K quarter");
constexpr int kGroups = kBlocks / kGroup;
constexpr int kQuarter = kK / 4;

uint64_t const policy = mpkc::l2_evict_first_policy();
// This lane's first element of k-block 0 of its warp's quarter.
int const k_lane = warp * kQuarter + t * 8;

// Vector v of k-block b in a slot: v < kNTiles is token tile v's, then rows g and g + 8 of each
// row tile; this thread's 16 bytes of it at slot_base(slot) + (b * kVecs + v) * 2048.
auto slot_base = [&](int slot) { return s_ring + (slot * kGroup * kVecs * kConsumerThreads + tid) * 16; };
auto vec_at = [](int b, int v) { return (b * kVecs + v) * kConsumerThreads * 16; };

// Copies group `grp` (empty past the last: the commit count stays exact) into `slot`.
auto issue = [&](int grp, int slot) {
  if (grp < kGroups) {
    char *const d = slot_base(slot);
    #pragma unroll
    for (int b = 0; b < kGroup; ++b) {
      int const k = k_lane + (grp * kGroup + b) * 32;
      #pragma unroll
      for (int j = 0; j < kNTiles; ++j) {
        int const token = j * 8 + g;
        if (token < kRows) mpkc::cp_async_activation16(d + vec_at(b, j), x + (static_cast<int64_t>(token) * kK + k));
      }
      #pragma unroll
      for (int v = 0; v < 2 * kTiles; ++v) {
        int const r = (v >> 1) * 16 + (v & 1) * 8 + g;
        if (r < task_rows) {
          mpkc::cp_async_weight16(d + vec_at(b, kNTiles + v), W + (static_cast<int64_t>(row0 + r) * kK + k), policy);
        }
      }
    }
  }
  mpkc::cp_async_commit();
};

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
  char const *const d = slot_base(slot);
  #pragma unroll
  for (int b = 0; b < kGroup; ++b) {
    uint4 xv[kNTiles];
    #pragma unroll
    for (int j = 0; j < kNTiles; ++j) xv[j] = *reinterpret_cast<uint4 const *>(d + vec_at(b, j));
    #pragma unroll
    for (int i = 0; i < kTiles; ++i) {
      uint4 const lo = *reinterpret_cast<uint4 const *>(d + vec_at(b, kNTiles + 2 * i));      // row g
      uint4 const hi = *reinterpret_cast<uint4 const *>(d + vec_at(b, kNTiles + 2 * i + 1));  // row g + 8
      #pragma unroll
      for (int j = 0; j < kNTiles; ++j) {
        mpkc::mma_bf16_m16n8k16(acc[i][j], lo.x, hi.x, lo.y, hi.y, xv[j].x, xv[j].y);  // step 0
        mpkc::mma_bf16_m16n8k16(acc[i][j], lo.z, hi.z, lo.w, hi.w, xv[j].z, xv[j].w);  // step 1
      }
    }
  }
};

#pragma unroll 1
for (int grp = 0; grp < kRing - 1; ++grp) issue(grp, grp);
// Group grp: wait for it (the kRing - 2 after it may still be in flight), compute it, then copy
// group grp + kRing - 1 into the slot group grp - 1 was read from.
int slot = 0;  // grp % kRing
#pragma unroll 1
for (int grp = 0; grp < kGroups; ++grp) {
  mpkc::cp_async_wait<kRing - 2>();
  compute(slot);
  issue(grp + kRing - 1, slot == 0 ? kRing - 1 : slot - 1);
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
