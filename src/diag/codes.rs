//! The registry of diagnostic codes: each code once, with its family, the invariant of
//! `mpk-v2-contract.md` §9 it enforces (if any) and a one-line summary. Codes are never reused;
//! a retired code stays here marked as such.
//!
//! Families: `E00xx` syntax and semantics, `E01xx` SMEM/planner (I-S*), `E02xx` page lifecycle
//! (I-P*), `E03xx` semaphores (I-M*), `E04xx` roles/threads/barriers (I-R*), `E05xx`
//! TMEM/tcgen05/TMA (I-T*), `E06xx` host wiring (I-H*), `E07xx` external tools, `E08xx` the MPK tree `mpkc wire` edits (`mpk-tree`); E0030 (`internal`) is mpkc's own fault. The `backend`
//! family (what the lowering cannot express) is reported by `check`, like every other rule, so
//! that what check accepts is what build generates; only `tools` (nvcc) is `build`'s alone.

/// One registered code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodeInfo {
    /// `E0103`.
    pub code: &'static str,
    /// Family name (`syntax`, `smem`, `pages`, `sems`, `roles`, `tmem`, `wiring`, `tools`,
    /// `backend`, `mpk-tree`, `internal`).
    pub family: &'static str,
    /// The invariant id of `mpk-v2-contract.md` §9, if the code enforces one.
    pub invariant: Option<&'static str>,
    /// One-line summary.
    pub summary: &'static str,
}

macro_rules! registry {
    ($( $name:ident = $code:literal, $family:literal, $inv:expr, $summary:literal; )*) => {
        $(
            #[doc = $summary]
            pub const $name: &str = $code;
        )*
        /// Every code, in numeric order.
        pub const REGISTRY: &[CodeInfo] = &[
            $( CodeInfo { code: $code, family: $family, invariant: $inv, summary: $summary }, )*
        ];
    };
}

