//! Issue 11, case 1: `setmaxnreg consumer 232, helpers 40` is a megakernel-wide register split
//! (contract doc §3.5, §6.3). Each unit's `Registration` states it, the harness defines MPK's
//! `MPK_SETMAXNREG` / `MPK_CONSUMER_REGS` / `MPK_HELPER_REGS` from it, the worker prologue
//! issues `setmaxnreg.inc` on warpgroup 0 and `setmaxnreg.dec` on warpgroup 1 (SASS
//! `USETMAXREG.TRY_ALLOC.CTAPOOL` / `USETMAXREG.DEALLOC.CTAPOOL` on sm_100a and sm_90a), and
//! units of one build that ask for different values are E0404.

use mpkc::back::FileKind;
use mpkc::driver::build::{generate_all, write_all, UnitOutput};
use mpkc::driver::{check_sources, nvcc, stdlib, Checked, Source};
use mpkc::ir::Target;
use mpkc::sema::SemaOptions;
use mpkc::valid::CheckOptions;
use std::path::PathBuf;

const LINE: &str = "setmaxnreg consumer 232, helpers 40";

fn house_linear() -> &'static str {
    stdlib::CONTRACTS
        .iter()
        .find(|(p, _)| p.ends_with("linear_sm100_v2.mpk"))
        .unwrap()
        .1
}

/// `text` with `line` added after its `roles` line (every stdlib pipeline has one).
fn with_line(text: &str, line: &str) -> String {
    let at = text.find("\n  roles ").expect("a roles line") + 1;
    let end = at + text[at..].find('\n').unwrap() + 1;
    format!("{}  {line}\n{}", &text[..end], &text[end..])
}

fn check(sources: &[Source]) -> Vec<Checked> {
    check_sources(sources, &SemaOptions::default(), &CheckOptions::default())
}

fn src(path: &str, text: String) -> Source {
    Source {
        path: path.to_string(),
        text,
    }
}

fn clean(checked: &[Checked]) {
    for c in checked {
        assert!(!c.has_errors(), "{}: {:#?}", c.source.path, c.diags);
    }
}

fn file<'a>(u: &'a UnitOutput, kind: FileKind, name_ends: &str) -> &'a str {
    &u.files
        .iter()
        .find(|f| f.kind == kind && f.name.ends_with(name_ends))
        .unwrap_or_else(|| panic!("{}: no {kind:?} file ending {name_ends}", u.unit))
        .text
}

/// Case 1 as the issue states it (`tests/cases/issue11/01_setmaxnreg.mpk`, the house linear with
/// the line) against the same contract without it. Before, no generated file mentioned it and
/// the `.cuh` was identical; now both kernels' `Registration` and the harness carry the values,
/// and nothing else differs in the kernels.
/// The lines of a generated `.cuh` without its in-body page release: the sm_90a consumer's block
/// (the runtime's page barrier, then warp 0's releases) or the launcher's, and the launcher's and
/// the Registration's comments that say which.
fn without_page_release(t: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut in_consumer_block = false;
    let mut released = false;
    for l in t.lines() {
        if l.contains("The runtime's page barrier (contract doc §3.4)") {
            in_consumer_block = true;
            released = false;
        }
        if in_consumer_block {
            released |= l.contains("finish_page");
            if released && l.trim() == "}" {
                in_consumer_block = false;
            }
            continue;
        }
        let release_line = [
            "Every wgmma completed and the consumers are done",
            "uint32_t const used_pages = mpkc::used_page_mask(task_desc);",
            "int const page = mpkc::lane_id();",
            "mpkc::rt::finish_page(runtime_smem, page);",
            "// re-init, the tmem_ready handshake",
            "// pages after its K loop).",
            "with auto_consumer_finish = false:",
            // the sm_90a consumer's page mask, computed before its K loop where it releases
            "// The pages this task uses, for their release after the K loop",
            "// here, before the loop, where it costs the next task's loader nothing.",
        ];
        if !release_line.iter().any(|p| l.contains(p)) {
            out.push(l);
        }
    }
    out
}

