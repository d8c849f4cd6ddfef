//! The token count decided at run time (issue 13, Deliver 2; docs/runtime-m.md):
//! `param m: int in LO..=MAX = runtime` checks to the maximum, the generated code reads the count
//! where MPK's runtime keeps it (`runtime_config.qo_indptr_buffer[MPK_MAX_NUM_BATCHED_REQUESTS]`)
//! and clamps it to the maximum, and `mpkc verify` runs one build at several counts. Running the
//! builds needs a GPU (`mpkc verify stdlib/linear_bf16_runtime_m.mpk`); here they are checked,
//! generated and compiled with nvcc for both targets.

use mpkc::back::{generate, ContractInfo};
use mpkc::diag::Severity;
use mpkc::driver::verify::{
    cases, cases_at, compile_cases, test_flags, unique_builds, write_test_build,
};
use mpkc::driver::{check_source, check_sources, nvcc, stdlib, token_overrides, Checked, Source};
use mpkc::ir::{ParamValue, Target};
use mpkc::sema::SemaOptions;
use mpkc::valid::{CheckOptions, CheckedTask};
use std::path::PathBuf;

/// Consumer families at a run-time count: each body template that takes one.
const CONSUMERS: &str = r#"
task silu_rt {
  family consumer-no-smem
  targets sm_100a, sm_90a
  task_id 285
  param m: int in 1..=64 = runtime
  tensor x: bf16[m, 4096] in
  tensor y: bf16[m, 2048] out
  body silu_mul(x -> y)
  granularity per_tile(tasks 16)
}

task rmsnorm_rt {
  family consumer
  targets sm_100a, sm_90a
  task_id 326
  param hidden: int = 4096
  param m: int in 1..=64 = runtime
  param eps: f32 = 1e-6
  tensor x: bf16[m, hidden] in
  tensor w: bf16[hidden] in weight
  tensor y: bf16[m, hidden] out
  region input { bytes align_up(2 * hidden, 1024); align 1024; pack; release 2 }
  region weight { bytes align_up(2 * hidden, 1024); align 1024; pack; release 2 }
  region output { bytes align_up(2 * hidden, 1024); align 1024; pack; release 2 }
  region reduce { bytes align_up(4 * 128, 1024); align 1024; pack; release 2 }
  barrier task_sync = named(2, threads 128)
  body rmsnorm(x, w -> y; eps)
  granularity per_tile(tasks m)
}

task embedding_rt {
  family consumer-no-smem
  targets sm_100a, sm_90a
  task_id 286
  param m: int in 1..=64 = runtime
  tensor ids: i32[m] in
  tensor table: bf16[1024, 256] in weight
  tensor y: bf16[m, 256] out
  body embedding(ids, table -> y)
  granularity per_tile(tasks 4)
}

task argmax_partial_rt {
  family consumer
  targets sm_100a, sm_90a
  task_id 283
  param vocab: int = 8192
  param chunk: int = 2048
  param m: int in 1..=64 = runtime
  tensor logits: bf16[m, vocab] in
  tensor part_val: bf16[m, ceil_div(vocab, chunk)] out
  tensor part_idx: i64[m, ceil_div(vocab, chunk)] out
  region idx { bytes align_up(8 * 32, 128); align 128; pack; release 1 }
  region val { bytes align_up(2 * 32, 16); align 16; pack; release 1 }
  barrier task_sync = named(6, threads 128)
  body argmax_partial(logits -> part_val, part_idx; chunk)
  granularity per_tile(tasks ceil_div(vocab, chunk))
}

task argmax_reduce_rt {
  family consumer
  targets sm_100a, sm_90a
  task_id 284
  param vocab: int = 8192
  param chunk: int = 2048
  param m: int in 1..=64 = runtime
  tensor part_val: bf16[m, ceil_div(vocab, chunk)] in
  tensor part_idx: i64[m, ceil_div(vocab, chunk)] in
  tensor token: i64[m] out
  region idx { bytes align_up(8 * 32, 128); align 128; pack; release 1 }
  region val { bytes align_up(2 * 32, 16); align 16; pack; release 1 }
  barrier task_sync = named(6, threads 128)
  body argmax_reduce(part_val, part_idx -> token; chunk)
  granularity per_tile(tasks 1)
}
"#;

fn source(path: &str, text: &str) -> Source {
    Source {
        path: path.into(),
        text: text.into(),
    }
}

