//! Replays every input the fuzzers found (`tests/fuzz/<target>/`, written there by
//! `scripts/fuzz`) through the same properties the fuzz targets assert
//! (`tests/support/fuzz_props.rs`), and the seeds (stdlib, examples, UI tests) through all of them.

#[path = "support/fuzz_props.rs"]
mod props;

use std::path::{Path, PathBuf};

fn files(dir: &Path, ext: Option<&str>, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, ext, out);
        } else if ext.is_none_or(|x| p.extension().is_some_and(|e| e == x)) {
            out.push(p);
        }
    }
}

fn found(target: &str) -> Vec<PathBuf> {
    let mut v = Vec::new();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz")
        .join(target);
    files(&dir, None, &mut v);
    v.sort();
    v
}

fn seeds() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut v = Vec::new();
    for d in ["stdlib", "examples", "tests/ui"] {
        files(&root.join(d), Some("mpk"), &mut v);
    }
    v.sort();
    v
}

fn replay(target: &str, f: fn(&[u8])) {
    let inputs = found(target);
    for p in inputs.iter().chain(seeds().iter()) {
        let data = std::fs::read(p).unwrap();
        let r = std::panic::catch_unwind(|| f(&data));
        assert!(r.is_ok(), "{target}: {} breaks a property", p.display());
    }
}

#[test]
fn check_inputs() {
    replay("check", |d| props::check(&props::text_of(d)));
}

#[test]
fn fmt_inputs() {
    replay("fmt", |d| props::fmt(&props::text_of(d)));
}