#[test]
fn case01_the_line_reaches_the_registration_and_the_harness() {
    let path = "tests/cases/issue11/01_setmaxnreg.mpk";
    let text =
        std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap();
    let line = format!("  {LINE}\n");
    assert!(text.contains(&line), "{path} declares `{LINE}`");
    let with = check(&[src(path, text.clone())]);
    let without = check(&[src(path, text.replace(&line, ""))]);
    clean(&without);
    clean(&with);
    let (a, b) = (&generate_all(&without)[0], &generate_all(&with)[0]);
    for cuh in ["case01_setmaxnreg.cuh", "case01_setmaxnreg_sm90.cuh"] {
        let (a, b) = (
            file(a, FileKind::Kernel, cuh),
            file(b, FileKind::Kernel, cuh),
        );
        assert_ne!(a, b, "{cuh} is the same with and without `{LINE}`");
        for (text, c, h) in [(a, 0, 0), (b, 232, 40)] {
            assert!(
                text.contains(&format!("static constexpr int kSetMaxNRegConsumer = {c};"))
                    && text.contains(&format!("static constexpr int kSetMaxNRegHelpers = {h};")),
                "{cuh}: the Registration does not state consumer {c}, helpers {h}"
            );
        }
        // Only the Registration's setmaxnreg members (and their comment) differ, the sm_90a
        // consumer's linkage (inlined without setmaxnreg, a call with it, back::sm90::roles) and
        // who releases the pages on sm_90a (the consumer after its K loop without setmaxnreg, the
        // launcher after consumer_done with it: lower::derive, `consumer_releases_pages`).
        let strip = |t: &str| -> Vec<String> {
            without_page_release(t)
                .into_iter()
                .filter(|l| {
                    !l.starts_with("__device__ __forceinline__ void consumer(")
                        && !l.starts_with("__device__ __noinline__ void consumer(")
                        && !l.contains("kSetMaxNReg")
                        && !l.contains("setmaxnreg")
                        && !l.contains("MPK_SETMAXNREG")
                        // the `.cuh`'s check of the megakernel's defines (cuh_guard)
                        && !l.contains("MPK_CONSUMER_REGS")
                        && !l.contains("defines must agree")
                        && !matches!(*l, "#else" | "#endif")
                })
                .filter(|l| !l.starts_with("// Generated by mpkc"))
                .map(str::to_string)
                .collect()
        };
        assert_eq!(
            strip(a),
            strip(b),
            "{cuh}: more than the setmaxnreg members differ"
        );
    }
    let (ha, hb) = (
        file(a, FileKind::Harness, "_harness.cu"),
        file(b, FileKind::Harness, "_harness.cu"),
    );
    assert!(!ha.contains("MPK_SETMAXNREG"), "{ha}");
    for d in [
        "#define MPK_SETMAXNREG 1",
        "#define MPK_CONSUMER_REGS 232",
        "#define MPK_HELPER_REGS 40",
    ] {
        assert!(hb.contains(d), "the harness lacks `{d}`:\n{hb}");
    }
    assert!(
        hb.find("#define MPK_SETMAXNREG").unwrap()
            < hb.find("#include \"mpkc_worker.cuh\"").unwrap(),
        "the defines come before the worker"
    );
}

/// A consumer-only unit states it too (its Registration is written by another emitter).
#[test]
fn consumer_families_state_it_too() {
    let rms = stdlib::CONTRACTS
        .iter()
        .find(|(p, _)| p.ends_with("rmsnorm_v2.mpk"))
        .unwrap()
        .1;
    let text = rms.replacen("\n  granularity", &format!("\n  {LINE}\n  granularity"), 1);
    assert_ne!(text, rms, "rmsnorm_v2.mpk has a granularity line");
    let checked = check(&[src("rmsnorm.mpk", text)]);
    clean(&checked);
    for u in generate_all(&checked) {
        let cuh = file(&u, FileKind::Kernel, ".cuh");
        assert!(
            cuh.contains("static constexpr int kSetMaxNRegConsumer = 232;"),
            "{cuh}"
        );
        assert!(
            cuh.contains("static constexpr int kSetMaxNRegHelpers = 40;"),
            "{cuh}"
        );
        assert!(file(&u, FileKind::Harness, "_harness.cu").contains("#define MPK_HELPER_REGS 40"));
    }
}

