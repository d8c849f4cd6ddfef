//! `mpkc build` end to end (README, "Build output" and "Build cache"): byte-identical output
//! trees from run to run and for any `-j`, the nvcc cache (a rebuild with nothing changed runs no
//! nvcc; a corrupt entry is found and rebuilt), and atomic output (a failed write names the file
//! and leaves `--out` as it was). nvcc runs are counted through `MPKC_NVCC_WRAPPER`, a script
//! that logs each compile and runs it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A fresh scratch folder for one test.
fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("build")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Writes a wrapper that appends one line per compile to `log` and runs the compile.
fn counting_wrapper(dir: &Path) -> (PathBuf, PathBuf) {
    let log = dir.join("nvcc-runs.log");
    let script = dir.join("count-nvcc.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\nexec \"$@\"\n",
            log.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    (script, log)
}

fn runs(log: &Path) -> usize {
    std::fs::read_to_string(log).map_or(0, |s| s.lines().count())
}

/// `mpkc build --message-format json` with the cache in `cache` (or `--no-cache`).
fn build(args: &[&str], out: &Path, cache: Option<&Path>, wrapper: Option<&Path>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mpkc"));
    c.current_dir(root())
        .arg("build")
        .args(args)
        .args(["--message-format", "json", "--out"])
        .arg(out)
        .env("NO_COLOR", "1")
        .env_remove("MPKC_NVCC_WRAPPER");
    match cache {
        Some(d) => c.env("MPKC_CACHE_DIR", d),
        None => c.arg("--no-cache"),
    };
    if let Some(w) = wrapper {
        c.env("MPKC_NVCC_WRAPPER", w);
    }
    c.output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn ok(o: &Output) {
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}\n{}",
        text(&o.stdout),
        text(&o.stderr)
    );
}

