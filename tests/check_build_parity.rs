//! What `check` accepts is what `build` generates (issue 11): for every contract of `examples/`,
//! `tests/ui/` and `tests/cases/issue11/` that checks clean, the generated files are written and
//! every kernel is compiled with nvcc for every declared target. A failure here is a contract
//! code that only `build` reports (a generated `static_assert` naming an E-code, E0701), i.e. a
//! contract `check` should have rejected. (The stdlib is compiled by tests/generated.rs.)

use mpkc::driver::build::{compile_all, generate_all, write_all};
use mpkc::driver::{check_sources, nvcc, Source};
use mpkc::sema::SemaOptions;
use mpkc::valid::CheckOptions;
use std::path::{Path, PathBuf};

fn inputs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    let mut stack = vec![
        root.join("examples"),
        root.join("tests/ui"),
        root.join("tests/cases/issue11"),
    ];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "mpk") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn every_clean_contract_compiles_for_every_target() {
    let tc = nvcc::find().unwrap_or_else(|e| panic!("{e}"));
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let jobs = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut built = 0;
    let mut failures = Vec::new();
    for (i, path) in inputs().iter().enumerate() {
        let rel = path
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let src = Source {
            path: rel.clone(),
            text: std::fs::read_to_string(path).unwrap(),
        };
        let checked = check_sources(&[src], &SemaOptions::default(), &CheckOptions::default());
        let clean = checked
            .iter()
            .all(|c| !c.has_errors() && !c.tasks.is_empty());
        if !clean {
            continue;
        }
        let units = generate_all(&checked);
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("parity_{i}"));
        let _ = std::fs::remove_dir_all(&dir);
        write_all(&dir, &units).unwrap();
        for j in compile_all(&tc, &dir, &checked, &units, jobs) {
            built += 1;
            if let Err(e) = &j.result {
                failures.push(format!("{rel}: {} for {}: {e:?}", j.file, j.target));
            }
        }
    }
    assert!(built > 0);
    assert!(
        failures.is_empty(),
        "build reports what check did not:\n{}",
        failures.join("\n")
    );
    eprintln!("{built} translation units compiled");
}
