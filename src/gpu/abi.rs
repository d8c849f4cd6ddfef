//! Host mirrors of the structures the harness reads (`stdlib/include/mpkc_runtime.cuh`,
//! `mpkc_worker.cuh`), byte for byte; the headers `static_assert` the same sizes and offsets.

/// Pointers in the descriptor: device addresses.
pub type DevPtr = u64;

/// `MPKC_MAX_INPUTS`.
pub const MAX_INPUTS: usize = 8;
/// `MPKC_MAX_OUTPUTS`.
pub const MAX_OUTPUTS: usize = 4;
/// `MAX_SMEM_REGIONS_PER_TASK` (I-S2).
pub const MAX_REGIONS: usize = 16;

/// `SmemPageRegionDesc`: one planned region (contract doc §1.3).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SmemPageRegionDesc {
    /// First physical page.
    pub physical_page_start: i32,
    /// Pages spanned.
    pub page_count: i32,
    /// Byte offset in the first page.
    pub byte_offset: i32,
}

/// `TaskDesc` (528 bytes, 16-byte aligned): what the controller copies into a ring slot.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug)]
pub struct TaskDesc {
    /// MPK task type (the contract's `task_id`).
    pub task_type: i32,
    /// Variant.
    pub variant_id: i32,
    /// Inputs used.
    pub num_inputs: i32,
    /// Outputs used.
    pub num_outputs: i32,
    /// Input tensors (device addresses).
    pub input_ptrs: [DevPtr; MAX_INPUTS],
    /// Output tensors.
    pub output_ptrs: [DevPtr; MAX_OUTPUTS],
    /// Per input, up to 3 `CUtensorMap` addresses in global memory (index 0 used).
    pub input_tma_desc_ptrs: [[DevPtr; 3]; MAX_INPUTS],
    /// `task_metadata.task_offset`: the task's tile index.
    pub task_offset: i32,
    /// Regions used.
    pub num_smem_regions: i32,
    /// The planned regions.
    pub smem_regions: [SmemPageRegionDesc; MAX_REGIONS],
    /// Event waited (-1: none).
    pub dependent_event: i32,
    /// Triggers per iteration that complete it.
    pub dependent_triggers: i32,
    /// Event triggered when the task finishes (-1: none).
    pub trigger_event: i32,
    /// Index of the task's registration in the harness's worker.
    pub registration: i32,
}

impl Default for TaskDesc {
    fn default() -> Self {
        TaskDesc {
            task_type: 0,
            variant_id: 0,
            num_inputs: 0,
            num_outputs: 0,
            input_ptrs: [0; MAX_INPUTS],
            output_ptrs: [0; MAX_OUTPUTS],
            input_tma_desc_ptrs: [[0; 3]; MAX_INPUTS],
            task_offset: 0,
            num_smem_regions: 0,
            smem_regions: [SmemPageRegionDesc::default(); MAX_REGIONS],
            dependent_event: -1,
            dependent_triggers: 0,
            trigger_event: -1,
            registration: 0,
        }
    }
}

impl TaskDesc {
    /// The descriptor's bytes, as the device reads them.
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: repr(C) plain-old-data with no padding holes that matter to the device (the
        // tail padding is copied, never read).
        unsafe {
            std::slice::from_raw_parts(
                (self as *const TaskDesc).cast::<u8>(),
                std::mem::size_of::<TaskDesc>(),
            )
        }
    }
}

/// `RuntimeConfig`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct RuntimeConfig {
    /// `unsigned long long *event_counters`.
    pub event_counters: DevPtr,
    /// `int *step`.
    pub step: DevPtr,
    /// `int *qo_indptr_buffer`: `MPK_MAX_NUM_BATCHED_REQUESTS + 1` token offsets, the last the
    /// step's token count (MPK's runtime_header.h; read by run-time-M tasks, docs/runtime-m.md).
    pub qo_indptr_buffer: DevPtr,
    /// `int *paged_kv_indptr_buffer`: `MPK_MAX_NUM_BATCHED_REQUESTS + 1` page offsets into
    /// `paged_kv_indices_buffer`, one per request (read by paged tasks, docs/language.md "Paged
    /// KV caches").
    pub paged_kv_indptr_buffer: DevPtr,
    /// `int *paged_kv_indices_buffer`: the page ids of every request, back to back.
    pub paged_kv_indices_buffer: DevPtr,
    /// `int *paged_kv_last_page_len_buffer`: per request, the tokens of its last page (1..=page).
    pub paged_kv_last_page_len_buffer: DevPtr,
    /// `int num_workers`: the CTAs of the launch (MPK's worker count), a grid-wide task's task
    /// count (I-H4).
    pub num_workers: i32,
}

