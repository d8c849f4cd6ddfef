//! The contracts under `examples/` check clean and compile with nvcc for their targets.

#[path = "support/nvcc_cache.rs"]
mod nvcc_cache;

use mpkc::driver::build::{generate_all, write_all};
use mpkc::driver::{check_source, nvcc, Source};
use mpkc::sema::SemaOptions;
use mpkc::valid::CheckOptions;
use nvcc_cache::compile_all;
use std::path::PathBuf;

#[test]
fn examples_check_and_compile() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut sources = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "mpk") {
            let name = format!("examples/{}", p.file_name().unwrap().to_string_lossy());
            sources.push(Source {
                path: name,
                text: std::fs::read_to_string(&p).unwrap(),
            });
        }
    }
    sources.sort_by(|a, b| a.path.cmp(&b.path));
    assert!(sources.len() >= 2);
    let checked: Vec<_> = sources
        .iter()
        .map(|s| check_source(s, &SemaOptions::default(), &CheckOptions::default()))
        .collect();
    for c in &checked {
        assert!(c.diags.is_empty(), "{}: {:#?}", c.source.path, c.diags);
    }
    let tc = nvcc::find().unwrap_or_else(|e| panic!("{e}"));
    let units = generate_all(&checked);
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("examples_out");
    write_all(&out, &units).unwrap();
    for j in compile_all(&tc, &out, &checked, &units, 2) {
        if let Err(f) = &j.result {
            panic!(
                "{} {}: {}\n{}",
                units[j.unit].unit, j.target, f.command, f.stderr
            );
        }
    }
}
