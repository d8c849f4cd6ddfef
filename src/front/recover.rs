//! Syntax-error recovery: after the strict parse failed, find the file's further syntax errors in
//! time linear in the file.
//!
//! The walk reads the file one piece at a time with the `rec_*` rules of `grammar/mpk.pest`: a
//! task head (`task NAME {`) or one item; a task's `}` and the whitespace and comments between
//! pieces are skipped by hand. Each piece is parsed on its own text, which ends where the next
//! piece may start, so that neither pest nor its error report reads the rest of the file. A piece that does not parse is reported
//! (an `E0001` like the strict parse's) and the walk resumes at the next place where an item or a
//! task may start ([`resync`]): the task's `}`, an item keyword at the start of a line or after a
//! `;`, or a `task` keyword. Each parse starts where the last one ended and each resync scans
//! forward from there, so every byte is read a bounded number of times, however many errors the
//! file has (issue 9, class 7: N broken one-line tasks cost N times one, not N²).

use super::parse::{syntax_diagnostic, MpkParser, Rule};
use crate::diag::Diagnostic;
use crate::span::Span;
use pest::Parser;

/// Where the walk is: between tasks, or among a task's items.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Top,
    Items,
}

/// The syntax errors of `src` that start after byte `after` (the strict parse's first error),
/// each with its span in `src`.
pub(crate) fn further_errors(src: &str, after: usize) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let mut report = |d: Diagnostic| {
        if d.main_span().start > after
            && out
                .last()
                .is_none_or(|l: &Diagnostic| l.main_span() != d.main_span())
        {
            out.push(d);
        }
    };
    let (mut pos, mut mode) = (0, Mode::Top);
    loop {
        pos = skip_trivia(src.as_bytes(), pos);
        if pos >= src.len() {
            break;
        }
        if mode == Mode::Items && src.as_bytes()[pos] == b'}' {
            (pos, mode) = (pos + 1, Mode::Top);
            continue;
        }
        let rule = match mode {
            Mode::Top => Rule::rec_task_head,
            Mode::Items => Rule::rec_item,
        };
        // The piece ends where the next one may start: pest reads (and, on an error, pest's
        // error scans) only the piece, not the rest of the file.
        let (limit, _) = resync(src, pos, pos);
        match parse_piece(rule, src, pos, limit) {
            Ok(end) => (pos, mode) = (end, Mode::Items),
            Err(d) => {
                let at = d.main_span().start.max(pos);
                report(d);
                (pos, mode) = resync(src, pos, at);
            }
        }
    }
    out
}

/// Parses `src[pos..limit]` with `rule`: the end of what it read, or the syntax error, both in
/// bytes of `src`.
fn parse_piece(rule: Rule, src: &str, pos: usize, limit: usize) -> Result<usize, Diagnostic> {
    match MpkParser::parse(rule, &src[pos..limit]) {
        Ok(mut pairs) => {
            let mut end = pos + pairs.next().map_or(0, |p| p.as_span().end());
            // A piece always reads something; should one not, the walk still moves on by a
            // whole character.
            if end == pos {
                end = src[pos..]
                    .chars()
                    .next()
                    .map_or(src.len(), |c| pos + c.len_utf8());
            }
            Ok(end)
        }
        Err(e) => {
            // Positions are relative to `pos` whichever end the text has; the rest of the file
            // lets the diagnostic tell an error at the piece's end from one at the file's end.
            let mut d = syntax_diagnostic(&e, &src[pos..]);
            for l in &mut d.labels {
                l.span = Span::new(l.span.start + pos, l.span.end + pos);
            }
            Err(d)
        }
    }
}

