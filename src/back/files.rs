//! The files `mpkc build` writes for one task instance, by name, before any text is generated.
//!
//! [`super::generate_with`] emits exactly the [`sources`] listed here, and nvcc writes the
//! [`cubin_name`] of each harness per target, so the generated-file clash check
//! (`driver::unit_collisions`, `E0012`) and the writer cannot drift apart.

use super::FileKind;
use crate::ir::Target;
use crate::valid::CheckedTask;

/// Which emitter writes a planned source file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Emitter {
    /// `<unit>_spec.h`: the host-safe spec header (every family).
    SpecHeader,
    /// `<unit>_layout.h` of a pipeline: the host-safe layout header both kernels include.
    LayoutHeader,
    /// `<unit>.cuh` of a pipeline: the sm_100a kernel.
    PipelineSm100,
    /// `<unit>_sm90.cuh` of a pipeline that declares sm_90a: the sm_90a kernel.
    PipelineSm90,
    /// `<unit>.spec.md`: the design document (every family).
    DesignDoc,
    /// `<unit>.cuh` of a consumer-only family: its kernel.
    Consumer,
    /// `<unit>_harness.cu`: the translation unit nvcc compiles per target.
    Harness,
    /// `<unit>_register.cc`: the wiring snippet (a unit with a `task_id` and a registration).
    Wiring,
}

impl Emitter {
    /// What the file is, in words, for diagnostics ("the sm_90a kernel").
    pub fn describe(self) -> &'static str {
        match self {
            Emitter::SpecHeader => "the spec header",
            Emitter::LayoutHeader => "the layout header",
            Emitter::PipelineSm100 => "the sm_100a kernel",
            Emitter::PipelineSm90 => "the sm_90a kernel",
            Emitter::DesignDoc => "the design document",
            Emitter::Consumer => "the kernel",
            Emitter::Harness => "the nvcc translation unit",
            Emitter::Wiring => "the wiring snippet",
        }
    }

    /// The target a file of this emitter is written for, or `None` for a target-neutral one.
    ///
    /// Decided per emitter, one step finer than [`FileKind`] (whose `Kernel` covers both
    /// pipeline kernels and the consumer kernel): the pipeline's sm_100a kernel (`<unit>.cuh`)
    /// and sm_90a kernel (`<unit>_sm90.cuh`) hold code of one target each; the spec header, the
    /// layout header, the design document, a consumer family's kernel (one `<unit>.cuh` for
    /// every target) and the harness (one `<unit>_harness.cu` that nvcc compiles for each
    /// declared target, choosing the kernel by `__CUDA_ARCH__`) are target-neutral. The
    /// snapshots of generated files follow it: `snapshots/gen/<target>/` or
    /// `snapshots/gen/common/`, design documents apart in `snapshots/gen/doc/`
    /// (tests/generated.rs).
    pub fn target(self) -> Option<Target> {
        match self {
            Emitter::PipelineSm100 => Some(Target::Sm100a),
            Emitter::PipelineSm90 => Some(Target::Sm90a),
            Emitter::SpecHeader
            | Emitter::LayoutHeader
            | Emitter::DesignDoc
            | Emitter::Consumer
            | Emitter::Harness
            | Emitter::Wiring => None,
        }
    }

    /// The [`FileKind`] the build driver sees.
    pub fn kind(self) -> FileKind {
        match self {
            Emitter::SpecHeader => FileKind::SpecHeader,
            Emitter::LayoutHeader => FileKind::LayoutHeader,
            Emitter::PipelineSm100 | Emitter::PipelineSm90 | Emitter::Consumer => FileKind::Kernel,
            Emitter::DesignDoc => FileKind::DesignDoc,
            Emitter::Harness => FileKind::Harness,
            Emitter::Wiring => FileKind::Wiring,
        }
    }
}

/// One source file `build` writes for a task instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedFile {
    /// File name (no directory).
    pub name: String,
    /// Who writes it.
    pub emitter: Emitter,
}

/// The source files `build` writes for `task`, in write order: the spec header; for a pipeline
/// that lowers the layout header, the sm_100a kernel, the sm_90a kernel where sm_90a is
/// declared, the design document and the harness; for any other task the design document, then
/// for a consumer-only family the kernel and the harness; last, for a unit with a `task_id` and
/// a registration, the wiring snippet.
pub fn sources(task: &CheckedTask) -> Vec<PlannedFile> {
    let unit = task.ir.unit_name();
    let file = |name: String, emitter| PlannedFile { name, emitter };
    let mut out = vec![file(format!("{unit}_spec.h"), Emitter::SpecHeader)];
    if task.linear().is_some() {
        out.push(file(super::layout::file_name(&unit), Emitter::LayoutHeader));
        // One kernel per declared target, none for a target the contract does not declare.
        if task.ir.targets.iter().any(|t| t.target == Target::Sm100a) {
            out.push(file(format!("{unit}.cuh"), Emitter::PipelineSm100));
        }
        if task.ir.targets.iter().any(|t| t.target == Target::Sm90a) {
            out.push(file(format!("{unit}_sm90.cuh"), Emitter::PipelineSm90));
        }
        out.push(file(format!("{unit}.spec.md"), Emitter::DesignDoc));
        out.push(file(format!("{unit}_harness.cu"), Emitter::Harness));
    } else {
        // Every unit has its design document; a pipeline's comes after its kernels (above).
        out.push(file(format!("{unit}.spec.md"), Emitter::DesignDoc));
    }
    if task.ir.family.is_consumer_only() {
        out.push(file(format!("{unit}.cuh"), Emitter::Consumer));
        out.push(file(format!("{unit}_harness.cu"), Emitter::Harness));
    }
    if super::wiring::has_snippet(task) {
        out.push(file(format!("{unit}_register.cc"), Emitter::Wiring));
    }
    out
}

/// The cubin nvcc writes for translation unit `unit_file` (`x_harness.cu`) and `target`:
/// `x_harness.sm_90a.cubin`, next to it.
pub fn cubin_name(unit_file: &str, target: Target) -> String {
    let stem = unit_file.strip_suffix(".cu").unwrap_or(unit_file);
    format!("{stem}.{target}.cubin")
}

/// Every file `build` writes for `task`, with what it is: [`sources`], then the cubin of each
/// harness for each declared target.
pub fn outputs(task: &CheckedTask) -> Vec<(String, String)> {
    let planned = sources(task);
    let mut out: Vec<(String, String)> = planned
        .iter()
        .map(|f| (f.name.clone(), f.emitter.describe().to_string()))
        .collect();
    for f in planned.iter().filter(|f| f.emitter == Emitter::Harness) {
        for t in &task.ir.targets {
            out.push((
                cubin_name(&f.name, t.target),
                format!("the {} cubin", t.target),
            ));
        }
    }
    out
}
