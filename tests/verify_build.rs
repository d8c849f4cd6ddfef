//! `mpkc verify`'s test builds, without a GPU: every runnable stdlib case (each instance and
//! each producer → dependent chain) writes and compiles with nvcc for sm_90a and sm_100a under
//! `-DMPKC_BOUNDED_WAITS` (bounded waits, the page and re-init shadow), and each fault
//! injection produces the build it claims: a region one byte short is rejected by the
//! kernel's own static_asserts, naming the region; the other faults compile.
//!
//! Running them needs a GPU: `mpkc verify` (or `scripts/gpu-verify.sh` on the GPU machine).

use mpkc::driver::verify::{cases, compile_cases, test_flags, write_test_build, Inject};
use mpkc::driver::{check_sources, nvcc, stdlib, Checked};
use mpkc::ir::Target;
use std::path::PathBuf;

fn checked() -> Vec<Checked> {
    check_sources(&stdlib::sources(), &Default::default(), &Default::default())
}

fn scratch_dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn jobs() -> usize {
    std::thread::available_parallelism().map_or(4, |n| n.get())
}

/// Every chain and one case per task no chain holds, on sm_90a (the target `mpkc verify` runs on the H200); on
/// sm_100a those with a pipeline unit, whose kernels differ per target: a consumer-only kernel is one source for both
/// targets (its instrumented build is the sm_90a one here, and tests/generated.rs compiles its
/// production build for both).
#[test]
fn every_stdlib_case_compiles_as_a_test_build_for_both_targets() {
    let tc = nvcc::find().expect("nvcc (run scripts/setup)");
    let checked = checked();
    for target in [Target::Sm90a, Target::Sm100a] {
        let mut all = cases(&checked, target);
        // One case per task (a task's instances differ in constants only; tests/generated.rs
        // compiles every instance's production build), every chain.
        // A unit a chain holds compiles there, under the same flags: no case of its own.
        let in_chain: std::collections::BTreeSet<(usize, usize)> = all
            .iter()
            .filter(|c| c.units.len() > 1)
            .flat_map(|c| c.units.iter().copied())
            .collect();
        let mut seen = std::collections::BTreeSet::new();
        all.retain(|c| {
            c.units.len() > 1 || {
                let u = c.units[0];
                !in_chain.contains(&u)
                    && (checked[u.0].derived.is_some()
                        || seen.insert((u.0, checked[u.0].tasks[u.1].ir.name.clone())))
            }
        });
        if target == Target::Sm100a {
            all.retain(|c| {
                c.units
                    .iter()
                    .any(|u| checked[u.0].tasks[u.1].ir.family == mpkc::ir::Family::Pipeline)
            });
            assert!(all.len() >= 10, "the sm_100a pipeline cases: {}", all.len());
        }
        assert!(
            all.iter().filter(|c| c.units.len() == 2).count() >= 4,
            "the argmax and split-K chains"
        );
        let dir = scratch_dir(&format!("verify_build_{target}"));
        let (defines, na) = write_test_build(&dir, &checked, &all, None).unwrap();
        assert!(defines.is_empty() && na.is_empty());
        let results = compile_cases(&tc, &dir, &all, target, &test_flags(2000, &defines), jobs());
        for (c, r) in all.iter().zip(results) {
            match r {
                Some(Ok(cubin)) => assert!(cubin.is_file()),
                Some(Err(f)) => panic!("{} for {target}: {}\n{}", c.name, f.command, f.stderr),
                None => assert!(c.skip.is_some(), "{} was not compiled", c.name),
            }
        }
    }
}

