//! The layout oracle (issue 10): every number the pipeline kernels compute about where data lives —
//! instruction and SMEM descriptors per MMA, the swizzled SMEM offset of every operand element, the
//! fp8 scale-factor blocks in SMEM and (after tcgen05.cp) in TMEM, the TMEM address of every
//! accumulator element and the tcgen05.ld / wgmma fragments — compared with what CUTLASS's CuTe
//! derives for the same tile, for each stdlib pipeline unit and a sweep of legal tiles, on both
//! targets. No GPU: the sm_100a kernels cannot run here, so this is their evidence.
//!
//! Design: the backends emit that math as `__host__ __device__` constexpr functions in the host-safe
//! `<unit>_layout.h` that both kernels include and use (src/back/layout/); the host programs built
//! here (tests/oracle/oracle.hpp, compiled with the .toolchain nvcc as C++17 against the CUTLASS
//! 4.2.0 headers scripts/setup installs) include those very headers and compare them with CuTe. A
//! few programs hold all the units (CuTe host code is slow to compile); each prints one
//! `UNIT <name> checks <n> failures <m>` line. The mutation test proves the comparison can fail:
//! each descriptor field and each layout term changed in turn makes it fail.

use mpkc::back::{generate, ContractInfo, FileKind};
use mpkc::driver::{check_sources, nvcc, stdlib, Source};
use mpkc::ir::Target;
use mpkc::sema::SemaOptions;
use mpkc::valid::{CheckOptions, Operands};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// CUTLASS's headers (PyPI nvidia-cutlass 4.2.0.0, installed by scripts/setup).
fn cutlass_include() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(".toolchain/cutlass/cutlass_library/source/include");
    assert!(
        p.join("cute/tensor.hpp").is_file(),
        "CUTLASS's headers are not in {}: run scripts/setup (pip install --no-deps nvidia-cutlass==4.2.0.0 into .toolchain/cutlass)",
        p.display()
    );
    p
}

fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// One pipeline unit's layout header and what it declares.
#[derive(Clone, Debug)]
struct Unit {
    name: String,
    header: String,
    sm90: bool,
    scales: bool,
}

/// The pipeline units of `sources`, which must check clean and lower.
fn units(sources: &[Source]) -> Vec<Unit> {
    let checked = check_sources(sources, &SemaOptions::default(), &CheckOptions::default());
    let mut out = Vec::new();
    for c in &checked {
        assert!(!c.has_errors(), "{}: {:#?}", c.source.path, c.diags);
        let info = ContractInfo::new(&c.source.path, &c.source.text);
        for t in &c.tasks {
            assert!(
                t.lowering_errors.is_empty(),
                "{}: {:#?}",
                t.ir.unit_name(),
                t.lowering_errors
            );
            let Some(p) = &t.pipeline else { continue };
            let header = generate(t, &info)
                .into_iter()
                .find(|f| f.kind == FileKind::LayoutHeader)
                .expect("a pipeline unit has a layout header")
                .text;
            out.push(Unit {
                name: t.ir.unit_name(),
                header,
                sm90: t.ir.targets.iter().any(|x| x.target == Target::Sm90a),
                scales: matches!(p.operands, Operands::Fp8BlockScale { .. }),
            });
        }
    }
    out
}

/// What the oracle said about one unit.
#[derive(Debug, Default)]
struct Verdict {
    checks: u64,
    failures: u64,
    lines: Vec<String>,
}

