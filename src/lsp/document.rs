//! One open document, analysed: the same pipeline as `mpkc check` (parse, lower every
//! instance, check, plan), plus the symbol index. Re-run on every change (full sync).

use super::convert::LineIndex;
use super::index::{self, Index};
use crate::driver::{check_parsed, Checked, Source};
use crate::front::ast;
use crate::ir::TaskIr;
use crate::valid::CheckedTask;

/// An analysed document.
pub struct Document {
    /// The text.
    pub text: String,
    /// Line starts.
    pub lines: LineIndex,
    /// Diagnostics, checked instances and rejected ones.
    pub checked: Checked,
    /// The AST when the file parses.
    pub ast: Option<ast::File>,
    /// Symbols and references.
    pub index: Index,
}

impl Document {
    /// Analyses `text`, named `path` in messages.
    pub fn analyze(path: &str, text: String) -> Document {
        let source = Source {
            path: path.to_string(),
            text,
        };
        let parsed = crate::front::parse_file(&source.text);
        let checked = check_parsed(
            &source,
            parsed.as_ref(),
            &Default::default(),
            &Default::default(),
        );
        let ast = parsed.ok();
        let index = ast.as_ref().map(index::build).unwrap_or_default();
        let text = source.text;
        Document {
            lines: LineIndex::new(&text),
            text,
            checked,
            ast,
            index,
        }
    }

    /// The checked instances of task `name`.
    pub fn instances<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a CheckedTask> + 'a {
        self.checked.tasks.iter().filter(move |t| t.ir.name == name)
    }

    /// The instances of task `name` a rule rejected (lowered, not checked).
    pub fn rejected<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a TaskIr> + 'a {
        self.checked.rejected.iter().filter(move |t| t.name == name)
    }
}