/// Two files of one build asking for different register splits: each gets E0404 naming the other
/// (file and line) and neither is built. The same split twice, or a file without the line next to
/// one with it, is clean.
#[test]
fn two_files_with_different_setmaxnreg_are_e0404() {
    let a = with_line(house_linear(), LINE).replace("task linear_sm100_v2", "task lin_a");
    let b = with_line(house_linear(), "setmaxnreg consumer 224, helpers 48")
        .replace("task linear_sm100_v2", "task lin_b")
        .replace("task_id 244", "task_id 245");
    let checked = check(&[src("a.mpk", a.clone()), src("b.mpk", b.clone())]);
    for (c, me, other, other_file, other_text) in [
        (&checked[0], "lin_a", "lin_b", "b.mpk", &b),
        (&checked[1], "lin_b", "lin_a", "a.mpk", &a),
    ] {
        let e: Vec<_> = c.diags.iter().filter(|d| d.code == "E0404").collect();
        assert_eq!(e.len(), 1, "{}: {:#?}", c.source.path, c.diags);
        let d = e[0];
        assert!(
            d.message.contains(me) && d.message.contains(other),
            "{}",
            d.message
        );
        let line = c.source.text[..d.main_span().start].matches('\n').count() + 1;
        let own = c.source.text.lines().nth(line - 1).unwrap();
        assert!(
            own.trim_start().starts_with("setmaxnreg"),
            "primary on `{own}`"
        );
        let other_line = other_text
            .lines()
            .position(|l| l.trim_start().starts_with("setmaxnreg"))
            .unwrap()
            + 1;
        assert!(
            d.notes
                .iter()
                .any(|n| n.contains(&format!("{other_file}:{other_line}"))),
            "no note naming {other_file}:{other_line}: {:#?}",
            d.notes
        );
        assert!(d.help.is_some());
        assert!(c.tasks.is_empty(), "{me} would still be built");
    }
    let same = with_line(house_linear(), LINE)
        .replace("task linear_sm100_v2", "task lin_c")
        .replace("task_id 244", "task_id 246");
    clean(&check(&[src("a.mpk", a.clone()), src("c.mpk", same)]));
    let plain = house_linear()
        .replace("task linear_sm100_v2", "task lin_d")
        .replace("task_id 244", "task_id 247");
    clean(&check(&[src("a.mpk", a), src("d.mpk", plain)]));
}

/// Every function's spill bytes (stores, loads) in a `-Xptxas -v` report: the entry and the
/// `__noinline__` role bodies, each compiled within its warpgroup's register count.
fn spills(stderr: &str) -> Vec<(String, u32, u32)> {
    let mut out = Vec::new();
    let mut func = String::new();
    for l in stderr.lines() {
        if let Some(f) = l.split("Function properties for ").nth(1) {
            func = f.trim().to_string();
        }
        if let Some(i) = l.find(" bytes spill stores") {
            let num = |s: &str| s.split_whitespace().last().unwrap().parse::<u32>().unwrap();
            let stores = num(&l[..i]);
            let j = l.find(" bytes spill loads").unwrap();
            let loads = num(&l[..j]);
            out.push((func.clone(), stores, loads));
        }
    }
    out
}

/// The SASS of each harness holds the register reallocation with the declared values (0xe8 =
/// 232 for warpgroup 0, 0x28 = 40 for warpgroup 1) on both targets, the unit without the line
/// none, and no function of either spills.
#[test]
fn harness_sass_holds_usetmaxreg_on_both_targets() {
    let tc = nvcc::find().unwrap_or_else(|e| panic!("{e}"));
    let example = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/linear_setmaxnreg.mpk"),
    )
    .unwrap();
    assert!(example.contains(LINE));
    let checked = check(&[
        src("examples/linear_setmaxnreg.mpk", example),
        src("stdlib/linear_sm100_v2.mpk", house_linear().to_string()),
    ]);
    clean(&checked);
    let units = generate_all(&checked);
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("setmaxnreg_sass");
    let _ = std::fs::remove_dir_all(&out);
    write_all(&out, &units).unwrap();
    for u in &units {
        let declared = u.unit == "linear_setmaxnreg";
        let harness = format!("{}_harness.cu", u.unit);
        for target in [Target::Sm100a, Target::Sm90a] {
            let args = nvcc::arguments(&tc, &harness, target, &[]);
            let cubin = nvcc::cubin_name(&harness, target);
            let o = nvcc::run(&tc, &out, &args, &cubin)
                .unwrap_or_else(|f| panic!("{} {target}: {}\n{}", u.unit, f.command, f.stderr));
            let s = spills(&o.stderr);
            assert!(
                s.len() >= 2,
                "{} {target}: no per-function report:\n{}",
                u.unit,
                o.stderr
            );
            for (f, st, ld) in &s {
                assert_eq!((*st, *ld), (0, 0), "{} {target}: {f} spills", u.unit);
            }
            assert!(
                !o.stderr.contains("C7508"),
                "{} {target}: setmaxnreg ignored:\n{}",
                u.unit,
                o.stderr
            );
            let sass = tc
                .sass(&o.cubin)
                .unwrap_or_else(|e| panic!("cuobjdump: {e}"));
            let lines: Vec<&str> = sass
                .lines()
                .filter(|l| l.contains("USETMAXREG"))
                .filter_map(|l| Some(l.split_once("*/")?.1.split("/*").next()?.trim()))
                .collect();
            if declared {
                assert_eq!(lines.len(), 2, "{} {target}: {lines:#?}", u.unit);
                assert!(
                    lines
                        .iter()
                        .any(|l| l.starts_with("USETMAXREG.TRY_ALLOC.CTAPOOL")
                            && l.ends_with("0xe8 ;")),
                    "{} {target}: no raise to 232: {lines:#?}",
                    u.unit
                );
                assert!(
                    lines
                        .iter()
                        .any(|l| l.starts_with("USETMAXREG.DEALLOC.CTAPOOL 0x28 ;")),
                    "{} {target}: no release to 40: {lines:#?}",
                    u.unit
                );
            } else {
                assert!(lines.is_empty(), "{} {target}: {lines:#?}", u.unit);
            }
        }
    }
}

