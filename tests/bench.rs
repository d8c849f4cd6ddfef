//! `mpkc bench` without a GPU: without a driver (hidden, or a stub that reports no device) it says
//! so and exits 4; and the production build of each stdlib linear (one instance) compiles with nvcc for
//! sm_90a and holds none of `verify`'s test instrumentation, while a test build of the same
//! harness does (so the search can fail). The timings themselves need the GPU machine
//! (`scripts/bench-gpu.sh`).

use mpkc::driver::bench::{
    cases_at, compile, consumer_cases_at, linears, units, write_production, MSet, INSTRUMENTATION,
};
use mpkc::driver::{check_sources_with, nvcc, stdlib, token_overrides, Checked};
use mpkc::ir::Target;
use mpkc::sema::SemaOptions;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bench_with(args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mpkc"));
    cmd.arg("bench").args(args).env("NO_COLOR", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn scratch_dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `LD_LIBRARY_PATH` with `first` ahead of what this process has.
fn library_path_with(first: &Path) -> std::ffi::OsString {
    let mut parts = vec![first.to_path_buf()];
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH") {
        parts.extend(std::env::split_paths(&old));
    }
    std::env::join_paths(parts).unwrap()
}

/// Puts `contents` under every name cudarc's loader tries for the driver, in `dir`.
fn as_every_driver_name(dir: &Path, contents: &[u8]) {
    for lib in ["cuda", "nvcuda"] {
        for name in cudarc::get_lib_name_candidates(lib) {
            std::fs::write(dir.join(name), contents).unwrap();
        }
    }
}

/// Without a driver (every name the loader tries is an empty file ahead of the system's, so a
/// real driver is never reached: the same on a GPU machine) bench says so and exits 4.
#[test]
fn without_a_driver_bench_says_so_and_exits_4() {
    let hide = scratch_dir("bench_no_libcuda");
    as_every_driver_name(&hide, b"");
    let o = bench_with(
        &["--m", "1"],
        &[("LD_LIBRARY_PATH", &library_path_with(&hide))],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(4), "{err}");
    assert!(
        err.contains("mpkc bench needs a GPU: no CUDA driver (libcuda)"),
        "{err}"
    );
    assert!(
        o.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    // `--no-competitor` changes what runs on the GPU, not that one is needed.
    let o = bench_with(
        &["--m", "1", "--no-competitor"],
        &[("LD_LIBRARY_PATH", &library_path_with(&hide))],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(4), "{err}");
    assert!(err.contains("mpkc bench needs a GPU"), "{err}");
}

/// `--timeline` reads the persistent method's stamps: with the standalone method alone, or with
/// `--fixed-cost`, it is a usage error (exit 2) before anything is checked or run, GPU or not.
#[test]
fn timeline_without_the_persistent_method_is_a_usage_error() {
    for args in [
        &["--timeline", "--method", "standalone"][..],
        &["--timeline", "--fixed-cost"][..],
    ] {
        let o = bench_with(args, &[]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("`--timeline` reads the persistent method's stamps"),
            "{err}"
        );
    }
}

/// An unknown `--target` and a `--save-json` that cannot be written are usage errors (exit 2)
/// before any GPU work, here on a machine without one (which would otherwise exit 4).
#[test]
fn a_bad_target_or_save_json_is_refused_before_the_gpu() {
    let o = bench_with(&["--target", "garbage"], &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("garbage") && err.contains("sm_90a"), "{err}");
    let dir = scratch_dir("bench-save-json");
    let missing = dir.join("no-such-folder").join("r.json");
    for (path, why) in [(dir.clone(), "is a folder"), (missing, "does not exist")] {
        let o = bench_with(&["--save-json", path.to_str().unwrap()], &[]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("--save-json") && err.contains(why), "{err}");
    }
}

/// A stub libcuda (as the toolkit's `lib64/stubs` ships: it loads, and `cuInit` fails with
/// CUDA_ERROR_STUB_LIBRARY) is no GPU either: exit 4, naming the device, not a panic.
#[test]
fn with_a_stub_driver_bench_exits_4() {
    let dir = scratch_dir("bench_stub_libcuda");
    let c = dir.join("stub.c");
    std::fs::write(
        &c,
        "static const char *msg = \"CUDA driver is a stub library\";\n\
         int cuInit(unsigned flags) { (void)flags; return 34; }\n\
         int cuDeviceGetCount(int *n) { *n = 0; return 0; }\n\
         int cuDriverGetVersion(int *v) { *v = 13000; return 0; }\n\
         int cuGetErrorString(int e, const char **s) { (void)e; *s = msg; return 0; }\n\
         int cuGetErrorName(int e, const char **s) { (void)e; *s = \"CUDA_ERROR_STUB_LIBRARY\"; return 0; }\n",
    )
    .unwrap();
    let so = dir.join("built.so");
    let cc = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&so)
        .arg(&c)
        .output()
        .expect("a C compiler (cc) on PATH");
    assert!(
        cc.status.success(),
        "{}",
        String::from_utf8_lossy(&cc.stderr)
    );
    as_every_driver_name(&dir, &std::fs::read(&so).unwrap());
    let o = bench_with(
        &["--m", "1"],
        &[("LD_LIBRARY_PATH", &library_path_with(&dir))],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(4), "{err}");
    assert!(
        err.contains("mpkc bench needs a GPU: no CUDA device"),
        "{err}"
    );
}

#[test]
fn a_contract_with_nothing_to_time_is_a_usage_error_and_m_zero_is_refused() {
    let o = bench_with(&["examples/residual_add.mpk"], &[]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("nothing to time among the inputs"));
    let o = bench_with(&["--m", "1,0"], &[]);
    assert_eq!(o.status.code(), Some(2));
}

/// Every case skipped at every M (the argmax partial without its reduce; an M past the
/// consumer contracts' range): why each is, and exit 1 before any GPU is looked for.
#[test]
fn nothing_runnable_says_why_and_exits_1_without_a_gpu() {
    let o = bench_with(&["stdlib/argmax_partial_v2.mpk", "--m", "1"], &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("no argmax_reduce among the inputs"), "{err}");
    assert!(err.contains("nothing to time"), "{err}");
    let o = bench_with(&["stdlib/rmsnorm_v2.mpk", "--m", "17"], &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("at M = 17: E0006"), "{err}");
}

fn stdlib_at(m: i64) -> Vec<Checked> {
    check_sources_with(
        &stdlib::sources(),
        |s| SemaOptions {
            overrides: token_overrides(s, m),
            instance: None,
            ..Default::default()
        },
        &Default::default(),
    )
}

fn holds(cubin: &[u8], what: &str) -> bool {
    cubin.windows(what.len()).any(|w| w == what.as_bytes())
}

fn jobs() -> usize {
    std::thread::available_parallelism().map_or(4, |n| n.get())
}

/// The strings of the instrumentation that can show in a cubin (symbols and messages; a
/// define leaves no trace of its own).
fn in_cubins() -> Vec<&'static str> {
    INSTRUMENTATION
        .iter()
        .copied()
        .filter(|s| !s.starts_with("MPKC_"))
        .collect()
}

