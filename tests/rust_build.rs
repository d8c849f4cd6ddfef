//! `mpkc::build::Builder` (issue 14, Deliver 5): a build script's entry point. In-process: a
//! contract error and an nvcc error fail with rendered diagnostics; a good contract gives a cubin
//! per declared target, `kernels.rs` naming them, and the same output twice. Through cargo
//! (offline): the example crate `examples/rust-build` builds, its OUT_DIR holds the cubins of
//! rmsnorm_v2 for sm_90a and sm_100a, its binary exits 4 without a GPU (0 with one: the outputs
//! match the CPU reference), and a broken contract fails its build with mpkc's diagnostics.
//! Needs nvcc (`scripts/setup`), no GPU.

use mpkc::build::{Builder, Error};
use std::path::{Path, PathBuf};
use std::process::Command;

const RESIDUAL_ADD: &str = include_str!("../examples/residual_add.mpk");

fn contract(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn quiet() -> Builder {
    let mut b = Builder::new();
    b.cargo_metadata(false).jobs(2);
    b
}

#[test]
fn a_contract_error_fails_with_rendered_diagnostics() {
    let dir = tempfile::tempdir().unwrap();
    let f = contract(
        dir.path(),
        "broken.mpk",
        "task broken {\n  family consumer-no-smem\n  targets sm_91\n}\n",
    );
    let err = quiet()
        .file(&f)
        .out_dir(dir.path().join("out"))
        .compile()
        .unwrap_err();
    let Error::Diagnostics { errors, .. } = &err else {
        panic!("{err}")
    };
    assert!(*errors >= 1);
    let text = format!("{err:?}");
    assert!(
        text.contains("error[E0008]: unknown target `sm_91`"),
        "{text}"
    );
    assert!(text.contains("broken.mpk:3:11"), "{text}");
    assert!(text.contains("help: targets are"), "{text}");
    assert!(text.contains("the kernels were not built"), "{text}");
    // Nothing was generated.
    assert!(!dir.path().join("out").exists());
}

#[test]
fn unknown_stdlib_contracts_and_missing_files_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let err = quiet()
        .stdlib("rmsnorm_v3")
        .out_dir(dir.path())
        .compile()
        .unwrap_err();
    assert!(matches!(err, Error::Usage(_)), "{err}");
    assert!(err.to_string().contains("rmsnorm_v2"), "{err}");
    let err = quiet()
        .file(dir.path().join("absent.mpk"))
        .out_dir(dir.path())
        .compile()
        .unwrap_err();
    assert!(
        matches!(&err, Error::Io(m) if m.contains("absent.mpk")),
        "{err}"
    );
    let latin1 = dir.path().join("latin1.mpk");
    std::fs::write(&latin1, b"task caf\xe9 {}\n").unwrap();
    let err = quiet()
        .file(&latin1)
        .out_dir(dir.path())
        .compile()
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("error[E0001]: the file is not UTF-8"),
        "{err}"
    );
}

#[test]
fn an_nvcc_error_in_inline_cuda_is_shown_on_the_contract_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = RESIDUAL_ADD.replace(
        "      y[i] = __float2bfloat16_rn",
        "      not_declared_anywhere(i);\n      y[i] = __float2bfloat16_rn",
    );
    assert_ne!(bad, RESIDUAL_ADD);
    let f = contract(dir.path(), "residual_add.mpk", &bad);
    let err = quiet()
        .file(&f)
        .out_dir(dir.path().join("out"))
        .compile()
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("error[E0701]"), "{text}");
    assert!(text.contains("not_declared_anywhere"), "{text}");
    assert!(text.contains("help: fix the CUDA"), "{text}");
    // One diagnostic for the two targets.
    assert_eq!(text.matches("error[E0701]").count(), 1, "{text}");
}

fn is_cubin(p: &Path) -> bool {
    std::fs::read(p).is_ok_and(|b| b.len() > 64 && b.starts_with(b"\x7fELF"))
}

