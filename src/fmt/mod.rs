//! `mpkc fmt`: the canonical layout of a contract, changing only whitespace.
//!
//! The rules, applied to the token stream of [`lex`] (so comments and the raw CUDA of
//! `body cuda { … }` blocks survive verbatim):
//! - the author's line breaks are kept; runs of blank lines become one; no blank line opens or
//!   closes a block, starts or ends the file; the file ends with one newline;
//! - a line is indented two spaces per open brace (a line starting with `}` one less);
//! - inside a line: one space after `,` `;` `:` and none before them; none inside `( )` and
//!   `[ ]`; none around `.`, `..` and `..=`; one space around `->`, `=`, `|`, `+`, `*`, `/`, `%`
//!   and on both sides of an inline `{ … }`; before `(` and `[` and around `-` the author's
//!   choice is kept (`tma(…)`, `box [ … ]`, `consumer-no-smem`, `-1`), reduced to one space;
//!   everything else is one space apart.
//!
//! The result lexes to the same tokens as the input and formatting it again changes nothing
//! (both are tested on every contract in the repository).

pub mod lex;

use lex::{Kind, Token};

/// Whether `t` is the punctuation `p`.
fn is(t: &Token, p: &str) -> bool {
    t.kind == Kind::Punct && t.text == p
}

/// The whitespace between `prev` and `cur` on one line.
fn gap(prev: &Token, cur: &Token) -> &'static str {
    let keep = if cur.space_before { " " } else { "" };
    if matches!(cur.kind, Kind::LineComment | Kind::BlockComment) || prev.kind == Kind::BlockComment
    {
        return " ";
    }
    if is(prev, "(") || is(prev, "[") {
        return "";
    }
    if [")", "]", ",", ";", ":"].iter().any(|p| is(cur, p)) {
        return "";
    }
    if [".", "..", "..="].iter().any(|p| is(cur, p) || is(prev, p)) {
        return "";
    }
    if [",", ";", ":"].iter().any(|p| is(prev, p)) {
        return " ";
    }
    if is(cur, "-") || is(prev, "-") || is(cur, "(") || is(cur, "[") {
        return keep;
    }
    " "
}

/// Formats `text`. The caller makes sure it parses (`mpkc fmt` refuses files with syntax
/// errors); any text is accepted and only whitespace changes.
pub fn format(text: &str) -> String {
    // Line breaks become `\n` everywhere, inside comments and CUDA bodies too.
    let text = text.replace("\r\n", "\n");
    let tokens = lex::lex(&text);
    let mut out = String::new();
    let mut depth: usize = 0;
    let mut line_start = true;
    let mut pending_blank = false;
    let mut prev: Option<&Token> = None;
    for t in &tokens {
        if prev.is_some() && t.newlines_before > 0 {
            out.push('\n');
            line_start = true;
            pending_blank = t.newlines_before > 1;
        }
        if line_start {
            let closes = is(t, "}");
            let opened = prev.is_some_and(|p| is(p, "{"));
            if pending_blank && !closes && !opened && !out.is_empty() {
                out.push('\n');
            }
            pending_blank = false;
            let indent = if closes {
                depth.saturating_sub(1)
            } else {
                depth
            };
            for _ in 0..indent {
                out.push_str("  ");
            }
        } else if let Some(p) = prev {
            out.push_str(gap(p, t));
        }
        match t.kind {
            Kind::LineComment => out.push_str(t.text.trim_end_matches([' ', '\t', '\r'])),
            _ => out.push_str(&t.text),
        }
        if is(t, "{") {
            depth += 1;
        } else if is(t, "}") {
            depth = depth.saturating_sub(1);
        }
        line_start = false;
        prev = Some(t);
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const MESSY: &str = "// head comment\n\n\n task  t{\n\n family   consumer\n   param n : int in 1 ..= 16=4 // trailing\n\
tensor x:bf16[ m,2*n ]in  tma( box [64,16 ,2] , swizzle 128B )\n region r[ stage ]{bytes align_up(2*n,1024);align 1024;pack}\n\
roles consumer W0 .. W3\n body cuda {\n    int a = 1;   // kept\n  }\n\n\n}\n\n";

    #[test]
    fn canonical_layout() {
        let f = format(MESSY);
        let want = [
            "// head comment",
            "",
            "task t {",
            "  family consumer",
            "  param n: int in 1..=16 = 4 // trailing",
            "  tensor x: bf16[m, 2 * n] in tma(box [64, 16, 2], swizzle 128B)",
            "  region r[stage] { bytes align_up(2 * n, 1024); align 1024; pack }",
            "  roles consumer W0..W3",
            "  body cuda {",
            "    int a = 1;   // kept",
            "  }",
            "}",
            "",
        ];
        assert_eq!(f, want.join("\n"));
    }

    #[test]
    fn idempotent_and_whitespace_only() {
        let once = format(MESSY);
        assert_eq!(format(&once), once);
        let words = |s: &str| lex::lex(s).into_iter().map(|t| t.text).collect::<Vec<_>>();
        assert_eq!(words(&once), words(MESSY));
    }

    #[test]
    fn cuda_after_a_comment_stays_verbatim_and_crlf_becomes_lf() {
        let t = "task t {\r\n  family consumer\r\n  body /**/ cuda { c = '\\''; i++; }\r\n}\r\n";
        assert_eq!(
            format(t),
            "task t {\n  family consumer\n  body /**/ cuda { c = '\\''; i++; }\n}\n"
        );
        assert_eq!(
            format("task t { // keep\u{a0}\n}"),
            "task t { // keep\u{a0}\n}\n"
        );
    }

    #[test]
    fn minus_keeps_the_authors_choice() {
        assert_eq!(
            format("task t { family consumer-no-smem; param a: int = -1; param b: int = 4 - 1 }"),
            "task t { family consumer-no-smem; param a: int = -1; param b: int = 4 - 1 }\n"
        );
    }
}
