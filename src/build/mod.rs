//! `mpkc::build`: building mpkc kernels from a Cargo build script, in the manner of
//! `prost-build` and `cxx-build`.
//!
//! ```no_run
//! // build.rs
//! fn main() -> Result<(), mpkc::build::Error> {
//!     mpkc::build::Builder::new()
//!         .file("kernels/my_norm.mpk")
//!         .stdlib("rmsnorm_v2")
//!         .compile()?;
//!     Ok(())
//! }
//! ```
//!
//! [`Builder::compile`] checks every contract (the rules of `mpkc check`), generates its files
//! into `$OUT_DIR/mpkc/` (the spec headers, kernels, harnesses and mpkc's support headers), and
//! compiles each harness with nvcc for every target its task declares (`sm_90a` and `sm_100a`
//! SASS cubins, no PTX: the H200's driver rejects PTX newer than it), through the command the
//! `cc` crate configures (`cc::Build::cuda(true)`, see [`crate::driver::cc_nvcc`]). It prints
//! `cargo:rerun-if-changed` for every contract file and `cargo:rerun-if-env-changed` for the
//! variables that choose nvcc, and writes `$OUT_DIR/mpkc/kernels.rs`, a module per unit with its
//! harness entry and cubins ([`rust`]). A contract error, or an nvcc failure, is an [`Error`]
//! whose text (also its `Debug`, so `main` returning it prints it as is) is the rendered
//! diagnostics: the build fails with them. Warnings (and ptxas advisories, `W0702`) become
//! `cargo:warning` lines. docs/rust-build.md describes it.

pub mod rust;

mod error;
mod report;

pub use error::Error;

use crate::driver::build::{compile_all_with, generate_all, write_all, CompileOptions};
use crate::driver::nvcc::{self, PtxasReport};
use crate::driver::{check_sources, input, stdlib, Checked, Source};
use crate::ir::Target;
use std::path::{Path, PathBuf};

/// The environment variables that change which nvcc runs, or how: a build script reruns when
/// one changes (`cargo:rerun-if-env-changed`).
pub const WATCHED_ENV: &[&str] = &[
    "NVCC",
    "CUDA_HOME",
    nvcc::WRAPPER_ENV,
    "NVCC_PREPEND_FLAGS",
    "NVCC_APPEND_FLAGS",
    "NVCC_CCBIN",
    "CXXFLAGS",
];

/// The folder of `$OUT_DIR` the builder writes into.
pub const OUT_SUBDIR: &str = "mpkc";

/// Configures and runs one build of mpkc contracts (see the module documentation).
#[derive(Clone, Debug)]
pub struct Builder {
    files: Vec<PathBuf>,
    stdlib: Vec<String>,
    out_dir: Option<PathBuf>,
    cargo_metadata: bool,
    jobs: usize,
}

impl Default for Builder {
    fn default() -> Self {
        Builder::new()
    }
}

/// One built task instance.
#[derive(Clone, Debug)]
pub struct Kernel {
    /// The unit: `<task>[_<instance>]`.
    pub unit: String,
    /// The contract it comes from, as given (`stdlib/<name>.mpk` for the stdlib).
    pub contract: String,
    /// The harness kernel's symbol in its cubins (mpkc's harness ABI, `mpkc verify`'s).
    pub entry: String,
    /// Per declared target: the cubin (in the output folder) and ptxas's report. Empty for a
    /// unit without a kernel (spec header only): a helper, whose code is in its callers' kernels.
    pub cubins: Vec<(Target, PathBuf, PtxasReport)>,
}

/// What a build produced.
#[derive(Clone, Debug)]
pub struct Output {
    /// The folder holding every generated file and cubin (`$OUT_DIR/mpkc` by default).
    pub dir: PathBuf,
    /// Every built unit, in contract order then instance order.
    pub kernels: Vec<Kernel>,
    /// `dir/kernels.rs` ([`rust`]), for `include!`.
    pub rust_module: PathBuf,
    /// The files the build read (each printed as `cargo:rerun-if-changed`).
    pub inputs: Vec<PathBuf>,
    /// Rendered warnings (each of their lines printed as `cargo:warning`).
    pub warnings: Vec<String>,
}

