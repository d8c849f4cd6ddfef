// mpkc_runtime.cuh — the part of MPK's Runtime-V2 that a task may touch (design.md, "The runtime
// surface generated code may touch"), re-stated for standalone builds and for mpkc's harness.
//
// Facts from mpk-v2-contract.md: 14 pages of 16 KB (§1.1); TaskDesc carries up to 16
// SmemPageRegionDesc and smem_region_offset(r) = physical_page_start * 16384 + byte_offset
// (§1.3); RuntimeSMEM holds the 3-slot instruction ring, 14 page mbarriers and 3 x 32 dynamic
// semaphores, index 0 of each slot being SEM_DEP_READY (§2.1); pages are waited with the parity
// of the task's per-SM sequence number and finished exactly once per task (§1.5).
//
// Inside the MPK tree (MPKC_IN_MPK) none of this is compiled: MPK's runtime_header.h and
// runtime_v2.cuh provide the same names.
#pragma once
#ifndef MPKC_IN_MPK

#include <cstdint>
#include <cuda.h>

#ifndef MPKC_MAX_INPUTS
#define MPKC_MAX_INPUTS 8
#endif
#ifndef MPKC_MAX_OUTPUTS
#define MPKC_MAX_OUTPUTS 4
#endif

/// TASK_SMEM_PAGE_SIZE: bytes per page.
constexpr int TASK_SMEM_PAGE_SIZE = 16 * 1024;
/// MAX_SMEM_PAGES_PER_TASK.
constexpr int MAX_SMEM_PAGES_PER_TASK = 14;
/// MAX_SMEM_REGIONS_PER_TASK.
constexpr int MAX_SMEM_REGIONS_PER_TASK = 16;
/// INSTRUCTION_RING_SIZE: tasks in flight per SM.
constexpr int INSTRUCTION_RING_SIZE = 3;
/// MAX_DYNAMIC_SEMAPHORES per ring slot; index 0 is SEM_DEP_READY, op ordinal k is 1 + k.
constexpr int MAX_DYNAMIC_SEMAPHORES = 32;
constexpr int SEM_DEP_READY = 0;
constexpr int SEM_OP_BASE = 1;
/// Role warps that arrive FINISHED per task (W0-W6).
constexpr int NUM_ROLE_WARPS = 7;

/// One planned region as the runtime hands it to the task.
struct SmemPageRegionDesc {
  int physical_page_start;
  int page_count;
  int byte_offset;
};

/// Per-task metadata the runtime fills; task_offset is the task's tile index.
struct TaskMetadata {
  int task_offset;
};

/// The task descriptor (the fields task bodies use, plus the harness's dependency bookkeeping).
struct alignas(16) TaskDesc {
  int task_type;
  int variant_id;
  int num_inputs;
  int num_outputs;
  void *input_ptrs[MPKC_MAX_INPUTS];
  void *output_ptrs[MPKC_MAX_OUTPUTS];
  CUtensorMap const *input_tma_desc_ptrs[MPKC_MAX_INPUTS][3];
  TaskMetadata task_metadata;
  int num_smem_regions;
  SmemPageRegionDesc smem_regions[MAX_SMEM_REGIONS_PER_TASK];
  /// Event this task waits for (-1: none) and how many triggers per iteration complete it.
  int dependent_event;
  int dependent_triggers;
  /// Event this task triggers when it finishes (-1: none).
  int trigger_event;

  /// Byte offset of region r from the dynamic SMEM base.
  __host__ __device__ int smem_region_offset(int r) const {
    return smem_regions[r].physical_page_start * TASK_SMEM_PAGE_SIZE + smem_regions[r].byte_offset;
  }
  /// First physical page of region r.
  __host__ __device__ int smem_region_page(int r) const { return smem_regions[r].physical_page_start; }
};

/// What the runtime passes every role body besides the task.
struct RuntimeConfig {
  /// Monotonic event counters in global memory (zeroed per launch).
  unsigned long long *event_counters;
  /// Decode step counter; step[0] == 0 on the first step.
  int *step;
};

/// The runtime's static shared state of one CTA (contract doc §2.1).
struct RuntimeSMEM {
  uint64_t instruction_mbarriers[2][INSTRUCTION_RING_SIZE];
  uint64_t page_finished[MAX_SMEM_PAGES_PER_TASK];
  uint64_t dynamic_semaphores[INSTRUCTION_RING_SIZE][MAX_DYNAMIC_SEMAPHORES];
};

