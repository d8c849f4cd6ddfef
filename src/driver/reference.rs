//! Finding a `reference`'s file (docs/references.md): relative to the contract's directory, on
//! disk; failing that, among the references embedded with the stdlib ([`super::stdlib::REFERENCES`],
//! so that `mpkc verify` with no file checks the stdlib from anywhere). A file in neither is E0018
//! at the quoted path.

use super::stdlib::REFERENCES;
use crate::diag::{codes, Diagnostic};
use crate::ir::{ReferenceFile, ReferenceIr};
use std::path::{Component, Path, PathBuf};

/// `written` (a reference's path) relative to the directory of the contract at `contract`.
pub fn joined(contract: &str, written: &str) -> PathBuf {
    Path::new(contract)
        .parent()
        .unwrap_or(Path::new(""))
        .join(written)
}

/// `p` with `.` and `dir/..` removed and `/` separators: how the embedded table names files.
pub fn normalized(p: &Path) -> String {
    let mut root = String::new();
    let mut parts: Vec<String> = Vec::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            // The root is a prefix, not a part: `/a` is not `` joined with `a` by `/`.
            Component::RootDir | Component::Prefix(_) => {
                root.push_str(&c.as_os_str().to_string_lossy());
            }
            Component::ParentDir if parts.last().is_some_and(|l| l != "..") => {
                parts.pop();
            }
            // `..` at the root stays at the root.
            Component::ParentDir if parts.is_empty() && !root.is_empty() => {}
            other => parts.push(other.as_os_str().to_string_lossy().into_owned()),
        }
    }
    root + &parts.join("/")
}

/// How `mpkc verify` calls a task's reference (docs/references.md).
#[derive(Clone, Debug, Default)]
pub struct Call {
    /// The positional arguments: the names of the inputs the kernel reads (`in` and `inout`
    /// tensors, the op's own state left out), in declaration order.
    pub inputs: Vec<String>,
    /// What the function returns: the tensors the task writes (`out`, `inout`), its own state
    /// left out.
    pub outputs: Vec<String>,
    /// The op's own state (`grid_barrier`, `scratch` tensors) it reads: not passed.
    pub left_out: Vec<String>,
    /// The task has a paged KV cache: `paged_kv=` is passed where the function names it.
    pub paged: bool,
    /// The task lowered whole: its tensors are the call's. A task that did not (a param value
    /// its range rejects left extents unlowered) has its own diagnostics; its `def` is not read
    /// against a partial call.
    pub known: bool,
}

impl Call {
    /// The call verify makes of `ir`'s reference; `known`: `ir` lowered whole.
    pub fn of(ir: &crate::ir::TaskIr, known: bool) -> Call {
        fn names<'a>(
            ts: impl Iterator<Item = (crate::ir::TensorHandle, &'a crate::ir::TensorIr)>,
            state: bool,
        ) -> Vec<String> {
            ts.filter(|(_, t)| t.is_state() == state)
                .map(|(_, t)| t.name.clone())
                .collect()
        }
        Call {
            inputs: names(ir.inputs(), false),
            outputs: names(ir.written(), false),
            left_out: names(ir.inputs(), true),
            paged: ir.tensors.values().any(|t| t.paged.is_some()),
            known,
        }
    }
}

