//! What a task instance moves and computes, from the contract's shapes alone (no GPU): the bytes
//! of its tensors and the tensor-core FLOPs of a pipeline linear. `mpkc bench` counts a case's
//! bytes with [`bytes_moved`]; `mpkc roofline` counts every task instance with it.

use crate::valid::CheckedTask;

/// Elements of a tensor of `dims` (a negative extent counts as 0; the checker rejects those).
pub fn elements(dims: &[i64]) -> u64 {
    dims.iter()
        .map(|d| u64::try_from(*d).unwrap_or(0))
        .fold(1u64, u64::saturating_mul)
}

/// Bytes of a tensor of `dims` with `elem` bytes per element.
pub fn tensor_bytes(dims: &[i64], elem: i64) -> u64 {
    elements(dims).saturating_mul(u64::try_from(elem).unwrap_or(0))
}

/// The bytes a set of tasks moves to and from device memory, as the op sees them: every input
/// of the tasks that no earlier task of the set produced (weights, scales, activations,
/// residual), every output that no later task reads (the result), and the write-back of every
/// `inout` tensor that is not paged (read, then written in place). For a split-K linear and
/// its reduce, the f32 partials passed between them are not counted: they are the kernel's own
/// traffic, not the op's; nor are the partials and counters of `split_k bf16` (its workspace).
///
/// `linked_inputs[t]` lists the input positions of task `t` fed by another task of the set,
/// `linked_outputs[t]` the output positions read by another task.
pub fn bytes_moved(
    tasks: &[&CheckedTask],
    linked_inputs: &[Vec<usize>],
    linked_outputs: &[Vec<usize>],
) -> u64 {
    let mut total: u64 = 0;
    for (ti, t) in tasks.iter().enumerate() {
        for (i, (_, x)) in t.ir.inputs().enumerate() {
            if !linked_inputs.get(ti).is_some_and(|l| l.contains(&i)) {
                total = total.saturating_add(tensor_bytes(&x.dims, x.dtype.bytes()));
            }
            total = total.saturating_add(written_back(x));
        }
        let workspace = workspace(t);
        for (o, (h, y)) in t.ir.outputs().enumerate() {
            if workspace.contains(&h) {
                continue;
            }
            if !linked_outputs.get(ti).is_some_and(|l| l.contains(&o)) {
                total = total.saturating_add(tensor_bytes(&y.dims, y.dtype.bytes()));
            }
        }
    }
    total
}

/// The bytes an `inout` tensor's write-back moves (0 for any other): read as an input, then
/// written whole in place (add_rmsnorm's residual, rope's x), so the op moves it twice. It is
/// never an `outputs()` position, so no link passes it along. A paged `inout` tensor (a KV
/// cache) is counted by its read alone: the task writes only the rows of its tokens, which the
/// contract's shape does not tell apart from the whole allocation.
fn written_back(x: &crate::ir::TensorIr) -> u64 {
    if x.direction == crate::front::ast::Direction::InOut && x.paged.is_none() {
        tensor_bytes(&x.dims, x.dtype.bytes())
    } else {
        0
    }
}

/// The workspace of a `split_k bf16` linear: its f32 partials and its arrival counters, which
/// the kernel writes and reads back itself (empty for any other task).
fn workspace(task: &CheckedTask) -> Vec<crate::ir::TensorHandle> {
    task.linear()
        .and_then(|p| p.split_sum)
        .map_or_else(Vec::new, |s| vec![s.partials, s.counters])
}

/// The bytes a `split_k bf16` linear moves through its workspace: the partials written, then
/// read by each tile's last split, and the counters once; a `split_k atomic` linear's
/// accumulator added to by every split, then read and zeroed by each tile's last split (0 for
/// any other task).
fn workspace_bytes(task: &CheckedTask) -> u64 {
    let Some(p) = task.linear() else {
        return 0;
    };
    let Some(s) = p.split_sum else {
        return 0;
    };
    let bytes = |h: crate::ir::TensorHandle| {
        let t = &task.ir.tensors[h];
        tensor_bytes(&t.dims, t.dtype.bytes())
    };
    let passes = if p.epilogue == crate::lower::Epilogue::SplitKAtomic {
        (p.splits.max(1) as u64).saturating_add(2)
    } else {
        2
    };
    bytes(s.partials)
        .saturating_mul(passes)
        .saturating_add(bytes(s.counters))
}

