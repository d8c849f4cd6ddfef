//! "Tensors": every tensor of the task with its type, extents, direction, role, pointer slot and
//! memory layout (docs/language.md, "Tensor views": the design document lists every tensor's slot
//! and layout), and for a row-strided view, an `inout` tensor or a paged KV cache what those
//! layouts mean against the runtime's tensors.

use crate::ir::Direction;
use crate::valid::CheckedTask;
use std::fmt::Write;

/// Appends the section to `s`.
pub(super) fn write(s: &mut String, task: &CheckedTask) {
    let ir = &task.ir;
    if ir.tensors.is_empty() {
        return;
    }
    let _ = writeln!(s, "## Tensors\n");
    if ir
        .tensors
        .values()
        .any(|t| t.view.is_some() || t.paged.is_some() || t.direction == Direction::InOut)
    {
        let _ = writeln!(
            s,
            "An `inout` tensor is an input slot (`input_ptrs`), read and written in place, as MPK passes the KV cache its attention tasks append to; a view's pointer is its first element, `offset` elements into the first parent row, and its rows are `stride` elements apart.\n"
        );
    }
    if let Some(t) = ir.tensors.values().find(|t| t.paged.is_some()) {
        let _ = writeln!(
            s,
            "`{}` is a paged KV cache: a pool of pages, each `[page, row]`, that the body addresses through the runtime's page table (`runtime_config.paged_kv_indptr_buffer`, `paged_kv_indices_buffer`, `paged_kv_last_page_len_buffer`, as MPK's `prepare_next_batch` writes them; read by `mpkc::paged_kv_request`): token `t` of request `r` lies in page `indices[indptr[r] + t / page]`, row `t % page`, and request `r`'s context is `(indptr[r + 1] - indptr[r] - 1) * page + last_page_len[r]` tokens.\n",
            t.name
        );
    }
    let _ = writeln!(
        s,
        "| tensor | type | extents | direction | role | slot | layout |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|");
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
            None => match &t.paged {
                Some(p) => format!(
                    "paged: {} pages of {} tokens x {} bytes; `requests {}` of up to `max_context {}` tokens ({} pages each)",
                    t.dims[0],
                    p.page_tokens,
                    t.dims.last().copied().unwrap_or(1) * t.dtype.bytes(),
                    p.requests,
                    p.max_context,
                    p.pages_of(p.max_context)
                ),
                None => "contiguous rows".into(),
            },
        };
        let role = match t.role() {
            Some(crate::ir::TensorRole::ScaleOf(x)) => format!("scale of `{}`", ir.tensors[x].name),
            Some(r) => r.word().to_string(),
            None => "-".to_string(),
        };
        let _ = writeln!(
            s,
            "| `{}` | {} | [{}] | {} | {role} | {slot} | {layout} |",
            t.name,
            t.dtype,
            dims.join(", "),
            t.direction.as_str()
        );
    }
    let _ = writeln!(s);
}
