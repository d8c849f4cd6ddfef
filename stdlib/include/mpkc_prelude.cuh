// mpkc_prelude.cuh — device helpers shared by every kernel mpkc generates.
//
// Shipped with mpkc (stdlib/include/), copied next to the generated files by `mpkc build`.
// Only PTX wrappers and small utilities live here; everything a task owns (regions, ordinals,
// roles) is generated from its contract. Inside the MPK tree define MPKC_IN_MPK so that the
// runtime surface (TaskDesc, RuntimeConfig, RuntimeSMEM, page and dependency hooks) comes from
// MPK's own headers; standalone builds and mpkc's harness take it from mpkc_runtime.cuh.
#pragma once

#include <cstdint>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#ifndef MPKC_IN_MPK
#include "mpkc_runtime.cuh"
#endif

namespace mpkc {

// ---------------------------------------------------------------------------------------------
// Hardware barriers. Id 0 is the block-wide barrier and id 8 the runtime's consumer page claim
// (contract doc §3.4); task bodies use the ids their contract declares.
// ---------------------------------------------------------------------------------------------

/// `bar.sync id, threads`: the calling warps wait until `threads` threads arrived at barrier `id`.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

/// The in-op grid barrier of a grid-wide task (contract doc §5, I-H4), called by the `threads`
/// consumer threads of every task of the op (one per worker) at the same site: each thread fences
/// its global writes (`__threadfence`), the warpgroup gathers on named barrier `bar`, thread 0 adds
/// 1 to `*counter` (`red.release.gpu`) and waits until it reaches `need` (`ld.acquire.gpu`), and the
/// warpgroup gathers again, so every thread then sees what every task wrote before the barrier.
/// `need` is `num_tasks * (iter_num + 1)`: the counter is monotonic, seeded zero at step 0 only
/// (skip_after_step0) and never reset. A test build (MPKC_BOUNDED_WAITS) traps after
/// MPKC_WAIT_TIMEOUT_NS instead of hanging, naming the counter's count and `need`.
__device__ __forceinline__ void grid_barrier(unsigned long long *counter, unsigned long long need, int bar,
                                             int threads) {
  __threadfence();
  named_barrier_sync(bar, threads);
  if (threadIdx.x == 0) {
    asm volatile("red.release.gpu.global.add.u64 [%0], 1;" ::"l"(counter) : "memory");
    unsigned long long seen;
#ifdef MPKC_BOUNDED_WAITS
    uint64_t const t0 = mpkc::rt::globaltimer();
#endif
    do {
      asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(seen) : "l"(counter) : "memory");
#ifdef MPKC_BOUNDED_WAITS
      if (seen < need && mpkc::rt::globaltimer() - t0 > MPKC_WAIT_TIMEOUT_NS) {
        printf("mpkc: hang: CTA %d grid barrier at %p: %llu of %llu arrivals after %llu ms\n",
               static_cast<int>(blockIdx.x), static_cast<void *>(counter), seen, need,
               static_cast<unsigned long long>(MPKC_WAIT_TIMEOUT_NS / 1000000ull));
        __trap();
      }
#endif
    } while (seen < need);
  }
  named_barrier_sync(bar, threads);
}

