//! `mpkc roofline` (issue 14, Deliver 4): bytes, tensor-core FLOPs, floors and bounds held
//! against values computed by hand here; the `--json` document's schema; the consumer families'
//! bytes; `--measure` without a driver exits 4 as `mpkc bench` does.

use mpkc::driver::{check_sources_with, stdlib, token_overrides};
use mpkc::roofline::{peaks, row, Bound};
use mpkc::sema::SemaOptions;
use mpkc::valid::CheckedTask;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The stdlib unit `unit` checked with its token count set to `m`.
fn stdlib_at(unit: &str, m: i64) -> CheckedTask {
    check_sources_with(
        &stdlib::sources(),
        |s| SemaOptions {
            overrides: token_overrides(s, m),
            instance: None,
            ..Default::default()
        },
        &Default::default(),
    )
    .into_iter()
    .flat_map(|c| c.tasks)
    .find(|t| t.ir.unit_name() == unit)
    .unwrap_or_else(|| panic!("no stdlib unit {unit}"))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1e-12)
}

/// o_proj, 7168 x 2048 bf16 with the residual add, one token: W 7168·2048·2 = 29,360,128 B,
/// A 2048·2 = 4,096, R and C 7168·2 = 14,336 each: 29,392,896 B (29.4 MB); 2·1·7168·2048 =
/// 29,360,128 FLOPs.
#[test]
fn o_proj_bf16_at_one_token_by_hand() {
    let r = row(
        &stdlib_at("linear_bf16_residual_o_proj", 1),
        &[peaks::H200, peaks::B200],
    );
    assert_eq!(r.m, Some(1));
    assert_eq!(r.bytes, 29_392_896);
    assert_eq!(r.flops, 29_360_128);
    assert!(close(r.intensity, 29_360_128.0 / 29_392_896.0));
    let (h, b) = (&r.floors[0], &r.floors[1]);
    assert_eq!((h.gpu, b.gpu), ("h200", "b200"));
    // 29,392,896 B / 4.8e12 B/s = 6.12352 us; / 4.25e12 = 6.91597553 us; / 8e12 = 3.674112 us.
    assert!(close(h.memory_us, 6.12352), "{}", h.memory_us);
    assert!(
        close(h.copy_us.unwrap(), 29_392_896.0 / 4.25e6),
        "{:?}",
        h.copy_us
    );
    assert!(close(b.memory_us, 3.674112), "{}", b.memory_us);
    assert_eq!(b.copy_us, None);
    // 29,360,128 FLOP / 989e12 = 0.0296866 us; / 2250e12 = 0.0130490 us.
    assert!(close(h.compute_us, 29_360_128.0 / 989e6));
    assert!(close(b.compute_us, 29_360_128.0 / 2250e6));
    assert_eq!((h.bound, b.bound), (Bound::Memory, Bound::Memory));
    assert!(close(h.floor_us, h.memory_us));
    // Ridge points: 989 / 4.8 and 2250 / 8 FLOP per byte.
    assert!(close(h.ridge_flop_per_byte, 989.0 / 4.8));
    assert!(close(b.ridge_flop_per_byte, 2250.0 / 8.0));
}

/// The fp8 o_proj takes the fp8 peak: e4m3 W 7168·2048 + A 2048, f32 scales (56·16 + 16)·4,
/// bf16 C 7168·2.
#[test]
fn fp8_takes_the_fp8_peak() {
    let r = row(
        &stdlib_at("linear_fp8_blockscale_o_proj", 1),
        &[peaks::H200],
    );
    assert_eq!(r.bytes, 7168 * 2048 + 2048 + (56 * 16 + 16) * 4 + 7168 * 2);
    assert_eq!(r.flops, 2 * 7168 * 2048);
    assert!(close(r.floors[0].compute_us, r.flops as f64 / 1979e6));
}

/// Whichever of bytes / bandwidth and FLOPs / peak is longer is the floor and names the bound:
/// 1 MB and 1 TFLOP of bf16 on the H200 is compute-bound (1e12 / 989e12 s); 8 MB and no FLOPs on
/// the B200 is memory-bound at exactly 1 us.
#[test]
fn the_longer_time_names_the_bound() {
    let f = mpkc::roofline::floor(
        &peaks::H200,
        1_000_000,
        1_000_000_000_000,
        Some(mpkc::traffic::MathKind::Bf16),
    );
    assert_eq!(f.bound, Bound::Compute);
    assert!(close(f.floor_us, 1e12 / 989e6));
    let f = mpkc::roofline::floor(&peaks::B200, 8_000_000, 0, None);
    assert_eq!(f.bound, Bound::Memory);
    assert!(close(f.floor_us, 1.0));
}

