//! Inline CUDA in `body cuda { … }` lexes as C++ does (hostile finding 11), in `check` (the
//! grammar), in `fmt` (its lexer) and in the body checks alike: C++14 digit separators, raw
//! strings with delimiters, `//` comments continued by a line splice, character literals.

use std::io::Write as _;
use std::process::{Command, Output, Stdio};

fn mpkc(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mpkc"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn contract(body: &str) -> String {
    format!(
        "task t {{\n  family consumer-no-smem\n  param m: int = 1\n  tensor y: f32[m] out\n  granularity per_tile(tasks 1)\n  body cuda {{\n    y[0] = 0.f;\n{body}\n  }}\n}}\n"
    )
}

/// Each snippet alone in a body (so that no second quote can pair up with a stray one).
const SNIPPETS: &[&str] = &[
    "    int c = 1'000;",
    "    auto n = 0x1'0000'0000ull; double d = 1'000.5e-3;",
    "    auto s = R\"d( )\" } )d\";",
    "    auto s = R\"d( )\" { )d\";",
    "    auto s = LR\"(})\"; auto t = u8R\"x( \" )x\";",
    "    // c \\\n    } this line is still the comment",
    "    // c \\  \n    { spliced after trailing spaces too",
    "    char a = '}'; char b = '\\''; char c = u8'{';",
    "    /* } */ const char *s = \"}\\\"\";",
];

#[test]
fn check_accepts_real_cuda_and_fmt_keeps_it() {
    for body in SNIPPETS {
        let text = contract(body);
        let check = mpkc(&["check", "-"], &text);
        assert!(
            check.status.success(),
            "check rejects {body:?}:\n{}",
            String::from_utf8_lossy(&check.stderr)
        );
        let fmt = mpkc(&["fmt", "-"], &text);
        assert!(fmt.status.success(), "fmt rejects {body:?}");
        let once = String::from_utf8(fmt.stdout).unwrap();
        assert!(once.contains(body.trim()), "fmt changed {body:?}:\n{once}");
        assert_eq!(mpkc(&["fmt", "-"], &once).stdout, once.as_bytes());
    }
}

#[test]
fn a_splice_that_hides_the_closing_brace_is_an_unclosed_body() {
    // The `}` after the spliced comment line is comment text, so the body does not close there.
    let text = "task t {\n  family consumer-no-smem\n  body cuda { // c \\\n }\n}\n";
    let check = mpkc(&["check", "-"], text);
    assert_eq!(check.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&check.stderr).contains("E0001"));
}

#[test]
fn body_checks_see_the_code_after_a_digit_separator() {
    // Read as a character literal, `'000; __syncthreads(); char q = '` would hide the barrier.
    let text = contract("    int c = 1'000; __syncthreads(); char q = 'x';");
    let o = mpkc(&["check", "-", "--message-format", "json"], &text);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("\"code\":\"E0406\""), "{out}");
    // And a barrier named inside a raw string is text, not code.
    let text = contract("    auto s = R\"x( \" __syncthreads(); )x\";");
    let o = mpkc(&["check", "-"], &text);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}
