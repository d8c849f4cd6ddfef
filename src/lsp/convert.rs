//! Positions and diagnostics in the protocol's terms: LSP counts lines from 0 and columns in
//! UTF-16 code units (docs/design.md, "Conventions": the CLI's JSON counts UTF-8 bytes from 1, the
//! language server converts); a diagnostic keeps its code, message, help and notes, its primary
//! label gives the range and the secondary labels become related information.

use crate::diag::{Diagnostic, Severity};
use crate::span::Span;
use lsp_types::{DiagnosticRelatedInformation, DiagnosticSeverity, Location, NumberOrString, Position, Range, Uri};

/// Byte offsets of line starts, for converting positions.
#[derive(Clone, Debug)]
pub struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    /// The index of `text`.
    pub fn new(text: &str) -> LineIndex {
        LineIndex { starts: std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect() }
    }

    /// The LSP position of byte `offset` in `text` (clamped to the text).
    pub fn position(&self, text: &str, offset: usize) -> Position {
        let offset = offset.min(text.len());
        let line = self.starts.partition_point(|s| *s <= offset).saturating_sub(1);
        let start = self.starts[line];
        let col: usize = text.get(start..offset).map_or(0, |s| s.chars().map(char::len_utf16).sum());
        Position { line: line as u32, character: col as u32 }
    }

    /// The byte offset of LSP position `p` in `text` (clamped to the line's end).
    pub fn offset(&self, text: &str, p: Position) -> usize {
        let Some(&start) = self.starts.get(p.line as usize) else { return text.len() };
        let end = self.starts.get(p.line as usize + 1).map_or(text.len(), |e| e - 1);
        let mut units = 0u32;
        for (i, c) in text[start..end].char_indices() {
            if units >= p.character {
                return start + i;
            }
            units += c.len_utf16() as u32;
        }
        end
    }

    /// The LSP range of `span`.
    pub fn range(&self, text: &str, span: Span) -> Range {
        Range { start: self.position(text, span.start), end: self.position(text, span.end) }
    }
}

/// `d` as an LSP diagnostic of the document at `uri`.
pub fn diagnostic(d: &Diagnostic, text: &str, lines: &LineIndex, uri: &Uri) -> lsp_types::Diagnostic {
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
            location: Location { uri: uri.clone(), range: lines.range(text, l.span) },
            message: if l.message.is_empty() { "here".into() } else { l.message.clone() },
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
        related_information: if related.is_empty() { None } else { Some(related) },
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_columns_round_trip() {
        let text = "ab\n// é𝄞x\nz";
        let li = LineIndex::new(text);
        let x = text.find('x').unwrap();
        let p = li.position(text, x);
        // `// ` 3 units, é 1 unit, 𝄞 2 units.
        assert_eq!(p, Position { line: 1, character: 6 });
        assert_eq!(li.offset(text, p), x);
        assert_eq!(li.position(text, text.len()), Position { line: 2, character: 1 });
        assert_eq!(li.offset(text, Position { line: 9, character: 0 }), text.len());
    }
}
