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

#include <cstddef>
#include <cstdint>
#include <cstdio>
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
  /// Harness only: index of the task's `Registration` in the worker's list (0 for one type).
  int registration;

  /// Byte offset of region r from the dynamic SMEM base.
  __host__ __device__ int smem_region_offset(int r) const {
    return smem_regions[r].physical_page_start * TASK_SMEM_PAGE_SIZE + smem_regions[r].byte_offset;
  }
  /// First physical page of region r.
  __host__ __device__ int smem_region_page(int r) const { return smem_regions[r].physical_page_start; }
};

/// MPK_MAX_NUM_BATCHED_REQUESTS: request slots per step. MPK passes it with -D (its
/// persistent_kernel.py, `max_num_batched_requests`); 16 is the default persistent_kernel.cuh
/// states.
#ifndef MPK_MAX_NUM_BATCHED_REQUESTS
#define MPK_MAX_NUM_BATCHED_REQUESTS 16
#endif

/// What the runtime passes every role body besides the task: the fields of MPK's RuntimeConfig
/// (runtime_header.h) a task may read.
struct RuntimeConfig {
  /// Monotonic event counters in global memory (zeroed per launch).
  unsigned long long *event_counters;
  /// Decode step counter; step[0] == 0 on the first step.
  int *step;
  /// Token offsets of the step's requests (MPK_MAX_NUM_BATCHED_REQUESTS + 1 entries), written by
  /// MPK's prepare_next_batch; entry MPK_MAX_NUM_BATCHED_REQUESTS is the step's token count, which
  /// a task with a run-time token count reads (docs/runtime-m.md).
  int *qo_indptr_buffer;
  /// The paged KV cache's page table, as MPK's prepare_next_batch writes it (runtime_header.h,
  /// upstream de8745d9 lines 342-345; docs/language.md, "Paged KV caches"): request r's pages are
  /// paged_kv_indices_buffer[paged_kv_indptr_buffer[r] .. paged_kv_indptr_buffer[r + 1]]
  /// (MPK_MAX_NUM_BATCHED_REQUESTS + 1 offsets), and its last page holds
  /// paged_kv_last_page_len_buffer[r] tokens (1..=page). Read by `mpkc::paged_kv_request`.
  int *paged_kv_indptr_buffer;
  int *paged_kv_indices_buffer;
  int *paged_kv_last_page_len_buffer;
  /// The persistent kernel's workers (CTAs), MPK's `num_workers`: a grid-wide task runs one task
  /// per worker, so its task count (`kNumTasks`, I-H4).
  int num_workers;
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
// ---------------------------------------------------------------------------------------------
// Test builds (MPKC_BOUNDED_WAITS, what `mpkc verify` compiles): every wait is bounded by
// %globaltimer and a wait that times out traps with a message naming the barrier (page, ring
// slot and op ordinal, or runtime barrier), the role, the task and the phase. A shadow of the
// runtime state in static shared memory counts page releases and role re-inits, so a page
// released twice or never, and a re-init dropped, are named instead of hanging or passing early.
// ---------------------------------------------------------------------------------------------

/// Nanoseconds a test-build wait may take before it is declared hung.
#ifndef MPKC_WAIT_TIMEOUT_NS
#define MPKC_WAIT_TIMEOUT_NS 2000000000ull
#endif

/// The shadow state of one CTA (test builds only).
struct DebugState {
  /// The CTA's RuntimeSMEM, to classify a barrier address.
  RuntimeSMEM *rs;
  /// Per warp: the CTA-local sequence number of the task it runs (-1: none yet).
  int seq[8];
  /// Per page: finish_page calls so far, the worker's pre-arm included (task s waits a page after
  /// exactly s + 1 releases).
  unsigned page_releases[MAX_SMEM_PAGES_PER_TASK];
  /// Per page: completed waits so far (one per task: the task acquired the page).
  unsigned page_acquires[MAX_SMEM_PAGES_PER_TASK];
  /// Per ring slot and semaphore index: role re-inits (mbar_reinit) so far.
  unsigned reinits[INSTRUCTION_RING_SIZE][MAX_DYNAMIC_SEMAPHORES];
  /// Per ring slot and semaphore index: re-inits owed by the tasks published on the slot so far
  /// (each task's registration's kReinitOrdinals; the controller counts them at publication).
  unsigned reinits_expected[INSTRUCTION_RING_SIZE][MAX_DYNAMIC_SEMAPHORES];
};

/// The shadow state, one per CTA.
static __shared__ DebugState dbg;

__device__ __forceinline__ uint64_t globaltimer() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/// The role of warp `w` in the runtime's layout (contract doc §3.1).
__device__ __forceinline__ char const *role_name(int w) {
  switch (w) {
    case 0: case 1: case 2: case 3: return "consumer";
    case 4: return "loader";
    case 5: return "launcher";
    case 6: return "storer";
    default: return "controller";
  }
}

/// How long a wait on `bar` may take before it reports: the page and dependency waits at task
/// start 1x, the op-private barriers 2x, the ring's ARRIVED/FINISHED 4x, so that the wait that
/// caused a hang reports before the waits that only follow from it.
__device__ __forceinline__ uint64_t wait_limit(uint64_t const *bar) {
  long const ins = bar - &dbg.rs->instruction_mbarriers[0][0];
  if (ins >= 0 && ins < 2 * INSTRUCTION_RING_SIZE) return 4ull * MPKC_WAIT_TIMEOUT_NS;
  long const sem = bar - &dbg.rs->dynamic_semaphores[0][0];
  if (sem >= 0 && sem < INSTRUCTION_RING_SIZE * MAX_DYNAMIC_SEMAPHORES && sem % MAX_DYNAMIC_SEMAPHORES != SEM_DEP_READY) {
    return 2ull * MPKC_WAIT_TIMEOUT_NS;
  }
  return MPKC_WAIT_TIMEOUT_NS;
}

/// Prints (from one lane of the waiting warp) what a hung wait was waiting for, then traps.
__device__ __noinline__ void report_hang(uint64_t const *bar, uint32_t parity, char const *what, int index) {
  unsigned const active = __activemask();
  if ((threadIdx.x & 31u) != static_cast<unsigned>(__ffs(active) - 1)) return;  // the reporting lane traps
  int const warp = static_cast<int>(threadIdx.x >> 5);
  int const seq = dbg.seq[warp];
  RuntimeSMEM const &rs = *dbg.rs;
  long const page = bar - &rs.page_finished[0];
  long const sem = bar - &rs.dynamic_semaphores[0][0];
  long const ins = bar - &rs.instruction_mbarriers[0][0];
  unsigned long long const ms = wait_limit(bar) / 1000000ull;
  if (page >= 0 && page < MAX_SMEM_PAGES_PER_TASK) {
    // While a role still runs an earlier task, that task holds the page and its own hang reports.
    for (int w = 0; w < NUM_ROLE_WARPS; ++w) {
      if (*static_cast<int volatile *>(&dbg.seq[w]) < seq) return;
    }
    unsigned const rel = dbg.page_releases[page];
    unsigned const need = static_cast<unsigned>(seq) + 1u;
    printf("mpkc: hang: CTA %d %s (warp %d) task %d waits page %ld (page_finished parity %u) for %llu ms: "
           "page %ld was released %u times (pre-arm included), task %d needs exactly %u: %s\n",
           static_cast<int>(blockIdx.x), role_name(warp), warp, seq, page, parity, ms, page, rel, seq, need,
           rel < need ? "a release of this page was skipped" : rel > need ? "this page was released twice" : "the phase is wrong");
  } else if (sem >= 0 && sem < INSTRUCTION_RING_SIZE * MAX_DYNAMIC_SEMAPHORES) {
    int const slot = static_cast<int>(sem / MAX_DYNAMIC_SEMAPHORES);
    int const k = static_cast<int>(sem % MAX_DYNAMIC_SEMAPHORES);
    if (k == SEM_DEP_READY) {
      printf("mpkc: hang: CTA %d %s (warp %d) task %d waits SEM_DEP_READY of ring slot %d (parity %u) for %llu ms\n",
             static_cast<int>(blockIdx.x), role_name(warp), warp, seq, slot, parity, ms);
    } else {
      printf("mpkc: hang: CTA %d %s (warp %d) task %d waits op ordinal %d (%s[%d]) of ring slot %d, parity %u, "
             "for %llu ms: its phase never completed (an arrival missing or an init count too high)\n",
             static_cast<int>(blockIdx.x), role_name(warp), warp, seq, k - SEM_OP_BASE, what, index, slot, parity, ms);
    }
  } else if (ins >= 0 && ins < 2 * INSTRUCTION_RING_SIZE) {
    printf("mpkc: hang: CTA %d %s (warp %d) task %d waits the ring's %s[%d] (parity %u) for %llu ms\n",
           static_cast<int>(blockIdx.x), role_name(warp), warp, seq, ins < INSTRUCTION_RING_SIZE ? "ARRIVED" : "FINISHED",
           static_cast<int>(ins % INSTRUCTION_RING_SIZE), parity, ms);
  } else {
    printf("mpkc: hang: CTA %d %s (warp %d) task %d waits %s[%d] (parity %u) for %llu ms\n", static_cast<int>(blockIdx.x),
           role_name(warp), warp, seq, what, index, parity, ms);
  }
  __trap();
}

/// Test builds: counts a release of page `p`; traps when the page was released more often than
/// tasks acquired it (a task releases each page exactly once, I-P1).
__device__ __forceinline__ void note_release(int p) {
  unsigned const rel = atomicAdd(&dbg.page_releases[p], 1u) + 1u;
  unsigned const acq = *static_cast<unsigned volatile *>(&dbg.page_acquires[p]);
  if (rel > acq + 1u) {
    int const warp = static_cast<int>(threadIdx.x >> 5);
    printf("mpkc: page protocol: CTA %d %s (warp %d) task %d released page %d again: %u releases (pre-arm included) "
           "for %u acquisitions: this page was released twice\n",
           static_cast<int>(blockIdx.x), role_name(warp), warp, dbg.seq[warp], p, rel, acq);
    __trap();
  }
}

/// Test builds: traps naming page `p` when task `seq` acquired it after a number of releases
/// other than seq + 1 (a release doubled shows here when the wait did not hang).
__device__ __forceinline__ void check_page_acquired(int p, int seq) {
  atomicAdd(&dbg.page_acquires[p], 1u);
  unsigned const rel = *static_cast<unsigned volatile *>(&dbg.page_releases[p]);
  if (rel != static_cast<unsigned>(seq) + 1u) {
    int const warp = static_cast<int>(threadIdx.x >> 5);
    printf("mpkc: page protocol: CTA %d %s (warp %d) task %d acquired page %d after %u releases (pre-arm included), "
           "expected %d: %s\n",
           static_cast<int>(blockIdx.x), role_name(warp), warp, seq, p, rel, seq + 1,
           rel > static_cast<unsigned>(seq) + 1u ? "this page was released twice" : "this page was acquired without its release");
    __trap();
  }
}

/// Test builds: traps naming the block scale `tensor[index]` whose f32 `value` a UE8M0 byte cannot
/// hold (not 2^e with -126 <= e <= 127): the byte is the exponent, so the kernel would scale by a
/// rounded-down power of two and compute a wrong result without a word (contract doc §7.1: the
/// block-scaled fp8 scales are powers of two). Called by the generated layout::Scales::write.
__device__ __noinline__ void report_bad_scale(char const *tensor, int index, float value) {
  int const warp = static_cast<int>(threadIdx.x >> 5);
  int const e = static_cast<int>((__float_as_uint(value) >> 23) & 0xFFu) - 127;
  printf("mpkc: scale: CTA %d %s (warp %d) task %d: %s[%d] = %.9g is not a power of two: UE8M0 holds 2^e only, "
         "the kernel would use 2^%d\n",
         static_cast<int>(blockIdx.x), role_name(warp), warp, dbg.seq[warp], tensor, index, static_cast<double>(value), e);
  __trap();
}
#endif

/// Waits until the phase with `parity` completed (I-M7 parities). `what`/`index` name the
/// barrier in a test build's hang report.
__device__ __forceinline__ void mbar_wait(uint64_t *bar, uint32_t parity, char const *what, int index) {
#ifdef MPKC_BOUNDED_WAITS
  if (mbar_try_wait(bar, parity)) return;
  uint64_t const t0 = globaltimer();
  uint64_t const limit = wait_limit(bar);
  while (!mbar_try_wait(bar, parity)) {
    if (globaltimer() - t0 > limit) report_hang(bar, parity, what, index);
  }
#else
  (void)what;
  (void)index;
  // The retry loop is inside one asm block: ptxas then sees straight-line code, not a divergent
  // branch, between a warpgroup's wgmmas and the barrier it waits, and keeps them pipelined (a C++
  // loop here makes ptxas serialise the wgmmas, advisory C7519 "compiler-inserted WG.AR in divergent
  // path"). CUTLASS's ClusterBarrier::wait is written the same way.
  asm volatile(
      "{\n .reg .pred p;\n"
      "mpkc_wait_%=:\n"
      " mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [%0], %1, 0x989680;\n"
      " @!p bra mpkc_wait_%=;\n}"
      :
      : "r"(smem_u32(bar)), "r"(parity)
      : "memory");
#endif
}

/// A role's start-of-task re-init of a barrier it owns (I-M4): mbarrier.init, counted by the
/// test build's shadow so that the controller can name a dropped re-init.
__device__ __forceinline__ void mbar_reinit(uint64_t *bar, uint32_t count) {
  mbar_init(bar, count);
#ifdef MPKC_BOUNDED_WAITS
  long const sem = bar - &dbg.rs->dynamic_semaphores[0][0];
  if (sem >= 0 && sem < INSTRUCTION_RING_SIZE * MAX_DYNAMIC_SEMAPHORES) {
    atomicAdd(&dbg.reinits[sem / MAX_DYNAMIC_SEMAPHORES][sem % MAX_DYNAMIC_SEMAPHORES], 1u);
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

/// Waits until physical page `p` was released by every earlier task of this SM (I-P2: the
/// parity of the task's per-SM sequence number). Test builds also check the release count.
__device__ __forceinline__ void wait_page_ready(RuntimeSMEM &rs, int p, int instruction_index) {
  mbar_wait(&rs.page_finished[p], static_cast<uint32_t>(instruction_index & 1), "page_finished", p);
#ifdef MPKC_BOUNDED_WAITS
  check_page_acquired(p, instruction_index);
#endif
}

/// Releases physical page `p` for the next task (exactly once per page per task, I-P1).
///
/// Fault injection (`mpkc verify --inject`, test builds only): MPKC_INJECT_PAGE_SKIP=p drops,
/// and MPKC_INJECT_PAGE_DOUBLE=p doubles, the release of page p by CTA 0's first task.
__device__ __forceinline__ void finish_page(RuntimeSMEM &rs, int p) {
#ifdef MPKC_BOUNDED_WAITS
#ifdef MPKC_INJECT_PAGE_SKIP
  if (blockIdx.x == 0 && p == MPKC_INJECT_PAGE_SKIP && dbg.page_releases[p] == 1u) return;
#endif
#ifdef MPKC_INJECT_PAGE_DOUBLE
  bool const twice = blockIdx.x == 0 && p == MPKC_INJECT_PAGE_DOUBLE && dbg.page_releases[p] == 1u;
#endif
  note_release(p);
  mbar_arrive(&rs.page_finished[p]);
#ifdef MPKC_INJECT_PAGE_DOUBLE
  if (twice) {
    note_release(p);
    mbar_arrive(&rs.page_finished[p]);
  }
#endif
#else
  mbar_arrive(&rs.page_finished[p]);
#endif
}

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
#ifdef MPKC_BOUNDED_WAITS
      uint64_t const t0 = mpkc::rt::globaltimer();
#endif
      do {
        asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(seen) : "l"(ctr) : "memory");
#ifdef MPKC_BOUNDED_WAITS
        if (seen < need && mpkc::rt::globaltimer() - t0 > MPKC_WAIT_TIMEOUT_NS) {
          printf("mpkc: hang: CTA %d consumer task %d waits event %d: %llu of %llu triggers after %llu ms\n",
                 static_cast<int>(blockIdx.x), instruction_index, task_desc->dependent_event, seen, need,
                 static_cast<unsigned long long>(MPKC_WAIT_TIMEOUT_NS / 1000000ull));
          __trap();
        }
#endif
      } while (seen < need);
    }
    mpkc::rt::mbar_arrive(ready);
  }
  mpkc::rt::mbar_wait(ready, mpkc::rt::ring_phase(instruction_index), "SEM_DEP_READY", instruction_index);
}

