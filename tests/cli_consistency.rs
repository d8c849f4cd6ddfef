//! Hostile finding 12, the CLI's small inconsistencies: `fmt` reads its inputs as `check` does
//! (`-` once, directories, a non-UTF-8 file as `E0001`: see also tests/non_utf8_spans.rs);
//! `verify --m` is named `--m` in diagnostics; a failed output write exits 4 (docs/design.md,
//! "Conventions"), not 2, and leaves the file as it was; U+FEFF is a byte-order mark only at the
//! start of a file (kept by `fmt`) and a syntax error elsewhere; one too-deep expression is one
//! report.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

fn mpkc(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mpkc"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    // A usage error may end mpkc before it reads its input: a closed pipe is its answer.
    match input.write_all(stdin.unwrap_or_default()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        r => r.unwrap(),
    }
    drop(input);
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("cli_consistency")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

const MESSY: &str = "task t {\n      family consumer-no-smem\n  param m: int in 1..=16 = 1\n  tensor y: f32[m] out\n  granularity per_tile(tasks m)\n  body cuda { y[task_offset] = 0.f; }\n}\n";

#[test]
fn fmt_reads_stdin_once_like_check() {
    for cmd in ["check", "fmt"] {
        let o = mpkc(&[cmd, "-", "-"], Some(MESSY.as_bytes()));
        assert_eq!(o.status.code(), Some(2), "{cmd}: {}", text(&o.stderr));
        assert!(
            text(&o.stderr).contains("given twice"),
            "{cmd}: {}",
            text(&o.stderr)
        );
        assert!(o.stdout.is_empty(), "{cmd}");
    }
}

#[test]
fn fmt_takes_a_directory_like_check() {
    let dir = scratch("dir");
    for name in ["a.mpk", "b.mpk"] {
        std::fs::write(
            dir.join(name),
            MESSY.replace("task t", &format!("task {}", &name[..1])),
        )
        .unwrap();
    }
    std::fs::write(dir.join("notes.txt"), "not a contract").unwrap();
    let d = dir.to_str().unwrap();
    let o = mpkc(&["check", d], None);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let o = mpkc(&["fmt", "--check", d], None);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let listed = text(&o.stdout);
    assert!(
        listed.contains("a.mpk is not formatted") && listed.contains("b.mpk is not formatted"),
        "{listed}"
    );
    let o = mpkc(&["fmt", d], None);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(mpkc(&["fmt", "--check", d], None).status.code(), Some(0));
    assert!(std::fs::read_to_string(dir.join("a.mpk"))
        .unwrap()
        .contains("\n  family consumer-no-smem\n"));
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
        "not a contract"
    );
    // A directory without contracts is the same usage error for both.
    let empty = scratch("empty");
    for cmd in ["check", "fmt"] {
        let o = mpkc(&[cmd, empty.to_str().unwrap()], None);
        assert_eq!(o.status.code(), Some(2), "{cmd}");
        assert!(
            text(&o.stderr).contains("holds no `.mpk` file"),
            "{cmd}: {}",
            text(&o.stderr)
        );
    }
}

