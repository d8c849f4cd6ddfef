//! Issue 9 ("Hardening first"), the command line: generated-file clashes across inputs, derived
//! contracts' diagnostics in the user's file, `--instance`/`--param` over several inputs, JSON
//! mode's stdout, and the inputs themselves (non-UTF-8 files, `-`, directories, `--out`).

use mpkc::back::{files, SUPPORT_HEADERS};
use mpkc::driver::build::generate_all;
use mpkc::driver::{check_sources, stdlib};
use mpkc::sema::SemaOptions;
use mpkc::valid::CheckOptions;
use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn run(args: &[&str]) -> Output {
    run_stdin(args, None)
}

fn run_stdin(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mpkc"))
        .current_dir(root())
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(bytes) = stdin {
        // A usage error may end mpkc before it reads its input: a closed pipe is its answer.
        match child.stdin.take().unwrap().write_all(bytes) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
            r => r.unwrap(),
        }
    }
    child.wait_with_output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("cli_inputs")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write(dir: &Path, name: &str, bytes: impl AsRef<[u8]>) -> String {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p.to_string_lossy().into_owned()
}

fn stdlib_text(file: &str) -> String {
    std::fs::read_to_string(root().join("stdlib").join(file)).unwrap()
}

/// Every stdout line as a JSON object (panics naming the line that is not one).
fn json_lines(o: &Output) -> Vec<serde_json::Value> {
    stdout(o)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("not JSON ({e}): {l}\nstderr: {}", stderr(o)));
            assert!(v.is_object(), "not an object: {l}");
            v
        })
        .collect()
}

fn line_of(text: &str, needle: &str) -> u64 {
    let at = text.find(needle).unwrap();
    text[..at].matches('\n').count() as u64 + 1
}

/// The input: a user task named `linear_sm100_v2_sm90` (the stdlib linear renamed, with a
/// TaskType of its own, so that the generated-file clash is the only error: E0605 otherwise).
fn sm90_clash_file(dir: &Path) -> String {
    let text = stdlib_text("linear_sm100_v2.mpk")
        .replace("task linear_sm100_v2 {", "task linear_sm100_v2_sm90 {")
        .replace("  task_id 244\n", "  task_id 248\n");
    assert!(
        text.contains("task_id 248"),
        "the stdlib linear's TaskType moved"
    );
    write(dir, "clash.mpk", text)
}

/// The stdlib split-K linear with an extra instance `big` whose derived reduce task alone breaks
/// a rule: its `reduce_task_id` (a param here, 247 for `big`) is inside MPK's TMA range, which a
/// task loading through no tensor map may not take (E0510, I-T6). (Issue 9 used N = 2^31, which
/// the linear itself now refuses, E0013.)
fn splitk_big(dir: &Path, name: &str) -> (String, String) {
    // One instance, `big`, whose derived reduce takes the `reduce_task_id` 247: inside MPK's TMA
    // range though the reduce loads through no tensor map (E0510 on the derived contract). (A
    // `reduce_task_id` that reads a param, one value per instance, is E0605.)
    let stdlib = stdlib_text("linear_bf16_splitk.mpk");
    let mut text = String::new();
    let mut placed = false;
    for line in stdlib.lines() {
        if line == "  reduce_task_id 355" {
            text.push_str("  reduce_task_id 247\n");
        } else if line.starts_with("  instance ") {
            if !placed {
                text.push_str("  instance big(N = 576, K = 7168, splits = 14)\n");
                placed = true;
            }
        } else {
            text.push_str(line);
            text.push('\n');
        }
    }
    assert!(placed && text.contains("reduce_task_id 247"));
    (write(dir, name, &text), text)
}

// 1. Generated-file clashes.

