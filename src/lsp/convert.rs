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

/// Byte offsets of line starts, for converting positions. Lines end at `\n`, `\r\n` or a lone
/// `\r`, as the protocol counts them.
#[derive(Clone, Debug)]
pub struct LineIndex {
    /// (start, end of content) of each line, in bytes.
    lines: Vec<(usize, usize)>,
}

impl LineIndex {
    /// The index of `text`.
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
        LineIndex { lines }
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
        let col: usize = text
            .get(start..offset.min(end))
            .map_or(0, |s| s.chars().map(char::len_utf16).sum());
        Position {
            line: line as u32,
            character: col as u32,
        }
    }

    /// The byte offset of LSP position `p` in `text` (clamped to the line's end).
    pub fn offset(&self, text: &str, p: Position) -> usize {
        let Some(&(start, end)) = self.lines.get(p.line as usize) else {
            return text.len();
        };
        let mut units = 0u32;
        for (i, c) in text[start..end].char_indices() {
            if units >= p.character {
                return start + i;
            }
            units += c.len_utf16() as u32;
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
    if let Some(l) = d.labels.iter().find(|l| l.primary && !l.message.is_empty()) {
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