/// `atom.acq_rel.gpu.global.add.s32`: adds `v` to `*p` and returns the old value, with release
/// semantics (the stores ordered before it, this CTA's included through a barrier, are visible
/// to whoever acquires the new value) and acquire semantics (what the releasers of the old
/// value published is visible after it). PTX ISA, "atom" and "Memory Consistency Model".
__device__ __forceinline__ int atomic_add_acq_rel_gpu(int *p, int v) {
  int old;
  asm volatile("atom.acq_rel.gpu.global.add.s32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}

/// Named barrier `id` over `threads` threads that also reduces a predicate: true in every thread
/// when any thread passed `p` true (`bar.red.or.pred`, PTX ISA "bar.red"; memory ordering as
/// `bar.sync`).
__device__ __forceinline__ bool named_barrier_or(int id, int threads, bool p) {
  uint32_t r;
  asm volatile(
      "{\n .reg .pred a, b;\n setp.ne.u32 a, %1, 0;\n bar.red.or.pred b, %2, %3, a;\n selp.u32 %0, 1, 0, b;\n}"
      : "=r"(r)
      : "r"(static_cast<uint32_t>(p)), "r"(id), "r"(threads)
      : "memory");
  return r != 0;
}

/// The token count of this step, for a task whose count is decided at run time (`param m: int in
/// 1..=MAX = runtime`, docs/runtime-m.md): where MPK's runtime keeps it,
/// `runtime_config.qo_indptr_buffer[MPK_MAX_NUM_BATCHED_REQUESTS]` (the last token offset, written
/// by prepare_next_batch and read the same way by MPK's own tasks, e.g. silu_mul_v2), clamped to
/// [0, max_tokens]: the compile-time maximum the task's buffers and tensor maps hold. A count past
/// the maximum runs the maximum instead of reading or writing past the buffers.
__device__ __forceinline__ int runtime_tokens(RuntimeConfig const &runtime_config, int max_tokens) {
  int const m = runtime_config.qo_indptr_buffer[MPK_MAX_NUM_BATCHED_REQUESTS];
  return m < 0 ? 0 : (m > max_tokens ? max_tokens : m);
}

/// One request's pages of a paged KV cache (`paged(page P, max_context C, requests R)`,
/// docs/language.md, "Paged KV caches"), as MPK's runtime states them.
struct PagedKvRequest {
  /// The request's page ids, in token order: token t lies in page pages[t / P], row t % P.
  int const *pages;
  /// Pages the request holds, at most ceil(C / P).
  int num_pages;
  /// Tokens of context, 0..=C: (num_pages - 1) * P + the last page's tokens.
  int context;
};

/// Request `request`'s pages, read where MPK's runtime writes them: `paged_kv_indptr_buffer` and
/// `paged_kv_last_page_len_buffer` of the runtime configuration, the context computed as MPK's
/// own MLA decode task computes it (`register_mla_decode_sm100_task`, task_register.cc at
/// upstream de8745d9: (last - first - 1) * MPK_PAGE_SIZE + last_page_len). The count is clamped to
/// the contract's `max_context` so that a body never reads past the pool it was built for.
__device__ __forceinline__ PagedKvRequest paged_kv_request(RuntimeConfig const &runtime_config, int request,
                                                           int page_tokens, int max_context) {
  int const first = runtime_config.paged_kv_indptr_buffer[request];
  int const last = runtime_config.paged_kv_indptr_buffer[request + 1];
  int const max_pages = (max_context + page_tokens - 1) / page_tokens;
  PagedKvRequest r{runtime_config.paged_kv_indices_buffer + first, last - first, 0};
  if (r.num_pages <= 0) {
    r.num_pages = 0;
    return r;
  }
  int last_len = runtime_config.paged_kv_last_page_len_buffer[request];
  last_len = last_len < 1 ? 1 : (last_len > page_tokens ? page_tokens : last_len);
  if (r.num_pages > max_pages) {
    r.num_pages = max_pages;
    last_len = page_tokens;
  }
  int const context = (r.num_pages - 1) * page_tokens + last_len;
  r.context = context > max_context ? max_context : context;
  return r;
}

/// Lane index within the warp.
__device__ __forceinline__ int lane_id() { return static_cast<int>(threadIdx.x & 31u); }

/// Warp index within the block.
__device__ __forceinline__ int warp_id() { return static_cast<int>(threadIdx.x >> 5); }

// ---------------------------------------------------------------------------------------------
// Warp reductions.
// ---------------------------------------------------------------------------------------------

/// Sum of `v` over the 32 lanes of the warp, returned to every lane.
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

/// Whether candidate (`v`, `i`) beats the best so far (`b`, `bi`): a larger value, or an equal
/// one at a lower index (so that a run of -inf still keeps its first index, not the start's).
/// `Index` is int64_t for global indices, int for offsets in a chunk (a 32-bit compare).
template <typename Index>
__device__ __forceinline__ bool argmax_takes(float v, Index i, float b, Index bi) {
  return v > b || (v == b && i < bi);
}

/// Arg-max over the warp with ties broken towards the lower index; every lane gets the winner.
__device__ __forceinline__ void warp_argmax(float &v, int64_t &i) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    float const ov = __shfl_xor_sync(0xffffffffu, v, o);
    int64_t const oi = __shfl_xor_sync(0xffffffffu, i, o);
    if (argmax_takes(ov, oi, v, i)) {
      v = ov;
      i = oi;
    }
  }
}

