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
    super::setmaxnreg::harness_defines(&mut w, &[&task.ir]);
    w.line("#include \"mpkc_worker.cuh\"");
    include_kernel(&mut w, task);
    w.blank();
    // `__grid_constant__`: the roles take the runtime configuration by reference (MPK's
    // signature), so without it a body that reads it makes the entry copy the arguments to local
    // memory (80 bytes of stack on sm_100a for a paged task reading its page table).
    w.line(format!(
        "extern \"C\" __global__ void __launch_bounds__(256, 1) {}(__grid_constant__ mpkc::rt::WorkerArgs const args) {{",
        entry_name(&unit)
    ));
    w.line(format!(
        "  mpkc::rt::worker<::kernel::{unit}::Registration>(args);"
    ));
    w.line("}");
    w.finish()
}

/// Which pipeline kernels `task` has: (`<unit>.cuh` for sm_100a, `<unit>_sm90.cuh` for sm_90a),
/// one per declared target; consumer families have the one `<unit>.cuh` for every target.
fn pipeline_kernels(task: &CheckedTask) -> Option<(bool, bool)> {
    use crate::ir::Target;
    task.linear()?;
    let has = |t: Target| task.ir.targets.iter().any(|d| d.target == t);
    Some((has(Target::Sm100a), has(Target::Sm90a)))
}

/// `#include`s the task's kernel: for a pipeline declaring both targets, the wgmma lowering in
/// device passes below sm_100 and the tcgen05 one otherwise; a pipeline declaring one target, that
/// target's kernel alone.
fn include_kernel(w: &mut Writer, task: &CheckedTask) {
    let unit = task.ir.unit_name();
    match pipeline_kernels(task) {
        Some((true, true)) => {
            w.line("#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 1000");
            w.line(format!("#include \"{unit}_sm90.cuh\""));
            w.line("#else");
            w.line(format!("#include \"{unit}.cuh\""));
            w.line("#endif");
        }
        Some((false, true)) => w.line(format!("#include \"{unit}_sm90.cuh\"")),
        _ => w.line(format!("#include \"{unit}.cuh\"")),
    }
}

/// The kernel symbol of a chain harness.
pub fn chain_entry_name(units: &[&CheckedTask]) -> String {
    let names: Vec<String> = units.iter().map(|t| t.ir.unit_name()).collect();
    format!("mpkc_chain_{}", names.join("__"))
}

/// A harness translation unit running several task types in one worker (`worker<R0, R1, ...>`):
/// a producer and the tasks depending on it through events, as `mpkc verify` runs a chain such
/// as argmax partial → reduce or a split-K linear → its reduce. The TaskDesc's `registration`
/// is the index into `units`.
pub fn emit_chain(units: &[&CheckedTask], info: &ContractInfo) -> String {
    let mut w = Writer::new();
    if let Some(first) = units.first() {
        w.line(banner(&first.ir, info));
    }
    let names: Vec<String> = units.iter().map(|t| t.ir.unit_name()).collect();
    w.line(format!(
        "// A chain of task types in one standalone worker, registrations in order: {}.",
        names.join(", ")
    ));
    let irs: Vec<&crate::ir::TaskIr> = units.iter().map(|t| &t.ir).collect();
    super::setmaxnreg::harness_defines(&mut w, &irs);
    w.line("#include \"mpkc_worker.cuh\"");
    for t in units {
        include_kernel(&mut w, t);
    }
    w.blank();
    let regs: Vec<String> = names
        .iter()
        .map(|u| format!("::kernel::{u}::Registration"))
        .collect();
    w.line(format!(
        "extern \"C\" __global__ void __launch_bounds__(256, 1) {}(__grid_constant__ mpkc::rt::WorkerArgs const args) {{",
        chain_entry_name(units)
    ));
    w.line(format!("  mpkc::rt::worker<{}>(args);", regs.join(", ")));
    w.line("}");
    w.finish()
}