#[test]
fn each_stdlib_linear_builds_for_sm_90a_without_test_instrumentation() {
    let tc = nvcc::find().expect("nvcc (run scripts/setup)");
    let checked = stdlib_at(16);
    let (lin, _) = linears(&checked);
    assert!(lin.len() >= 12, "{lin:?}");
    // One instance of each linear task: instances differ in constants only, and each instance's
    // production kernel is compiled by tests/cli.rs and tests/generated.rs.
    let mut seen = std::collections::BTreeSet::new();
    let lin: Vec<_> = lin
        .into_iter()
        .filter(|x| seen.insert((x.0, checked[x.0].tasks[x.1].ir.name.clone())))
        .collect();
    assert!(lin.len() >= 6, "{lin:?}");
    let set = MSet {
        m: 16,
        cases: cases_at(16, &checked, &lin),
        checked,
    };
    assert!(set.cases.iter().all(|c| c.skip.is_none()));
    let dir = scratch_dir("bench_production_sm90a");
    write_production(&dir, &set, false).unwrap();
    let built = compile(&tc, &dir, &set, Target::Sm90a, jobs(), false);
    for (c, b) in set.cases.iter().zip(built) {
        let (cubin, stamped) = match b {
            Some(Ok(x)) => x,
            Some(Err(f)) => panic!("{}: {}\n{}", c.name, f.command, f.stderr),
            None => panic!("{} was not compiled", c.name),
        };
        assert!(stamped.is_none());
        let bytes = std::fs::read(&cubin).unwrap();
        assert!(holds(&bytes, &c.entry), "{}: no entry {}", c.name, c.entry);
        for s in in_cubins() {
            assert!(
                !holds(&bytes, s),
                "{}: the production cubin holds `{s}`",
                c.name
            );
        }
        assert!(!holds(&bytes, "mpkc_bench_stamps"), "{}", c.name);
        assert!(!holds(&bytes, "mpkc_bench_timer_probe"), "{}", c.name);
    }
}

