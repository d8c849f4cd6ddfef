//! A file that is not UTF-8 (hostile finding 10): the `E0001` span is exactly the bytes of the
//! first invalid sequence, as offsets into the real file (not into a U+FFFD-replaced text), in
//! `check` and `fmt` alike, and lines and columns agree with those bytes.

use std::io::Write as _;
use std::process::{Command, Output, Stdio};

fn mpkc(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mpkc"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

/// `(input, first invalid sequence's byte range, line, column)`.
type Case = (&'static [u8], (usize, usize), usize, usize);

const CASES: &[Case] = &[
    // The tester's repros: a lone 0xFF inside a word, and a three-byte character cut after two.
    (b"task t1 {\n  fam\xffily consumer\n}\n", (15, 16), 2, 6),
    (b"task t1 {\n  \xe2\x82family consumer\n}\n", (12, 14), 2, 3),
    // Invalid bytes before the first one do not exist; after it they do not shift its offsets.
    (b"\xc3\xa9\xff\xff task", (2, 3), 1, 3),
    // A sequence cut by the end of the file.
    (b"task t {}\n\xf0\x9f\x98", (10, 13), 2, 1),
];

#[test]
fn the_span_is_the_invalid_bytes_of_the_real_file() {
    for &(input, (start, end), line, column) in CASES {
        {
            let cmd = ["check", "-", "--message-format", "json"];
            let o = mpkc(&cmd, input);
            assert_eq!(o.status.code(), Some(1), "{cmd:?} {input:?}");
            let out = String::from_utf8(o.stdout).unwrap();
            let v: serde_json::Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
            assert_eq!(v["code"], "E0001");
            let s = &v["span"];
            assert_eq!(
                (s["byte_start"].as_u64(), s["byte_end"].as_u64()),
                (Some(start as u64), Some(end as u64)),
                "{cmd:?} {input:?}: {out}"
            );
            assert_eq!(s["line_start"], line, "{input:?}");
            assert_eq!(s["column_start"], column, "{input:?}");
            assert_eq!(
                s["column_end"].as_u64(),
                Some((column + end - start) as u64),
                "{input:?}"
            );
            let named: Vec<String> = input[start..end]
                .iter()
                .map(|b| format!("0x{b:02X}"))
                .collect();
            assert!(
                v["message"].as_str().unwrap().contains(&named.join(" ")),
                "{}",
                v["message"]
            );
            assert!(
                v["message"].as_str().unwrap().contains(&format!(
                    "byte offset {start} (line {line}, column {column})"
                )),
                "{}",
                v["message"]
            );
        }
        // `fmt` reads its inputs as `check` does: the same diagnostic, and the file is left alone.
        let o = mpkc(&["fmt", "-"], input);
        assert_eq!(o.status.code(), Some(1), "{input:?}");
        assert!(o.stdout.is_empty());
        let e = String::from_utf8(o.stderr).unwrap();
        assert!(e.contains("error[E0001]: the file is not UTF-8"), "{e}");
        assert!(
            e.contains(&format!(
                "byte offset {start} (line {line}, column {column})"
            )),
            "{e}"
        );
        // The human header counts characters (codespan's columns), the message bytes.
        let before = std::str::from_utf8(&input[..start]).unwrap();
        let chars = before.rsplit('\n').next().unwrap().chars().count();
        assert!(e.contains(&format!("<stdin>:{line}:{}", chars + 1)), "{e}");
    }
}

#[test]
fn the_human_text_points_at_the_invalid_byte_alone() {
    let o = mpkc(
        &["check", "-", "--color", "never"],
        b"task t1 {\n  fam\xffily consumer\n}\n",
    );
    let e = String::from_utf8(o.stderr).unwrap();
    assert!(e.contains("<stdin>:2:6"), "{e}");
    // One caret, under the `?` that stands for the byte, not three over `?il`.
    assert!(
        e.contains("  fam?ily consumer\n  │      ^ first invalid byte"),
        "{e}"
    );
}
