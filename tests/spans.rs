//! Every diagnostic span starts and ends on a UTF-8 character boundary: in the checker's
//! output, in the JSON form, in the human rendering and in what the language server publishes.

use mpkc::diag::{render_human, render_json, ColorMode, Diagnostic, SourceFile};
use mpkc::driver::{check_source, stdlib, Source};
use mpkc::lsp::convert::{self, LineIndex};
use mpkc::span::Span;
use proptest::prelude::*;
use std::process::Command;

/// The input: a syntax error on `é` (bytes 11..13).
const E_ACUTE: &str = "task t {\n  \u{e9}\n}\n";

fn uri() -> lsp_types::Uri {
    "file:///u.mpk".parse().unwrap()
}

#[test]
fn a_syntax_error_on_a_non_ascii_character_spans_the_whole_character() {
    let path = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("u.mpk");
    std::fs::write(&path, E_ACUTE).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_mpkc"))
        .arg("check")
        .arg(&path)
        .args(["--message-format", "json"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let stdout = String::from_utf8(o.stdout).unwrap();
    let v: serde_json::Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
    assert_eq!(v["code"], "E0001");
    assert_eq!(v["span"]["byte_start"], 11);
    assert_eq!(v["span"]["byte_end"], 13);
    assert_eq!(v["span"]["column_end"], 5);
    assert_eq!(v["labels"][0]["span"]["byte_end"], 13);
    let rendered = v["rendered"].as_str().unwrap();
    assert!(
        rendered.contains("2 │   \u{e9}\n  │   ^ U+00E9 here"),
        "{rendered}"
    );

    let o = Command::new(env!("CARGO_BIN_EXE_mpkc"))
        .arg("check")
        .arg(&path)
        .output()
        .unwrap();
    let stderr = String::from_utf8(o.stderr).unwrap();
    assert!(stderr.contains("u.mpk:2:3"), "{stderr}");

    // The language server: one UTF-16 unit, the `é`.
    let c = check(E_ACUTE);
    assert_eq!(c.diags[0].main_span(), Span::new(11, 13));
    let lines = LineIndex::new(E_ACUTE);
    let d = convert::diagnostic(&c.diags[0], E_ACUTE, &lines, &uri());
    assert_eq!((d.range.start.line, d.range.start.character), (1, 2));
    assert_eq!((d.range.end.line, d.range.end.character), (1, 3));
}

#[test]
fn a_span_inside_a_character_is_widened_everywhere() {
    // A span made by byte arithmetic (as nvcc's columns are mapped) that splits `é`.
    let d = Diagnostic::error("E0001", "inside").primary(Span::new(12, 12), "here");
    let file = SourceFile::new("u.mpk", E_ACUTE);
    let v: serde_json::Value = serde_json::from_str(&render_json(&d, &file)).unwrap();
    assert_eq!(v["span"]["byte_start"], 11);
    assert_eq!(v["span"]["byte_end"], 13);
    let human = render_human(&d, &file, ColorMode::Never);
    assert!(human.contains("u.mpk:2:3"), "{human}");
    let lines = LineIndex::new(E_ACUTE);
    let l = convert::diagnostic(&d, E_ACUTE, &lines, &uri());
    assert_eq!((l.range.start.character, l.range.end.character), (2, 3));
}

fn check(text: &str) -> mpkc::driver::Checked {
    check_source(
        &Source {
            path: "p.mpk".into(),
            text: text.into(),
        },
        &Default::default(),
        &Default::default(),
    )
}

/// Characters of 2, 3 and 4 bytes, a combining mark, a no-break space, a byte-order mark and a
/// line separator.
const WIDE: &[&str] = &[
    "\u{e9}",
    "\u{df}",
    "\u{4e2d}",
    "\u{1f600}",
    "\u{301}",
    "\u{a0}",
    "\u{feff}",
    "\u{3a9}",
    "\u{1d538}",
    "\u{2028}",
];

fn insert(base: &str, edits: &[(usize, usize, usize)]) -> String {
    let mut s: Vec<char> = base.chars().collect();
    for &(at, which, times) in edits {
        let at = at % (s.len() + 1);
        let piece: Vec<char> = WIDE[which].repeat(times).chars().collect();
        s.splice(at..at, piece);
    }
    s.into_iter().collect()
}

fn on_boundaries(text: &str, span: &serde_json::Value) -> bool {
    let (a, b) = (
        span["byte_start"].as_u64().unwrap() as usize,
        span["byte_end"].as_u64().unwrap() as usize,
    );
    a <= b && b <= text.len() && text.is_char_boundary(a) && text.is_char_boundary(b)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, .. ProptestConfig::default() })]

    #[test]
    fn non_ascii_insertions_give_spans_on_character_boundaries(
        which in 0usize..16,
        edits in prop::collection::vec((any::<usize>(), 0..WIDE.len(), 1usize..3), 1..5),
    ) {
        let sources = stdlib::sources();
        let text = insert(&sources[which % sources.len()].text, &edits);
        let c = check(&text);
        let file = SourceFile::new("p.mpk", &text);
        let lines = LineIndex::new(&text);
        for d in &c.diags {
            for l in &d.labels {
                prop_assert!(text.is_char_boundary(l.span.start) && text.is_char_boundary(l.span.end),
                    "{} {:?} splits a character", d.code, l.span);
            }
            let v: serde_json::Value = serde_json::from_str(&render_json(d, &file)).unwrap();
            prop_assert!(on_boundaries(&text, &v["span"]), "{}", v);
            for l in v["labels"].as_array().unwrap() {
                prop_assert!(on_boundaries(&text, &l["span"]), "{}", v);
            }
            render_human(d, &file, ColorMode::Never);
            let published = convert::diagnostic(d, &text, &lines, &uri());
            let (s, e) = (published.range.start, published.range.end);
            prop_assert!((s.line, s.character) <= (e.line, e.character));
            // The published start is the span's own start (no rounding happened on the way).
            let start = d.main_span().start;
            if !text[..start].ends_with('\r') {
                prop_assert_eq!(lines.offset(&text, s), start);
            }
        }
    }
}