/// The consumer families get bytes (every input and output tensor once; a gather only the
/// table rows it reads) and no tensor-core FLOPs, so they are memory-bound.
#[test]
fn consumer_families_count_their_tensors() {
    // rmsnorm over 7168: x, w and y, bf16.
    let r = row(&stdlib_at("rmsnorm_v2_h7168", 1), &[peaks::H200]);
    assert_eq!(r.bytes, 3 * 7168 * 2);
    assert_eq!((r.flops, r.math), (0, None));
    assert_eq!(r.floors[0].bound, Bound::Memory);
    // silu_mul over 2048: x = [gate | up] 4096 in, y 2048 out, bf16.
    let r = row(&stdlib_at("silu_mul_v2", 16), &[peaks::H200]);
    assert_eq!(r.bytes, 16 * (4096 + 2048) * 2);
    assert_eq!(r.m, Some(16));
    // The embedding reads one 7168-wide bf16 row per token, not its 16160-row table.
    let r = row(&stdlib_at("embedding_v2", 2), &[peaks::H200]);
    assert_eq!(r.bytes, 2 * 4 + 2 * 7168 * 2 + 2 * 7168 * 2);
}

/// An `inout` tensor is read and written back in place, so it counts twice (add_rmsnorm's
/// residual: x, residual in and out, w, y); a paged one (the KV cache kv_append writes into)
/// once.
#[test]
fn inout_tensors_count_read_and_write() {
    let r = row(&stdlib_at("add_rmsnorm", 1), &[peaks::H200]);
    assert_eq!(r.bytes, 5 * 7168 * 2);
    let t = stdlib_at("kv_append", 1);
    let ckv =
        t.ir.tensors
            .iter()
            .find(|(_, x)| x.name == "ckv")
            .unwrap()
            .1;
    assert!(ckv.paged.is_some());
    let cache = ckv.dims.iter().product::<i64>() as u64 * 2;
    let r = row(&t, &[peaks::H200]);
    assert!(
        r.bytes >= cache && r.bytes < 2 * cache,
        "{} vs {cache}",
        r.bytes
    );
}

/// A measured time sits beside the floor of the GPU it ran on, with the floor's share of it.
#[test]
fn a_measurement_gets_the_share_of_its_gpus_floor() {
    let mut r = row(
        &stdlib_at("linear_bf16_residual_o_proj", 1),
        &[peaks::H200, peaks::B200],
    );
    let floor = r.floors[0].floor_us;
    r.measure("NVIDIA H200", "linear_bf16_residual_o_proj", floor * 2.0);
    let m = r.measured.as_ref().unwrap();
    assert_eq!(m.against, Some("h200"));
    assert!(close(m.floor_share.unwrap(), 0.5));
    assert!(close(
        m.copy_share.unwrap(),
        r.floors[0].copy_us.unwrap() / (floor * 2.0)
    ));
    // A device that is neither: the time is kept, with no share.
    r.measure("NVIDIA A100-SXM4-80GB", "x", 10.0);
    let m = r.measured.as_ref().unwrap();
    assert_eq!((m.against, m.floor_share), (None, None));
}

fn mpkc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mpkc"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn is_number(v: &serde_json::Value) -> bool {
    v.is_number()
}

