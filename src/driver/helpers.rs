//! Finding the contracts a task's `use` items name helpers in (docs/language.md, "Helpers"):
//! the using file itself, and each `from "FILE"`, relative to the contract's directory, on disk;
//! failing that, among the embedded stdlib contracts ([`super::stdlib::CONTRACTS`], so that a
//! stdlib contract finds its helper from any directory). A file in neither, or one that does
//! not parse, is left out: sema reports the `use` (E0024).

use super::reference::{joined, normalized};
use super::stdlib::CONTRACTS;
use super::Source;
use crate::front::{self, ast};
use crate::sema::HelperFile;
use std::sync::Arc;

/// The helper files of `file` (the parse of `source`): itself when a `use` has no `from`, and
/// every file a `from` names that can be read and parsed, once each.
pub fn helper_files(source: &Source, file: &ast::File) -> Vec<HelperFile> {
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
        if out
            .iter()
            .any(|f| f.from.as_deref() == Some(written.node.as_str()))
        {
            continue;
        }
        if let Some((path, text)) = read(&source.path, &written.node) {
            if let Ok(ast) = front::parse_file(&text) {
                out.push(HelperFile {
                    from: Some(written.node.clone()),
                    path,
                    ast: Arc::new(ast),
                    text: Arc::from(text.as_str()),
                });
            }
        }
    }
    out
}

/// The display path and text of `written`, relative to the contract at `contract`.
fn read(contract: &str, written: &str) -> Option<(String, String)> {
    let path = joined(contract, written);
    let key = normalized(&path);
    if path.is_file() {
        return std::fs::read_to_string(&path).ok().map(|t| (key, t));
    }
    CONTRACTS
        .iter()
        .find(|(p, _)| *p == key)
        .map(|(p, t)| ((*p).to_string(), (*t).to_string()))
}
