//! Exact arithmetic (issue 9, class 3) and values reported alike (class 4), from the hostile
//! findings 4-9: a literal no `i64`/`f64` holds hides nothing else; a rejected value causes no
//! follow-on errors; sums and strides are exact; intermediate results do not overflow; the
//! minimum int can be written and is generated as valid C++; `f32` ranges hold in `f32`.

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
        path: "a.mpk".into(),
        text: text.into(),
    };
    check_source(&src, &opts, &CheckOptions::default())
}

fn errors(c: &Checked) -> Vec<&Diagnostic> {
    c.diags.iter().filter(|d| d.is_error()).collect()
}

fn codes(c: &Checked) -> Vec<&'static str> {
    let mut v: Vec<_> = errors(c).iter().map(|d| d.code).collect();
    v.sort_unstable();
    v
}

/// A consumer task with `params` (one per line) and a clean body.
fn task(name: &str, params: &str, extra: &str) -> String {
    format!(
        "task {name} {{\n  family consumer-no-smem\n{params}\n  param m: int in 1..=16 = 1\n  tensor y: bf16[m] out\n  granularity per_tile(tasks m)\n  body cuda {{ y[task_offset] = 0; }}\n{extra}}}\n"
    )
}

/// The value of param `name` in the file's first clean instance.
fn value(c: &Checked, name: &str) -> ParamValue {
    assert!(!c.has_errors(), "{:#?}", c.diags);
    c.tasks[0].ir.params[name].value.clone()
}

fn stdlib(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("stdlib")
            .join(name),
    )
    .unwrap()
}

/// Finding 4: `param e: f64 = 2.4e-324` (or `int = 99999999999999999999`) next to
/// `param q: int in 1..=2 = 5` and a second task with its own error: every error is reported,
/// the same set whether the bad literal is the default, an instance setting or `--param`.
#[test]
fn a_bad_literal_hides_nothing_else() {
    for (ty, good, bad, code) in [
        ("f64", "0.5", "2.4e-324", "E0006"),
        ("int", "1", "99999999999999999999", "E0004"),
        ("int", "1", "-99999999999999999999", "E0004"),
        ("f64", "0.5", "-1e-400", "E0006"),
    ] {
        let other = task("u", "  param r: int in 1..=2 = 7", "");
        let q = "  param q: int in 1..=2 = 5";
        let default = format!(
            "{}{other}",
            task("t", &format!("  param e: {ty} = {bad}\n{q}"), "")
        );
        let inst = format!(
            "{}{other}",
            task(
                "t",
                &format!("  param e: {ty} = {good}\n{q}"),
                &format!("  instance i(e = {bad})\n")
            )
        );
        let cli_text = format!(
            "{}{other}",
            task("t", &format!("  param e: {ty} = {good}\n{q}"), "")
        );
        let want = {
            let mut w = vec![code, "E0006", "E0006"];
            w.sort_unstable();
            w
        };
        let strip = |c: &Checked| -> Vec<String> {
            let mut m: Vec<String> = errors(c)
                .iter()
                .map(|d| {
                    d.message
                        .strip_prefix(&format!("`--param e={bad}`: "))
                        .unwrap_or(&d.message)
                        .to_string()
                })
                .collect();
            m.sort();
            m
        };
        let from_default = check(&default, &[]);
        let from_instance = check(&inst, &[]);
        let from_cli = check(&cli_text, &[("e", bad)]);
        for (what, c) in [
            ("default", &from_default),
            ("instance", &from_instance),
            ("--param", &from_cli),
        ] {
            assert_eq!(codes(c), want, "`{bad}` from the {what}: {:#?}", c.diags);
            assert_eq!(strip(c), strip(&from_default), "`{bad}` from the {what}");
            assert!(errors(c).iter().all(|d| d.help.is_some()), "{:#?}", c.diags);
        }
        let lit = errors(&from_default)
            .into_iter()
            .find(|d| d.code == code)
            .unwrap();
        let at = default.find(bad).unwrap();
        let span = lit.main_span().range();
        assert!(
            span.start >= at && span.end <= at + bad.len(),
            "{bad}: span {span:?} is not on the literal"
        );
    }
}

