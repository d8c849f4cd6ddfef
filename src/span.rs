//! Byte spans into a contract's source text.

use serde::Serialize;

/// A half-open byte range `[start, end)` into one source file (0-based byte offsets).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Span {
    /// First byte of the range.
    pub start: usize,
    /// One past the last byte of the range.
    pub end: usize,
}

impl Span {
    /// A span from `start` to `end` (bytes).
    pub const fn new(start: usize, end: usize) -> Self {
        Span { start, end }
    }

    /// The smallest span covering both `self` and `other`.
    pub fn to(self, other: Span) -> Span {
        Span::new(self.start.min(other.start), self.end.max(other.end))
    }

    /// The byte range, for slicing the source.
    pub fn range(self) -> std::ops::Range<usize> {
        self.start..self.end
    }

    /// The smallest span that covers `self` and starts and ends on UTF-8 character boundaries of
    /// `text`: first clamped to the text (an inverted span becomes empty at its start), then the
    /// start moves back to the first byte of the character it falls in and the end forward past
    /// the last byte of its character. Every rendered or published diagnostic span goes through
    /// this, so no consumer sees a span that splits a character.
    pub fn widen_to_chars(self, text: &str) -> Span {
        let mut start = self.start.min(text.len());
        let mut end = self.end.min(text.len()).max(start);
        while !text.is_char_boundary(start) {
            start -= 1;
        }
        while !text.is_char_boundary(end) {
            end += 1;
        }
        Span::new(start, end)
    }
}

/// A value together with the span it came from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Spanned<T> {
    /// The value.
    pub node: T,
    /// Where it was written.
    pub span: Span,
}

impl<T> Spanned<T> {
    /// Wraps `node` with `span`.
    pub fn new(node: T, span: Span) -> Self {
        Spanned { node, span }
    }
}

#[cfg(test)]
mod tests {
    use super::Span;

    #[test]
    fn widening_reaches_the_enclosing_character_boundaries() {
        let t = "a\u{e9}b\u{1f600}";
        // `é` is bytes 1..3, the emoji 4..8.
        assert_eq!(Span::new(1, 2).widen_to_chars(t), Span::new(1, 3));
        assert_eq!(Span::new(2, 2).widen_to_chars(t), Span::new(1, 3));
        assert_eq!(Span::new(2, 5).widen_to_chars(t), Span::new(1, 8));
        assert_eq!(Span::new(0, 1).widen_to_chars(t), Span::new(0, 1));
        assert_eq!(Span::new(6, 99).widen_to_chars(t), Span::new(4, 8));
        assert_eq!(Span::new(7, 3).widen_to_chars(t), Span::new(4, 8));
        assert_eq!(Span::new(50, 60).widen_to_chars(t), Span::new(8, 8));
    }
}