#[test]
fn the_stamped_build_adds_the_stamps_and_a_test_build_holds_the_instrumentation() {
    let tc = nvcc::find().expect("nvcc (run scripts/setup)");
    let checked = stdlib_at(1);
    let (lin, _) = linears(&checked);
    let lin: Vec<_> = lin
        .into_iter()
        .filter(|(_, _, u)| u == "linear_sm100_v2")
        .collect();
    let set = MSet {
        m: 1,
        cases: cases_at(1, &checked, &lin),
        checked,
    };
    let dir = scratch_dir("bench_stamped_sm90a");
    write_production(&dir, &set, false).unwrap();
    let built = compile(&tc, &dir, &set, Target::Sm90a, jobs(), true);
    let Some(Some(Ok((_, Some(stamped))))) = built.into_iter().next() else {
        panic!("the stamped build did not compile");
    };
    let bytes = std::fs::read(&stamped).unwrap();
    assert!(holds(&bytes, "mpkc_bench_stamps"));
    assert!(holds(&bytes, "mpkc_bench_timer_probe"));
    for s in in_cubins() {
        assert!(!holds(&bytes, s), "the stamped cubin holds `{s}`");
    }
    // The same harness as verify builds it: the search finds what production builds lack.
    let c = &set.cases[0];
    let flags = mpkc::driver::verify::test_flags(2000, &[]);
    let (test_cubin, _) =
        nvcc::compile_with(&tc, &dir, &c.file, &c.entry, Target::Sm90a, &flags).unwrap();
    let bytes = std::fs::read(test_cubin).unwrap();
    for s in ["report_hang", "mpkc: hang", "mpkc: page protocol"] {
        assert!(holds(&bytes, s), "the test build lacks `{s}`");
    }
}

/// The consumer ops `mpkc bench` times against PyTorch eager (rmsnorm, silu_mul, embedding, the
/// argmax partial and its reduce as one chain) build for sm_90a, production and stamped: the
/// production cubin holds neither the instrumentation nor the stamps, the stamped one holds the
/// stamps the persistent method reads.
#[test]
fn each_stdlib_consumer_case_builds_production_and_stamped_for_sm_90a() {
    let tc = nvcc::find().expect("nvcc (run scripts/setup)");
    let checked = stdlib_at(1);
    let u = units(&checked);
    let set = MSet {
        m: 1,
        cases: consumer_cases_at(1, &checked, &u.consumers),
        checked,
    };
    let names: Vec<&str> = set.cases.iter().map(|c| c.name.as_str()).collect();
    assert!(
        names.contains(&"argmax_partial_v2 -> argmax_reduce_v2"),
        "{names:?}"
    );
    assert!(names.contains(&"embedding_v2"), "{names:?}");
    assert!(set.cases.len() >= 5, "{names:?}");
    assert!(set.cases.iter().all(|c| c.skip.is_none()), "{names:?}");
    let dir = scratch_dir("bench_consumer_sm90a");
    write_production(&dir, &set, false).unwrap();
    let built = compile(&tc, &dir, &set, Target::Sm90a, jobs(), true);
    for (c, b) in set.cases.iter().zip(built) {
        let (cubin, stamped) = match b {
            Some(Ok((p, Some(s)))) => (p, s),
            Some(Ok((_, None))) => panic!("{}: no stamped build", c.name),
            Some(Err(f)) => panic!("{}: {}\n{}", c.name, f.command, f.stderr),
            None => panic!("{} was not compiled", c.name),
        };
        let bytes = std::fs::read(&cubin).unwrap();
        assert!(holds(&bytes, &c.entry), "{}: no entry {}", c.name, c.entry);
        assert!(!holds(&bytes, "mpkc_bench_stamps"), "{}", c.name);
        let stamped = std::fs::read(&stamped).unwrap();
        assert!(holds(&stamped, "mpkc_bench_stamps"), "{}", c.name);
        for s in in_cubins() {
            assert!(
                !holds(&bytes, s),
                "{}: the production cubin holds `{s}`",
                c.name
            );
            assert!(
                !holds(&stamped, s),
                "{}: the stamped cubin holds `{s}`",
                c.name
            );
        }
    }
}
