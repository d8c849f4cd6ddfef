//! "Tensors": written only for a task that declares a row-strided view or an `inout` tensor
//! (the layouts a reviewer must check against the runtime's tensors): every tensor with its
//! pointer slot and its memory layout.

use crate::ir::Direction;
use crate::valid::CheckedTask;
use std::fmt::Write;

/// Appends the section to `s` when `task` has a view or an `inout` tensor.
pub(super) fn write(s: &mut String, task: &CheckedTask) {
    let ir = &task.ir;
    if !ir
        .tensors
        .values()
        .any(|t| t.view.is_some() || t.direction == Direction::InOut)
    {
        return;
    }
    let _ = writeln!(s, "## Tensors\n");
    let _ = writeln!(
        s,
        "An `inout` tensor is an input slot (`input_ptrs`), read and written in place, as MPK passes the KV cache its attention tasks append to; a view's pointer is its first element, `offset` elements into the first parent row, and its rows are `stride` elements apart.\n"
    );
    let _ = writeln!(s, "| tensor | type | extents | direction | slot | layout |");
    let _ = writeln!(s, "|---|---|---|---|---|---|");
    for (i, (h, t)) in ir.tensors.iter().enumerate() {
        let slot = match t.direction {
            // A helper's tensors are its function's pointer parameters, after its SMEM view.
            _ if ir.family == crate::ir::Family::Helper => format!("parameter {}", i + 2),
            Direction::Out => format!(
                "`output_ptrs[{}]`",
                ir.outputs().position(|(x, _)| x == h).unwrap_or(0)
            ),
            _ => format!(
                "`input_ptrs[{}]`",
                ir.inputs().position(|(x, _)| x == h).unwrap_or(0)
            ),
        };
        let dims: Vec<String> = t.dims.iter().map(|d| d.to_string()).collect();
        let layout = match &t.view {
            Some(v) => format!(
                "view: rows {} elements ({} bytes) apart, columns from {} of each parent row{}",
                v.row_stride,
                v.row_stride * t.dtype.bytes(),
                v.offset,
                if t.tma.is_some() {
                    "; the tensor map's global stride"
                } else {
                    ""
                }
            ),
            None => "contiguous rows".into(),
        };
        let _ = writeln!(
            s,
            "| `{}` | {} | [{}] | {} | {slot} | {layout} |",
            t.name,
            t.dtype,
            dims.join(", "),
            t.direction.as_str()
        );
    }
    let _ = writeln!(s);
}
