//! Warp-collective operations in an inline body: the calls and PTX instructions every lane of a
//! warp (or of its member mask) must execute together. Two bodies run where the lanes do not:
//! a consumer ring's loader body (lane 0 of the loader warp alone, I-R1) and a pipeline's
//! epilogue map (called per stored element, under the consumer's `n < M_REAL && row < N`
//! guard, which splits the lanes of a warp). Read by `valid::body_sync` (E0406).
//!
//! What counts as collective:
//! - CUDA's warp intrinsics: `__syncwarp` and every `__<name>_sync` (`__shfl_xor_sync`,
//!   `__ballot_sync`, `__reduce_add_sync`, `__match_any_sync`, …; CUDA C++ Programming Guide,
//!   "Warp Shuffle Functions", "Warp Vote Functions", "Warp Reduce Functions");
//! - a function of mpkc's prelude whose body uses one of these, directly or through another
//!   (`mpkc::warp_sum`, `mpkc::warp_argmax`, `mpkc::mma_bf16_m16n8k16`), read from the
//!   prelude itself ([`prelude_collectives`]);
//! - cooperative groups' warp tiles (`tiled_partition`, `coalesced_threads`), whose `shfl`,
//!   `ballot` and `sync` are the intrinsics above;
//! - a PTX instruction of an `asm` string with a `.sync` or `.aligned` qualifier (PTX ISA:
//!   `shfl.sync`, `vote.sync`, `redux.sync`, `match.sync`, `elect.sync`, `bar.warp.sync`,
//!   `mma.sync.aligned`, `ldmatrix.sync.aligned`, `tcgen05.ld.sync.aligned`,
//!   `wgmma.mma_async.sync.aligned`: "the mandatory `.sync` qualifier … all threads in the
//!   warp", "`.aligned` … all threads in the warp must execute the same instruction").

use crate::front::cuda::{block_end, identifiers};
use std::collections::BTreeSet;
use std::ops::Range;

/// One warp-collective use in a body: its byte range in the body's code and what the body does,
/// as a message's predicate says it (`` calls the warp-collective `__shfl_xor_sync` ``, `` issues
/// the warp-collective PTX `vote.sync.ballot.b32` ``).
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Collective {
    pub at: Range<usize>,
    pub what: String,
}

/// Whether the identifier `w` is a CUDA warp intrinsic: `__syncwarp` or `__<name>_sync` (not
/// `__syncthreads`, the block-wide barrier, which is another rule's).
fn is_warp_intrinsic(w: &str) -> bool {
    w == "__syncwarp" || (w.starts_with("__") && w.ends_with("_sync") && w.len() > 7)
}

/// Whether the PTX instruction name `name` (`shfl.sync.bfly.b32`) carries a `.sync` or
/// `.aligned` qualifier (after its opcode).
fn is_collective_instruction(name: &str) -> bool {
    name.split('.')
        .skip(1)
        .any(|q| q == "sync" || q == "aligned")
}

/// The PTX instructions of `lit` (a string literal's text) that are warp-collective, each with
/// its name's byte range: every name that starts an instruction ([`super::asm_text::starts_instruction`])
/// and carries `.sync` or `.aligned`. A guard `@p` before it changes nothing.
fn collective_instructions(lit: &str) -> Vec<(Range<usize>, &str)> {
    let b = lit.as_bytes();
    let name_char = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'.' || c == b':';
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        // (The letter of an escape sequence, `\t` in the source text, is no name.)
        let escape = i > 0 && b[i - 1] == b'\\';
        if escape || !b[i].is_ascii_alphabetic() || !super::asm_text::starts_instruction(lit, i) {
            i += 1;
            continue;
        }
        let end = (i..b.len()).find(|&k| !name_char(b[k])).unwrap_or(b.len());
        let name = &lit[i..end];
        if is_collective_instruction(name) {
            out.push((i..end, name));
        }
        i = end.max(i + 1);
    }
    out
}

/// The functions of mpkc's prelude (`stdlib/include/mpkc_prelude.cuh`) that are
/// warp-collective: each `__device__` function whose body uses a warp intrinsic, a collective
/// PTX instruction, or another such function of the prelude (to a fixed point). Read once.
pub(super) fn prelude_collectives() -> &'static BTreeSet<String> {
    static SET: std::sync::OnceLock<BTreeSet<String>> = std::sync::OnceLock::new();
    SET.get_or_init(|| {
        prelude_closure(|body| {
            identifiers(body).iter().any(|(_, w)| is_warp_intrinsic(w))
                || crate::front::cuda::joined_strings(body)
                    .iter()
                    .any(|s| !collective_instructions(&s.text).is_empty())
        })
    })
}

/// The functions of mpkc's prelude that sync on a named barrier: each `__device__` function
/// whose body issues a PTX `bar`/`barrier` instruction, or calls such a function of the prelude
/// (to a fixed point): `named_barrier_sync`, `named_barrier_or`, `batch_argmax`, `grid_barrier`.
/// Read once; `valid::divergent_barriers` takes their calls for barrier uses.
pub(super) fn prelude_barrier_functions() -> &'static BTreeSet<String> {
    static SET: std::sync::OnceLock<BTreeSet<String>> = std::sync::OnceLock::new();
    SET.get_or_init(|| {
        prelude_closure(|body| !super::asm_barriers::barrier_instructions(body).is_empty())
    })
}