registry! {
    SYNTAX = "E0001", "syntax", None, "the contract does not parse";
    UNKNOWN_NAME = "E0002", "syntax", None, "a name does not resolve to a declaration of the expected kind";
    DUPLICATE = "E0003", "syntax", None, "a name or a single-use item is declared twice";
    ARITH = "E0004", "syntax", None, "an integer expression overflows, divides by zero or is negative where it may not be";
    TYPE_MISMATCH = "E0005", "syntax", None, "a value has the wrong type (float for an integer, unknown dtype or type, a range bound of the other kind, a direction its tensor role contradicts)";
    OUT_OF_RANGE = "E0006", "syntax", None, "a parameter value lies outside its type or its declared range, or that range is inverted or empty";
    MISSING = "E0007", "syntax", None, "a required item or parameter value is missing";
    BAD_KEYWORD = "E0008", "syntax", None, "an item names a family, target, swizzle, hint or role that does not exist";
    BODY_MISMATCH = "E0009", "syntax", None, "the body template and the declared tensors, params or regions disagree";
    UNKNOWN_INSTANCE = "E0010", "syntax", None, "an instance or `--param` names something the contract does not declare";
    FAMILY_ITEM = "E0011", "syntax", None, "an item is not allowed in the task's family";
    NAME_CLASH = "E0012", "syntax", None, "a name collides with a C++ keyword, a generated name or another generated file";
    PIPELINE_SHAPE = "E0013", "backend", None, "a pipeline contract has a shape the pipeline lowering does not take";
    NOT_LOWERED = "E0014", "wiring", Some("I-H7"), "a declared item is not lowered: it would change nothing in the generated files";
    UNREACHED_STAGES = "W0015", "wiring", None, "ring stages past the task's K iterations are never filled";
    UNJOINED_RANGES = "W0016", "syntax", None, "more than three ranged params: their ends are checked one at a time, not together";
    UNUSED_PARAM = "W0017", "syntax", None, "a declared param is used nowhere: no expression, body scalar or inline body names it";
    REFERENCE = "E0018", "syntax", None, "a `reference` cannot be used: its file is missing or not Python, binds no such function or its `def` cannot take verify's call, a tolerance key is unknown or two disagree, or the task already has mpkc's reference (a body template, a pipeline without an epilogue map) or no kernel (a helper)";
    UNDECLARED_FP8_SCALES = "W0019", "syntax", None, "an fp8 output has no `scale of` tensor while an f32 or ue8m0 output with no role could be its scales: verify compares its raw fp8 codes";
    TENSOR_VIEW = "E0020", "syntax", None, "a tensor view's row stride or offset does not fit its rows, is not 16-byte aligned, or no generated code reads the tensor through it (an inline body that never names `<name>_row_stride`)";
    IN_PLACE = "E0021", "syntax", None, "an `inout` tensor the family, lowering or body cannot read and write in place (a TMA operand, a pipeline, a body without an in-place pair)";
    RUNTIME_PARAM = "E0022", "syntax", None, "a run-time param (`= runtime`) is not a ranged integer from 1 or more without a step, is set at compile time, is not the only one, or sizes other than a tensor's leading dimension";
    RUNTIME_LOWERING = "E0023", "backend", None, "the lowering cannot take the token count at run time (`= runtime`)";
    HELPER_UNKNOWN = "E0024", "syntax", None, "a `use` names no helper: no task of that name in the file it names, a task that is not a helper (family E), or a file that is missing or does not parse";
    HELPER_HOST = "E0025", "syntax", None, "a task that cannot host a helper uses one: a pipeline (its generated roles have no body to call it from; its epilogue map is a per-element function) or a body template (no inline body to call it), a helper (helpers do not nest; one using itself), a family without SMEM using a helper with regions, or a task building for a target the helper does not declare";
    HELPER_PARAMS = "E0026", "syntax", None, "a `use` binds the helper's params wrongly: an unknown param, a value the helper's type or range rejects, or values at which the helper does not lower, its `static_assert` fails or it breaks another rule of its own check";
    HELPER_CALL = "E0027", "syntax", None, "the inline body does not call a helper it uses, calls it with a number of arguments its signature does not take, or the loader body calls it";
    PAGED_KV = "E0028", "syntax", None, "a paged KV cache (`paged(...)`) does not fit its tensor, the page table's request slots or its pool, is written, is not the only one, or no inline body reads it";
    ROUTE = "E0029", "syntax", None, "a `route` the pipeline lowering cannot run: not a pipeline, weights that are not a 3-D `weight` TMA tensor [experts, N, K], ids that are not an int32 `index` input [m_real, slots], operand, output or scale shapes that do not match the mode, an epilogue other than `store bf16` (and `residual add` for `sum slots`), split-K, a run-time token count, or a task count other than the mode's";
    INTERNAL = "E0030", "internal", None, "mpkc rejected a task instance without reporting why: a bug in mpkc, never a fault of the contract";
    STATIC_ASSERT = "E0031", "syntax", None, "an inline body's `static_assert` over the params fails at the instance's values (nvcc would reject the build)";
    REQUIREMENT = "E0032", "syntax", None, "a `require` relation between the params does not hold at an instance's values, its defaults or a `--param` value";

    REGION_SIZE = "E0101", "smem", Some("I-S1"), "a region size is negative";
    REGION_ALIGN = "E0102", "smem", Some("I-S1"), "a region alignment is not a power of two, or is above the 1024 bytes the dynamic SMEM base guarantees";
    SMEM_BUDGET = "E0103", "smem", Some("I-S3"), "the regions need more shared memory than the target allows";
    REGION_PAGES = "E0104", "smem", Some("I-S1"), "an explicit page count is too small for the region";
    TOO_MANY_REGIONS = "E0105", "smem", Some("I-S2"), "a task declares more than 16 regions";
    PLACEMENT = "E0106", "smem", Some("I-S4"), "MPK's planner cannot place the regions on 14 pages";
    REMAP_OVERFLOW = "E0107", "smem", Some("I-S5"), "the physical page remap puts a region past the capacity (page 13 is partial)";
    NONCONTIGUOUS = "E0108", "smem", Some("I-S1"), "a region is declared non-contiguous";
    SWIZZLE_ALIGN = "E0109", "smem", Some("I-S8"), "a TMA or UMMA target region is under-aligned for its swizzle";
    REGION_USE = "E0110", "smem", Some("I-S9"), "the body addresses a region the contract does not declare, or is too small for it, or declares shared memory of its own (`__shared__`)";
    MONOLITH_REGIONS = "E0111", "smem", Some("I-S10"), "a monolithic consumer declares other than exactly one region";
    NO_SMEM_REGIONS = "E0112", "smem", Some("I-S11"), "a consumer-no-smem task declares regions";
    TARGET_CAPACITY = "E0113", "smem", Some("I-S6"), "a target's SMEM capacity exceeds what the hardware lets a block opt into";
    REGION_RANGE = "E0114", "smem", Some("I-S1"), "a region's alignment, page count or release step is out of MPK's 32-bit range";
    HELD_ALIGN = "E0115", "smem", Some("I-S1"), "a region holding typed members (mbarriers, the TMEM address) is aligned or planned below what they need";
    RING_TAIL = "W0116", "smem", Some("I-S9"), "a ring region holds a page or more past the whole slots its body uses";
    RING_SHALLOW = "W0117", "smem", Some("I-S9"), "a ring region holds two slots only: each copy is waited for before its group computes, none in flight behind it";
    PACK_NO_EFFECT = "W0118", "smem", Some("I-S12"), "`pack` on a region that is a page or more in every build of the contract: MPK's planner packs only regions smaller than a page";

    TILES_PER_TASK = "E0201", "pages", Some("I-P6"), "a pipeline task covers more than one tile, so a bounds-fail return would skip the page release";

    TOO_MANY_ORDINALS = "E0301", "sems", Some("I-M1"), "the task needs more than 31 op-private semaphore ordinals";
    SEM_COUNT = "E0302", "sems", Some("I-M2"), "an mbarrier's init count differs from the number of arrivals per phase";
    REINIT = "E0303", "sems", Some("I-M4"), "an mbarrier lacks the start-of-task re-init it needs, or has one that races its waiter";
    EXPECT_TX = "E0304", "sems", Some("I-M6"), "the bytes landing on a full barrier do not fit the stage they land in, or do not add up to the expect_tx it is armed with";
    SHARED_EMPTY = "E0305", "sems", Some("I-M3"), "a channel shares an empty edge it cannot share";
    CHANNEL_SHAPE = "E0306", "sems", Some("I-M3"), "a channel's depth differs from its ring's stages, or a ring has no empty edge";
    DEADLOCK = "E0310", "sems", Some("I-M8"), "the protocol model check finds a wait that can never complete";
    ARRIVALS = "E0311", "sems", Some("I-M7"), "the protocol model check finds a lost or double arrival, or a wait that passes on the wrong phase";
    USE_AFTER_RELEASE = "E0312", "backend", Some("I-P1"), "the protocol model check finds a read of TMEM or SMEM in the lowered program after another role gave it back";

    BARRIER_ID = "E0401", "roles", Some("I-R2"), "a named barrier id is outside 1-15 or reserved by the runtime";
    BARRIER_THREADS = "E0402", "roles", Some("I-R2"), "a named barrier's thread count is not the 128 consumer threads";
    ROLE_WARPS = "E0403", "roles", Some("I-R1"), "a role is bound to warps other than the runtime's layout";
    SETMAXNREG = "E0404", "roles", None, "setmaxnreg targets are illegal or exceed the register file";
    ROLE_UNBOUND = "E0405", "roles", Some("I-R1"), "a channel or sem names a role the task does not bind, or a consumer-only task's `roles` leaves out the consumer its body runs on or the loader of its page hand-off";
    BODY_SYNC = "E0406", "roles", Some("I-R2"), "an inline body synchronises the whole block, uses a reserved barrier id, identifies its task by blockIdx, or (one of several tasks per step) never reads `task_offset`";

    TMEM_COLS = "E0501", "tmem", Some("I-T1"), "the TMEM column count is not a power of two in [32, 512]";
    TMEM_FOOTPRINT = "E0502", "tmem", Some("I-T2"), "the accumulator slots need more TMEM columns than the task allocates";
    TCGEN05_SHAPE = "E0503", "tmem", Some("I-T4"), "the tcgen05.mma shape or types are illegal for its kind";
    WGMMA_SHAPE = "E0504", "tmem", None, "the wgmma shape or types are illegal";
    TARGET_ISA = "E0505", "tmem", None, "the MMA engine does not exist on a declared target";
    ACC_REGISTERS = "E0506", "tmem", None, "the accumulator does not fit the register file of the sm_90a lowering";
    TMA_BOX = "E0507", "tmem", Some("I-T6"), "a TMA box has an extent above 256 elements or an illegal rank";
    TMA_SWIZZLE_SPAN = "E0508", "tmem", Some("I-T6"), "a TMA box's inner extent in bytes differs from its swizzle span";
    TMA_STRIDE = "E0509", "tmem", Some("I-T6"), "a TMA tensor's global row stride is not a multiple of 16 bytes";
    TMA_TASK_ID = "E0510", "tmem", Some("I-T6"), "a task's TaskType is one of the runtime's own (below 100), or outside MPK's TMA range iff it loads through TMA";

    LINEAR_LIMITS = "E0601", "wiring", Some("I-H5"), "a pipeline exceeds the linear family's limits (tokens up to tile N, N a multiple of 128, a tail tile only for bf16) or its epilogue map cannot be applied";
    GRID_WIDE = "E0602", "wiring", Some("I-H4"), "a grid-wide task lacks what its in-op grid barrier needs (skip_after_step0, a justification, the barrier, its counters, a grid_sync), or a per-tile task declares grid barrier counters";
    LEVER_DEFAULT_ON = "W0603", "wiring", Some("I-H7"), "a lever defaults on, which changes the default build";
    TASK_SLOTS = "E0604", "wiring", Some("I-H1"), "a task has more input or output tensors than the TaskDesc has pointer slots";
    TASK_TYPE_CLASH = "E0605", "wiring", None, "two tasks checked or built together declare one TaskType (`task_id`, or a split-K pipeline's `reduce_task_id`), or take one enum name in MPK's `enum TaskType` (`foo` and `foo_v2`)";
    LEVER_DEFAULT_CLASH = "E0606", "wiring", Some("I-H7"), "two tasks checked or built together give one lever define different defaults";
    TENSOR_RANK = "E0607", "wiring", Some("I-H1"), "a task's tensor has more extents than MPK's DTensor holds (`MAX_TENSOR_DIMS`, 4)";

    NVCC_FAILED = "E0701", "tools", None, "nvcc rejected the generated code";
    PTXAS_ADVISORY = "W0702", "tools", None, "ptxas reports a potential performance loss in the generated code (e.g. serialised wgmma)";

    WIRE_TAKEN = "E0801", "mpk-tree", None, "`mpkc wire`: the MPK tree already gives the task's TaskType id, enum name or a piece's name to something else";
    WIRE_ANCHOR = "E0802", "mpk-tree", None, "`mpkc wire`: a file or anchor line where a registration piece goes is missing from the MPK tree";
    WIRE_NO_REGISTRATION = "E0803", "mpk-tree", None, "`mpkc wire`: the unit generates no task kernel, so there is nothing to register";
    WIRE_DERIVED_SKIPPED = "W0804", "mpk-tree", None, "`mpkc wire`: a task mpkc derives (a split-K reduce) has no TaskType of its own, so wire leaves it out";
}

