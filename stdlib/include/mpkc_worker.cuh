// mpkc_worker.cuh — a standalone Runtime-V2 worker: the role loops of runtime_v2.cuh and the
// wrapping MPK's code generator puts around each registered role body (dependency prefix, page
// prefix / claim / suffix), for one task type described by a generated `Registration`.
//
// One worker may serve several task types (`worker<R0, R1>`): the TaskDesc's `registration`
// picks the type, as MPK's dispatcher switches on task_type.
//
// Layout (contract doc §3.1): 8 warps, consumers W0-3, loader W4, launcher W5, storer W6,
// controller W7. The controller publishes each task of the CTA's queue into the 3-slot ring:
// it waits the slot's FINISHED of the task three places earlier, triggers that task's event,
// copies the TaskDesc, runs init_semaphores, and arrives ARRIVED (§2.2). Role warps wait
// ARRIVED, run their body, and arrive FINISHED. MPK counts FINISHED per warp (7); the harness
// has every lane of W0-W6 arrive (7 x 32), so that each lane's last read of the slot is ordered
// before the slot's next copy by its own arrival (race-free for compute-sanitizer racecheck too).
//
// Page modes (§1.5): 1 = the loader prefix waits every page and finishes the unused ones, the
// consumer suffix (or the task's own blanket release) finishes the used ones; 2 = the loader
// claims and finishes only the unused pages, consumer threads 0..13 claim the used pages before
// the body (then bar.sync 8, 128) and finish them in the suffix.
#pragma once
#ifndef MPKC_IN_MPK

#include "mpkc_prelude.cuh"

// Register reallocation (contract doc §3.5, §6.3), megakernel-wide and off by default, as in MPK:
// with MPK_SETMAXNREG 1, warpgroup 0 (consumers, W0-3) raises its per-thread register ceiling to
// MPK_CONSUMER_REGS with setmaxnreg.inc and warpgroup 1 (loader, launcher, storer, controller,
// W4-7) lowers it to MPK_HELPER_REGS with setmaxnreg.dec (MPK's defaults: 256 and 64). The
// harness defines them from the `setmaxnreg` line of the units it builds. ptxas needs the
// kernel's register count at entry to honour setmaxnreg (else warning C7508); the harness's
// __launch_bounds__(256, 1) gives it.
#ifndef MPK_SETMAXNREG
#define MPK_SETMAXNREG 0
#endif
#if MPK_SETMAXNREG
#ifndef MPK_CONSUMER_REGS
#define MPK_CONSUMER_REGS 256
#endif
#ifndef MPK_HELPER_REGS
#define MPK_HELPER_REGS 64
#endif
// PTX ISA, setmaxnreg: an immediate multiple of 8 in [24, 256] (mpkc checks it as E0404).
static_assert(MPK_CONSUMER_REGS % 8 == 0 && MPK_CONSUMER_REGS >= 24 && MPK_CONSUMER_REGS <= 256,
              "MPK_CONSUMER_REGS: setmaxnreg takes a multiple of 8 in [24, 256]");
static_assert(MPK_HELPER_REGS % 8 == 0 && MPK_HELPER_REGS >= 24 && MPK_HELPER_REGS <= 256,
              "MPK_HELPER_REGS: setmaxnreg takes a multiple of 8 in [24, 256]");
#endif

