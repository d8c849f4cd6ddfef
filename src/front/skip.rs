//! Byte-level skips the pre-grammar scans share (`front::nesting`, `front::line_ends`): they
//! walk the raw text before pest runs and must step over `/* */` comments and string and
//! character literals alike.

/// The index just past the `*/` closing the block comment whose `/*` is at `i` (past the end
/// of `b` when it is unclosed).
pub(super) fn block_comment_end(b: &[u8], i: usize) -> usize {
    let mut j = i + 2;
    while j < b.len() && !(b[j] == b'*' && b.get(j + 1) == Some(&b'/')) {
        j += 1;
    }
    j + 2
}

/// The index of the quote closing the string or character literal whose opening quote is at
/// `i` (a backslash escapes the next byte), or of the LF or end of text that stops it unclosed.
pub(super) fn literal_close(b: &[u8], i: usize) -> usize {
    let q = b[i];
    let mut j = i + 1;
    while j < b.len() && b[j] != q && b[j] != b'\n' {
        j += if b[j] == b'\\' { 2 } else { 1 };
    }
    j
}