/// The bytes one task instance moves: [`bytes_moved`] of the task alone (every input and
/// output tensor once, an `inout` one twice, read and written back; a `split_k bf16` linear's partials twice, written then summed, and its
/// counters once), except that a gather (the `embedding` body template) reads only the rows
/// it gathers from its table, as many table elements as it writes output elements, not the
/// whole table.
pub fn instance_bytes(task: &CheckedTask) -> u64 {
    let ir = &task.ir;
    let table = match &ir.body {
        Some(crate::ir::BodyIr::Template { name, inputs, .. }) if name == "embedding" => {
            inputs.get(1).copied()
        }
        _ => None,
    };
    if let Some(r) = task.linear().and_then(|p| p.route) {
        return routed_bytes(task, &r);
    }
    let Some(table) = table else {
        return bytes_moved(&[task], &[], &[]).saturating_add(workspace_bytes(task));
    };
    let written: u64 = ir
        .outputs()
        .map(|(_, y)| elements(&y.dims))
        .fold(0, u64::saturating_add);
    let mut total: u64 = 0;
    for (h, x) in ir.inputs() {
        let b = if h == table {
            written.saturating_mul(u64::try_from(x.dtype.bytes()).unwrap_or(0))
        } else {
            tensor_bytes(&x.dims, x.dtype.bytes())
        };
        total = total.saturating_add(b).saturating_add(written_back(x));
    }
    for (_, y) in ir.outputs() {
        total = total.saturating_add(tensor_bytes(&y.dims, y.dtype.bytes()));
    }
    total
}

/// A routed linear (`route W by ids …`) reads the weights (and their block scales) of the
/// experts its ids choose, at most one per (token, slot) and at most every expert:
/// `min(m_real x slots, experts)` of the `experts` expert slices; every other tensor whole.
fn routed_bytes(task: &CheckedTask, r: &crate::lower::RouteMath) -> u64 {
    let ir = &task.ir;
    let p = task.linear();
    let scales = match p.map(|p| &p.operands) {
        Some(crate::lower::Operands::Fp8BlockScale { w_scale, .. }) => Some(*w_scale),
        _ => None,
    };
    let weights = p.map(|p| p.weights);
    let m = p.map_or(1, |p| p.m_real);
    let used = u64::try_from((m.saturating_mul(r.slots)).min(r.experts)).unwrap_or(0);
    let experts = u64::try_from(r.experts.max(1)).unwrap_or(1);
    let mut total: u64 = 0;
    for (h, x) in ir.inputs() {
        let b = tensor_bytes(&x.dims, x.dtype.bytes());
        let b = if Some(h) == weights || Some(h) == scales {
            b / experts * used
        } else {
            b
        };
        total = total.saturating_add(b);
    }
    for (_, y) in ir.outputs() {
        total = total.saturating_add(tensor_bytes(&y.dims, y.dtype.bytes()));
    }
    total
}

/// The operand precision of a task's tensor-core work, which picks the GPU's peak.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MathKind {
    /// bf16 x bf16 (tcgen05 `kind::f16`, wgmma bf16).
    Bf16,
    /// Block-scaled e4m3 x e4m3.
    Fp8,
}

/// The tensor-core FLOPs of one task instance: `2 · M · N · K` for a pipeline linear (one
/// multiply and one add per MAC, over every K split; times the slots of a routed one) and for
/// the MMA GEMVs (`body gemv_mma`, `gemv_mma_fp8`: x [M, K], W [N, K], warp `mma.sync`), with
/// its operand kind;
/// `None` for a task with no tensor-core work (the other consumer bodies: their CUDA-core
/// operations are not counted, see docs/roofline.md).
pub fn tensor_flops(task: &CheckedTask) -> Option<(u64, MathKind)> {
    if let Some(b) = task
        .binding
        .as_ref()
        .filter(|b| matches!(b.sig.name, "gemv_mma" | "gemv_mma_fp8"))
    {
        let dims = |formal: &str| {
            b.tensors
                .iter()
                .find(|(f, _)| *f == formal)
                .map(|(_, h)| task.ir.tensors[*h].dims.clone())
        };
        let (x, w) = (dims("x")?, dims("W")?);
        let macs = elements(&[x[0], w[0], w[1]]);
        let kind = if b.sig.name == "gemv_mma_fp8" {
            MathKind::Fp8
        } else {
            MathKind::Bf16
        };
        return Some((macs.saturating_mul(2), kind));
    }
    let p = task.linear()?;
    let kind = match p.operands {
        crate::lower::Operands::Bf16 => MathKind::Bf16,
        crate::lower::Operands::Fp8BlockScale { .. } => MathKind::Fp8,
    };
    // A routed linear multiplies each token by one expert per slot (`route`): slots x the MACs.
    let slots = p.route.map_or(1, |r| r.slots);
    let macs = elements(&[p.m_real, slots, p.n, p.k]);
    Some((macs.saturating_mul(2), kind))
}
