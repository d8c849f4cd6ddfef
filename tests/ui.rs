//! UI tests (rustc's habit): every `tests/ui/<family>/<name>.mpk` is checked; its rendered
//! diagnostics are an insta snapshot `snapshots/ui/<family>/<name>.snap`, and its
//! `//~ ERROR E0103` (or `//~ WARNING`; several on one line) annotations must match the diagnostics exactly: each
//! annotation is a diagnostic with that code whose primary span starts on the annotated line, and
//! each error is annotated. Files named `pass_*.mpk` must check clean; the one a code's passing
//! neighbour says so with `//~ NEIGHBOUR E0103` after the construct it passes (see
//! [`every_code_has_a_passing_neighbour`]). Each file is checked as `mpkc check FILE` does, with
//! the contracts mpkc derives from it (their diagnostics land on the file's lines).

use mpkc::diag::{codes, render_human, ColorMode, Severity, SourceFile};
use mpkc::driver::{check_sources, Source};
use mpkc::sema::SemaOptions;
use mpkc::valid::CheckOptions;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn ui_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ui");
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "mpk") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn rel(p: &Path) -> String {
    p.strip_prefix(env!("CARGO_MANIFEST_DIR"))
        .unwrap()
        .to_string_lossy()
        .replace('\\', "/")
}

/// `(line, severity, code)` of each `//~ ERROR Exxxx` annotation.
fn annotations(text: &str) -> BTreeSet<(usize, String, String)> {
    let mut out = BTreeSet::new();
    for (i, line) in text.lines().enumerate() {
        // A line may carry several (`//~ ERROR E0606 //~ WARNING W0603`): two codes on one span.
        for part in line.split("//~").skip(1) {
            let mut words = part.split_whitespace();
            let (Some(sev), Some(code)) = (words.next(), words.next()) else {
                continue;
            };
            if sev.eq_ignore_ascii_case(NEIGHBOUR) {
                continue;
            }
            out.insert((i + 1, sev.to_ascii_lowercase(), code.to_string()));
        }
    }
    out
}

/// The word of a passing-neighbour annotation: `//~ NEIGHBOUR E0101` (see
/// [`every_code_has_a_passing_neighbour`]).
const NEIGHBOUR: &str = "NEIGHBOUR";

/// `(line, code, line holds contract text before the annotation)` of each `//~ NEIGHBOUR Exxxx`
/// annotation (several codes may follow the word).
fn neighbour_annotations(text: &str) -> Vec<(usize, String, bool)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let Some(pos) = line.find("//~") else {
            continue;
        };
        let mut words = line[pos + 3..].split_whitespace();
        if !words
            .next()
            .is_some_and(|w| w.eq_ignore_ascii_case(NEIGHBOUR))
        {
            continue;
        }
        let before = line[..pos].trim();
        let on_code = !before.is_empty() && !before.starts_with("//");
        for code in words {
            out.push((i + 1, code.trim_matches(',').to_string(), on_code));
        }
    }
    out
}

/// Checks one UI file as `mpkc check FILE` does: with the contracts mpkc derives from it.
fn check(path: &str, text: &str) -> mpkc::driver::Checked {
    let src = Source {
        path: path.to_string(),
        text: text.to_string(),
    };
    let Some(checked) = check_sources(&[src], &SemaOptions::default(), &CheckOptions::default())
        .into_iter()
        .next()
    else {
        panic!("{path}: no result");
    };
    checked
}

fn is_pass(f: &Path) -> bool {
    f.file_name()
        .unwrap()
        .to_string_lossy()
        .starts_with("pass_")
}

fn line_of(text: &str, pos: usize) -> usize {
    text[..pos.min(text.len())].matches('\n').count() + 1
}

/// Where the snapshot of UI test `tests/ui/<family>/<name>.mpk` lives: directory
/// `snapshots/ui/<family>` (relative to this file, as insta's `snapshot_path`) and snapshot
/// `<name>`.
fn snapshot_place(path: &str) -> (String, String) {
    let rel = path
        .trim_start_matches("tests/ui/")
        .trim_end_matches(".mpk");
    let (family, name) = rel.rsplit_once('/').unwrap_or(("", rel));
    (format!("../snapshots/ui/{family}"), name.to_string())
}

