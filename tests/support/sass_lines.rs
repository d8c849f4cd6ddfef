//! SASS with the source lines each instruction came from: `nvdisasm --print-line-info-inline`
//! of a cubin built with `-lineinfo`, parsed into instructions that carry their location and the
//! `inlined at` chain, so that a test can say which line of a generated kernel an instruction
//! belongs to. Also the bare opcode sequence of `cuobjdump --dump-sass` output, to show that a
//! `-lineinfo` build holds the same code as the build without it.

use mpkc::driver::nvcc::Toolchain;
use mpkc::driver::sass::{instruction, instructions, opcode};
use std::path::{Path, PathBuf};
use std::process::Command;

/// One SASS instruction.
#[derive(Clone, Debug)]
pub struct Instr {
    /// Index of the code section (function) it is in, in the order of the disassembly.
    pub section: usize,
    /// Byte offset in its section.
    pub addr: u64,
    /// The opcode with its modifiers, without the predicate (`LDG.E.128.CONSTANT`).
    pub opcode: String,
    /// The whole instruction text.
    pub text: String,
    /// `(file name without directory, line)`: the innermost location first, then each
    /// `inlined at`.
    pub at: Vec<(String, usize)>,
}

impl Instr {
    /// Whether some location of the instruction is line `line` of `file` (a file name).
    pub fn is_at(&self, file: &str, line: usize) -> bool {
        self.at.iter().any(|(f, l)| f == file && *l == line)
    }

    /// The line of `file` the instruction comes from, if any location is in `file`.
    pub fn line_in(&self, file: &str) -> Option<usize> {
        self.at.iter().find(|(f, _)| f == file).map(|(_, l)| *l)
    }
}

/// `nvdisasm` next to nvcc.
pub fn nvdisasm(tc: &Toolchain) -> PathBuf {
    let p = tc
        .nvcc
        .parent()
        .map(|d| d.join("nvdisasm"))
        .unwrap_or_default();
    assert!(
        p.is_file(),
        "no nvdisasm next to {} (scripts/setup)",
        tc.nvcc.display()
    );
    p
}

/// The instructions of `cubin`, with their source lines (empty when it has no line info).
pub fn disassemble(tc: &Toolchain, cubin: &Path) -> Vec<Instr> {
    let out = Command::new(nvdisasm(tc))
        .arg("--print-line-info-inline")
        .arg(cubin)
        .output()
        .unwrap_or_else(|e| panic!("nvdisasm: {e}"));
    assert!(
        out.status.success(),
        "nvdisasm {}: {}",
        cubin.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    parse(&String::from_utf8_lossy(&out.stdout))
}

/// Parses `nvdisasm --print-line-info-inline` output.
pub fn parse(text: &str) -> Vec<Instr> {
    let mut instrs = Vec::new();
    let mut section = 0usize;
    let mut seen_code = false;
    let mut at: Vec<(String, usize)> = Vec::new();
    let mut in_block = false;
    let mut in_text = false;
    for l in text.lines() {
        let t = l.trim();
        if t.starts_with(".section") {
            in_text = t.contains(".text.");
            if in_text {
                if seen_code {
                    section += 1;
                }
                seen_code = true;
            }
            continue;
        }
        if !in_text {
            continue;
        }
        if let Some(rest) = t.strip_prefix("//##") {
            if !in_block {
                at.clear();
                in_block = true;
            }
            at.extend(locations(rest));
            continue;
        }
        if let Some((addr, body)) = instruction(l) {
            in_block = false;
            instrs.push(Instr {
                section,
                addr,
                opcode: opcode(body).to_string(),
                text: body.to_string(),
                at: at.clone(),
            });
        }
    }
    instrs
}

/// The opcodes of `cuobjdump --dump-sass` (or nvdisasm) output, in order.
pub fn opcodes(sass: &str) -> Vec<String> {
    instructions(sass)
        .into_iter()
        .map(|i| opcode(i).to_string())
        .collect()
}

/// Every `"path", line N` of one `//##` comment, as (file name, N).
fn locations(comment: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let mut rest = comment;
    while let Some(q) = rest.find('"') {
        let after = &rest[q + 1..];
        let Some(q2) = after.find('"') else { break };
        let path = &after[..q2];
        let tail = &after[q2 + 1..];
        let num: String = tail
            .trim_start_matches([',', ' '])
            .trim_start_matches("line")
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        if let Ok(n) = num.parse() {
            let name = Path::new(path)
                .file_name()
                .map_or(path.to_string(), |f| f.to_string_lossy().into_owned());
            out.push((name, n));
        }
        rest = tail;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_locations_inline_chains_and_predicates() {
        let text = "\t.section\t.text.k,\"ax\",@progbits\n\
            \t//## File \"/x/include/sm_32_intrinsics.hpp\", line 163 inlined at \"/tmp/a/u.cuh\", line 67\n\
            \t//## File \"/tmp/a/u.cuh\", line 67\n\
            \x20       /*2130*/                   LDG.E.128.CONSTANT R28, desc[UR4][R20.64] ;\n\
            \x20       /*2140*/              @!P0 ST.E.U16 desc[UR4][R4.64], R6 ;\n\
            \t//## File \"/tmp/a/u.cuh\", line 70\n\
            \x20       /*2150*/                   EXIT ;\n";
        let v = parse(text);
        assert_eq!(v.len(), 3);
        assert_eq!(v[0].opcode, "LDG.E.128.CONSTANT");
        assert_eq!(v[0].addr, 0x2130);
        assert_eq!(
            v[0].at,
            vec![
                ("sm_32_intrinsics.hpp".to_string(), 163),
                ("u.cuh".to_string(), 67),
                ("u.cuh".to_string(), 67)
            ]
        );
        assert_eq!(v[1].opcode, "ST.E.U16");
        assert!(v[1].is_at("u.cuh", 67));
        assert_eq!(v[2].line_in("u.cuh"), Some(70));
        assert_eq!(
            opcodes("        /*0070*/                   LDG.E R136, desc[UR14][R136.64] ;   /* 0x0000000e88887981 */\n                                 /* 0x000fe20000000f00 */"),
            vec!["LDG.E".to_string()]
        );
    }
}
