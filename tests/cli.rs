//! The command line: exit statuses, output streams and formats (design.md, "Conventions").

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn mpkc() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mpkc"))
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn run(args: &[&str]) -> Output {
    mpkc()
        .current_dir(root())
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn tmp(name: &str, text: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn linear_with_stages(n: u32) -> String {
    std::fs::read_to_string(root().join("stdlib/linear_sm100_v2.mpk"))
        .unwrap()
        .replace("stages 6", &format!("stages {n}"))
}

#[test]
fn check_of_the_stdlib_succeeds() {
    let o = run(&["check"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("0 errors, 0 warnings"),
        "{}",
        stderr(&o)
    );
}

/// Two files of one `check` whose tasks declare one TaskType (E0605): the error is on the later
/// file's `task_id`, names the first file and line, and offers a TaskType free in the build inside
/// MPK's TMA range (the linear loads through TMA); in the other order the other file gets it; JSON
/// names the file; `build` stops before nvcc. The stdlib and the examples, checked together,
/// declare no TaskType twice.
#[test]
fn a_task_type_two_files_declare_is_e0605_on_the_later_one() {
    let house = "stdlib/linear_sm100_v2.mpk";
    let copy = std::fs::read_to_string(root().join(house))
        .unwrap()
        .replace("task linear_sm100_v2 {", "task linear_copy {");
    let task_id_line = copy
        .lines()
        .position(|l| l.trim() == "task_id 244")
        .unwrap()
        + 1;
    let p = tmp("task_type_copy.mpk", &copy);
    let p = p.to_str().unwrap();
    let o = run(&["check", house, p]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert_eq!(e.matches("error[E0605]").count(), 1, "{e}");
    assert!(
        e.contains("error[E0605]: TaskType 244 is declared by two tasks: `linear_sm100_v2` already has it, so `linear_copy` cannot"),
        "{e}"
    );
    assert!(e.contains(&format!("{p}:{task_id_line}:3")), "{e}");
    assert!(
        e.contains(&format!(
            "`linear_sm100_v2` declares TaskType 244 at {house}:{task_id_line}"
        )),
        "{e}"
    );
    assert!(
        e.contains("help: give `linear_copy` a TaskType no task of this build uses, e.g. `task_id 232` (free in 232..=255"),
        "{e}"
    );
    assert!(e.contains("1 task instance clean, 1 error"), "{e}");

    let o = run(&["check", "--message-format", "json", p, house]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let lines: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{}", stdout(&o));
    assert_eq!(lines[0]["code"], "E0605");
    assert_eq!(lines[0]["file"], house);
    assert_eq!(lines[0]["span"]["line_start"], task_id_line as u64);

    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli_task_type_build");
    let _ = std::fs::remove_dir_all(&out);
    let o = run(&["build", house, p, "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("error[E0605]"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("E0701"), "{}", stderr(&o));
    assert!(!out.exists(), "nothing is written");

    let o = run(&["check", "stdlib", "stdlib/dsv3", "examples"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("0 errors, 0 warnings"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn over_budget_linear_exits_1_with_totals() {
    let p = tmp("linear7.mpk", &linear_with_stages(7));
    let o = run(&["check", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.contains(
            "error[E0103]: regions need 258064 bytes of shared memory but sm_100a allows 224256"
        ),
        "{e}"
    );
    assert!(
        e.contains("region W[stage]"),
        "points at the region declarations: {e}"
    );
    assert!(e.contains("33808 over"), "{e}");
    assert!(e.contains("16 pages"), "{e}");
    assert!(
        e.contains("help: lower `stages` from 7 to 6 (221200 bytes, 14 pages)"),
        "{e}"
    );
}

#[test]
fn json_diagnostics_are_one_object_per_line_on_stdout() {
    let p = tmp(
        "linear7_tmem48.mpk",
        &linear_with_stages(7).replace("tmem cols 32", "tmem cols 48"),
    );
    let o = run(&["check", "--message-format", "json", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let text = stdout(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() >= 2, "{lines:?}");
    let mut codes = Vec::new();
    for l in &lines {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        for k in [
            "code", "severity", "message", "file", "span", "labels", "notes", "help", "rendered",
        ] {
            assert!(v.get(k).is_some(), "missing {k} in {l}");
        }
        for k in [
            "byte_start",
            "byte_end",
            "line_start",
            "column_start",
            "line_end",
            "column_end",
        ] {
            assert!(v["span"].get(k).is_some(), "missing span.{k}");
        }
        codes.push(v["code"].as_str().unwrap().to_string());
    }
    assert!(
        codes.contains(&"E0103".to_string()) && codes.contains(&"E0501".to_string()),
        "{codes:?}"
    );
    assert!(
        stderr(&o).is_empty(),
        "JSON mode keeps stderr quiet: {}",
        stderr(&o)
    );
}

#[test]
fn plan_json_has_the_convention_fields() {
    let o = run(&["plan", "stdlib/rmsnorm_v2.mpk", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let lines: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4, "2 instances x 2 targets");
    let v = &lines[2];
    assert_eq!(v["task"], "rmsnorm_v2");
    assert_eq!(v["instance"], "h7168");
    assert_eq!(v["target"], "sm_100a");
    assert_eq!(v["pages_used"], 3);
    assert_eq!(v["bytes"], 44032);
    assert_eq!(v["max_byte_end"], 47104);
    assert_eq!(v["release_order"].as_array().unwrap().len(), 14);
    assert_eq!(
        v["regions"][3],
        serde_json::json!({"name": "reduce", "ordinal": 3, "size": 1024, "pages": [0], "offset": 14336})
    );
}

#[test]
fn plan_after_a_predecessor_order() {
    let order = "13,0,1,2,3,4,5,6,7,8,9,10,11,12";
    let o = run(&[
        "plan",
        "stdlib/linear_sm100_v2.mpk",
        "--format",
        "json",
        "--preferred",
        order,
    ]);
    assert_eq!(o.status.code(), Some(1), "A_0..A_3 land on page 13 (I-S5)");
    assert!(stderr(&o).contains("E0107"), "{}", stderr(&o));
    let o = run(&["plan", "stdlib/linear_sm100_v2.mpk", "--preferred", "0,1,2"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "not a permutation is a usage error"
    );
}

#[test]
fn plan_text_draws_the_page_map() {
    let o = run(&["plan", "stdlib/linear_sm100_v2.mpk"]);
    assert_eq!(o.status.code(), Some(0));
    let s = stdout(&o);
    assert!(s.contains("14 of 14 pages"), "{s}");
    assert!(s.contains("page 13 |"), "{s}");
    assert!(
        s.contains('#'),
        "page 13's missing 5120 bytes are drawn: {s}"
    );
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(run(&["frobnicate"]).status.code(), Some(2));
    assert_eq!(run(&["check", "--param", "novalue"]).status.code(), Some(2));
    assert_eq!(run(&["explain", "E9999"]).status.code(), Some(2));
    // One param given twice: the later value would win silently (an instance's twice is E0003).
    let o = run(&[
        "check",
        "stdlib/rmsnorm_v2.mpk",
        "--param",
        "m=2",
        "--param",
        "m=65",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--param m is given twice"),
        "{}",
        stderr(&o)
    );
}

/// An input past 16 MiB (here one without an end) is a usage error, not read until memory runs
/// out (a break-the-checker helper's `check /dev/zero` ended "out of memory" under a 4 GB limit).
#[cfg(target_os = "linux")]
#[test]
fn an_input_without_an_end_is_refused() {
    let o = run(&["check", "/dev/zero"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("/dev/zero is larger than 16 MiB"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn an_instance_whose_reference_fails_is_not_counted_clean() {
    // E0018 (the reference path names a directory): the instance has an error, so the summary
    // counts no clean instance (it was "1 task instance clean, 1 error").
    let o = run(&["check", "tests/ui/reference/e0018_reference_not_a_file.mpk"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).ends_with("checked 1 file: 0 task instances clean, 1 error, 0 warnings\n"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn explain_prints_the_code() {
    let o = run(&["explain", "E0103"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).contains("E0103"), "{}", stdout(&o));
}

#[test]
fn params_and_instances_from_the_command_line() {
    let o = run(&[
        "plan",
        "stdlib/rmsnorm_v2.mpk",
        "--format",
        "json",
        "--instance",
        "h4096",
        "--param",
        "m=16",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o).lines().count(), 2);
    let o = run(&["check", "stdlib/rmsnorm_v2.mpk", "--param", "m=17"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("E0006"), "{}", stderr(&o));
    let o = run(&["check", "stdlib/rmsnorm_v2.mpk", "--param", "nosuch=1"]);
    assert!(stderr(&o).contains("E0010"), "{}", stderr(&o));
    let o = run(&["check", "stdlib/rmsnorm_v2.mpk", "--instance", "h9999"]);
    assert!(stderr(&o).contains("E0010"), "{}", stderr(&o));
}

#[test]
fn build_without_nvcc_exits_4() {
    // A copy of the binary outside the project cannot see .toolchain/, and PATH has no nvcc.
    let dir = std::env::temp_dir().join(format!("mpkc-no-nvcc-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("mpkc");
    std::fs::copy(env!("CARGO_BIN_EXE_mpkc"), &exe).unwrap();
    let o = Command::new(&exe)
        .current_dir(&dir)
        .args(["build", "--out", "o"])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert!(stderr(&o).contains("scripts/setup"), "{}", stderr(&o));
}

/// `mpkc build` of contract `text` (written as `<name>.mpk`) into a fresh `<name>_out`, without
/// the cache; asserts that nvcc failed (exit 3) and returns stderr.
fn build_failing(name: &str, text: &str) -> String {
    let p = tmp(&format!("{name}.mpk"), text);
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}_out"));
    // A folder from an older mpkc (before build output carried its stamp) would be refused.
    let _ = std::fs::remove_dir_all(&out);
    let o = mpkc()
        .args(["build", p.to_str().unwrap(), "--out", out.to_str().unwrap()])
        .arg("--no-cache")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    stderr(&o)
}

#[test]
fn nvcc_errors_in_inline_cuda_map_back_to_the_contract() {
    let text = "task bad_body {\n  family consumer-no-smem\n  tensor y: f32[128] out\n  body cuda {\n    y[threadIdx.x] = undefined_symbol;\n  }\n}\n";
    let e = build_failing("bad_body", text);
    assert!(e.contains("error[E0701]: nvcc:"), "{e}");
    assert!(
        e.contains("bad_body.mpk:5:5"),
        "points at the contract line: {e}"
    );
    assert!(e.contains("undefined_symbol"), "{e}");
}

/// An inline body that nvcc rejects in one instance only: the error names that unit and its
/// target (the contract line alone does not say which build failed). The assertion reads
/// `sizeof`, which check leaves to nvcc (a plain constant expression of the params is E0031 at
/// check time).
#[test]
fn nvcc_errors_name_the_failing_instance() {
    let text = "task by_inst {\n  family consumer-no-smem\n  param n: int in 1..=1024 = 64\n  tensor y: f32[n] out\n  instance even(n = 64)\n  instance odd(n = 65)\n  body cuda {\n    static_assert(sizeof(float) * params::n % 8 == 0, \"by_inst takes an even n\");\n    for (int i = threadIdx.x; i < params::n; i += kConsumerThreads) y[i] = 0.f;\n  }\n}\n";
    let e = build_failing("by_inst", text);
    assert!(e.contains("error[E0701]: nvcc:"), "{e}");
    assert!(e.contains("by_inst takes an even n"), "{e}");
    assert!(e.contains("nvcc failed on unit `by_inst_odd` for "), "{e}");
    assert!(!e.contains("unit `by_inst_even`"), "{e}");
}

/// Writes helper contract `helper` as `h.mpk` and the contract `user` that uses it as `u.mpk` into
/// a fresh folder `name`, and runs `mpkc build u.mpk --out o --no-cache` there: the folder and
/// the run.
fn build_helper_and_user(name: &str, helper: &str, user: &str) -> (PathBuf, Output) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("h.mpk"), helper).unwrap();
    std::fs::write(dir.join("u.mpk"), user).unwrap();
    let o = mpkc()
        .current_dir(&dir)
        .args(["build", "u.mpk", "--out", "o", "--no-cache"])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    (dir, o)
}

#[test]
fn nvcc_errors_in_a_helper_s_body_map_to_its_use() {
    // The helper's own check (a static_assert on its param) fails for the `use` line's value;
    // it reads `sizeof`, which check leaves to nvcc (a plain one is E0026 at check time).
    let (_, o) = build_helper_and_user(
        "helper_nvcc",
        "task even_row {\n  family helper\n  param n: int in 2..=1024 = 64\n  tensor y: f32[n] out\n  body cuda {\n    static_assert(sizeof(float) * params::n % 8 == 0, \"even_row takes an even n\");\n    for (int i = threadIdx.x; i < params::n; i += kConsumerThreads) y[i] = 0.f;\n  }\n}\n",
        "task odd_user {\n  family consumer-no-smem\n  tensor y: f32[65] out\n  use even_row from \"h.mpk\" (n = 65)\n  body cuda {\n    even_row(y);\n  }\n}\n",
    );
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("error[E0701]: nvcc:"), "{e}");
    assert!(e.contains("even_row takes an even n"), "{e}");
    assert!(e.contains("u.mpk:4:3"), "points at the `use` line: {e}");
    assert!(e.contains("h.mpk:6"), "names the helper's line: {e}");
}

/// A helper's named region members have the typed accessors a task's do (`buf.sums_part()`):
/// `valid::body` accepts them in a helper's body, so its SMEM view declares them and nvcc
/// compiles the call (they were missing from the helper's view: check passed, build failed).
#[test]
fn a_helper_s_body_reads_its_region_members_through_accessors() {
    let (dir, o) = build_helper_and_user(
        "helper_accessors",
        "task warp_sums {\n  family helper\n  tensor x: f32[128] in\n  tensor y: f32[4] out\n  region sums { holds f32[4] part, i32[4] count; align 16 }\n  barrier sync = named(3, threads 128)\n  body cuda {\n    float const s = mpkc::warp_sum(x[threadIdx.x]);\n    if ((threadIdx.x & 31) == 0) { buf.sums_part()[threadIdx.x >> 5] = s; buf.sums_count()[threadIdx.x >> 5] = 32; }\n    mpkc::named_barrier_sync(BAR_SYNC, kConsumerThreads);\n    if (threadIdx.x < 4) y[threadIdx.x] = buf.sums_part()[threadIdx.x] / buf.sums_count()[threadIdx.x];\n    mpkc::named_barrier_sync(BAR_SYNC, kConsumerThreads);\n  }\n}\n",
        "task sums_user {\n  family consumer\n  tensor x: f32[128] in\n  tensor y: f32[4] out\n  use warp_sums from \"h.mpk\"\n  body cuda {\n    warp_sums(x, y);\n  }\n}\n",
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let cuh = std::fs::read_to_string(dir.join("o/sums_user.cuh")).unwrap();
    let view = &cuh[cuh.find("namespace helper_warp_sums").unwrap()..];
    assert!(
        view.contains(
            "__device__ float *sums_part() const { return reinterpret_cast<float *>(sums + 0); }"
        ),
        "{view}"
    );
    assert!(
        view.contains("__device__ int32_t *sums_count() const { return reinterpret_cast<int32_t *>(sums + 16); }"),
        "{view}"
    );
}

#[test]
fn build_of_the_stdlib_prints_the_budget_table_and_kernels() {
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("stdlib_out");
    let _ = std::fs::remove_dir_all(&out);
    // Through the nvcc cache the test binaries share (tests/support/nvcc_cache.rs): the same
    // kernels tests/generated.rs compiles, one nvcc run per kernel in the whole suite
    // (tests/build.rs runs `--no-cache`).
    let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("nvcc-cache");
    let o = mpkc()
        .current_dir(root())
        .env("MPKC_CACHE_DIR", &cache)
        .args(["build", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let s = stdout(&o);
    assert!(
        s.contains("linear_sm100_v2")
            && s.contains("221200")
            && s.contains("14/14")
            && s.contains("22/31"),
        "{s}"
    );
    for unit in [
        "rmsnorm_v2_h4096",
        "rmsnorm_v2_h7168",
        "silu_mul_v2",
        "embedding_v2",
        "argmax_partial_v2",
        "argmax_reduce_v2",
    ] {
        for target in ["sm_100a", "sm_90a"] {
            assert!(
                out.join(format!("{unit}_harness.{target}.cubin")).is_file(),
                "{unit} {target}"
            );
        }
    }
    assert!(out.join("linear_sm100_v2_spec.h").is_file());
}

#[test]
fn predecessors_all_reports_page_13_exposure() {
    let o = run(&[
        "check",
        "--predecessors",
        "all",
        "stdlib/linear_sm100_v2.mpk",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "a report, not an error: {}",
        stderr(&o)
    );
    let s = stdout(&o);
    assert!(
        s.contains("linear_sm100_v2 on sm_100a: exposed when page 13 is at 13 of the 14 positions"),
        "{s}"
    );
    assert!(s.contains("positions 0-12: logical page 12 (16384 bytes used) lands on page 13 (11264 usable), 5120 bytes over"), "{s}");
    let o = run(&["check", "--predecessors", "all", "stdlib/silu_mul_v2.mpk"]);
    assert!(
        stdout(&o).contains("silu_mul_v2 on sm_100a: safe after every predecessor release order"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn check_and_build_report_a_pipeline_the_backend_cannot_lower() {
    let text = "task no_tile {\n  family pipeline\n  targets sm_100a\n  tensor W: bf16[7168, 2048] in weight tma(box [64, 128, 2], swizzle 128B)\n  tensor C: bf16[16, 7168] out output\n  mma tcgen05 f16 (bf16 x bf16 -> f32) m128 n16 k16\n  tmem cols 32\n  stages 2\n  region W[stage] { bytes 32768; align 1024 }\n  channel w_ring: W, loader -> launcher (tma W), empty by launcher (commit)\n}\n";
    let p = tmp("no_tile.mpk", text);
    // What check accepts is what build generates: the lowering's E0013 is an error of `check`
    // (and so of the editor), not found first by `build`.
    let c = run(&["check", p.to_str().unwrap()]);
    assert_eq!(c.status.code(), Some(1), "{}", stderr(&c));
    assert!(stderr(&c).contains("error[E0013]") && stderr(&c).contains("no `tile`"));
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("no_tile_out");
    let _ = std::fs::remove_dir_all(&out);
    let o = mpkc()
        .args(["build", p.to_str().unwrap(), "--out", out.to_str().unwrap()])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("error[E0013]") && stderr(&o).contains("no `tile`"),
        "{}",
        stderr(&o)
    );
}