#[test]
fn verify_m_is_named_as_written() {
    let dir = scratch("verify_m");
    let f = dir.join("m.mpk");
    std::fs::write(&f, MESSY).unwrap();
    let o = mpkc(&["verify", "--list", "--m", "0", f.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let e = text(&o.stderr);
    assert!(e.contains("error[E0006]: `--m 0`: param `m` is 0"), "{e}");
    assert!(e.contains("value 0, from `--m 0`"), "{e}");
    assert!(!e.contains("--param m=0"), "{e}");
}

/// Runs mpkc with a 1 KiB file-size limit, from a shell that leaves SIGXFSZ as it is (mpkc
/// ignores it itself, so that a write past the limit fails with EFBIG instead of killing it).
fn with_small_files(args: &[&str]) -> Output {
    let line = std::iter::once(env!("CARGO_BIN_EXE_mpkc").to_string())
        .chain(args.iter().map(|a| format!("'{a}'")))
        .collect::<Vec<_>>()
        .join(" ");
    Command::new("sh")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("-c")
        .arg(format!("ulimit -f 2; exec {line}"))
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

#[test]
fn a_failed_write_exits_4_and_leaves_the_file_alone() {
    let dir = scratch("write");
    // fmt: more than the limit once formatted; the contract must survive whole.
    let f = dir.join("long.mpk");
    let long = MESSY.replace(
        "  body cuda",
        &format!("  // {}\n  body cuda", "x".repeat(4000)),
    );
    std::fs::write(&f, &long).unwrap();
    let o = with_small_files(&["fmt", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(4), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("cannot write"),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(std::fs::read_to_string(&f).unwrap(), long);
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(leftovers.len(), 1, "{leftovers:?}");
    // build: the generated files do not fit either.
    let out = dir.join("out");
    let o = with_small_files(&[
        "build",
        "stdlib/silu_mul_v2.mpk",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(4), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("cannot write"),
        "{}",
        text(&o.stderr)
    );
    // `--out` naming a file stays a usage error: the command line is at fault there.
    let file = dir.join("taken");
    std::fs::write(&file, "x").unwrap();
    let o = mpkc(
        &[
            "build",
            "stdlib/silu_mul_v2.mpk",
            "--out",
            file.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
}

fn contract_with(at_start: &str, inside: &str) -> String {
    format!("{at_start}task t {{\n  family consumer-no-smem\n  param m: int in 1..=16 = 1{inside}\n  tensor y: f32[m] out // \u{feff} in a comment\n  granularity per_tile(tasks m)\n  body cuda {{ y[task_offset] = 0.f; /* \u{feff} */ }}\n}}\n")
}

#[test]
fn a_byte_order_mark_is_kept_at_the_start_and_an_error_elsewhere() {
    // At the start: whitespace to the grammar, kept by fmt (nothing invisible added or deleted).
    let ok = contract_with("\u{feff}", "");
    let o = mpkc(&["check", "-"], Some(ok.as_bytes()));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let o = mpkc(
        &["fmt", "-"],
        Some(ok.replace("\n  family", "\n     family").as_bytes()),
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), ok);
    assert_eq!(
        mpkc(&["fmt", "-"], Some(ok.as_bytes())).stdout,
        ok.as_bytes()
    );
    // Anywhere else outside comments, strings and CUDA: a syntax error naming it, and fmt
    // leaves the file alone.
    let bad = contract_with("", "\u{feff}");
    for cmd in [&["check", "-"][..], &["fmt", "-"][..]] {
        let o = mpkc(cmd, Some(bad.as_bytes()));
        assert_eq!(o.status.code(), Some(1), "{cmd:?}");
        assert!(o.stdout.is_empty(), "{cmd:?}");
        let e = text(&o.stderr);
        assert!(e.contains("error[E0001]: syntax error: U+FEFF (an invisible byte-order mark) is allowed only as the file's first character"), "{e}");
        assert!(e.contains("<stdin>:3:"), "{e}");
        assert!(e.contains("help: remove it"), "{e}");
    }
    let o = mpkc(
        &["check", "-", "--message-format", "json"],
        Some(bad.as_bytes()),
    );
    let v: serde_json::Value =
        serde_json::from_str(text(&o.stdout).lines().next().unwrap()).unwrap();
    let at = bad.find('\u{feff}').unwrap();
    assert_eq!(v["span"]["byte_start"], at);
    assert_eq!(v["span"]["byte_end"], at + 3);
}

#[test]
fn a_too_deep_expression_is_one_report() {
    for n in [65, 100, 500] {
        let expr = format!("{}1{}", "max(1, ".repeat(n), ")".repeat(n));
        let src = MESSY.replace(
            "  tensor y",
            &format!("  param p: int = {expr}\n  tensor y"),
        );
        let o = mpkc(
            &["check", "-", "--message-format", "json"],
            Some(src.as_bytes()),
        );
        assert_eq!(o.status.code(), Some(1));
        let out = text(&o.stdout);
        let errors: Vec<&str> = out
            .lines()
            .filter(|l| l.contains("\"code\":\"E0004\""))
            .collect();
        assert_eq!(errors.len(), 1, "n = {n}: {out}");
        assert!(errors[0].contains("nested more than 64 deep"), "{out}");
    }
    // Two too-deep expressions are two problems.
    let deep = format!("{}1{}", "max(1, ".repeat(70), ")".repeat(70));
    let src = MESSY.replace(
        "  tensor y",
        &format!("  param p: int = {deep}\n  param q: int = {deep}\n  tensor y"),
    );
    let o = mpkc(
        &["check", "-", "--message-format", "json"],
        Some(src.as_bytes()),
    );
    assert_eq!(
        text(&o.stdout)
            .lines()
            .filter(|l| l.contains("nested more than 64 deep"))
            .count(),
        2
    );
}