#[test]
fn a_contract_builds_a_cubin_per_target_and_the_same_module_twice() {
    let dir = tempfile::tempdir().unwrap();
    let f = contract(dir.path(), "residual_add.mpk", RESIDUAL_ADD);
    let out = dir.path().join("out");
    let built = quiet().file(&f).out_dir(&out).compile().unwrap();
    assert_eq!(built.inputs, vec![f.clone()]);
    assert_eq!(built.kernels.len(), 1);
    let k = &built.kernels[0];
    assert_eq!(k.unit, "residual_add");
    let targets: Vec<&str> = k.cubins.iter().map(|(t, _, _)| t.as_str()).collect();
    assert_eq!(targets, ["sm_100a", "sm_90a"]);
    for (_, cubin, report) in &k.cubins {
        assert!(is_cubin(cubin), "{}", cubin.display());
        assert!(report.registers > 0, "{report:?}");
    }
    let module = std::fs::read_to_string(&built.rust_module).unwrap();
    assert!(module.contains("pub mod residual_add {"), "{module}");
    assert!(
        module.contains("pub const ENTRY: &str = \"mpkc_harness_residual_add\";"),
        "{module}"
    );
    for (_, cubin, _) in &k.cubins {
        assert!(
            module.contains(&format!("include_bytes!({:?})", cubin.to_string_lossy())),
            "{module}"
        );
    }
    let again = quiet().file(&f).out_dir(&out).compile().unwrap();
    assert_eq!(std::fs::read_to_string(&again.rust_module).unwrap(), module);
    for ((_, a, _), (_, b, _)) in k.cubins.iter().zip(&again.kernels[0].cubins) {
        assert_eq!(std::fs::read(a).unwrap(), std::fs::read(b).unwrap());
    }
}

/// `cargo build --offline --message-format json` of the example crate: the status, the
/// example's OUT_DIR and binary (when built), and stderr.
fn cargo_build_example(
    extra_env: &[(&str, &str)],
) -> (bool, Option<PathBuf>, Option<PathBuf>, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // mpkc's own target folder (the parent of CARGO_TARGET_TMPDIR): the example's profile is
    // mpkc's (examples/rust-build/Cargo.toml), so cargo reuses the mpkc library and every
    // dependency `cargo test` compiled, and builds only the example (about 10 s, not 3 minutes).
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let target_dir = tmp.parent().unwrap_or(tmp);
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root.join("examples/rust-build"))
        .args(["build", "--offline", "--message-format", "json"])
        .env("CARGO_TARGET_DIR", target_dir);
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("cargo runs");
    let (mut out_dir, mut exe) = (None, None);
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let ours = v["package_id"]
            .as_str()
            .is_some_and(|p| p.contains("rust-build"));
        if !ours {
            continue;
        }
        match v["reason"].as_str() {
            Some("build-script-executed") => out_dir = v["out_dir"].as_str().map(PathBuf::from),
            Some("compiler-artifact") => {
                if let Some(e) = v["executable"].as_str() {
                    exe = Some(PathBuf::from(e));
                }
            }
            _ => {}
        }
    }
    (
        out.status.success(),
        out_dir,
        exe,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_example_crate_builds_its_cubins_with_cargo_and_runs_or_exits_4() {
    let (ok, out_dir, exe, stderr) = cargo_build_example(&[]);
    assert!(ok, "{stderr}");
    let out_dir = out_dir.expect("the build script ran").join("mpkc");
    for unit in ["rmsnorm_v2_h4096", "rmsnorm_v2_h7168"] {
        for target in ["sm_90a", "sm_100a"] {
            let cubin = out_dir.join(format!("{unit}_harness.{target}.cubin"));
            assert!(is_cubin(&cubin), "{}", cubin.display());
        }
    }
    let module = std::fs::read_to_string(out_dir.join("kernels.rs")).unwrap();
    assert!(module.contains("pub mod rmsnorm_v2_h4096 {"), "{module}");
    let exe = exe.expect("the example binary");
    let run = Command::new(&exe).output().expect("the example runs");
    let (out, err) = (
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr),
    );
    match run.status.code() {
        // No GPU here (CI): the message says so and names the cubins it has.
        Some(4) => assert!(
            err.contains("no GPU to run rmsnorm_v2_h4096 on") && err.contains("sm_90a"),
            "{err}"
        ),
        // A GPU: every output matches the CPU reference.
        Some(0) => assert!(
            out.contains("matches the CPU reference") && !out.contains("MISMATCH"),
            "{out}"
        ),
        other => panic!("exit {other:?}\n{out}\n{err}"),
    }
}

#[test]
fn a_broken_contract_fails_the_example_build_with_the_diagnostics() {
    let dir = tempfile::tempdir().unwrap();
    let f = contract(
        dir.path(),
        "mine.mpk",
        "task mine {\n  family consumer-no-smem\n  targets sm_91\n}\n",
    );
    let (ok, _, _, stderr) = cargo_build_example(&[("MPKC_EXAMPLE_CONTRACT", f.to_str().unwrap())]);
    assert!(!ok, "{stderr}");
    assert!(
        stderr.contains("error[E0008]: unknown target `sm_91`"),
        "{stderr}"
    );
    assert!(stderr.contains("help: targets are"), "{stderr}");
}