namespace mpkc::rt {

__device__ __forceinline__ uint32_t smem_u32(void const *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

/// mbarrier.init with `count` arrivals per phase.
__device__ __forceinline__ void mbar_init(uint64_t *bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}

/// Makes prior mbarrier.init visible (I-M2).
__device__ __forceinline__ void fence_mbar_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

/// One arrival (release, CTA scope).
__device__ __forceinline__ void mbar_arrive(uint64_t *bar) {
  asm volatile("{\n .reg .b64 st;\n mbarrier.arrive.shared::cta.b64 st, [%0];\n}" ::"r"(smem_u32(bar)) : "memory");
}

/// Non-blocking test of phase `parity`.
__device__ __forceinline__ bool mbar_try_wait(uint64_t *bar, uint32_t parity) {
  uint32_t ok;
  asm volatile(
      "{\n .reg .pred p;\n mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [%1], %2, 0x989680;\n"
      " selp.u32 %0, 1, 0, p;\n}"
      : "=r"(ok)
      : "r"(smem_u32(bar)), "r"(parity)
      : "memory");
  return ok != 0;
}

#ifdef MPKC_BOUNDED_WAITS
/// Test builds: how many suspend-hinted polls before a wait is declared hung.
#ifndef MPKC_WAIT_LIMIT
#define MPKC_WAIT_LIMIT (1u << 22)
#endif
#endif

/// Waits until the phase with `parity` completed. In test builds (MPKC_BOUNDED_WAITS) the wait
/// is bounded and traps with a message naming the barrier.
__device__ __forceinline__ void mbar_wait(uint64_t *bar, uint32_t parity, char const *what, int index) {
#ifdef MPKC_BOUNDED_WAITS
  for (uint32_t i = 0; !mbar_try_wait(bar, parity); ++i) {
    if (i == MPKC_WAIT_LIMIT) {
      printf("mpkc: wait on %s[%d] (parity %u) never completed: block %d warp %d\n", what, index, parity,
             static_cast<int>(blockIdx.x), static_cast<int>(threadIdx.x >> 5));
      __trap();
    }
  }
#else
  (void)what;
  (void)index;
  while (!mbar_try_wait(bar, parity)) {
  }
#endif
}

/// The op-private semaphore base of the task in `instruction_index`'s ring slot: ordinal k is at
/// `base + k` (8 bytes each).
__device__ __forceinline__ uint64_t *op_sem_base(RuntimeSMEM &rs, int instruction_index) {
  return &rs.dynamic_semaphores[instruction_index % INSTRUCTION_RING_SIZE][SEM_OP_BASE];
}

/// Parity of the ring slot's current use.
__device__ __forceinline__ uint32_t ring_phase(int instruction_index) {
  return static_cast<uint32_t>((instruction_index / INSTRUCTION_RING_SIZE) & 1);
}

/// Waits until physical page `p` was released by every earlier task of this SM.
__device__ __forceinline__ void wait_page_ready(RuntimeSMEM &rs, int p, int instruction_index) {
  mbar_wait(&rs.page_finished[p], static_cast<uint32_t>(instruction_index & 1), "page_finished", p);
}

/// Releases physical page `p` for the next task (exactly once per page per task, I-P1).
__device__ __forceinline__ void finish_page(RuntimeSMEM &rs, int p) { mbar_arrive(&rs.page_finished[p]); }

/// True when some region of the task lies on physical page `p`.
__device__ __forceinline__ bool task_uses_page(TaskDesc const *td, int p) {
  for (int r = 0; r < td->num_smem_regions; ++r) {
    SmemPageRegionDesc const &d = td->smem_regions[r];
    if (d.page_count > 0 && d.physical_page_start <= p && p < d.physical_page_start + d.page_count) return true;
  }
  return false;
}

}  // namespace mpkc::rt

/// The dependency prefix every consumer body starts with (I-M9): thread 0 waits for the task's
/// event, then arrives SEM_DEP_READY of the slot once; every lane running the prefix waits it.
__device__ __forceinline__ void consumer_dep_prefix(RuntimeConfig const &runtime_config, TaskDesc const *task_desc,
                                                    RuntimeSMEM &runtime_smem, int instruction_index,
                                                    int iter_num) {
  uint64_t *ready = &runtime_smem.dynamic_semaphores[instruction_index % INSTRUCTION_RING_SIZE][SEM_DEP_READY];
  if (threadIdx.x == 0) {
    if (task_desc->dependent_event >= 0) {
      unsigned long long const need =
          static_cast<unsigned long long>(task_desc->dependent_triggers) * static_cast<unsigned long long>(iter_num + 1);
      unsigned long long *ctr = &runtime_config.event_counters[task_desc->dependent_event];
      unsigned long long seen;
      do {
        asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(seen) : "l"(ctr) : "memory");
      } while (seen < need);
    }
    mpkc::rt::mbar_arrive(ready);
  }
  mpkc::rt::mbar_wait(ready, mpkc::rt::ring_phase(instruction_index), "SEM_DEP_READY", instruction_index);
}

#endif  // MPKC_IN_MPK
