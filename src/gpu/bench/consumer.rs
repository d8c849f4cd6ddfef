//! The consumer ops (family B/D: no pipeline) `mpkc bench` times against PyTorch eager (issue 12,
//! Targets: "rmsnorm, silu_mul, argmax and embedding no slower than PyTorch eager on the same
//! shapes"): which body templates have an eager equivalent, and where its tensors sit among a
//! task's inputs and outputs (by the template's formal names, as the CPU references read them).

use crate::gpu::reference::{input_of, output_of, semantics, Semantics};
use crate::valid::CheckedTask;

/// A consumer op with a PyTorch eager equivalent (docs/bench.md, "Consumer ops").
#[derive(Clone, Debug, PartialEq)]
pub enum EagerOp {
    /// `y[m, h] = x · rsqrt(mean(x²) + eps) · w`: `torch.nn.functional.rms_norm`.
    Rmsnorm {
        /// Epsilon.
        eps: f64,
    },
    /// `y[m, n] = silu(x[:, :n]) · x[:, n:]`: `F.silu(gate) * up`.
    SiluMul,
    /// `y[m, h] = table[ids[m]]`: `torch.nn.functional.embedding`.
    Embedding,
    /// `token[m] = argmax(logits[m, :])`, mpkc's `argmax_partial -> argmax_reduce` chain:
    /// `torch.argmax(logits, dim=-1)`.
    Argmax,
    /// Not a consumer op: the block-scaled fp8 linear's competitor where cuBLASLt has no
    /// block-scaled kernel (sm_90), `torch._scaled_mm` with per-tensor scales over `w [N, K]` and
    /// `x [M, K]` e4m3 (the weights rotated over `copies` copies); the block scales `w_scale`,
    /// `x_scale` only serve the check (`competitor::linear_side`).
    ScaledMm {
        /// Weight copies the calls rotate over.
        copies: usize,
    },
}

impl EagerOp {
    /// The op's name in the runner's manifest (`eager_runner.py`).
    pub fn name(&self) -> &'static str {
        match self {
            EagerOp::Rmsnorm { .. } => "rmsnorm",
            EagerOp::SiluMul => "silu_mul",
            EagerOp::Embedding => "embedding",
            EagerOp::Argmax => "argmax",
            EagerOp::ScaledMm { .. } => "scaled_mm",
        }
    }

    /// The formal names of the op's inputs, read from the case's first task.
    pub fn input_formals(&self) -> &'static [&'static str] {
        match self {
            EagerOp::Rmsnorm { .. } => &["x", "w"],
            EagerOp::SiluMul => &["x"],
            EagerOp::Embedding => &["ids", "table"],
            EagerOp::Argmax => &["logits"],
            EagerOp::ScaledMm { .. } => &["w", "x", "w_scale", "x_scale"],
        }
    }

    /// The formal name of the op's result, written by the case's last task.
    pub fn output_formal(&self) -> &'static str {
        match self {
            EagerOp::Argmax => "token",
            _ => "y",
        }
    }
}

