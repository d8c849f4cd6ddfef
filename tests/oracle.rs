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
use mpkc::lower::Operands;
use mpkc::sema::SemaOptions;
use mpkc::valid::CheckOptions;
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
    sm100: bool,
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
            let Some(p) = t.linear() else { continue };
            let header = generate(t, &info)
                .into_iter()
                .find(|f| f.kind == FileKind::LayoutHeader)
                .expect("a pipeline unit has a layout header")
                .text;
            out.push(Unit {
                name: t.ir.unit_name(),
                header,
                sm100: t.ir.targets.iter().any(|x| x.target == Target::Sm100a),
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
            "  oracle::check_unit<{l}::Tiles, {}, {}, {}>(\"{}\");\n",
            if u.sm100 {
                format!("{l}::Sm100")
            } else {
                "oracle::None".into()
            },
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
    // -Og: GCC emits fewer of CuTe's inline functions than at -O0 and runs fewer passes than
    // at -O1: a 26-unit program compiles in 27 s (-O1 35 s, -O0 50 s; 2 cores, 2026-12-06) and
    // runs in 0.15 s.
    cmd.arg("-std=c++17")
        .arg("-Xcompiler")
        .arg("-Og")
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
        all.iter().filter(|u| u.scales).count() >= 6
            && all.iter().filter(|u| !u.scales).count() >= 7,
        "the bf16 and fp8 stdlib pipelines: {:?}",
        all.iter().map(|u| &u.name).collect::<Vec<_>>()
    );
    let dir = scratch("oracle_stdlib");
    assert_eq!(assert_all_agree(&dir, batches(all.clone(), 2)), all.len());
}

