// mpkc_sm90.cuh — PTX wrappers for the sm_90a lowering of the pipeline family: the wgmma fences
// and group waits; TMA and elect.sync come from mpkc_tma.cuh. The wgmma.mma_async wrappers
// themselves are generated into each `<unit>_sm90.cuh`, one per instruction shape, since their
// register lists depend on N.
//
// Shipped with mpkc (stdlib/include/), copied next to the generated files by `mpkc build`.
#pragma once

#include <cstdint>

#include "mpkc_prelude.cuh"
#include "mpkc_tma.cuh"

namespace mpkc::sm90 {

using mpkc::tma::elect_one;
using mpkc::tma::fence_proxy_async_global;
using mpkc::tma::fence_proxy_async_smem;
using mpkc::tma::mbar_arrive_expect_tx;
using mpkc::tma::prefetch_tensormap;
using mpkc::tma::smem_u32;
using mpkc::tma::tma_load_3d;

/// `wgmma.fence.sync.aligned`: orders the warpgroup's register accesses before the wgmma that
/// reads or writes them (required before the first wgmma and after registers were touched).
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }

/// `wgmma.commit_group.sync.aligned`: closes the group of wgmma issued so far.
__device__ __forceinline__ void wgmma_commit_group() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }

/// `wgmma.wait_group.sync.aligned N`: waits until at most `N` groups are pending; with 0 every
/// wgmma of the warpgroup completed, its SMEM operands were read and its accumulators written.
template <int N>
__device__ __forceinline__ void wgmma_wait_group() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

/// Keeps the compiler from moving accumulator accesses across a wgmma boundary.
template <int N>
__device__ __forceinline__ void fence_registers(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}

}  // namespace mpkc::sm90
