//! Diagnostics: the one value every stage reports through, rendered for humans (codespan-reporting),
//! as JSON lines (docs/design.md, "Conventions") and, later, for the language server.
//!
//! A [`Diagnostic`] carries a stable code from [`codes`], a lowercase message that names the
//! numbers, labelled spans (the primary one says what is wrong here, secondary ones why another
//! place matters), notes (facts) and a `help` (the change to make).

pub mod codes;
mod excerpt;
mod render;
mod source;

pub use excerpt::{Excerpt, LONG_LINE_CHARS, WINDOW_CHARS};
pub use render::{render_human, render_json, ColorMode};
pub use source::{line_indexes_built, SourceFile};

use crate::span::Span;
use serde::Serialize;

/// How serious a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Blocks generation; exit status 1.
    Error,
    /// Reported, generation goes on.
    Warning,
    /// Context only.
    Note,
}

impl Severity {
    /// The word used in JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
        }
    }
}

/// A labelled span.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Label {
    /// Where.
    pub span: Span,
    /// What this place has to do with the problem.
    pub message: String,
    /// The primary label marks the problem itself.
    pub primary: bool,
}

/// One reported problem.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Stable code, e.g. `E0103` (see [`codes::REGISTRY`]).
    pub code: &'static str,
    /// Error, warning or note.
    pub severity: Severity,
    /// Lowercase, unpunctuated, with the numbers involved.
    pub message: String,
    /// Labelled spans; the first primary label is the diagnostic's main span.
    pub labels: Vec<Label>,
    /// Facts and context.
    pub notes: Vec<String>,
    /// How to fix it.
    pub help: Option<String>,
}

impl Diagnostic {
    /// A new error with code `code` and message `message` and no labels yet.
    pub fn error(code: &'static str, message: impl Into<String>) -> Self {
        Diagnostic {
            code,
            severity: Severity::Error,
            message: message.into(),
            labels: Vec::new(),
            notes: Vec::new(),
            help: None,
        }
    }

    /// A new warning.
    pub fn warning(code: &'static str, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(code, message)
        }
    }

    /// Adds the primary label.
    pub fn primary(mut self, span: Span, message: impl Into<String>) -> Self {
        self.labels.push(Label {
            span,
            message: message.into(),
            primary: true,
        });
        self
    }

    /// Adds a secondary label.
    pub fn secondary(mut self, span: Span, message: impl Into<String>) -> Self {
        self.labels.push(Label {
            span,
            message: message.into(),
            primary: false,
        });
        self
    }

    /// Adds a note.
    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    /// Sets the help line.
    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// The main span: the first primary label's, else the first label's, else an empty span.
    pub fn main_span(&self) -> Span {
        self.labels
            .iter()
            .find(|l| l.primary)
            .or_else(|| self.labels.first())
            .map(|l| l.span)
            .unwrap_or_default()
    }

    /// Widens every label's span to the UTF-8 character boundaries of `text`, the file the
    /// diagnostic is about (see [`Span::widen_to_chars`]).
    pub fn widen_to_chars(&mut self, text: &str) {
        for l in &mut self.labels {
            l.span = l.span.widen_to_chars(text);
        }
    }

    /// True for errors.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// The code of a follow-on error whose cause was already reported (e.g. a use of a param whose
/// value was rejected). [`Sink::push`] drops it, so one problem gives one report.
pub const FOLLOW_ON: &str = "E0000";

/// Collects diagnostics from a pass; passes push and go on, so one run reports every problem.
#[derive(Clone, Debug, Default)]
pub struct Sink {
    diags: Vec<Diagnostic>,
    suppressed: usize,
}

impl Sink {
    /// An empty sink.
    pub fn new() -> Self {
        Sink::default()
    }

    /// Records a diagnostic (follow-on errors are dropped, see [`FOLLOW_ON`]).
    pub fn push(&mut self, d: Diagnostic) {
        if d.code == FOLLOW_ON {
            self.suppressed += 1;
            return;
        }
        self.diags.push(d);
    }

