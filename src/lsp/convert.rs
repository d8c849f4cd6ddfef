//! Positions and diagnostics in the protocol's terms: LSP counts lines from 0 and columns in
//! UTF-16 code units (docs/design.md, "Conventions": the CLI's JSON counts UTF-8 bytes from 1, the
//! language server converts); a diagnostic keeps its code, message, help and notes, its primary
//! label gives the range and the secondary labels become related information.

use crate::diag::{Diagnostic, Severity};
use crate::span::Span;
use lsp_types::{
    DiagnosticRelatedInformation, DiagnosticSeverity, Location, NumberOrString, Position, Range,
    Uri,
};
use std::cell::Cell;

/// Bytes between two UTF-16 checkpoints of a [`LineIndex`].
const CHUNK: usize = 256;

thread_local! {
    static BYTES_SCANNED: Cell<usize> = const { Cell::new(0) };
}

/// Bytes this thread's [`LineIndex`] conversions have scanned past a checkpoint so far (building
/// an index scans the text once and is not counted). Each conversion scans at most two chunks,
/// however long the line, so tests compare this count at 1x and 10x the input.
pub fn bytes_scanned() -> usize {
    BYTES_SCANNED.with(Cell::get)
}

/// Byte offsets of line starts, for converting positions. Lines end at `\n`, `\r\n` or a lone
/// `\r`, as the protocol counts them. UTF-16 code units are counted at fixed byte intervals, so
/// a conversion costs `O(log n)` plus at most two chunks, whatever the length of the line: `n`
/// conversions on one long line cost `O(n)`, not `O(n × line length)`.
#[derive(Clone, Debug)]
pub struct LineIndex {
    /// (start, end of content) of each line, in bytes.
    lines: Vec<(usize, usize)>,
    /// `units_before[k]`: UTF-16 code units of the characters that start in `text[..k * CHUNK]`.
    units_before: Vec<usize>,
}

/// UTF-16 code units of the character whose UTF-8 encoding starts with byte `b` (0 for a
/// continuation byte: the character is counted at its first byte).
fn units_of_lead(b: u8) -> usize {
    match b {
        0x80..=0xBF => 0,
        0xF0..=0xFF => 2,
        _ => 1,
    }
}

impl LineIndex {
    /// The index of `text` (one pass over it).
    pub fn new(text: &str) -> LineIndex {
        let b = text.as_bytes();
        let mut lines = Vec::new();
        let (mut start, mut i) = (0, 0);
        while i < b.len() {
            match b[i] {
                b'\n' => {
                    lines.push((start, i));
                    start = i + 1;
                }
                b'\r' if b.get(i + 1) == Some(&b'\n') => {
                    lines.push((start, i));
                    i += 1;
                    start = i + 1;
                }
                b'\r' => {
                    lines.push((start, i));
                    start = i + 1;
                }
                _ => {}
            }
            i += 1;
        }
        lines.push((start, b.len()));
        let mut units_before = Vec::with_capacity(b.len() / CHUNK + 2);
        let mut n = 0;
        for chunk in b.chunks(CHUNK) {
            units_before.push(n);
            n += chunk.iter().map(|&c| units_of_lead(c)).sum::<usize>();
        }
        units_before.push(n);
        LineIndex {
            lines,
            units_before,
        }
    }

    /// UTF-16 code units of the characters that start in `text[..pos]` (`pos` clamped).
    fn units_to(&self, text: &str, pos: usize) -> usize {
        let pos = pos.min(text.len());
        let k = pos / CHUNK;
        BYTES_SCANNED.with(|c| c.set(c.get() + (pos - k * CHUNK)));
        self.units_before[k]
            + text.as_bytes()[k * CHUNK..pos]
                .iter()
                .map(|&c| units_of_lead(c))
                .sum::<usize>()
    }

    /// The LSP position of byte `offset` in `text` (clamped to the text; an offset inside a
    /// character counts as that character's start).
    pub fn position(&self, text: &str, offset: usize) -> Position {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self
            .lines
            .partition_point(|(s, _)| *s <= offset)
            .saturating_sub(1);
        let (start, end) = self.lines[line];
        let col = self
            .units_to(text, offset.min(end))
            .saturating_sub(self.units_to(text, start));
        Position {
            line: line as u32,
            character: col as u32,
        }
    }

