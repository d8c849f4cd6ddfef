// mpkc_tma.cuh — PTX wrappers both pipeline lowerings use (sm_90a and sm_100a): TMA tensor loads,
// mbarrier transaction counts, elect.sync, the tensor-map prefetch and the async-proxy fence.
//
// Shipped with mpkc (stdlib/include/), copied next to the generated files by `mpkc build`.
// Instruction forms follow the PTX ISA (tensor copy, mbarrier chapters); every wrapper is one
// instruction and says which.
#pragma once

#include <cstdint>
#include <cuda.h>

#include "mpkc_prelude.cuh"

namespace mpkc::tma {

/// Shared-memory address of a generic pointer into shared memory.
__device__ __forceinline__ uint32_t smem_u32(void const *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

/// `elect.sync`: true in exactly one lane of the (fully active) warp.
__device__ __forceinline__ bool elect_one() {
  uint32_t pred = 0;
  asm volatile(
      "{\n .reg .pred p;\n elect.sync _|p, 0xffffffff;\n selp.u32 %0, 1, 0, p;\n}"
      : "=r"(pred)::"memory");
  return pred != 0;
}

/// `prefetch.tensormap`: brings a tensor map (in global memory) into the descriptor cache.
__device__ __forceinline__ void prefetch_tensormap(CUtensorMap const *map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

/// `mbarrier.arrive.expect_tx`: one arrival that also expects `bytes` of TMA transactions.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t *bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)), "r"(bytes)
               : "memory");
}

/// `cp.async.bulk.tensor.3d` global → shared with an L2 cache hint; completes `bar`'s transaction
/// count by the box's bytes.
__device__ __forceinline__ void tma_load_3d(void *dst, CUtensorMap const *map, uint64_t *bar, int c0, int c1, int c2,
                                            uint64_t cache_policy) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
      " [%0], [%1, {%2, %3, %4}], [%5], %6;" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(smem_u32(bar)), "l"(cache_policy)
      : "memory");
}

/// `fence.proxy.async.shared::cta`: makes generic-proxy SMEM writes visible to the async proxy
/// (TMA, tcgen05.cp, tcgen05.mma operand reads).
__device__ __forceinline__ void fence_proxy_async_smem() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

/// `fence.proxy.async.global`: orders generic-proxy accesses to global memory before (in this
/// thread, or ordered before it by a synchronization it observed) against its later async-proxy
/// accesses (TMA loads), and the reverse (PTX ISA 9.0, §8.6 "Proxies", "membar/fence").
__device__ __forceinline__ void fence_proxy_async_global() { asm volatile("fence.proxy.async.global;" ::: "memory"); }

}  // namespace mpkc::tma
