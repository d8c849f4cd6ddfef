//! The front end: `.mpk` text → AST with byte spans (pest grammar in `grammar/mpk.pest`).

pub mod ast;
mod ast_require;
mod bom;
mod build;
mod build_sync;
mod build_tensor;
pub mod cuda;
mod expr;
mod line_ends;
mod literal;
mod nesting;
mod non_ascii;
mod parse;
mod recover;
mod skip;
mod value;

pub use build::parse_file;

/// The keywords that start an item inside a task, as the grammar's `item_keyword` lists them
/// (error recovery resumes at one; the language server completes them).
pub const ITEM_KEYWORDS: &[&str] = &[
    "family",
    "targets",
    "task_id",
    "param",
    "tensor",
    "tile",
    "stages",
    "mma",
    "tmem",
    "region",
    "channel",
    "sem",
    "roles",
    "barrier",
    "body",
    "epilogue",
    "granularity",
    "lever",
    "instance",
    "setmaxnreg",
    "reduce_task_id",
    "reference",
    "use",
    "route",
    "require",
];
pub use value::parse_value;