/// Finding 5: the value of `p` (sizing `tile M p * 16` of the stdlib linear) is rejected once,
/// from the default, an instance or `--param`, with no follow-on about `tile.M`, the ring over
/// `W`, or the channel sharing its empty edge; a rejected `stages` or tile extent likewise.
#[test]
fn a_rejected_value_has_no_follow_on_errors() {
    let base = stdlib("linear_sm100_v2.mpk")
        .replace(
            "  param N: int = 7168",
            "  param p: int in 8..=8 = 8\n  param N: int = 7168",
        )
        .replace("tile M 128,", "tile M p * 16,");
    // `p` is pinned to 8 by its range: each end of a range is checked too, and tile M must be
    // 128 (E0013), so a wider range would be an error of its own.
    assert!(!check(&base, &[]).has_errors());
    // (contract, `--param` overrides, the codes it must report).
    type Case<'a> = (String, Vec<(&'a str, &'a str)>, Vec<&'a str>);
    let cases: Vec<Case> = vec![
        (
            base.replace("in 8..=8 = 8", "in 8..=8 = 100"),
            vec![],
            vec!["E0006"],
        ),
        (
            base.replace("  stages 6", "  stages 6\n  instance big(p = 100)"),
            vec![],
            vec!["E0006"],
        ),
        (base.clone(), vec![("p", "100")], vec!["E0006"]),
        (
            base.replace("stages 6", "stages p"),
            vec![("p", "100")],
            vec!["E0006"],
        ),
        (base.replace("stages 6", "stages 0"), vec![], vec!["E0006"]),
        (
            base.replace("stages 6", "stages 1/0"),
            vec![],
            vec!["E0004"],
        ),
        (
            base.replace("stages 6", "stages p * 10"),
            vec![],
            vec!["E0006"],
        ),
        (
            base.replace("tile M p * 16", "tile M 1/0"),
            vec![],
            vec!["E0004"],
        ),
        (
            base.replace("tile M p * 16", "tile M -16"),
            vec![],
            vec!["E0004"],
        ),
        (
            base.replace("K 128", "K 99999999999999999999"),
            vec![],
            vec!["E0004"],
        ),
    ];
    for (text, overrides, want) in cases {
        let c = check(&text, &overrides);
        assert_eq!(codes(&c), want, "{overrides:?}\n{text}\n{:#?}", c.diags);
    }
}

/// Finding 6: sums and strides are exact: three regions of 2^62 bytes need 3 * 2^62 bytes (not
/// i64::MAX), and rows of 2^62 bf16 elements are 2^63 bytes apart, a multiple of 16.
#[test]
fn sums_and_strides_are_exact() {
    let text = "task t {\n  family consumer\n  region a { bytes 4611686018427387904 }\n  region b { bytes 4611686018427387904 }\n  region c { bytes 4611686018427387904 }\n  body cuda { buf.a; buf.b; buf.c; }\n}\n";
    let c = check(text, &[]);
    let e = errors(&c);
    assert_eq!(codes(&c), ["E0103"], "{e:#?}");
    let d = e[0];
    assert!(
        d.message
            .contains("regions need 13835058055282163712 bytes"),
        "{}",
        d.message
    );
    let notes = d.notes.join("\n");
    assert!(
        notes.contains("= 13835058055282163712 bytes, 13835058055281939456 over"),
        "{notes}"
    );
    assert!(notes.contains("at least 844424930131968 pages"), "{notes}");
    let help = d.help.as_deref().unwrap();
    assert!(help.contains("by 13835058055281939456 bytes"), "{help}");

    // A tensor of 2^63 bytes or more (rows of 2^62 bf16 elements) is E0004 before any stride
    // rule reads it: its size is one 64-bit number everywhere mpkc and the harness use it.
    let linear = stdlib("linear_sm100_v2.mpk");
    for k in ["4611686018427387904", "4611686018427387905"] {
        let c = check(&linear, &[("K", k)]);
        assert_eq!(codes(&c), ["E0004", "E0004"], "{k}: {:#?}", c.diags);
        assert!(
            errors(&c).iter().all(|d| d
                .message
                .contains("holds more than 9223372036854775807 bytes")),
            "{:#?}",
            c.diags
        );
    }
}

