// mpkc_sm100.cuh — PTX wrappers for the sm_100a pipeline family: tcgen05 (TMEM alloc, MMA,
// scale copy, commit, load, fences); TMA and elect.sync come from mpkc_tma.cuh.
//
// Shipped with mpkc (stdlib/include/), copied next to the generated files by `mpkc build`.
// Instruction forms follow the PTX ISA (tensor copy, mbarrier, tcgen05 chapters); every
// wrapper is one instruction and says which.
#pragma once

#include <cstdint>
#include <cuda.h>

#include "mpkc_prelude.cuh"
#include "mpkc_tma.cuh"

namespace mpkc::sm100 {

using mpkc::tma::elect_one;
using mpkc::tma::fence_proxy_async_global;
using mpkc::tma::fence_proxy_async_smem;
using mpkc::tma::mbar_arrive_expect_tx;
using mpkc::tma::prefetch_tensormap;
using mpkc::tma::smem_u32;
using mpkc::tma::tma_load_3d;

/// `tcgen05.alloc`: the whole warp allocates `ncols` TMEM columns; the address is written to
/// `*dst_smem`.
__device__ __forceinline__ void tmem_alloc(uint32_t *dst_smem, uint32_t ncols) {
  asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;" ::"r"(smem_u32(dst_smem)), "r"(ncols)
               : "memory");
}

/// `tcgen05.dealloc`: the allocating warp frees the columns at `taddr`.
__device__ __forceinline__ void tmem_dealloc(uint32_t taddr, uint32_t ncols) {
  asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;" ::"r"(taddr), "r"(ncols) : "memory");
}

/// `tcgen05.fence::before_thread_sync`: orders prior tcgen05 ops before a thread sync.
__device__ __forceinline__ void tcgen05_fence_before() {
  asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");
}

/// `tcgen05.fence::after_thread_sync`: orders later tcgen05 ops after a thread sync (I-T3).
__device__ __forceinline__ void tcgen05_fence_after() {
  asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
}

/// `tcgen05.mma.cta_group::1.kind::f16`: D[tmem] (+)= A[smem desc] x B[smem desc]^T.
__device__ __forceinline__ void mma_f16(uint32_t d_tmem, uint64_t a_desc, uint64_t b_desc, uint32_t idesc,
                                        bool accumulate) {
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %4, 0;\n"
      " tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, p;\n}" ::"r"(d_tmem),
      "l"(a_desc), "l"(b_desc), "r"(idesc), "r"(static_cast<uint32_t>(accumulate))
      : "memory");
}

/// `tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale`: D[tmem] (+)= (A x SFA) x (B x SFB)^T with
/// e4m3 operands and UE8M0 scale factors read from TMEM (one per 32 K elements per row).
__device__ __forceinline__ void mma_mxf8f6f4_block_scale(uint32_t d_tmem, uint64_t a_desc, uint64_t b_desc, uint32_t idesc,
                                                         uint32_t sfa_tmem, uint32_t sfb_tmem, bool accumulate) {
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %6, 0;\n"
      " tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale [%0], %1, %2, %3, [%4], [%5], p;\n}" ::"r"(d_tmem),
      "l"(a_desc), "l"(b_desc), "r"(idesc), "r"(sfa_tmem), "r"(sfb_tmem), "r"(static_cast<uint32_t>(accumulate))
      : "memory");
}

/// `tcgen05.cp.cta_group::1.32x128b.warpx4`: 32 rows of 16 bytes from SMEM (matrix descriptor) to
/// 4 TMEM columns of each of the four 32-lane quarters (the scale-factor copy, "UTCCP").
__device__ __forceinline__ void tmem_cp_32x128b_warpx4(uint32_t taddr, uint64_t s_desc) {
  asm volatile("tcgen05.cp.cta_group::1.32x128b.warpx4 [%0], %1;" ::"r"(taddr), "l"(s_desc) : "memory");
}

/// `tcgen05.commit`: one arrival on `bar` when all prior tcgen05 ops of this thread complete.
__device__ __forceinline__ void mma_commit(uint64_t *bar) {
  asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];" ::"r"(smem_u32(bar))
               : "memory");
}

/// `tcgen05.ld.32x32b.x16`: 16 consecutive 32-bit TMEM columns of this thread's lane.
__device__ __forceinline__ void tmem_ld_32x32b_x16(uint32_t taddr, uint32_t (&r)[16]) {
  asm volatile(
      "tcgen05.ld.sync.aligned.32x32b.x16.b32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
      "[%16];"
      : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]), "=r"(r[6]), "=r"(r[7]), "=r"(r[8]),
        "=r"(r[9]), "=r"(r[10]), "=r"(r[11]), "=r"(r[12]), "=r"(r[13]), "=r"(r[14]), "=r"(r[15])
      : "r"(taddr)
      : "memory");
}

/// `tcgen05.ld.32x32b.x8`: 8 consecutive 32-bit TMEM columns of this thread's lane.
__device__ __forceinline__ void tmem_ld_32x32b_x8(uint32_t taddr, uint32_t (&r)[8]) {
  asm volatile("tcgen05.ld.sync.aligned.32x32b.x8.b32 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]), "=r"(r[6]), "=r"(r[7])
               : "r"(taddr)
               : "memory");
}

/// `tcgen05.wait::ld`: the thread's TMEM loads have landed in registers (I-T3).
__device__ __forceinline__ void tmem_wait_ld() { asm volatile("tcgen05.wait::ld.sync.aligned;" ::: "memory"); }

}  // namespace mpkc::sm100
