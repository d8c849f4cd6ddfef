//! `mpkc fmt` on every contract in the repository: the stdlib and the examples are kept
//! formatted; formatting any parsing contract (the UI tests included) changes only whitespace,
//! keeps every comment, is idempotent, and leaves the checker's verdict unchanged.

use mpkc::driver::{check_source, Source};
use mpkc::fmt::{format, lex::lex};
use std::path::{Path, PathBuf};
use std::process::Command;

fn contracts(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            contracts(&p, out);
        } else if p.extension().is_some_and(|x| x == "mpk") {
            out.push(p);
        }
    }
}

fn all() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut v = Vec::new();
    for d in ["stdlib", "examples", "tests/ui"] {
        contracts(&root.join(d), &mut v);
    }
    v.sort();
    v
}

fn verdict(path: &str, text: &str) -> Vec<(String, String)> {
    let c = check_source(
        &Source {
            path: path.into(),
            text: text.into(),
        },
        &Default::default(),
        &Default::default(),
    );
    let mut v: Vec<(String, String)> = c
        .diags
        .iter()
        .map(|d| (d.code.to_string(), d.message.clone()))
        .collect();
    v.sort();
    v
}

#[test]
fn formatting_changes_only_whitespace_and_is_idempotent() {
    let mut formatted = 0;
    for p in all() {
        let text = std::fs::read_to_string(&p).unwrap();
        if mpkc::front::parse_file(&text).is_err() {
            continue;
        }
        formatted += 1;
        let once = format(&text);
        assert_eq!(format(&once), once, "{}: not idempotent", p.display());
        let toks = |s: &str| {
            lex(s)
                .into_iter()
                .map(|t| t.text.trim_end().to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(toks(&once), toks(&text), "{}: tokens changed", p.display());
        let name = p.to_string_lossy();
        assert_eq!(
            verdict(&name, &once),
            verdict(&name, &text),
            "{}: the checker's verdict changed",
            p.display()
        );
    }
    assert!(formatted > 50, "only {formatted} contracts parsed");
}

#[test]
fn the_stdlib_and_the_examples_are_formatted() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for d in ["stdlib", "examples"] {
        contracts(&root.join(d), &mut files);
    }
    let o = Command::new(env!("CARGO_BIN_EXE_mpkc"))
        .arg("fmt")
        .arg("--check")
        .args(&files)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}\nrun `mpkc fmt stdlib/*.mpk examples/*.mpk`",
        String::from_utf8_lossy(&o.stdout)
    );
}

#[test]
fn stdin_to_stdout_and_syntax_errors_left_alone() {
    use std::io::Write as _;
    let mut child = Command::new(env!("CARGO_BIN_EXE_mpkc"))
        .args(["fmt", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"task t{family  consumer}")
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "task t { family consumer }\n"
    );
    let bad = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fmt_bad.mpk");
    std::fs::write(&bad, "task t {  family\n").unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_mpkc"))
        .arg("fmt")
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(std::fs::read_to_string(&bad).unwrap(), "task t {  family\n");
}
