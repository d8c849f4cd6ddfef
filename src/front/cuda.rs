//! How mpkc reads the raw C++ of a `body cuda { … }` block: just enough of C++'s lexical rules
//! (ISO C++23 [lex.pptoken]) to know which `{` and `}` are code and which sit inside a comment
//! or a literal. The grammar's `cuda_block` (grammar/mpk.pest) says the same in pest; this module
//! serves the formatter's lexer (`crate::fmt::lex`) and the body checks (`crate::valid`), and a
//! property test below holds the two to the same block ends.
//!
//! The rules, in the order they are tried at each token start:
//! - a raw string `R"d( … )d"`, optionally prefixed `u8`, `u`, `U` or `L`: the delimiter `d` is
//!   at most 16 printable ASCII characters, none of them a space, `(`, `)`, `\` or `"`; the
//!   string ends at the first `)d"` (escapes and line breaks are part of it). Without a valid
//!   delimiter or a closing `)d"` it is no raw string (C++ rejects it; the `R` is a name);
//! - `"…"` and `'…'`: a `\` escapes the next character; a line splice (`\`, optional spaces or
//!   tabs, a line break: C++23's P2223, and GCC before it) continues the literal; an unescaped
//!   line break before the closing quote leaves the quote a character on its own (as GCC lexes
//!   an unterminated literal);
//! - `// …` to the end of the line, where a line splice continues the comment onto the next line;
//! - `/* … */` (unterminated: to the end);
//! - a name: a letter, `_`, `$` or any non-ASCII character, then those and digits. Read whole, so
//!   that the digits of `x1` never start a number; `u8'a'` is the name `u8` and a literal;
//! - a preprocessing number (`[lex.ppnumber]`): a digit, or `.` and a digit, then digits, letters,
//!   `_`, `.`, `e+ e- E+ E- p+ p- P+ P-`, and `'` followed by a digit, letter or `_` (C++14 digit
//!   separators, `1'000'000`);
//! - any other character on its own.

use std::ops::Range;

/// What a piece of C++ text is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Piece {
    /// Code: a name, a number, punctuation, whitespace.
    Code,
    /// A comment (`// …`, with its line splices, or `/* … */`).
    Comment,
    /// A string or character literal, raw strings included.
    Literal,
}

/// Longest raw-string delimiter C++ allows ([lex.string]).
const MAX_DELIMITER: usize = 16;

fn is_name_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b == b'$' || b >= 0x80
}

fn is_name_char(b: u8) -> bool {
    is_name_start(b) || b.is_ascii_digit()
}