/// Outside mpkc's harness (an MPK megakernel including the unit's `.cuh`), the `.cuh` checks the
/// megakernel's defines against its `setmaxnreg` line: other register targets (or none) stop the
/// compile with an `#error` naming the contract's values, the same ones pass, and the setting
/// left off keeps a `#pragma message` naming the flags (nvcc's preprocessor, both kernels).
#[test]
fn the_cuh_checks_the_megakernel_defines() {
    let tc = nvcc::find().unwrap_or_else(|e| panic!("{e}"));
    let example = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/linear_setmaxnreg.mpk"),
    )
    .unwrap();
    let checked = check(&[src("examples/linear_setmaxnreg.mpk", example)]);
    clean(&checked);
    let units = generate_all(&checked);
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("setmaxnreg_guard");
    let _ = std::fs::remove_dir_all(&out);
    write_all(&out, &units).unwrap();
    // (success, stdout: the preprocessed text, stderr)
    let pre = |cuh: &str, defines: &[&str]| {
        let tu = format!("mk_{cuh}.cu");
        std::fs::write(out.join(&tu), format!("#include \"{cuh}\"\n")).unwrap();
        let mut c = std::process::Command::new(&tc.nvcc);
        c.current_dir(&out).args(["-std=c++17", "-E", "-I."]);
        for inc in &tc.includes {
            c.arg("-isystem").arg(inc);
        }
        for d in defines {
            c.arg(format!("-D{d}"));
        }
        let o = c.arg(&tu).output().unwrap();
        (
            o.status.success(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let off = "MPK_SETMAXNREG is off: build with -DMPK_SETMAXNREG=1 -DMPK_CONSUMER_REGS=232 -DMPK_HELPER_REGS=40";
    for cuh in ["linear_setmaxnreg.cuh", "linear_setmaxnreg_sm90.cuh"] {
        let (ok, _, err) = pre(
            cuh,
            &[
                "MPK_SETMAXNREG=1",
                "MPK_CONSUMER_REGS=256",
                "MPK_HELPER_REGS=64",
            ],
        );
        assert!(!ok, "{cuh}: other register targets compiled:\n{err}");
        assert!(
            err.contains("MPK_CONSUMER_REGS=232 MPK_HELPER_REGS=40"),
            "{cuh}: {err}"
        );
        let (ok, _, err) = pre(cuh, &["MPK_SETMAXNREG=1"]);
        assert!(
            !ok,
            "{cuh}: MPK_SETMAXNREG without its targets compiled:\n{err}"
        );
        let (ok, text, err) = pre(
            cuh,
            &[
                "MPK_SETMAXNREG=1",
                "MPK_CONSUMER_REGS=232",
                "MPK_HELPER_REGS=40",
            ],
        );
        assert!(ok, "{cuh}: the contract's own targets failed:\n{err}");
        assert!(
            !text.contains(off),
            "{cuh}: the message with the setting on"
        );
        let (ok, text, err) = pre(cuh, &[]);
        assert!(ok, "{cuh}: the setting off failed:\n{err}");
        assert!(text.contains(off), "{cuh}: no message with the setting off");
    }
}
