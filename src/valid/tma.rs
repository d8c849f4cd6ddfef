//! TMA rules (I-T6, I-M6): box extents, swizzle span, global strides, the bytes landing on each
//! full barrier against the stage that receives them, and the TaskType range MPK reserves for
//! tasks that take tensor maps.

use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::{exact, ArrivalIr, ChannelStorageIr, Swizzle, TaskIr};

/// `cuTensorMapEncodeTiled`: box extents are at most 256 elements, ranks 1 to 5.
pub const MAX_BOX_EXTENT: i64 = 256;
/// TaskTypes strictly between these two get `create_tma_desc_by_task` (contract doc §6.1).
pub const TMA_TASK_RANGE: (i64, i64) = (231, 256);

/// Box extents, inner box bytes against the swizzle span, and 16-byte global strides.
pub(super) fn boxes(ir: &TaskIr, sink: &mut Sink) {
    for t in ir.tensors.values() {
        let Some(m) = &t.tma else { continue };
        if m.box_dims.is_empty() || m.box_dims.len() > 5 {
            sink.push(
                Diagnostic::error(
                    codes::TMA_BOX,
                    format!(
                        "the TMA box of `{}` has rank {}; tensor maps have rank 1 to 5",
                        t.name,
                        m.box_dims.len()
                    ),
                )
                .primary(m.box_span, format!("{} extents", m.box_dims.len()))
                .help("give one extent per tensor-map dimension, innermost first"),
            );
            continue;
        }
        for (i, &e) in m.box_dims.iter().enumerate() {
            if e == 0 || e > MAX_BOX_EXTENT {
                sink.push(
                    Diagnostic::error(codes::TMA_BOX, format!("box extent {i} of `{}` is {e} elements; TMA boxes take 1 to 256 per dimension", t.name))
                        .primary(m.box_span, format!("{e} here"))
                        .note("cuTensorMapEncodeTiled rejects boxDim above 256")
                        .help("split the tile into several boxes (a box per 256 elements, or a rank-3 view)"),
                );
            }
        }
        let inner_bytes = exact::mul(m.box_dims[0], t.dtype.bytes());
        if m.swizzle != Swizzle::None && inner_bytes != i128::from(m.swizzle.span_bytes()) {
            let fit = m.swizzle.span_bytes() / t.dtype.bytes();
            sink.push(
                Diagnostic::error(
                    codes::TMA_SWIZZLE_SPAN,
                    format!(
                        "the inner box of `{}` is {} {} elements = {inner_bytes} bytes, but {} swizzle needs exactly {} bytes",
                        t.name,
                        m.box_dims[0],
                        t.dtype,
                        m.swizzle.as_str(),
                        m.swizzle.span_bytes()
                    ),
                )
                .primary(m.box_span, format!("inner extent {} = {inner_bytes} bytes", m.box_dims[0]))
                .note("a swizzled TMA box spans exactly one swizzle row; UMMA descriptors assume that layout (I-T6)")
                .help(format!("use an inner extent of {fit} and a rank-3 box for the rest, e.g. `box [{fit}, {}, {}]`", m.box_dims.get(1).copied().unwrap_or(1), (m.box_dims[0] / fit).max(1))),
            );
        }
        if let Some(&inner) = t.dims.last() {
            let stride = exact::mul(inner, t.dtype.bytes());
            if t.dims.len() > 1 && stride % 16 != 0 {
                sink.push(
                    Diagnostic::error(codes::TMA_STRIDE, format!("rows of `{}` are {stride} bytes apart; TMA global strides must be multiples of 16 bytes", t.name))
                        .primary(t.span, format!("{inner} x {} bytes per row", t.dtype.bytes()))
                        .note("cuTensorMapEncodeTiled requires globalStrides % 16 == 0")
                        .help(format!("pad the innermost dimension to a multiple of {}", 16 / t.dtype.bytes().max(1))),
                );
            }
        }
    }
}

