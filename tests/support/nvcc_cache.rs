//! The nvcc cache the test binaries share: mpkc's own content-addressed build cache (README,
//! "Build cache"; `mpkc::driver::cache`) in `target/tmp/nvcc-cache`. Its key covers the whole
//! nvcc command line, the toolchain, and the contents of the translation unit and of every
//! header it includes, not the folder it is compiled in: a kernel several tests compile with the
//! same command line (the stdlib's harnesses: tests/generated.rs twice, tests/memory_model.rs,
//! tests/sass.rs, tests/examples.rs and tests/check_build_parity.rs overlap) runs nvcc once per
//! run, and its stored stderr (the ptxas report) is what every later test reads. On a clean
//! checkout (CI) the first test to compile a unit runs nvcc; nothing outlives `target/`.

#![allow(dead_code)]

use mpkc::driver::build::UnitOutput;
use mpkc::driver::build::{compile_all_with, run_cached, CompileJob, CompileOptions};
use mpkc::driver::cache::Cache;
use mpkc::driver::fingerprint::toolchain_identity;
use mpkc::driver::nvcc::{CompileFailure, NvccOutput, Toolchain};
use mpkc::driver::Checked;
use std::path::{Path, PathBuf};

/// The shared cache.
pub fn cache() -> Cache {
    Cache::at(&PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("nvcc-cache"))
}

/// `nvcc::run` through the shared cache: nvcc with `args` on `file` in `dir`, writing `cubin`.
pub fn run(
    tc: &Toolchain,
    dir: &Path,
    file: &str,
    args: &[String],
    cubin: &str,
) -> Result<NvccOutput, CompileFailure> {
    // The toolchain's identity (stat calls and its version text) once per test binary: every
    // test of one binary finds the same nvcc.
    static IDENTITY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let identity = IDENTITY.get_or_init(|| toolchain_identity(tc));
    let c = cache();
    run_cached(tc, (&c, identity), dir, file, args, cubin).0
}

/// `compile_all` through the shared cache.
pub fn compile_all(
    tc: &Toolchain,
    dir: &Path,
    checked: &[Checked],
    units: &[UnitOutput],
    jobs: usize,
) -> Vec<CompileJob> {
    let c = cache();
    let opts = CompileOptions {
        jobs,
        cache: Some(&c),
    };
    compile_all_with(tc, dir, checked, units, &opts, &())
}