/// Finding 7: an operation overflows only when its result does not fit.
#[test]
fn intermediate_results_do_not_overflow() {
    let max = i64::MAX;
    for (expr, want) in [
        ("ceil_div(9223372036854775807, 2)", 1i64 << 62),
        ("ceil_div(9223372036854775807, 1)", max),
        ("ceil_div(-9223372036854775807 - 1, 2)", i64::MIN / 2),
        ("ceil_div(-7, 2)", -3),
        ("(-9223372036854775807 - 1) % -1", 0),
        ("(-9223372036854775807 - 1) / 1", i64::MIN),
        ("-7 % 2", -1),
        ("align_up(9223372036854775806, 2)", max - 1),
        ("align_up(9223372036854775807, 1)", max),
        ("align_up(-9223372036854775807 - 1, 1024)", i64::MIN),
        ("9223372036854775807 - 9223372036854775807 * 1", 0),
    ] {
        let c = check(&task("t", &format!("  param x: int = {expr}"), ""), &[]);
        assert_eq!(value(&c, "x"), ParamValue::Int(want), "{expr}");
    }
    for (expr, exact) in [
        ("align_up(9223372036854775807, 2)", "9223372036854775808"),
        (
            "ceil_div(9223372036854775807, 1) + 1",
            "9223372036854775808",
        ),
        ("(-9223372036854775807 - 1) / -1", "9223372036854775808"),
        ("-(-9223372036854775807 - 1)", "9223372036854775808"),
        ("9223372036854775807 * 2", "18446744073709551614"),
    ] {
        let c = check(&task("t", &format!("  param x: int = {expr}"), ""), &[]);
        let e = errors(&c);
        assert_eq!(codes(&c), ["E0004"], "{expr}: {e:#?}");
        assert!(e[0].message.contains(exact), "{expr}: {}", e[0].message);
    }
    // The stdlib linear's granularity `ceil_div(N, tile.M)` at N = 2^50 (W is then 2^62 bytes,
    // the most its size can be): no overflow, the task count's own range is the one error.
    let c = check(&stdlib("linear_sm100_v2.mpk"), &[("N", "1125899906842624")]);
    assert_eq!(codes(&c), ["E0006"], "{:#?}", c.diags);
    assert!(errors(&c)[0].message.contains("8796093022208 tasks"));
    // At N = i64::MAX the tensors' sizes do not fit 64 bits: E0004 names each, with its extents
    // (beside the task count's E0006).
    let c = check(
        &stdlib("linear_sm100_v2.mpk"),
        &[("N", "9223372036854775807")],
    );
    assert_eq!(codes(&c), ["E0004", "E0004", "E0006"], "{:#?}", c.diags);
    assert!(errors(&c)[0].labels[0]
        .message
        .contains("9223372036854775807 x 2048 x 2 bytes"));
}

