//! The `reference` item: the function `mpkc verify` runs on a kernel's inputs to check an inline
//! body (docs/references.md). Sema fills everything but [`ReferenceIr::file`], which the driver
//! resolves against the contract's path (`driver::reference`).

use crate::span::Span;
use std::path::PathBuf;

/// `reference python "PATH" fn NAME (KEY = VALUE, …)`.
#[derive(Clone, Debug, PartialEq)]
pub struct ReferenceIr {
    /// The path as written (relative to the contract).
    pub path: String,
    /// Span of the quoted path.
    pub path_span: Span,
    /// The function the file defines.
    pub function: String,
    /// The tolerances as declared, in order (a later one for the same output and kind wins).
    pub tolerances: Vec<ToleranceIr>,
    /// The whole item.
    pub span: Span,
    /// Where the file is, once the driver has looked.
    pub file: ReferenceFile,
}

/// One `KEY = VALUE` of a reference.
#[derive(Clone, Debug, PartialEq)]
pub struct ToleranceIr {
    /// The output it applies to (`y.rel_l2`), or every output (`rel_l2`).
    pub output: Option<String>,
    /// The comparison.
    pub kind: Tolerance,
    /// The whole `KEY = VALUE`.
    pub span: Span,
}

/// A comparison bound.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Tolerance {
    /// `rel_l2 = T`: ‖out − ref‖₂ / ‖ref‖₂ < T.
    RelL2(f64),
    /// `atol = A`: with `rtol`, every |out − ref| ≤ A + R·|ref| (numpy's `allclose`).
    Atol(f64),
    /// `rtol = R`.
    Rtol(f64),
    /// `exact = true`: every element equal.
    Exact,
}

impl Tolerance {
    /// The key as a contract writes it: `rel_l2`, `atol`, `rtol`, `exact`.
    pub fn key(&self) -> &'static str {
        match self {
            Tolerance::RelL2(_) => "rel_l2",
            Tolerance::Atol(_) => "atol",
            Tolerance::Rtol(_) => "rtol",
            Tolerance::Exact => "exact",
        }
    }
}

/// Where a reference's file is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReferenceFile {
    /// Not looked up yet (sema's value).
    Unresolved,
    /// On disk, at this path (the contract's directory joined with the written path).
    Disk(PathBuf),
    /// Embedded in mpkc with the stdlib (`driver::stdlib::REFERENCES`): its stdlib path and text.
    Embedded {
        /// `stdlib/dsv3/silu_mul_fp8.ref.py`.
        path: &'static str,
        /// The file's text.
        text: &'static str,
    },
}

impl ReferenceIr {
    /// How `mpkc verify --list` names it: `python PATH:FUNCTION`.
    pub fn describe(&self) -> String {
        let path = match &self.file {
            ReferenceFile::Disk(p) => p.display().to_string(),
            ReferenceFile::Embedded { path, .. } => (*path).to_string(),
            ReferenceFile::Unresolved => self.path.clone(),
        };
        format!("python {path}:{}", self.function)
    }
}