    /// The byte offset of LSP position `p` in `text` (clamped to the line's end; a position
    /// inside a surrogate pair counts as the pair's character's end).
    pub fn offset(&self, text: &str, p: Position) -> usize {
        let Some(&(start, end)) = self.lines.get(p.line as usize) else {
            return text.len();
        };
        let target = self.units_to(text, start) + p.character as usize;
        // The last checkpoint before `target` units: every boundary up to it has fewer units.
        let k = self
            .units_before
            .partition_point(|&u| u < target)
            .saturating_sub(1);
        let from = start.max(k * CHUNK).min(end);
        let mut units = self.units_to(text, from);
        let b = text.as_bytes();
        for (i, &c) in b.iter().enumerate().take(end).skip(from) {
            BYTES_SCANNED.with(|n| n.set(n.get() + 1));
            let w = units_of_lead(c);
            if w == 0 {
                continue;
            }
            if units >= target {
                return i;
            }
            units += w;
        }
        end
    }

    /// The LSP range of `span`, first widened to whole characters ([`Span::widen_to_chars`],
    /// the rule the CLI's renderers apply too).
    pub fn range(&self, text: &str, span: Span) -> Range {
        let span = span.widen_to_chars(text);
        let start = self.position(text, span.start);
        let end = self.position(text, span.end);
        Range {
            start,
            end: if (end.line, end.character) < (start.line, start.character) {
                start
            } else {
                end
            },
        }
    }
}

/// `d` as an LSP diagnostic of the document at `uri`.
pub fn diagnostic(
    d: &Diagnostic,
    text: &str,
    lines: &LineIndex,
    uri: &Uri,
) -> lsp_types::Diagnostic {
    let mut message = d.message.clone();
    // The primary label, unless the message already says it (a syntax error's "expected …").
    if let Some(l) = d
        .labels
        .iter()
        .find(|l| l.primary && !l.message.is_empty() && !d.message.ends_with(&l.message))
    {
        message.push_str(&format!("\n{}", l.message));
    }
    for n in &d.notes {
        message.push_str(&format!("\nnote: {n}"));
    }
    if let Some(h) = &d.help {
        message.push_str(&format!("\nhelp: {h}"));
    }
    let related: Vec<DiagnosticRelatedInformation> = d
        .labels
        .iter()
        .filter(|l| !l.primary)
        .map(|l| DiagnosticRelatedInformation {
            location: Location {
                uri: uri.clone(),
                range: lines.range(text, l.span),
            },
            message: if l.message.is_empty() {
                "here".into()
            } else {
                l.message.clone()
            },
        })
        .collect();
    lsp_types::Diagnostic {
        range: lines.range(text, d.main_span()),
        severity: Some(match d.severity {
            Severity::Error => DiagnosticSeverity::ERROR,
            Severity::Warning => DiagnosticSeverity::WARNING,
            Severity::Note => DiagnosticSeverity::INFORMATION,
        }),
        code: Some(NumberOrString::String(d.code.to_string())),
        source: Some("mpkc".into()),
        message,
        related_information: if related.is_empty() {
            None
        } else {
            Some(related)
        },
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A syntax error's message ends with its primary label ("expected …"): the editor shows it
    /// once (a break-the-checker helper saw "syntax error: expected a token\nexpected a token").
    #[test]
    fn a_label_the_message_already_says_is_not_repeated() -> Result<(), Box<dyn std::error::Error>>
    {
        let text = "task x {\n  ,\n}\n";
        let d = Diagnostic::error(crate::diag::codes::SYNTAX, "syntax error: expected a token")
            .primary(Span { start: 11, end: 12 }, "expected a token");
        let uri: Uri = "file:///x.mpk".parse()?;
        let out = diagnostic(&d, text, &LineIndex::new(text), &uri);
        assert_eq!(
            out.message.matches("expected a token").count(),
            1,
            "{}",
            out.message
        );
        let d = Diagnostic::error(crate::diag::codes::SYNTAX, "a message")
            .primary(Span { start: 11, end: 12 }, "its label");
        let out = diagnostic(&d, text, &LineIndex::new(text), &uri);
        assert_eq!(out.message, "a message\nits label");
        Ok(())
    }
}
