//! Tensor views and in-place tensors (`docs/language.md`, "Tensor views" and "`inout`").
//!
//! A view (`view(stride S, offset O)`) needs rows (rank 2 or more), a stride of at least the row
//! (`E0020`), its columns inside the parent row (`offset + row ≤ stride`), and 16-byte alignment
//! of the stride and the offset: `cuTensorMapEncodeTiled` takes global strides and a global
//! address that are multiples of 16 bytes, and the stdlib bodies move 16-byte vectors. A view
//! must be read through something that knows its stride: a tensor map (a pipeline's TMA
//! operands), a template formal that steps rows by a stride (`templates::Signature::strided`,
//! checked when the body binds) or an inline body (which gets `<name>_row_stride`); a
//! pipeline's other tensors are stepped by their row length in the epilogue, so a view there
//! is `E0020`.
//!
//! An `inout` tensor (`E0021`) is read and written by the same task through its `input_ptrs`
//! slot. No pipeline operand is: TMA copies A and W into the ring (the async proxy reads them,
//! nothing writes them back) and the epilogue writes C and reads the residual through distinct
//! pointers. A consumer body takes it in place: an inline body gets one writable pointer, a
//! template only through one of its in-place pairs (checked when the body binds).

use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::{exact, Direction, Family, TaskIr};

/// `E0020`: the view's shape against its tensor, and who reads it.
pub(super) fn views(ir: &TaskIr, sink: &mut Sink) {
    for t in ir.tensors.values() {
        let Some(v) = &t.view else { continue };
        let before = sink.error_count();
        let eb = t.dtype.bytes();
        let err = |msg: String| Diagnostic::error(codes::TENSOR_VIEW, msg);
        if t.dims.len() < 2 {
            sink.push(
                err(format!("`{}` has one dimension, so it has no rows to stride", t.name))
                    .primary(v.span, "a row-strided view")
                    .secondary(t.span, format!("{} dimension", t.dims.len()))
                    .help(format!("give `{}` rows (`[rows, cols]`), or drop `view(...)` and pass the slice's first element", t.name)),
            );
            continue;
        }
        let cols = t.dims[t.dims.len() - 1];
        if v.row_stride < cols {
            sink.push(
                err(format!("rows of `{}` are {cols} elements but its view's stride is {}: rows would overlap", t.name, v.row_stride))
                    .primary(v.span, format!("stride {}", v.row_stride))
                    .secondary(t.span, format!("{cols} elements per row"))
                    .help(format!("the stride is the parent's row length, at least {cols}")),
            );
        } else if i128::from(v.offset) + i128::from(cols) > i128::from(v.row_stride) {
            sink.push(
                err(format!("the view of `{}` starts {} elements into a parent row of {} and takes {cols}: it runs {} past the row", t.name, v.offset, v.row_stride, i128::from(v.offset) + i128::from(cols) - i128::from(v.row_stride)))
                    .primary(v.span, format!("offset {} + {cols} columns > stride {}", v.offset, v.row_stride))
                    .help(format!("use an offset of at most {}", v.row_stride - cols)),
            );
        }
        for (what, n) in [("stride", v.row_stride), ("offset", v.offset)] {
            let bytes = exact::mul(n, eb);
            if bytes % 16 != 0 {
                sink.push(
                    err(format!("the view {what} of `{}` is {n} {} elements = {bytes} bytes, not a multiple of 16", t.name, t.dtype))
                        .primary(v.span, format!("{what} {n}"))
                        .note("cuTensorMapEncodeTiled requires 16-byte global strides and a 16-byte aligned global address; the stdlib bodies load 16-byte vectors")
                        .help(format!("make the {what} a multiple of {} elements", 16 / eb.max(1))),
                );
            }
        }
        if ir.family == Family::Pipeline && t.tma.is_none() {
            sink.push(
                err(format!(
                    "`{}` is a view, but the pipeline reads only its TMA operands through a stride",
                    t.name
                ))
                .primary(v.span, "a row-strided view")
                .secondary(t.span, "no `tma(...)`")
                .note("the epilogue steps the output and residual rows by their length")
                .help(format!(
                    "give `{}` a contiguous buffer, or load it through a tensor map",
                    t.name
                )),
            );
        } else if !ir.family.is_consumer_only() && ir.family != Family::Pipeline {
            sink.push(
                err(format!(
                    "`{}` is a view, but the {} family generates no code that reads it",
                    t.name,
                    ir.family.as_str()
                ))
                .primary(v.span, "a row-strided view")
                .help("declare views in pipeline or consumer tasks"),
            );
        }
        // Only a view whose shape holds: a stride that overlaps rows is the first thing to fix.
        if sink.error_count() == before {
            if let Some(d) = unstepped_view(ir, t, v.span) {
                sink.push(d);
            }
        }
    }
}

/// `E0021`: an `inout` tensor where the family or a TMA load cannot update it in place.
pub(super) fn in_place(ir: &TaskIr, sink: &mut Sink) {
    for t in ir.tensors.values() {
        if t.direction != Direction::InOut {
            continue;
        }
        let err = |msg: String| Diagnostic::error(codes::IN_PLACE, msg);
        if let Some(m) = &t.tma {
            sink.push(
                err(format!("`{}` is `inout` but loaded through TMA, which only reads it", t.name))
                    .primary(m.span, "a TMA load")
                    .secondary(t.span, "declared `inout`")
                    .note("TMA copies boxes of the tensor into SMEM through the async proxy; no generated code writes them back")
                    .help(format!("declare `{}` `in`", t.name)),
            );
        } else if ir.family == Family::Pipeline {
            sink.push(
                err(format!("`{}` is `inout`, but a pipeline reads its operands through TMA and writes its result through the epilogue", t.name))
                    .primary(t.span, "declared `inout`")
                    .help(format!("declare `{}` `in` or `out`; an in-place update belongs in a consumer task", t.name)),
            );
        }
    }
}

/// `E0020`: a view of several rows that an inline body never steps by its `<name>_row_stride`
/// (`back/consumer.rs` emits the constant): the body then steps rows by their length, and reads
/// or writes every row after the first at the wrong address. A view of one row, or one a
/// template binds (its formal takes the stride, `templates::Signature::strided`), is not one.
fn unstepped_view(
    ir: &TaskIr,
    t: &crate::ir::TensorIr,
    view: crate::span::Span,
) -> Option<Diagnostic> {
    let rows = t.dims[..t.dims.len().saturating_sub(1)]
        .iter()
        .try_fold(1i64, |a, d| a.checked_mul(*d))?;
    // A paged view is E0028 (a pool has no parent rows).
    if rows <= 1 || !ir.family.is_consumer_only() || t.paged.is_some() {
        return None;
    }
    let constant = format!("{}_row_stride", t.name);
    if super::body::inline_bodies(ir).next().is_none() || super::body::bodies_name(ir, &constant) {
        return None;
    }
    Some(
        Diagnostic::error(
            codes::TENSOR_VIEW,
            format!("`{}` is a view of {rows} rows, but the body never steps its rows by `{constant}`", t.name),
        )
        .primary(view, "a row-strided view")
        .secondary(t.span, format!("{rows} rows"))
        .note("the kernel's pointer is the view's first element; row r starts `r * STRIDE` elements after it, not `r * (row length)`: every row after the first would be read or written at the wrong address")
        .help(format!("index rows as `{}[r * {constant} + c]`, or drop `view(...)` if the tensor is contiguous", t.name)),
    )
}