    /// Records several.
    pub fn extend(&mut self, ds: impl IntoIterator<Item = Diagnostic>) {
        for d in ds {
            self.push(d);
        }
    }

    /// Number of follow-on errors dropped: a stage that saw one must not go on as if clean.
    pub fn suppressed(&self) -> usize {
        self.suppressed
    }

    /// True when any error was recorded (follow-on errors included).
    pub fn has_errors(&self) -> bool {
        self.suppressed > 0 || self.diags.iter().any(Diagnostic::is_error)
    }

    /// Number of errors recorded, follow-on errors included.
    pub fn error_count(&self) -> usize {
        self.suppressed + self.diags.iter().filter(|d| d.is_error()).count()
    }

    /// The diagnostics in report order (source position, then code), duplicates removed.
    pub fn into_sorted(mut self) -> Vec<Diagnostic> {
        self.diags.sort_by(|a, b| {
            (a.main_span().start, a.code, &a.message).cmp(&(
                b.main_span().start,
                b.code,
                &b.message,
            ))
        });
        self.diags.dedup();
        merge_instances(self.diags)
    }

    /// Number of diagnostics recorded so far.
    pub fn len(&self) -> usize {
        self.diags.len()
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.diags.is_empty()
    }

    /// Adds `note` to every diagnostic recorded from index `start` on.
    pub fn annotate_from(&mut self, start: usize, note: &str) {
        self.annotate_from_except(start, note, |_| false);
    }

    /// Adds `note` to every diagnostic recorded from index `start` on for which `skip` is false.
    pub fn annotate_from_except(
        &mut self,
        start: usize,
        note: &str,
        skip: impl Fn(&Diagnostic) -> bool,
    ) {
        for d in self.diags.iter_mut().skip(start).filter(|d| !skip(d)) {
            if !d.notes.iter().any(|n| n == note) {
                d.notes.push(note.to_string());
            }
        }
    }

    /// The diagnostics recorded so far, in push order.
    pub fn as_slice(&self) -> &[Diagnostic] {
        &self.diags
    }
}

/// The note `valid::check` adds to each diagnostic of instance `name`: "in instance `NAME`"
/// (what [`Sink::into_sorted`] merges across instances).
pub fn instance_note(name: &str) -> String {
    format!("in instance `{name}`")
}

/// The instance an [`instance_note`] names.
fn instance_of(note: &str) -> Option<&str> {
    note.strip_prefix("in instance `")?.strip_suffix('`')
}

/// One diagnostic for those that differ only in their instance note (an error in the contract's
/// text, not in what an instance sets, repeats for every instance): "in instances `a`, `b`".
/// Order is kept: each merged diagnostic stands where its first instance's did.
fn merge_instances(diags: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let mut out: Vec<(Diagnostic, Vec<String>)> = Vec::with_capacity(diags.len());
    for mut d in diags {
        let Some(at) = d.notes.iter().position(|n| instance_of(n).is_some()) else {
            out.push((d, Vec::new()));
            continue;
        };
        let inst = instance_of(&d.notes.remove(at))
            .unwrap_or_default()
            .to_string();
        match out
            .iter_mut()
            .find(|(o, names)| !names.is_empty() && *o == d)
        {
            Some((_, names)) => names.push(inst),
            None => out.push((d, vec![inst])),
        }
    }
    out.into_iter()
        .map(|(mut d, names)| {
            match names.as_slice() {
                [] => {}
                [one] => d.notes.push(instance_note(one)),
                many => d.notes.push(format!(
                    "in instances {}",
                    many.iter()
                        .map(|n| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            }
            d
        })
        .collect()
}

/// The candidate closest to `name` (Jaro-Winkler ≥ 0.8), for "did you mean" helps.
pub fn suggest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(name, c), c))
        .filter(|(s, c)| *s >= 0.8 && *c != name)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}
