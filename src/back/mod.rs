//! Code generation from a [`CheckedTask`]: the host-safe spec header and the design document for
//! every family, the consumer kernel for the consumer-only families, the pipeline kernels and
//! their layout header, and the worker translation unit that wraps the task in the standalone
//! runtime for nvcc and `mpkc verify`.
//!
//! Output is deterministic: the same contract gives byte-identical files (no timestamps, no
//! absolute paths, ordered iteration only).

mod banner;
mod consumer;
pub(crate) mod consumer_ring;
mod design_doc;
mod epilogue;
pub mod files;
mod grid;
pub mod harness;
pub mod helper;
pub mod layout;
pub mod names;
mod page_prefix;
mod pipeline;
pub mod registration;
mod roles;
pub mod setmaxnreg;
pub mod sm100;
pub mod sm90;
mod spec_h;
mod wiring;
pub mod writer;

pub use banner::ContractInfo;
pub use files::Emitter;
pub use harness::entry_name as harness_entry;

use crate::ir::Target;
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
    /// `<unit>_register.cc`: the wiring snippet (what `mpkc wire` places in an MPK tree).
    Wiring,
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
            // Each kernel renders its target's role program; the target-neutral files read the
            // linear engine's binding the programs carry (`files::sources` plans them only for
            // a lowered program).
            let text = match f.emitter {
                Emitter::SpecHeader => spec_h::emit(task, info),
                Emitter::LayoutHeader => layout::emit(task, task.linear()?, info),
                Emitter::PipelineSm100 => {
                    sm100::emit(task, task.program(Target::Sm100a)?, info, opts)?
                }
                Emitter::PipelineSm90 => {
                    sm90::emit(task, task.program(Target::Sm90a)?, info, opts)?
                }
                Emitter::DesignDoc => design_doc::emit(task, info),
                Emitter::Consumer => consumer::emit(task, info),
                Emitter::Harness => harness::emit(task, info),
                Emitter::Wiring => wiring::emit(task, info)?,
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
        "mpkc_ring.cuh",
        include_str!("../../stdlib/include/mpkc_ring.cuh"),
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
