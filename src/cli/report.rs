//! Printing diagnostics and summaries.

use super::args::MessageFormat;
use crate::diag::{render_human, render_json, ColorMode, Severity, SourceFile};
use crate::driver::Checked;

/// Prints `c`'s diagnostics: rendered on stderr, or JSON lines on stdout.
pub fn print_diagnostics(c: &Checked, format: MessageFormat, color: ColorMode) {
    // One index of the file serves all its diagnostics.
    let file = SourceFile::new(&c.source.path, &c.source.text);
    for d in &c.diags {
        match format {
            MessageFormat::Human => err!("{}", render_human(d, &file, color)),
            MessageFormat::Json => outln!("{}", render_json(d, &file)),
        }
    }
}

/// The closing line of `check`: counts of files, instances, errors and warnings (human mode).
pub fn summary(checked: &[Checked], format: MessageFormat) {
    if format == MessageFormat::Json {
        return;
    }
    let errors: usize = checked
        .iter()
        .map(|c| {
            c.diags
                .iter()
                .filter(|d| d.severity == Severity::Error)
                .count()
        })
        .sum();
    let warnings: usize = checked
        .iter()
        .map(|c| {
            c.diags
                .iter()
                .filter(|d| d.severity == Severity::Warning)
                .count()
        })
        .sum();
    let tasks: usize = checked.iter().map(|c| c.tasks.len()).sum();
    // Contracts mpkc derives (a split-K pipeline's reduce) are not files.
    let derived = checked.iter().filter(|c| c.derived.is_some()).count();
    let files = checked.len() - derived;
    let derived_note = if derived > 0 {
        format!(
            " (and {derived} derived contract{})",
            if derived == 1 { "" } else { "s" }
        )
    } else {
        String::new()
    };
    errln!(
        "checked {files} file{}{derived_note}: {tasks} task instance{} clean, {errors} error{}, {warnings} warning{}",
        if files == 1 { "" } else { "s" },
        if tasks == 1 { "" } else { "s" },
        if errors == 1 { "" } else { "s" },
        if warnings == 1 { "" } else { "s" }
    );
}