/// Finding 8: `-9223372036854775808` is the minimum int as a default, a range bound, an instance
/// setting and `--param`; only 2^63 negated has a value; the spec header writes it as C++ that
/// compiles without a warning.
#[test]
fn the_minimum_int_can_be_written_and_generated() {
    let min = "-9223372036854775808";
    let decl = format!("  param h: int in {min}..=0 = {min}\n  param w: int = -0x8000000000000000");
    for (text, overrides) in [
        (task("t", &decl, ""), vec![]),
        (
            task("t", &decl.replace(&format!("= {min}\n"), "= 0\n"), ""),
            vec![("h", min)],
        ),
        (
            task(
                "t",
                &decl.replace(&format!("= {min}\n"), "= 0\n"),
                &format!("  instance i(h = {min})\n"),
            ),
            vec![],
        ),
    ] {
        let c = check(&text, &overrides);
        assert_eq!(value(&c, "h"), ParamValue::Int(i64::MIN), "{text}");
        assert_eq!(value(&c, "w"), ParamValue::Int(i64::MIN), "{text}");
    }
    for bad in [
        "9223372036854775808",
        "-9223372036854775809",
        "0 - 9223372036854775808",
    ] {
        let c = check(&task("t", &format!("  param h: int = {bad}"), ""), &[]);
        let e = errors(&c);
        assert_eq!(codes(&c), ["E0004"], "{bad}: {e:#?}");
        assert!(
            e[0].help
                .as_deref()
                .unwrap()
                .contains("-9223372036854775808..=9223372036854775807"),
            "{e:#?}"
        );
    }
    let text = task(
        "imin",
        &format!("  param p: int = {min}\n  param q: int = -9223372036854775807 - 1\n  param r: i32 = -2147483648"),
        "",
    );
    let c = check(&text, &[]);
    assert!(!c.has_errors(), "{:#?}", c.diags);
    let units = generate_all(std::slice::from_ref(&c));
    let spec = units
        .iter()
        .flat_map(|u| u.files.iter())
        .find(|f| f.kind == FileKind::SpecHeader)
        .expect("a spec header");
    for line in [
        "inline constexpr int64_t p = (-9223372036854775807 - 1);",
        "inline constexpr int64_t q = (-9223372036854775807 - 1);",
        "inline constexpr int32_t r = -2147483648;",
    ] {
        assert!(spec.text.contains(line), "no `{line}` in\n{}", spec.text);
    }
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("exact_arith_imin");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (name, body) in SUPPORT_HEADERS {
        std::fs::write(dir.join(name), body).unwrap();
    }
    std::fs::write(dir.join(&spec.name), &spec.text).unwrap();
    let tu = format!(
        "#include \"{}\"\n#include <cstdint>\nnamespace p = kernel::imin::params;\n\
         static_assert(p::p == INT64_MIN, \"i64 min\");\n\
         static_assert(p::q == INT64_MIN, \"i64 min\");\n\
         static_assert(p::r == INT32_MIN, \"i32 min\");\n\
         int main() {{ return 0; }}\n",
        spec.name
    );
    std::fs::write(dir.join("imin.cc"), tu).unwrap();
    host_cxx::compile(&dir, "imin.cc", &["-fsyntax-only", "-Wextra"]);
}

/// Finding 9: an `f32` value is checked against its range after rounding to `f32`:
/// `0.99999999` is `1.0f`, outside `0.0..1.0`, from every source; bounds round alike, and the
/// generated literal is the shortest text of the `f32`.
#[test]
fn f32_ranges_hold_in_f32() {
    let decl = "  param a: f32 in 0.0..1.0 = 0.5";
    for (text, overrides) in [
        (task("t", &decl.replace("0.5", "0.99999999"), ""), vec![]),
        (task("t", decl, "  instance i(a = 0.99999999)\n"), vec![]),
        (task("t", decl, ""), vec![("a", "0.99999999")]),
    ] {
        let c = check(&text, &overrides);
        let e = errors(&c);
        assert_eq!(codes(&c), ["E0006"], "{e:#?}");
        assert!(
            e[0].message.contains("0.99999999, which is 1.0 in `f32`"),
            "{}",
            e[0].message
        );
    }
    // In f64 the value lies inside.
    let c = check(
        &task("t", "  param a: f64 in 0.0..1.0 = 0.99999999", ""),
        &[],
    );
    assert_eq!(value(&c, "a"), ParamValue::Float(0.99999999));
    // Bounds are rounded as values are: 0.1 lies in `..=0.1` and is generated as `0.1f`.
    let c = check(&task("tf", "  param a: f32 in 0.0..=0.1 = 0.1", ""), &[]);
    assert_eq!(value(&c, "a"), ParamValue::Float(f64::from(0.1f32)));
    let c2 = check(
        &task("tf", "  param a: f32 in 0.0..0.1 = 0.100000001", ""),
        &[],
    );
    assert_eq!(codes(&c2), ["E0006"], "{:#?}", c2.diags);
    let units = generate_all(std::slice::from_ref(&c));
    let spec = units
        .iter()
        .flat_map(|u| u.files.iter())
        .find(|f| f.kind == FileKind::SpecHeader)
        .expect("a spec header");
    assert!(
        spec.text.contains("inline constexpr float a = 0.1f;"),
        "{}",
        spec.text
    );
}
