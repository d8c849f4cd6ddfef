//! Static evidence that the sm_100a pipeline kernels are what their contracts claim (no B200
//! runs here; design.md, "sm_100a without a B200"): the SASS holds the tcgen05 MMA, the commit,
//! the TMA loads and the TMEM loads; ptxas reports no spills and no stack; the descriptors equal
//! MPK's known values; SMEM is addressed only through the planned regions; and changing the
//! stage count or tile N regenerates a kernel that still passes every check.

use mpkc::back::FileKind;
use mpkc::driver::build::{compile_all, generate_all, write_all};
use mpkc::driver::{check_sources, nvcc, stdlib, Checked, Source};
use mpkc::ir::Target;
use mpkc::sema::SemaOptions;
use mpkc::valid::CheckOptions;
use std::path::PathBuf;

fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Builds `sources`, asserting every pipeline unit's sm_100a cubin holds the instructions.
fn build_and_inspect(sources: &[Source], dir: &str) -> usize {
    let tc = nvcc::find().unwrap_or_else(|e| panic!("{e}"));
    let checked: Vec<Checked> =
        check_sources(sources, &SemaOptions::default(), &CheckOptions::default());
    for c in &checked {
        assert!(!c.has_errors(), "{}: {:#?}", c.source.path, c.diags);
    }
    let units = generate_all(&checked);
    let out = scratch(dir);
    write_all(&out, &units).unwrap();
    let jobs = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut pipelines = 0;
    for j in compile_all(&tc, &out, &checked, &units, jobs) {
        let u = &units[j.unit];
        let (cubin, report) = j
            .result
            .unwrap_or_else(|f| panic!("{}: {}\n{}", u.unit, f.command, f.stderr));
        assert_eq!(
            (report.spill_stores, report.spill_loads, report.stack_bytes),
            (0, 0, 0),
            "{} {}: {report:?}",
            u.unit,
            j.target
        );
        let task = &checked[u.source].tasks[u.task];
        if task.pipeline.is_some() && j.target == Target::Sm90a {
            inspect_sm90(
                &tc.sass(&cubin).unwrap_or_else(|e| panic!("cuobjdump: {e}")),
                task,
                &u.unit,
            );
        }
        if task.pipeline.is_none() || j.target != Target::Sm100a {
            continue;
        }
        pipelines += 1;
        let sass = tc.sass(&cubin).unwrap_or_else(|e| panic!("cuobjdump: {e}"));
        let p = task.pipeline.as_ref().unwrap();
        // kind::f16 issues as UTCHMMA; kind::mxf8f6f4.block_scale as UTCQMMA with UTCCP scale copies.
        let (mma, extra) = match p.operands {
            mpkc::valid::Operands::Bf16 => ("UTCHMMA", None),
            mpkc::valid::Operands::Fp8BlockScale { .. } => ("UTCQMMA", Some("UTCCP")),
        };
        for op in [
            mma,
            "UTCBAR",
            "UTMALDG.3D",
            "LDTM",
            "SYNCS.ARRIVE.TRANS64",
            "UTCATOMSWS",
            "ELECT",
        ]
        .into_iter()
        .chain(extra)
        {
            assert!(sass.contains(op), "{} sm_100a: no {op} in the SASS", u.unit);
        }
        let mmas = sass.matches(mma).count() as i64;
        let per_stage = p.block_k / p.mma_k;
        assert!(
            mmas >= per_stage && mmas % per_stage == 0,
            "{}: {mmas} UTCHMMA, not whole stages of {per_stage} (unrolled)",
            u.unit
        );
    }
    pipelines
}

/// The sm_90a lowering: wgmma as HGMMA (bf16) or QGMMA (e4m3, Hopper's fp8 wgmma), the TMA
/// loads, the transaction barriers; no tcgen05 (UTC*) instruction and no TMEM load.
fn inspect_sm90(sass: &str, task: &mpkc::valid::CheckedTask, unit: &str) {
    let p = task.pipeline.as_ref().unwrap();
    let (mma, shape) = match p.operands {
        mpkc::valid::Operands::Bf16 => ("HGMMA", format!("HGMMA.64x{}x16.F32.BF16", p.block_n)),
        mpkc::valid::Operands::Fp8BlockScale { .. } => {
            ("QGMMA", format!("QGMMA.64x{}x32.F32.E4M3.E4M3", p.block_n))
        }
    };
    for op in [
        shape.as_str(),
        "UTMALDG.3D",
        "SYNCS.ARRIVE.TRANS64",
        "SYNCS.PHASECHK.TRANS64",
    ] {
        assert!(sass.contains(op), "{unit} sm_90a: no {op} in the SASS");
    }
    for absent in ["UTCHMMA", "UTCQMMA", "UTCBAR", "LDTM"] {
        assert!(
            !sass.contains(absent),
            "{unit} sm_90a: {absent} (a tcgen05 instruction) in the SASS"
        );
    }
    // Two m64 halves per wgmma K step: 2 x BLOCK_K / MMA_K per stage, unrolled.
    let n = sass.matches(mma).count() as i64;
    let per_stage = 2 * p.block_k / p.mma_k;
    assert!(
        n >= per_stage && n % per_stage == 0,
        "{unit}: {n} {mma}, not whole stages of {per_stage}"
    );
}