/// A digit, ASCII letter or `_`: what continues a preprocessing number (and may follow a `'`).
fn is_ppnum_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The end of a line splice (`\`, spaces or tabs, `\r`?, `\n`) starting at `i`, if one does.
fn splice_end(b: &[u8], i: usize) -> Option<usize> {
    if b.get(i) != Some(&b'\\') {
        return None;
    }
    let mut j = i + 1;
    while matches!(b.get(j), Some(b' ' | b'\t')) {
        j += 1;
    }
    if b.get(j) == Some(&b'\r') {
        j += 1;
    }
    (b.get(j) == Some(&b'\n')).then_some(j + 1)
}

/// The end of the raw string starting at `i` (at its prefix or `R`), if one starts there.
fn raw_string_end(text: &str, i: usize) -> Option<usize> {
    let rest = &text[i..];
    let prefix = ["u8R\"", "uR\"", "UR\"", "LR\"", "R\""]
        .into_iter()
        .find(|p| rest.starts_with(p))?;
    let open = i + prefix.len();
    let b = text.as_bytes();
    let delim_len = b[open..]
        .iter()
        .take(MAX_DELIMITER + 1)
        .position(|&c| !(0x21..=0x7e).contains(&c) || matches!(c, b'(' | b')' | b'\\' | b'"'))?;
    if b[open + delim_len] != b'(' {
        return None;
    }
    let close = format!("){}\"", &text[open..open + delim_len]);
    let body = open + delim_len + 1;
    text[body..].find(&close).map(|e| body + e + close.len())
}

/// The end of the `"…"` or `'…'` literal whose quote is at `i`, if it closes before an
/// unescaped line break.
fn quoted_end(b: &[u8], i: usize) -> Option<usize> {
    let q = b[i];
    let mut j = i + 1;
    while j < b.len() {
        match b[j] {
            c if c == q => return Some(j + 1),
            b'\n' => return None,
            b'\\' => j = splice_end(b, j).unwrap_or(j + 2),
            _ => j += 1,
        }
    }
    None
}

/// The end of the `//` comment starting at `i` (its line splices included; the `\n` not).
fn line_comment_end(b: &[u8], i: usize) -> usize {
    let mut j = i + 2;
    while j < b.len() && b[j] != b'\n' {
        j = match splice_end(b, j) {
            Some(e) => e,
            None => j + 1,
        };
    }
    j
}

/// The end of the preprocessing number starting at `i`.
fn number_end(b: &[u8], i: usize) -> usize {
    let mut j = i + 1;
    while j < b.len() {
        let c = b[j];
        // An exponent's sign, or a digit separator before a digit: two characters of the number.
        if (matches!(c, b'e' | b'E' | b'p' | b'P') && matches!(b.get(j + 1), Some(b'+' | b'-')))
            || (c == b'\'' && b.get(j + 1).is_some_and(|&n| is_ppnum_char(n)))
        {
            j += 2;
        } else if is_ppnum_char(c) || c == b'.' {
            j += 1;
        } else {
            break;
        }
    }
    j
}

/// The token starting at byte `i` of `text` (a character boundary): its end and what it is.
/// Always makes progress (`end > i`) and ends on a character boundary.
pub fn token(text: &str, i: usize) -> (usize, Piece) {
    let b = text.as_bytes();
    let c = b[i];
    if let Some(e) = raw_string_end(text, i) {
        return (e, Piece::Literal);
    }
    match c {
        b'"' | b'\'' => match quoted_end(b, i) {
            Some(e) => (e, Piece::Literal),
            None => (i + 1, Piece::Code),
        },
        b'/' if b.get(i + 1) == Some(&b'/') => (line_comment_end(b, i), Piece::Comment),
        b'/' if b.get(i + 1) == Some(&b'*') => (
            text[i + 2..].find("*/").map_or(b.len(), |e| i + 2 + e + 2),
            Piece::Comment,
        ),
        c if c.is_ascii_digit() => (number_end(b, i), Piece::Code),
        b'.' if b.get(i + 1).is_some_and(u8::is_ascii_digit) => (number_end(b, i), Piece::Code),
        c if is_name_start(c) => {
            let mut j = i + 1;
            while j < b.len() && is_name_char(b[j]) {
                j += 1;
            }
            (j, Piece::Code)
        }
        _ => (
            i + text[i..].chars().next().map_or(1, char::len_utf8),
            Piece::Code,
        ),
    }
}

/// The identifiers of `text` outside comments and literals (numbers' letters are no identifier),
/// each with its byte offset, in order.
pub fn identifiers(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() {
        let (end, piece) = token(text, i);
        if piece == Piece::Code && is_name_start(text.as_bytes()[i]) {
            out.push((i, &text[i..end]));
        }
        i = end;
    }
    out
}

/// The end (exclusive) of the balanced `{ … }` block whose `{` is at byte `start` of `text`, or
/// `None` when it is not closed before the end of the text.
pub fn block_end(text: &str, start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = start;
    while i < text.len() {
        let (end, piece) = token(text, i);
        if piece == Piece::Code && end == i + 1 {
            match text.as_bytes()[i] {
                b'{' => depth += 1,
                b'}' => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        return Some(end);
                    }
                }
                _ => {}
            }
        }
        i = end;
    }
    None
}

/// The byte ranges of `code`'s comments and literals, in order.
pub fn comments_and_literals(code: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < code.len() {
        let (end, piece) = token(code, i);
        if piece != Piece::Code {
            out.push(i..end);
        }
        i = end;
    }
    out
}

/// One string as the compiler sees it once adjacent string literals are concatenated (ISO C++23
/// [lex.string], translation phase 6): the characters between the quotes of each piece, escape
/// sequences as written, and where each of its bytes lies in the source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JoinedString {
    /// The pieces' contents, joined (`"bar" ".sync 0;"` is `bar.sync 0;`).
    pub text: String,
    /// For each byte of `text`, its offset in the source.
    pub at: Vec<usize>,
}

impl JoinedString {
    /// The source range of `text[r]` (non-empty): from its first byte to just past its last,
    /// across the quotes and spaces between the pieces it spans.
    pub fn source(&self, r: Range<usize>) -> Range<usize> {
        let last = r.end.max(r.start + 1) - 1;
        match (self.at.get(r.start), self.at.get(last)) {
            (Some(a), Some(b)) => *a..*b + 1,
            // Past the end: an empty range after the last byte.
            _ => self.at.last().map_or(0..0, |a| *a + 1..*a + 1),
        }
    }
}

/// The contents of the string literal `lit` (a [`Piece::Literal`] token), with the offset of
/// its first content byte within it; `None` for a character literal.
fn string_contents(lit: &str) -> Option<(usize, &str)> {
    if lit.starts_with('"') && lit.len() >= 2 {
        return Some((1, &lit[1..lit.len() - 1]));
    }
    // A raw string: prefix, `R"`, delimiter, `(`, contents, `)`, delimiter, `"`.
    let quote = lit.find('"')?;
    if !lit[..quote].ends_with('R') {
        return None;
    }
    let open = quote + 1 + lit[quote + 1..].find('(')?;
    let delim = &lit[quote + 1..open];
    let end = lit.len().checked_sub(delim.len() + 2)?;
    (end > open).then(|| (open + 1, &lit[open + 1..end]))
}