/// The contract text of a legal variant of a stdlib pipeline: tile N `n`, tile K `bk`, `stages`
/// stages (the SMEM budget allowing), TMEM columns that fit one accumulator slot, and sm_90a as a
/// target while the warpgroup's accumulator registers fit (E0506: N for bf16, 2N for fp8, <= 240).
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
    // One tile per task (I-P6) uses one accumulator slot; a second would be E0014.
    let slots = 1;
    let cols = ((slots * n + stages * sf_cols).max(32) as u64).next_power_of_two();
    // No instances, and no TaskType: the sweep's variants are not wired into MPK, and one build
    // may not give two tasks one TaskType (E0605).
    let mut t: String = text
        .lines()
        .filter(|l| {
            let l = l.trim_start();
            !l.starts_with("instance ") && !l.starts_with("task_id ")
        })
        .collect::<Vec<_>>()
        .join("\n");
    let chunks = if fp8 { bk / 128 } else { bk / 64 };
    let (row, mma_k, eb) = if fp8 { (128, 32, 1) } else { (64, 16, 2) };
    let sm90 = if fp8 { 2 * n <= 240 } else { n <= 240 };
    if !sm90 {
        t = t.replace("targets sm_100a, sm_90a", "targets sm_100a");
    }
    t = t
        .replace(&format!("task {base}"), &format!("task {name}"))
        .replace(
            "tile M 128, N 16, K 128",
            &format!("tile M 128, N {n}, K {bk}"),
        )
        .replace(
            &format!("m128 n16 k{mma_k}"),
            &format!("m128 n{n} k{mma_k}"),
        )
        .replace(
            &format!("box [{row}, 16, {eb}]"),
            &format!("box [{row}, {n}, {chunks}]"),
        )
        .replace(
            &format!("box [{row}, 128, {eb}]"),
            &format!("box [{row}, 128, {chunks}]"),
        )
        .replace("tmem slots 1", &format!("tmem slots {slots}"))
        .replace(
            if fp8 { "tmem cols 64" } else { "tmem cols 32" },
            &format!("tmem cols {cols}"),
        )
        // A task serves at most tile N tokens (E0601).
        .replace(
            "param m_real: int in 1..=16 = 16",
            &format!("param m_real: int in 1..={0} = {0}", n.min(16)),
        )
        .replace(
            "region SF[stage] { bytes 1024;",
            &format!("region SF[stage] {{ bytes {};", 512 * (1 + b_blocks)),
        );
    // The stage count, whatever expression the stdlib contract states (`stages min(4, K / 128)`).
    let t = t
        .lines()
        .map(|l| {
            if l.trim_start().starts_with("stages ") {
                format!("  stages {stages}")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
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

/// The sweep: each legal tile shape the lowering has a branch or a boundary for. CuTe host code costs
/// about 7 s (bf16) or 12 s (fp8) of compile per tile shape here, so every legal tile N for both
/// element types (48 shapes, about eight minutes) is out of budget; instead: bf16 tile N 16 (the
/// house tile), 32, 48, 112, 128, 144, 240 and 256 (mpkc's E0503 takes multiples of 16 for M 128;
/// 128, the weights' box rows too, is bound by the tensors' declared roles, issue 11 C1c),
/// fp8 tile N 8 and 24 (tcgen05.ld .x8), 64, 120 (one 128-token scale block), 136 (two) and 256
/// (the largest MMA-N, with one accumulator slot); tile K 64, 128 and 256 (one, two and four
/// 128-byte rows per operand row); 1 to 6 stages (fp8: 5, three staged regions of at most 16).
fn sweep() -> Vec<Source> {
    let mut out = Vec::new();
    for n in [16, 32, 48, 112, 128, 144, 240, 256] {
        out.push(legal_variant(false, n, 128, stages_for(false, n, 128, 4)));
    }
    for (n, bk, stages) in [(16, 64, 6), (144, 64, 3), (16, 256, 2), (256, 256, 1)] {
        out.push(legal_variant(
            false,
            n,
            bk,
            stages.min(stages_for(false, n, bk, 8)),
        ));
    }
    for (n, stages) in [(8, 1), (24, 3), (64, 4), (120, 5), (136, 2), (256, 1)] {
        out.push(legal_variant(
            true,
            n,
            128,
            stages.min(stages_for(true, n, 128, 8)),
        ));
    }
    out
}

/// The variant with the most stages up to `stages` that `mpkc check` accepts: the byte count of
/// [`stages_for`] does not see the planner's remap, which can put a full page on the partial
/// page 13 when the task follows itself on an SM (E0107).
fn legal_variant(fp8: bool, n: i64, bk: i64, stages: i64) -> Source {
    let clean = |src: &Source| {
        check_sources(
            std::slice::from_ref(src),
            &SemaOptions::default(),
            &CheckOptions::default(),
        )
        .iter()
        .all(|c| !c.has_errors())
    };
    (1..=stages)
        .rev()
        .map(|s| variant(fp8, n, bk, s))
        .find(clean)
        .unwrap_or_else(|| variant(fp8, n, bk, stages))
}

#[test]
fn a_sweep_of_legal_tiles_equals_cutlass() {
    let sources = sweep();
    let all = units(&sources);
    assert_eq!(
        all.len(),
        sources.len(),
        "every sweep contract is one legal unit"
    );
    let dir = scratch("oracle_sweep");
    assert_eq!(assert_all_agree(&dir, batches(all, 2)), sources.len());
}

/// 64-row tiles (an M = 64 tcgen05.mma into TMEM data-path layout F on sm_100a, one m64 wgmma on
/// sm_90a): the example contract's units and two more tiles (64 tokens; K 64, one 128-byte row),
/// their W tile, descriptors, instruction descriptor, accumulator TMEM addresses, tcgen05.ld lanes
/// and wgmma fragment against CuTe's UMMA and GMMA partitions of a 64-row tile.
#[test]
fn sixty_four_row_tiles_equal_cutlass() {
    let path = "examples/linear_bf16_residual_tile64.mpk";
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap();
    let mut sources = vec![Source {
        path: path.into(),
        text: text.clone(),
    }];
    for (n, bk) in [(64, 128), (16, 64)] {
        let t = text
            .replace(
                "task linear_bf16_residual_tile64",
                &format!("task tile64_n{n}_k{bk}"),
            )
            .replace(
                "tile M 64, N 16, K 128",
                &format!("tile M 64, N {n}, K {bk}"),
            )
            .replace("m64 n16 k16", &format!("m64 n{n} k16"))
            .replace("box [64, 16, 2]", &format!("box [64, {n}, {}]", bk / 64))
            .replace("box [64, 64, 2]", &format!("box [64, 64, {}]", bk / 64))
            .replace("tmem cols 32", &format!("tmem cols {}", n.max(32)))
            .replace("stages min(5, K / 128)", "stages 2")
            // The example's TaskType is its own (E0605 for a second task of the build).
            .replace("  task_id 248\n", "");
        sources.push(Source {
            path: format!("sweep/tile64_n{n}_k{bk}.mpk"),
            text: t,
        });
    }
    let all = units(&sources);
    assert_eq!(
        all.len(),
        9,
        "three instances each of the example and its two variants"
    );
    assert!(all.iter().all(|u| u.sm90 && u.sm100));
    let dir = scratch("oracle_tile64");
    assert_eq!(assert_all_agree(&dir, batches(all, 1)), 9);
}

/// Short tiles (sm_90a; fewer weight rows than the m64 wgmma): the example contract's units at 64
/// and 16 tokens (tile N follows them) and two more row counts (8 and 40), their W tile against
/// CuTe's K-major SW128 layout of that many rows, and each wgmma's descriptor against CuTe's for a
/// 64-row, one-chunk tile at its K chunk's base, with CuTe's m64 fragment.
#[test]
fn short_tiles_equal_cutlass() {
    let path = "examples/linear_bf16_short_tile.mpk";
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap();
    let mut sources = Vec::new();
    for (m, rows) in [(64, None), (16, None), (64, Some(8)), (16, Some(40))] {
        let mut t = text
            .replace(
                "task linear_bf16_short_tile",
                &format!("task short_m{m}_r{}", rows.unwrap_or(0)),
            )
            .replace(
                "param m_real: int in 1..=64 = 64",
                &format!("param m_real: int in 1..=64 = {m}"),
            )
            // The example's TaskType is its own (E0605 for a second task of the build).
            .replace("  task_id 251\n", "");
        if let Some(r) = rows {
            t = t
                .replace("tile_rows = 24)", &format!("tile_rows = {r})"))
                .replace("tile_rows = 56)", &format!("tile_rows = {r})"));
        }
        sources.push(Source {
            path: format!("sweep/short_m{m}_r{}.mpk", rows.unwrap_or(0)),
            text: t,
        });
    }
    let all = units(&sources);
    assert_eq!(all.len(), 8, "two instances each of four variants");
    assert!(all.iter().all(|u| u.sm90 && !u.sm100));
    assert!(
        all.iter().all(|u| u.header.contains("BLOCK_M = ")),
        "layout headers name their tile"
    );
    let dir = scratch("oracle_short");
    assert_eq!(assert_all_agree(&dir, batches(all, 1)), 8);
}

/// One way to break a layout header: `to` in place of occurrence `nth` of `from`.
struct Mutation {
    what: String,
    from: String,
    nth: usize,
    to: String,
}

fn mutation(what: &str, from: &str, nth: usize, to: &str) -> Mutation {
    Mutation {
        what: what.to_string(),
        from: from.to_string(),
        nth,
        to: to.to_string(),
    }
}

/// The value of occurrence `nth` of the constant `static constexpr TYPE NAME = 0x…` in `header`,
/// with its text.
fn constant(header: &str, decl: &str, nth: usize) -> (u64, String) {
    let at = header
        .match_indices(decl)
        .nth(nth)
        .unwrap_or_else(|| panic!("no {decl} #{nth} in the header"))
        .0;
    let rest = &header[at + decl.len()..];
    let hex: String = rest.chars().take_while(|c| c.is_ascii_hexdigit()).collect();
    (
        u64::from_str_radix(&hex, 16).unwrap(),
        format!("{decl}{hex}"),
    )
}

/// Each field of each descriptor of `u`, its top bit flipped: the fields' positions from mpkc's
/// field tables (where the descriptor is documented), the values from the header.
fn descriptor_mutations(u: &Unit) -> Vec<Mutation> {
    use mpkc::back::sm100::desc::{
        instr_desc_f16, instr_desc_mxf8f6f4, smem_desc, F16Format, SmemLayout,
    };
    let mut out = Vec::new();
    let mut flip =
        |decl: &str, nth: usize, digits: usize, fields: Vec<mpkc::back::sm100::desc::Field>| {
            let (v, text) = constant(&u.header, decl, nth);
            for f in fields {
                let bad = v ^ (1u64 << (f.lo + f.width - 1));
                out.push(mutation(
                    &format!(
                        "{decl} field {} (bits {}..{})",
                        f.name,
                        f.lo,
                        f.lo + f.width
                    ),
                    &text,
                    0,
                    &format!("{decl}{bad:0digits$X}"),
                ));
            }
        };
    let idesc = if u.scales {
        instr_desc_mxf8f6f4(128, 16).1
    } else {
        instr_desc_f16(F16Format::Bf16, F16Format::Bf16, 128, 16).1
    };
    flip("static constexpr uint32_t I_DESC = 0x", 0, 8, idesc);
    flip(
        "static constexpr uint64_t SMEM_DESC = 0x",
        0,
        16,
        smem_desc(SmemLayout::Swizzle128B, 0, 1024).1,
    );
    if u.scales {
        flip(
            "static constexpr uint64_t SF_DESC = 0x",
            0,
            16,
            smem_desc(SmemLayout::SwizzleNone, 16, 128).1,
        );
    }
    if u.sm90 {
        flip(
            "static constexpr uint64_t SMEM_DESC = 0x",
            1,
            16,
            mpkc::back::sm90::desc::wgmma_smem_desc().1,
        );
    }
    out
}

/// Each term of the layout functions changed in turn (the TMA boxes are not here: the header's
/// own static_asserts reject a wrong box at compile time).
fn term_mutations() -> Vec<Mutation> {
    let a_mma =
        "return stage_desc + (Tiles::a_offset(0, static_cast<uint32_t>(j * Tiles::MMA_K)) >> 4);";
    let a_mma_bad = "return stage_desc + (Tiles::a_offset(0, static_cast<uint32_t>(j * Tiles::MMA_K / 2)) >> 4);";
    vec![
        mutation("operand K-chunk stride", "(k * ELEM_BYTES / 128) * rows * 128", 0, "(k * ELEM_BYTES / 128) * rows * 64"),
        mutation("operand row stride", "r * 128 + (((k", 0, "r * 128 + 16 + (((k"),
        mutation("128-byte swizzle row phase", "((r % 8) * 16)", 0, "((r % 4) * 16)"),
        mutation("128-byte swizzle unit", "% 128) ^", 0, "% 64) ^"),
        mutation("sm100 descriptor start address", "return desc | static_cast<uint64_t>((addr & 0x3FFFFu) >> 4);", 0, "return desc | static_cast<uint64_t>((addr & 0x3FFFFu) >> 3);"),
        mutation("sm100 weight MMA K step", "return stage_desc + (Tiles::w_offset(0, static_cast<uint32_t>(j * Tiles::MMA_K)) >> 4);", 0, "return stage_desc + (Tiles::w_offset(0, static_cast<uint32_t>(j * Tiles::MMA_K / 2)) >> 4);"),
        mutation("sm100 activation MMA K step", a_mma, 0, a_mma_bad),
        mutation("sm100 scale id in the instruction descriptor", "(sf_id(j) << 4)", 0, "(sf_id(j) << 5)"),
        mutation("sm100 scale id of MMA j", "return static_cast<uint32_t>(j % 4);", 0, "return static_cast<uint32_t>((j + 1) % 4);"),
        mutation("accumulator lane", "return (m << 16) +", 0, "return (m << 15) +"),
        // No mutation of the accumulator slot stride (`slot * BLOCK_N`): a pipeline task runs one
        // tile (I-P6) and so declares one slot (a second is E0014), slot is always 0, and such a
        // mutant is equivalent.
        mutation("accumulator column", "static_cast<uint32_t>(slot * Tiles::BLOCK_N) + n;", 0, "static_cast<uint32_t>(slot * Tiles::BLOCK_N) + (n ^ 1);"),
        mutation("tcgen05.ld lane base", "static_cast<uint32_t>(32 * warp)", 0, "static_cast<uint32_t>(16 * warp)"),
        mutation("tcgen05.ld row", "return 32 * warp + lane;", 0, "return 32 * warp + (lane ^ 1);"),
        mutation("tcgen05.ld column", "return c + j;", 0, "return c + (j ^ 1);"),
        mutation("scale SMEM A row", "return 16 * (m % 32) + 4 * (m / 32) + s;", 0, "return 4 * (m % 32) + 16 * (m / 32) + s;"),
        mutation("scale SMEM B word", "4 * (n % 128 / 32)", 0, "4 * (n % 64 / 32)"),
        mutation("scale SMEM B row", "16 * (n % 32)", 0, "16 * (n % 16)"),
        mutation("scale staging: the weight scale in word 0 only (issue 10)", "rows[r] = Row{{wword, wword, wword, wword}};", 0, "rows[r] = Row{{wword, 0u, 0u, 0u}};"),
        mutation("scale staging: token of (row, word)", "int const n = 128 * b + 32 * j + r;", 0, "int const n = 128 * b + 32 * r + j;"),
        mutation("scale staging: padding", "PAD_WORD = 0x7F7F7F7Fu", 0, "PAD_WORD = 0u"),
        mutation("scale staging: byte replication", "ue8m0(ws) * 0x01010101u", 0, "ue8m0(ws) * 0x00000101u"),
        mutation("UE8M0 byte", "return (f32_bits(x) >> 23) & 0xFFu;", 0, "return (f32_bits(x) >> 23) & 0x7Fu;"),
        mutation("UE8M0 exactness", "e != 0u && ", 0, ""),
        mutation("scale TMEM: B after A", "return sfa_tmem(stage) + 4u + ", 0, "return sfa_tmem(stage) + 2u + "),
        mutation("scale TMEM: after the accumulators", "static constexpr uint32_t SF_COL = ", 0, "static constexpr uint32_t SF_COL = -16 + "),
        mutation("scale operand: the scale id in bits 30-31", "return col | (sf_id(j) << 30);", 0, "return col;"),
        mutation("tcgen05.cp source", "return desc_at(SF_DESC, addr);", 0, "return desc_at(SF_DESC, addr + 16);"),
        mutation("sm90 descriptor start address", "return SMEM_DESC | static_cast<uint64_t>((addr & 0x3FFFFu) >> 4);", 0, "return SMEM_DESC | static_cast<uint64_t>((addr & 0x3FFFFu) >> 3);"),
        mutation("sm90 m64 half", "static_cast<uint32_t>(64 * h)", 0, "static_cast<uint32_t>(32 * h)"),
        mutation("sm90 activation MMA K step", a_mma, 1, a_mma_bad),
        mutation("sm90 accumulator registers", "static constexpr int ACC_REGS = ", 0, "static constexpr int ACC_REGS = 2 + "),
        mutation("wgmma fragment row of a lane", "16 * warp + lane / 4", 0, "16 * warp + lane / 8"),
        mutation("wgmma fragment row of a register", "8 * ((i / 2) % 2)", 0, "8 * (i % 2)"),
        mutation("wgmma fragment column of a lane", "2 * (lane % 4)", 0, "2 * (lane % 8)"),
        mutation("wgmma fragment column of a register", "8 * (i / 4)", 0, "4 * (i / 4)"),
    ]
}

/// `u` with `m` applied, renamed `name` so that it coexists with the others in one program; None
/// where the unit has no such term.
fn mutant(u: &Unit, m: &Mutation, name: &str) -> Option<Unit> {
    let (at, _) = u.header.match_indices(&m.from).nth(m.nth)?;
    let mut h = String::with_capacity(u.header.len());
    h.push_str(&u.header[..at]);
    h.push_str(&m.to);
    h.push_str(&u.header[at + m.from.len()..]);
    let h = h.replace(
        &format!("namespace kernel::{}::layout", u.name),
        &format!("namespace kernel::{name}::layout"),
    );
    Some(Unit {
        name: name.to_string(),
        header: h,
        ..u.clone()
    })
}

#[test]
fn every_mutation_of_a_layout_header_fails_the_oracle() {
    let all = units(&stdlib::sources());
    let base: Vec<Unit> = all
        .into_iter()
        .filter(|u| u.name == "linear_sm100_v2" || u.name == "linear_fp8_blockscale_q_b")
        .collect();
    assert_eq!(base.len(), 2);
    let mut program = base.clone();
    // (mutation, the mutant units it made)
    let mut made: Vec<(String, Vec<String>)> = Vec::new();
    let mut all_mutations: Vec<(Option<usize>, Mutation)> =
        term_mutations().into_iter().map(|m| (None, m)).collect();
    for (i, u) in base.iter().enumerate() {
        all_mutations.extend(descriptor_mutations(u).into_iter().map(|m| (Some(i), m)));
    }
    for (k, (only, m)) in all_mutations.iter().enumerate() {
        let mut names = Vec::new();
        for (i, u) in base.iter().enumerate() {
            if only.is_some_and(|o| o != i) {
                continue;
            }
            let name = format!("{}_m{k}", u.name);
            if let Some(x) = mutant(u, m, &name) {
                names.push(name);
                program.push(x);
            }
        }
        assert!(
            !names.is_empty(),
            "mutation `{}` applies to no unit: `{}` not found",
            m.what,
            m.from
        );
        made.push((m.what.clone(), names));
    }
    assert!(made.len() >= 60, "{} mutations", made.len());
    let dir = scratch("oracle_mutants");
    let verdicts = run_oracle(&dir, "mutants", &program);
    for u in &base {
        let v = &verdicts[&u.name];
        assert_eq!(
            v.failures, 0,
            "the unmutated {} fails: {:?}",
            u.name, v.lines
        );
    }
    let survivors: Vec<String> = made
        .iter()
        .filter(|(_, names)| names.iter().all(|n| verdicts[n].failures == 0))
        .map(|(what, names)| format!("{what} ({})", names.join(", ")))
        .collect();
    assert!(
        survivors.is_empty(),
        "the oracle did not notice these changes to the layout headers:\n  {}",
        survivors.join("\n  ")
    );
}

/// The fp8 tiles the scale staging does not lower are E0013 at `check` (the lowering runs there) with a
/// span and a `help:`, not a wrong kernel: a tile K other than 128 (one scale block per stage, four
/// scale ids), and a scale-factor region without room for the 128-token blocks of tile N.
#[test]
fn fp8_tiles_the_scale_staging_cannot_lower_are_e0013() {
    let lowering = |src: Source| {
        let checked = check_sources(
            std::slice::from_ref(&src),
            &SemaOptions::default(),
            &CheckOptions::default(),
        );
        assert!(
            checked[0].tasks.is_empty(),
            "a task the backend cannot lower is not checked clean"
        );
        let d = checked[0]
            .diags
            .iter()
            .find(|d| d.code == "E0013")
            .unwrap_or_else(|| panic!("an E0013 in {:#?}", checked[0].diags))
            .clone();
        (src.text, d)
    };
    let (text, d) = lowering(variant(true, 16, 256, 2));
    assert_eq!(d.code, "E0013");
    assert!(d.message.contains("not tile K 256"), "{}", d.message);
    let s = d.main_span();
    assert!(
        text[s.start..s.end].starts_with("tile M 128, N 16, K 256"),
        "{}",
        &text[s.start..s.end]
    );
    assert!(d.help.as_deref().is_some_and(|h| h.contains("K 128")));
    let mut short = variant(true, 136, 128, 2);
    short.text = short.text.replace(
        "region SF[stage] { bytes 1536;",
        "region SF[stage] { bytes 1024;",
    );
    let (text, d) = lowering(short);
    assert_eq!(d.code, "E0013");
    assert!(
        d.message.contains("1536 bytes for tile N 136, not 1024"),
        "{}",
        d.message
    );
    let s = d.main_span();
    assert!(
        text[s.start..s.end].contains("SF"),
        "{}",
        &text[s.start..s.end]
    );
    assert_eq!(d.help.as_deref(), Some("write `bytes 1536`"));
}
