//! Reading PTX out of an inline body: the `asm` statements of its C++ ([`asm_statements`]),
//! their string literals joined as C++ joins them ([`asm_strings`]), their operand expressions
//! numbered as PTX's `%N` numbers them ([`asm_operands`]), and where an instruction name can
//! start inside a literal ([`starts_instruction`], [`instruction_starts`]). The rules that read
//! them: `valid::asm_barriers` (barriers), `valid::body_sync` (`%ctaid`, `exit`).

use crate::front::cuda::joined_strings;

/// The string literals of `code` (joined where adjacent) that are an `asm` statement's: its
/// PTX template, its operands' constraints (`asm("…" : "=r"(x))`, `asm volatile`, `__asm__`).
/// A `printf("bar.sync 0")` or a `const char *` holding `%ctaid` is text, not PTX.
pub(super) fn asm_strings(code: &str) -> Vec<crate::front::cuda::JoinedString> {
    let stripped = super::body::strip_comments_and_strings(code);
    let ranges = asm_statements(&stripped);
    joined_strings(code)
        .into_iter()
        .filter(|s| {
            s.at.first()
                .is_some_and(|a| ranges.iter().any(|r| r.contains(a)))
        })
        .collect()
}

/// The byte ranges inside the parentheses of each `asm` statement of `stripped` (comments and
/// literals blanked): `asm`, `__asm` or `__asm__`, then `volatile`, `__volatile__`, `inline` or
/// `goto` qualifiers, then `(` to its matching `)`.
pub(super) fn asm_statements(stripped: &str) -> Vec<std::ops::Range<usize>> {
    let b = stripped.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let word_at = |i: usize| {
        let end = (i..b.len()).find(|&k| !ident(b[k])).unwrap_or(b.len());
        (&stripped[i..end], end)
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !ident(b[i]) || (i > 0 && ident(b[i - 1])) {
            i += 1;
            continue;
        }
        let (w, mut end) = word_at(i);
        if !matches!(w, "asm" | "__asm" | "__asm__") {
            i = end;
            continue;
        }
        // Qualifiers, then the parenthesis.
        loop {
            while end < b.len() && b[end].is_ascii_whitespace() {
                end += 1;
            }
            if end < b.len() && ident(b[end]) {
                let (q, e) = word_at(end);
                if matches!(q, "volatile" | "__volatile__" | "inline" | "goto") {
                    end = e;
                    continue;
                }
            }
            break;
        }
        if b.get(end) != Some(&b'(') {
            i = end.max(i + 1);
            continue;
        }
        let mut depth = 0usize;
        let mut k = end;
        while k < b.len() {
            match b[k] {
                b'(' => depth += 1,
                b')' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
            k += 1;
        }
        out.push(end..k);
        i = k.max(i + 1);
    }
    out
}

/// The operand expressions of the `asm` statement whose parentheses are `r` in `stripped`
/// (comments and literals blanked), numbered as PTX's `%N` numbers them: the outputs, then the
/// inputs (`asm("…" : "=r"(a) : "r"(b), "n"(3))`: `a`, `b`, `3`).
pub(super) fn asm_operands(stripped: &str, r: &std::ops::Range<usize>) -> Vec<String> {
    let inner = &stripped[(r.start + 1).min(r.end)..r.end];
    let b = inner.as_bytes();
    // Top-level `:` (not `::`) ends a section, `,` an operand.
    let mut sections: Vec<Vec<&str>> = vec![Vec::new()];
    let (mut start, mut depth, mut k) = (0usize, 0i32, 0usize);
    while k < b.len() {
        match b[k] {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            // `params::n` is a scope; `"…" :: "r"(x)` is an empty output section.
            b':' if depth == 0
                && b.get(k + 1) == Some(&b':')
                && k > 0
                && (b[k - 1].is_ascii_alphanumeric() || b[k - 1] == b'_')
                && b.get(k + 2)
                    .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_') =>
            {
                k += 2;
                continue;
            }
            b':' | b',' if depth == 0 => {
                if let Some(v) = sections.last_mut() {
                    v.push(&inner[start..k]);
                }
                if b[k] == b':' {
                    sections.push(Vec::new());
                }
                start = k + 1;
            }
            _ => {}
        }
        k += 1;
    }
    if let Some(v) = sections.last_mut() {
        v.push(&inner[start..]);
    }
    sections
        .iter()
        .skip(1)
        .take(2)
        .flatten()
        .filter(|item| !item.trim().is_empty())
        .map(|item| {
            let open = item.find('(').map_or(item.len(), |i| i + 1);
            let close = item.rfind(')').unwrap_or(item.len()).max(open);
            item[open..close].to_string()
        })
        .collect()
}

/// Whether an instruction name can start at byte `k` of a string literal's text: at its start,
/// or after a character that is no part of a name (a letter, digit, `_` or `.`). An escape
/// sequence (`\t`, `\n` in the source text) separates instructions as the character it stands
/// for does: `"\tbar.sync 0;"` is a barrier.
pub(super) fn starts_instruction(lit: &str, k: usize) -> bool {
    let b = lit.as_bytes();
    let escaped = k >= 2 && b[k - 2] == b'\\' && b[k - 1].is_ascii_alphabetic();
    k == 0 || escaped || !(b[k - 1].is_ascii_alphanumeric() || b[k - 1] == b'_' || b[k - 1] == b'.')
}

/// The offsets in a literal's text `lit` where the instruction `name` starts, as a whole word
/// ([`starts_instruction`] before it; no letter, digit, `_` or `.` after it): `exit` in
/// `"@p exit;"`, not in `"exit_code"` or `"exit.x"`.
pub(super) fn instruction_starts<'a>(
    lit: &'a str,
    name: &'a str,
) -> impl Iterator<Item = usize> + 'a {
    lit.match_indices(name).map(|(k, _)| k).filter(move |&k| {
        starts_instruction(lit, k)
            && !lit[k + name.len()..]
                .starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.')
    })
}