/// The strings of `code` (outside comments), each string literal joined with the ones adjacent
/// to it (only whitespace, comments and an encoding prefix `u8`, `u`, `U`, `L` between), as C++
/// concatenates them, in order.
pub fn joined_strings(code: &str) -> Vec<JoinedString> {
    let mut out: Vec<JoinedString> = Vec::new();
    // Whether the last string may still take an adjacent literal.
    let mut open = false;
    let mut i = 0;
    while i < code.len() {
        let (end, piece) = token(code, i);
        let text = &code[i..end];
        match piece {
            Piece::Literal => match string_contents(text) {
                Some((skip, contents)) => {
                    if !open {
                        out.push(JoinedString {
                            text: String::new(),
                            at: Vec::new(),
                        });
                    }
                    if let Some(s) = out.last_mut() {
                        s.text.push_str(contents);
                        s.at.extend((0..contents.len()).map(|k| i + skip + k));
                    }
                    open = true;
                }
                None => open = false,
            },
            Piece::Comment => {}
            Piece::Code => {
                let prefix = matches!(text, "u8" | "u" | "U" | "L")
                    && code.as_bytes().get(end) == Some(&b'"');
                if !(prefix || text.trim().is_empty()) {
                    open = false;
                }
            }
        }
        i = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::front::parse::{MpkParser, Rule};
    use pest::Parser as _;
    use proptest::prelude::*;

    #[test]
    fn adjacent_string_literals_join_as_cpp_concatenates_them() {
        let code = "asm(\"bar\" /* c */ \".sync 0;\"\n  \"\\n\"); f('a'); g(\"x\", \"y\"); h(u8\"p\" R\"d(q)d\");";
        let joined = joined_strings(code);
        let texts: Vec<&str> = joined.iter().map(|j| j.text.as_str()).collect();
        assert_eq!(texts, ["bar.sync 0;\\n", "x", "y", "pq"]);
        // `bar.sync 0` runs from the `b` of the first piece to the `0` of the second.
        let r = joined[0].source(0..10);
        assert_eq!(&code[r.start..r.start + 3], "bar");
        assert_eq!(&code[r.end - 1..r.end], "0");
        assert_eq!(&code[joined[3].source(1..2)], "q");
    }

    /// Where the grammar's `cuda_block` ends for a block at the start of `text`.
    fn grammar_end(text: &str) -> Option<usize> {
        MpkParser::parse(Rule::cuda_block, text)
            .ok()
            .and_then(|mut p| p.next())
            .map(|p| p.as_span().end())
    }

    fn both(text: &str) -> Option<usize> {
        let ours = block_end(text, 0);
        assert_eq!(ours, grammar_end(text), "{text:?}");
        ours
    }

    #[test]
    fn real_cuda_lexes_as_cpp_in_the_grammar_and_here() {
        for (code, end_at) in [
            ("{ int c = 1'000; }", None),
            ("{ auto n = 0x1'0000'0000ull; float f = 1.5e-3f; }", None),
            ("{ auto s = R\"d( )\" } )d\"; }", None),
            ("{ auto s = u8R\"(}{)\"; auto t = LR\"x()\")x\"; }", None),
            ("{ // c \\\n } still a comment\n}", None),
            ("{ // c \\  \r\n } spliced after trailing spaces\n}", None),
            ("{ char c = '}'; char d = '\\''; char e = u8'{'; }", None),
            ("{ const char* s = \"}\\\"{\"; }", None),
            ("{ /* } */ x(); }", None),
            ("{ if (a) { b(); } } tail", Some(19)),
            // An unterminated literal is one quote character, as GCC lexes it.
            ("{ #error don't\n }", None),
            // An identifier's digits never start a number: `x1'` is a name and a quote.
            ("{ x1'}'; }", None),
        ] {
            let end = both(code);
            assert_eq!(
                end,
                Some(end_at.unwrap_or(code.len())),
                "{code:?}: block ends at {end:?}"
            );
        }
        for unclosed in [
            "{ auto s = R\"d( } )x\"; ",
            "{ // c \\\n }",
            "{ /* } ",
            "{ { }",
        ] {
            assert_eq!(both(unclosed), None, "{unclosed:?}");
        }
    }

    #[test]
    fn comments_and_literals_are_found_whole() {
        let code = "a = 1'0; s = R\"x()\")x\"; // c \\\n d\n'q' \"r\"";
        let pieces: Vec<&str> = comments_and_literals(code)
            .into_iter()
            .map(|r| &code[r])
            .collect();
        assert_eq!(pieces, ["R\"x()\")x\"", "// c \\\n d", "'q'", "\"r\""]);
    }

    /// Pieces that exercise every rule above, and their combinations.
    const PIECES: &[&str] = &[
        "{", "}", "'", "\"", "\\", "\n", "\r\n", " ", "//", "/*", "*/", "R\"", "u8", "L", "(", ")",
        "x", "1", "0x", "e", "+", ".", "d", "a'", "R", "\\ \n",
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]
        #[test]
        fn the_grammar_and_the_lexer_end_blocks_alike(
            parts in proptest::collection::vec(proptest::sample::select(PIECES), 0..24)
        ) {
            let text = format!("{{{}", parts.concat());
            prop_assert_eq!(block_end(&text, 0), grammar_end(&text), "{:?}", text);
        }
    }
}
