//! Rendering scales with what it shows: a file is line-indexed once for all its diagnostics, a
//! long line is shown as windows around the labels (so a contract written on one line gives
//! output linear in its diagnostics), and on ordinary lines the excerpt codespan renders gives
//! exactly what codespan gives for the whole file.

#[path = "support/big_inputs.rs"]
mod big_inputs;

use codespan_reporting::diagnostic as cs;
use codespan_reporting::files::SimpleFile;
use codespan_reporting::term::{self, termcolor};
use mpkc::diag::{
    line_indexes_built, render_human, render_json, ColorMode, Diagnostic, SourceFile,
    LONG_LINE_CHARS, WINDOW_CHARS,
};
use mpkc::driver::{check_source, Checked, Source};
use mpkc::span::Span;
use proptest::prelude::*;
use std::process::Command;

fn check(src: &Source) -> Checked {
    check_source(src, &Default::default(), &Default::default())
}

#[test]
fn a_file_is_line_indexed_once_for_all_its_diagnostics() {
    for src in [
        big_inputs::duplicate_lines(2000),
        big_inputs::many_regions(1000),
    ] {
        let c = check(&src);
        assert!(c.diags.len() >= 1000, "{}: {}", src.path, c.diags.len());
        let before = line_indexes_built();
        let file = SourceFile::new(&src.path, &src.text);
        let mut bytes = 0;
        for d in &c.diags {
            bytes += render_human(d, &file, ColorMode::Never).len();
            bytes += render_json(d, &file).len();
        }
        assert_eq!(line_indexes_built() - before, 1, "{}", src.path);
        assert!(bytes < 4096 * c.diags.len(), "{}: {bytes} bytes", src.path);
    }
}

