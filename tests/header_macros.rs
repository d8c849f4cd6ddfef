//! `src/back/header_macros.txt`, the object-like macros E0012 keeps contract names off, holds
//! every macro the preprocessor defines in a generated kernel here: a pipeline unit of the stdlib
//! (its harness includes the prelude, the runtime, the worker, both targets' headers, its spec
//! and layout headers and nvcc's CUDA headers, which pull in the host C library's) with
//! `<cooperative_groups.h>`, which a body may add, run through `nvcc -E -Xcompiler -dM` for
//! sm_90a and sm_100a. A name missing from the list would pass `mpkc check` as a param or tensor
//! name and then fail in nvcc (`param RAND_MAX` became `params::RAND_MAX` = `params::2147483647`).

use mpkc::driver::build::{generate_all, write_all};
use mpkc::driver::{check_sources, nvcc, stdlib, Checked};
use mpkc::ir::Target;
use mpkc::sema::SemaOptions;
use mpkc::valid::CheckOptions;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `#define NAME …` or `#define NAME` (not `NAME(`), NAME starting with a letter: names starting
/// with `_` are E0012 by their form ([lex.name]) or mpkc's `__` rule.
fn object_like(dump: &str) -> BTreeSet<String> {
    dump.lines()
        .filter_map(|l| l.strip_prefix("#define "))
        .filter_map(|rest| {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let after = rest[name.len()..].chars().next();
            let object = matches!(after, None | Some(' '));
            (object && name.starts_with(|c: char| c.is_ascii_alphabetic())).then_some(name)
        })
        .collect()
}

#[test]
fn the_list_holds_every_macro_of_a_generated_kernel() {
    let tc = nvcc::find().unwrap_or_else(|e| panic!("{e}"));
    let sources: Vec<_> = stdlib::sources()
        .into_iter()
        .filter(|s| s.path.ends_with("linear_sm100_v2.mpk"))
        .collect();
    assert_eq!(sources.len(), 1, "the house linear is in the stdlib");
    let checked: Vec<Checked> =
        check_sources(&sources, &SemaOptions::default(), &CheckOptions::default());
    assert!(!checked[0].has_errors(), "{:#?}", checked[0].diags);
    let units = generate_all(&checked);
    let out = scratch("header_macros");
    write_all(&out, &units).unwrap();
    let harness = std::fs::read_dir(&out)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.ends_with("_harness.cu"))
        .expect("a harness");
    std::fs::write(
        out.join("all.cu"),
        format!("#include \"{harness}\"\n#include <cooperative_groups.h>\n"),
    )
    .unwrap();
    let listed: BTreeSet<&str> = include_str!("../src/back/header_macros.txt")
        .lines()
        .collect();
    for target in [Target::Sm90a, Target::Sm100a] {
        let mut cmd = Command::new(&tc.nvcc);
        cmd.current_dir(&out).args([
            "-std=c++17",
            &format!("-gencode={}", target.gencode()),
            "-I.",
        ]);
        for inc in &tc.includes {
            cmd.arg("-isystem").arg(inc);
        }
        cmd.args(["-E", "-Xcompiler", "-dM", "-x", "cu", "all.cu", "-o"])
            .arg(format!("macros_{target}.txt"));
        let st = cmd.output().expect("nvcc runs");
        assert!(
            st.status.success(),
            "nvcc -E -dM for {target}: {}",
            String::from_utf8_lossy(&st.stderr)
        );
        let dump = std::fs::read_to_string(out.join(format!("macros_{target}.txt"))).unwrap();
        let found = object_like(&dump);
        assert!(
            found.contains("RAND_MAX") && found.contains("INFINITY"),
            "{target}: the dump holds the C headers' macros"
        );
        // The contract's own levers are macros of its generated files (`#define NAME 0`).
        let levers: BTreeSet<&str> = sources[0]
            .text
            .lines()
            .filter_map(|l| l.trim_start().strip_prefix("lever "))
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        assert!(!levers.is_empty(), "the house linear declares a lever");
        let missing: Vec<&String> = found
            .iter()
            .filter(|m| !listed.contains(m.as_str()) && !levers.contains(m.as_str()))
            .collect();
        assert!(
            missing.is_empty(),
            "{target}: macros of the generated kernel's headers that src/back/header_macros.txt lacks \
             (a contract name equal to one passes `mpkc check` and fails in nvcc; add them, sorted): {missing:?}"
        );
    }
}

#[test]
fn the_list_is_sorted_and_holds_object_like_names_only() {
    let text = include_str!("../src/back/header_macros.txt");
    let names: Vec<&str> = text.lines().collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(names, sorted, "sorted, each once");
    assert!(names
        .iter()
        .all(|n| n.starts_with(|c: char| c.is_ascii_alphabetic())
            && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')));
}
