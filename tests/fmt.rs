//! `mpkc fmt` on every contract in the repository: the stdlib and the examples are kept
//! formatted; formatting any parsing contract (the UI tests included) changes only whitespace,
//! keeps every comment, is idempotent, and leaves the checker's verdict unchanged. Line breaks,
//! tabs and spaces inserted anywhere (comments and CUDA bodies included) keep it idempotent and
//! whitespace-only.

use mpkc::driver::{check_source, Source};
use mpkc::fmt::lex::{lex, Kind};
use mpkc::fmt::{format, normalize_line_breaks};
use proptest::prelude::*;
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

/// The issue's inputs: `CR CR LF` in a comment and in a CUDA body; `fmt` then `fmt --check`.
#[test]
fn carriage_returns_in_comments_and_cuda_bodies_format_in_one_pass() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    for (name, text) in [
        ("crcrlf_comment.mpk", "task t {\n /* a\r\r\nb */\n}\n"),
        (
            "crcrlf_cuda.mpk",
            "task t {\n  family consumer-no-smem\n  body cuda { int a;\r\r\n int b; }\n}\n",
        ),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        let run = |check: bool| {
            let mut c = Command::new(env!("CARGO_BIN_EXE_mpkc"));
            c.arg("fmt");
            if check {
                c.arg("--check");
            }
            c.arg(&path).output().unwrap()
        };
        let o = run(false);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let once = std::fs::read_to_string(&path).unwrap();
        assert!(!once.contains('\r'), "{once:?}");
        let o = run(true);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{name}: {once:?} is not formatted"
        );
    }
}

/// Token kinds and texts, up to trailing whitespace.
fn tokens(s: &str) -> Vec<(Kind, String)> {
    lex(s)
        .into_iter()
        .map(|t| (t.kind, t.text.trim_end().to_string()))
        .collect()
}

/// Byte ranges of the comments and CUDA bodies of `text`.
fn verbatim_ranges(text: &str) -> Vec<std::ops::Range<usize>> {
    let mut at = 0;
    let mut out = Vec::new();
    for t in lex(text) {
        let start = at + text[at..].find(&t.text).unwrap();
        at = start + t.text.len();
        if matches!(t.kind, Kind::LineComment | Kind::BlockComment | Kind::Raw) {
            out.push(start..at);
        }
    }
    out
}

const BLANKS: &[&str] = &["\r", "\n", "\r\n", "\t", " ", "\r\r\n", " \t\r", "\n\n\n"];

/// Inserts blanks: `inside` picks a place within a comment or CUDA body, else anywhere.
fn insert_blanks(base: &str, edits: &[(usize, usize, bool)]) -> String {
    let mut text = base.to_string();
    for &(at, which, inside) in edits {
        let ranges = verbatim_ranges(&text);
        let mut pos = at % (text.len() + 1);
        if inside && !ranges.is_empty() {
            let r = &ranges[at % ranges.len()];
            pos = r.start + (at / 7) % (r.end - r.start + 1);
        }
        while !text.is_char_boundary(pos) {
            pos -= 1;
        }
        text.insert_str(pos, BLANKS[which]);
    }
    text
}

fn corpus() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for d in ["stdlib", "examples"] {
        contracts(&root.join(d), &mut files);
    }
    files.sort();
    files
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn blanks_inserted_anywhere_format_idempotently_and_keep_the_tokens(
        which in any::<usize>(),
        edits in prop::collection::vec((any::<usize>(), 0..BLANKS.len(), any::<bool>()), 1..10),
    ) {
        let corpus = corpus();
        let text = insert_blanks(&corpus[which % corpus.len()], &edits);
        let once = format(&text);
        prop_assert_eq!(&format(&once), &once, "not idempotent on {:?}", text);
        prop_assert_eq!(tokens(&once), tokens(&normalize_line_breaks(&text)), "tokens changed: {:?}", text);
    }
}

/// Pieces of contracts and of what breaks them: any sequence of these formats idempotently.
const PIECES: &[&str] = &[
    "task", "t", "body", "cuda", "{", "}", "(", ")", "[", "]", "\"", "'", "\\", "/*", "*/", "//",
    "\r", "\n", "\r\n", " ", "\t", ".", "..", "..=", "=", "-", ">", "1", "e", "0x", ";", ",", ":",
    "\u{e9}", "\u{feff}", "#",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, .. ProptestConfig::default() })]

    #[test]
    fn any_text_formats_idempotently_and_keeps_its_tokens(
        pieces in prop::collection::vec(0..PIECES.len(), 0..80),
    ) {
        let text: String = pieces.iter().map(|&p| PIECES[p]).collect();
        let once = format(&text);
        prop_assert_eq!(&format(&once), &once, "not idempotent on {:?}", text);
        prop_assert_eq!(tokens(&once), tokens(&normalize_line_breaks(&text)), "tokens changed: {:?}", text);
    }
}
