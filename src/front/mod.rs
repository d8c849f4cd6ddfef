//! The front end: `.mpk` text → AST with byte spans (pest grammar in `grammar/mpk.pest`).

pub mod ast;
mod bom;
mod build;
pub mod cuda;
mod literal;
mod parse;
mod recover;
mod value;

pub use build::parse_file;
pub use value::parse_value;
