//! Reading SASS listings (`cuobjdump --dump-sass`, `nvdisasm`): one instruction per line as
//! `/*0a30*/  @!P0 LDG.E R4, desc[UR4][R2.64] ;  /* 0x… */`. Used by the post-ptxas checks
//! ([`super::sass_lint`]) and by the tests that read the SASS of generated kernels.

/// The address and text of an instruction line: `/*0a30*/  @!P0 LDG.E R4, … ;  /* 0x… */`
/// gives `(0xa30, "@!P0 LDG.E R4, …")` (the predicate kept, the `;` and the encoding dropped).
/// Lines that hold no instruction (encodings, labels, headers) give `None`.
pub fn instruction(line: &str) -> Option<(u64, &str)> {
    let rest = line.trim_start().strip_prefix("/*")?;
    let (addr, rest) = rest.split_once("*/")?;
    let addr = u64::from_str_radix(addr, 16).ok()?;
    let body = rest.split_once(';').map_or(rest, |(b, _)| b).trim();
    (!body.is_empty()).then_some((addr, body))
}

/// The instruction texts of a listing, in order ([`instruction`] without the address).
pub fn instructions(sass: &str) -> Vec<&str> {
    sass.lines()
        .filter_map(instruction)
        .map(|(_, body)| body)
        .collect()
}

/// The opcode of an instruction text, with its modifiers, without its predicate:
/// `@!P0 LDG.E.128 R4, …` gives `LDG.E.128`.
pub fn opcode(ins: &str) -> &str {
    let mut words = ins.split_whitespace();
    let first = words.next().unwrap_or("");
    if first.starts_with('@') {
        words.next().unwrap_or("")
    } else {
        first
    }
}

/// The SASS architecture a cuobjdump listing names (`code for sm_90a`, or `.target sm_90a`).
pub fn arch(sass: &str) -> Option<&str> {
    sass.lines()
        .find_map(|l| {
            let l = l.trim();
            l.strip_prefix("code for ")
                .or_else(|| l.strip_prefix(".target"))
        })
        .map(str::trim)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_instruction_lines_only() {
        assert_eq!(
            instruction("        /*77c0*/   @!P2 BRA 0x7910 ;   /* 0x0 */"),
            Some((0x77c0, "@!P2 BRA 0x7910"))
        );
        assert_eq!(instruction("   /* 0x000e620000000800 */"), None);
        assert_eq!(instruction("\t\tFunction : k"), None);
        assert_eq!(
            opcode("@!P2 LDGSTS.E.BYPASS.128 [R43], desc[UR4][R40.64]"),
            "LDGSTS.E.BYPASS.128"
        );
        assert_eq!(opcode("FENCE.VIEW.ASYNC.S"), "FENCE.VIEW.ASYNC.S");
        assert_eq!(
            arch("\n\tcode for sm_90a\n\t.target\tsm_90a\n"),
            Some("sm_90a")
        );
    }
}
