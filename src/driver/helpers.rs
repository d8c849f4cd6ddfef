//! Finding the contracts a task's `use` items name helpers in (docs/language.md, "Helpers"):
//! the using file itself, and each `from "FILE"`, relative to the contract's directory, on disk;
//! failing that, among the embedded stdlib contracts ([`super::stdlib::CONTRACTS`], so that a
//! stdlib contract finds its helper from any directory). A file in neither, or one that does
//! not parse, is not a regular file or cannot be read, is left out: sema reports the `use`
//! (E0024), saying which.

use super::reference::{joined, normalized};
use super::stdlib::CONTRACTS;
use super::Source;
use crate::front::{self, ast};
use crate::sema::{HelperFile, HelperFileError, HelperFileProblem};
use std::sync::Arc;

/// What the `use` items of a contract can look helpers up in.
#[derive(Debug, Default)]
pub struct Found {
    /// Itself when a `use` has no `from`, and every file a `from` names that can be read and
    /// parsed, once each.
    pub files: Vec<HelperFile>,
    /// Files a `from` names that are there but cannot serve: they do not parse, are not a
    /// regular file, or cannot be read.
    pub file_errors: Vec<HelperFileError>,
}

/// The helper files of `file` (the parse of `source`), and those found that cannot serve.
pub fn helper_files(source: &Source, file: &ast::File) -> Found {
    let uses: Vec<&ast::Use> = file
        .tasks
        .iter()
        .flat_map(|t| t.items.iter())
        .filter_map(|i| match i {
            ast::Item::Use(u) => Some(u),
            _ => None,
        })
        .collect();
    let mut out: Vec<HelperFile> = Vec::new();
    let mut file_errors = Vec::new();
    if uses.iter().any(|u| u.from.is_none()) {
        out.push(HelperFile {
            from: None,
            path: source.path.clone(),
            ast: Arc::new(file.clone()),
            text: Arc::from(source.text.as_str()),
        });
    }
    for u in uses {
        let Some(written) = &u.from else { continue };
        let seen = |w: &str| {
            out.iter().any(|f| f.from.as_deref() == Some(w))
                || file_errors.iter().any(|e: &HelperFileError| e.from == w)
        };
        if seen(&written.node) {
            continue;
        }
        let (path, problem) = match read(&source.path, &written.node) {
            Read::Missing => continue,
            Read::Text(path, text) => match front::parse_file(&text) {
                Ok(ast) => {
                    out.push(HelperFile {
                        from: Some(written.node.clone()),
                        path,
                        ast: Arc::new(ast),
                        text: Arc::from(text.as_str()),
                    });
                    continue;
                }
                Err(ds) => {
                    let first = ds.first().map_or_else(String::new, |d| {
                        let at = d.labels.first().map_or(0, |l| l.span.start);
                        format!("line {}: {}", super::derived::line_of(&text, at), d.message)
                    });
                    (path, HelperFileProblem::DoesNotParse(first))
                }
            },
            Read::NotAFile(path) => (path, HelperFileProblem::NotAFile),
            Read::Unreadable(path, why) => (path, HelperFileProblem::Unreadable(why)),
        };
        file_errors.push(HelperFileError {
            from: written.node.clone(),
            path,
            problem,
        });
    }
    Found {
        files: out,
        file_errors,
    }
}

/// What a `from "FILE"` finds.
#[derive(Debug)]
enum Read {
    /// Nothing on disk and no embedded stdlib contract by that path.
    Missing,
    /// The display path and the text.
    Text(String, String),
    /// On disk, but a directory, a FIFO or a device (display path).
    NotAFile(String),
    /// A regular file that could not be read (display path, the reason).
    Unreadable(String, String),
}

/// The display path and text of `written`: relative to the contract at `contract` on disk, else
/// an embedded stdlib contract at that path (a stdlib contract naming its sibling), else an
/// embedded stdlib contract named by its stdlib path as written (`stdlib/dsv3/…`), so that a
/// contract anywhere, named by any path, finds a stdlib helper the same way. Something on disk
/// that is not a regular file, or a file that cannot be read, is said so (not "missing"), unless
/// an embedded stdlib contract has that path.
fn read(contract: &str, written: &str) -> Read {
    let path = joined(contract, written);
    let key = normalized(&path);
    if path.is_file() {
        return match std::fs::read_to_string(&path) {
            Ok(t) => Read::Text(key, t),
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                Read::Unreadable(key, "it is not UTF-8 text".to_string())
            }
            Err(e) => Read::Unreadable(key, e.to_string()),
        };
    }
    let as_written = normalized(std::path::Path::new(written));
    if let Some((p, t)) = CONTRACTS
        .iter()
        .find(|(p, _)| *p == key)
        .or_else(|| CONTRACTS.iter().find(|(p, _)| *p == as_written))
    {
        return Read::Text((*p).to_string(), (*t).to_string());
    }
    if path.exists() {
        return Read::NotAFile(key);
    }
    Read::Missing
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stdlib_helper_is_found_embedded_when_not_on_disk() {
        // `no_such_dir/..` does not exist on disk, so the file is found among the embedded
        // stdlib contracts by its normalised path.
        let Read::Text(path, text) = read("no_such_dir/../stdlib/dsv3/rope.mpk", "rope_yarn.mpk")
        else {
            panic!("not found")
        };
        assert_eq!(path, "stdlib/dsv3/rope_yarn.mpk");
        assert!(text.contains("task rope_yarn"));
        assert!(matches!(
            read("no_such_dir/x.mpk", "missing.mpk"),
            Read::Missing
        ));
    }

    #[test]
    fn a_stdlib_path_finds_the_embedded_helper_from_any_contract_path() {
        // The same `from` from a relative, an absolute and a nested contract path.
        for contract in [
            "emb.mpk",
            "/nonexistent/dir/emb.mpk",
            "no_such_dir/sub/emb.mpk",
        ] {
            let Read::Text(path, text) = read(contract, "stdlib/dsv3/fp8_quant_1x128.mpk") else {
                panic!("{contract}: not found")
            };
            assert_eq!(path, "stdlib/dsv3/fp8_quant_1x128.mpk", "{contract}");
            assert!(text.contains("family helper"));
        }
    }

    #[test]
    fn the_same_file_is_listed_once_for_uses_without_from() {
        let text = "task h { family helper\n tensor y: f32[4] out\n body cuda { (void)y; } }\n\
                    task a { family consumer\n tensor y: f32[4] out\n use h\n body cuda { h(y); } }\n\
                    task b { family consumer\n tensor y: f32[4] out\n use h\n body cuda { h(y); } }\n";
        let source = Source {
            path: "a.mpk".into(),
            text: text.into(),
        };
        let ast = front::parse_file(text).unwrap();
        let files = helper_files(&source, &ast).files;
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].from, None);
        assert_eq!(files[0].path, "a.mpk");
    }
}
