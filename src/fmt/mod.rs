//! `mpkc fmt`: the canonical layout of a contract, changing only whitespace.
//!
//! The rules, applied to the token stream of [`lex`] (so comments and the raw CUDA of
//! `body cuda { … }` blocks survive verbatim):
//! - the author's line breaks are kept; runs of blank lines become one; no blank line opens or
//!   closes a block, starts or ends the file; the file ends with one newline;
//! - a line is indented two spaces per open brace (a line starting with `}` one less);
//! - inside a line: one space after `,` `;` `:` and none before them; none inside `( )` and
//!   `[ ]`; none around `.`, `..` and `..=`; one space around `->`, `=`, `|`, `+`, `*`, `/`, `%`
//!   and on both sides of an inline `{ … }`; none before `[` (`bf16[m, K]`, `w[stage]`) but
//!   one after a TMA box's `box` (`tma(box [64, 16, 2])`); before `(` and around `-` the
//!   author's choice is kept (`tma(…)`, `launcher (tma W)`, `consumer-no-smem`, `-1`), reduced
//!   to one space (where the space is canonical depends on the item, which the token stream
//!   does not know); everything else is one space apart;
//! - a top-level item closed by `}` ends its line: another item after it on the same line
//!   moves to the next, a blank line apart.
//!
//! - line breaks, everywhere (inside comments, strings and CUDA bodies too, in one pass before
//!   anything else, see [`normalize_line_breaks`]): `\r\n`, and any run of `\r` right before a
//!   `\n`, become one `\n`; `\r`s at the very end of the file go. A lone `\r` elsewhere is
//!   whitespace between tokens (as in the grammar) and kept inside a comment, string or CUDA body;
//! - two tokens are never written together when they would lex as something else (`. .` stays
//!   apart rather than becoming `..`).
//! - U+FEFF is not whitespace (Unicode's White_Space leaves it out, and so does the grammar,
//!   which accepts it only as a byte-order mark opening the file): it is a one-character token,
//!   never added or removed, with the author's spacing around it (so a byte-order mark stays glued
//!   to what follows). A file holding one elsewhere does not parse, so `mpkc fmt` refuses it;
//!   inside comments, strings and CUDA bodies it is text.
//!
//! The result lexes to the same tokens as the input after [`normalize_line_breaks`] (up to
//! trailing whitespace of comments and of an unterminated last token), and formatting it again
//! changes nothing: `format(&format(x)) == format(x)` for any text `x` (tested on every contract
//! in the repository and by property tests inserting line breaks, tabs and spaces anywhere).

pub mod lex;

use lex::{Kind, Token};
use std::borrow::Cow;

/// `text` with its line breaks normalised, the first step of [`format`]: `\r\n`, and any run of
/// `\r` directly before a `\n`, become `\n`; a run of `\r` at the end of the text is removed.
/// Other `\r`s stay. Applying it twice changes nothing more.
pub fn normalize_line_breaks(text: &str) -> Cow<'_, str> {
    if !text.contains('\r') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut crs = 0usize;
    for c in text.chars() {
        match c {
            '\r' => crs += 1,
            '\n' => {
                crs = 0;
                out.push('\n');
            }
            _ => {
                out.extend(std::iter::repeat_n('\r', crs));
                crs = 0;
                out.push(c);
            }
        }
    }
    Cow::Owned(out)
}

/// Whether `cur`, written right after the tokens `line` (the current output line's tokens with
/// their offsets in `out`) with no space, lexes back to the same tokens. Only names, numbers and
/// punctuation can run together (`.` `.` → `..`, `1` `.` `5` → `1.5`); the check lexes the last
/// two of them with `cur`.
fn can_glue(out: &str, line: &[(usize, &Token)], cur: &Token) -> bool {
    let simple = |t: &Token| matches!(t.kind, Kind::Word | Kind::Punct);
    if !simple(cur) {
        return true;
    }
    let tail: Vec<&(usize, &Token)> = line
        .iter()
        .rev()
        .take(2)
        .take_while(|(_, t)| simple(t))
        .collect();
    let Some(&&(from, _)) = tail.last() else {
        return true;
    };
    let snippet = format!("{}{}", &out[from..], cur.text);
    let want = tail
        .iter()
        .rev()
        .map(|(_, t)| t.text.as_str())
        .chain([cur.text.as_str()]);
    lex::lex(&snippet).iter().map(|t| t.text.as_str()).eq(want)
}

/// Whether `t` is the punctuation `p`.
fn is(t: &Token, p: &str) -> bool {
    t.kind == Kind::Punct && t.text == p
}

/// The whitespace between `prev` and `cur` on one line; `before` is the token before `prev` on
/// it, if any.
fn gap(before: Option<&Token>, prev: &Token, cur: &Token) -> &'static str {
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
    if [",", ";", ":", "==", "!=", "<", "<=", ">", ">="]
        .iter()
        .any(|p| is(prev, p))
    {
        return " ";
    }
    // `[` opens a tensor's dims (`bf16[m, K]`), a region's stage suffix (`w[stage]`) or a held
    // slot (`ring[0]`), all glued to the word before, or a TMA box (`tma(box [64, 16, 2], …)`:
    // the word `box` after `(` or `,`), one space apart.
    if is(cur, "[") {
        let boxed = prev.kind == Kind::Word
            && prev.text == "box"
            && before.is_some_and(|b| is(b, "(") || is(b, ","));
        return if boxed { " " } else { "" };
    }
    if is(cur, "-") || is(prev, "-") || is(cur, "(") {
        return keep;
    }
    // A byte-order mark keeps the author's spacing: none is added after one opening the file.
    if is(cur, "\u{feff}") || is(prev, "\u{feff}") {
        return keep;
    }
    " "
}