#ifdef MPKC_BENCH_STAMPS
// Bench builds (`mpkc bench`, persistent method; never `verify`'s or `build`'s), ns of
// %globaltimer: [0] the first task's publication over every CTA (atomicMin: the task starts when
// its roles may run), [1] the last task end (atomicMax, once the controller saw the last task
// FINISHED), [2] the first CTA start after its barrier init (atomicMin): [2] to [0] is the
// controller's copy of the first TaskDesc, which the megakernel overlaps with earlier tasks (the
// 3-slot ring). The host resets them before each launch.
__device__ unsigned long long mpkc_bench_stamps[3];
__device__ __forceinline__ unsigned long long mpkc_bench_now() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
/// CTA 0's timeline of the last stamped launch (ns of %globaltimer), for `mpkc bench
/// --fixed-cost` and `--timeline`: per warp W0-W7 and task seq < kBenchPhaseTasks, [0] when the warp saw the task's
/// ARRIVED, [1] when it finished its role and [2] when the runtime's prefix before the role body
/// was done (the loader's page prefix, the consumer's and launcher's dependency prefix); for the
/// controller (W7), when it published the task and when it saw the task FINISHED; the loader's
/// page prefix also stamps [3] once every lane's page wait is done, and the generated sm_90a
/// pipeline consumer (W0) stamps [3] at its K loop's end (`mpkc bench --timeline`); an in-task split-K
/// sum stamps [3] of W1-W3 (its sums issued, its tile counter returned, the tile's sum stored).
constexpr int kBenchPhaseTasks = 16;
__device__ unsigned long long mpkc_bench_phases[8][kBenchPhaseTasks][4];
/// Every CTA's last stamps of the launch (ns of %globaltimer), for `mpkc bench --timeline` only
/// (MPKC_BENCH_TIMELINE: a stamp in every CTA, and the consumer's before its page release, would
/// perturb the timed build): [0] the sm_90a pipeline consumer's K loop end of its last task, [1]
/// when its controller saw its last task FINISHED. CTAs past kBenchCtas are not recorded.
constexpr int kBenchCtas = 1024;
__device__ unsigned long long mpkc_bench_ctas[kBenchCtas][2];
__device__ __forceinline__ void mpkc_bench_phase(int warp, int seq, int which) {
  bool const phase = blockIdx.x == 0 && seq < kBenchPhaseTasks;
#ifdef MPKC_BENCH_TIMELINE
  bool const cta = warp == 0 && which == 3 && blockIdx.x < kBenchCtas;
#else
  bool const cta = false;
#endif
  if ((threadIdx.x & 31) != 0 || !(phase || cta)) return;  // the timer is read only when stamped
  unsigned long long const t = mpkc_bench_now();
  if (phase) mpkc_bench_phases[warp][seq][which] = t;
  if (cta) mpkc_bench_ctas[blockIdx.x][0] = t;
}
/// The update step of %globaltimer (ns), the resolution of one stamped sample: one thread reads
/// the timer until it has seen 64 changes and stores the smallest step in mpkc_bench_stamps[0].
extern "C" __global__ void mpkc_bench_timer_probe() {
  unsigned long long last = mpkc_bench_now(), step = ~0ull;
  for (int changes = 0, spins = 0; changes < 64 && spins < (1 << 24); ++spins) {
    unsigned long long const t = mpkc_bench_now();
    if (t != last) {
      if (t - last < step) step = t - last;
      last = t;
      ++changes;
    }
  }
  mpkc_bench_stamps[0] = step;
}
#endif