/// What `mpkc bench` knows of a consumer case: the op, its inputs' positions in the first task
/// (formal, position) and the result's output position in the last task.
#[derive(Clone, Debug, PartialEq)]
pub struct ConsumerShape {
    /// The op.
    pub op: EagerOp,
    /// (formal name, position in the first task's `input_ptrs`).
    pub inputs: Vec<(&'static str, usize)>,
    /// Position of the result among the last task's outputs.
    pub output: usize,
}

/// The eager op of a task that starts a consumer case, or `None`: a pipeline, a template
/// without an eager equivalent, or the `argmax_reduce` that ends the argmax chain (benched
/// behind its partial).
pub fn eager_op(task: &CheckedTask) -> Option<EagerOp> {
    if task.linear().is_some() {
        return None;
    }
    match semantics(task).ok()? {
        Semantics::Rmsnorm { eps } => Some(EagerOp::Rmsnorm { eps }),
        Semantics::SiluMul => Some(EagerOp::SiluMul),
        Semantics::Embedding => Some(EagerOp::Embedding),
        Semantics::ArgmaxPartial { .. } => Some(EagerOp::Argmax),
        _ => None,
    }
}

/// Why `task`, whose template has an eager equivalent, still cannot be a consumer case, or
/// `None` when it can: a tensor over a row-strided view (the bench lays every operand out
/// contiguous: the kernel would read past it), or a result written in place (`inout`, e.g.
/// `rmsnorm(x, w -> x)`: its input is not the run's input any more). The argmax partial's own
/// outputs are the reduce's inputs, checked when the chain is formed.
pub fn not_benchable(task: &CheckedTask) -> Option<String> {
    let op = eager_op(task)?;
    if task.ir.tensors.values().any(|t| t.view.is_some()) {
        return Some(format!(
            "a {} over a row-strided view: mpkc bench lays its operands out contiguous, and so would PyTorch's side",
            op.name()
        ));
    }
    if op != EagerOp::Argmax && output_of(task, op.output_formal()).is_none() {
        return Some(format!(
            "a {} written in place (`inout`): each run would read the last one's result",
            op.name()
        ));
    }
    op.input_formals()
        .iter()
        .find(|f| input_of(task, f).is_none())
        .map(|f| format!("a {} with no input bound to `{f}`", op.name()))
}

/// Whether `task` is the `argmax_reduce` that ends an argmax chain.
pub fn is_argmax_reduce(task: &CheckedTask) -> bool {
    task.linear().is_none() && matches!(semantics(task), Ok(Semantics::ArgmaxReduce { .. }))
}

/// The shape of the consumer case `tasks` (the first task's op; for the argmax chain, the
/// partial then the reduce), or why it has none.
pub fn consumer_of(tasks: &[&CheckedTask]) -> Result<ConsumerShape, String> {
    let first = tasks.first().ok_or("no task")?;
    let last = tasks.last().ok_or("no task")?;
    let op = eager_op(first)
        .ok_or_else(|| format!("{}: no PyTorch eager equivalent", first.ir.unit_name()))?;
    let want = if op == EagerOp::Argmax { 2 } else { 1 };
    if tasks.len() != want {
        return Err(format!(
            "{} runs as {want} task type(s), not {}",
            op.name(),
            tasks.len()
        ));
    }
    let mut inputs = Vec::new();
    for f in op.input_formals() {
        let at = input_of(first, f)
            .ok_or_else(|| format!("{}: no input bound to `{f}`", first.ir.unit_name()))?;
        inputs.push((*f, at));
    }
    let output = output_of(last, op.output_formal()).ok_or_else(|| {
        format!(
            "{}: no output bound to `{}`",
            last.ir.unit_name(),
            op.output_formal()
        )
    })?;
    Ok(ConsumerShape { op, inputs, output })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stdlib_units(m: i64) -> Vec<CheckedTask> {
        let sources = crate::driver::stdlib::sources();
        crate::driver::check_sources_with(
            &sources,
            |s| crate::sema::SemaOptions {
                overrides: crate::driver::token_overrides(s, m),
                instance: None,
                ..Default::default()
            },
            &Default::default(),
        )
        .into_iter()
        .flat_map(|c| c.tasks)
        .collect()
    }

    fn unit<'a>(all: &'a [CheckedTask], name: &str) -> &'a CheckedTask {
        all.iter()
            .find(|t| t.ir.unit_name() == name)
            .expect("stdlib unit")
    }

    #[test]
    fn the_stdlib_consumer_ops_and_their_tensors() {
        let all = stdlib_units(1);
        let r = consumer_of(&[unit(&all, "rmsnorm_v2_h7168")]).expect("rmsnorm");
        // The contract's `eps: f32 = 1e-6`, as f32 holds it.
        assert!(
            matches!(r.op, EagerOp::Rmsnorm { eps } if (eps - 1e-6).abs() < 1e-12),
            "{r:?}"
        );
        assert_eq!(r.inputs, vec![("x", 0), ("w", 1)]);
        assert_eq!(r.output, 0);
        let e = consumer_of(&[unit(&all, "embedding_v2")]).expect("embedding");
        assert_eq!(e.inputs, vec![("ids", 0), ("table", 1)]);
        let s = consumer_of(&[unit(&all, "silu_mul_v2")]).expect("silu_mul");
        assert_eq!(s.op, EagerOp::SiluMul);
        let (p, q) = (
            unit(&all, "argmax_partial_v2"),
            unit(&all, "argmax_reduce_v2"),
        );
        let a = consumer_of(&[p, q]).expect("argmax chain");
        assert_eq!(a.op, EagerOp::Argmax);
        assert_eq!(a.inputs, vec![("logits", 0)]);
        assert_eq!(a.output, 0);
        assert!(is_argmax_reduce(q) && !is_argmax_reduce(p));
        // The partial alone is not a case, nor is a linear a consumer op.
        assert!(consumer_of(&[p]).unwrap_err().contains("2 task type"));
        assert_eq!(eager_op(q), None);
        assert_eq!(eager_op(unit(&all, "linear_sm100_v2")), None);
        assert_eq!(not_benchable(unit(&all, "rmsnorm_v2_h7168")), None);
        assert_eq!(not_benchable(p), None);
    }

    #[test]
    fn an_in_place_rmsnorm_over_a_view_is_not_a_case() {
        // stdlib/dsv3/qkv_a_norm.mpk: `rmsnorm(x, w -> x)` over a strided view of the fused
        // q_a / kv_a output.
        let all = stdlib_units(1);
        let t = all
            .iter()
            .find(|t| t.ir.unit_name().starts_with("qkv_a_norm"))
            .expect("qkv_a_norm");
        assert!(matches!(eager_op(t), Some(EagerOp::Rmsnorm { .. })));
        let why = not_benchable(t).expect("not a case");
        assert!(why.contains("row-strided view"), "{why}");
    }
}