#[test]
fn a_user_task_writing_the_stdlib_linears_sm90_kernel_is_e0012_in_both_files() {
    let dir = scratch("sm90_clash");
    let user = sm90_clash_file(&dir);
    let o = run(&["check", &user, "stdlib/linear_sm100_v2.mpk"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert_eq!(
        e.matches("error[E0012]: `linear_sm100_v2_sm90.cuh` would be written twice")
            .count(),
        2,
        "{e}"
    );
    assert!(e.contains("as the sm_90a kernel of task instance `linear_sm100_v2` (stdlib/linear_sm100_v2.mpk:5)"), "{e}");
    assert!(e.contains(&format!("{user}:5:6")), "{e}");
    assert!(e.contains("0 task instances clean, 2 errors"), "{e}");
}

#[test]
fn build_stops_at_the_clash_instead_of_failing_in_nvcc() {
    let dir = scratch("sm90_clash_build");
    let user = sm90_clash_file(&dir);
    let out = dir.join("out");
    let o = run(&[
        "build",
        &user,
        "stdlib/linear_sm100_v2.mpk",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("error[E0012]"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("E0701"), "{}", stderr(&o));
    assert!(!out.exists(), "nothing is written");
}

#[test]
fn the_clash_check_names_the_files_the_writer_generates() {
    let checked = check_sources(
        &stdlib::sources(),
        &SemaOptions::default(),
        &CheckOptions::default(),
    );
    let units = generate_all(&checked);
    assert!(units.len() > 20);
    for u in &units {
        let t = &checked[u.source].tasks[u.task];
        let written: Vec<&str> = u.files.iter().map(|f| f.name.as_str()).collect();
        let planned: Vec<String> = files::sources(t).into_iter().map(|f| f.name).collect();
        assert_eq!(written, planned, "{}", u.unit);
        let outputs: Vec<String> = files::outputs(t).into_iter().map(|(n, _)| n).collect();
        assert_eq!(&outputs[..planned.len()], &planned[..], "{}", u.unit);
    }
}

#[test]
fn the_clash_check_names_the_cubins_nvcc_writes() {
    let dir = scratch("files_of_a_build");
    let out = dir.join("out");
    let o = run(&[
        "build",
        "stdlib/silu_mul_v2.mpk",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let on_disk: BTreeSet<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let checked = check_sources(
        &[mpkc::driver::Source {
            path: "stdlib/silu_mul_v2.mpk".into(),
            text: stdlib_text("silu_mul_v2.mpk"),
        }],
        &SemaOptions::default(),
        &CheckOptions::default(),
    );
    let mut expected: BTreeSet<String> =
        SUPPORT_HEADERS.iter().map(|(n, _)| n.to_string()).collect();
    expected.insert(mpkc::driver::outdir::STAMP.to_string());
    for t in checked.iter().flat_map(|c| c.tasks.iter()) {
        expected.extend(files::outputs(t).into_iter().map(|(n, _)| n));
    }
    assert_eq!(on_disk, expected);
}

// 2. Derived contracts.

#[test]
fn a_derived_reduces_errors_point_at_the_users_instance() {
    let dir = scratch("derived_big");
    let (user, text) = splitk_big(&dir, "splitk.mpk");
    let o = run(&["check", "--message-format", "json", &user]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(!stdout(&o).contains('#'), "no derived path: {}", stdout(&o));
    let lines = json_lines(&o);
    assert_eq!(lines.len(), 1, "big's reduce only: {}", stdout(&o));
    let v = &lines[0];
    assert_eq!(v["code"], "E0510");
    assert_eq!(v["file"], user.as_str());
    // The primary span is the user's `reduce_task_id` item (the derived task's TaskType).
    assert_eq!(
        v["span"]["line_start"],
        line_of(&text, "reduce_task_id"),
        "{v}"
    );
    let notes = v["notes"].to_string();
    assert!(
        notes.contains("linear_bf16_splitk_big_reduce") && notes.contains("derived contract"),
        "{notes}"
    );
    // The instance it is derived from and the epilogue that causes the derivation are secondary
    // labels.
    let labels = v["labels"].as_array().unwrap();
    for line in [line_of(&text, "instance big"), line_of(&text, "epilogue")] {
        assert!(
            labels
                .iter()
                .any(|l| l["primary"] == false && l["span"]["line_start"] == line),
            "line {line}: {v}"
        );
    }
    // The instance whose reduce failed is not counted clean beside the error (it was "1 task
    // instance clean, 1 error").
    let o = run(&["check", &user]);
    assert!(
        stderr(&o).contains("(and 1 derived contract): 0 task instances clean, 1 error"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_user_task_named_like_a_derived_reduce_is_reported_in_the_users_file() {
    let dir = scratch("derived_clash");
    let text = format!(
        "{}\ntask linear_bf16_splitk_q_b_reduce {{\n  family consumer-no-smem\n  tensor y: f32[128] out\n  body cuda {{ y[threadIdx.x] = 0.0f; }}\n}}\n",
        stdlib_text("linear_bf16_splitk.mpk")
    );
    let user = write(&dir, "splitk.mpk", &text);
    let o = run(&["check", "--message-format", "json", &user]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let lines = json_lines(&o);
    let at: BTreeSet<u64> = lines
        .iter()
        .map(|v| {
            assert_eq!(v["code"], "E0012");
            assert_eq!(v["file"], user.as_str());
            v["span"]["line_start"].as_u64().unwrap()
        })
        .collect();
    let want: BTreeSet<u64> = [
        line_of(&text, "instance q_b"),
        line_of(&text, "task linear_bf16_splitk_q_b_reduce"),
    ]
    .into();
    assert_eq!(at, want, "{}", stdout(&o));
}

#[test]
fn a_hash_in_a_file_name_does_not_make_a_derived_contract() {
    let dir = scratch("hash_name");
    let plain = write(&dir, "has#hash.mpk", stdlib_text("silu_mul_v2.mpk"));
    let o = run(&["check", &plain]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("checked 1 file: 1 task instance clean"),
        "{}",
        stderr(&o)
    );
    let text = stdlib_text("linear_bf16_splitk.mpk");
    // One derived reduce per instance of the split-K contract, whatever the stdlib holds.
    let instances = text
        .lines()
        .filter(|l| l.trim_start().starts_with("instance "))
        .count();
    let splitk = write(&dir, "split#k.mpk", text);
    let o = run(&["check", &plain, &splitk]);
    assert!(
        stderr(&o).contains(&format!(
            "checked 2 files (and {instances} derived contracts)"
        )),
        "{}",
        stderr(&o)
    );
}

// 3. `--instance` and `--param` over several inputs.

#[test]
fn an_instance_filter_selects_across_the_stdlib() {
    let o = run(&["plan", "--instance", "h4096", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let lines = json_lines(&o);
    assert_eq!(lines.len(), 2, "rmsnorm_v2 h4096 on two targets");
    assert!(lines.iter().all(|v| v["instance"] == "h4096"));
    let o = run(&["plan", "--instance", "h4096"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stdout(&o).contains("silu_mul_v2"), "{}", stdout(&o));
    let o = run(&["check", "--instance", "h4096"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("1 task instance clean, 0 errors"),
        "{}",
        stderr(&o)
    );
    let o = run(&["verify", "--list", "--instance", "qkv_a"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).lines().all(|l| l.contains("qkv_a")),
        "{}",
        stdout(&o)
    );
}

#[test]
fn an_instance_no_input_declares_is_one_error_naming_those_that_exist() {
    for args in [
        &["check"][..],
        &["plan"],
        &["build", "--out", "/nonexistent/never"],
        &["verify", "--list"],
    ] {
        let mut a = args.to_vec();
        a.extend(["--instance", "h9999"]);
        let o = run(&a);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert_eq!(e.matches("error").count(), 1, "{e}");
        assert!(
            e.contains("error[E0010]: `--instance h9999` matches no instance of any input"),
            "{e}"
        );
        assert!(e.contains("h4096 (task rmsnorm_v2)"), "{e}");
        assert!(stdout(&o).is_empty(), "{}", stdout(&o));
    }
}

#[test]
fn a_param_some_inputs_lack_applies_where_declared_and_an_unknown_one_is_one_error() {
    // 4 tokens fit every contract declaring `m` (`hidden` fits none across the stdlib now that
    // E0031 evaluates add_rmsnorm's whole-vector assertion: a multiple of 1024 there, at most
    // 640 in qkv_a_norm's views).
    let o = run(&["plan", "--param", "m=4", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(json_lines(&o).len() > 20, "every stdlib task is planned");
    // One error for the whole run, not one per input that lacks it.
    let o = run(&["check", "--param", "nosuch=1"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert_eq!(e.matches("error").count(), 1, "{e}");
    assert!(
        e.contains("`--param nosuch=1` names no param of any input"),
        "{e}"
    );
}

#[test]
fn a_param_value_a_body_rejects_is_reported_as_the_command_lines() {
    // rmsnorm's eps must be above zero (E0009): the value is `--param`'s, not the declaration's
    // default nor an instance's, so the label says so and no "in instances" note follows.
    let o = run(&["check", "stdlib/rmsnorm_v2.mpk", "--param", "eps=-0.5"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert_eq!(e.matches("error[E0009]").count(), 1, "{e}");
    assert!(e.contains("but `eps` is -0.5"), "{e}");
    assert!(e.contains("`eps` = -0.5 from `--param`"), "{e}");
    assert!(e.contains("`--param eps=1e-6`"), "{e}");
    assert!(!e.contains("in instances"), "{e}");
}

// 4. JSON mode: stdout holds JSON objects only.

#[test]
fn json_mode_stdout_is_one_json_object_per_line() {
    let dir = scratch("json_mode");
    let clash = sm90_clash_file(&dir);
    let (big, _) = splitk_big(&dir, "big.mpk");
    let out = dir.join("out");
    let out = out.to_str().unwrap();
    let cases: Vec<(Vec<&str>, i32)> = vec![
        (vec!["check", &big, "stdlib/silu_mul_v2.mpk"], 1),
        (vec!["check", "--predecessors", "all"], 0),
        (vec!["check", "--predecessors", "all", &big], 1),
        (vec!["plan", "--format", "json"], 0),
        (vec!["plan"], 0),
        (
            vec![
                "plan",
                "stdlib/linear_sm100_v2.mpk",
                "--preferred",
                "13,0,1,2,3,4,5,6,7,8,9,10,11,12",
            ],
            1,
        ),
        (
            vec!["build", &clash, "stdlib/linear_sm100_v2.mpk", "--out", out],
            1,
        ),
        (vec!["build", "stdlib/silu_mul_v2.mpk", "--out", out], 0),
        (vec!["verify", "--list"], 0),
    ];
    for (args, status) in cases {
        let mut a = args.clone();
        a.extend(["--message-format", "json"]);
        let o = run(&a);
        assert_eq!(o.status.code(), Some(status), "{a:?}: {}", stderr(&o));
        let lines = json_lines(&o);
        assert!(!lines.is_empty(), "{a:?} prints something");
    }
    let o = run(&[
        "check",
        "--predecessors",
        "all",
        "stdlib/linear_sm100_v2.mpk",
        "--message-format",
        "json",
    ]);
    let v = &json_lines(&o)[0];
    assert_eq!(v["reason"], "predecessors");
    assert_eq!(v["unit"], "linear_sm100_v2");
    assert_eq!(v["safe"], false);
    assert_eq!(
        v["runs"][0],
        serde_json::json!({"first": 0, "last": 12, "logical_page": 12, "bytes_used": 16384, "bytes_over": 5120})
    );
}

#[test]
fn plan_text_with_json_messages_is_a_usage_error() {
    let o = run(&["plan", "--format", "text", "--message-format", "json"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stdout(&o).is_empty());
}

// 5. Inputs.

#[test]
fn a_non_utf8_input_is_a_diagnostic_and_the_other_inputs_are_checked() {
    let dir = scratch("latin1");
    let bad = write(
        &dir,
        "latin1.mpk",
        b"task t {\n  family consumer-no-smem\n  // caf\xe9\n}\n",
    );
    let o = run(&["check", &bad, "stdlib/silu_mul_v2.mpk"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains(
            "error[E0001]: the file is not UTF-8: byte 0xE9 at byte offset 43 (line 3, column 9)"
        ),
        "{e}"
    );
    assert!(e.contains(&format!("{bad}:3:9")), "{e}");
    assert!(
        e.contains("checked 2 files: 1 task instance clean, 1 error"),
        "{e}"
    );
    let o = run(&["check", "--message-format", "json", &bad]);
    let v = &json_lines(&o)[0];
    assert_eq!(v["span"]["byte_start"], 43);
    assert_eq!(v["span"]["line_start"], 3);
}

#[test]
fn stdin_is_an_input_of_check_plan_and_build() {
    let silu = stdlib_text("silu_mul_v2.mpk");
    let o = run_stdin(&["check", "-"], Some(silu.as_bytes()));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("checked 1 file: 1 task instance clean"));
    let o = run_stdin(&["plan", "-", "--format", "json"], Some(silu.as_bytes()));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(json_lines(&o)[0]["task"], "silu_mul_v2");
    let broken = silu.replace("family consumer", "family nosuch");
    let dir = scratch("stdin_build");
    let out = dir.join("out");
    for args in [
        vec!["check", "-", "stdlib/rmsnorm_v2.mpk"],
        vec!["plan", "-"],
        vec!["build", "-", "--out", out.to_str().unwrap()],
    ] {
        let o = run_stdin(&args, Some(broken.as_bytes()));
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("┌─ <stdin>:"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
    let o = run_stdin(&["check", "-", "-"], Some(silu.as_bytes()));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = run_stdin(&["check", "-"], Some(b"task t {\n  // \xff\n}\n"));
    assert!(stderr(&o).contains("<stdin>:2:6"), "{}", stderr(&o));
    let o = run_stdin(&["verify", "--list", "-"], Some(silu.as_bytes()));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn out_naming_a_file_is_a_usage_error_naming_it() {
    let dir = scratch("out_file");
    let f = write(&dir, "taken", "x");
    for args in [
        vec!["build", "stdlib/silu_mul_v2.mpk", "--out", &f],
        vec!["verify", "--list", "--out", &f],
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(&format!("`--out` must be a directory, and {f} is a file")),
            "{}",
            stderr(&o)
        );
    }
    let below = format!("{f}/sub");
    let o = run(&["build", "stdlib/silu_mul_v2.mpk", "--out", &below]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("{f} is a file")),
        "{}",
        stderr(&o)
    );
}

#[test]
fn verify_needs_at_least_one_task_per_queue() {
    let o = run(&["verify", "--list", "--tasks", "0"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--tasks"), "{}", stderr(&o));
    let o = run(&["verify", "--list", "--tasks", "1"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn a_file_named_twice_is_checked_once() {
    // Directly twice, and through its directory after itself: one file, one check, no E0012 of
    // the file's units against themselves.
    let dir = scratch("named_twice");
    let f = write(&dir, "a.mpk", stdlib_text("rmsnorm_v2.mpk"));
    let d = dir.to_str().unwrap().to_string();
    for args in [vec!["check", &f, &f], vec!["check", &f, &d]] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("checked 1 file:"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
    // The same file under another spelling (`dir/./a.mpk`) is the same file.
    let other = format!("{d}/./a.mpk");
    let o = run(&["check", &f, &other]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("checked 1 file:"), "{}", stderr(&o));
}

#[test]
fn a_directory_stands_for_its_own_mpk_files_sorted() {
    let dir = scratch("dir_input");
    let broken = "task t {\n  family nosuch\n}\n";
    write(&dir, "b.mpk", broken);
    write(&dir, "a.mpk", broken);
    write(&dir, "notes.txt", "not a contract");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    write(&dir.join("sub"), "c.mpk", broken);
    let o = run(&["check", "--message-format", "json", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let files: Vec<String> = json_lines(&o)
        .iter()
        .map(|v| v["file"].as_str().unwrap().to_string())
        .collect();
    let mut seen: Vec<String> = Vec::new();
    for f in files {
        if seen.last() != Some(&f) {
            seen.push(f);
        }
    }
    let d = dir.to_str().unwrap();
    assert_eq!(seen, vec![format!("{d}/a.mpk"), format!("{d}/b.mpk")]);
    let o = run(&["check", "stdlib"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // stdlib/*.mpk only: stdlib/dsv3/ is a subdirectory, not searched.
    let top = std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("stdlib"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "mpk")
        })
        .count();
    assert!(
        stderr(&o).contains(&format!("checked {top} files")),
        "{}",
        stderr(&o)
    );
    let empty = scratch("dir_without_contracts");
    write(&empty, "readme.txt", "x");
    let o = run(&["check", empty.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("holds no `.mpk` file"),
        "{}",
        stderr(&o)
    );
}

/// A stdlib path that is not on disk (here: run from a directory without `stdlib/`) names the
/// embedded contract: the path E0026's help gives for a stdlib helper works from anywhere. A
/// path neither on disk nor in the stdlib is still a usage error.
#[test]
fn a_stdlib_path_checks_the_embedded_contract_from_any_directory() {
    let dir = std::env::temp_dir().join(format!("mpkc_embedded_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_mpkc"))
        .current_dir(&dir)
        .args([
            "check",
            "stdlib/dsv3/fp8_quant_1x128.mpk",
            "./stdlib/dsv3/../dsv3/rmsnorm_fp8.mpk",
            "stdlib/dsv3/fp8_quant_1x128.mpk",
        ])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{err}");
    assert!(err.contains("checked 2 files"), "{err}");
    let missing = Command::new(env!("CARGO_BIN_EXE_mpkc"))
        .current_dir(&dir)
        .args(["check", "stdlib/dsv3/no_such_op.mpk"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    std::fs::remove_dir_all(&dir).ok();
}