/// The block-scaled MMA GEMV at K = 512 (one chunk per warp, a ring of two): its sm_90a test
/// build is where ptxas folded a uniform shared-memory base into a cp.async with an L2 policy
/// (`LDGSTS [R+UR]`, an illegal instruction on an H100, 2026-12-05). With the prelude
/// converting the address inside the asm it compiles, and the SASS lint that fails such a
/// compile (mpkc::driver::sass_lint, run by every nvcc compile) finds nothing.
#[test]
fn the_fp8_mma_gemv_at_k_512_test_build_passes_the_sass_lint() {
    let tc = nvcc::find().expect("nvcc (run scripts/setup)");
    assert!(tc.cuobjdump().is_some(), "cuobjdump (run scripts/setup)");
    let checked = checked();
    let mut all = cases(&checked, Target::Sm90a);
    all.retain(|c| c.name == "linear_fp8_gemv_mma_expert_down");
    assert_eq!(all.len(), 1, "the stdlib's K = 512 instance");
    let dir = scratch_dir("verify_build_fp8_mma_k512");
    let (defines, _) = write_test_build(&dir, &checked, &all, None).unwrap();
    let r = compile_cases(
        &tc,
        &dir,
        &all,
        Target::Sm90a,
        &test_flags(2000, &defines),
        1,
    );
    let cubin = match r.into_iter().next().flatten() {
        Some(Ok(cubin)) => cubin,
        other => panic!("{other:?}"),
    };
    let sass = tc.sass(&cubin).unwrap();
    assert!(sass.contains("LDGSTS"), "the cp.async copies");
    assert_eq!(mpkc::driver::sass_lint::check(&sass), Vec::new());
}

#[test]
fn a_region_one_byte_short_is_rejected_by_the_kernel_naming_the_region() {
    let tc = nvcc::find().expect("nvcc (run scripts/setup)");
    let checked = checked();
    let mut all = cases(&checked, Target::Sm90a);
    all.retain(|c| c.name == "linear_sm100_v2" || c.name == "rmsnorm_v2_h4096");
    let dir = scratch_dir("verify_build_region_short");
    let (defines, _) =
        write_test_build(&dir, &checked, &all, Some(&Inject::RegionShort(None))).unwrap();
    for (c, r) in all.iter().zip(compile_cases(
        &tc,
        &dir,
        &all,
        Target::Sm90a,
        &test_flags(2000, &defines),
        jobs(),
    )) {
        let err = match r {
            Some(Err(f)) => f.stderr,
            other => panic!("{}: the short region compiled: {other:?}", c.name),
        };
        assert!(
            err.contains("E0304") || err.contains("E0110"),
            "{}: {err}",
            c.name
        );
    }
}

#[test]
fn the_other_faults_compile_into_the_test_build() {
    let tc = nvcc::find().expect("nvcc (run scripts/setup)");
    let checked = checked();
    let mut all = cases(&checked, Target::Sm90a);
    all.retain(|c| c.name == "linear_sm100_v2");
    for (i, fault) in [
        Inject::PageSkip(None),
        Inject::PageDouble(Some(3)),
        Inject::CountOff(None),
        Inject::ReinitDrop(None),
    ]
    .iter()
    .enumerate()
    {
        let dir = scratch_dir(&format!("verify_build_fault_{i}"));
        let (defines, na) = write_test_build(&dir, &checked, &all, Some(fault)).unwrap();
        assert!(na.is_empty(), "{fault:?}: {na:?}");
        let r = compile_cases(
            &tc,
            &dir,
            &all,
            Target::Sm90a,
            &test_flags(2000, &defines),
            jobs(),
        );
        assert!(matches!(r[0], Some(Ok(_))), "{fault:?}: {r:?}");
        let kernel = std::fs::read_to_string(dir.join("linear_sm100_v2_sm90.cuh")).unwrap();
        match fault {
            Inject::ReinitDrop(_) => {
                assert!(kernel.contains("fault injection (mpkc verify --inject reinit-drop)"))
            }
            // The kernel initialises from spec.h's table, which holds the injected count.
            Inject::CountOff(_) => {
                let spec = std::fs::read_to_string(dir.join("linear_sm100_v2_spec.h")).unwrap();
                assert!(
                    kernel.contains("mbar_init(&sem[kSems_sm90a[0].ordinal], kSems_sm90a[0].count);  // w_ring.full[0]: 2"),
                    "count 1 + 1 in the kernel"
                );
                let sm90 = &spec[spec
                    .find("kSems_sm90a[NUM_OP_SEMS]")
                    .expect("the sm_90a table")..];
                assert!(
                    sm90.contains("{\"w_ring.full[0]\", 0, 2,"),
                    "count 1 + 1 in spec.h"
                );
            }
            _ => assert!(
                defines.iter().any(|d| d.starts_with("-DMPKC_INJECT_PAGE_")),
                "{defines:?}"
            ),
        }
    }
}

