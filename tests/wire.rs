//! `mpkc wire` on the fixture MPK tree (`tests/fixtures/mirage`, MPK's file names and anchor
//! lines): a second run changes nothing, wiring only adds lines, every stdlib unit wires into a
//! fresh copy with each piece once, a taken TaskType id and a missing anchor are diagnostics that
//! write nothing, `--dry-run` prints the unified diff of exactly what a run writes, and the files
//! `mpkc build` generates do not change. What wire renders without a tree is tests/wire_facts.rs.

use mpkc::driver::build::generate_all;
use mpkc::wire::{self, anchors, Status};

#[path = "support/stdlib_units.rs"]
mod stdlib_units;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use stdlib_units::{stdlib_checked, stdlib_units};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A fresh copy of the fixture tree in a scratch folder named `name`.
fn fixture(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("wire")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    copy(&root().join("tests/fixtures/mirage"), &d);
    d
}

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}

/// Every file under `d` (relative path → bytes).
fn tree(d: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut m = BTreeMap::new();
    let mut stack = vec![d.to_path_buf()];
    while let Some(p) = stack.pop() {
        for e in std::fs::read_dir(&p).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(d).unwrap().display().to_string();
                m.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    m
}

fn mpkc(args: &[&str], mirage: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mpkc"))
        .current_dir(root())
        .arg("wire")
        .args(args)
        .arg("--mirage")
        .arg(mirage)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn status(o: &Output, code: i32) {
    assert_eq!(
        o.status.code(),
        Some(code),
        "stdout:\n{}\nstderr:\n{}",
        text(&o.stdout),
        text(&o.stderr)
    );
}

fn file(d: &Path, f: &str) -> String {
    std::fs::read_to_string(d.join(f)).unwrap()
}

#[test]
fn a_second_run_changes_nothing() {
    let d = fixture("twice");
    let first = mpkc(&[], &d);
    status(&first, 0);
    let after_first = tree(&d);
    assert_ne!(
        after_first,
        tree(&root().join("tests/fixtures/mirage")),
        "the first run wired nothing"
    );
    let second = mpkc(&[], &d);
    status(&second, 0);
    assert_eq!(tree(&d), after_first, "the second run changed the tree");
    let err = text(&second.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("wire ")).collect();
    assert!(!lines.is_empty(), "{err}");
    for l in lines {
        assert!(l.ends_with("every piece already present"), "{l}");
    }
}

/// Wiring only inserts lines: every line of every original file is still there, in order, and
/// the fixture's other files are untouched.
#[test]
fn wiring_only_adds_lines() {
    let d = fixture("additive");
    let before = tree(&d);
    status(&mpkc(&[], &d), 0);
    let after = tree(&d);
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>()
    );
    for (f, old) in &before {
        let (old, new) = (text(old), text(&after[f]));
        let diff = similar::TextDiff::from_lines(&old, &new);
        for op in diff.ops() {
            assert!(
                matches!(op.tag(), similar::DiffTag::Equal | similar::DiffTag::Insert),
                "{f}: wire changed or removed lines: {op:?}"
            );
        }
        if !anchors::FILES.contains(&f.as_str()) {
            assert_eq!(old, new, "{f} is not a file wire edits");
        }
    }
}

/// Every stdlib unit wires into a fresh copy of the fixture, alone, and the result holds each of
/// its pieces exactly once; the registration states the `.cuh`'s Registration and the tuple
/// the contract's tensor split.
#[test]
fn every_stdlib_unit_wires_into_a_fresh_copy_with_each_piece_once() {
    let units = stdlib_units();
    assert!(units.len() >= 15, "{} units", units.len());
    for u in &units {
        let d = fixture(&format!("unit_{}", u.unit));
        let plan = wire::plan(&d, std::slice::from_ref(u)).unwrap();
        assert!(plan.diags.is_empty(), "{}: {:?}", u.unit, plan.diags);
        assert_eq!(plan.units.len(), 1);
        assert!(
            plan.units[0]
                .pieces
                .iter()
                .all(|p| p.status == Status::Added),
            "{:?}",
            plan.units[0]
        );
        assert_eq!(plan.units[0].pieces.len(), 8);
        wire::write(&d, &plan.changes).unwrap();
        let once = |f: &str, needle: &str| {
            let t = file(&d, f);
            assert_eq!(
                t.matches(needle).count(),
                1,
                "{}: `{needle}` in {f}:\n{t}",
                u.unit
            );
        };
        once(
            anchors::RUNTIME_HEADER,
            &format!("  {} = {},\n", u.enum_name, u.task_id),
        );
        once(
            anchors::TASK_REGISTER_H,
            &format!("int register_{}_task(", u.unit),
        );
        once(
            anchors::TASK_REGISTER_CC,
            &format!("blackwell_v2/{}_spec.h\"", u.unit),
        );
        once(
            anchors::TASK_REGISTER_CC,
            &format!("int TaskRegister::register_{}_task(", u.unit),
        );
        once(
            anchors::TASK_REGISTER_CC,
            &format!(
                "register_variant_smem_info({}, variant_id, info);",
                u.enum_name
            ),
        );
        once(
            anchors::TASK_REGISTER_CC,
            &format!("::kernel::{}::make_smem_info()", u.unit),
        );
        once(anchors::GRAPH_CC, &format!("(name == \"{}\")", u.unit));
        once(
            anchors::GRAPH_CC,
            &format!(
                "std::make_tuple({}, {}, {}, variant_id)",
                u.inputs.len(),
                u.mpk_outputs().len(),
                u.enum_name
            ),
        );
        once(
            anchors::RUNTIME_CC,
            &format!("if (task_type == {}) {{", u.enum_name),
        );
        once(
            anchors::RUNTIME_CC,
            &format!("task_type_to_name[{}] = \"{}\";", u.enum_name, u.enum_name),
        );
        once(
            anchors::PERSISTENT_KERNEL_PY,
            &format!("def {}_layer(", u.unit),
        );
        once(
            anchors::PERSISTENT_KERNEL_PY,
            &format!("register_task(tb_graph, \"{}\", [])", u.unit),
        );
        // The registration says what the generated Registration says.
        let cc = file(&d, anchors::TASK_REGISTER_CC);
        let r = &u.registration;
        assert!(cc.contains(&format!(
            "roles.auto_consumer_finish = {};",
            r.auto_consumer_finish
        )));
        assert!(cc.contains(&format!(
            "roles.consumer_owned_page_claim = {};  // page mode {}",
            r.page_mode == 2,
            r.page_mode
        )));
        for (role, body) in r.roles() {
            let empty = cc.contains(&format!("roles.{role} = \"\";"));
            assert_eq!(empty, !body, "{}: role {role}", u.unit);
        }
    }
}

#[test]
fn a_taken_task_id_is_a_diagnostic_on_task_id_and_writes_nothing() {
    let d = fixture("taken");
    let before = tree(&d);
    let contract = "tests/fixtures/wire/taken_id.mpk";
    let o = mpkc(&[contract, "--message-format", "json"], &d);
    status(&o, 1);
    assert_eq!(tree(&d), before, "a failed wire wrote to the tree");
    let src = std::fs::read_to_string(root().join(contract)).unwrap();
    let diags: Vec<serde_json::Value> = text(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|v: &serde_json::Value| v["code"] == "E0801")
        .collect();
    assert_eq!(diags.len(), 1, "{}", text(&o.stdout));
    let d0 = &diags[0];
    let (a, b) = (
        d0["span"]["byte_start"].as_u64().unwrap() as usize,
        d0["span"]["byte_end"].as_u64().unwrap() as usize,
    );
    assert_eq!(&src[a..b], "task_id 253");
    assert!(
        d0["message"]
            .as_str()
            .unwrap()
            .contains("TASK_LINEAR_SM100"),
        "{d0}"
    );
    let help = d0["help"].as_str().unwrap();
    assert!(help.contains("task_id 254"), "{help}");
    // The human rendering, as the user sees it.
    let human = mpkc(&[contract], &d);
    status(&human, 1);
    insta::with_settings!({snapshot_path => "../snapshots/wire", prepend_module_to_snapshot => false, omit_expression => true}, {
        insta::assert_snapshot!("e0801_taken_id", text(&human.stderr).replace(&d.display().to_string(), "$MIRAGE"));
    });
}

#[test]
fn a_name_bound_to_another_id_is_a_diagnostic() {
    let d = fixture("renumbered");
    let hdr = d.join(anchors::RUNTIME_HEADER);
    let t = file(&d, anchors::RUNTIME_HEADER).replace(
        "  TASK_ATTN_SM100 = 257,\n",
        "  TASK_ATTN_SM100 = 257,\n  TASK_RMSNORM_V2 = 327,\n",
    );
    std::fs::write(&hdr, t).unwrap();
    let o = mpkc(&["stdlib/rmsnorm_v2.mpk", "--message-format", "json"], &d);
    status(&o, 1);
    let out = text(&o.stdout);
    assert!(
        out.contains("\"code\":\"E0801\"") && out.contains("is already TaskType 327"),
        "{out}"
    );
    assert!(out.contains("set `task_id 327`"), "{out}");
}

#[test]
fn a_missing_anchor_names_the_file_and_the_anchor_and_writes_nothing() {
    let d = fixture("anchor");
    let rc = d.join(anchors::RUNTIME_CC);
    let t = file(&d, anchors::RUNTIME_CC)
        .replace("        // Initialize input tensors to the task\n", "");
    std::fs::write(&rc, t).unwrap();
    let before = tree(&d);
    let o = mpkc(&["stdlib/silu_mul_v2.mpk"], &d);
    status(&o, 1);
    assert_eq!(tree(&d), before, "a failed wire wrote to the tree");
    let err = text(&o.stderr);
    assert!(err.contains("error[E0802]"), "{err}");
    assert!(
        err.contains(
            "`src/kernel/runtime.cc` has no anchor `// Initialize input tensors to the task`"
        ),
        "{err}"
    );
    assert!(err.contains("help:"), "{err}");
    insta::with_settings!({snapshot_path => "../snapshots/wire", prepend_module_to_snapshot => false, omit_expression => true}, {
        insta::assert_snapshot!("e0802_missing_anchor", err.replace(&d.display().to_string(), "$MIRAGE"));
    });
    // A missing file is the same diagnostic, naming the file.
    std::fs::remove_file(d.join(anchors::GRAPH_CC)).unwrap();
    let o = mpkc(&["stdlib/silu_mul_v2.mpk"], &d);
    status(&o, 1);
    let err = text(&o.stderr);
    assert!(
        err.contains("error[E0802]: the MPK tree has no `src/kernel/graph.cc`"),
        "{err}"
    );
}

#[test]
fn dry_run_prints_the_diff_of_what_a_run_writes_and_writes_nothing() {
    let dry = fixture("dry");
    let before = tree(&dry);
    let o = mpkc(
        &[
            "stdlib/rmsnorm_v2.mpk",
            "stdlib/linear_sm100_v2.mpk",
            "--dry-run",
        ],
        &dry,
    );
    status(&o, 0);
    assert_eq!(tree(&dry), before, "--dry-run wrote to the tree");
    let diff = text(&o.stdout);
    for f in anchors::FILES {
        assert!(
            diff.contains(&format!("--- a/{f}\n+++ b/{f}\n")),
            "no hunk for {f}:\n{diff}"
        );
    }
    assert!(diff.contains("\n@@ -"), "{diff}");
    // The added lines of the diff are the lines a real run adds, file by file.
    let real = fixture("dry_real");
    status(
        &mpkc(
            &["stdlib/rmsnorm_v2.mpk", "stdlib/linear_sm100_v2.mpk"],
            &real,
        ),
        0,
    );
    let mut per_file: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut current = String::new();
    for l in diff.lines() {
        if let Some(f) = l.strip_prefix("+++ b/") {
            current = f.to_string();
        } else if let Some(added) = l.strip_prefix('+') {
            per_file
                .entry(current.clone())
                .or_default()
                .push(added.to_string());
        } else {
            assert!(
                !l.starts_with('-') || l.starts_with("--- a/"),
                "a removed line: {l}"
            );
        }
    }
    for f in anchors::FILES {
        let old = file(&dry, f);
        let new = file(&real, f);
        let added: Vec<String> = similar::TextDiff::from_lines(&old, &new)
            .iter_all_changes()
            .filter(|c| c.tag() == similar::ChangeTag::Insert)
            .map(|c| c.value().trim_end_matches('\n').to_string())
            .collect();
        assert_eq!(per_file.get(f).cloned().unwrap_or_default(), added, "{f}");
    }
}

/// Levers are compile-time defines that default off: wire defines none, and the files `mpkc
/// build` generates for every stdlib unit are byte-identical before and after wiring (wire only
/// adds to the MPK tree).
#[test]
fn generated_files_do_not_change_and_no_lever_is_defined() {
    let before = generate_all(&stdlib_checked());
    let d = fixture("levers");
    status(&mpkc(&[], &d), 0);
    let after = generate_all(&stdlib_checked());
    assert_eq!(before.len(), after.len());
    for (b, a) in before.iter().zip(&after) {
        assert_eq!(b.unit, a.unit);
        assert_eq!(b.files, a.files, "{}: generated files changed", b.unit);
    }
    let levers: Vec<String> = stdlib_units()
        .iter()
        .flat_map(|u| u.levers.clone())
        .collect();
    assert!(
        levers.iter().any(|l| l == "MPK_LINEAR_L2_NORMAL"),
        "{levers:?}"
    );
    for (f, bytes) in tree(&d) {
        let t = text(&bytes);
        for l in &levers {
            assert!(
                !t.contains(l.as_str()),
                "{f} names lever {l}: levers stay undefined (default off)"
            );
        }
    }
}

/// `mpkc build` of a unit writes the same bytes before and after `mpkc wire` (when nvcc is here).
#[test]
fn mpkc_build_output_is_identical_before_and_after_wire() {
    if mpkc::driver::nvcc::find().is_err() {
        eprintln!("skipped: no nvcc");
        return;
    }
    let scratch = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("wire")
        .join("build");
    let _ = std::fs::remove_dir_all(&scratch);
    let build = |out: &str| {
        let o = Command::new(env!("CARGO_BIN_EXE_mpkc"))
            .current_dir(root())
            .args([
                "build",
                "stdlib/rmsnorm_v2.mpk",
                "--instance",
                "h4096",
                "--out",
            ])
            .arg(scratch.join(out))
            .env("MPKC_CACHE_DIR", scratch.join("cache"))
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        status(&o, 0);
        tree(&scratch.join(out))
    };
    let before = build("before");
    let d = fixture("build");
    status(
        &mpkc(&["stdlib/rmsnorm_v2.mpk", "--instance", "h4096"], &d),
        0,
    );
    assert!(file(&d, anchors::GRAPH_CC).contains("rmsnorm_v2_h4096"));
    assert_eq!(build("after"), before);
}

#[test]
fn a_grid_wide_task_asserts_one_task_per_worker() {
    let d = fixture("grid_wide");
    status(&mpkc(&["tests/fixtures/wire/grid_wide.mpk"], &d), 0);
    let py = file(&d, anchors::PERSISTENT_KERNEL_PY);
    assert!(py.contains("    def fused_barrier_layer(\n        self,\n        x: DTensor,\n        bar: DTensor,\n        y: DTensor,\n        grid_dim: tuple,\n    ):"), "{py}");
    assert!(
        py.contains("        assert num_tasks == self.num_workers, "),
        "{py}"
    );
    // task_offset is bid.x: the grid is one-dimensional.
    assert!(
        py.contains("        assert grid_dim[1] == 1 and grid_dim[2] == 1, "),
        "{py}"
    );
    // The barrier counters: seeded zero at step 0 only (I-H4).
    assert!(
        py.contains("        # `bar`: the grid barrier's monotonic counters, one i64 per site: seed them zero at step 0")
            && py.contains("skip_after_step0=True (v2_params=[1])"),
        "{py}"
    );
    // A per-tile task computes its grid and has no such assertion.
    let d = fixture("per_tile");
    status(&mpkc(&["stdlib/silu_mul_v2.mpk"], &d), 0);
    let py = file(&d, anchors::PERSISTENT_KERNEL_PY);
    assert!(py.contains("        grid_dim = ("), "{py}");
    assert!(!py.contains("self.num_workers, \""), "{py}");
}

#[test]
fn instance_selects_the_units_wired() {
    let d = fixture("instance");
    let o = mpkc(&["stdlib/rmsnorm_v2.mpk", "--instance", "h7168"], &d);
    status(&o, 0);
    let g = file(&d, anchors::GRAPH_CC);
    assert!(
        g.contains("\"rmsnorm_v2_h7168\"") && !g.contains("\"rmsnorm_v2_h4096\""),
        "{g}"
    );
}

#[test]
fn a_task_without_task_id_or_registration_is_a_diagnostic() {
    let d = fixture("no_id");
    let before = tree(&d);
    let o = mpkc(&["tests/ui/wiring/pass_grid_wide.mpk"], &d);
    status(&o, 1);
    let err = text(&o.stderr);
    assert!(
        err.contains("error[E0007]") && err.contains("has no `task_id`") && err.contains("help:"),
        "{err}"
    );
    let o = mpkc(&["tests/fixtures/wire/helper.mpk"], &d);
    status(&o, 1);
    let err = text(&o.stderr);
    assert!(err.contains("error[E0803]"), "{err}");
    assert_eq!(tree(&d), before);
}

#[test]
fn a_derived_reduce_without_a_task_type_is_left_out_with_a_warning() {
    let d = fixture("derived");
    // The stdlib contract without its `reduce_task_id`.
    let source = std::fs::read_to_string(root().join("stdlib/linear_bf16_splitk.mpk")).unwrap();
    let without: String = source
        .lines()
        .filter(|l| !l.trim_start().starts_with("reduce_task_id"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_ne!(
        without, source,
        "the stdlib split-K contract declares `reduce_task_id`"
    );
    let contract = d.join("linear_bf16_splitk.mpk");
    std::fs::write(&contract, without).unwrap();
    let o = mpkc(&[contract.to_str().unwrap(), "--instance", "q_b"], &d);
    status(&o, 0);
    let err = text(&o.stderr);
    assert!(
        err.contains("warning[W0804]") && err.contains("linear_bf16_splitk_q_b_reduce"),
        "{err}"
    );
    assert!(file(&d, anchors::GRAPH_CC).contains("\"linear_bf16_splitk_q_b\""));
    assert!(!file(&d, anchors::GRAPH_CC).contains("_reduce"));
}

#[test]
fn the_split_k_reduces_of_every_instance_wire_as_variants_of_the_reduce_task_id() {
    let d = fixture("reduce");
    let o = mpkc(&["stdlib/linear_bf16_splitk.mpk"], &d);
    status(&o, 0);
    let err = text(&o.stderr);
    assert!(!err.contains("W0804"), "{err}");
    let header = file(&d, anchors::RUNTIME_HEADER);
    assert_eq!(
        header
            .matches("  TASK_LINEAR_BF16_SPLITK_REDUCE_V2 = 355,\n")
            .count(),
        1,
        "{header}"
    );
    assert!(
        header.contains("  TASK_LINEAR_BF16_SPLITK_V2 = 246,\n"),
        "{header}"
    );
    let graph = file(&d, anchors::GRAPH_CC);
    for unit in ["qkv_a", "q_b", "expert_gate_up", "kv_a", "router"] {
        let reduce = format!("linear_bf16_splitk_{unit}_reduce");
        assert!(
            file(&d, anchors::TASK_REGISTER_H).contains(&format!("int register_{reduce}_task(")),
            "{reduce}"
        );
        // One input (the f32 partials) and one output (the bf16 result), TaskType the reduce's.
        assert!(
            graph.contains(&format!("\"{reduce}\"")),
            "{reduce} has no graph branch:\n{graph}"
        );
    }
    assert_eq!(
        graph
            .matches("std::make_tuple(1, 1, TASK_LINEAR_BF16_SPLITK_REDUCE_V2")
            .count(),
        5,
        "{graph}"
    );
}

#[test]
fn a_missing_mirage_dir_is_a_usage_error() {
    let o = mpkc(&["stdlib/rmsnorm_v2.mpk"], Path::new("/nonexistent/mirage"));
    status(&o, 2);
    assert!(text(&o.stderr).contains("does not exist"));
}

/// A unit with `setmaxnreg` needs megakernel build defines that wire does not set (contract doc
/// §3.5): its line names them, human and JSON (`build_defines`); a unit without the line has none.
#[test]
fn setmaxnreg_names_the_megakernel_defines() {
    let d = fixture("setmaxnreg");
    let src = std::fs::read_to_string(root().join("examples/linear_setmaxnreg.mpk"))
        .unwrap()
        .replacen(
            "task linear_setmaxnreg {\n",
            "task linear_setmaxnreg {\n  task_id 233\n",
            1,
        );
    assert!(src.contains("task_id 233"), "the example's task line moved");
    let contract = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("wire_setmaxnreg.mpk");
    std::fs::write(&contract, src).unwrap();
    let c = contract.to_str().unwrap();
    let o = mpkc(&[c, "--dry-run"], &d);
    status(&o, 0);
    let err = text(&o.stderr);
    assert!(
        err.contains(
            "the megakernel must be built with -DMPK_SETMAXNREG=1 -DMPK_CONSUMER_REGS=232 -DMPK_HELPER_REGS=40"
        ),
        "{err}"
    );
    let o = mpkc(
        &[
            c,
            "stdlib/rmsnorm_v2.mpk",
            "--dry-run",
            "--message-format",
            "json",
        ],
        &d,
    );
    status(&o, 0);
    let lines: Vec<serde_json::Value> = text(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|v: &serde_json::Value| v["reason"] == "wire")
        .collect();
    let defines = |unit: &str| {
        lines
            .iter()
            .find(|v| v["unit"] == unit)
            .unwrap_or_else(|| panic!("no wire line for {unit}: {lines:#?}"))["build_defines"]
            .clone()
    };
    assert_eq!(
        defines("linear_setmaxnreg"),
        serde_json::json!([
            "MPK_SETMAXNREG=1",
            "MPK_CONSUMER_REGS=232",
            "MPK_HELPER_REGS=40"
        ])
    );
    assert_eq!(defines("rmsnorm_v2_h7168"), serde_json::json!([]));
}