fn stdlib_checked() -> Vec<Checked> {
    check_sources(&stdlib::sources(), &Default::default(), &Default::default())
}

fn stdlib_task<'a>(checked: &'a [Checked], unit: &str) -> &'a CheckedTask {
    checked
        .iter()
        .flat_map(|c| c.tasks.iter())
        .find(|t| t.ir.unit_name() == unit)
        .unwrap_or_else(|| panic!("stdlib unit {unit}"))
}

fn file_of(t: &CheckedTask, path: &str, text: &str, name: &str) -> String {
    generate(t, &ContractInfo::new(path, text))
        .into_iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("no {name}"))
        .text
}

fn scratch_dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn the_stdlib_linear_checks_at_its_maximum_and_keeps_the_count_run_time() {
    let checked = stdlib_checked();
    let t = stdlib_task(&checked, "linear_bf16_runtime_m_o_proj");
    let p =
        t.ir.runtime_tokens()
            .expect("m_real is decided at run time");
    assert_eq!(p.name, "m_real");
    assert_eq!(
        p.value,
        ParamValue::Int(64),
        "the compile-time value is the maximum"
    );
    assert_eq!(p.runtime.map(|r| r.min), Some(1));
    let rows: Vec<(&str, bool)> =
        t.ir.tensors
            .values()
            .map(|x| (x.name.as_str(), x.runtime_rows))
            .collect();
    assert_eq!(rows, [("A", true), ("W", false), ("R", true), ("C", true)]);
    // The planner and the lowering take the maximum: 64-token tiles, tensors of 64 rows.
    let lin = t.linear().expect("lowers");
    assert_eq!((lin.m_real, lin.block_n), (64, 64));
}

#[test]
fn both_pipeline_targets_read_the_count_and_guard_every_row_access() {
    let (path, text) = stdlib::CONTRACTS
        .iter()
        .find(|(p, _)| p.ends_with("linear_bf16_runtime_m.mpk"))
        .copied()
        .expect("stdlib contract");
    let checked = stdlib_checked();
    let t = stdlib_task(&checked, "linear_bf16_runtime_m_expert_down");
    for name in [
        "linear_bf16_runtime_m_expert_down.cuh",
        "linear_bf16_runtime_m_expert_down_sm90.cuh",
    ] {
        let k = file_of(t, path, text, name);
        assert!(
            k.contains("int const m_tokens = mpkc::runtime_tokens(runtime_config, M_REAL);"),
            "{name} reads the count"
        );
        // The residual loads and the stores: each guarded by the run-time count, none by M_REAL.
        assert_eq!(k.matches("n < m_tokens && row < N").count(), 2, "{name}");
        assert!(
            !k.contains("n < M_REAL"),
            "{name} guards a row by the maximum"
        );
    }
    // A compile-time count keeps its constant guard and reads nothing at run time.
    let fixed = stdlib_task(&checked, "linear_bf16_residual_o_proj");
    let k = generate(
        fixed,
        &ContractInfo::new("stdlib/linear_bf16_residual.mpk", ""),
    )
    .into_iter()
    .find(|f| f.name == "linear_bf16_residual_o_proj.cuh")
    .expect("kernel")
    .text;
    assert!(k.contains("n < M_REAL && row < N") && !k.contains("runtime_tokens"));
}

#[test]
fn consumer_templates_read_their_rows_at_run_time() {
    let src = source("rt.mpk", CONSUMERS);
    let c = check_source(&src, &SemaOptions::default(), &CheckOptions::default());
    assert!(
        c.diags.iter().all(|d| d.severity != Severity::Error),
        "{:?}",
        c.diags
    );
    assert_eq!(c.tasks.len(), 5);
    for t in &c.tasks {
        let unit = t.ir.unit_name();
        let k = file_of(t, "rt.mpk", CONSUMERS, &format!("{unit}.cuh"));
        assert!(k.contains("constexpr int kMaxRows = 64;"), "{unit}");
        assert!(
            k.contains("int const kRows = mpkc::runtime_tokens(runtime_config, kMaxRows);"),
            "{unit}"
        );
        assert!(!k.contains("constexpr int kRows ="), "{unit}");
    }
}