/// Writes `units` and a program checking each into `dir`, compiles it with nvcc as C++17 host code
/// against CUTLASS, runs it and returns its verdict per unit.
fn run_oracle(dir: &Path, name: &str, units: &[Unit]) -> BTreeMap<String, Verdict> {
    let tc = nvcc::find().unwrap_or_else(|e| panic!("{e}"));
    let mut cpp = String::from("#include \"oracle.hpp\"\n");
    for u in units {
        let file = format!("{}_layout.h", u.name);
        std::fs::write(dir.join(&file), &u.header).unwrap();
        cpp.push_str(&format!("#include \"{file}\"\n"));
    }
    cpp.push_str("int main() {\n");
    for u in units {
        let l = format!("kernel::{}::layout", u.name);
        cpp.push_str(&format!(
            "  oracle::check_unit<{l}::Tiles, {l}::Sm100, {}, {}>(\"{}\");\n",
            if u.sm90 {
                format!("{l}::Sm90")
            } else {
                "oracle::None".into()
            },
            if u.scales {
                format!("{l}::Scales")
            } else {
                "oracle::None".into()
            },
            u.name
        ));
    }
    cpp.push_str("  return 0;\n}\n");
    let src = dir.join(format!("{name}.cpp"));
    std::fs::write(&src, cpp).unwrap();
    let exe = dir.join(name);
    let oracle_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oracle");
    let mut cmd = Command::new(&tc.nvcc);
    cmd.arg("-std=c++17")
        .arg("-I")
        .arg(cutlass_include())
        .arg("-I")
        .arg(&oracle_dir)
        .arg("-I")
        .arg(dir);
    for inc in &tc.includes {
        cmd.arg("-I").arg(inc);
    }
    let out = cmd.arg("-o").arg(&exe).arg(&src).output().unwrap();
    assert!(
        out.status.success(),
        "{name}: nvcc failed\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&exe).output().unwrap();
    assert!(
        run.status.success(),
        "{name}: the oracle crashed\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let text = String::from_utf8_lossy(&run.stdout).into_owned();
    let mut verdicts: BTreeMap<String, Verdict> = BTreeMap::new();
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["UNIT", unit, "checks", n, "failures", f] => {
                let v = verdicts.entry(unit.to_string()).or_default();
                v.checks = n.parse().unwrap();
                v.failures = f.parse().unwrap();
            }
            ["FAIL", unit, ..] => verdicts
                .entry(unit.to_string())
                .or_default()
                .lines
                .push(line.to_string()),
            _ => {}
        }
    }
    for u in units {
        assert!(
            verdicts.get(&u.name).is_some_and(|v| v.checks > 0),
            "{name}: no verdict for {}:\n{text}",
            u.name
        );
    }
    verdicts
}

