//! The key of the nvcc build cache: a SHA-256 over everything a cubin and its ptxas report
//! depend on (README, "Build cache").
//!
//! - the toolchain ([`toolchain_identity`]): the nvcc executable (canonical path, size,
//!   modification time), `ptxas` beside it and `cicc` under `../nvvm/bin` (the same), the whole
//!   `nvcc --version` output, the host compiler nvcc preprocesses with (`$NVCC_CCBIN`, else `gcc`
//!   on `PATH`: path, size, modification time), and the environment variables nvcc reads flags
//!   from (`NVCC_PREPEND_FLAGS`, `NVCC_APPEND_FLAGS`, `NVCC_CCBIN`);
//! - the nvcc arguments, in order (target, flags, include directories, file names);
//! - the translation unit and every file it includes with `#include "…"`, transitively (the
//!   generated headers and the stdlib support headers), by name and contents.
//!
//! Headers included with `<…>` belong to the toolchain and are covered by its identity. The
//! build directory's path is not part of the key: nvcc's cubins do not depend on it (the
//! determinism test builds in different directories and compares the bytes).

use super::nvcc::Toolchain;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Version of the key's layout; a change makes every old entry unreachable.
const KEY_VERSION: &str = "mpkc nvcc cache key v1";

/// Path, size and modification time (nanoseconds since the epoch) of a file, or `absent`.
fn file_identity(p: &Path) -> String {
    let real = p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    match std::fs::metadata(&real) {
        Ok(m) => {
            let mtime = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos());
            format!("{} {} {mtime}", real.display(), m.len())
        }
        Err(_) => format!("{} absent", real.display()),
    }
}

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The toolchain's part of every key (computed once per build; reads no file contents).
pub fn toolchain_identity(tc: &Toolchain) -> String {
    let mut s = String::new();
    s.push_str(&format!("nvcc {}\n", file_identity(&tc.nvcc)));
    let real = tc.nvcc.canonicalize().unwrap_or_else(|_| tc.nvcc.clone());
    if let Some(bin) = real.parent() {
        s.push_str(&format!("ptxas {}\n", file_identity(&bin.join("ptxas"))));
        s.push_str(&format!(
            "cicc {}\n",
            file_identity(&bin.join("../nvvm/bin/cicc"))
        ));
    }
    let ccbin = std::env::var_os("NVCC_CCBIN")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| on_path("gcc"));
    match ccbin {
        Some(h) => s.push_str(&format!("host {}\n", file_identity(&h))),
        None => s.push_str("host none\n"),
    }
    for var in ["NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "NVCC_CCBIN"] {
        let v = std::env::var_os(var).unwrap_or_default();
        s.push_str(&format!("{var}={}\n", v.to_string_lossy()));
    }
    s.push_str("version\n");
    s.push_str(&tc.version_text);
    s
}

/// The names of the files `text` includes with `#include "name"`.
pub fn quoted_includes(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let rest = l.trim_start().strip_prefix('#')?.trim_start();
            let rest = rest.strip_prefix("include")?.trim_start();
            let rest = rest.strip_prefix('"')?;
            rest.find('"').map(|end| rest[..end].to_string())
        })
        .collect()
}

/// `unit` and every file it includes with quotes, transitively, resolved as nvcc does for the
/// generated tree: beside the including file, then in `dir` (`-I.`). Name → contents, `None`
/// for an include found in neither place (a toolchain header written with quotes, or a file
/// that is missing: nvcc then fails and nothing is cached).
pub fn sources(dir: &Path, unit: &str) -> BTreeMap<String, Option<Vec<u8>>> {
    let mut seen: BTreeMap<String, Option<Vec<u8>>> = BTreeMap::new();
    let mut stack = vec![(dir.join(unit), unit.to_string())];
    while let Some((path, name)) = stack.pop() {
        if seen.contains_key(&name) {
            continue;
        }
        let bytes = std::fs::read(&path).ok();
        if let Some(b) = &bytes {
            let base = path.parent().unwrap_or(dir).to_path_buf();
            for inc in quoted_includes(&String::from_utf8_lossy(b)) {
                let beside = base.join(&inc);
                let found = if beside.is_file() {
                    beside
                } else {
                    dir.join(&inc)
                };
                let key = found
                    .strip_prefix(dir)
                    .map_or_else(|_| found.display().to_string(), |r| r.display().to_string());
                stack.push((found, key));
            }
        }
        seen.insert(name, bytes);
    }
    seen
}

/// The cache key (64 hex digits) of compiling `unit` in `dir` with nvcc `args`, given the
/// toolchain's [`toolchain_identity`].
pub fn key(identity: &str, args: &[String], dir: &Path, unit: &str) -> String {
    let mut h = Sha256::new();
    let mut field = |bytes: &[u8]| {
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    field(KEY_VERSION.as_bytes());
    field(identity.as_bytes());
    field(format!("{} args", args.len()).as_bytes());
    for a in args {
        field(a.as_bytes());
    }
    for (name, contents) in sources(dir, unit) {
        field(name.as_bytes());
        match contents {
            Some(c) => field(&c),
            None => field(b"\0absent"),
        }
    }
    h.finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<String>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_quoted_includes_only() {
        let t = "#include \"a.cuh\"\n  #  include \"b.h\"\n#include <cuda.h>\n// #include x\n#define X\n";
        assert_eq!(quoted_includes(t), vec!["a.cuh", "b.h"]);
    }

    #[test]
    fn the_key_follows_every_included_file() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("u.cu"), "#include \"a.cuh\"\n").unwrap();
        std::fs::write(d.path().join("a.cuh"), "#include \"b.h\"\n").unwrap();
        std::fs::write(d.path().join("b.h"), "int x;\n").unwrap();
        std::fs::write(d.path().join("unrelated.h"), "int y;\n").unwrap();
        let args = vec!["-cubin".to_string()];
        let k1 = key("tc", &args, d.path(), "u.cu");
        assert_eq!(k1.len(), 64);
        assert_eq!(k1, key("tc", &args, d.path(), "u.cu"), "stable");
        std::fs::write(d.path().join("unrelated.h"), "int z;\n").unwrap();
        assert_eq!(k1, key("tc", &args, d.path(), "u.cu"), "not included");
        std::fs::write(d.path().join("b.h"), "int x2;\n").unwrap();
        let k2 = key("tc", &args, d.path(), "u.cu");
        assert_ne!(k1, k2, "a header two levels down");
        assert_ne!(k2, key("tc2", &args, d.path(), "u.cu"), "the toolchain");
        assert_ne!(
            k2,
            key("tc", &["-G".to_string()], d.path(), "u.cu"),
            "the flags"
        );
        // The directory's own path is not part of the key.
        let e = tempfile::tempdir().unwrap();
        for f in ["u.cu", "a.cuh", "b.h"] {
            std::fs::copy(d.path().join(f), e.path().join(f)).unwrap();
        }
        assert_eq!(k2, key("tc", &args, e.path(), "u.cu"));
    }

    #[test]
    fn include_cycles_end() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("u.cu"), "#include \"u.cu\"\n").unwrap();
        assert_eq!(sources(d.path(), "u.cu").len(), 1);
    }
}
