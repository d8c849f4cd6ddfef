//! One open document, analysed: the CLI's own entry point, [`check_sources`] (parse, lower every
//! instance, check, plan, the derived split-K reduce contracts, generated-file clashes), plus the
//! symbol index. Re-run on every change (full sync), cancellably.

use super::convert::LineIndex;
use super::index::{self, Index};
use crate::driver::cancel::Token;
use crate::driver::{check_sources, Checked, Source};
use crate::front::ast;
use crate::ir::TaskIr;
use crate::valid::CheckedTask;

/// An analysed document.
pub struct Document {
    /// The text.
    pub text: String,
    /// Line starts.
    pub lines: LineIndex,
    /// What `mpkc check` reports for the file: every diagnostic (the driver attributes those of
    /// derived contracts to the file), checked instances and rejected ones.
    pub checked: Checked,
    /// The AST when the file parses.
    pub ast: Option<ast::File>,
    /// Symbols and references.
    pub index: Index,
}

impl Document {
    /// Analyses `text`, named `path` in messages, as `mpkc check path` would. `None` when
    /// `token` is cancelled before the analysis ends (the partial result is dropped).
    pub fn analyze(path: &str, text: String, token: &Token) -> Option<Document> {
        let source = Source {
            path: path.to_string(),
            text,
        };
        let mut all = token.run(|| {
            check_sources(
                std::slice::from_ref(&source),
                &Default::default(),
                &Default::default(),
            )
        });
        if token.is_cancelled() || all.is_empty() {
            return None;
        }
        // The file's own result comes first, the derived contracts' after it.
        let checked = all.swap_remove(0);
        let ast = crate::front::parse_file(&source.text).ok();
        let index = ast.as_ref().map(index::build).unwrap_or_default();
        let text = source.text;
        Some(Document {
            lines: LineIndex::new(&text),
            text,
            checked,
            ast,
            index,
        })
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
