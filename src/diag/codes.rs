//! The registry of diagnostic codes: each code once, with its family, the invariant of
//! `mpk-v2-contract.md` §9 it enforces (if any) and a one-line summary. Codes are never reused;
//! a retired code stays here marked as such.
//!
//! Families: `E00xx` syntax and semantics, `E01xx` SMEM/planner (I-S*), `E02xx` page lifecycle
//! (I-P*), `E03xx` semaphores (I-M*), `E04xx` roles/threads/barriers (I-R*), `E05xx`
//! TMEM/tcgen05/TMA (I-T*), `E06xx` host wiring (I-H*), `E07xx` external tools.

/// One registered code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodeInfo {
    /// `E0103`.
    pub code: &'static str,
    /// Family name (`syntax`, `smem`, `pages`, `sems`, `roles`, `tmem`, `wiring`, `tools`).
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
    TYPE_MISMATCH = "E0005", "syntax", None, "a value has the wrong type (float for an integer, unknown dtype or type)";
    OUT_OF_RANGE = "E0006", "syntax", None, "a parameter value lies outside its declared range";
    MISSING = "E0007", "syntax", None, "a required item or parameter value is missing";
    BAD_KEYWORD = "E0008", "syntax", None, "an item names a family, target, swizzle, hint or role that does not exist";
    BODY_MISMATCH = "E0009", "syntax", None, "the body template and the declared tensors, params or regions disagree";
    UNKNOWN_INSTANCE = "E0010", "syntax", None, "an instance or `--param` names something the contract does not declare";
    FAMILY_ITEM = "E0011", "syntax", None, "an item is not allowed in the task's family";

    REGION_SIZE = "E0101", "smem", Some("I-S1"), "a region size is negative";
    REGION_ALIGN = "E0102", "smem", Some("I-S1"), "a region alignment is not a power of two";
    SMEM_BUDGET = "E0103", "smem", Some("I-S3"), "the regions need more shared memory than the target allows";
    REGION_PAGES = "E0104", "smem", Some("I-S1"), "an explicit page count is too small for the region";
    TOO_MANY_REGIONS = "E0105", "smem", Some("I-S2"), "a task declares more than 16 regions";
    PLACEMENT = "E0106", "smem", Some("I-S4"), "MPK's planner cannot place the regions on 14 pages";
    REMAP_OVERFLOW = "E0107", "smem", Some("I-S5"), "the physical page remap puts a region past the capacity (page 13 is partial)";
    NONCONTIGUOUS = "E0108", "smem", Some("I-S1"), "a region is declared non-contiguous";
    SWIZZLE_ALIGN = "E0109", "smem", Some("I-S8"), "a TMA or UMMA target region is under-aligned for its swizzle";
    REGION_USE = "E0110", "smem", Some("I-S9"), "the body addresses a region the contract does not declare, or is too small for it";
    MONOLITH_REGIONS = "E0111", "smem", Some("I-S10"), "a monolithic consumer declares other than exactly one region";
    NO_SMEM_REGIONS = "E0112", "smem", Some("I-S11"), "a consumer-no-smem task declares regions";

    TOO_MANY_ORDINALS = "E0301", "sems", Some("I-M1"), "the task needs more than 31 op-private semaphore ordinals";

    BARRIER_ID = "E0401", "roles", Some("I-R2"), "a named barrier id is outside 1-15 or reserved by the runtime";
    BARRIER_THREADS = "E0402", "roles", Some("I-R2"), "a named barrier's thread count is not the 128 consumer threads";
    ROLE_WARPS = "E0403", "roles", Some("I-R1"), "a role is bound to warps other than the runtime's layout";

    TMEM_COLS = "E0501", "tmem", Some("I-T1"), "the TMEM column count is not a power of two in [32, 512]";

    NVCC_FAILED = "E0701", "tools", None, "nvcc rejected the generated code";
}

/// Looks up a code (`E0103`, case-insensitive, with or without the `E`).
pub fn lookup(code: &str) -> Option<&'static CodeInfo> {
    let norm = code.trim().to_ascii_uppercase();
    let norm = if norm.starts_with('E') { norm } else { format!("E{norm}") };
    REGISTRY.iter().find(|c| c.code == norm)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_sorted() {
        for w in REGISTRY.windows(2) {
            assert!(w[0].code < w[1].code, "{} then {}", w[0].code, w[1].code);
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
    pages::PAGES.iter().find(|(c, _)| *c == code).map(|(_, p)| *p)
}

/// Codes that have an explanation page.
pub fn documented() -> impl Iterator<Item = &'static str> {
    pages::PAGES.iter().map(|(c, _)| *c)
}
