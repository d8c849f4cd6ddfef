//! `mpkc tune` without a GPU: the usage errors, the variants the checker rejects (listed with
//! its error, never built: the search can end without a GPU), the JSON document, and exit 4 at
//! the first variant that needs the GPU when there is no driver. The timings themselves run on
//! the GPU machine.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SUM64: &str = "stdlib/linear_bf16_splitk_sum64.mpk";

fn tune(args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mpkc"));
    cmd.arg("tune")
        .args(args)
        .env("NO_COLOR", "1")
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn usage_errors_exit_2_and_say_what_is_wrong() {
    let cases: &[(&[&str], &str)] = &[
        (&[SUM64, "--vary", "splits=2,4"], "needs `--instance NAME`"),
        (
            &[SUM64, SUM64, "--instance", "q_a", "--vary", "splits=2"],
            "takes one contract FILE",
        ),
        (
            &[SUM64, "--instance", "q_a", "--vary", "bogus=1"],
            "declares no param `bogus`",
        ),
        (
            &[SUM64, "--instance", "q_a", "--vary", "m_real=1,16"],
            "the token count is `--m`",
        ),
        (
            &[
                SUM64,
                "--instance",
                "q_a",
                "--vary",
                "splits=2",
                "--param",
                "splits=4",
            ],
            "both set `splits`",
        ),
        (
            &[
                SUM64,
                "--instance",
                "q_a",
                "--vary",
                "splits=1,2,3,4,5,6,7,8,9",
                "--vary",
                "K=1,2,3,4,5,6,7,8",
            ],
            "more than 64 variants",
        ),
        (
            &[
                SUM64,
                "--instance",
                "q_a",
                "--vary",
                "splits=2",
                "--vary",
                "splits=4",
            ],
            "given twice",
        ),
    ];
    for (args, want) in cases {
        let o = tune(args, &[]);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    // A file of two tasks is refused before any variant is checked.
    let dir = scratch_dir("tune_two_tasks");
    let src = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(SUM64)).unwrap();
    let two = format!(
        "{src}\n{}",
        src.replace("task linear_bf16_splitk_sum64", "task other_sum64")
            .replace("task_id 254", "task_id 253")
    );
    let f = dir.join("two.mpk");
    std::fs::write(&f, two).unwrap();
    let o = tune(
        &[
            f.to_str().unwrap(),
            "--instance",
            "q_a",
            "--vary",
            "splits=5",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("takes a file of one task"),
        "{}",
        text(&o.stderr)
    );
    // An empty value among the values.
    let o = tune(&[SUM64, "--instance", "q_a", "--vary", "splits=2,,4"], &[]);
    assert_eq!(o.status.code(), Some(2));
    // `--vary` is required.
    let o = tune(&[SUM64, "--instance", "q_a"], &[]);
    assert_eq!(o.status.code(), Some(2));
}

/// A K that is not a multiple of tile K is rejected by the checker (E0013): listed, never
/// built, and with none left the search ends with exit 1 and no GPU. (Splits need not divide
/// K / tile K: uneven splits are lowered.)
#[test]
fn rejected_variants_are_listed_with_the_checkers_error_and_need_no_gpu() {
    let o = tune(
        &[
            SUM64,
            "--instance",
            "q_a",
            "--vary",
            "K=7000,7040",
            "--m",
            "1,16",
        ],
        &[],
    );
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{}{out}", text(&o.stderr));
    assert!(
        out.contains("K = 7000 REJECTED: at its own params: E0013"),
        "{out}"
    );
    assert!(
        out.contains("K = 7040 REJECTED: at its own params: E0013"),
        "{out}"
    );
    assert!(out.contains("best: none"), "{out}");
    // A variant the contract takes at its own params but not at an M: rejected at that M.
    let o = tune(
        &[
            SUM64,
            "--instance",
            "q_a",
            "--vary",
            "splits=4",
            "--m",
            "64",
        ],
        &[],
    );
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{}{out}", text(&o.stderr));
    assert!(out.contains("splits = 4 REJECTED: at M = 64: E"), "{out}");
    let o = tune(
        &[SUM64, "--instance", "q_a", "--vary", "K=7000", "--json"],
        &[],
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
    assert_eq!(v["schema"], 1);
    assert_eq!(v["instance"], "q_a");
    assert_eq!(v["variants"][0]["status"], "rejected");
    assert_eq!(v["variants"][0]["params"]["K"], "7000");
    assert!(v["best"].is_null() && v["contract"].is_null(), "{v}");
}

fn scratch_dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn library_path_with(first: &Path) -> std::ffi::OsString {
    let mut parts = vec![first.to_path_buf()];
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH") {
        parts.extend(std::env::split_paths(&old));
    }
    std::env::join_paths(parts).unwrap()
}

/// A variant the checker accepts needs the GPU: without a driver (every name the loader tries is
/// an empty file ahead of the system's) the search stops there with exit 4, after listing the
/// rejected one.
#[test]
fn without_a_driver_the_first_timed_variant_exits_4() {
    let hide = scratch_dir("tune_no_libcuda");
    for lib in ["cuda", "nvcuda"] {
        for name in cudarc::get_lib_name_candidates(lib) {
            std::fs::write(hide.join(name), b"").unwrap();
        }
    }
    let o = tune(
        &[
            SUM64,
            "--instance",
            "q_a",
            "--vary",
            "K=7000,7168",
            "--m",
            "1",
        ],
        &[("LD_LIBRARY_PATH", &library_path_with(&hide))],
    );
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(4), "{err}");
    assert!(
        err.contains("K = 7000: rejected: at its own params: E0013"),
        "{err}"
    );
    assert!(err.contains("mpkc tune needs a GPU"), "{err}");
    // The variants' contract, written next to FILE for the bench, is gone.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("stdlib");
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().contains("mpkc-tune"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