/// Looks up a code (`E0103`, case-insensitive, with or without the `E`).
pub fn lookup(code: &str) -> Option<&'static CodeInfo> {
    let norm = code.trim().to_ascii_uppercase();
    if norm.starts_with('E') || norm.starts_with('W') {
        return REGISTRY.iter().find(|c| c.code == norm);
    }
    REGISTRY.iter().find(|c| c.code[1..] == norm)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_sorted() {
        for w in REGISTRY.windows(2) {
            assert!(
                w[0].code[1..] < w[1].code[1..],
                "{} then {}",
                w[0].code,
                w[1].code
            );
        }
    }

    #[test]
    fn lookup_accepts_short_forms() {
        assert_eq!(lookup("e0103").map(|c| c.code), Some("E0103"));
        assert_eq!(lookup("0103").map(|c| c.code), Some("E0103"));
        assert!(lookup("E9999").is_none());
    }
}

mod pages {
    include!(concat!(env!("OUT_DIR"), "/code_pages.rs"));
}

/// The long explanation page of `code` (`docs/codes/<code>.md`), if written.
pub fn long_doc(code: &str) -> Option<&'static str> {
    pages::PAGES
        .iter()
        .find(|(c, _)| *c == code)
        .map(|(_, p)| *p)
}

/// Codes that have an explanation page.
pub fn documented() -> impl Iterator<Item = &'static str> {
    pages::PAGES.iter().map(|(c, _)| *c)
}
