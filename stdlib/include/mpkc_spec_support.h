// mpkc_spec_support.h — host-safe types the generated <op>_spec.h headers use.
//
// MPK's registration takes a TaskSmemInfo of TaskSmemRegion (include/mirage/kernel/
// task_register.h; contract doc §1.2). Standalone builds get field-for-field mirrors here;
// inside the MPK tree (MPKC_IN_MPK) the spec uses MPK's own types.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#ifdef MPKC_IN_MPK
#include "mirage/kernel/task_register.h"
namespace mpkc {
using TaskSmemRegion = ::mirage::kernel::TaskSmemRegion;
using TaskSmemInfo = ::mirage::kernel::TaskSmemInfo;
}  // namespace mpkc
#else
namespace mpkc {
/// One SMEM region request (MPK's TaskSmemRegion).
struct TaskSmemRegion {
  std::string name;
  int size = 0;           ///< bytes
  int alignment = 1;      ///< bytes, a power of two (packing only)
  int page_count = -1;    ///< -1: ceil(size / 16384)
  bool can_pack = false;  ///< may share a page
  int release_step = 0;   ///< ordering hint for the next task's preferred page order
  bool contiguous = true;
};
/// A task variant's SMEM declaration (MPK's TaskSmemInfo).
struct TaskSmemInfo {
  int size = 0;
  int alignment = 1;
  std::vector<TaskSmemRegion> regions;
};
}  // namespace mpkc
#endif

namespace mpkc {
/// Warp roles of Runtime-V2 (contract doc §3.1), for the semaphore table.
enum class Role : int { None = -1, Consumer = 0, Loader = 1, Launcher = 2, Storer = 3, Controller = 4 };
/// How an mbarrier is arrived (contract doc §2.4).
enum class Arrival : int { TmaCompleteTx = 0, Commit = 1, Thread = 2 };
/// One op-private mbarrier: ordinal k lives at op_sem_base + 8k.
struct SemSpec {
  char const *name;
  int ordinal;
  int count;  ///< arrivals per phase (mbarrier.init count)
  Role producer;
  Role consumer;
  Arrival arrival;
  Role reinit;  ///< role re-initialising it at task start, None for the tmem_ready class
};
}  // namespace mpkc
