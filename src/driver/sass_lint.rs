//! Checks of a cubin's SASS, after ptxas, for instruction forms that compile without a word but
//! fault on the GPU. Each rule names the form, the targets it applies to and the evidence.
//!
//! Rule `ldgsts-uniform-base` (sm_90 / sm_90a): a `cp.async` with an L2 cache policy whose shared
//! address ptxas folded into `LDGSTS [Rm+URn], desc[URn+1]`: the uniform base overwrites the low
//! half of the policy's register pair. ptxas 13.0 and 13.5 emit the form for sm_100a throughout;
//! for sm_90a they emitted it once (stdlib/linear_fp8_gemv_mma.mpk at K = 512, the test build
//! only), and that kernel stopped on an H100 with CUDA_ERROR_ILLEGAL_INSTRUCTION, which
//! compute-sanitizer placed at that copy (2026-12-05). `mpkc::cp_async_weight16` converts the
//! address inside its asm on sm_90 so that ptxas cannot fold it; this check keeps any other
//! copy from reaching a GPU.

use super::sass;

/// A form one rule rejects: the SASS line and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// The instruction as cuobjdump prints it (address comment and encoding dropped).
    pub instruction: String,
    /// Why the form faults, and what avoids it.
    pub why: &'static str,
}

const LDGSTS_UNIFORM_BASE: &str = "ptxas folded a uniform shared-memory base into this cp.async \
(`[R+UR]`), overwriting the low half of its L2 policy descriptor: an illegal instruction on \
sm_90 (an H100 stopped at such a copy, 2026-12-05). Convert the shared address inside the \
cp.async's asm, as mpkc::cp_async_weight16 does (stdlib/include/mpkc_prelude.cuh)";

/// Whether `ins` is an `LDGSTS` whose shared-memory operand (the first `[...]`) adds a uniform
/// register.
fn ldgsts_with_uniform_base(ins: &str) -> bool {
    if !sass::opcode(ins).starts_with("LDGSTS") {
        return false;
    }
    ins.split_once('[')
        .and_then(|(_, r)| r.split_once(']'))
        .is_some_and(|(smem, _)| smem.split('+').skip(1).any(|t| t.trim().starts_with("UR")))
}

/// The findings of every rule in `listing` (one cuobjdump `--dump-sass` output). Empty: clean.
pub fn check(listing: &str) -> Vec<Finding> {
    let sm90 = sass::arch(listing).is_some_and(|a| a == "sm_90" || a == "sm_90a");
    if !sm90 {
        return Vec::new();
    }
    sass::instructions(listing)
        .into_iter()
        .filter(|i| ldgsts_with_uniform_base(i))
        .map(|i| Finding {
            instruction: i.to_string(),
            why: LDGSTS_UNIFORM_BASE,
        })
        .collect()
}

/// The findings as an error message naming the cubin (one paragraph per finding).
pub fn message(cubin: &str, findings: &[Finding]) -> String {
    let mut m = format!(
        "{cubin}: ptxas emitted {} instruction(s) that fault at run time:",
        findings.len()
    );
    for f in findings {
        m.push_str(&format!("\n  `{}`: {}", f.instruction, f.why));
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The faulting copy of linear_fp8_gemv_mma_expert_down's sm_90a test build (ptxas 13.5,
    /// before the prelude converted the address inside the asm), a clean copy and a plain load.
    const SM90: &str = "
		Function : mpkc_harness_linear_fp8_gemv_mma_expert_down
	.headerflags	@\"EF_CUDA_TEXMODE_UNIFIED EF_CUDA_64BIT_ADDRESS EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)\"
        /*6860*/              @!P2 LDGSTS.E.BYPASS.128 [R43], desc[UR4][R40.64] ;              /* 0x0000000028237fae */
        /*7770*/                   UMOV UR6, UR4 ;                                             /* 0x0000000400067c82 */
        /*77b0*/                   LDGSTS.E.BYPASS.128 [R35+UR6], desc[UR7][R8.64] ;           /* 0x0000000008237dae */
        /*77c0*/                   LDG.E desc[UR4][R2.64+UR8] ;                                /* 0x0000000002007981 */
";

    fn with_arch(listing: &str, arch: &str) -> String {
        format!("\n\tcode for {arch}\n{listing}")
    }

    #[test]
    fn finds_the_folded_copy_on_sm_90a_only() {
        let f = check(&with_arch(SM90, "sm_90a"));
        assert_eq!(
            f.iter().map(|f| f.instruction.as_str()).collect::<Vec<_>>(),
            vec!["LDGSTS.E.BYPASS.128 [R35+UR6], desc[UR7][R8.64]"]
        );
        assert!(message("k.sm_90a.cubin", &f).contains("[R35+UR6]"));
        // sm_100a: the same form is ptxas's ordinary encoding there.
        assert!(check(&with_arch(SM90, "sm_100a")).is_empty());
        // No arch line: not a listing this rule knows.
        assert!(check(SM90).is_empty());
    }

    #[test]
    fn a_register_address_or_an_immediate_offset_is_clean() {
        for ins in [
            "@!P2 LDGSTS.E.BYPASS.128 [R43], desc[UR4][R40.64]",
            "LDGSTS.E.BYPASS.128 [R43+0x800], desc[UR4][R40.64+0x200]",
            "LDG.E desc[UR4][R2.64+UR8]",
        ] {
            assert!(!ldgsts_with_uniform_base(ins), "{ins}");
        }
        assert!(ldgsts_with_uniform_base(
            "LDGSTS.E.BYPASS.128 [R35+UR8+0x800], desc[UR9][R2.64+0x200]"
        ));
    }
}