/// Sets `r.file`: the file on disk, else the embedded one of that stdlib path. Errors: E0018
/// naming where it looked, a file that binds no function of that name, or a plain `def` that
/// cannot take `call` ([`super::ref_signature`]).
pub fn resolve(contract: &str, r: &mut ReferenceIr, call: &Call) -> Result<(), Diagnostic> {
    let path = joined(contract, &r.path);
    if path.is_file() {
        // A file that cannot be read here is verify's to report, when it imports it.
        if let Ok(text) = std::fs::read_to_string(&path) {
            defines(&text, r)?;
            if call.known {
                super::ref_signature::check(&text, r, call)?;
            }
        }
        r.file = ReferenceFile::Disk(path);
        return Ok(());
    }
    let key = normalized(&path);
    if let Some((p, text)) = REFERENCES.iter().find(|(p, _)| *p == key) {
        defines(text, r)?;
        if call.known {
            super::ref_signature::check(text, r, call)?;
        }
        r.file = ReferenceFile::Embedded { path: p, text };
        return Ok(());
    }
    // Something is there, but not a regular file (a directory, a FIFO, a device).
    if path.exists() {
        return Err(Diagnostic::error(
            codes::REFERENCE,
            format!("reference file `{}` is not a regular file", r.path),
        )
        .primary(
            r.path_span,
            format!("{} is a directory or a special file", path.display()),
        )
        .help("name a Python file: verify imports the reference from it"));
    }
    Err(Diagnostic::error(
        codes::REFERENCE,
        format!("reference file `{}` does not exist", r.path),
    )
    .primary(r.path_span, format!("looked for {}", path.display()))
    .help("the path is relative to the contract's directory; create the file or correct the path"))
}

/// The reference's function is named in its file, where verify imports it and calls it: by a
/// `def`, a `class`, an assignment, an import (one over several lines included), at the top
/// level or in a block. E0018 when the name appears nowhere outside comments (a misspelt or
/// missing function); whether the binding is callable at the top level is the run's to say.
fn defines(text: &str, r: &ReferenceIr) -> Result<(), Diagnostic> {
    let name = r.function.as_str();
    let bound = text
        .lines()
        .any(|l| super::ref_signature::has_word(l.split('#').next().unwrap_or(""), name));
    if bound {
        return Ok(());
    }
    Err(Diagnostic::error(
        codes::REFERENCE,
        format!("reference file `{}` defines no function `{}`", r.path, r.function),
    )
    .primary(r.span, format!("verify would call `{}`", r.function))
    .note("verify imports the file and calls the named top-level function on the kernel's inputs (docs/references.md)")
    .help({
        // The top-level `def`s of the file, for a misspelt name.
        let defs: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("async ").unwrap_or(l).strip_prefix("def "))
            .filter_map(|d| d.trim_start().split('(').next())
            .map(str::trim)
            .collect();
        match crate::diag::suggest(name, defs.iter().copied()) {
            Some(c) => format!("did you mean `{c}`? `{}` defines `def {c}(…)`", r.path),
            None => format!("define `def {}(...)` at the top level of `{}`, or name the function it defines", r.function, r.path),
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_relative_to_the_contract() {
        assert_eq!(
            joined("stdlib/dsv3/a.mpk", "b.ref.py"),
            PathBuf::from("stdlib/dsv3/b.ref.py")
        );
        assert_eq!(joined("a.mpk", "r/b.py"), PathBuf::from("r/b.py"));
        assert_eq!(
            normalized(Path::new("stdlib/dsv3/./x/../b.py")),
            "stdlib/dsv3/b.py"
        );
        assert_eq!(normalized(Path::new("../b.py")), "../b.py");
        // An absolute path keeps one leading `/`; `..` at the root stays there.
        assert_eq!(normalized(Path::new("/work/a/../b.py")), "/work/b.py");
        assert_eq!(normalized(Path::new("/../work/b.py")), "/work/b.py");
    }

    #[test]
    fn every_embedded_reference_is_named_by_a_stdlib_contract() {
        for (p, text) in REFERENCES {
            assert!(text.contains("def "), "{p}");
            let named = super::super::stdlib::CONTRACTS.iter().any(|(c, t)| {
                let dir = Path::new(c).parent().unwrap_or(Path::new(""));
                t.contains("reference python")
                    && t.lines()
                        .filter(|l| l.trim_start().starts_with("reference "))
                        .any(|l| {
                            l.split('"')
                                .nth(1)
                                .is_some_and(|w| normalized(&dir.join(w)) == *p)
                        })
            });
            assert!(named, "{p} is embedded but no stdlib contract names it");
        }
    }
}
