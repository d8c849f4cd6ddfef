//! A source file as diagnostics see it: its name, its text, and an index built once per file
//! (line starts, and character counts at fixed byte intervals), so that every diagnostic of the
//! file finds its lines and columns by binary search instead of rescanning the text. Rendering
//! `n` diagnostics of a file of `m` bytes costs `O(m + n log m)`, not `O(n m)`.
//!
//! Lines are counted as codespan-reporting counts them: a line starts at byte 0 and after every
//! `\n` (a `\r` before it stays part of the line's text; a lone `\r` does not end a line).

use crate::span::Span;
use std::cell::Cell;
use std::ops::Range;

/// Bytes between two character-count checkpoints.
const CHUNK: usize = 256;

thread_local! {
    static INDEXES_BUILT: Cell<usize> = const { Cell::new(0) };
}

/// How many [`SourceFile`] indexes this thread has built so far. Rendering must index a file
/// once, however many diagnostics it has; tests compare this count before and after.
pub fn line_indexes_built() -> usize {
    INDEXES_BUILT.with(Cell::get)
}

/// A file's name and text with its line index.
#[derive(Clone, Debug)]
pub struct SourceFile<'a> {
    /// The name printed in diagnostics (as given on the command line, or `stdlib/<name>.mpk`).
    pub name: &'a str,
    /// The full text.
    pub text: &'a str,
    /// Byte offset of the start of each line.
    line_starts: Vec<usize>,
    /// `chars_before[k]`: characters in `text[..k * CHUNK]`.
    chars_before: Vec<usize>,
}

/// True for the first byte of a UTF-8 character.
fn starts_char(b: u8) -> bool {
    (b as i8) >= -0x40
}

impl<'a> SourceFile<'a> {
    /// Indexes `text` (one pass over it) under the display name `name`.
    pub fn new(name: &'a str, text: &'a str) -> SourceFile<'a> {
        INDEXES_BUILT.with(|c| c.set(c.get() + 1));
        let bytes = text.as_bytes();
        let mut line_starts = vec![0];
        line_starts.extend(
            bytes
                .iter()
                .enumerate()
                .filter(|(_, &b)| b == b'\n')
                .map(|(i, _)| i + 1),
        );
        let mut chars_before = Vec::with_capacity(bytes.len() / CHUNK + 2);
        let mut n = 0;
        for chunk in bytes.chunks(CHUNK) {
            chars_before.push(n);
            n += chunk.iter().filter(|&&b| starts_char(b)).count();
        }
        chars_before.push(n);
        SourceFile {
            name,
            text,
            line_starts,
            chars_before,
        }
    }

    /// Number of lines (a text ending in `\n` has an empty last line, as codespan counts).
    pub fn line_count(&self) -> usize {
        self.line_starts.len()
    }

    /// The 0-based line holding byte `pos` (clamped to the text).
    pub fn line_index(&self, pos: usize) -> usize {
        let pos = pos.min(self.text.len());
        self.line_starts.partition_point(|&s| s <= pos) - 1
    }

    /// The bytes of 0-based line `line` without its `\n` (empty past the last line).
    pub fn line_content(&self, line: usize) -> Range<usize> {
        let len = self.text.len();
        let start = self.line_starts.get(line).copied().unwrap_or(len);
        let end = self.line_starts.get(line + 1).map_or(len, |next| next - 1);
        start..end
    }

    /// 1-based line and column of byte `pos` (clamped to the text); the column counts UTF-8
    /// bytes from the line's start, as the JSON form does (docs/design.md, "Conventions").
    pub fn line_col(&self, pos: usize) -> (usize, usize) {
        let pos = pos.min(self.text.len());
        let line = self.line_index(pos);
        (line + 1, pos - self.line_starts[line] + 1)
    }

    /// 1-based column of byte `pos` in characters, as the human header `file:line:column`
    /// shows it (codespan-reporting's column numbers).
    pub fn char_column(&self, pos: usize) -> usize {
        let pos = pos.min(self.text.len());
        let start = self.line_starts[self.line_index(pos)];
        self.chars_between(start, pos) + 1
    }

    /// Characters that start in `text[a..b]` (bytes, clamped; 0 when `b <= a`), in time
    /// independent of the distance.
    pub fn chars_between(&self, a: usize, b: usize) -> usize {
        self.chars_to(b).saturating_sub(self.chars_to(a))
    }

    fn chars_to(&self, pos: usize) -> usize {
        let pos = pos.min(self.text.len());
        let k = pos / CHUNK;
        self.chars_before[k]
            + self.text.as_bytes()[k * CHUNK..pos]
                .iter()
                .filter(|&&b| starts_char(b))
                .count()
    }

    /// The byte `n` characters after `pos`, at most `limit` (`pos` and `limit` on boundaries).
    pub fn forward(&self, pos: usize, n: usize, limit: usize) -> usize {
        let limit = limit.min(self.text.len());
        self.text
            .get(pos..limit)
            .and_then(|s| s.char_indices().nth(n).map(|(i, _)| pos + i))
            .unwrap_or(limit)
    }

    /// The byte `n` characters before `pos`, at least `limit` (`pos` and `limit` on boundaries).
    pub fn backward(&self, pos: usize, n: usize, limit: usize) -> usize {
        if n == 0 {
            return pos;
        }
        self.text
            .get(limit..pos)
            .and_then(|s| s.char_indices().rev().nth(n - 1).map(|(i, _)| limit + i))
            .unwrap_or(limit)
    }

    /// `span` clamped to the text and widened to its character boundaries.
    pub fn widen(&self, span: Span) -> Span {
        span.widen_to_chars(self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_columns() {
        let f = SourceFile::new("t", "ab\ncd\n");
        assert_eq!(f.line_col(0), (1, 1));
        assert_eq!(f.line_col(1), (1, 2));
        assert_eq!(f.line_col(3), (2, 1));
        assert_eq!(f.line_col(5), (2, 3));
        assert_eq!(f.line_col(99), (3, 1));
        assert_eq!(f.line_count(), 3);
        assert_eq!(f.line_content(1), 3..5);
        assert_eq!(f.line_content(2), 6..6);
        assert_eq!(f.line_content(7), 6..6);
    }

    #[test]
    fn character_counts_across_checkpoints() {
        let text = "é".repeat(300) + "\nxé";
        let f = SourceFile::new("t", &text);
        for pos in (0..=600).step_by(2) {
            assert_eq!(f.chars_between(0, pos), text[..pos].chars().count());
        }
        assert_eq!(f.char_column(604), 3);
        assert_eq!(f.line_col(604), (2, 4));
        assert_eq!(f.forward(0, 3, 600), 6);
        assert_eq!(f.forward(590, 30, 600), 600);
        assert_eq!(f.backward(10, 2, 0), 6);
        assert_eq!(f.backward(10, 9, 4), 4);
    }
}