/// Formats `text`. The caller makes sure it parses (`mpkc fmt` refuses files with syntax
/// errors); any text is accepted and only whitespace changes.
pub fn format(text: &str) -> String {
    let text = normalize_line_breaks(text);
    let tokens = lex::lex(&text);
    let mut out = String::new();
    let mut depth: usize = 0;
    let mut line_start = true;
    let mut pending_blank = false;
    let mut prev: Option<&Token> = None;
    // The current output line's tokens and where they start in `out`.
    let mut line: Vec<(usize, &Token)> = Vec::new();
    for t in &tokens {
        // A top-level item closed on this line: what follows starts the next line, a blank
        // line apart (`task a { } task b { }` is two tasks), unless it is a comment on the `}`.
        let after_item = depth == 0
            && prev.is_some_and(|p| is(p, "}"))
            && t.newlines_before == 0
            && !matches!(t.kind, Kind::LineComment | Kind::BlockComment);
        if after_item {
            out.push('\n');
            line_start = true;
            pending_blank = true;
            line.clear();
        } else if prev.is_some() && t.newlines_before > 0 {
            out.push('\n');
            line_start = true;
            pending_blank = t.newlines_before > 1;
            line.clear();
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
            let before = line.len().checked_sub(2).map(|i| line[i].1);
            let g = gap(before, p, t);
            out.push_str(if g.is_empty() && !can_glue(&out, &line, t) {
                " "
            } else {
                g
            });
        }
        line.push((out.len(), t));
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
    // One final newline (an unterminated comment or CUDA body at the end may hold it already).
    if !out.is_empty() && !out.ends_with('\n') {
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
    fn carriage_returns_before_a_line_break_go_in_one_pass() {
        for (input, want) in [
            (
                "task t {\n /* a\r\r\nb */\n}\n",
                "task t {\n  /* a\nb */\n}\n",
            ),
            (
                "task t {\n  body cuda { a();\r\r\n b(); }\n}\n",
                "task t {\n  body cuda { a();\n b(); }\n}\n",
            ),
            ("task t { } // x\r \r\r", "task t { } // x\n"),
            ("task t {\r}", "task t { }\n"),
            ("/* a\rb */ task t { }\r\n", "/* a\rb */ task t { }\n"),
        ] {
            let once = format(input);
            assert_eq!(once, want, "{input:?}");
            assert_eq!(format(&once), once, "{input:?}");
        }
        assert_eq!(normalize_line_breaks("a\r\r\nb\rc\r\r"), "a\nb\rc");
    }

    #[test]
    fn tokens_that_would_run_together_stay_apart() {
        for (input, want) in [
            ("a . . b", "a. .b\n"),
            ("x 1 . 5", "x 1. 5\n"),
            ("r 1 .. = 4", "r 1.. = 4\n"),
            ("/* open \n", "/* open \n"),
        ] {
            let once = format(input);
            assert_eq!(once, want, "{input:?}");
            assert_eq!(format(&once), once, "{input:?}");
        }
    }

    #[test]
    fn a_byte_order_mark_is_a_token_never_added_or_removed() {
        for (input, want) in [
            ("\u{feff}task  t { }", "\u{feff}task t { }\n"),
            ("\u{feff}\n\ntask t { }", "\u{feff}\n\ntask t { }\n"),
            ("\r\u{feff}", "\u{feff}\n"),
            ("task t {\u{feff} }", "task t {\u{feff} }\n"),
        ] {
            let once = format(input);
            assert_eq!(once, want, "{input:?}");
            assert_eq!(format(&once), once, "{input:?}");
        }
    }

    #[test]
    fn brackets_glue_to_their_word_but_a_tma_box() {
        let once = format(
            "task t {\n  tensor x: bf16 [m, 2] in tma( box  [64, 2] ,swizzle 128B)\n  region r [stage] { bytes 4 }\n  region box [stage] { bytes 4 }\n}\n",
        );
        assert_eq!(
            once,
            "task t {\n  tensor x: bf16[m, 2] in tma(box [64, 2], swizzle 128B)\n  region r[stage] { bytes 4 }\n  region box[stage] { bytes 4 }\n}\n"
        );
        assert_eq!(format(&once), once);
    }

    #[test]
    fn items_after_a_closed_task_move_to_their_own_line() {
        let once = format("task a { } task b { } // b\ntask c {\n} /* c */ task d { }");
        assert_eq!(
            once,
            "task a { }\n\ntask b { } // b\ntask c {\n} /* c */ task d { }\n"
        );
        assert_eq!(format(&once), once);
    }

    #[test]
    fn minus_keeps_the_authors_choice() {
        assert_eq!(
            format("task t { family consumer-no-smem; param a: int = -1; param b: int = 4 - 1 }"),
            "task t { family consumer-no-smem; param a: int = -1; param b: int = 4 - 1 }\n"
        );
    }
}