/// Arg-max of each row of a batch of `kBatch` rows across `kThreads` threads (kThreads / 32
/// warps): `best[r]`, `best_i[r]` hold this thread's candidate for row r. Each warp's winners
/// meet in `s_val` / `s_idx` (kBatch x warps entries, row r's at r x warps + warp); thread r
/// picks row r's winner into `v`, `i` and returns true when r < kBatch and r < `rows` (the rows
/// the batch holds). Two named barriers `bar`: after the warps' winners are written, and after
/// the pickers read them (the next batch rewrites `s_val` / `s_idx`). Every thread calls it.
template <int kBatch, int kThreads>
__device__ __forceinline__ bool batch_argmax(float (&best)[kBatch], int64_t (&best_i)[kBatch], __nv_bfloat16 *s_val,
                                             int64_t *s_idx, int rows, int bar, float &v, int64_t &i) {
  constexpr int kWarps = kThreads / 32;
  int const tid = static_cast<int>(threadIdx.x);
  int const warp = tid >> 5;
#pragma unroll
  for (int r = 0; r < kBatch; ++r) {
    warp_argmax(best[r], best_i[r]);
    if ((tid & 31) == 0) {
      s_val[r * kWarps + warp] = __float2bfloat16_rn(best[r]);
      s_idx[r * kWarps + warp] = best_i[r];
    }
  }
  named_barrier_sync(bar, kThreads);
  bool const picks = tid < kBatch && tid < rows;
  if (picks) {
    v = __bfloat162float(s_val[tid * kWarps]);
    i = s_idx[tid * kWarps];
    for (int w2 = 1; w2 < kWarps; ++w2) {
      float const wv = __bfloat162float(s_val[tid * kWarps + w2]);
      int64_t const wi = s_idx[tid * kWarps + w2];
      if (argmax_takes(wv, wi, v, i)) {
        v = wv;
        i = wi;
      }
    }
  }
  named_barrier_sync(bar, kThreads);
  return picks;
}

// ---------------------------------------------------------------------------------------------
// Pages.
// ---------------------------------------------------------------------------------------------

/// The physical pages the task's SMEM regions lie on, as a mask (bit p = page p, p < 14),
/// returned to every lane; the whole warp calls it. Lane r reads region r (a task has at most
/// 16) and the warp ORs their page ranges: one shared-memory load and one `redux.sync`. It is
/// `task_uses_page(td, p)` for all 14 pages at once: releases and waits iterate physical pages,
/// not regions (I-P3). A lane looping over the regions itself, as `task_uses_page` does, is a
/// dependent chain of shared loads and divergent branches that took about 1,900 cycles (1 us)
/// per call on the H200 (`mpkc bench --fixed-cost`, 2026-12-01), on the critical path of every
/// task where it follows a wait.
__device__ __forceinline__ uint32_t used_page_mask(TaskDesc const *td) {
  int const r = lane_id();
  uint32_t bits = 0;
  if (r < td->num_smem_regions) {
    // 32-bit arithmetic: pages are < 14, and a count or start out of range marks no page.
    uint32_t const start = static_cast<uint32_t>(td->smem_regions[r].physical_page_start);
    uint32_t const count = static_cast<uint32_t>(td->smem_regions[r].page_count);
    if (count - 1u < 16u && start < 16u) bits = ((1u << count) - 1u) << start;
  }
  return __reduce_or_sync(0xffffffffu, bits);
}

// ---------------------------------------------------------------------------------------------
// Vector access: 16-byte loads and stores of 8 bf16.
// ---------------------------------------------------------------------------------------------

/// Eight bf16 values, one 16-byte access.
struct alignas(16) Bf16x8 {
  __nv_bfloat162 h[4];
};

/// Loads 8 consecutive bf16 from global memory (16-byte aligned) through the non-coherent
/// read-only path (`__ldg`, `ld.global.nc`). Only for data that no task of the launch writes
/// (model weights): the PTX ISA allows `ld.global.nc` only on data read-only for the whole
/// kernel, and in a persistent launch an activation is written by another task moments before
/// it is read, which this path may not see.
__device__ __forceinline__ Bf16x8 ld_global_nc_v8(__nv_bfloat16 const *p) {
  Bf16x8 r;
  uint4 const v = __ldg(reinterpret_cast<uint4 const *>(p));
  *reinterpret_cast<uint4 *>(&r) = v;
  return r;
}

/// Loads 8 consecutive bf16 from global memory (16-byte aligned) coherently: `__ldcg`
/// (`ld.global.cg`, cached in L2, not in L1), a weak load that the task's dependency wait orders
/// after the producer's stores. For activations and anything else a task of the launch writes.
__device__ __forceinline__ Bf16x8 ld_global_v8(__nv_bfloat16 const *p) {
  Bf16x8 r;
  uint4 const v = __ldcg(reinterpret_cast<uint4 const *>(p));
  *reinterpret_cast<uint4 *>(&r) = v;
  return r;
}

