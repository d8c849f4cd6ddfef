//! Static evidence that the sm_100a pipeline kernels are what their contracts claim (no B200
//! runs here; design.md, "sm_100a without a B200"): the SASS holds the tcgen05 MMA, the commit,
//! the TMA loads and the TMEM loads; ptxas reports no spills and no stack; the descriptors equal
//! MPK's known values; SMEM is addressed only through the planned regions; and changing the
//! stage count or tile N regenerates a kernel that still passes every check.

#[path = "support/nvcc_cache.rs"]
mod nvcc_cache;

use mpkc::back::FileKind;
use mpkc::driver::build::{generate_all, write_all};
use mpkc::driver::sass::{instructions, opcode};
use mpkc::driver::{check_sources, nvcc, stdlib, Checked, Source};
use mpkc::ir::Target;
use mpkc::sema::SemaOptions;
use mpkc::valid::CheckOptions;
use nvcc_cache::compile_all;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

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
    let compiled = compile_all(&tc, &out, &checked, &units, jobs);
    // One compiled unit's checks; true for an sm_100a pipeline (counted). The units are inspected
    // by `jobs` threads: cuobjdump, not nvcc, is this test's cost once the stdlib is cached.
    let inspect = |j: &mpkc::driver::build::CompileJob| -> bool {
        let u = &units[j.unit];
        let (cubin, report) = j
            .result
            .as_ref()
            .unwrap_or_else(|f| panic!("{}: {}\n{}", u.unit, f.command, f.stderr));
        // The cubin's SASS, disassembled once for the checks that read it.
        let sass_text = OnceLock::new();
        let sass = || {
            sass_text
                .get_or_init(|| tc.sass(cubin).unwrap_or_else(|e| panic!("cuobjdump: {e}")))
                .clone()
        };
        assert_eq!(
            (report.spill_stores, report.spill_loads, report.stack_bytes),
            (0, 0, 0),
            "{} {}: {report:?}",
            u.unit,
            j.target
        );
        let task = &checked[u.source].tasks[u.task];
        if let Some(p) = task
            .linear()
            .filter(|p| matches!(p.operands, mpkc::lower::Operands::Fp8BlockScale { .. }))
        {
            let sass = sass();
            let tokens = p.m_real.min(p.block_n) as usize;
            if let Err(e) = scale_loads_precede_stores(&sass, 1 + tokens) {
                panic!("{} {}: {e}", u.unit, j.target);
            }
        }
        if task.linear().is_some() && j.target == Target::Sm90a {
            inspect_sm90(&sass(), task, &u.unit);
        }
        if task.linear().is_none() || j.target != Target::Sm100a {
            return false;
        }
        let sass = sass();
        let p = task.linear().unwrap();
        // kind::f16 issues as UTCHMMA; kind::mxf8f6f4.block_scale as UTCQMMA with UTCCP scale copies.
        let (mma, extra) = match p.operands {
            mpkc::lower::Operands::Bf16 => ("UTCHMMA", None),
            mpkc::lower::Operands::Fp8BlockScale { .. } => ("UTCQMMA", Some("UTCCP")),
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
        true
    };
    let next = AtomicUsize::new(0);
    let pipelines = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| {
                while let Some(j) = compiled.get(next.fetch_add(1, Ordering::Relaxed)) {
                    if inspect(j) {
                        pipelines.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    pipelines.into_inner()
}

/// Issue 10, item 2: in the fp8 loader (the subroutine that issues the TMA loads) the stage's scale
/// staging issues every global (generic) load of the f32 scales before its first SMEM store, and
/// no load between that store and the proxy fence that publishes the stage: one round trip per
/// stage instead of a load -> store -> load chain. `loads` is how many it must see (1 + tokens).
fn scale_loads_precede_stores(sass: &str, loads: usize) -> Result<(), String> {
    let ins = instructions(sass);
    // Subroutines end with an unpredicated RET; the loader is the one with the TMA loads and stores.
    let mut start = 0;
    for (i, x) in ins.iter().enumerate() {
        if !(x.starts_with("RET") && opcode(x).starts_with("RET")) {
            continue;
        }
        let body = &ins[start..=i];
        start = i + 1;
        let is_loader = body.iter().any(|x| opcode(x).starts_with("UTMALDG"))
            && body.iter().any(|x| opcode(x).starts_with("STS"));
        if !is_loader {
            continue;
        }
        let first_store = body
            .iter()
            .position(|x| opcode(x).starts_with("STS"))
            .unwrap();
        let is_load = |x: &&str| {
            let o = opcode(x);
            o.starts_with("LDG.") || o.starts_with("LD.")
        };
        let fence = body[first_store..]
            .iter()
            .position(|x| opcode(x).starts_with("FENCE.VIEW.ASYNC"))
            .map(|f| first_store + f)
            .ok_or("no proxy fence after the scale stores")?;
        if let Some(l) = body[first_store..fence].iter().find(|x| is_load(x)) {
            return Err(format!(
                "a scale load after the first scale store (`{}` before `{l}`): load -> store -> load chain",
                body[first_store]
            ));
        }
        // The loads since the last barrier or TMA instruction before the first store.
        let from = body[..first_store]
            .iter()
            .rposition(|x| opcode(x).starts_with("SYNCS") || opcode(x).starts_with("UTMALDG"))
            .map_or(0, |p| p + 1);
        let n = body[from..first_store]
            .iter()
            .filter(|x| is_load(x))
            .count();
        if n < loads {
            return Err(format!(
                "{n} loads before the first scale store, want the stage's {loads} scales"
            ));
        }
        return Ok(());
    }
    Err("no subroutine with both TMA loads and SMEM stores (the fp8 loader)".into())
}

/// The check above rejects the pre-fix loader: these are lines of its sm_100a SASS (nvcc 13.5,
/// before issue 10), a scale load between scale stores.
#[test]
fn the_scale_order_check_rejects_the_chained_loader() {
    let old = "
        /*4570*/                   UTMALDG.3D [UR8], [UR4], desc[UR6] ;
        /*4580*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R14+URZ+0xa0], R5 ;
        /*4600*/                   LD.E R34, desc[UR4][R34.64] ;
        /*4610*/                   STS.128 [R28], R4 ;
        /*4620*/                   LD.E R30, desc[UR4][R10.64] ;
        /*4630*/                   STS.128 [R28+0x10], R44 ;
        /*4640*/                   STS.128 [R28+0x200], R32 ;
        /*4650*/                   LD.E R5, desc[UR4][R10.64+0x30] ;
        /*4660*/                   STS.128 [R28+0x20], R48 ;
        /*4700*/                   FENCE.VIEW.ASYNC.S ;
        /*4710*/                   RET.REL.NODEC R12 0x0 ;
    ";
    let e = scale_loads_precede_stores(old, 2).unwrap_err();
    assert!(e.contains("load -> store -> load"), "{e}");
    let fixed = old
        .replace("LD.E R30, desc[UR4][R10.64] ;", "NOP ;")
        .replace("LD.E R5, desc[UR4][R10.64+0x30] ;", "NOP ;")
        .replace(
            "LD.E R34, desc[UR4][R34.64] ;",
            "LD.E R34, desc[UR4][R34.64] ;\n /*4608*/ LD.E R30, desc[UR4][R10.64] ;",
        );
    assert_eq!(scale_loads_precede_stores(&fixed, 2), Ok(()));
    assert!(
        scale_loads_precede_stores(&fixed, 3).is_err(),
        "counts the loads"
    );
}

/// The sm_90a lowering: wgmma as HGMMA (bf16) or QGMMA (e4m3, Hopper's fp8 wgmma), the TMA
/// loads, the transaction barriers; no tcgen05 (UTC*) instruction and no TMEM load.
fn inspect_sm90(sass: &str, task: &mpkc::valid::CheckedTask, unit: &str) {
    let p = task.linear().unwrap();
    let (mma, shape) = match p.operands {
        mpkc::lower::Operands::Bf16 => ("HGMMA", format!("HGMMA.64x{}x16.F32.BF16", p.block_n)),
        mpkc::lower::Operands::Fp8BlockScale { .. } => {
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
    // One m64 wgmma per 64 tile rows per K step: BLOCK_M / 64 x BLOCK_K / MMA_K per stage, unrolled.
    let n = sass.matches(mma).count() as i64;
    let per_stage = p.block_m / 64 * p.block_k / p.mma_k;
    assert!(
        n >= per_stage && n % per_stage == 0,
        "{unit}: {n} {mma}, not whole stages of {per_stage}"
    );
    // The role program's MMA step states what the SASS holds (PTX ISA: wgmma is m64, K 16 for
    // bf16 and 32 for e4m3).
    let step = task
        .program(Target::Sm90a)
        .and_then(|g| g.stage_mma())
        .expect("an sm_90a MMA step");
    let k = if mma == "QGMMA" { 32 } else { 16 };
    assert_eq!(
        (step.m, step.n, step.k, step.count),
        (64, p.block_n, k, per_stage),
        "{unit}: the program's MMA step against the SASS"
    );
}

#[test]
fn stdlib_pipelines_hold_tcgen05_tma_and_tmem_instructions() {
    let n = build_and_inspect(&stdlib::sources(), "sass_stdlib");
    // The stdlib's pipeline instances that declare sm_100a, counted from the checker alone.
    let want = check_sources(
        &stdlib::sources(),
        &SemaOptions::default(),
        &CheckOptions::default(),
    )
    .iter()
    .flat_map(|c| c.tasks.iter())
    .filter(|t| {
        t.ir.family == mpkc::ir::Family::Pipeline
            && t.ir.targets.iter().any(|d| d.target == Target::Sm100a)
    })
    .count();
    assert!(want > 0);
    assert_eq!(n, want, "every stdlib pipeline unit was inspected");
}

#[test]
fn house_linear_descriptors_are_mpks() {
    let checked = check_sources(
        &stdlib::sources(),
        &SemaOptions::default(),
        &CheckOptions::default(),
    );
    let units = generate_all(&checked);
    let file = |kind| {
        units
            .iter()
            .find(|u| u.unit == "linear_sm100_v2")
            .and_then(|u| u.files.iter().find(|f| f.kind == kind))
            .expect("the house linear has a kernel and a layout header")
    };
    let cuh = file(FileKind::Kernel);
    // The descriptors live in the layout header the kernel includes (tests/oracle.rs).
    let layout = file(FileKind::LayoutHeader);
    assert!(
        layout
            .text
            .contains("static constexpr uint32_t I_DESC = 0x08040490u;"),
        "instruction descriptor"
    );
    assert!(
        layout
            .text
            .contains("static constexpr uint64_t SMEM_DESC = 0x4000404000000000ull;"),
        "SMEM descriptor"
    );
    assert!(cuh.text.contains("#include \"linear_sm100_v2_layout.h\""));
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
            .replace("tmem cols 32", &format!("tmem cols {cols}"))
            // Not wired into MPK: no TaskType, which the variants would share (E0605).
            .replace("  task_id 244\n", "");
        sources.push(Source {
            path: format!("variants/linear_s{stages}_n{n}.mpk"),
            text,
        });
    }
    assert_eq!(build_and_inspect(&sources, "sass_variants"), 4);
}