#[test]
fn stdlib_pipelines_hold_tcgen05_tma_and_tmem_instructions() {
    let n = build_and_inspect(&stdlib::sources(), "sass_stdlib");
    assert!(n >= 12, "every stdlib pipeline unit was inspected ({n})");
}

#[test]
fn house_linear_descriptors_are_mpks() {
    let checked = check_sources(
        &stdlib::sources(),
        &SemaOptions::default(),
        &CheckOptions::default(),
    );
    let units = generate_all(&checked);
    let cuh = units
        .iter()
        .find(|u| u.unit == "linear_sm100_v2")
        .and_then(|u| u.files.iter().find(|f| f.kind == FileKind::Kernel))
        .expect("the house linear has a kernel");
    assert!(
        cuh.text
            .contains("constexpr uint32_t I_DESC = 0x08040490u;"),
        "instruction descriptor"
    );
    assert!(
        cuh.text
            .contains("constexpr uint64_t SMEM_DESC = 0x4000404000000000ull;"),
        "SMEM descriptor"
    );
    assert!(
        cuh.text
            .contains("constexpr uint32_t W_STAGE_TX_BYTES = 32768;")
            && cuh
                .text
                .contains("constexpr uint32_t A_STAGE_TX_BYTES = 4096;"),
        "expect_tx of MPK's linear"
    );
}

/// Every address into the dynamic SMEM of a generated kernel comes from a planned region.
#[test]
fn kernels_address_smem_only_through_planned_regions() {
    let checked = check_sources(
        &stdlib::sources(),
        &SemaOptions::default(),
        &CheckOptions::default(),
    );
    for u in generate_all(&checked) {
        for f in u.files.iter().filter(|f| f.kind == FileKind::Kernel) {
            // `smem` is the dynamic SMEM base; offsets inside a region (`sf_smem + 512`) are the region's own.
            for (i, _) in f.text.match_indices("smem + ").filter(|(i, _)| {
                !f.text[..*i].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
            }) {
                let rest = &f.text[i + 7..];
                assert!(
                    rest.starts_with("task_desc->smem_region_offset(REGION_"),
                    "{}: hand-rolled SMEM offset: {}",
                    f.name,
                    &rest[..rest.len().min(60)]
                );
            }
            let indexed = f
                .text
                .lines()
                .any(|l| l.contains("smem[") && !l.contains("extern __shared__"));
            assert!(!indexed, "{}: indexes the SMEM base directly", f.name);
        }
    }
}

/// Changing the stage count or the tile N of the house linear regenerates a kernel that passes
/// every check, compiles without spills, and holds the instructions.
#[test]
fn stage_count_and_tile_n_variants_still_check_and_compile() {
    let base = stdlib::CONTRACTS
        .iter()
        .find(|(p, _)| p.ends_with("linear_sm100_v2.mpk"))
        .unwrap()
        .1;
    let mut sources = Vec::new();
    for (stages, n, cols) in [(2, 16, 32), (4, 16, 32), (3, 32, 64), (2, 64, 128)] {
        let text = base
            .replace(
                "task linear_sm100_v2",
                &format!("task linear_s{stages}_n{n}"),
            )
            .replace("stages 6", &format!("stages {stages}"))
            .replace(
                "tile M 128, N 16, K 128",
                &format!("tile M 128, N {n}, K 128"),
            )
            .replace("m128 n16 k16", &format!("m128 n{n} k16"))
            .replace("box [64, 16, 2]", &format!("box [64, {n}, 2]"))
            .replace("tmem cols 32", &format!("tmem cols {cols}"));
        sources.push(Source {
            path: format!("variants/linear_s{stages}_n{n}.mpk"),
            text,
        });
    }
    assert_eq!(build_and_inspect(&sources, "sass_variants"), 4);
}
