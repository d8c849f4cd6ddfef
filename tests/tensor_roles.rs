//! Tensor roles (issue 11, C1): `tensor W: e4m3[N, K] in weight tma(…)`, `… in scale of W`.
//! The pipeline lowering binds its operands, scales, residual and outputs by the declared roles,
//! never by shape; a role the direction contradicts and a `scale of` naming no tensor are errors.

use mpkc::back::FileKind;
use mpkc::driver::build::generate_all;
use mpkc::driver::{check_source, Checked, Source};
use mpkc::lower::Operands;
use mpkc::sema::SemaOptions;
use mpkc::valid::CheckOptions;
use std::path::Path;

fn stdlib(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("stdlib")
            .join(name),
    )
    .unwrap()
}

fn check(text: &str, instance: Option<&str>, overrides: &[(&str, &str)]) -> Checked {
    let opts = SemaOptions {
        overrides: overrides
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        instance: instance.map(str::to_string),
        ..Default::default()
    };
    let src = Source {
        path: "roles.mpk".into(),
        text: text.into(),
    };
    check_source(&src, &opts, &CheckOptions::default())
}

fn codes(c: &Checked) -> Vec<&str> {
    c.diags.iter().map(|d| d.code).collect()
}

/// Case 6 of issue 11: with N = 2048 and m_real = 16, `A_scale` and `W_scale` are both
/// `f32[16, K / 128]`. Bound by role, each is its own operand's scale, and the unit builds.
#[test]
fn case06_fp8_q_b_with_n_2048_binds_the_scales_by_role() {
    let text = stdlib("linear_fp8_blockscale.mpk");
    let c = check(&text, Some("q_b"), &[("N", "2048"), ("m_real", "16")]);
    assert!(!c.has_errors(), "{:#?}", c.diags);
    let t = &c.tasks[0];
    let shape = t.linear().expect("a pipeline");
    let name = |h| t.ir.tensors[h].name.clone();
    let Operands::Fp8BlockScale {
        w_scale, a_scale, ..
    } = shape.operands
    else {
        panic!("not fp8: {:?}", shape.operands)
    };
    assert_eq!(
        (name(w_scale), name(a_scale)),
        ("W_scale".to_string(), "A_scale".to_string())
    );
    assert_eq!(t.ir.tensors[w_scale].dims, t.ir.tensors[a_scale].dims);
    let units = generate_all(std::slice::from_ref(&c));
    assert!(
        units
            .iter()
            .flat_map(|u| u.files.iter())
            .any(|f| f.kind == FileKind::Kernel),
        "no kernel generated"
    );
}

/// The scales bound by role even when declared in the opposite order to their shapes' guess.
#[test]
fn swapped_scale_names_follow_their_roles() {
    let text = stdlib("linear_fp8_blockscale.mpk")
        .replace("in scale of A", "in scale of TMP")
        .replace("in scale of W", "in scale of A")
        .replace("in scale of TMP", "in scale of W");
    let c = check(&text, Some("q_b"), &[]);
    // A_scale now claims to be W's scales, with A's shape: the role wins and the shape is wrong.
    assert!(codes(&c).contains(&"E0013"), "{:#?}", c.diags);
}

#[test]
fn direction_must_agree_with_the_role() {
    for (from, to) in [
        ("in weight tma", "out weight tma"),
        ("out output", "in output"),
        ("in scale of W", "out scale of W"),
    ] {
        let text = stdlib("linear_fp8_blockscale.mpk").replace(from, to);
        assert_ne!(text, stdlib("linear_fp8_blockscale.mpk"));
        let c = check(&text, Some("q_b"), &[]);
        assert!(codes(&c).contains(&"E0005"), "{to}: {:#?}", c.diags);
    }
}

#[test]
fn scale_of_names_a_declared_tensor_other_than_itself() {
    let base = stdlib("linear_fp8_blockscale.mpk");
    let c = check(
        &base.replace("in scale of W", "in scale of Wx"),
        Some("q_b"),
        &[],
    );
    assert!(codes(&c).contains(&"E0002"), "{:#?}", c.diags);
    let c = check(
        &base.replace("in scale of W", "in scale of W_scale"),
        Some("q_b"),
        &[],
    );
    assert!(codes(&c).contains(&"E0005"), "{:#?}", c.diags);
}
