//! The ordered decision rules of `../shared/docs/design.md`, "Choosing a family (Stage 0)": six
//! rules tried in order, the first that matches picks the family. Each rule says why it fires or
//! why it does not, in the description's own numbers.

use super::desc::{Description, Kind};
use crate::ir::{Dtype, Family};

/// The K depth of one pipeline iteration (design.md rule 3: "K-iterations of 128").
pub const K_STEP: i64 = 128;

/// The fewest K-iterations for which a GEMM-shaped op takes the pipeline (rule 3).
pub const MIN_K_ITERATIONS: i64 = 4;

/// What one rule said about a description.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Verdict {
    /// The rule's number in design.md (1-6).
    pub rule: u8,
    /// The rule in a few words.
    pub title: &'static str,
    /// Whether the rule matched.
    pub fired: bool,
    /// Why it matched, or why not, with the description's numbers.
    pub why: String,
}

/// The outcome of classifying one description.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Classification {
    /// The family the first matching rule picks.
    pub family: Family,
    /// The rule that fired.
    pub fired: Verdict,
    /// The rules tried before it, in order, each with why it did not fire.
    pub earlier: Vec<Verdict>,
}

/// The letter design.md gives a family (A pipeline, B consumer with regions, C monolithic
/// consumer, D consumer without SMEM, E sub-op helper).
pub fn letter(f: Family) -> char {
    match f {
        Family::Pipeline => 'A',
        Family::Consumer => 'B',
        Family::ConsumerMonolith => 'C',
        Family::ConsumerNoSmem => 'D',
        Family::Helper => 'E',
    }
}

/// The number of K-iterations of [`K_STEP`] a GEMM of reduction length `k` takes.
pub fn k_iterations(k: i64) -> i64 {
    k / K_STEP + i64::from(k % K_STEP != 0)
}

type Rule = fn(&Description) -> (bool, String);

/// Rules 1-5 in design.md's order: number, title, family, test. Rule 6 ([`staged`]) takes
/// whatever they leave.
const RULES: &[(u8, &str, Family, Rule)] = &[
    (1, "sub-op inside another task", Family::Helper, sub_op),
    (2, "attention-shaped", Family::ConsumerMonolith, attention),
    (
        3,
        "GEMM-shaped with at least 4 K-iterations",
        Family::Pipeline,
        gemm_pipeline,
    ),
    (
        4,
        "GEMM-shaped with fewer K-iterations (a memory-bound GEMV)",
        Family::Consumer,
        gemv,
    ),
    (
        5,
        "elementwise or gather, no reuse through SMEM",
        Family::ConsumerNoSmem,
        no_smem,
    ),
];

/// Applies the rules to `d` in order; the first that matches decides.
pub fn classify(d: &Description) -> Classification {
    let mut earlier = Vec::new();
    for (rule, title, family, test) in RULES {
        let (fired, why) = test(d);
        let v = Verdict {
            rule: *rule,
            title,
            fired,
            why,
        };
        if fired {
            return Classification {
                family: *family,
                fired: v,
                earlier,
            };
        }
        earlier.push(v);
    }
    let (_, why) = staged(d);
    Classification {
        family: Family::Consumer,
        fired: Verdict {
            rule: 6,
            title: "anything else that stages data through SMEM",
            fired: true,
            why,
        },
        earlier,
    }
}

fn kind(d: &Description) -> &'static str {
    d.kind.value.as_str()
}

fn sub_op(d: &Description) -> (bool, String) {
    if d.kind.value == Kind::SubOp {
        (true, format!("kind `sub-op`: a small op on a [{} x {}] tile already in its host task's SMEM, so a device helper called from that task's body, not a task of its own", d.extent_or("M", 1), d.extent_or("N", 1)))
    } else {
        (
            false,
            format!("kind `{}` is a task of its own, not a sub-op", kind(d)),
        )
    }
}

fn attention(d: &Description) -> (bool, String) {
    if d.kind.value == Kind::Attention {
        (true, format!("kind `attention`: {} heads of qk {} / v {} over a KV sequence of {}: one consumer with a monolithic region whose internal offsets are the kernel's own", d.extent_or("heads", 1), d.extent_or("qk", 1), d.extent_or("v", 1), d.extent_or("kv_len", 1)))
    } else {
        (false, format!("kind `{}` is not attention-shaped", kind(d)))
    }
}

fn gemm_words(d: &Description) -> String {
    let batch = d.extent_or("batch", 1);
    let per = if batch > 1 {
        format!(" (x{batch} problems)")
    } else {
        String::new()
    };
    format!(
        "a [{} x {}] weight{per}, K = {} is {} K-iteration{} of {K_STEP}",
        d.extent_or("N", 1),
        d.extent_or("K", 1),
        d.extent_or("K", 1),
        k_iterations(d.extent_or("K", 1)),
        if k_iterations(d.extent_or("K", 1)) == 1 {
            ""
        } else {
            "s"
        }
    )
}

/// True for a batched GEMV: kind `gemv` with `batch` > 1, independent matrix-vector products
/// each of whose weights multiplies its own activation vector (the heads of W_UK / W_UV, which
/// dsv3-decode-ops.md lists as "GEMV (batched)"). Rule 3's pipeline streams the tiles of one
/// weight matrix against one activation tile that all its tasks load at the same coordinates;
/// a batch of per-head products has no such shared activation, so it is rule 4's GEMV whatever
/// its K. A batched `gemm` (routed experts: each expert's tiles meet the tokens' shared
/// activation rows) is not one.
pub fn batched_gemv(d: &Description) -> bool {
    d.kind.value == Kind::Gemv && d.extent_or("batch", 1) > 1
}

