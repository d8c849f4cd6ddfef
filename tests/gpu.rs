//! `mpkc verify` end to end. Without an NVIDIA driver verify must say so and exit 4: checked on
//! every machine by hiding the driver from the run. The runs themselves need a GPU and are
//! `#[ignore]`d with that reason here. On the GPU machine (no Rust there) this test binary, built
//! here with `cargo test --test gpu --no-run`, runs with `--include-ignored` from the repository
//! root, with `$MPKC` naming the mpkc binary: `GPU_TESTS=<test binary> MPKC=<mpkc>
//! scripts/gpu-verify.sh tests`; or `cargo test --test gpu -- --include-ignored` where Rust and a
//! GPU meet.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The mpkc binary under test: `$MPKC` where set (the GPU machine runs this test binary, built
/// elsewhere with `cargo test --test gpu --no-run`, with `MPKC` naming the mpkc binary carried
/// over with it: scripts/gpu-verify.sh `tests`), otherwise the one cargo built next to this test.
fn mpkc() -> PathBuf {
    match std::env::var_os("MPKC") {
        Some(p) if !p.is_empty() => {
            let p = PathBuf::from(p);
            assert!(p.is_file(), "$MPKC is {}, which is no file", p.display());
            p
        }
        _ => {
            let p = PathBuf::from(env!("CARGO_BIN_EXE_mpkc"));
            assert!(
                p.is_file(),
                "{} is not here: set MPKC to the mpkc binary (this test binary was built elsewhere)",
                p.display()
            );
            p
        }
    }
}

fn verify(args: &[&str]) -> Output {
    verify_with(args, &[])
}

fn verify_with(args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Output {
    let mut cmd = Command::new(mpkc());
    cmd.arg("verify").args(args).env("NO_COLOR", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// A directory that hides the CUDA driver from a process whose `LD_LIBRARY_PATH` starts with
/// it: an empty file under every name cudarc's loader tries for the driver
/// (`cudarc::get_lib_name_candidates` of `cuda` and `nvcuda`: `libcuda.so`, `libcuda.so.1`, ...).
/// The dynamic loader searches `LD_LIBRARY_PATH` before its cache and the system directories, and
/// a file it finds there that is no ELF object ("file too short") fails the `dlopen` instead of
/// letting the search go on (glibc's `open_verify`), so the real `libcuda.so.1` is never reached.
fn driver_hiding_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mpkc-gpu-test-no-libcuda-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for lib in ["cuda", "nvcuda"] {
        for name in cudarc::get_lib_name_candidates(lib) {
            std::fs::write(dir.join(name), b"").unwrap();
        }
    }
    dir
}

/// `LD_LIBRARY_PATH` with `first` ahead of what this process has.
fn library_path_with(first: &Path) -> std::ffi::OsString {
    let mut parts = vec![first.to_path_buf()];
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH") {
        parts.extend(std::env::split_paths(&old));
    }
    std::env::join_paths(parts).unwrap()
}

/// On every machine, with or without a driver: verify run where the driver cannot be loaded
/// ([`driver_hiding_dir`]) says so and exits 4 (docs/design.md, "Conventions"), before it builds
/// anything. On the GPU machine this is the check that the driver's absence is detected rather
/// than assumed; where no driver is installed it is the plain case.
#[test]
fn without_a_driver_verify_says_so_and_exits_4() {
    let hide = driver_hiding_dir();
    let o = verify_with(
        &["--only", "rmsnorm"],
        &[("LD_LIBRARY_PATH", &library_path_with(&hide))],
    );
    let _ = std::fs::remove_dir_all(&hide);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(4), "{err}");
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
        "argmax_partial_v2 -> argmax_reduce_v2",
        "linear_bf16_splitk_q_b -> linear_bf16_splitk_q_b_reduce",
    ] {
        assert!(
            text.lines()
                .any(|l| l.split('\t').next() == Some(case) && l.contains("\treference: ")),
            "{case} not in:\n{text}"
        );
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
#[ignore = "needs a host with two or more NVIDIA GPUs: run on the GPU machine (scripts/gpu-verify.sh tests)"]
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
#[ignore = "needs an NVIDIA GPU and driver: run on the GPU machine (scripts/gpu-verify.sh tests)"]
fn the_stdlib_verifies_at_m1_and_m16() {
    for m in ["1", "16"] {
        let o = verify(&["--m", m, "--tasks", "4"]);
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(0), "{out}");
        assert!(out.contains(" 0 failed"), "{out}");
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU and driver: run on the GPU machine (scripts/gpu-verify.sh tests)"]
fn injected_faults_fail_with_a_named_barrier_or_page() {
    for (fault, case, says) in [
        (
            "page-skip",
            "rmsnorm_v2_h4096",
            "a release of this page was skipped",
        ),
        ("page-double", "argmax_reduce_v2", "released twice"),
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

/// A body that stores UE8M0 scales through `__nv_fp8_e8m0` and e5m2 values, against its
/// pure-Python reference: the kernel's scale bytes are powers of two rounded up (a `uint8_t`
/// element would have truncated the float), and verify reads both outputs by their formats and
/// compares `y` dequantized with its declared `scale of y` (tests/fixtures/fp8/quant_e5m2.mpk).
#[test]
#[ignore = "needs an NVIDIA GPU and driver: run on the GPU machine (scripts/gpu-verify.sh tests)"]
fn ue8m0_scales_and_e5m2_values_verify_against_their_reference() {
    let o = verify(&["tests/fixtures/fp8/quant_e5m2.mpk"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains(" 0 failed"), "{out}");
}