/// An L2 cache policy that evicts first (`createpolicy.fractional.L2::evict_first`, fraction
/// 1.0): for data a step reads once, such as a GEMV's weights (PTX ISA, "createpolicy"). The
/// TMA path's fixed EVICT_FIRST immediate (L2Hint::policy) is CUTLASS's encoding for TMA; the
/// PTX ISA has `cp.async` / `ld` cache hints take a policy that `createpolicy` made.
__device__ __forceinline__ uint64_t l2_evict_first_policy() {
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
}

/// Copies 16 bytes (both 16-byte aligned) of a weight into shared memory asynchronously
/// (`cp.async.cg`: through L2 only, not L1), with the L2 policy `policy`; complete once a
/// `cp_async_wait` covers the commit group it joined (PTX ISA, "cp.async").
///
/// sm_90: the shared address is converted inside the asm. Given the address as base + offset,
/// ptxas 13.0 and 13.5 may fold a uniform base into the copy as `LDGSTS [R+URn], desc[URn+1]`,
/// overwriting the low half of the policy's register pair with the base: a form they emit for
/// sm_100a throughout, and on an H100 an illegal instruction (compute-sanitizer: "Illegal
/// instruction" at this copy, linear_fp8_gemv_mma at K = 512 in its test build, 2026-12-05).
/// The build rejects that form in any sm_90a cubin (driver::sass_lint).
__device__ __forceinline__ void cp_async_weight16(void *smem, void const *gmem, uint64_t policy) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 1000
  asm volatile(
      "{\n .reg .u64 sa;\n .reg .u32 s32;\n cvta.to.shared.u64 sa, %0;\n cvt.u32.u64 s32, sa;\n"
      " cp.async.cg.shared.global.L2::cache_hint [s32], [%1], 16, %2;\n}\n" ::"l"(smem),
      "l"(gmem), "l"(policy)
      : "memory");
#else
  uint32_t const s = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "l"(policy)
               : "memory");
#endif
}

/// Copies 16 bytes (both 16-byte aligned) of an activation into shared memory asynchronously
/// (`cp.async.cg`: read at L2, not through L1, so it sees what another SM's task wrote before
/// this task's dependency wait, as `ld_global_v8` does); complete once a `cp_async_wait` covers
/// the commit group it joined (PTX ISA, "cp.async").
__device__ __forceinline__ void cp_async_activation16(void *smem, void const *gmem) {
  uint32_t const s = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
}

/// Closes this thread's current cp.async commit group (an empty one too).
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

/// Waits until at most `kPending` of this thread's most recent cp.async commit groups are
/// incomplete: every older group's bytes are in shared memory, visible to this thread.
template <int kPending> __device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

/// One warp-wide `mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32`: d[16 x 8] += a[16 x 16]
/// b[16 x 8] in f32. With g = lane / 4 and t = lane % 4 (PTX ISA, "Matrix Fragments for
/// mma.m16n8k16 with floating point type"; CUTLASS's SM80_16x8x16_F32BF16BF16F32_TN layouts):
/// a0 = A[g][2t, 2t+1], a1 = A[g+8][2t, 2t+1], a2 = A[g][2t+8, 2t+9], a3 = A[g+8][2t+8, 2t+9];
/// b0 = B[2t, 2t+1][g], b1 = B[2t+8, 2t+9][g] (a register: two bf16, the lower k in the low
/// half); d[0..1] = D[g][2t, 2t+1], d[2..3] = D[g+8][2t, 2t+1].
__device__ __forceinline__ void mma_bf16_m16n8k16(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                                  uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

/// The f16x2 whose bits are `v` (the low half the first element), and back: a register
/// reinterpreted, no conversion.
__device__ __forceinline__ __half2 bits_to_half2(uint32_t v) {
  __half2 h;
  memcpy(&h, &v, sizeof h);
  return h;
}
__device__ __forceinline__ uint32_t half2_to_bits(__half2 h) {
  uint32_t v;
  memcpy(&v, &h, sizeof v);
  return v;
}

/// The four e4m3 of `v` (its bytes, the lowest first) as two f16x2, `lo` = bytes 0 and 1 (byte 0
/// in the low half), `hi` = bytes 2 and 3: `cvt.rn.f16x2.e4m3x2` per pair (SASS F2FP), exact
/// (every e4m3 value is an f16 value: 3 of f16's 10 mantissa bits, exponents 2^-9 .. 2^8).
__device__ __forceinline__ void e4m3x4_to_f16x2(uint32_t v, __half2 &lo, __half2 &hi) {
  lo = __half2(__nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(v & 0xffffu), __NV_E4M3));
  hi = __half2(__nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(v >> 16), __NV_E4M3));
}