/// `MPK_MAX_NUM_BATCHED_REQUESTS` as the harness compiles it (the header's default).
pub const MAX_NUM_BATCHED_REQUESTS: usize = 16;

/// The `qo_indptr_buffer` of one request of `tokens` tokens: offsets 0, then `tokens` in every
/// later slot (the unused slots repeat the total, as MPK's prepare_next_batch writes them), so
/// that entry `MAX_NUM_BATCHED_REQUESTS` is the step's token count.
pub fn qo_indptr(tokens: i32) -> [i32; MAX_NUM_BATCHED_REQUESTS + 1] {
    let mut b = [tokens; MAX_NUM_BATCHED_REQUESTS + 1];
    b[0] = 0;
    b
}

/// `mpkc::rt::WorkerArgs`, passed by value to the harness kernel (88 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct WorkerArgs {
    /// `TaskDesc const *tasks`: every CTA's queue, back to back.
    pub tasks: DevPtr,
    /// `int const *queue_begin`: per CTA, its first task.
    pub queue_begin: DevPtr,
    /// `int const *queue_len`: per CTA, its number of tasks.
    pub queue_len: DevPtr,
    /// The runtime configuration.
    pub config: RuntimeConfig,
    /// Iteration (decode step) number.
    pub iter_num: i32,
}

// SAFETY: plain-old-data passed by value as a kernel parameter, laid out as the device struct.
unsafe impl cudarc::driver::DeviceRepr for WorkerArgs {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    /// The same numbers the headers `static_assert`.
    #[test]
    fn layouts_match_the_headers() {
        assert_eq!(size_of::<SmemPageRegionDesc>(), 12);
        assert_eq!(size_of::<TaskDesc>(), 528);
        assert_eq!(offset_of!(TaskDesc, input_ptrs), 16);
        assert_eq!(offset_of!(TaskDesc, output_ptrs), 80);
        assert_eq!(offset_of!(TaskDesc, input_tma_desc_ptrs), 112);
        assert_eq!(offset_of!(TaskDesc, task_offset), 304);
        assert_eq!(offset_of!(TaskDesc, smem_regions), 312);
        assert_eq!(offset_of!(TaskDesc, dependent_event), 504);
        assert_eq!(offset_of!(TaskDesc, registration), 516);
        assert_eq!(size_of::<RuntimeConfig>(), 56);
        assert_eq!(offset_of!(RuntimeConfig, num_workers), 48);
        assert_eq!(offset_of!(RuntimeConfig, qo_indptr_buffer), 16);
        assert_eq!(offset_of!(RuntimeConfig, paged_kv_indptr_buffer), 24);
        assert_eq!(offset_of!(RuntimeConfig, paged_kv_last_page_len_buffer), 40);
        assert_eq!(size_of::<WorkerArgs>(), 88);
        assert_eq!(offset_of!(WorkerArgs, iter_num), 80);
    }

    /// The header's `static_assert`s state the same layout, and its default request count is
    /// the one [`qo_indptr`] fills.
    #[test]
    fn the_header_states_the_runtime_config_layout() {
        let h = include_str!("../../stdlib/include/mpkc_runtime.cuh");
        assert!(h.contains(
            "sizeof(RuntimeConfig) == 56 && offsetof(RuntimeConfig, qo_indptr_buffer) == 16"
        ));
        assert!(h.contains(&format!(
            "#define MPK_MAX_NUM_BATCHED_REQUESTS {MAX_NUM_BATCHED_REQUESTS}"
        )));
    }

    /// Entry MPK_MAX_NUM_BATCHED_REQUESTS is the token count; the offsets never decrease.
    #[test]
    fn qo_indptr_ends_in_the_token_count() {
        for m in [0, 1, 33, 64] {
            let b = qo_indptr(m);
            assert_eq!(b[MAX_NUM_BATCHED_REQUESTS], m);
            assert_eq!(b[0], 0);
            assert!(b.windows(2).all(|w| w[0] <= w[1]));
        }
    }
}