// The host mirrors these layouts byte for byte (mpkc's `gpu::abi`): keep them in step.
static_assert(sizeof(SmemPageRegionDesc) == 12, "SmemPageRegionDesc layout");
static_assert(sizeof(TaskDesc) == 528, "TaskDesc layout (mirrored by mpkc::gpu::abi::TaskDesc)");
static_assert(offsetof(TaskDesc, input_ptrs) == 16 && offsetof(TaskDesc, output_ptrs) == 80, "TaskDesc layout");
static_assert(offsetof(TaskDesc, input_tma_desc_ptrs) == 112 && offsetof(TaskDesc, task_metadata) == 304, "TaskDesc layout");
static_assert(offsetof(TaskDesc, smem_regions) == 312 && offsetof(TaskDesc, dependent_event) == 504, "TaskDesc layout");
static_assert(offsetof(TaskDesc, registration) == 516, "TaskDesc layout");
static_assert(sizeof(RuntimeConfig) == 56 && offsetof(RuntimeConfig, qo_indptr_buffer) == 16,
              "RuntimeConfig layout (mirrored by mpkc::gpu::abi::RuntimeConfig)");
static_assert(offsetof(RuntimeConfig, paged_kv_indptr_buffer) == 24 && offsetof(RuntimeConfig, paged_kv_last_page_len_buffer) == 40 && offsetof(RuntimeConfig, num_workers) == 48,
              "RuntimeConfig layout (mirrored by mpkc::gpu::abi::RuntimeConfig)");

#endif  // MPKC_IN_MPK