/// The first byte at or after `i` that is not whitespace (a byte-order mark included) or part
/// of a comment, as the grammar skips them.
fn skip_trivia(b: &[u8], mut i: usize) -> usize {
    while i < b.len() {
        match b[i] {
            b' ' | b'\t' | b'\r' | b'\n' => i += 1,
            0xEF if b[i..].starts_with("\u{FEFF}".as_bytes()) => i += 3,
            b'/' if b.get(i + 1) == Some(&b'/') => i = memchr_from(b, i, b'\n'),
            b'/' if b.get(i + 1) == Some(&b'*') => match find_from(b, i + 2, b"*/") {
                Some(k) => i = k + 2,
                // An unclosed comment is the parser's to report.
                None => return i,
            },
            _ => return i,
        }
    }
    i
}

/// The index of the first occurrence of `pat` at or after `from`.
fn find_from(b: &[u8], from: usize, pat: &[u8]) -> Option<usize> {
    b.get(from..)?
        .windows(pat.len())
        .position(|w| w == pat)
        .map(|k| from + k)
}

/// The keyword of `words` that `src` holds at byte `i`, as a whole word.
fn keyword_at(src: &[u8], i: usize, words: &[&str]) -> bool {
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    if i > 0 && ident(src[i - 1]) {
        return false;
    }
    words.iter().any(|w| {
        src[i..].starts_with(w.as_bytes()) && src.get(i + w.len()).is_none_or(|&b| !ident(b))
    })
}

/// Where to resume after an error at byte `err` in the piece that starts at `start`: the first
/// place after both where a task or an item may start. Braces are counted from `start` (outside
/// comments, strings and character literals) so that a `}` closing a brace of the broken item
/// is not taken for the task's; a keyword at the start of a line counts at any depth, since an
/// unclosed `{` must not hide the rest of the file. Returns the end of the text when there is
/// no such place.
fn resync(src: &str, start: usize, err: usize) -> (usize, Mode) {
    let b = src.as_bytes();
    let (mut i, mut depth) = (start, 0usize);
    // `line_start`: only spaces and tabs since the last newline; `after_semi`: the same since a `;`.
    let (mut line_start, mut after_semi) = (false, false);
    while i < b.len() {
        let c = b[i];
        if i > start && i >= err {
            if c == b'}' && depth == 0 {
                return (i, Mode::Items);
            }
            let word_start = i == 0 || b[i - 1].is_ascii_whitespace() || b[i - 1] == b'}';
            if (line_start || (depth == 0 && word_start)) && keyword_at(b, i, &["task"]) {
                return (i, Mode::Top);
            }
            if (line_start || (after_semi && depth == 0)) && keyword_at(b, i, super::ITEM_KEYWORDS)
            {
                return (i, Mode::Items);
            }
        }
        match c {
            b'\n' => (line_start, after_semi) = (true, after_semi),
            b' ' | b'\t' | b'\r' => {}
            b';' => (line_start, after_semi) = (false, true),
            b'{' => {
                depth += 1;
                (line_start, after_semi) = (false, false);
            }
            b'}' => {
                depth = depth.saturating_sub(1);
                (line_start, after_semi) = (false, false);
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                i = memchr_from(b, i, b'\n');
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i = find_from(b, i + 2, b"*/").map_or(b.len(), |k| k + 2);
                continue;
            }
            b'"' | b'\'' => {
                i = quoted_end(b, i);
                (line_start, after_semi) = (false, false);
                continue;
            }
            _ => (line_start, after_semi) = (false, false),
        }
        i += 1;
    }
    (b.len(), Mode::Top)
}

/// The index of the first `byte` at or after `from` (the text's end when none).
fn memchr_from(b: &[u8], from: usize, byte: u8) -> usize {
    b[from..]
        .iter()
        .position(|&c| c == byte)
        .map_or(b.len(), |k| from + k)
}

/// The end of the string or character literal that opens at `open` (its closing quote
/// included); a literal ends at the end of its line when unclosed.
fn quoted_end(b: &[u8], open: usize) -> usize {
    let q = b[open];
    let mut i = open + 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'\n' => return i,
            c if c == q => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}