#[test]
fn a_compile_time_value_for_a_run_time_count_is_e0020() {
    let (path, text) = stdlib::CONTRACTS
        .iter()
        .find(|(p, _)| p.ends_with("linear_bf16_runtime_m.mpk"))
        .copied()
        .expect("stdlib contract");
    let opts = SemaOptions {
        overrides: vec![("m_real".into(), "4".into())],
        instance: None,
        ..Default::default()
    };
    let c = check_source(&source(path, text), &opts, &CheckOptions::default());
    assert!(c.tasks.is_empty());
    assert!(c.diags.iter().any(|d| d.code == "E0022"
        && d.message.contains("`--param m_real=4`")
        && d.help
            .as_deref()
            .is_some_and(|h| h.contains("mpkc verify --m"))));
    // `--m` stands for no override of a run-time count (one build serves every count).
    assert!(token_overrides(&source(path, text), 4).is_empty());
    assert_eq!(
        token_overrides(&stdlib::sources()[0], 4),
        vec![("m_real".to_string(), "4".to_string())]
    );
}

#[test]
fn verify_runs_one_build_at_several_counts() {
    let checked = stdlib_checked();
    let all = cases(&checked, Target::Sm90a);
    let runs: Vec<(&str, Option<i64>, &str)> = all
        .iter()
        .filter(|c| c.name.starts_with("linear_bf16_runtime_m_o_proj"))
        .map(|c| (c.name.as_str(), c.tokens, c.file.as_str()))
        .collect();
    let file = "linear_bf16_runtime_m_o_proj_harness.cu";
    assert_eq!(
        runs,
        [
            ("linear_bf16_runtime_m_o_proj @ m=1", Some(1), file),
            ("linear_bf16_runtime_m_o_proj @ m=33", Some(33), file),
            ("linear_bf16_runtime_m_o_proj @ m=64", Some(64), file),
        ]
    );
    // One build per harness file.
    let builds = unique_builds(&all);
    let files: Vec<&str> = builds.iter().map(|&i| all[i].file.as_str()).collect();
    assert_eq!(files.iter().filter(|f| **f == file).count(), 1);
    // Cases of a compile-time count are unchanged.
    assert!(all
        .iter()
        .any(|c| c.name == "linear_sm100_v2" && c.tokens.is_none()));
    // `--m 100`: one run past the maximum (the kernel clamps it to 64).
    let at: Vec<Option<i64>> = cases_at(&checked, Target::Sm90a, Some(100))
        .iter()
        .filter(|c| c.name.starts_with("linear_bf16_runtime_m_o_proj"))
        .map(|c| c.tokens)
        .collect();
    assert_eq!(at, [Some(100)]);
}

#[test]
fn the_run_time_test_builds_compile_once_per_file_for_both_targets() {
    let tc = nvcc::find().expect("nvcc (run scripts/setup)");
    let stdlib = stdlib_checked();
    let linear: Vec<Checked> = stdlib
        .into_iter()
        .filter(|c| c.source.path.ends_with("linear_bf16_runtime_m.mpk"))
        .collect();
    let consumers = vec![check_source(
        &source("rt.mpk", CONSUMERS),
        &SemaOptions::default(),
        &CheckOptions::default(),
    )];
    for (name, checked) in [("linear", linear), ("consumers", consumers)] {
        for target in [Target::Sm90a, Target::Sm100a] {
            let all = cases(&checked, target);
            assert!(all.iter().all(|c| c.tokens.is_some() && c.skip.is_none()));
            if name == "consumers" {
                // The argmax chain runs at each count too, on its one chain harness.
                let chain: Vec<Option<i64>> = all
                    .iter()
                    .filter(|c| c.name.starts_with("argmax_partial_rt -> argmax_reduce_rt"))
                    .map(|c| c.tokens)
                    .collect();
                assert_eq!(chain, [Some(1), Some(33), Some(64)]);
            }
            let dir = scratch_dir(&format!("runtime_m_{name}_{target}"));
            let (defines, _) = write_test_build(&dir, &checked, &all, None).unwrap();
            let results = compile_cases(&tc, &dir, &all, target, &test_flags(2000, &defines), 2);
            for (c, r) in all.iter().zip(results) {
                match r {
                    Some(Ok(cubin)) => assert!(cubin.is_file()),
                    Some(Err(f)) => panic!("{} for {target}: {}\n{}", c.name, f.command, f.stderr),
                    None => panic!("{} was not compiled", c.name),
                }
            }
        }
    }
}