fn gemm_pipeline(d: &Description) -> (bool, String) {
    if !d.kind.value.gemm_shaped() {
        return (false, format!("kind `{}` is not GEMM-shaped", kind(d)));
    }
    if batched_gemv(d) {
        return (
            false,
            format!(
                "{}: a batched GEMV, each of the {} weights multiplying its own activation vector, not one weight matrix whose tiles share an activation tile",
                gemm_words(d),
                d.extent_or("batch", 1)
            ),
        );
    }
    let iters = k_iterations(d.extent_or("K", 1));
    if iters >= MIN_K_ITERATIONS {
        let fp8 =
            if d.dtype("weight") == Some(Dtype::E4m3) || d.dtype("weight") == Some(Dtype::E5m2) {
                "; an fp8 128 x 128 weight tile is 16 KiB, exactly one page"
            } else {
                ""
            };
        (
            true,
            format!(
                "{}, at least {MIN_K_ITERATIONS}: a pipeline (TMA ring, tensor-core MMA, epilogue){fp8}",
                gemm_words(d)
            ),
        )
    } else {
        (
            false,
            format!("{}, fewer than {MIN_K_ITERATIONS}", gemm_words(d)),
        )
    }
}

fn gemv(d: &Description) -> (bool, String) {
    if batched_gemv(d) {
        (true, format!("{}: a batched GEMV (one matrix-vector product per problem, no shared activation tile), so a consumer GEMV whose nwarps is the smallest count that does not raise the wave-quant tie ceil(items / (ntasks * nwarps))", gemm_words(d)))
    } else if d.kind.value.gemm_shaped() {
        (true, format!("{}, fewer than {MIN_K_ITERATIONS}: too short a K loop to fill a pipeline, so a consumer GEMV whose nwarps is the smallest count that does not raise the wave-quant tie ceil(items / (ntasks * nwarps))", gemm_words(d)))
    } else {
        (false, format!("kind `{}` is not GEMM-shaped", kind(d)))
    }
}

fn no_smem(d: &Description) -> (bool, String) {
    match d.kind.value {
        Kind::Elementwise => (true, format!("kind `elementwise` over [{} x {}]: each output from the same position of the inputs, no reuse through SMEM", d.extent_or("M", 1), d.extent_or("N", 1))),
        Kind::Gather => (true, format!("kind `gather`: {} row(s) of {} from a table of {} rows, copied straight through, no reuse through SMEM", d.extent_or("M", 1), d.extent_or("N", 1), d.extent_or("rows", 1))),
        k => (false, format!("kind `{}` is neither elementwise nor a gather", k.as_str())),
    }
}

fn staged(d: &Description) -> (bool, String) {
    // Every kind reaches a decision by here: sub-op (1), attention (2), the GEMM-shaped kinds
    // (3 or 4), elementwise and gather (5) leave only the reductions.
    (
        true,
        format!(
            "kind `{}` over rows of {}: partial results are combined across warps through SMEM, a consumer with planner regions",
            kind(d),
            d.extent_or("N", 1)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::desc::parse;

    fn gemm(k: i64) -> Description {
        let t = format!("kind = \"gemm\"\n[shape]\nM = 1\nN = 128\nK = {k}\n[dtype]\ninput = \"bf16\"\nweight = \"bf16\"\noutput = \"bf16\"\n");
        parse(&t, "g").unwrap()
    }

    #[test]
    fn four_k_iterations_is_the_pipeline_boundary() {
        assert_eq!(classify(&gemm(512)).family, Family::Pipeline);
        assert_eq!(classify(&gemm(385)).family, Family::Pipeline);
        assert_eq!(classify(&gemm(384)).family, Family::Consumer);
        let c = classify(&gemm(384));
        assert_eq!(c.fired.rule, 4);
        assert_eq!(c.earlier.len(), 3);
        assert!(
            c.earlier[2].why.contains("3 K-iterations"),
            "{}",
            c.earlier[2].why
        );
    }

    #[test]
    fn a_batched_gemv_is_rule_4_whatever_its_k() {
        let text = |kind: &str, batch: i64| {
            format!("kind = \"{kind}\"\n[shape]\nM = 1\nN = 128\nK = 512\nbatch = {batch}\n[dtype]\ninput = \"bf16\"\nweight = \"bf16\"\noutput = \"bf16\"\n")
        };
        let c = classify(&parse(&text("gemv", 16), "uv").unwrap());
        assert_eq!((c.family, c.fired.rule), (Family::Consumer, 4));
        assert!(
            c.earlier[2].why.contains("batched GEMV"),
            "{}",
            c.earlier[2].why
        );
        // One product (the router gate), or a batched GEMM (routed experts): rule 3.
        assert_eq!(
            classify(&parse(&text("gemv", 1), "g").unwrap()).family,
            Family::Pipeline
        );
        assert_eq!(
            classify(&parse(&text("gemm", 8), "e").unwrap()).family,
            Family::Pipeline
        );
    }

    #[test]
    fn letters_follow_design_md() {
        assert_eq!(letter(Family::Pipeline), 'A');
        assert_eq!(letter(Family::Helper), 'E');
    }
}