/// `--inject bad-scale`: the fp8 case's test build compiles for both targets with the fault's
/// define, its layout header holds the injection and the scale check it trips; a case without
/// block scales is not applicable.
#[test]
fn the_bad_scale_fault_compiles_into_the_fp8_test_build() {
    let tc = nvcc::find().expect("nvcc (run scripts/setup)");
    let checked = checked();
    for target in [Target::Sm90a, Target::Sm100a] {
        let mut all = cases(&checked, target);
        all.retain(|c| c.name == "linear_fp8_blockscale_q_b" || c.name == "linear_sm100_v2");
        assert_eq!(all.len(), 2);
        let dir = scratch_dir(&format!("verify_build_bad_scale_{target}"));
        let (defines, na) =
            write_test_build(&dir, &checked, &all, Some(&Inject::BadScale(Some(2)))).unwrap();
        assert_eq!(defines, vec!["-DMPKC_INJECT_BAD_SCALE=2".to_string()]);
        assert_eq!(na.len(), 1, "{na:?}");
        assert!(
            na[0].0 == "linear_sm100_v2" && na[0].1.contains("no block scales"),
            "{na:?}"
        );
        let fp8: Vec<_> = all
            .into_iter()
            .filter(|c| c.name != "linear_sm100_v2")
            .collect();
        let r = compile_cases(&tc, &dir, &fp8, target, &test_flags(2000, &defines), jobs());
        assert!(matches!(r[0], Some(Ok(_))), "{target}: {r:?}");
        let layout =
            std::fs::read_to_string(dir.join("linear_fp8_blockscale_q_b_layout.h")).unwrap();
        assert!(layout.contains("fault injection (mpkc verify --inject bad-scale=I)"));
        assert!(layout.contains("::mpkc::rt::report_bad_scale(\"W_scale\", w_at, ws)"));
        assert!(
            layout.contains("::mpkc::rt::report_bad_scale(\"A_scale\", n * K_BLOCKS + kb, as[n])")
        );
    }
}

/// Issue 13, Deliver 3: the DeepSeek-V3 MoE block and the whole decode layer as chains (`mpkc
/// verify --chain`): their stages resolve from their files for both targets, and the layer's one
/// harness (every stage's registration in one worker) compiles as a test build.
#[test]
fn the_dsv3_chains_resolve_and_the_layer_compiles_as_one_test_build() {
    let tc = nvcc::find().expect("nvcc (run scripts/setup)");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    // (manifest, stages, (output links, input links), targets): the layer holds every unit of
    // the MoE block, so the block's own harness compiles for the H200's target alone.
    let chains = [
        ("moe_block", 10, (16, 2), &[Target::Sm90a][..]),
        (
            "decode_layer",
            24,
            (37, 2),
            &[Target::Sm90a, Target::Sm100a][..],
        ),
    ];
    for (name, stages, counts, targets) in chains {
        let chain = mpkc::driver::chain::load(&root.join(format!("stdlib/dsv3/{name}.chain.toml")))
            .unwrap();
        let sources: Vec<mpkc::driver::Source> = chain
            .contract_files()
            .iter()
            .map(|f| mpkc::driver::Source {
                path: f.display().to_string(),
                text: std::fs::read_to_string(root.join(f)).unwrap(),
            })
            .collect();
        let checked = mpkc::driver::check_sources_with(
            &sources,
            |s| mpkc::sema::SemaOptions {
                overrides: mpkc::driver::token_overrides(s, 1),
                ..Default::default()
            },
            &Default::default(),
        );
        assert!(checked.iter().all(|c| !c.has_errors()));
        for target in [Target::Sm90a, Target::Sm100a] {
            let case = mpkc::driver::chain::case(&checked, &chain, target).unwrap();
            assert_eq!(case.units.len(), stages, "{name}");
            assert_eq!((case.links.len(), case.shared.len()), counts, "{name}");
            if !targets.contains(&target) {
                continue;
            }
            let all = vec![case];
            let dir = scratch_dir(&format!("verify_build_chain_{name}_{target}"));
            write_test_build(&dir, &checked, &all, None).unwrap();
            let text = std::fs::read_to_string(dir.join(&all[0].file)).unwrap();
            assert_eq!(text.matches("::Registration").count(), stages, "{text}");
            let results = compile_cases(&tc, &dir, &all, target, &test_flags(2000, &[]), jobs());
            match &results[0] {
                Some(Ok(cubin)) => assert!(cubin.is_file()),
                Some(Err(f)) => {
                    panic!("the {name} chain for {target}: {}\n{}", f.command, f.stderr)
                }
                None => panic!("the {name} chain was not compiled for {target}"),
            }
        }
    }
}
