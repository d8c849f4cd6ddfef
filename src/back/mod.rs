//! Code generation from a [`CheckedTask`]: the host-safe spec header for every family, the
//! consumer kernel for the consumer-only families, and the worker translation unit that wraps the
//! task in the standalone runtime for nvcc and `mpkc verify`.
//!
//! Output is deterministic: the same contract gives byte-identical files (no timestamps, no
//! absolute paths, ordered iteration only).

mod banner;
mod consumer;
mod design_doc;
pub mod harness;
pub mod names;
mod pipeline;
pub mod sm100;
pub mod sm90;
mod spec_h;
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

/// Options of one generation, for `mpkc verify`'s fault injection; the default generates what the
/// contract says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GenOptions {
    /// Leave the role re-init of this op ordinal out of its owner's re-init helper (the harness
    /// must then name the dropped re-init, I-M4).
    pub drop_reinit: Option<usize>,
}

/// Generates every file of `task` as its contract says.
pub fn generate(task: &CheckedTask, info: &ContractInfo) -> Vec<GeneratedFile> {
    generate_with(task, info, &GenOptions::default())
}

/// Generates every file of `task`: the spec header; for a pipeline (family A) the sm_100a kernel
/// `<unit>.cuh`, the sm_90a kernel `<unit>_sm90.cuh` where the contract declares sm_90a, the design
/// document and the harness; for the consumer-only families the kernel and the harness.
pub fn generate_with(
    task: &CheckedTask,
    info: &ContractInfo,
    opts: &GenOptions,
) -> Vec<GeneratedFile> {
    let unit = task.ir.unit_name();
    let mut files = vec![GeneratedFile {
        name: format!("{unit}_spec.h"),
        kind: FileKind::SpecHeader,
        text: spec_h::emit(task, info),
    }];
    if let Some(p) = &task.pipeline {
        files.push(GeneratedFile {
            name: format!("{unit}.cuh"),
            kind: FileKind::Kernel,
            text: sm100::emit(task, p, info, opts),
        });
        if task
            .ir
            .targets
            .iter()
            .any(|t| t.target == crate::ir::Target::Sm90a)
        {
            files.push(GeneratedFile {
                name: format!("{unit}_sm90.cuh"),
                kind: FileKind::Kernel,
                text: sm90::emit(task, p, info, opts),
            });
        }
        files.push(GeneratedFile {
            name: format!("{unit}.spec.md"),
            kind: FileKind::DesignDoc,
            text: design_doc::emit(task, p, info),
        });
        files.push(GeneratedFile {
            name: format!("{unit}_harness.cu"),
            kind: FileKind::Harness,
            text: harness::emit(task, info),
        });
    }
    if task.ir.family.is_consumer_only() {
        files.push(GeneratedFile {
            name: format!("{unit}.cuh"),
            kind: FileKind::Kernel,
            text: consumer::emit(task, info),
        });
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
    (
        "mpkc_prelude.cuh",
        include_str!("../../stdlib/include/mpkc_prelude.cuh"),
    ),
    (
        "mpkc_tma.cuh",
        include_str!("../../stdlib/include/mpkc_tma.cuh"),
    ),
    (
        "mpkc_sm100.cuh",
        include_str!("../../stdlib/include/mpkc_sm100.cuh"),
    ),
    (
        "mpkc_sm90.cuh",
        include_str!("../../stdlib/include/mpkc_sm90.cuh"),
    ),
    (
        "mpkc_runtime.cuh",
        include_str!("../../stdlib/include/mpkc_runtime.cuh"),
    ),
    (
        "mpkc_worker.cuh",
        include_str!("../../stdlib/include/mpkc_worker.cuh"),
    ),
    (
        "mpkc_spec_support.h",
        include_str!("../../stdlib/include/mpkc_spec_support.h"),
    ),
];
