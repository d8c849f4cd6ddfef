//! "Verification": what `mpkc verify` compares the unit's outputs with, taken from the functions
//! verify itself calls ([`crate::gpu::reference::semantics`] for the reference, and for a
//! contract's Python reference [`crate::gpu::python::checks`] for each output's comparison), so
//! that the document and the run cannot disagree (docs/references.md).

use crate::gpu::python::{checks, written};
use crate::gpu::reference::{semantics, Check, Semantics};
use crate::valid::CheckedTask;
use std::fmt::Write;

/// Appends the section to `s`. A helper has none (it runs inside its caller's verify).
pub(super) fn write(s: &mut String, task: &CheckedTask) {
    if task.ir.family == crate::ir::Family::Helper {
        return;
    }
    let _ = writeln!(s, "## Verification\n");
    let sem = match semantics(task) {
        Ok(x) => x,
        Err(why) => {
            let _ = writeln!(
                s,
                "`mpkc verify` cannot run this unit: {why}. Until then nothing checks its outputs on a GPU.\n"
            );
            return;
        }
    };
    let (what, how) = match &sem {
        Semantics::Python(r) => {
            let _ = writeln!(
                s,
                "`mpkc verify` compares every tensor the task writes with the contract's reference, `{}` (run by python3 on the same inputs; each tensor's comparison below: the reference's tolerances for it, else its tolerances for every output, else the dtype's default).\n",
                r.describe()
            );
            let outs = written(task);
            let _ = writeln!(s, "| output | type | compared by |");
            let _ = writeln!(s, "|---|---|---|");
            for (o, c) in checks(&outs, r).iter().enumerate() {
                let _ = writeln!(
                    s,
                    "| `{}` | {} | {} |",
                    outs[o].name,
                    outs[o].dtype.as_str(),
                    describe(c, &outs)
                );
            }
            let _ = writeln!(s);
            return;
        }
        Semantics::Rmsnorm { eps } => (format!("RMSNorm (eps {eps:e})"), FLOAT),
        Semantics::SiluMul => ("SiLU(gate) x up".to_string(), FLOAT),
        Semantics::Embedding => (
            "the embedding gather".to_string(),
            "the gathered rows exactly (a copy)",
        ),
        Semantics::ArgmaxPartial { chunk } => (
            format!("the per-chunk argmax (chunks of {chunk} entries)"),
            "maxima and indices exactly",
        ),
        Semantics::ArgmaxReduce { chunk } => (
            format!("the argmax of the chunk candidates (chunks of {chunk} entries)"),
            "the token exactly",
        ),
        Semantics::SplitkReduce => ("the sum of the split-K partials".to_string(), FLOAT),
        Semantics::Gemv => ("y = x W^T".to_string(), FLOAT),
        Semantics::GemvFp8 => (
            "y = (x · x_scale) (W · W_scale)^T, one scale per 1x128 group of x and per 128x128 block of W"
                .to_string(),
            FLOAT,
        ),
        Semantics::Linear(_) => (
            "the linear as the pipeline's epilogue states it: y = x W^T with its residual, split-K sum and scales"
                .to_string(),
            "the result by relative L2 below 1e-2 (bf16, f16), 1e-4 (f32) or 2e-2 on an fp8 path, split-K partials likewise, arrival counters and a split-K accumulator (left zero) exactly, an fp8 result dequantized with its scales below 2e-2",
        ),
    };
    let _ = writeln!(
        s,
        "`mpkc verify` compares the outputs with mpkc's own float64 reference of {what} (src/gpu/reference.rs), on random inputs that are never all zero: {how}.\n"
    );
}

/// How mpkc's float references compare a float result (gpu.md).
const FLOAT: &str = "each output by relative L2 below 1e-2 (bf16, f16) or 1e-4 (f32)";

/// One comparison in words, naming the scale output of a dequantized one.
fn describe(c: &Check, outs: &[crate::gpu::python::Written]) -> String {
    match c {
        Check::RelL2(t) => format!("relative L2 below {t:e}"),
        Check::Exact => "every element equal".to_string(),
        Check::Close { atol, rtol } => {
            format!("every \\|out - ref\\| <= {atol:e} + {rtol:e} \\|ref\\|")
        }
        Check::Dequant { scales, group, tol } => format!(
            "dequantized with `{}` (one scale per {group} elements of a row), relative L2 below {tol:e}",
            outs.get(*scales).map_or("?", |w| w.name.as_str())
        ),
        Check::ScalesOf => {
            "through the output it scales: written, finite and positive".to_string()
        }
    }
}
