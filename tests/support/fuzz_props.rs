//! The properties the fuzz targets (`fuzz/fuzz_targets/*.rs`) assert, shared with the regression
//! test `tests/fuzz_regressions.rs` that replays every input the fuzzers ever found
//! (`tests/fuzz/<target>/`). A violated property panics, which libFuzzer reports as a crash.
//!
//! - [`check`]: any text goes through parse → sema → check (with the derived split-K reduce tasks
//!   and the output-name clash check, as `mpkc check` runs it) → plan → code generation without a
//!   panic; every diagnostic's spans lie inside the text on UTF-8 character boundaries and render
//!   as human text and as one JSON line; generation is deterministic.
//! - [`fmt`]: `mpkc fmt` of a parsing contract parses, keeps every token (comments and inline
//!   CUDA included) up to whitespace, gives the checker the same codes, and is idempotent.
//! - [`lsp`]: the language server's document path (open, full-text changes, requests at
//!   positions taken from the input) answers every request and never panics.

#![allow(dead_code)]

use mpkc::back::{self, ContractInfo};
use mpkc::diag::{render_human, render_json, ColorMode, Diagnostic, SourceFile};
use mpkc::driver::{check_sources, Source};
use mpkc::sema::SemaOptions;
use mpkc::valid::CheckOptions;

/// The name fuzz inputs are checked under.
pub const FILE: &str = "fuzz.mpk";

/// Bytes as a contract: invalid UTF-8 sequences become U+FFFD, as an editor would show them.
pub fn text_of(data: &[u8]) -> String {
    String::from_utf8_lossy(data).into_owned()
}

fn assert_span_ok(text: &str, d: &Diagnostic, start: usize, end: usize) {
    assert!(
        start <= end && end <= text.len(),
        "{} `{}`: span {start}..{end} outside the text of {} bytes",
        d.code,
        d.message,
        text.len()
    );
    assert!(
        text.is_char_boundary(start) && text.is_char_boundary(end),
        "{} `{}`: span {start}..{end} not on character boundaries",
        d.code,
        d.message
    );
}

/// Parse → check → plan → generate over `text`; panics on a violated property.
pub fn check(text: &str) {
    let src = Source {
        path: FILE.to_string(),
        text: text.to_string(),
    };
    let checked = check_sources(
        std::slice::from_ref(&src),
        &SemaOptions::default(),
        &CheckOptions::default(),
    );
    for c in &checked {
        let file = SourceFile::new(&c.source.path, &c.source.text);
        for d in &c.diags {
            for l in &d.labels {
                assert_span_ok(&c.source.text, d, l.span.start, l.span.end);
            }
            assert!(!d.message.is_empty(), "{}: empty message", d.code);
            let human = render_human(d, &file, ColorMode::Never);
            assert!(
                human.contains(d.code),
                "{}: rendering lost the code",
                d.code
            );
            let json = render_json(d, &file);
            assert!(!json.contains('\n'), "{}: JSON spans lines", d.code);
            let v: serde_json::Value = serde_json::from_str(&json).expect("JSON diagnostic parses");
            assert_eq!(v["code"], d.code);
        }
        let info = ContractInfo::new(&c.source.path, &c.source.text);
        for t in &c.tasks {
            assert!(
                !t.plans.is_empty(),
                "{}: a checked task without a plan",
                t.ir.unit_name()
            );
            let once = back::generate(t, &info);
            assert!(!once.is_empty());
            assert_eq!(
                once,
                back::generate(t, &info),
                "generation is not deterministic"
            );
        }
    }
}

fn tokens(s: &str) -> Vec<String> {
    mpkc::fmt::lex::lex(s)
        .into_iter()
        .map(|t| t.text.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

fn codes(path: &str, text: &str) -> Vec<&'static str> {
    let c = mpkc::driver::check_source(
        &Source {
            path: path.into(),
            text: text.into(),
        },
        &SemaOptions::default(),
        &CheckOptions::default(),
    );
    let mut v: Vec<&'static str> = c.diags.iter().map(|d| d.code).collect();
    v.sort_unstable();
    v
}

/// `mpkc fmt` over `text`; panics on a violated property. Text that does not parse is left
/// alone by fmt and only has to not panic.
pub fn fmt(text: &str) {
    if mpkc::front::parse_file(text).is_err() {
        let _ = mpkc::fmt::lex::lex(text);
        return;
    }
    let once = mpkc::fmt::format(text);
    assert!(
        mpkc::front::parse_file(&once).is_ok(),
        "formatted text no longer parses:\n{once}"
    );
    assert_eq!(tokens(&once), tokens(text), "fmt changed a token");
    let twice = mpkc::fmt::format(&once);
    assert_eq!(twice, once, "fmt is not idempotent");
    assert_eq!(
        codes(FILE, &once),
        codes(FILE, text),
        "fmt changed the checker's verdict"
    );
}