/// One warp-wide `mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32` (sm_89 and later):
/// d[16 x 8] += a[16 x 32] b[32 x 8] in f32, e4m3 operands. With g = lane / 4 and t = lane % 4
/// (PTX ISA, "Matrix Fragments for mma.m16n8k32"; CUTLASS's SM89_16x8x32_F32E4M3E4M3F32_TN
/// layouts), each register four e4m3, the lowest k in the low byte: a0 = A[g][4t .. 4t+3],
/// a1 = A[g+8][4t .. 4t+3], a2 = A[g][16+4t .. 16+4t+3], a3 = A[g+8][16+4t .. 16+4t+3];
/// b0 = B[4t .. 4t+3][g], b1 = B[16+4t .. 16+4t+3][g]; d as `mma_bf16_m16n8k16`'s.
__device__ __forceinline__ void mma_e4m3_m16n8k32(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                                  uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

/// Stores 8 bf16 (16-byte aligned).
__device__ __forceinline__ void st_v8(__nv_bfloat16 *p, Bf16x8 const &v) {
  *reinterpret_cast<uint4 *>(p) = *reinterpret_cast<uint4 const *>(&v);
}

/// Loads `V` consecutive f32 (V = 4: one 16-byte access, `p` 16-byte aligned; V = 1: one
/// 4-byte access) through L2 (`__ldcg`, `ld.global.cg`: another SM wrote them), or zeros where
/// `ok` is false. The split-K sum's partial loads.
template <int V>
__device__ __forceinline__ void ldcg_f32(float (&d)[V], float const *p, bool ok) {
  static_assert(V == 1 || V == 4, "1 or 4 floats per load");
  if constexpr (V == 4) {
    float4 const v = ok ? __ldcg(reinterpret_cast<float4 const *>(p)) : make_float4(0.f, 0.f, 0.f, 0.f);
    d[0] = v.x;
    d[1] = v.y;
    d[2] = v.z;
    d[3] = v.w;
  } else {
    d[0] = ok ? __ldcg(p) : 0.f;
  }
}

/// `red.relaxed.gpu.global.add.f32`: adds `v` to `*p` in L2, without returning the old value
/// (PTX ISA, "red"). The `split_k atomic` epilogue's accumulation; the tile's arrival (a
/// cumulative release after the consumer threads' barrier) orders it before the last split's reads.
__device__ __forceinline__ void red_add_f32(float *p, float v) {
  asm volatile("red.relaxed.gpu.global.add.f32 [%0], %1;" ::"l"(p), "f"(v) : "memory");
}

/// Stores `V` consecutive f32 zeros through L2 (`__stcg`; V = 4: one 16-byte access, `p`
/// 16-byte aligned) where `ok`: the `split_k atomic` accumulator left zero for the next run.
template <int V>
__device__ __forceinline__ void stcg_zero_f32(float *p, bool ok) {
  static_assert(V == 1 || V == 4, "1 or 4 floats per store");
  if (!ok) return;
  if constexpr (V == 4) {
    __stcg(reinterpret_cast<float4 *>(p), make_float4(0.f, 0.f, 0.f, 0.f));
  } else {
    __stcg(p, 0.f);
  }
}

/// Stores `V` f32 values as `V` consecutive bf16 (round to nearest even; V = 4: one 8-byte
/// access, `p` 8-byte aligned).
template <int V>
__device__ __forceinline__ void st_bf16(__nv_bfloat16 *p, float const (&v)[V]) {
  static_assert(V == 1 || V == 4, "1 or 4 values per store");
  if constexpr (V == 4) {
    __nv_bfloat162 const lo = __floats2bfloat162_rn(v[0], v[1]);
    __nv_bfloat162 const hi = __floats2bfloat162_rn(v[2], v[3]);
    uint2 u;
    u.x = *reinterpret_cast<uint32_t const *>(&lo);
    u.y = *reinterpret_cast<uint32_t const *>(&hi);
    *reinterpret_cast<uint2 *>(p) = u;
  } else {
    p[0] = __float2bfloat16_rn(v[0]);
  }
}

}  // namespace mpkc
