// mpkc_ring.cuh — the two ends of a consumer ring (docs/language.md, "Consumer rings"): a
// consumer family's SMEM ring that the loader warp's body fills with TMA bulk copies
// (`cp.async.bulk`, no tensor map) and the consumer warpgroup's body drains.
//
// Shipped with mpkc (stdlib/include/), copied next to the generated files by `mpkc build`. The
// generated kernel builds one RingProducer (loader) and one RingConsumer (consumer) per ring,
// over the ring's planned slots and its op ordinals (`SEM_<RING>_FULL`, `SEM_<RING>_EMPTY`): the
// bodies never see an ordinal, a parity or an expect_tx count. Conventions (I-M7, channel.cuh):
// use i of a ring of D slots is slot i % D; the producer waits the slot's empty barrier from
// phase 1 (a fresh ring's first D waits pass), the consumer its full barrier from phase 0. The
// full barriers count 1 (the producer's arrive.expect_tx; the copies complete the transaction
// count), the empty barriers 128 (every consumer thread, I-M2).
#pragma once

#include <cstdint>

#include "mpkc_prelude.cuh"

namespace mpkc::ring {

/// Bytes a bulk copy moves in whole units of, and the alignment of its source and destination
/// (PTX ISA 9.0, `cp.async.bulk`: 16).
constexpr uint32_t kBulkAlign = 16;

/// `cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes`: copies `bytes`
/// (a multiple of 16) from global `src` to shared `dst` (both 16-byte aligned) through the TMA
/// unit, completing that many bytes of `bar`'s transaction count. The CTA's own shared address
/// is a valid shared::cluster address (a CTA is a cluster of one).
__device__ __forceinline__ void bulk_copy_g2s(void *dst, void const *src, uint32_t bytes, uint64_t *bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
          mpkc::rt::smem_u32(dst)),
      "l"(src), "r"(bytes), "r"(mpkc::rt::smem_u32(bar))
      : "memory");
}

/// `mbarrier.arrive.expect_tx`: one arrival that also expects `bytes` of transactions.
__device__ __forceinline__ void arrive_expect_tx(uint64_t *bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;" ::"r"(mpkc::rt::smem_u32(bar)),
               "r"(bytes)
               : "memory");
}

/// `fence.proxy.async.shared::cta`: orders this thread's (or, through the synchronisation it
/// observed, earlier tasks') generic-proxy SMEM accesses before its later async-proxy ones.
__device__ __forceinline__ void fence_proxy_async_smem() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

/// `fence.proxy.async.global`: the same for global memory (PTX ISA 9.0, §8.6 "Proxies").
__device__ __forceinline__ void fence_proxy_async_global() { asm volatile("fence.proxy.async.global;" ::: "memory"); }

#ifdef MPKC_BOUNDED_WAITS
/// Test builds: a bulk copy the hardware would reject or that breaks the slot (I-M6) traps with
/// the ring's name instead of corrupting memory or hanging.
__device__ __noinline__ void report_bad_copy(char const *ring, int use, uint32_t offset, uint32_t bytes,
                                             uint32_t slot_bytes, void const *src) {
  printf("mpkc: ring `%s` use %d: a bulk copy of %u bytes at slot offset %u (slot %u bytes, source %p) is not "
         "16-byte aligned or overruns the slot\n",
         ring, use, bytes, offset, slot_bytes, src);
  __trap();
}
#endif

/// What both ends of a ring hold: its barriers, its slots and its cursor (the generated kernel
/// initialises the first six members; `use` starts at 0).
struct RingState {
  uint64_t *full;          // full barrier of slot 0; slot s at full + s
  uint64_t *empty;         // empty barrier of slot 0
  char *slot0;             // slot 0's SMEM; slot s at slot0 + s * slot_bytes (or slots[s])
  char *const *slots;      // a region per slot, or nullptr (one region cut into the slots)
  uint32_t slot_bytes;     // bytes of one slot
  char const *name;        // the ring, for test builds' reports
  int use = 0;             // uses begun

  /// Slot `s`'s SMEM.
  __device__ char *slot(int s) const { return slots != nullptr ? slots[s] : slot0 + s * slot_bytes; }
};

/// The loader's end of a ring: one thread (the loader warp's lane 0, where the loader body runs).
template <int kDepth>
struct RingProducer : RingState {

  /// Begins the next use: waits its slot free (phase parity from 1), arms the slot's full
  /// barrier with `bytes` of expected transactions (the sum of this use's `copy` sizes, I-M6),
  /// and returns the slot's SMEM.
  ///
  /// The consumer threads read the slot's previous use with generic loads and freed it with a
  /// release arrive; the bulk copies about to overwrite it write in the async proxy. PTX ISA 9.0
  /// §8.6 ("Proxies"): accesses to one location through two proxies need a proxy fence on the
  /// causality path between them; the writer fences here, after the acquire that ordered every
  /// reader before it (as the loader does once for the pages it acquires).
  __device__ char *acquire(uint32_t bytes) {
    int const s = use % kDepth;
    mpkc::rt::mbar_wait(&empty[s], static_cast<uint32_t>(((use / kDepth) & 1) ^ 1), name, s);
    if (use >= kDepth) fence_proxy_async_smem();
#ifdef MPKC_BOUNDED_WAITS
    if (bytes > slot_bytes || bytes % kBulkAlign != 0) report_bad_copy(name, use, 0, bytes, slot_bytes, nullptr);
#endif
    arrive_expect_tx(&full[s], bytes);
    return slot(s);
  }

  /// One bulk copy of the acquired use: `bytes` from `src` to the slot at byte `offset`.
  __device__ void copy(uint32_t offset, void const *src, uint32_t bytes) {
    int const s = use % kDepth;
#ifdef MPKC_BOUNDED_WAITS
    if (offset % kBulkAlign != 0 || bytes % kBulkAlign != 0 || offset + bytes > slot_bytes ||
        reinterpret_cast<uintptr_t>(src) % kBulkAlign != 0)
      report_bad_copy(name, use, offset, bytes, slot_bytes, src);
#endif
    bulk_copy_g2s(slot(s) + offset, src, bytes, &full[s]);
  }

  /// Ends the use begun by `acquire`.
  __device__ void commit() { ++use; }

  /// One use of one copy: `acquire(bytes)`, `copy(0, src, bytes)`, `commit()`.
  __device__ void load(void const *src, uint32_t bytes) {
    acquire(bytes);
    copy(0, src, bytes);
    commit();
  }
};

/// The consumer's end of a ring: every thread of the consumer warpgroup runs the same uses.
template <int kDepth>
struct RingConsumer : RingState {
  /// Waits the next use's bulk copies (phase parity from 0) and returns its slot.
  __device__ char const *wait() {
    int const s = use % kDepth;
    mpkc::rt::mbar_wait(&full[s], static_cast<uint32_t>((use / kDepth) & 1), name, s);
    return slot(s);
  }

  /// Frees the slot of the use `wait` returned: this thread's arrival (all 128 free it, I-M2).
  /// The producer fences the proxies before it overwrites the slot (`RingProducer::acquire`).
  __device__ void release() {
    mpkc::rt::mbar_arrive(&empty[use % kDepth]);
    ++use;
  }
};

}  // namespace mpkc::ring
