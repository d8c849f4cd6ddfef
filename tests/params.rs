//! Param values (issue 9): one value path for a contract's defaults, its `instance` settings and
//! `--param` on the command line; exact integer ranges; each type's own range; `f64` generated as
//! `double`; range declarations checked; a rejected value reported once.

#[path = "support/host_cxx.rs"]
mod host_cxx;

use mpkc::back::{FileKind, SUPPORT_HEADERS};
use mpkc::diag::Diagnostic;
use mpkc::driver::build::generate_all;
use mpkc::driver::{check_source, Checked, Source};
use mpkc::ir::ParamValue;
use mpkc::sema::SemaOptions;
use mpkc::valid::CheckOptions;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn check(text: &str, overrides: &[(&str, &str)]) -> Checked {
    let opts = SemaOptions {
        overrides: overrides
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        instance: None,
        ..Default::default()
    };
    let src = Source {
        path: "p.mpk".into(),
        text: text.into(),
    };
    check_source(&src, &opts, &CheckOptions::default())
}

fn errors(c: &Checked) -> Vec<&Diagnostic> {
    c.diags.iter().filter(|d| d.is_error()).collect()
}

/// A task with one param `p` declared `decl` (type and range) and the rest of `extra` items.
fn task(decl: &str, default: &str, extra: &str) -> String {
    format!("task t {{\n  family consumer-no-smem\n  param p: {decl} = {default}\n{extra}  body cuda {{ }}\n}}\n")
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mpkc"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

/// `(declaration, a good value, a bad value, the code the bad value gets)`.
const BAD_VALUES: &[(&str, &str, &str, &str)] = &[
    ("int", "4", "1.5", "E0005"),
    ("int", "4", "true", "E0005"),
    ("bool", "true", "1", "E0005"),
    ("f32", "0.5", "false", "E0005"),
    ("int in 1..=16", "4", "17", "E0006"),
    (
        "int in 0..=9007199254740992",
        "4",
        "9007199254740993",
        "E0006",
    ),
    (
        "int in 0..9223372036854775807",
        "4",
        "9223372036854775807",
        "E0006",
    ),
    ("i32", "4", "3000000000", "E0006"),
    ("i32", "4", "-2147483649", "E0006"),
    ("f32", "0.5", "1e39", "E0006"),
    ("f32", "0.5", "-1e39", "E0006"),
    ("f32", "0.5", "1e-50", "E0006"),
    ("f64", "0.5", "1e309", "E0006"),
    ("f64", "0.5", "1e-400", "E0006"),
    ("f32", "0.5", "1e-400", "E0006"),
    ("f32 in 0.0..1.0", "0.5", "1.0", "E0006"),
    ("f32", "0.5", "0.0 / 0.0", "E0004"),
    ("int", "4", "1 / 0", "E0004"),
    ("int", "4", "9223372036854775807 + 1", "E0004"),
    ("int", "4", "99999999999999999999", "E0004"),
    ("int", "4", "abc", "E0002"),
];

/// Each bad value is rejected with the same code, once, whether it is the default, an instance
/// setting or `--param`; the command line's diagnostic says it came from `--param` and points at
/// the param's name.
#[test]
fn a_bad_value_is_rejected_alike_from_all_three_sources() {
    for (decl, good, bad, code) in BAD_VALUES {
        let default = check(&task(decl, bad, ""), &[]);
        let instance = check(
            &task(decl, good, &format!("  instance i(p = {bad})\n")),
            &[],
        );
        let cli = check(&task(decl, good, ""), &[("p", bad)]);
        for (what, c) in [
            ("default", &default),
            ("instance", &instance),
            ("--param", &cli),
        ] {
            let errs = errors(c);
            assert_eq!(
                errs.iter().map(|d| d.code).collect::<Vec<_>>(),
                vec![*code],
                "`{decl}` = `{bad}` from the {what}: {errs:#?}"
            );
        }
        let d = errors(&cli)[0];
        assert!(
            d.message.starts_with(&format!("`--param p={bad}`: ")),
            "{}",
            d.message
        );
        let text = task(decl, good, "");
        let name_at = text.find("p: ").unwrap();
        assert_eq!(d.main_span().range(), name_at..name_at + 1, "{d:#?}");
        assert!(d.help.is_some(), "{d:#?}");
        // The good value is accepted from every source.
        let ok = check(&task(decl, good, ""), &[("p", good)]);
        assert!(!ok.has_errors(), "`{decl}` = `{good}`: {:#?}", ok.diags);
    }
}

/// A good value means the same from the command line as in the contract: the CLI text is read by
/// the contract's own value rule (hex, `_` separators, expressions over earlier params).
#[test]
fn a_good_value_means_the_same_from_the_command_line() {
    let cases = [
        ("int", "0x400"),
        ("int", "1_024"),
        ("int", "-3"),
        ("int", "base * 2 + 1"),
        ("i32", "-2147483648"),
        ("int", "9223372036854775807"),
        ("f32", "2.5e-6"),
        ("f32", "3"),
        ("f64", "1e300"),
        ("bool", "false"),
    ];
    let value = |c: &Checked| -> ParamValue {
        c.tasks[0]
            .ir
            .params
            .get("p")
            .expect("p lowered")
            .value
            .clone()
    };
    for (ty, v) in cases {
        let extra_first = "  param base: int = 8\n";
        let text = |default: &str| {
            format!("task t {{\n  family consumer-no-smem\n{extra_first}  param p: {ty} = {default}\n  body cuda {{ }}\n}}\n")
        };
        let in_file = check(&text(v), &[]);
        let from_cli = check(&text(if ty == "bool" { "true" } else { "0" }), &[("p", v)]);
        assert!(!in_file.has_errors(), "{ty} = {v}: {:#?}", in_file.diags);
        assert!(!from_cli.has_errors(), "{ty} = {v}: {:#?}", from_cli.diags);
        assert_eq!(value(&in_file), value(&from_cli), "{ty} = {v}");
    }
}

/// A `--param` value that does not parse is a syntax error naming where, at the param.
#[test]
fn a_cli_value_that_does_not_parse_is_a_syntax_error() {
    for bad in ["1e-6foo", "", "1 +", "(2", "\"x\""] {
        let c = check(&task("f32", "0.5", ""), &[("p", bad)]);
        let errs = errors(&c);
        assert_eq!(errs.len(), 1, "`{bad}`: {errs:#?}");
        assert_eq!(errs[0].code, "E0001");
        assert!(
            errs[0]
                .message
                .starts_with(&format!("`--param p={bad}`: syntax error at character")),
            "{}",
            errs[0].message
        );
        assert!(errs[0].help.is_some());
    }
}

/// `--param hidden=abc` on the stdlib's rmsnorm: one error, no follow-on errors from the
/// tensors, regions and body that use `hidden`.
#[test]
fn a_rejected_cli_value_gives_exactly_one_error() {
    let o = run(&["check", "stdlib/rmsnorm_v2.mpk", "--param", "hidden=abc"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.matches("error[").count(), 1, "{err}");
    assert!(
        err.contains("error[E0002]: `--param hidden=abc`: "),
        "{err}"
    );
    assert!(err.contains("1 error,"), "{err}");
    // The value is the command line's: no "in instances `h4096`, `h7168`" note blames them.
    assert!(!err.contains("in instance"), "{err}");
    let o = run(&[
        "check",
        "stdlib/rmsnorm_v2.mpk",
        "--param",
        "hidden=abc",
        "--message-format",
        "json",
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<serde_json::Value> = out
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .filter(|v: &serde_json::Value| v.get("severity").is_some())
        .collect();
    assert_eq!(lines.len(), 1, "{out}");
    assert_eq!(lines[0]["code"], "E0002");
}

/// `--param N=K*2` on a stdlib contract that declares `K` after `N`: one E0002 that says `K` is
/// declared later (not that it cannot be found), with a help that moves it or asks for a number;
/// an expression over an earlier param (`K=N*4`) is no E0002.
#[test]
fn a_cli_value_over_a_later_param_says_it_is_later() {
    let text = std::fs::read_to_string(root().join("stdlib/linear_bf16_gemv.mpk")).unwrap();
    let c = check(&text, &[("N", "K*2")]);
    let errs = errors(&c);
    assert_eq!(errs.len(), 1, "{errs:#?}");
    let d = errs[0];
    assert_eq!(d.code, "E0002");
    assert_eq!(
        d.message,
        "`--param N=K*2`: param `K` is declared after `N`, which uses it"
    );
    assert_eq!(
        d.help.as_deref(),
        Some("declare `K` before `N`, or write a number in place of `K`")
    );
    let c = check(&text, &[("N", "N*2")]);
    let errs = errors(&c);
    assert_eq!(errs.len(), 1, "{errs:#?}");
    assert!(errs[0]
        .message
        .ends_with("param `N` is used in its own value"));
    let c = check(&text, &[("K", "N*4")]);
    assert!(c.diags.iter().all(|d| d.code != "E0002"), "{:#?}", c.diags);
}

/// Other rejected values poison their param too: a bad value of a param that sizes tensors,
/// regions and the body's scalar gives one error on the stdlib's rmsnorm.
#[test]
fn every_rejected_value_is_reported_once() {
    for (name, bad) in [
        ("hidden", "1.5"),
        ("hidden", "99999"),
        ("hidden", "0x"),
        ("m", "true"),
        ("eps", "1e39"),
    ] {
        let text = std::fs::read_to_string(root().join("stdlib/rmsnorm_v2.mpk")).unwrap();
        let c = check(&text, &[(name, bad)]);
        let errs = errors(&c);
        assert_eq!(errs.len(), 1, "{name}={bad}: {errs:#?}");
        assert!(errs[0]
            .message
            .starts_with(&format!("`--param {name}={bad}`: ")));
    }
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Each range declaration problem is a diagnostic with a span and a help: float bounds on an int
/// param, integer bounds on a float param, a range on a bool, bounds outside the type, inverted
/// and empty ranges.
#[test]
fn range_declarations_are_checked() {
    let cases = [
        ("int in 0.5..=9", "1", "E0005"),
        ("int in 0..=9.0", "1", "E0005"),
        ("f32 in 0..=1.0", "0.5", "E0005"),
        ("f64 in 0.0..=1", "0.5", "E0005"),
        ("bool in 0..=1", "true", "E0005"),
        ("i32 in 0..=4294967296", "1", "E0006"),
        ("f32 in 0.0..=1e40", "1.0", "E0006"),
        ("int in 16..=1", "4", "E0006"),
        ("int in 16..1", "4", "E0006"),
        ("f32 in 1.0..=0.5", "0.7", "E0006"),
        ("int in 4..4", "4", "E0006"),
        ("f64 in 0.5..0.5", "0.5", "E0006"),
        ("f32 in 0.0..=0.0 / 0.0", "0.0", "E0004"),
    ];
    for (decl, value, code) in cases {
        let text = task(decl, value, "");
        let c = check(&text, &[]);
        let errs = errors(&c);
        assert_eq!(
            errs.iter().map(|d| d.code).collect::<Vec<_>>(),
            vec![code],
            "`{decl}`: {errs:#?}"
        );
        let d = errs[0];
        let range_at = text.find(" in ").unwrap() + 4;
        let decl_end = text.find(" = ").unwrap();
        let s = d.main_span();
        assert!(
            s.start >= text.find("p: ").unwrap() && s.end <= decl_end && s.start < s.end,
            "`{decl}`: span {s:?} outside the declaration"
        );
        assert!(s.end > range_at, "`{decl}`: span {s:?} not on the range");
        assert!(d.help.is_some(), "`{decl}`: no help");
        // A rejected range poisons the param: its uses report nothing more.
        let used = check(&task(decl, value, "  param q: int = p\n"), &[]);
        assert_eq!(errors(&used).len(), 1, "`{decl}` used: {:#?}", used.diags);
    }
    // The same ranges, well formed, accept a value inside.
    for (decl, value) in [
        ("int in 1..=16", "16"),
        ("int in 1..17", "16"),
        ("f32 in 0.0..=1.0", "1.0"),
        ("f64 in -1.0..1.0", "-1.0"),
        ("i32 in -2147483648..=2147483647", "-2147483648"),
        ("int in 4..=4", "4"),
    ] {
        let c = check(&task(decl, value, ""), &[]);
        assert!(!c.has_errors(), "`{decl}` = {value}: {:#?}", c.diags);
    }
}

/// Messages print integer bounds exactly (no `9223372036854776000`).
#[test]
fn integer_bounds_are_printed_exactly() {
    let c = check(&task("int in 0..9223372036854775807", "-1", ""), &[]);
    let errs = errors(&c);
    assert_eq!(errs.len(), 1);
    assert!(
        errs[0]
            .message
            .ends_with("must lie in 0..9223372036854775807"),
        "{}",
        errs[0].message
    );
    assert!(errs[0]
        .help
        .as_deref()
        .is_some_and(|h| h.contains("0..9223372036854775807")));
}

/// The types and their generated constants: `i32` → `int32_t`, `int`/`i64` → `int64_t`,
/// `f32`/`float` → a `float` literal, `f64` → a `double` literal with every digit, `bool`. The
/// spec header compiles as host C++ and its constants have those types and values.
#[test]
fn param_types_generate_their_cpp_types() {
    let text = "task typed {\n  family consumer-no-smem\n  param n32: i32 = -2147483648\n  param n64: i64 = 9223372036854775807\n  param n: int = 7168\n  param eps: f32 = 1e-6\n  param scale: float = 0.1\n  param big: f64 = 1e39\n  param fine: f64 = 0.1\n  param on: bool = true\n  body cuda { }\n}\n";
    let c = check(text, &[]);
    assert!(!c.has_errors(), "{:#?}", c.diags);
    let units = generate_all(std::slice::from_ref(&c));
    let spec = units
        .iter()
        .flat_map(|u| u.files.iter())
        .find(|f| f.kind == FileKind::SpecHeader)
        .expect("a spec header");
    for line in [
        "inline constexpr int32_t n32 = -2147483648;",
        "inline constexpr int64_t n64 = 9223372036854775807;",
        "inline constexpr int64_t n = 7168;",
        "inline constexpr float eps = 1e-6f;",
        "inline constexpr float scale = 0.1f;",
        "inline constexpr double big = 1e39;",
        "inline constexpr double fine = 0.1;",
        "inline constexpr bool on = true;",
    ] {
        assert!(spec.text.contains(line), "no `{line}` in\n{}", spec.text);
    }
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("param_types");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (name, body) in SUPPORT_HEADERS {
        std::fs::write(dir.join(name), body).unwrap();
    }
    std::fs::write(dir.join(&spec.name), &spec.text).unwrap();
    let tu = format!(
        "#include \"{}\"\n#include <type_traits>\nnamespace p = kernel::typed::params;\n\
         static_assert(std::is_same<decltype(p::n32), const int32_t>::value, \"i32\");\n\
         static_assert(std::is_same<decltype(p::n64), const int64_t>::value, \"i64\");\n\
         static_assert(std::is_same<decltype(p::eps), const float>::value, \"f32\");\n\
         static_assert(std::is_same<decltype(p::big), const double>::value, \"f64\");\n\
         static_assert(p::n32 == -2147483647 - 1, \"i32 min\");\n\
         static_assert(p::big == 1e39, \"f64 value\");\n\
         static_assert(p::fine == 0.1, \"f64 keeps every digit\");\n\
         static_assert(p::scale == 0.1f, \"f32 value\");\n\
         int main() {{ return 0; }}\n",
        spec.name
    );
    std::fs::write(dir.join("types.cc"), tu).unwrap();
    host_cxx::compile(&dir, "types.cc", &["-fsyntax-only"]);
}

/// Template scalars are `float` or integer: an `f64` param passed as rmsnorm's `eps` is an
/// `E0009`, not a silent narrowing.
#[test]
fn an_f64_param_is_no_f32_template_scalar() {
    let text = std::fs::read_to_string(root().join("stdlib/rmsnorm_v2.mpk"))
        .unwrap()
        .replace("param eps: f32", "param eps: f64");
    let c = check(&text, &[]);
    let errs = errors(&c);
    assert!(!errs.is_empty());
    assert!(errs.iter().all(|d| d.code == "E0009"), "{errs:#?}");
    assert!(errs[0].message.contains("the `f64`"), "{}", errs[0].message);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 300, .. proptest::prelude::ProptestConfig::default() })]

    /// Any `--param` text is a value or diagnostics with the same codes as in a file, never a
    /// panic; a rejected one is one error (or the syntax errors of its text) at the param.
    #[test]
    fn any_cli_text_is_a_value_or_a_diagnostic(text in "[-+*/%()0-9a-z_.eE ]{0,24}|\\PC{0,24}") {
        for decl in ["int in 1..=16", "i32", "f32", "f64", "bool"] {
            let src = task(decl, if decl == "bool" { "true" } else { "1" }, "");
            let c = check(&src, &[("p", &text)]);
            let name_at = src.find("p: ").unwrap();
            for d in errors(&c) {
                proptest::prop_assert!(d.message.starts_with("`--param p="), "{}", d.message);
                proptest::prop_assert_eq!(d.main_span().range(), name_at..name_at + 1);
            }
        }
    }
}