/// The `--json` document: its fields and their types for every row and GPU (docs/roofline.md).
#[test]
fn json_schema() {
    let o = mpkc(&["roofline", "--m", "1,16", "--json"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["schema"], "mpkc-roofline/1");
    assert!(v["tool"].as_str().unwrap().starts_with("mpkc "));
    let gpus = v["gpus"].as_array().unwrap();
    assert_eq!(gpus.len(), 2);
    for g in gpus {
        for k in ["hbm_tb_per_s", "bf16_tflops", "fp8_tflops"] {
            assert!(is_number(&g[k]), "{k}: {g}");
        }
        assert!(g["copy_tb_per_s"].is_null() || is_number(&g["copy_tb_per_s"]));
    }
    let rows = v["rows"].as_array().unwrap();
    assert!(rows.len() > 20, "{} rows", rows.len());
    let keys = [
        "unit",
        "family",
        "m",
        "bytes",
        "flops",
        "math",
        "intensity",
        "floors",
        "measured",
    ];
    for r in rows {
        let obj = r.as_object().unwrap();
        assert_eq!(
            obj.keys().collect::<Vec<_>>(),
            keys.iter().collect::<Vec<_>>()
        );
        assert!(r["unit"].is_string() && r["family"].is_string());
        assert!(r["m"].is_null() || r["m"].is_i64());
        assert!(r["bytes"].as_u64().unwrap() > 0, "{r}");
        assert!(r["flops"].is_u64() && is_number(&r["intensity"]));
        assert!(r["math"].is_null() || matches!(r["math"].as_str(), Some("bf16" | "fp8")));
        assert!(r["measured"].is_null());
        let floors = r["floors"].as_array().unwrap();
        assert_eq!(floors.len(), 2);
        for f in floors {
            for k in ["memory_us", "compute_us", "floor_us", "ridge_flop_per_byte"] {
                assert!(is_number(&f[k]), "{k}: {f}");
            }
            assert!(matches!(f["bound"].as_str(), Some("memory" | "compute")));
            assert!(matches!(f["gpu"].as_str(), Some("h200" | "b200")));
        }
    }
    // Both M for a unit that takes tokens.
    let o_proj: Vec<i64> = rows
        .iter()
        .filter(|r| r["unit"] == "linear_bf16_residual_o_proj")
        .map(|r| r["m"].as_i64().unwrap())
        .collect();
    assert_eq!(o_proj, [1, 16]);
    // Skipped: only the FMA GEMVs at 16 tokens (they take up to 4: their FMA work grows with
    // the tokens, stdlib/linear_bf16_gemv.mpk, stdlib/linear_fp8_gemv.mpk), with the checker's
    // reason.
    let skipped = v["skipped"].as_array().unwrap();
    let files: Vec<&str> = skipped
        .iter()
        .map(|s| s["file"].as_str().unwrap())
        .collect();
    assert_eq!(
        files,
        ["stdlib/linear_bf16_gemv.mpk", "stdlib/linear_fp8_gemv.mpk"],
        "{skipped:?}"
    );
    for s in skipped {
        assert_eq!(s["m"], 16);
        assert!(s["reason"].as_str().unwrap().starts_with("E0006"), "{s:?}");
    }
}

#[test]
fn table_names_the_floor_and_bound() {
    let o = mpkc(&[
        "roofline",
        "stdlib/linear_bf16_residual.mpk",
        "--instance",
        "o_proj",
        "--m",
        "1",
        "--gpu",
        "h200",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let s = String::from_utf8(o.stdout).unwrap();
    let line = s
        .lines()
        .find(|l| l.starts_with("linear_bf16_residual_o_proj"))
        .unwrap_or_else(|| panic!("{s}"));
    assert!(line.contains("29.39 MB"), "{line}");
    assert!(line.contains("6.12 memory"), "{line}");
    assert!(line.contains("6.92"), "{line}");
    assert!(!s.contains("b200 us"), "{s}");
    assert!(s.lines().all(|l| l == l.trim_end()), "trailing spaces");
}

#[test]
fn an_m_a_contract_cannot_take_is_skipped_with_the_reason() {
    let o = mpkc(&["roofline", "stdlib/rmsnorm_v2.mpk", "--m", "64", "--json"]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["rows"].as_array().unwrap().is_empty());
    let k = &v["skipped"][0];
    assert_eq!(k["m"], 64);
    assert!(k["reason"].as_str().unwrap().contains("E0006"), "{k}");
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

/// With every name of the driver an empty file ahead of the system's (so a real driver is never
/// reached, even on a GPU machine), `--measure` says so and exits 4, as `mpkc bench` does.
#[test]
fn measure_without_a_driver_exits_4() {
    let hide = scratch_dir("roofline_no_libcuda");
    for lib in ["cuda", "nvcuda"] {
        for name in cudarc::get_lib_name_candidates(lib) {
            std::fs::write(hide.join(name), b"").unwrap();
        }
    }
    let o = Command::new(env!("CARGO_BIN_EXE_mpkc"))
        .args(["roofline", "--measure", "--m", "1"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("LD_LIBRARY_PATH", library_path_with(&hide))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(4), "{err}");
    assert!(
        err.contains("mpkc roofline --measure needs a GPU: no CUDA driver"),
        "{err}"
    );
    assert!(o.stdout.is_empty());
}
