//! Carriage returns inside `//` comments. CR is whitespace to the grammar, and a run of CRs
//! before a LF (CRLF, CR CR LF) or at the end of the file is a line end (`mpkc fmt` rewrites it
//! as one LF: `fmt::normalize_line_breaks`). A run of CRs with something else after it is not:
//! a `//` comment runs on to the next LF. In a file with classic Mac OS line ends (CR alone),
//! the first line comment therefore swallows the lines after it, although an editor shows them
//! as code and nvcc's preprocessor (which ends a line at a lone CR) reads the CUDA ones as code.
//! Such a CR inside a line comment, of the contract or of a CUDA body, is E0001 before the
//! grammar runs. Elsewhere a lone CR separates tokens, as any whitespace does.

use crate::diag::{codes, Diagnostic};
use crate::span::Span;

/// E0001 at the first CR inside a `//` comment of `src` (outside strings, character literals and
/// `/* */` comments) that begins a run of CRs followed by neither a LF nor the end of the file,
/// noting how many such comments follow; `None` when there is none.
pub fn cr_in_line_comment(src: &str) -> Option<Diagnostic> {
    let b = src.as_bytes();
    let mut found: Vec<usize> = Vec::new();
    let mut i = 0usize;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let mut reported = false;
                while i < b.len() && b[i] != b'\n' {
                    if b[i] == b'\r' {
                        let run = i;
                        while b.get(i) == Some(&b'\r') {
                            i += 1;
                        }
                        if i < b.len() && b[i] != b'\n' && !reported {
                            found.push(run);
                            reported = true;
                        }
                        continue;
                    }
                    i += 1;
                }
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i = super::skip::block_comment_end(b, i);
                continue;
            }
            b'"' | b'\'' => i = super::skip::literal_close(b, i),
            _ => {}
        }
        i += 1;
    }
    let (&first, rest) = found.split_first()?;
    let mut d = Diagnostic::error(
        codes::SYNTAX,
        "syntax error: a carriage return (CR) without a line feed inside a `//` comment",
    )
    .primary(Span::new(first, first + 1), "CR here, with no LF after it")
    .note("the comment runs on to the next LF: the text after the CR is part of it, not code")
    .help("save the file with LF or CRLF line ends (`mpkc fmt` keeps a lone CR; e.g. `sed -i 's/\\r$//; s/\\r/\\n/g' FILE`)");
    if !rest.is_empty() {
        let n = rest.len();
        d.notes.push(format!(
            "{n} more `//` comment{} in this file hold{} one",
            if n == 1 { "" } else { "s" },
            if n == 1 { "s" } else { "" }
        ));
    }
    Some(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_ends_pass_and_a_cr_going_on_inside_a_line_comment_is_e0001() {
        for ok in [
            "task t { // a\r\n  stages 2\r\n}\r\n",
            "task t { // a\r\r\n}\n",
            "task t {\r stages 2\r}\r",
            "task t { } // end\r\r",
            "/* a\rb */ task t { }",
            "task t { body cuda { s = \"//\rx\"; } }",
        ] {
            assert!(cr_in_line_comment(ok).is_none(), "{ok:?}");
        }
        let Some(d) = cr_in_line_comment("task t { // a\r  stages 2\n // b\rc\n}") else {
            panic!("a CR-only file with a line comment is an error")
        };
        assert_eq!(d.code, "E0001");
        assert_eq!(d.main_span(), Span::new(13, 14));
        assert_eq!(d.notes[1], "1 more `//` comment in this file holds one");
        let Some(d) = cr_in_line_comment("body cuda { x(); // y\r\rz(); }") else {
            panic!("a CUDA line comment is a line comment")
        };
        assert_eq!(d.main_span(), Span::new(21, 22));
        assert_eq!(d.notes.len(), 1);
    }
}
