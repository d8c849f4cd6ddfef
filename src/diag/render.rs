//! Rendering diagnostics: human text through codespan-reporting, and the JSON-lines form fixed by
//! docs/design.md ("Conventions").

use super::{Diagnostic, Severity};
use crate::span::Span;
use codespan_reporting::diagnostic as cs;
use codespan_reporting::files::SimpleFile;
use codespan_reporting::term::{self, termcolor};
use serde_json::json;

/// A source file as diagnostics see it: the name to print and the text.
#[derive(Clone, Copy, Debug)]
pub struct SourceFile<'a> {
    /// The name printed in diagnostics (as given on the command line, or `stdlib/<name>.mpk`).
    pub name: &'a str,
    /// The full text.
    pub text: &'a str,
}

/// Whether human output is coloured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColorMode {
    /// ANSI colours.
    Always,
    /// Plain text.
    Never,
}

fn to_codespan(d: &Diagnostic) -> cs::Diagnostic<()> {
    let severity = match d.severity {
        Severity::Error => cs::Severity::Error,
        Severity::Warning => cs::Severity::Warning,
        Severity::Note => cs::Severity::Note,
    };
    let labels = d
        .labels
        .iter()
        .map(|l| {
            let style = if l.primary {
                cs::LabelStyle::Primary
            } else {
                cs::LabelStyle::Secondary
            };
            cs::Label::new(style, (), l.span.range()).with_message(l.message.clone())
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

/// Renders `d` as codespan-reporting text (rustc's look), colour per `color`.
pub fn render_human(d: &Diagnostic, file: SourceFile<'_>, color: ColorMode) -> String {
    let sf = SimpleFile::new(file.name, clamp_source(file.text));
    let config = term::Config::default();
    let mut out = if color == ColorMode::Always {
        termcolor::Buffer::ansi()
    } else {
        termcolor::Buffer::no_color()
    };
    let mut cd = to_codespan(d);
    // codespan panics on spans past the end of the text; clamp defensively.
    let len = file.text.len();
    for l in &mut cd.labels {
        l.range = l.range.start.min(len)..l.range.end.min(len).max(l.range.start.min(len));
    }
    if term::emit(&mut out, &config, &sf, &cd).is_err() {
        return format!("{}[{}]: {}\n", d.severity.as_str(), d.code, d.message);
    }
    String::from_utf8_lossy(out.as_slice()).into_owned()
}

fn clamp_source(text: &str) -> &str {
    text
}

/// 1-based line and column (columns count UTF-8 bytes) of byte `pos` in `text`.
pub fn line_col(text: &str, pos: usize) -> (usize, usize) {
    let pos = pos.min(text.len());
    let before = &text.as_bytes()[..pos];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    (line, pos - line_start + 1)
}

fn span_json(text: &str, span: Span) -> serde_json::Value {
    let (ls, cs_) = line_col(text, span.start);
    let (le, ce) = line_col(text, span.end);
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
pub fn render_json(d: &Diagnostic, file: SourceFile<'_>) -> String {
    let labels: Vec<_> = d
        .labels
        .iter()
        .map(|l| json!({"span": span_json(file.text, l.span), "message": l.message, "primary": l.primary}))
        .collect();
    let v = json!({
        "code": d.code,
        "severity": d.severity.as_str(),
        "message": d.message,
        "file": file.name,
        "span": span_json(file.text, d.main_span()),
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
    fn line_col_counts_bytes_from_one() {
        let t = "ab\ncd\n";
        assert_eq!(line_col(t, 0), (1, 1));
        assert_eq!(line_col(t, 1), (1, 2));
        assert_eq!(line_col(t, 3), (2, 1));
        assert_eq!(line_col(t, 5), (2, 3));
        assert_eq!(line_col(t, 99), (3, 1));
    }

    #[test]
    fn json_has_the_convention_fields() {
        let text = "task t {\n  stages 7\n}\n";
        let d = Diagnostic::error("E0103", "too big")
            .primary(Span::new(11, 19), "here")
            .help("fix it");
        let v: serde_json::Value = serde_json::from_str(&render_json(
            &d,
            SourceFile {
                name: "t.mpk",
                text,
            },
        ))
        .unwrap();
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
