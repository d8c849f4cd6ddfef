//! Rendering diagnostics: human text through codespan-reporting, and the JSON-lines form fixed by
//! docs/design.md ("Conventions").
//!
//! Both take a [`SourceFile`] indexed once per file, so each diagnostic costs the size of what it
//! shows, not of the file. Spans are widened to character boundaries first. codespan renders an
//! [`Excerpt`] (only the lines shown, long lines cut to windows with `…`), so the human text and
//! JSON's `rendered` stay bounded on a file written on one line; JSON's `span` fields are always
//! the exact offsets into the real file.

use super::excerpt::Excerpt;
use super::source::SourceFile;
use super::{Diagnostic, Severity};
use crate::span::Span;
use codespan_reporting::diagnostic as cs;
use codespan_reporting::term::{self, termcolor};
use serde_json::json;

/// Whether human output is coloured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColorMode {
    /// ANSI colours.
    Always,
    /// Plain text.
    Never,
}

fn to_codespan(d: &Diagnostic, ranges: &[std::ops::Range<usize>]) -> cs::Diagnostic<()> {
    let severity = match d.severity {
        Severity::Error => cs::Severity::Error,
        Severity::Warning => cs::Severity::Warning,
        Severity::Note => cs::Severity::Note,
    };
    let labels = d
        .labels
        .iter()
        .zip(ranges)
        .map(|(l, r)| {
            let style = if l.primary {
                cs::LabelStyle::Primary
            } else {
                cs::LabelStyle::Secondary
            };
            cs::Label::new(style, (), r.clone()).with_message(l.message.clone())
        })
        .collect();
    let mut notes: Vec<String> = d.notes.iter().map(|n| format!("note: {n}")).collect();
    if let Some(h) = &d.help {
        notes.push(format!("help: {h}"));
    }
    cs::Diagnostic::new(severity)
        .with_code(d.code)
        .with_message(d.message.clone())
        .with_labels(labels)
        .with_notes(notes)
}

/// Renders `d`, a diagnostic about `file`, as codespan-reporting text (rustc's look), colour per
/// `color`. Lines longer than [`super::LONG_LINE_CHARS`] characters show windows around the
/// labels.
pub fn render_human(d: &Diagnostic, file: &SourceFile<'_>, color: ColorMode) -> String {
    let config = term::Config::default();
    let spans: Vec<Span> = d.labels.iter().map(|l| l.span).collect();
    let excerpt = Excerpt::new(
        file,
        &spans,
        config.start_context_lines,
        config.end_context_lines,
    );
    let mut out = if color == ColorMode::Always {
        termcolor::Buffer::ansi()
    } else {
        termcolor::Buffer::no_color()
    };
    let cd = to_codespan(d, excerpt.ranges());
    if term::emit(&mut out, &config, &excerpt, &cd).is_err() {
        return format!("{}[{}]: {}\n", d.severity.as_str(), d.code, d.message);
    }
    String::from_utf8_lossy(out.as_slice()).into_owned()
}

fn span_json(file: &SourceFile<'_>, span: Span) -> serde_json::Value {
    let span = file.widen(span);
    let (ls, cs_) = file.line_col(span.start);
    let (le, ce) = file.line_col(span.end);
    json!({
        "byte_start": span.start,
        "byte_end": span.end,
        "line_start": ls,
        "column_start": cs_,
        "line_end": le,
        "column_end": ce,
    })
}

/// Renders `d` as one JSON object (one line, no trailing newline) in the form of docs/design.md:
/// `{code, severity, message, file, span, labels: [{span, message, primary}], notes, help, rendered}`.
/// Spans are widened to character boundaries and clamped to the text; lines and columns count
/// from 1, columns in UTF-8 bytes.
pub fn render_json(d: &Diagnostic, file: &SourceFile<'_>) -> String {
    let labels: Vec<_> = d
        .labels
        .iter()
        .map(|l| json!({"span": span_json(file, l.span), "message": l.message, "primary": l.primary}))
        .collect();
    let v = json!({
        "code": d.code,
        "severity": d.severity.as_str(),
        "message": d.message,
        "file": file.name,
        "span": span_json(file, d.main_span()),
        "labels": labels,
        "notes": d.notes,
        "help": d.help,
        "rendered": render_human(d, file, ColorMode::Never),
    });
    v.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_has_the_convention_fields() {
        let text = "task t {\n  stages 7\n}\n";
        let d = Diagnostic::error("E0103", "too big")
            .primary(Span::new(11, 19), "here")
            .help("fix it");
        let v: serde_json::Value =
            serde_json::from_str(&render_json(&d, &SourceFile::new("t.mpk", text))).unwrap();
        for k in [
            "code", "severity", "message", "file", "span", "labels", "notes", "help", "rendered",
        ] {
            assert!(v.get(k).is_some(), "missing {k}");
        }
        assert_eq!(v["span"]["line_start"], 2);
        assert_eq!(v["span"]["column_start"], 3);
        assert_eq!(v["labels"][0]["primary"], true);
    }
}