/// The `__device__` functions of mpkc's prelude whose body `seed` accepts, and every function of
/// the prelude that calls one of them, to a fixed point.
fn prelude_closure(seed: impl Fn(&str) -> bool) -> BTreeSet<String> {
    let text = crate::back::SUPPORT_HEADERS
        .iter()
        .find(|(n, _)| *n == "mpkc_prelude.cuh")
        .map_or("", |(_, t)| t);
    let bodies = device_functions(text);
    let mut set: BTreeSet<String> = bodies
        .iter()
        .filter(|(_, body)| seed(body))
        .map(|(name, _)| name.clone())
        .collect();
    loop {
        let more: Vec<String> = bodies
            .iter()
            .filter(|(name, body)| {
                !set.contains(name) && identifiers(body).iter().any(|(_, w)| set.contains(*w))
            })
            .map(|(name, _)| name.clone())
            .collect();
        if more.is_empty() {
            break set;
        }
        set.extend(more);
    }
}

/// Each `__device__` function defined in `text`: its name and its body's text (`{ … }`).
fn device_functions(text: &str) -> Vec<(String, &str)> {
    let ids = identifiers(text);
    let mut out = Vec::new();
    for (k, &(at, w)) in ids.iter().enumerate() {
        if w != "__device__" {
            continue;
        }
        // The name: the last identifier before the first `(` after `__device__`.
        let Some(open) = text[at..].find('(').map(|p| at + p) else {
            continue;
        };
        let Some(&(_, name)) = ids[k..].iter().take_while(|(i, _)| *i < open).last() else {
            continue;
        };
        // Its body: the first `{` after the parameter list, unless a `;` (a declaration) comes
        // first.
        let Some(close) = text[open..].find(')').map(|p| open + p) else {
            continue;
        };
        let rest = &text[close..];
        let (Some(brace), semi) = (rest.find('{'), rest.find(';')) else {
            continue;
        };
        if semi.is_some_and(|s| s < brace) {
            continue;
        }
        let start = close + brace;
        if let Some(end) = block_end(text, start) {
            out.push((name.to_string(), &text[start..end]));
        }
    }
    out
}

/// Every warp-collective use of an inline body `raw` (as written; `stripped`, the same with
/// comments and literals blanked), in order of position.
pub(super) fn collectives(raw: &str, stripped: &str) -> Vec<Collective> {
    let prelude = prelude_collectives();
    let mut out: Vec<Collective> = Vec::new();
    for (i, w) in identifiers(stripped) {
        let end = i + w.len();
        let what = if is_warp_intrinsic(w) {
            format!("calls the warp-collective `{w}`")
        } else if w == "tiled_partition" || w == "coalesced_threads" {
            format!("makes a cooperative groups warp tile (`{w}`), whose operations are warp-collective")
        } else if prelude.contains(w) && stripped[..i].trim_end().ends_with("mpkc::") {
            format!("calls the warp-collective `mpkc::{w}`")
        } else {
            continue;
        };
        out.push(Collective { at: i..end, what });
    }
    for s in super::asm_text::asm_strings(raw) {
        for (r, name) in collective_instructions(&s.text) {
            out.push(Collective {
                at: s.source(r),
                what: format!("issues the warp-collective PTX `{name}`"),
            });
        }
    }
    out.sort_by_key(|c| c.at.start);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prelude_collectives_are_read_from_the_prelude() {
        let set = prelude_collectives();
        for f in [
            "warp_sum",
            "warp_argmax",
            "used_page_mask",
            "mma_bf16_m16n8k16",
        ] {
            assert!(set.contains(f), "{f} missing from {set:?}");
        }
        // Per-thread helpers are not collective.
        for f in ["lane_id", "warp_id", "ld_global_nc_v8", "cp_async_commit"] {
            assert!(!set.contains(f), "{f} taken for a collective");
        }
    }

    #[test]
    fn the_prelude_barrier_functions_are_read_from_the_prelude() {
        let set = prelude_barrier_functions();
        for f in ["named_barrier_sync", "named_barrier_or", "batch_argmax"] {
            assert!(set.contains(f), "{f} missing from {set:?}");
        }
        assert!(!set.contains("warp_sum"), "{set:?}");
    }

    #[test]
    fn intrinsics_prelude_calls_and_ptx_are_found() {
        let raw = r#"
  float v = mpkc::warp_sum(1.f);  // __shfl_sync in a comment is nothing
  unsigned u = __ballot_sync(0xffffffffu, v > 0.f);
  int l = mpkc::lane_id();
  asm volatile("vote.sync.ballot.b32 %0, 1, 0xffffffff;" : "=r"(u));
  asm volatile("@p mbarrier.arrive.shared.b64 _, [%0];\n\tredux.sync.or.b32 %1, %1, -1;" :: "r"(0), "r"(u));
  asm volatile("elect.sync %0|p, 0xffffffff;" : "=r"(u));
  const char *s = "shfl.sync.bfly.b32";
"#;
        let stripped = crate::valid::body::strip_comments_and_strings(raw);
        let found: Vec<String> = collectives(raw, &stripped)
            .into_iter()
            .map(|c| c.what)
            .collect();
        assert_eq!(
            found,
            [
                "calls the warp-collective `mpkc::warp_sum`",
                "calls the warp-collective `__ballot_sync`",
                "issues the warp-collective PTX `vote.sync.ballot.b32`",
                "issues the warp-collective PTX `redux.sync.or.b32`",
                "issues the warp-collective PTX `elect.sync`",
            ]
        );
    }
}
