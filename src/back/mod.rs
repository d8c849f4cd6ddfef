//! Code generation from a [`CheckedTask`]: the host-safe spec header for every family, the
//! consumer kernel for the consumer-only families, and the worker translation unit that wraps the
//! task in the standalone runtime for nvcc and `mpkc verify`.
//!
//! Output is deterministic: the same contract gives byte-identical files (no timestamps, no
//! absolute paths, ordered iteration only).

mod banner;
mod consumer;
mod design_doc;
mod epilogue;
pub mod files;
pub mod harness;
pub mod layout;
pub mod names;
mod pipeline;
mod roles;
pub mod setmaxnreg;
pub mod sm100;
pub mod sm90;
mod spec_h;
pub mod writer;

pub use banner::ContractInfo;
pub use files::Emitter;
pub use harness::entry_name as harness_entry;

use crate::valid::CheckedTask;

/// What a generated file is, for the build driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// `<unit>_spec.h`: host-safe header.
    SpecHeader,
    /// `<unit>_layout.h` of a pipeline: the host-safe layout math its kernels use.
    LayoutHeader,
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

/// Generates every file of `task`: the [`files::sources`] planned for it, each by its emitter.
pub fn generate_with(
    task: &CheckedTask,
    info: &ContractInfo,
    opts: &GenOptions,
) -> Vec<GeneratedFile> {
    files::sources(task)
        .into_iter()
        .filter_map(|f| {
            let text = match (f.emitter, &task.pipeline) {
                (Emitter::SpecHeader, _) => spec_h::emit(task, info),
                (Emitter::LayoutHeader, Some(p)) => layout::emit(task, p, info),
                (Emitter::PipelineSm100, Some(p)) => sm100::emit(task, p, info, opts),
                (Emitter::PipelineSm90, Some(p)) => sm90::emit(task, p, info, opts),
                (Emitter::DesignDoc, Some(p)) => design_doc::emit(task, p, info),
                (Emitter::Consumer, _) => consumer::emit(task, info),
                (Emitter::Harness, _) => harness::emit(task, info),
                // `files::sources` plans the pipeline files only for a task with a pipeline.
                (
                    Emitter::LayoutHeader
                    | Emitter::PipelineSm100
                    | Emitter::PipelineSm90
                    | Emitter::DesignDoc,
                    None,
                ) => return None,
            };
            Some(GeneratedFile {
                kind: f.emitter.kind(),
                name: f.name,
                text,
            })
        })
        .collect()
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