/// Every file under `d` (relative path → bytes).
fn tree(d: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut m = BTreeMap::new();
    let mut stack = vec![d.to_path_buf()];
    while let Some(p) = stack.pop() {
        for e in std::fs::read_dir(&p).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(d).unwrap().display().to_string();
                m.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    m
}

/// The JSON lines of a build, each parsed.
fn json_lines(o: &Output) -> Vec<serde_json::Value> {
    text(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The `cache` field of every kernel line.
fn cache_uses(o: &Output) -> Vec<String> {
    json_lines(o)
        .iter()
        .filter(|v| v["reason"] == "kernel")
        .map(|v| v["cache"].as_str().unwrap().to_string())
        .collect()
}

/// Item 1 of issue 9: a build run twice, with `-j 4` and `-j 1`, gives the same files, byte for
/// byte (every generated file and every cubin), the same reports and the same progress lines.
/// The two runs cover run-to-run determinism and the job count at once. The input is a stdlib
/// instance with both kinds of unit a build schedules: a pipeline and the consumer kernel of its
/// derived split-K reduce (linear_bf16_splitk's router), for both targets: four nvcc jobs. Each build runs nvcc for every kernel (`--no-cache`) in its own
/// staging folder, so the cubins do not depend on the folder either. (The whole stdlib's
/// generated files are compared across processes by tests/generated.rs's snapshots, and every
/// stdlib kernel is compiled there; building all of it twice more here cost about 200 s of CI.)
#[test]
fn stdlib_builds_are_byte_identical_across_runs_and_job_counts() {
    let d = scratch("determinism");
    let outs = [d.join("a"), d.join("b")];
    let jobs = ["4", "1"];
    let mut results = Vec::new();
    for (out, j) in outs.iter().zip(jobs) {
        let o = build(
            &[
                "-j",
                j,
                "--instance",
                "router",
                "stdlib/linear_bf16_splitk.mpk",
            ],
            out,
            None,
            None,
        );
        ok(&o);
        let report = text(&o.stdout).replace(&out.display().to_string(), "OUT");
        results.push((tree(out), report, text(&o.stderr)));
    }
    let (t0, r0, e0) = &results[0];
    let cubins = t0.keys().filter(|k| k.ends_with(".cubin")).count();
    // The router's split-K pipeline and its derived reduce (a consumer kernel), each for sm_100a
    // and sm_90a.
    assert_eq!(cubins, 2 * 2, "every kernel for both targets");
    assert!(
        t0.contains_key("linear_bf16_splitk_router_spec.h")
            && t0.contains_key("linear_bf16_splitk_router_reduce_spec.h")
            && t0.contains_key(".mpkc-build")
    );
    for (i, (t, r, e)) in results.iter().enumerate().skip(1) {
        assert_eq!(
            t.keys().collect::<Vec<_>>(),
            t0.keys().collect::<Vec<_>>(),
            "build {i}: the same files"
        );
        for (name, bytes) in t {
            assert!(
                t0[name] == *bytes,
                "build {i} (-j {}): {name} differs",
                jobs[i]
            );
        }
        assert_eq!(r, r0, "build {i}: the same report");
        assert_eq!(e, e0, "build {i}: the same progress lines");
    }
    assert_eq!(
        r0.lines()
            .filter(|l| l.contains("\"reason\":\"kernel\""))
            .count(),
        cubins
    );
}

/// A rebuild with nothing changed runs no nvcc: every kernel is a cache hit and the output is
/// the same; a changed input (a param) misses.
#[test]
fn a_rebuild_with_nothing_changed_runs_no_nvcc() {
    let d = scratch("no_change");
    let (wrapper, log) = counting_wrapper(&d);
    let cache = d.join("cache");
    let out = d.join("out");
    let file = ["stdlib/silu_mul_v2.mpk"];
    let cold = build(&file, &out, Some(&cache), Some(&wrapper));
    ok(&cold);
    assert_eq!(runs(&log), 2, "sm_100a and sm_90a");
    assert_eq!(cache_uses(&cold), ["miss", "miss"]);
    let first = tree(&out);
    let warm = build(&file, &out, Some(&cache), Some(&wrapper));
    ok(&warm);
    assert_eq!(runs(&log), 2, "no nvcc ran: {}", text(&warm.stderr));
    assert_eq!(cache_uses(&warm), ["hit", "hit"]);
    let done = json_lines(&warm).pop().unwrap();
    assert_eq!(
        (done["nvcc_runs"].as_u64(), done["cache_hits"].as_u64()),
        (Some(0), Some(2))
    );
    assert!(tree(&out) == first, "the same files from the cache");
    // A changed param changes the generated sources: both kernels compile again.
    let changed = build(
        &["stdlib/silu_mul_v2.mpk", "--param", "n=1024"],
        &out,
        Some(&cache),
        Some(&wrapper),
    );
    ok(&changed);
    assert_eq!(cache_uses(&changed), ["miss", "miss"]);
    assert_eq!(runs(&log), 4);
}

/// A corrupt cache entry (here: a flipped byte, and a truncated file) is detected, reported
/// with its path, rebuilt with nvcc and replaced; the cubin written is nvcc's.
#[test]
fn a_corrupt_cache_entry_is_detected_and_rebuilt() {
    let d = scratch("corrupt");
    let (wrapper, log) = counting_wrapper(&d);
    let cache = d.join("cache");
    let out = d.join("out");
    let file = ["stdlib/embedding_v2.mpk"];
    ok(&build(&file, &out, Some(&cache), Some(&wrapper)));
    let good = tree(&out);
    let mut entries: Vec<PathBuf> = tree(&cache).keys().map(|k| cache.join(k)).collect();
    entries.sort();
    assert_eq!(entries.len(), 2, "{entries:?}");
    let mut bytes = std::fs::read(&entries[0]).unwrap();
    let at = bytes.len() - 200;
    bytes[at] ^= 0x01;
    std::fs::write(&entries[0], &bytes).unwrap();
    let full = std::fs::read(&entries[1]).unwrap();
    std::fs::write(&entries[1], &full[..full.len() / 2]).unwrap();
    let before = runs(&log);
    let o = build(&file, &out, Some(&cache), Some(&wrapper));
    ok(&o);
    assert_eq!(cache_uses(&o), ["corrupt", "corrupt"]);
    assert_eq!(runs(&log), before + 2);
    let err = text(&o.stderr);
    for e in &entries {
        assert!(
            err.contains(&format!("cache entry {} was corrupt", e.display())),
            "{err}"
        );
    }
    assert!(tree(&out) == good, "nvcc's cubins, not the damaged ones");
    let again = build(&file, &out, Some(&cache), Some(&wrapper));
    assert_eq!(
        cache_uses(&again),
        ["hit", "hit"],
        "the entries were replaced"
    );
    assert_eq!(runs(&log), before + 2);
}

/// A failed write names the file and replaces nothing: the output of an earlier build stays as
/// it was and no staging folder is left. The write fails through the file-size limit
/// (`ulimit -f`, with SIGXFSZ ignored so `write` returns EFBIG), which holds for root too.
#[test]
fn a_failed_write_names_the_file_and_replaces_nothing() {
    let d = scratch("failed_write");
    let cache = d.join("cache");
    let out = d.join("out");
    ok(&build(
        &["stdlib/silu_mul_v2.mpk"],
        &out,
        Some(&cache),
        None,
    ));
    let before = tree(&out);
    // 8 KiB: the support headers that are larger cannot be written.
    let limit = 8 * 1024;
    let blocks = limit / 512;
    let o = Command::new("sh")
        .current_dir(root())
        .arg("-c")
        .arg(format!(
            "trap '' XFSZ; ulimit -f {blocks} 2>/dev/null || exit 99; exec \"$0\" build stdlib/embedding_v2.mpk --no-cache --out '{}'",
            out.display()
        ))
        .arg(env!("CARGO_BIN_EXE_mpkc"))
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let err = text(&o.stderr);
    // 4: the command line is right, what is missing is a writable place for the output
    // (design.md, Conventions).
    assert_eq!(o.status.code(), Some(4), "{err}");
    // The first file over the limit, in the order the build writes (stamp, support headers, …).
    let (first, _) = mpkc::back::SUPPORT_HEADERS
        .iter()
        .find(|(_, t)| t.len() > limit)
        .expect("a support header over 8 KiB");
    let named = format!("cannot write {}", out.join(first).display());
    assert!(err.contains(&named), "{err}");
    assert!(err.contains("is unchanged"), "{err}");
    assert!(tree(&out) == before, "nothing in --out was replaced");
    let left: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("mpkc-") && !n.ends_with("mpkc-lock"))
        .collect();
    assert!(left.is_empty(), "staging folders left: {left:?}");
}

/// Each build replaces its --out whole: files of a previous build that this one does not write
/// are gone; a non-empty folder mpkc did not write is refused and left alone.
#[test]
fn out_is_replaced_whole_and_a_foreign_folder_is_refused() {
    let d = scratch("replace");
    let cache = d.join("cache");
    let out = d.join("out");
    ok(&build(
        &["stdlib/silu_mul_v2.mpk"],
        &out,
        Some(&cache),
        None,
    ));
    assert!(out.join("silu_mul_v2_harness.sm_90a.cubin").is_file());
    ok(&build(
        &["stdlib/embedding_v2.mpk"],
        &out,
        Some(&cache),
        None,
    ));
    let names: Vec<String> = tree(&out).into_keys().collect();
    assert!(
        names.iter().any(|n| n.starts_with("embedding_v2")),
        "{names:?}"
    );
    assert!(
        !names.iter().any(|n| n.starts_with("silu_mul_v2")),
        "stale: {names:?}"
    );

    let foreign = d.join("mine");
    std::fs::create_dir_all(&foreign).unwrap();
    std::fs::write(foreign.join("notes.txt"), "keep").unwrap();
    let o = build(&["stdlib/silu_mul_v2.mpk"], &foreign, Some(&cache), None);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("did not write"),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(tree(&foreign).len(), 1, "left alone");

    // A contract inside a folder an earlier build wrote: building it into that folder would
    // replace the folder, the contract with it. Refused (exit 2) before anything is written.
    let input = out.join("mine.mpk");
    std::fs::copy(root().join("stdlib/silu_mul_v2.mpk"), &input).unwrap();
    let before = tree(&out);
    let o = build(&[input.to_str().unwrap()], &out, Some(&cache), None);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("an input of this build"),
        "{}",
        text(&o.stderr)
    );
    assert!(input.is_file(), "the input is kept");
    assert_eq!(tree(&out), before, "--out left as it was");
}

/// Without nvcc `build` writes the sources, exits 4 and, under `--message-format json`, still
/// ends with the `build-finished` object (success false, the reason in `error`).
#[test]
fn without_nvcc_the_json_report_still_ends_with_build_finished() {
    let out = scratch("no_nvcc").join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_mpkc"))
        .current_dir(root())
        .args(["build", "stdlib/linear_bf16_gemv.mpk", "--instance", "q_a"])
        .args(["--message-format", "json", "--out"])
        .arg(&out)
        .env("NVCC", "/nonexistent/nvcc")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(4), "{}", text(&o.stderr));
    let last = text(&o.stdout);
    let last = last.lines().last().unwrap_or_default();
    let v: serde_json::Value = serde_json::from_str(last).expect("a JSON object");
    assert_eq!(v["reason"], "build-finished", "{last}");
    assert_eq!(v["success"], false, "{last}");
    assert!(
        v["error"].as_str().is_some_and(|e| e.contains("NVCC")),
        "{last}"
    );
    assert!(out.join("linear_bf16_gemv_q_a.cuh").is_file());
}