/// Runs batches of units in parallel (one nvcc each) and asserts every unit agrees with CUTLASS.
fn assert_all_agree(dir: &Path, batches: Vec<Vec<Unit>>) -> usize {
    let n: usize = batches.iter().map(Vec::len).sum();
    let results: Vec<BTreeMap<String, Verdict>> = std::thread::scope(|s| {
        let handles: Vec<_> = batches
            .iter()
            .enumerate()
            .map(|(i, b)| s.spawn(move || run_oracle(dir, &format!("batch{i}"), b)))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut bad = Vec::new();
    for (unit, v) in results.iter().flatten() {
        if v.failures > 0 {
            bad.push(format!(
                "{unit}: {} of {} checks differ from CUTLASS\n  {}",
                v.failures,
                v.checks,
                v.lines.join("\n  ")
            ));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    n
}

/// Splits `units` into `k` batches of about equal size.
fn batches(units: Vec<Unit>, k: usize) -> Vec<Vec<Unit>> {
    let mut out: Vec<Vec<Unit>> = (0..k).map(|_| Vec::new()).collect();
    for (i, u) in units.into_iter().enumerate() {
        out[i % k].push(u);
    }
    out.retain(|b| !b.is_empty());
    out
}

#[test]
fn every_stdlib_pipeline_layout_equals_cutlass() {
    let all = units(&stdlib::sources());
    assert!(
        all.iter().filter(|u| u.scales).count() >= 6 && all.iter().filter(|u| !u.scales).count() >= 7,
        "the bf16 and fp8 stdlib pipelines: {:?}",
        all.iter().map(|u| &u.name).collect::<Vec<_>>()
    );
    let dir = scratch("oracle_stdlib");
    assert_eq!(assert_all_agree(&dir, batches(all.clone(), 2)), all.len());
}

/// The contract text of a legal variant of a stdlib pipeline: tile N `n`, tile K `bk`, `stages`
/// stages (the SMEM budget allowing), TMEM columns and accumulator slots that fit.
fn variant(fp8: bool, n: i64, bk: i64, stages: i64) -> Source {
    let (base, path) = if fp8 {
        ("linear_fp8_blockscale", "stdlib/linear_fp8_blockscale.mpk")
    } else {
        ("linear_sm100_v2", "stdlib/linear_sm100_v2.mpk")
    };
    let text = stdlib::CONTRACTS
        .iter()
        .find(|(p, _)| *p == path)
        .unwrap()
        .1;
    let name = format!("{base}_n{n}_k{bk}_s{stages}");
    let b_blocks = (n + 127) / 128;
    let sf_cols = if fp8 { 4 * (1 + b_blocks) } else { 0 };
    let slots = if 2 * n + stages * sf_cols <= 512 { 2 } else { 1 };
    let cols = ((slots * n + stages * sf_cols).max(32) as u64).next_power_of_two();
    let mut t: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("instance "))
        .collect::<Vec<_>>()
        .join("\n");
    let chunks = if fp8 { bk / 128 } else { bk / 64 };
    let (row, mma_k) = if fp8 { (128, 32) } else { (64, 16) };
    t = t
        .replace(&format!("task {base}"), &format!("task {name}"))
        .replace("tile M 128, N 16, K 128", &format!("tile M 128, N {n}, K {bk}"))
        .replace(&format!("m128 n16 k{mma_k}"), &format!("m128 n{n} k{mma_k}"))
        .replace(
            &format!("box [{row}, 16, {}]", 128 * if fp8 { 1 } else { 2 } / row),
            &format!("box [{row}, {n}, {chunks}]"),
        )
        .replace(
            &format!("box [{row}, 128, {}]", 128 * if fp8 { 1 } else { 2 } / row),
            &format!("box [{row}, 128, {chunks}]"),
        )
        .replace("tmem slots 2", &format!("tmem slots {slots}"))
        .replace(
            if fp8 { "tmem cols 64" } else { "tmem cols 32" },
            &format!("tmem cols {cols}"),
        )
        .replace(
            if fp8 { "stages 4" } else { "stages 6" },
            &format!("stages {stages}"),
        )
        .replace(
            "region SF[stage] { bytes 1024;",
            &format!("region SF[stage] {{ bytes {};", 512 * (1 + b_blocks)),
        );
    Source {
        path: format!("sweep/{name}.mpk"),
        text: t,
    }
}

/// The most stages (up to `cap`) whose W and A stages fit the 14 pages of 16 KB with room for the
/// scale factors and the scratch region.
fn stages_for(fp8: bool, n: i64, bk: i64, cap: i64) -> i64 {
    let eb = if fp8 { 1 } else { 2 };
    let w = 128 * bk * eb;
    let a = (n * bk * eb).max(1024);
    let per = w + a + if fp8 { 2048 } else { 0 };
    ((200 * 1024) / per).clamp(1, cap)
}

#[test]
fn a_sweep_of_legal_tiles_equals_cutlass() {
    let mut sources = Vec::new();
    for fp8 in [false, true] {
        for n in (8..=256).step_by(8) {
            let stages = stages_for(fp8, n, 128, if n % 16 == 0 { 4 } else { 3 });
            sources.push(variant(fp8, n, 128, stages));
        }
    }
    // K per stage (bf16: one to four 128-byte rows per operand row) and stage counts.
    for (n, bk, stages) in [(8, 64, 2), (16, 64, 6), (136, 64, 3), (16, 256, 2), (64, 256, 1), (256, 256, 1), (24, 128, 1), (16, 128, 6)] {
        sources.push(variant(false, n, bk, stages.min(stages_for(false, n, bk, 8))));
    }
    for (n, stages) in [(16, 1), (16, 6), (136, 2), (256, 1)] {
        sources.push(variant(true, n, 128, stages.min(stages_for(true, n, 128, 8))));
    }
    let all = units(&sources);
    assert_eq!(all.len(), sources.len(), "every sweep contract is one legal unit");
    let dir = scratch("oracle_sweep");
    assert_eq!(assert_all_agree(&dir, batches(all, 4)), sources.len());
}