namespace mpkc::rt {

/// The megakernel's register targets (0, 0 with MPK_SETMAXNREG off).
#if MPK_SETMAXNREG
constexpr int kConsumerRegs = MPK_CONSUMER_REGS;
constexpr int kHelperRegs = MPK_HELPER_REGS;
#else
constexpr int kConsumerRegs = 0;
constexpr int kHelperRegs = 0;
#endif

/// Whether registration `R`'s `setmaxnreg` (kSetMaxNRegConsumer / kSetMaxNRegHelpers, 0 when
/// its contract has no `setmaxnreg` line) is what this megakernel is built with.
template <class R>
inline constexpr bool kSetMaxNRegAgrees =
    (R::kSetMaxNRegConsumer == 0 && R::kSetMaxNRegHelpers == 0) ||
    (R::kSetMaxNRegConsumer == kConsumerRegs && R::kSetMaxNRegHelpers == kHelperRegs);

/// Named barrier the runtime reserves for the consumer page claim (contract doc §3.4).
constexpr int kRuntimePageBarrier = 8;
/// Threads of the consumer warpgroup.
constexpr int kConsumerThreads = 128;

/// What the host hands the worker: every CTA's task queue, back to back.
struct WorkerArgs {
  TaskDesc const *tasks;     ///< all tasks, queue after queue
  int const *queue_begin;    ///< per CTA: first index into `tasks`
  int const *queue_len;      ///< per CTA: number of tasks
  RuntimeConfig config;
  int iter_num;
};

template <class R>
__device__ __forceinline__ void loader_page_prefix(RuntimeSMEM &rs, TaskDesc const *td, int seq) {
  int const p = lane_id();
#if MPK_SETMAXNREG
  // Under setmaxnreg the helper warps have MPK_HELPER_REGS (e.g. 40): the warp mask below spilled
  // there (36 bytes, ptxas 13.5, tests/setmaxnreg.rs), so each lane loops over the regions as
  // MPK's codegen does.
  bool const used = p < MAX_SMEM_PAGES_PER_TASK && task_uses_page(td, p);
#else
  // The task's pages as one mask (mpkc::used_page_mask): MPK's codegen has each lane loop over
  // the regions (task_uses_page), a chain that cost about 1 us per task here (H200, 2026-12-01).
  // Every lane computes it (a warp collective) before any lane branches on its page.
  uint32_t const mask = used_page_mask(td);
  bool const used = p < MAX_SMEM_PAGES_PER_TASK && (mask >> p & 1u);
#endif
  bool const waits = p < MAX_SMEM_PAGES_PER_TASK && (R::kPageMode == 1 || !used);
  if (waits) wait_page_ready(rs, p, seq);
  __syncwarp();
#ifdef MPKC_BENCH_STAMPS
  mpkc_bench_phase(4, seq, 3);
#endif
  // Page mode 1: lane p waited (acquired) page p above, every page in parallel; the __syncwarp
  // orders every lane after all of those acquires (PTX ISA, bar.warp.sync: "guarantees memory
  // ordering among threads participating in barrier"), so the lane the body elects to write the
  // pages is ordered after each page's previous user. A per-lane acquire of every page, one page
  // after another, cost about 5 us per task (mpkc bench --fixed-cost, H200, 2026-11-30).
  if (waits && !used) finish_page(rs, p);
}

/// Whether consumer thread `threadIdx.x` is page p's: threads 0..13 (warp 0, whose lanes compute
/// the page mask together) own the task's used pages.
__device__ __forceinline__ bool consumer_owns_used_page(TaskDesc const *td) {
  if (warp_id() != 0) return false;
  uint32_t const used = used_page_mask(td);
  int const p = lane_id();
  return p < MAX_SMEM_PAGES_PER_TASK && (used >> p & 1u);
}

template <class R>
__device__ __forceinline__ void consumer_page_claim(RuntimeSMEM &rs, TaskDesc const *td, int seq) {
  if (consumer_owns_used_page(td)) wait_page_ready(rs, lane_id(), seq);
  named_barrier_sync(kRuntimePageBarrier, kConsumerThreads);
}

template <class R>
__device__ __forceinline__ void consumer_page_suffix(RuntimeSMEM &rs, TaskDesc const *td) {
  named_barrier_sync(kRuntimePageBarrier, kConsumerThreads);
  if (consumer_owns_used_page(td)) finish_page(rs, lane_id());
}

/// Runs one role warp's part of the task in ring slot `seq % 3`. `kConsumers` is the warpgroup
/// (true: W0-3, false: W4-6), fixed at compile time so that each warpgroup's branch of the worker
/// reaches only its own role bodies: after `setmaxnreg`, ptxas compiles each body within the
/// register count of the branch that calls it.
template <class R, bool kConsumers>
__device__ __forceinline__ void run_role(RuntimeSMEM &rs, TaskDesc const *td, RuntimeConfig const &cfg, int seq,
                                         int iter_num) {
  if constexpr (kConsumers) {
    consumer_dep_prefix(cfg, td, rs, seq, iter_num);
    if (R::kPageMode == 2) consumer_page_claim<R>(rs, td, seq);
#ifdef MPKC_BENCH_STAMPS
    mpkc_bench_phase(warp_id(), seq, 2);
#endif
    R::consumer(td, cfg, rs, seq, iter_num);
    if (R::kAutoConsumerFinish) consumer_page_suffix<R>(rs, td);
  } else {
    int const warp = warp_id();
    if (warp == 4) {
      if (R::kAutoLoaderPageLifecycle) loader_page_prefix<R>(rs, td, seq);
#ifdef MPKC_BENCH_STAMPS
      mpkc_bench_phase(warp, seq, 2);
#endif
      R::loader(td, cfg, rs, seq, iter_num);
    } else if (warp == 5) {
      if (R::kLauncherDepPrefix) consumer_dep_prefix(cfg, td, rs, seq, iter_num);
#ifdef MPKC_BENCH_STAMPS
      mpkc_bench_phase(warp, seq, 2);
#endif
      R::launcher(td, cfg, rs, seq, iter_num);
    } else if (warp == 6) {
      R::storer(td, cfg, rs, seq, iter_num);
    }
  }
}

__device__ __forceinline__ void trigger_event(RuntimeConfig const &cfg, TaskDesc const &td) {
  if (td.trigger_event >= 0) {
    __threadfence();
    atomicAdd(&cfg.event_counters[td.trigger_event], 1ull);
  }
}

/// Calls `f(R{})` for the registration at index `reg` of `Rs...` (the TaskDesc's `registration`).
template <class... Rs, class F>
__device__ __forceinline__ void dispatch(int reg, F &&f) {
  int i = 0;
  ((i++ == reg ? f(Rs{}) : void()), ...);
}

#ifdef MPKC_BOUNDED_WAITS
/// Test builds, at publication of task `seq`: count the re-inits its roles owe on the ring slot
/// (R::kReinitOrdinals, bit k = op ordinal k). A queue may mix task types, whose ordinals differ.
template <class R>
__device__ __forceinline__ void expect_reinits(int seq) {
  int const slot = seq % INSTRUCTION_RING_SIZE;
  for (int k = 0; k < MAX_DYNAMIC_SEMAPHORES - SEM_OP_BASE; ++k) {
    if ((R::kReinitOrdinals >> k) & 1u) ++dbg.reinits_expected[slot][SEM_OP_BASE + k];
  }
}

/// Test builds: after task `seq` finished, every barrier its roles re-init must have been
/// re-initialised once per task on the ring slot that owes it (I-M4).
template <class R>
__device__ __forceinline__ void check_reinits(int seq) {
  int const slot = seq % INSTRUCTION_RING_SIZE;
  for (int k = 0; k < MAX_DYNAMIC_SEMAPHORES - SEM_OP_BASE; ++k) {
    if (!((R::kReinitOrdinals >> k) & 1u)) continue;
    unsigned const n = dbg.reinits[slot][SEM_OP_BASE + k];
    unsigned const uses = dbg.reinits_expected[slot][SEM_OP_BASE + k];
    if (n != uses) {
      printf("mpkc: re-init: CTA %d task %d (ring slot %d): op ordinal %d (%s) was re-initialised %u times by its owner "
             "(%s), expected %u (once per task on the slot that re-inits it): a role re-init was dropped\n",
             static_cast<int>(blockIdx.x), seq, slot, k, R::ordinal_name(k), n, R::reinit_owner(k), uses);
      __trap();
    }
  }
}
#endif

/// The loop of a role warp (W0-6) over its CTA's `n` tasks: wait the slot's ARRIVED, run the
/// warp's role of the task's registration, arrive FINISHED. `kConsumers`: see `run_role`.
template <bool kConsumers, class... Rs>
__device__ __forceinline__ void role_loop(RuntimeSMEM &rs, TaskDesc const *task_buf, WorkerArgs const &args, int n) {
  for (int seq = 0; seq < n; ++seq) {
    int const slot = seq % INSTRUCTION_RING_SIZE;
    mbar_wait(&rs.instruction_mbarriers[0][slot], ring_phase(seq), "ARRIVED", slot);
#ifdef MPKC_BOUNDED_WAITS
    if (lane_id() == 0) dbg.seq[warp_id()] = seq;
#endif
#ifdef MPKC_BENCH_STAMPS
    mpkc_bench_phase(warp_id(), seq, 0);
#endif
    __syncwarp();
    TaskDesc const *td = &task_buf[slot];
    dispatch<Rs...>(td->registration,
                    [&](auto r) { run_role<decltype(r), kConsumers>(rs, td, args.config, seq, args.iter_num); });
    __syncwarp();
#ifdef MPKC_BENCH_STAMPS
    mpkc_bench_phase(warp_id(), seq, 1);
#endif
    // Every lane arrives FINISHED after its last read of the slot's TaskDesc (count 7 x 32).
    mbar_arrive(&rs.instruction_mbarriers[1][slot]);
  }
}

/// The worker body of one CTA, for tasks of the registrations `Rs...` (one for a single task
/// type; several when a queue mixes a producer and its dependent, e.g. argmax partial → reduce).
template <class... Rs>
__device__ void worker(WorkerArgs const &args) {
  static_assert((kSetMaxNRegAgrees<Rs> && ...),
                "a registration's setmaxnreg differs from MPK_SETMAXNREG / MPK_CONSUMER_REGS / MPK_HELPER_REGS");
  __shared__ RuntimeSMEM rs;
  __shared__ __align__(16) TaskDesc task_buf[INSTRUCTION_RING_SIZE];
  int const begin = args.queue_begin[blockIdx.x];
  int const n = args.queue_len[blockIdx.x];
  if (threadIdx.x == 0) {
#ifdef MPKC_BOUNDED_WAITS
    dbg.rs = &rs;
    for (int w = 0; w < 8; ++w) dbg.seq[w] = -1;
    for (int p = 0; p < MAX_SMEM_PAGES_PER_TASK; ++p) dbg.page_releases[p] = 1u;  // the pre-arm below
    for (int p = 0; p < MAX_SMEM_PAGES_PER_TASK; ++p) dbg.page_acquires[p] = 0u;
    for (int s = 0; s < INSTRUCTION_RING_SIZE; ++s)
      for (int k = 0; k < MAX_DYNAMIC_SEMAPHORES; ++k) dbg.reinits[s][k] = dbg.reinits_expected[s][k] = 0u;
#endif
#ifdef MPKC_INJECT_DEP_COUNT_OFF
    uint32_t const dep_count = 2;  // fault injection: SEM_DEP_READY's count one too high
#else
    uint32_t const dep_count = 1;
#endif
    for (int s = 0; s < INSTRUCTION_RING_SIZE; ++s) {
      mbar_init(&rs.instruction_mbarriers[0][s], 1);
      mbar_init(&rs.instruction_mbarriers[1][s], NUM_ROLE_WARPS * 32);  // every lane of W0-W6
      mbar_init(&rs.dynamic_semaphores[s][SEM_DEP_READY], dep_count);
    }
    for (int p = 0; p < MAX_SMEM_PAGES_PER_TASK; ++p) mbar_init(&rs.page_finished[p], 1);
    fence_mbar_init();
    for (int p = 0; p < MAX_SMEM_PAGES_PER_TASK; ++p) mbar_arrive(&rs.page_finished[p]);  // pre-armed
  }
  __syncthreads();
#ifdef MPKC_BENCH_STAMPS
  if (threadIdx.x == 0) atomicMin(&mpkc_bench_stamps[2], mpkc_bench_now());
#endif
  int const warp = warp_id();
  // Register reallocation (contract doc §3.5), megakernel-wide: every warp of each warpgroup
  // issues its warpgroup's setmaxnreg first in its branch, and each branch reaches only its own
  // role bodies, so ptxas fits the helpers' code in MPK_HELPER_REGS.
  if (warp < 4) {
#if MPK_SETMAXNREG
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(MPK_CONSUMER_REGS));
#endif
    role_loop<true, Rs...>(rs, task_buf, args, n);
    return;
  }
#if MPK_SETMAXNREG
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(MPK_HELPER_REGS));
#endif
  if (warp == 7) {
    // Controller: publish each task into its ring slot once the task three places earlier finished.
    auto finished = [&](int seq) {
      mbar_wait(&rs.instruction_mbarriers[1][seq % INSTRUCTION_RING_SIZE], ring_phase(seq), "FINISHED",
                seq % INSTRUCTION_RING_SIZE);
#ifdef MPKC_BENCH_STAMPS
      mpkc_bench_phase(7, seq, 1);
#endif
      TaskDesc const &done = args.tasks[begin + seq];
#ifdef MPKC_BOUNDED_WAITS
      if (lane_id() == 0) dispatch<Rs...>(done.registration, [&](auto r) { check_reinits<decltype(r)>(seq); });
#endif
      if (lane_id() == 0) trigger_event(args.config, done);
    };
    for (int seq = 0; seq < n; ++seq) {
      int const slot = seq % INSTRUCTION_RING_SIZE;
#ifdef MPKC_BOUNDED_WAITS
      if (lane_id() == 0) dbg.seq[7] = seq;
#endif
      if (seq >= INSTRUCTION_RING_SIZE) finished(seq - INSTRUCTION_RING_SIZE);
      if (lane_id() == 0) {
        // Copy the TaskDesc into the slot (16 bytes a step) and publish it from the same thread.
        constexpr int kChunks = static_cast<int>(sizeof(TaskDesc) / 16);
        uint4 const *src = reinterpret_cast<uint4 const *>(&args.tasks[begin + seq]);
        uint4 *dst = reinterpret_cast<uint4 *>(&task_buf[slot]);
        for (int c = 0; c < kChunks; ++c) dst[c] = src[c];
        dispatch<Rs...>(task_buf[slot].registration, [&](auto r) { decltype(r)::init_semaphores(op_sem_base(rs, seq)); });
#ifdef MPKC_BOUNDED_WAITS
        dispatch<Rs...>(task_buf[slot].registration, [&](auto r) { expect_reinits<decltype(r)>(seq); });
#endif
        __threadfence_block();
#ifdef MPKC_BENCH_STAMPS
        mpkc_bench_phase(7, seq, 0);
        if (seq == 0) atomicMin(&mpkc_bench_stamps[0], mpkc_bench_now());
#endif
        mbar_arrive(&rs.instruction_mbarriers[0][slot]);
      }
      __syncwarp();
    }
    for (int seq = n > INSTRUCTION_RING_SIZE ? n - INSTRUCTION_RING_SIZE : 0; seq < n; ++seq) finished(seq);
#ifdef MPKC_BENCH_STAMPS
    if (lane_id() == 0) {
      unsigned long long const t = mpkc_bench_now();
      atomicMax(&mpkc_bench_stamps[1], t);
#ifdef MPKC_BENCH_TIMELINE
      if (blockIdx.x < kBenchCtas) mpkc_bench_ctas[blockIdx.x][1] = t;
#endif
    }
#endif
    return;
  }
  role_loop<false, Rs...>(rs, task_buf, args, n);
}

}  // namespace mpkc::rt

static_assert(sizeof(TaskDesc) % 16 == 0, "TaskDesc is copied in 16-byte chunks");
static_assert(sizeof(mpkc::rt::WorkerArgs) == 88 && offsetof(mpkc::rt::WorkerArgs, iter_num) == 80, "WorkerArgs layout (mirrored by mpkc::gpu::abi::WorkerArgs)");

#endif  // MPKC_IN_MPK
