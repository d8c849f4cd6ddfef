//! `<unit>_harness.cu`: the translation unit nvcc compiles for each target, and `mpkc verify`
//! runs. It instantiates mpkc's standalone Runtime-V2 worker (`mpkc_worker.cuh`: 8 warps, 3-slot ring, page parity, dependency
//! prefix) for the task's `Registration`, the way MPK's code generator wraps registered role
//! bodies, so that the cubin holds exactly the code MPK would run.

use super::banner::{banner, ContractInfo};
use super::writer::Writer;
use crate::valid::CheckedTask;

/// The kernel symbol of a unit's harness (`mpkc_harness_<unit>`).
pub fn entry_name(unit: &str) -> String {
    format!("mpkc_harness_{unit}")
}

/// Emits the harness translation unit `<unit>_harness.cu`.
pub fn emit(task: &CheckedTask, info: &ContractInfo) -> String {
    let unit = task.ir.unit_name();
    let mut w = Writer::new();
    w.line(banner(&task.ir, info));
    w.line("// The task inside mpkc's standalone Runtime-V2 worker (8 warps, one CTA per SM).");
    w.line("#include \"mpkc_worker.cuh\"");
    w.line(format!("#include \"{unit}.cuh\""));
    w.blank();
    w.line(format!(
        "extern \"C\" __global__ void __launch_bounds__(256, 1) {}(mpkc::rt::WorkerArgs args) {{",
        entry_name(&unit)
    ));
    w.line(format!("  mpkc::rt::worker<::kernel::{unit}::Registration>(args);"));
    w.line("}");
    w.finish()
}
