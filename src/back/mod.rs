//! Code generation from a [`CheckedTask`]: the host-safe spec header for every family, the
//! consumer kernel for the consumer-only families, and the worker translation unit that wraps the
//! task in the standalone runtime for nvcc and `mpkc verify`.
//!
//! Output is deterministic: the same contract gives byte-identical files (no timestamps, no
//! absolute paths, ordered iteration only).

mod banner;
mod consumer;
mod design_doc;
pub mod sm100;
pub mod names;
mod spec_h;
mod harness;
pub mod writer;

pub use banner::ContractInfo;
pub use harness::entry_name as harness_entry;

use crate::valid::CheckedTask;

/// What a generated file is, for the build driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// `<unit>_spec.h`: host-safe header.
    SpecHeader,
    /// `<unit>.cuh`: device code of the task's roles.
    Kernel,
    /// `<unit>_harness.cu`: the translation unit nvcc compiles per target and `verify` runs.
    Harness,
    /// `<unit>.spec.md`: the design document.
    DesignDoc,
}

/// One generated file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GeneratedFile {
    /// File name (no directory).
    pub name: String,
    /// What it is.
    pub kind: FileKind,
    /// Contents.
    pub text: String,
}

/// Generates every file of `task`. Pipeline kernels (family A) come with the sm_100a backend;
/// until then a pipeline task yields its spec header only.
pub fn generate(task: &CheckedTask, info: &ContractInfo) -> Vec<GeneratedFile> {
    let unit = task.ir.unit_name();
    let mut files = vec![GeneratedFile {
        name: format!("{unit}_spec.h"),
        kind: FileKind::SpecHeader,
        text: spec_h::emit(task, info),
    }];
    if let Some(p) = &task.pipeline {
        files.push(GeneratedFile { name: format!("{unit}.cuh"), kind: FileKind::Kernel, text: sm100::emit(task, p, info) });
        files.push(GeneratedFile { name: format!("{unit}.spec.md"), kind: FileKind::DesignDoc, text: design_doc::emit(task, p, info) });
        files.push(GeneratedFile {
            name: format!("{unit}_harness.cu"),
            kind: FileKind::Harness,
            text: harness::emit(task, info),
        });
    }
    if task.ir.family.is_consumer_only() {
        files.push(GeneratedFile { name: format!("{unit}.cuh"), kind: FileKind::Kernel, text: consumer::emit(task, info) });
        files.push(GeneratedFile {
            name: format!("{unit}_harness.cu"),
            kind: FileKind::Harness,
            text: harness::emit(task, info),
        });
    }
    files
}

/// The support headers every output directory needs, shipped in `stdlib/include/`.
pub const SUPPORT_HEADERS: &[(&str, &str)] = &[
    ("mpkc_prelude.cuh", include_str!("../../stdlib/include/mpkc_prelude.cuh")),
    ("mpkc_sm100.cuh", include_str!("../../stdlib/include/mpkc_sm100.cuh")),
    ("mpkc_runtime.cuh", include_str!("../../stdlib/include/mpkc_runtime.cuh")),
    ("mpkc_worker.cuh", include_str!("../../stdlib/include/mpkc_worker.cuh")),
    ("mpkc_spec_support.h", include_str!("../../stdlib/include/mpkc_spec_support.h")),
];