#[test]
fn ui() {
    let files = ui_files();
    assert!(!files.is_empty());
    let mut problems = Vec::new();
    for f in &files {
        let path = rel(f);
        let text = std::fs::read_to_string(f).unwrap();
        // The CLI's and the language server's entry point: derived contracts and generated-file
        // clashes included, every diagnostic in the file's own `Checked`.
        let checked = check(&path, &text);
        let file = SourceFile::new(&path, &text);
        let rendered: String = checked
            .diags
            .iter()
            .map(|d| render_human(d, &file, ColorMode::Never))
            .collect();
        let got: BTreeSet<(usize, String, String)> = checked
            .diags
            .iter()
            .filter(|d| d.severity != Severity::Note)
            .map(|d| {
                (
                    line_of(&text, d.main_span().start),
                    d.severity.as_str().to_string(),
                    d.code.to_string(),
                )
            })
            .collect();
        let want = annotations(&text);
        let is_pass = is_pass(f);
        if is_pass && checked.has_errors() {
            problems.push(format!("{path}: expected no errors, got:\n{rendered}"));
        }
        if !is_pass && !neighbour_annotations(&text).is_empty() {
            problems.push(format!(
                "{path}: `//~ {NEIGHBOUR}` belongs in a passing (`pass_*.mpk`) test"
            ));
        }
        if !is_pass && want.is_empty() {
            problems.push(format!(
                "{path}: a failing UI test needs `//~ ERROR Exxxx` annotations"
            ));
        }
        if got != want {
            problems.push(format!(
                "{path}: annotations {want:?} but diagnostics {got:?}\n{rendered}"
            ));
        }
        let (dir, name) = snapshot_place(&path);
        insta::with_settings!({snapshot_path => dir, prepend_module_to_snapshot => false, omit_expression => true}, {
            insta::assert_snapshot!(name, rendered);
        });
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

/// Every code in the registry has a failing UI test (tools and mpk-tree codes are covered by the
/// CLI tests),
/// and every code the UI tests use is registered.
#[test]
fn every_code_has_a_ui_test() {
    let mut used = BTreeSet::new();
    for f in ui_files() {
        let text = std::fs::read_to_string(&f).unwrap();
        for (_, _, code) in annotations(&text) {
            assert!(
                codes::lookup(&code).is_some(),
                "{}: unregistered code {code}",
                rel(&f)
            );
            used.insert(code);
        }
    }
    let missing: Vec<&str> = codes::REGISTRY
        .iter()
        // `mpk-tree` codes concern the MPK tree `mpkc wire` edits: tests/wire.rs covers them.
        .filter(|c| {
            !matches!(c.family, "tools" | "backend" | "mpk-tree" | "internal")
                && !used.contains(c.code)
        })
        .map(|c| c.code)
        .collect();
    assert!(
        missing.is_empty(),
        "codes without a failing UI test: {missing:?}"
    );
}

/// Every code has a passing neighbour: a `pass_*.mpk` that checks with no diagnostic at all
/// (no error, warning or note) and declares itself the neighbour of the code with
/// `//~ NEIGHBOUR Exxxx` written after the construct the rule checks, on its passing side (the
/// annotation must follow contract text on its line; several codes may follow the word). A code
/// named in a comment, or only in the file name, does not count; a neighbour annotation in a
/// failing test is an error of [`ui`], and a neighbour of an unregistered code an error here.
#[test]
fn every_code_has_a_passing_neighbour() {
    let mut neighboured = BTreeSet::new();
    let mut problems = Vec::new();
    for f in ui_files().iter().filter(|f| is_pass(f)) {
        let path = rel(f);
        let text = std::fs::read_to_string(f).unwrap();
        let marks = neighbour_annotations(&text);
        if marks.is_empty() {
            continue;
        }
        let checked = check(&path, &text);
        if !checked.diags.is_empty() {
            let codes: Vec<&str> = checked.diags.iter().map(|d| d.code).collect();
            problems.push(format!(
                "{path}: a passing neighbour has no diagnostics, got {codes:?}"
            ));
            continue;
        }
        for (line, code, on_code) in marks {
            if codes::lookup(&code).is_none() {
                problems.push(format!(
                    "{path}:{line}: `//~ {NEIGHBOUR} {code}`: unregistered code"
                ));
            } else if !on_code {
                problems.push(format!(
                    "{path}:{line}: `//~ {NEIGHBOUR} {code}` must follow the construct it passes, not stand alone"
                ));
            } else {
                neighboured.insert(code);
            }
        }
    }
    let missing: Vec<&str> = codes::REGISTRY
        .iter()
        .filter(|c| !matches!(c.family, "tools" | "backend" | "mpk-tree" | "internal"))
        .filter(|c| !neighboured.contains(c.code))
        .map(|c| c.code)
        .collect();
    if !missing.is_empty() {
        problems.push(format!("codes without a passing neighbour: {missing:?}"));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
