//! `<unit>_layout.h`: the layout math of a pipeline unit's kernels, as `constexpr` data and
//! `__host__ __device__` functions in one host-safe header (no device code, no asm).
//!
//! Both kernels (`<unit>.cuh` for sm_100a, `<unit>_sm90.cuh` for sm_90a) include it and compute
//! every descriptor, operand SMEM offset, TMEM address, accumulator fragment position and scale
//! byte position through it, so that the layout oracle (tests/oracle.rs, host programs under
//! tests/oracle/) compiles the very functions the kernels run and compares them with what
//! CUTLASS's CuTe derives for the same tile. It holds, in namespace `kernel::<unit>::layout`:
//!
//! - `Tiles`: the operand tiles of a stage in SMEM as the TMA boxes write them (K-major,
//!   128-byte swizzle), and the TMA boxes themselves;
//! - `Scales` (block-scaled fp8 only): the UE8M0 scale-factor block of a stage and the loader's
//!   staging function, shared by both targets;
//! - `Sm100`: the tcgen05 instruction and SMEM descriptors per MMA, the TMEM columns of the
//!   accumulator slots and scale factors, and the epilogue's `tcgen05.ld` fragment;
//! - `Sm90` (where the contract declares sm_90a): the wgmma descriptors per MMA and the wgmma
//!   accumulator fragment.

pub mod descriptors;
mod scales;
mod sm100;
mod sm90;
mod tiles;

pub use sm100::ld_cols as sm100_ld_cols;

use super::banner::{banner, ContractInfo};
use super::writer::Writer;
use crate::ir::Target;
use crate::lower::{LinearMath, Operands};
use crate::valid::CheckedTask;

/// The name of the layout header of `unit`.
pub fn file_name(unit: &str) -> String {
    format!("{unit}_layout.h")
}

/// Emits `<unit>_layout.h` for the pipeline `p` of `task`.
pub fn emit(task: &CheckedTask, p: &LinearMath, info: &ContractInfo) -> String {
    let unit = task.ir.unit_name();
    let mut w = Writer::new();
    w.line(banner(&task.ir, info));
    w.comment("Layout math of the pipeline kernels of this unit (descriptors, SMEM offsets, TMEM addresses,");
    w.comment("accumulator fragments, scale positions). Host-safe: plain C++17 without CUDA compiles it, and");
    w.comment("tests/oracle.rs compiles it against CUTLASS's CuTe. The kernels include it and use nothing else");
    w.comment("for these numbers.");
    w.line("#pragma once");
    w.blank();
    w.line("#include <cstdint>");
    w.line("#include <cstring>");
    w.blank();
    w.line("#ifndef MPKC_HD");
    w.line("#if defined(__CUDACC__)");
    w.line("#define MPKC_HD __host__ __device__");
    w.line("#define MPKC_UNROLL _Pragma(\"unroll\")");
    w.line("#else");
    w.line("#define MPKC_HD");
    w.line("#define MPKC_UNROLL");
    w.line("#endif");
    w.line("#endif");
    w.blank();
    w.open_namespace(&format!("kernel::{unit}::layout"));
    w.blank();
    tiles::emit(&mut w, task, p);
    if let Operands::Fp8BlockScale {
        w_scale, a_scale, ..
    } = &p.operands
    {
        scales::emit(
            &mut w,
            p,
            &task.ir.tensors[*w_scale].name,
            &task.ir.tensors[*a_scale].name,
        );
    }
    // Each target's struct only where it is a target (an sm_90a-only contract may have a tile the
    // sm_100a lowering does not take, e.g. 64 rows).
    if task.ir.targets.iter().any(|t| t.target == Target::Sm100a) {
        sm100::emit(&mut w, p);
    }
    if task.ir.targets.iter().any(|t| t.target == Target::Sm90a) {
        sm90::emit(&mut w, p);
    }
    w.close_namespace(&format!("kernel::{unit}::layout"));
    w.finish()
}

/// `constexpr` member lines: `static constexpr TYPE NAME = VALUE;  // why`.
/// Emits descriptor constant `d` of its target's struct: what it is, its fields decoded, then
/// the constant (`static constexpr uint32_t I_DESC = 0x…u;`).
fn emit_descriptor(w: &mut Writer, d: &descriptors::Descriptor) {
    for l in d.about {
        w.comment(*l);
    }
    for l in crate::back::sm100::desc::decode_lines(&d.fields) {
        w.comment(format!("  {l}"));
    }
    member(w, d.c_type(), d.name, d.c_literal(), "the fields above");
}

pub(crate) fn member(
    w: &mut Writer,
    ty: &str,
    name: &str,
    value: impl std::fmt::Display,
    why: &str,
) {
    w.line(format!("static constexpr {ty} {name} = {value};  // {why}"));
}