/// I-M6: the bytes of the boxes landing on one full barrier (the expect_tx count mpkc emits)
/// must fit the stage region that receives them; TMA cannot land in TMEM.
pub(super) fn expect_tx(ir: &TaskIr, sink: &mut Sink) {
    for ch in ir.channels.values() {
        let ArrivalIr::Tma(tensors) = &ch.full_arrival else {
            continue;
        };
        // Exact; `None` when a box is beyond 128 bits, which only extents `boxes` rejects reach.
        let mut bytes: Option<i128> = Some(0);
        for h in tensors {
            let t = &ir.tensors[*h];
            match &t.tma {
                Some(m) => {
                    let one = m
                        .box_dims
                        .iter()
                        .try_fold(i128::from(t.dtype.bytes()), |acc, d| {
                            acc.checked_mul(i128::from(*d))
                        });
                    bytes = bytes.zip(one).and_then(|(a, b)| a.checked_add(b));
                }
                None => sink.push(
                    Diagnostic::error(
                        codes::EXPECT_TX,
                        format!(
                            "channel `{}` lands TMA boxes of `{}`, which has no tensor map",
                            ch.name, t.name
                        ),
                    )
                    .primary(ch.span, "TMA arrival here")
                    .secondary(t.span, "no `tma(...)`")
                    .help(format!("give `{}` a `tma(box [...], swizzle ...)`", t.name)),
                ),
            }
        }
        match &ch.storage {
            ChannelStorageIr::Tmem => sink.push(
                Diagnostic::error(
                    codes::EXPECT_TX,
                    format!("channel `{}` is in TMEM but is filled by TMA", ch.name),
                )
                .primary(ch.span, "TMA into TMEM")
                .help("TMA lands in SMEM: give the channel a region ring"),
            ),
            ChannelStorageIr::Region(g) => {
                let group = &ir.region_groups[*g];
                if let (Some(r), Some(bytes)) =
                    (group.members.first().map(|h| &ir.regions[*h]), bytes)
                {
                    if bytes > i128::from(r.size) {
                        sink.push(
                            Diagnostic::error(
                                codes::EXPECT_TX,
                                format!("each stage of `{}` receives {bytes} bytes of TMA boxes but a stage of region `{}` holds {}", ch.name, group.name, r.size),
                            )
                            .primary(group.head_span, format!("{} bytes per stage", r.size))
                            .secondary(ch.span, format!("expect_tx {bytes} bytes"))
                            .help(format!("make the stage at least {bytes} bytes, or shrink the box")),
                        );
                    }
                }
            }
        }
    }
}

/// The first TaskType of a compute task in MPK's `enum TaskType` ("compute task starts from
/// 100"); below it are the runtime's own, TASK_TERMINATE (0) and TASK_BEGIN_TASK_GRAPH (10),
/// for which the worker returns or arrives on the task's behalf and runs no role body.
pub const FIRST_COMPUTE_TASK_ID: i64 = 100;

/// A TaskType below 100 is the runtime's own; MPK creates tensor maps only for TaskTypes in
/// (231, 256): a task that takes TMA tensors sits inside, one that does not sits outside (I-T6).
pub(super) fn task_id_range(ir: &TaskIr, sink: &mut Sink) {
    let Some(id) = ir.task_id else { return };
    if id < FIRST_COMPUTE_TASK_ID {
        sink.push(
            Diagnostic::error(
                codes::TMA_TASK_ID,
                format!("task `{}` has TaskType {id}, below MPK's compute TaskTypes (100 and up)", ir.name),
            )
            .primary(ir.task_id_span, format!("task_id {id}"))
            .note("the runtime's own TaskTypes are TASK_TERMINATE = 0 and TASK_BEGIN_TASK_GRAPH = 10: for them the worker returns or arrives on the task's behalf, and no role body of this task would run")
            .help("use a TaskType from 100 up: inside 232-255 if the task loads through TMA, outside it otherwise"),
        );
        return;
    }
    let uses_tma = ir.tensors.values().any(|t| t.tma.is_some());
    // A consumer-only task's `tma(...)` is E0011 (only the pipeline's loader loads through
    // tensor maps): which side of the range its TaskType should be on follows from the fix.
    if uses_tma && ir.family.is_consumer_only() {
        return;
    }
    let inside = id > TMA_TASK_RANGE.0 && id < TMA_TASK_RANGE.1;
    if uses_tma != inside {
        let (what, help) = if uses_tma {
            ("loads through TMA but its TaskType is outside 232-255, so MPK creates no tensor maps for it", "use a TaskType in 232-255 (the house linear is 244)")
        } else {
            (
                "takes no tensor maps but its TaskType is inside 232-255, MPK's TMA range",
                "use a TaskType outside 232-255",
            )
        };
        sink.push(
            Diagnostic::error(codes::TMA_TASK_ID, format!("task `{}` {what}", ir.name))
                .primary(ir.task_id_span, format!("task_id {id}"))
                .note("runtime.cc calls create_tma_desc_by_task only for 231 < task_type < 256")
                .help(help),
        );
    }
}