impl Builder {
    /// A builder with no contracts, writing to `$OUT_DIR/mpkc`, printing `cargo:` lines, and
    /// running up to the available parallelism of nvcc processes.
    pub fn new() -> Builder {
        Builder {
            files: Vec::new(),
            stdlib: Vec::new(),
            out_dir: None,
            cargo_metadata: true,
            jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }

    /// Adds a contract file (`.mpk`), relative to the build script's folder (the package root).
    pub fn file(&mut self, path: impl AsRef<Path>) -> &mut Builder {
        self.files.push(path.as_ref().to_path_buf());
        self
    }

    /// Adds contract files.
    pub fn files<P: AsRef<Path>>(&mut self, paths: impl IntoIterator<Item = P>) -> &mut Builder {
        for p in paths {
            self.file(p);
        }
        self
    }

    /// Adds a contract of mpkc's embedded stdlib by name (`rmsnorm_v2` for
    /// `stdlib/rmsnorm_v2.mpk`). An unknown name is an [`Error::Usage`] naming the known ones.
    pub fn stdlib(&mut self, name: &str) -> &mut Builder {
        self.stdlib.push(name.to_string());
        self
    }

    /// Writes into `dir` instead of `$OUT_DIR/mpkc`.
    pub fn out_dir(&mut self, dir: impl AsRef<Path>) -> &mut Builder {
        self.out_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Whether to print `cargo:` lines (default true; off outside a build script).
    pub fn cargo_metadata(&mut self, on: bool) -> &mut Builder {
        self.cargo_metadata = on;
        self
    }

    /// nvcc processes at a time (at least 1).
    pub fn jobs(&mut self, jobs: usize) -> &mut Builder {
        self.jobs = jobs.max(1);
        self
    }

    /// Checks, generates and compiles (see the module documentation). Errors: no output folder
    /// ([`Error::Usage`]), an unreadable file or an unwritable output ([`Error::Io`]), contract
    /// errors or nvcc failures as rendered diagnostics ([`Error::Diagnostics`]), no nvcc
    /// ([`Error::Toolchain`]).
    pub fn compile(&self) -> Result<Output, Error> {
        let dir = self.output_dir()?;
        if self.cargo_metadata {
            for f in &self.files {
                println!("cargo:rerun-if-changed={}", f.display());
            }
            for v in WATCHED_ENV {
                println!("cargo:rerun-if-env-changed={v}");
            }
        }
        let (sources, unreadable) = self.sources()?;
        let mut checked = check_sources(&sources, &Default::default(), &Default::default());
        checked.extend(unreadable);
        let rendered = report::diagnostics(&checked);
        if rendered.errors > 0 {
            return Err(Error::Diagnostics {
                errors: rendered.errors,
                rendered: rendered.text,
            });
        }
        let mut warnings = rendered.warnings;
        let units = generate_all(&checked);
        write_all(&dir, &units).map_err(|e| Error::Io(e.to_string()))?;
        let tc = nvcc::find().map_err(Error::Toolchain)?;
        let opts = CompileOptions {
            jobs: self.jobs,
            cache: None,
        };
        let jobs = compile_all_with(&tc, &dir, &checked, &units, &opts, &());
        let failed = report::failures(&checked, &units, &jobs);
        if failed.errors > 0 {
            return Err(Error::Diagnostics {
                errors: failed.errors,
                rendered: failed.text,
            });
        }
        warnings.extend(report::advisories(&checked, &units, &jobs));
        let mut kernels: Vec<Kernel> = units
            .iter()
            .map(|u| Kernel {
                unit: u.unit.clone(),
                contract: checked[u.source].display_source().path.clone(),
                entry: crate::back::harness_entry(&u.unit),
                cubins: Vec::new(),
            })
            .collect();
        for j in jobs {
            if let Ok((cubin, report)) = j.result {
                kernels[j.unit].cubins.push((j.target, cubin, report));
            }
        }
        let rust_module = dir.join("kernels.rs");
        std::fs::write(&rust_module, rust::module(&kernels))
            .map_err(|e| Error::Io(format!("{}: {e}", rust_module.display())))?;
        if self.cargo_metadata {
            for w in &warnings {
                for line in w.lines() {
                    println!("cargo:warning={line}");
                }
            }
        }
        Ok(Output {
            dir,
            kernels,
            rust_module,
            inputs: self.files.clone(),
            warnings,
        })
    }

    fn output_dir(&self) -> Result<PathBuf, Error> {
        if let Some(d) = &self.out_dir {
            return Ok(d.clone());
        }
        std::env::var_os("OUT_DIR")
            .map(|d| PathBuf::from(d).join(OUT_SUBDIR))
            .ok_or_else(|| {
                Error::Usage(
                    "no output folder: $OUT_DIR is not set (it is in a build script); call `Builder::out_dir`".to_string(),
                )
            })
    }

    /// The sources in order (files, then stdlib contracts), and the checked form of each file
    /// that is not UTF-8 (one diagnostic).
    fn sources(&self) -> Result<(Vec<Source>, Vec<Checked>), Error> {
        let mut sources = Vec::new();
        let mut unreadable = Vec::new();
        for f in &self.files {
            let bytes = std::fs::read(f).map_err(|e| Error::Io(format!("{}: {e}", f.display())))?;
            match input::decode(f.display().to_string(), bytes) {
                Ok(s) => sources.push(s),
                Err(c) => unreadable.push(*c),
            }
        }
        for name in &self.stdlib {
            let path = format!("stdlib/{name}.mpk");
            let Some((p, text)) = stdlib::CONTRACTS.iter().find(|(p, _)| *p == path) else {
                let known: Vec<&str> = stdlib::CONTRACTS
                    .iter()
                    .map(|(p, _)| p.trim_start_matches("stdlib/").trim_end_matches(".mpk"))
                    .collect();
                return Err(Error::Usage(format!(
                    "no stdlib contract `{name}`; the stdlib has {}",
                    known.join(", ")
                )));
            };
            sources.push(Source {
                path: (*p).to_string(),
                text: (*text).to_string(),
            });
        }
        Ok((sources, unreadable))
    }
}