#[test]
fn a_contract_on_one_line_renders_in_bounded_windows() {
    let src = big_inputs::one_line(160);
    let path = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("one_line_160.mpk");
    std::fs::write(&path, &src.text).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_mpkc"))
        .arg("check")
        .arg(&path)
        .args(["--message-format", "json"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let stdout = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 160);
    assert!(
        stdout.len() < 2048 * lines.len(),
        "{} bytes for {} diagnostics",
        stdout.len(),
        lines.len()
    );
    let mut starts = src.text.match_indices("align 1000").map(|(i, _)| i);
    for l in &lines {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        assert!(l.len() < 2048, "{l}");
        // The span stays exact: byte offsets and byte columns into the real line.
        let at = starts.next().unwrap();
        assert_eq!(v["span"]["byte_start"], at);
        assert_eq!(v["span"]["byte_end"], at + "align 1000".len());
        assert_eq!(v["span"]["line_start"], 1);
        assert_eq!(v["span"]["column_start"], at + 1);
        let rendered = v["rendered"].as_str().unwrap();
        assert!(rendered.contains(&format!("one_line_160.mpk:1:{}", at + 1)));
        for r in rendered.lines() {
            assert!(r.chars().count() < WINDOW_CHARS + 40, "{r}");
        }
        assert_eq!(caret_under(rendered), Some("align 1000".to_string()));
    }
    // stderr (human) is bounded the same way.
    let o = Command::new(env!("CARGO_BIN_EXE_mpkc"))
        .arg("check")
        .arg(&path)
        .output()
        .unwrap();
    let stderr = String::from_utf8(o.stderr).unwrap();
    assert!(stderr.len() < 2048 * 160, "{} bytes", stderr.len());
}

/// The source text above the first run of `^` in `rendered`.
fn caret_under(rendered: &str) -> Option<String> {
    let lines: Vec<&str> = rendered.lines().collect();
    let i = lines.iter().position(|l| l.contains('^'))?;
    let carets: Vec<char> = lines[i].chars().collect();
    let from = carets.iter().position(|&c| c == '^')?;
    let n = carets[from..].iter().take_while(|&&c| c == '^').count();
    Some(lines[i - 1].chars().skip(from).take(n).collect())
}

#[test]
fn labels_far_apart_on_a_long_line_get_their_own_windows() {
    let text = format!(
        "{}needle{}haystack{}\nnext line\n",
        "a".repeat(30),
        "b".repeat(700),
        "c".repeat(500)
    );
    let needle = 30;
    let hay = 30 + 6 + 700;
    let d = Diagnostic::error("E0001", "far apart")
        .primary(Span::new(hay, hay + 8), "primary")
        .secondary(Span::new(needle, needle + 6), "secondary");
    let file = SourceFile::new("long.mpk", &text);
    let out = render_human(&d, &file, ColorMode::Never);
    assert!(out.contains("long.mpk:1:737"), "{out}");
    let source_lines: Vec<&str> = out.lines().filter(|l| l.starts_with("1 │")).collect();
    assert_eq!(source_lines.len(), 2, "{out}");
    assert!(source_lines[0].contains("needle") && source_lines[0].ends_with('…'));
    assert!(source_lines[1].contains("haystack") && source_lines[1].contains("│ …"));
    for l in out.lines() {
        assert!(l.chars().count() <= WINDOW_CHARS + 12, "{l}");
    }
    // A label wider than a window is cut at the window's end.
    let wide = Diagnostic::error("E0001", "wide").primary(Span::new(40, 700), "wide");
    let out = render_human(&wide, &file, ColorMode::Never);
    let carets = out.lines().find(|l| l.contains('^')).unwrap();
    assert_eq!(carets.matches('^').count(), WINDOW_CHARS, "{out}");
    assert!(text.lines().next().unwrap().chars().count() > LONG_LINE_CHARS);
}

/// codespan's own rendering of `d` over the whole text.
fn codespan_whole_file(d: &Diagnostic, name: &str, text: &str) -> String {
    let labels = d
        .labels
        .iter()
        .map(|l| {
            let style = if l.primary {
                cs::LabelStyle::Primary
            } else {
                cs::LabelStyle::Secondary
            };
            cs::Label::new(style, (), l.span.widen_to_chars(text).range())
                .with_message(l.message.clone())
        })
        .collect();
    let mut notes: Vec<String> = d.notes.iter().map(|n| format!("note: {n}")).collect();
    if let Some(h) = &d.help {
        notes.push(format!("help: {h}"));
    }
    let cd = cs::Diagnostic::error()
        .with_code(d.code)
        .with_message(d.message.clone())
        .with_labels(labels)
        .with_notes(notes);
    let mut out = termcolor::Buffer::no_color();
    term::emit(
        &mut out,
        &term::Config::default(),
        &SimpleFile::new(name, text),
        &cd,
    )
    .unwrap();
    String::from_utf8(out.into_inner()).unwrap()
}

fn short_text() -> impl Strategy<Value = String> {
    prop::collection::vec("[a \t\u{e9}\u{4e2d}\r{}]{0,30}", 1..40)
        .prop_map(|lines| lines.join("\n"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, .. ProptestConfig::default() })]

    /// On lines up to the limit, the excerpt renders exactly as codespan renders the file:
    /// single- and multi-line labels, gaps of one line and of many, context lines, spans at the
    /// end of the text.
    #[test]
    fn the_excerpt_renders_like_codespan_on_the_whole_file(
        text in short_text(),
        labels in prop::collection::vec((any::<usize>(), 0usize..400, any::<bool>()), 1..5),
        trailing_newline in any::<bool>(),
    ) {
        let text = if trailing_newline { text + "\n" } else { text };
        let mut d = Diagnostic::error("E0001", "message").help("help").note("note");
        for (k, &(start, len, primary)) in labels.iter().enumerate() {
            let start = start % (text.len() + 1);
            let span = Span::new(start, start + len);
            d = if primary || k == 0 {
                d.primary(span, format!("label {k}"))
            } else {
                d.secondary(span, format!("label {k}"))
            };
        }
        let file = SourceFile::new("f.mpk", &text);
        prop_assert_eq!(
            render_human(&d, &file, ColorMode::Never),
            codespan_whole_file(&d, "f.mpk", &text)
        );
    }
}
