//! Builds that outgrow one machine (README, "Building"): mpkc's nvcc compiles run through
//! sccache (`MPKC_NVCC_WRAPPER`), whose local server here stands in for a build farm's. A local
//! sccache server with its own cache folder and port builds one stdlib contract twice with
//! mpkc's own cache off; the second build's compiles must all be sccache hits, with the same
//! cubins and the same ptxas report (sccache replays nvcc's stderr).
//!
//! sccache: `$MPKC_SCCACHE`, else `.toolchain/sccache/bin/sccache` (scripts/setup), else `sccache`
//! on PATH. Without one the test says so and passes, unless `MPKC_REQUIRE_SCCACHE` is set
//! (scripts/test sets it: there a missing sccache fails).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn find_sccache() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("MPKC_SCCACHE").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let local = root().join(".toolchain/sccache/bin/sccache");
    if local.is_file() {
        return Some(local);
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join("sccache"))
        .find(|p| p.is_file())
}

/// A local sccache server; stopped when dropped (also when the test fails).
struct Server {
    exe: PathBuf,
    env: Vec<(String, String)>,
}

impl Server {
    fn command(&self) -> Command {
        let mut c = Command::new(&self.exe);
        c.env_remove("RUSTC_WRAPPER")
            .env_remove("SCCACHE_LOG")
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        c
    }

    /// `sccache --show-stats --stats-format json`'s `stats`.
    fn stats(&self) -> serde_json::Value {
        let o = self
            .command()
            .args(["--show-stats", "--stats-format", "json"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stdout)));
        v["stats"].clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.command().arg("--stop-server").output();
    }
}

/// The sum of a `{"counts": {language: n}}` statistic.
fn total(stat: &serde_json::Value) -> u64 {
    stat["counts"]
        .as_object()
        .map_or(0, |m| m.values().filter_map(|v| v.as_u64()).sum())
}

fn tree(d: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(d)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect()
}

fn kernels(o: &Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["reason"] == "kernel")
        .map(|mut v| {
            v.as_object_mut().unwrap().remove("cubin");
            v
        })
        .collect()
}

#[test]
fn nvcc_through_sccache_hits_on_the_second_build() {
    let Some(exe) = find_sccache() else {
        assert!(
            std::env::var_os("MPKC_REQUIRE_SCCACHE").is_none(),
            "MPKC_REQUIRE_SCCACHE is set and there is no sccache: run scripts/setup"
        );
        eprintln!("no sccache (scripts/setup installs it): not tested");
        return;
    };
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("sccache");
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    std::fs::write(d.join("config"), "").unwrap();
    let server = Server {
        exe: exe.clone(),
        env: vec![
            ("SCCACHE_DIR".into(), d.join("cache").display().to_string()),
            ("SCCACHE_SERVER_PORT".into(), port.to_string()),
            (
                "SCCACHE_CONF".into(),
                d.join("config").display().to_string(),
            ),
            ("SCCACHE_IDLE_TIMEOUT".into(), "600".into()),
            (
                "SCCACHE_ERROR_LOG".into(),
                d.join("server.log").display().to_string(),
            ),
        ],
    };
    let started = server.command().arg("--start-server").output().unwrap();
    assert!(
        started.status.success(),
        "{} --start-server: {}",
        exe.display(),
        String::from_utf8_lossy(&started.stderr)
    );
    let out = d.join("out");
    let build = || {
        let o = Command::new(env!("CARGO_BIN_EXE_mpkc"))
            .current_dir(root())
            .args(["build", "stdlib/silu_mul_v2.mpk", "--no-cache"])
            .args(["--message-format", "json", "--out"])
            .arg(&out)
            .env("MPKC_NVCC_WRAPPER", &exe)
            .envs(server.env.iter().map(|(k, v)| (k, v)))
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}\n{}\nserver log: {}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr),
            std::fs::read_to_string(d.join("server.log")).unwrap_or_default()
        );
        o
    };
    let first = build();
    let first_tree = tree(&out);
    let before = server.stats();
    assert_eq!(before["compile_requests"].as_u64(), Some(2), "{before}");
    let second = build();
    let after = server.stats();
    assert_eq!(
        after["compile_requests"].as_u64(),
        Some(4),
        "both nvcc compiles went through sccache: {after}"
    );
    // sccache splits each nvcc run into its steps (`nvcc --dryrun`): the host preprocessing
    // runs every time; cicc (PTX) and ptxas (CUBIN) are cached.
    let misses = total(&after["cache_misses"]) - total(&before["cache_misses"]);
    assert_eq!(misses, 0, "nothing compiled again: {after}");
    for step in ["PTX", "CUBIN"] {
        let hits = |s: &serde_json::Value| s["cache_hits"]["counts"][step].as_u64().unwrap_or(0);
        assert_eq!(
            hits(&after) - hits(&before),
            2,
            "both kernels' {step} from sccache's cache: {after}"
        );
    }
    assert!(tree(&out) == first_tree, "the same cubins");
    let (k1, k2) = (kernels(&first), kernels(&second));
    assert_eq!(k1.len(), 2);
    assert_eq!(k1, k2, "the same ptxas report, replayed by sccache");
    assert!(
        k2.iter().all(|k| k["registers"].as_u64() > Some(0)),
        "{k2:?}"
    );
}
