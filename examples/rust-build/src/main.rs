//! Runs the rmsnorm_v2 kernel that `build.rs` built, through mpkc's harness ABI (what
//! `mpkc verify` runs), and checks every output against mpkc's CPU reference.
//!
//! Exit status (docs/design.md, "Conventions"): 0 every output matches; 1 an output does not;
//! 3 the driver or the kernel failed; 4 no GPU (or one no cubin was built for) to run on.

use mpkc::driver::{check_sources, stdlib, Source};
use mpkc::gpu::device::{Gpu, GpuError};
use mpkc::gpu::run::{run_case, Case, RunOptions};
use mpkc::ir::Target;
use std::process::ExitCode;

mod kernels {
    include!(concat!(env!("OUT_DIR"), "/mpkc/kernels.rs"));
}

use kernels::rmsnorm_v2_h4096 as built;

fn main() -> ExitCode {
    let gpu = match Gpu::open() {
        Ok(g) => g,
        Err(e @ (GpuError::NoDriver | GpuError::NoDevice(_))) => {
            eprintln!(
                "mpkc-rust-build-example: no GPU to run {} on ({e}); its cubins were built for {}",
                built::UNIT,
                built::CUBINS.iter().map(|(t, _)| *t).collect::<Vec<_>>().join(", ")
            );
            return ExitCode::from(4);
        }
        Err(e) => {
            eprintln!("mpkc-rust-build-example: {e}");
            return ExitCode::from(3);
        }
    };
    let target = match gpu.cc.0 {
        9 => Target::Sm90a,
        10 => Target::Sm100a,
        _ => {
            eprintln!(
                "mpkc-rust-build-example: {} has compute capability {}.{}, for which no cubin was built (sm_90a, sm_100a)",
                gpu.name, gpu.cc.0, gpu.cc.1
            );
            return ExitCode::from(4);
        }
    };
    let Some((_, cubin)) = built::CUBINS.iter().find(|(t, _)| *t == target.as_str()) else {
        eprintln!("mpkc-rust-build-example: no {target} cubin of {}", built::UNIT);
        return ExitCode::from(4);
    };
    // The task as mpkc checked it at build time: the same embedded contract, the same mpkc.
    let source: Vec<Source> = stdlib::sources()
        .into_iter()
        .filter(|s| s.path == built::CONTRACT)
        .collect();
    let checked = check_sources(&source, &Default::default(), &Default::default());
    let Some(task) = checked
        .iter()
        .flat_map(|c| c.tasks.iter())
        .find(|t| t.ir.unit_name() == built::UNIT)
    else {
        eprintln!("mpkc-rust-build-example: {} is not in {}", built::UNIT, built::CONTRACT);
        return ExitCode::from(3);
    };
    let case = Case {
        name: built::UNIT.to_string(),
        tasks: vec![task],
        links: Vec::new(),
        // rmsnorm_v2's token count is a compile-time param.
        tokens: None,
        // It has no paged KV cache.
        context: None,
        shared: Vec::new(),
        layer: None,
    };
    let opts = RunOptions {
        tasks_per_cta: 4,
        seed: 1,
        target,
        // Only a Python reference uses these; rmsnorm_v2 has mpkc's float64 reference.
        scratch: std::env::temp_dir().join("mpkc-rust-build-example"),
        device: 0,
    };
    match run_case(&gpu, &case, cubin, built::ENTRY, &opts) {
        Ok(run) => {
            println!(
                "{} on {} ({target}): {} CTAs, {} tasks",
                built::UNIT,
                gpu.name,
                run.ctas,
                run.tasks
            );
            for o in &run.outputs {
                println!(
                    "  {}: {} {:.3e} (tolerance {:.1e}), {} of {} elements unwritten: {}",
                    o.tensor,
                    o.metric,
                    o.error,
                    o.tol,
                    o.unwritten,
                    o.elements,
                    if o.pass { "matches the CPU reference" } else { "MISMATCH" }
                );
            }
            if !run.outputs.is_empty() && run.outputs.iter().all(|o| o.pass) {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => {
            eprintln!("mpkc-rust-build-example: {} failed: {e}", built::UNIT);
            ExitCode::from(3)
        }
    }
}
