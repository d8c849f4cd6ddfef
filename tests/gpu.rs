//! `mpkc verify` end to end. Without an NVIDIA driver (CI, this machine) verify must say so and
//! exit 4; the runs themselves need a GPU and are `#[ignore]`d with that reason here: on the GPU
//! machine `scripts/gpu-verify.sh` runs them (and the fault injections and compute-sanitizer)
//! and prints the table recorded in the notes, or `cargo test --test gpu -- --ignored` where
//! Rust and a GPU meet.

use std::process::{Command, Output};

fn verify(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mpkc"))
        .arg("verify")
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn driver_present() -> bool {
    // SAFETY: only probes whether libcuda can be opened.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

#[test]
fn without_a_driver_verify_says_so_and_exits_4() {
    if driver_present() {
        eprintln!("skipped: a CUDA driver is present here; the GPU tests below cover this machine");
        return;
    }
    let o = verify(&["--only", "rmsnorm"]);
    assert_eq!(o.status.code(), Some(4));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no CUDA driver"), "{err}");
}

#[test]
fn listing_needs_no_gpu_and_names_every_case() {
    let o = verify(&["--list", "--m", "1"]);
    assert_eq!(o.status.code(), Some(0));
    let text = String::from_utf8_lossy(&o.stdout);
    for case in [
        "linear_sm100_v2",
        "rmsnorm_v2_h7168",
        "argmax_partial -> argmax_reduce",
        "linear_bf16_splitk_q_b -> linear_bf16_splitk_q_b_reduce",
    ] {
        assert!(text.lines().any(|l| l == case), "{case} not in:\n{text}");
    }
    let ex = verify(&["--list", "examples/residual_add.mpk"]);
    let ex = String::from_utf8_lossy(&ex.stdout).into_owned();
    assert!(ex.contains("skipped: inline CUDA body"), "{ex}");
}

#[test]
fn a_bad_fault_is_a_usage_error() {
    let o = verify(&["--inject", "melt-down"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("region-short"));
}

#[test]
fn a_bad_gpu_selection_is_a_usage_error() {
    for (sel, says) in [
        ("0,0", "named twice"),
        ("x", "device ordinals"),
        ("1,-1", "device ordinals"),
    ] {
        let o = verify(&["--gpus", sel, "--only", "rmsnorm"]);
        assert_eq!(o.status.code(), Some(2), "--gpus {sel}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(says), "--gpus {sel}: {err}");
    }
}

/// The result lines of a verify run without their timings and device tags, in print order.
fn verdicts(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter(|l| l.starts_with("  PASS") || l.starts_with("  FAIL") || l.starts_with("  SKIP"))
        .map(|l| l.split("  [").next().unwrap_or(l).trim_end().to_string())
        .collect()
}

#[test]
#[ignore = "needs a host with two or more NVIDIA GPUs: run on the GPU machine (scripts/gpu-verify.sh gpus)"]
fn spreading_over_every_gpu_gives_the_one_gpu_results() {
    let one = verify(&["--m", "1", "--gpus", "0"]);
    let all = verify(&["--m", "1", "--gpus", "all"]);
    let (one_out, all_out) = (
        String::from_utf8_lossy(&one.stdout),
        String::from_utf8_lossy(&all.stdout),
    );
    assert_eq!(one.status.code(), Some(0), "{one_out}");
    assert_eq!(all.status.code(), Some(0), "{all_out}");
    assert!(
        all_out.contains(", GPU 1]"),
        "no case ran on GPU 1:\n{all_out}"
    );
    assert_eq!(verdicts(&one_out), verdicts(&all_out));
}

#[test]
#[ignore = "needs an NVIDIA GPU and driver: run on the GPU machine (scripts/gpu-verify.sh)"]
fn the_stdlib_verifies_at_m1_and_m16() {
    for m in ["1", "16"] {
        let o = verify(&["--m", m, "--tasks", "4"]);
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(0), "{out}");
        assert!(out.contains(" 0 failed"), "{out}");
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU and driver: run on the GPU machine (scripts/gpu-verify.sh)"]
fn injected_faults_fail_with_a_named_barrier_or_page() {
    for (fault, case, says) in [
        (
            "page-skip",
            "rmsnorm_v2_h4096",
            "a release of this page was skipped",
        ),
        ("page-double", "argmax_reduce", "released twice"),
        ("count-off", "linear_sm100_v2", "op ordinal 0"),
        ("reinit-drop", "linear_sm100_v2", "re-init was dropped"),
        ("bad-scale", "linear_fp8_blockscale_q_b", "W_scale[0] = "),
        ("region-short", "linear_sm100_v2", "E0304"),
    ] {
        let o = verify(&[
            "--inject",
            fault,
            "--only",
            case,
            "--wait-timeout-ms",
            "2000",
        ]);
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(1), "{fault}: {out}");
        assert!(out.contains(says), "{fault}: {out}");
    }
}
