//! Consumer rings (docs/language.md, "Consumer rings"): a consumer family's (B, C) channel whose
//! slots the loader warp's body fills with TMA bulk copies (`cp.async.bulk`, no tensor map) and
//! the consumer warpgroup's body drains. What the lowering expresses, and nothing else, is
//! accepted here: one shape of ring, `loader -> consumer (bulk T…), empty by consumer (threads
//! 128)`, with a `body loader cuda { … }` that fills it (E0011, E0007, E0014, E0005, E0306).

use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::{
    ArrivalIr, ChannelIr, ChannelStorageIr, Direction, EmptyEdge, Family, RoleKind, TaskIr,
};

/// Bytes a TMA bulk copy moves in whole units of, and the alignment of its SMEM destination
/// (PTX ISA 9.0 §9.7.9.25.4.1, `cp.async.bulk`: size and addresses multiples of 16).
pub const BULK_ALIGN_BYTES: i64 = 16;

/// Whether `ch` is a consumer ring: a region ring the loader fills with bulk copies.
pub fn is_consumer_ring(ch: &ChannelIr) -> bool {
    matches!(ch.full_arrival, ArrivalIr::Bulk(_))
}

/// Every rule on the consumer rings of `ir`, and on `(bulk …)` and `body loader` elsewhere.
pub(super) fn rings(ir: &TaskIr, sink: &mut Sink) {
    let fam = ir.family;
    let ring_family = matches!(fam, Family::Consumer | Family::ConsumerMonolith);
    if !ring_family {
        if let Some(b) = &ir.loader_body {
            sink.push(
                Diagnostic::error(
                    codes::FAMILY_ITEM,
                    format!("a `{}` task has no loader body", fam.as_str()),
                )
                .primary(b.span(), "`body loader` here")
                .secondary(ir.family_span, format!("family {}", fam.as_str()))
                .note("a loader body fills a consumer ring (`family consumer` or `consumer-monolith`); a pipeline's loader is generated from its channels")
                .help("remove `body loader`, or declare the op as `family consumer` with a ring"),
            );
        }
        for ch in ir.channels.values() {
            let bulk_empty = matches!(
                &ch.empty,
                EmptyEdge::Own {
                    arrival: ArrivalIr::Bulk(_),
                    ..
                }
            );
            if is_consumer_ring(ch) || bulk_empty {
                sink.push(
                    Diagnostic::error(codes::FAMILY_ITEM, format!("channel `{}` arrives by TMA bulk copies in a `{}` task", ch.name, fam.as_str()))
                        .primary(ch.span, "`bulk` here")
                        .note("bulk copies are issued by a consumer family's loader body; a pipeline's loader loads through tensor maps")
                        .help("write `(tma T)` with a `tma(...)` on the tensor, or declare the op as `family consumer` with a loader body"),
                );
            }
        }
    }
    // A consumer family's sems are E0011 whatever their arrival (`valid::body`).
    for s in ir.sems.values().filter(|_| fam == Family::Pipeline) {
        if matches!(s.arrival, ArrivalIr::Bulk(_)) {
            sink.push(
                Diagnostic::error(codes::FAMILY_ITEM, format!("sem `{}` arrives by TMA bulk copies", s.name))
                    .primary(s.span, "`bulk` here")
                    .note("bulk copies land in a ring's slot: only a consumer ring's full edge arrives by them")
                    .help("declare a `channel` for the data, or arrive the sem with `(threads N)`"),
            );
        }
    }
    if !ring_family {
        return;
    }
    for ch in ir.channels.values() {
        ring_shape(ir, ch, sink);
    }
    uses(ir, sink);
    let rings = ir.channels.values().filter(|c| is_consumer_ring(c)).count();
    match (&ir.loader_body, rings) {
        (None, n) if n > 0 => {
            let ch = ir.channels.values().find(|c| is_consumer_ring(c));
            let mut d = Diagnostic::error(
                codes::MISSING,
                format!("task `{}` declares a consumer ring but no loader body fills it", ir.name),
            )
            .primary(ir.name_span, "no `body loader cuda { … }`");
            if let Some(ch) = ch {
                d = d.secondary(ch.span, format!("ring `{}`", ch.name));
            }
            sink.push(
                d.note("the loader warp issues the ring's bulk copies: the contract says which bytes, in its loader body")
                    .help(format!("add `body loader cuda {{ … }}` calling `{}.load(src, bytes)` once per use", ch.map_or("RING", |c| c.name.as_str()))),
            );
        }
        (Some(b), 0) => sink.push(
            Diagnostic::error(codes::NOT_LOWERED, format!("task `{}` has a loader body but no ring to fill", ir.name))
                .primary(b.span(), "`body loader` here")
                .note("the loader body's one job is to fill consumer rings; without one it would only delay the page hand-off")
                .help("declare `channel NAME: REGION depth N, loader -> consumer (bulk T), empty by consumer (threads 128)`, or remove the loader body"),
        ),
        _ => {}
    }
}

/// Each ring is used by both bodies (E0009): the loader fills it (`NAME.load(` or
/// `NAME.acquire(`), the consumer waits and frees it (`NAME.wait(`, `NAME.release(`). A ring one
/// body never names hangs the other at its first use past the ring's depth; the counts of uses
/// are the bodies' own (run time), and their test builds' bounded waits name the ring.
fn uses(ir: &TaskIr, sink: &mut Sink) {
    let text = |b: &Option<crate::ir::BodyIr>| match b {
        Some(crate::ir::BodyIr::Cuda { code, .. }) => super::body::strip_comments_and_strings(code),
        _ => String::new(),
    };
    let loader = text(&ir.loader_body);
    let consumer = text(&ir.body);
    // A body template streams its own operands: nothing of it waits or frees a ring's slots.
    if let Some(crate::ir::BodyIr::Template { name, span, .. }) = &ir.body {
        for ch in ir.channels.values().filter(|c| is_consumer_ring(c)) {
            sink.push(
                Diagnostic::error(codes::FAMILY_ITEM, format!("ring `{}` needs an inline consumer body, but the body is template `{}`", ch.name, name))
                    .primary(ch.span, "the ring")
                    .secondary(*span, "a body template")
                    .note("the consumer body waits and frees each of the ring's slots (`RING.wait()`, `RING.release()`); a template reads its operands its own way and calls neither")
                    .help(format!("remove the ring (and its loader body), or write the consumer as `body cuda {{ … }}` calling `{0}.wait()` and `{0}.release()` once per use", ch.name)),
            );
        }
        return;
    }
    for ch in ir.channels.values().filter(|c| is_consumer_ring(c)) {
        let calls = |code: &str, m: &str| !ring_calls(code, &ch.name, m).is_empty();
        let mut missing = Vec::new();
        if ir.loader_body.is_some() && !calls(&loader, "load") && !calls(&loader, "acquire") {
            missing.push(("the loader body", format!("`{}.load(src, bytes)`", ch.name)));
        }
        if !calls(&consumer, "wait") {
            missing.push(("the consumer body", format!("`{}.wait()`", ch.name)));
        }
        if !calls(&consumer, "release") {
            missing.push(("the consumer body", format!("`{}.release()`", ch.name)));
        }
        // The `bulk` list names what the loader's copies read: each tensor once, each one the
        // loader body reads.
        if let ArrivalIr::Bulk(ts) = &ch.full_arrival {
            for (k, t) in ts.iter().enumerate() {
                let name = &ir.tensors[*t].name;
                if ts[..k].contains(t) {
                    sink.push(
                        Diagnostic::error(
                            codes::DUPLICATE,
                            format!(
                                "ring `{}` names tensor `{name}` twice in its `bulk` list",
                                ch.name
                            ),
                        )
                        .primary(ch.span, "the ring")
                        .help(format!("name `{name}` once")),
                    );
                } else if ir.loader_body.is_some() && !super::body::names_word(&loader, name) {
                    sink.push(
                        Diagnostic::error(codes::BODY_MISMATCH, format!("the loader body never reads `{name}`, which ring `{}` copies", ch.name))
                            .primary(ch.span, "the ring")
                            .secondary(ir.tensors[*t].span, "declared here")
                            .note("the `bulk` list states the tensors the ring's bulk copies read")
                            .help(format!("copy from `{name}` in the loader body, or name the tensor it does copy in `(bulk …)`")),
                    );
                }
            }
        }
        copy_sources(ir, ch, &loader, sink);
        for (who, call) in missing {
            sink.push(
                Diagnostic::error(codes::BODY_MISMATCH, format!("{who} never calls {call} of ring `{}`", ch.name))
                    .primary(ch.span, "the ring")
                    .note("both bodies make the ring's uses, one at a time and in order: a use one body never makes hangs the other at its first use past the ring's depth")
                    .help(format!("call {call} in {who} once per use")),
            );
        }
    }
}

/// The one shape the consumer-family lowering takes (E0011 otherwise), its tensors' directions
/// (E0005) and its slots (E0306).
fn ring_shape(ir: &TaskIr, ch: &ChannelIr, sink: &mut Sink) {
    let fam = ir.family.as_str();
    let shape = |what: String| {
        Diagnostic::error(codes::FAMILY_ITEM, format!("channel `{}` {what}", ch.name))
            .primary(ch.span, "declared here")
            .secondary(ir.family_span, format!("family {fam}"))
            .note("a consumer family's ring is filled by the loader body's TMA bulk copies and drained by the consumer warpgroup, which frees each slot (docs/language.md, \"Consumer rings\")")
            .help(format!("write `channel {}: REGION depth N, loader -> consumer (bulk T), empty by consumer (threads 128)`", ch.name))
    };
    let ChannelStorageIr::Region(g) = ch.storage else {
        sink.push(shape(
            "keeps its slots in TMEM, which a consumer family does not allocate".into(),
        ));
        return;
    };
    let ArrivalIr::Bulk(tensors) = &ch.full_arrival else {
        sink.push(shape(format!(
            "fills its slots by {}; a consumer ring fills them by TMA bulk copies (`bulk T`)",
            ch.full_arrival.kind_str()
        )));
        return;
    };
    if ch.producer != RoleKind::Loader || ch.consumer != RoleKind::Consumer {
        sink.push(shape(format!(
            "runs {} -> {}; a consumer ring runs loader -> consumer",
            ch.producer, ch.consumer
        )));
    }
    match &ch.empty {
        EmptyEdge::Own {
            role: RoleKind::Consumer,
            arrival: ArrivalIr::Threads(_),
            after: None,
            ..
        } => {}
        EmptyEdge::None => {} // E0306 (`sems::channel_shape`)
        _ => sink.push(shape("is not freed by the consumer's threads; a consumer ring's empty edge is `empty by consumer (threads 128)`".into())),
    }
    if ch.reinit != RoleKind::Loader {
        sink.push(shape(format!("is re-initialised by the {}; the loader, which arrives its full barriers asynchronously, re-initialises them (I-M4)", ch.reinit)));
    }
    if let Some(span) = ch.drain {
        sink.push(
            Diagnostic::error(codes::FAMILY_ITEM, format!("channel `{}` drains at task end", ch.name))
                .primary(span, "`drain` here")
                .note("a consumer ring's last use is waited by the consumer before the page suffix frees its slots (I-M8)")
                .help("remove `drain`"),
        );
    }
    if let Some((_, _, span)) = ch.early_exit {
        sink.push(
            Diagnostic::error(codes::FAMILY_ITEM, format!("channel `{}` declares an early exit", ch.name))
                .primary(span, "`early_exit` here")
                .note("the bodies decide a consumer ring's uses at run time: zero uses is no arrival at all")
                .help("remove `early_exit`"),
        );
    }
    for &t in tensors {
        let t = &ir.tensors[t];
        if t.direction == Direction::Out {
            sink.push(
                Diagnostic::error(
                    codes::TYPE_MISMATCH,
                    format!("channel `{}` loads output tensor `{}`", ch.name, t.name),
                )
                .primary(ch.span, "bulk copies read it")
                .secondary(t.span, "declared `out`")
                .help("a ring's bulk copies read an `in` (or `inout`) tensor"),
            );
        }
    }
    slots(ir, ch, g, sink);
}

/// A ring's slots: each at least 16 bytes and a whole number of 16-byte units, 16-byte aligned,
/// all of one size (the ring's ends address slot `s` as the same `slot_bytes`), and holding no
/// typed members a bulk copy would overwrite (E0306).
fn slots(ir: &TaskIr, ch: &ChannelIr, g: usize, sink: &mut Sink) {
    let group = &ir.region_groups[g];
    let bad = |what: String, help: String| {
        Diagnostic::error(codes::CHANNEL_SHAPE, format!("channel `{}` {what}", ch.name))
            .primary(ch.span, "the ring")
            .secondary(group.head_span, format!("region `{}`", group.name))
            .note("a bulk copy's destination address and size are multiples of 16 bytes (PTX ISA 9.0, `cp.async.bulk`), and the ring's ends address every slot as one size")
            .help(help)
    };
    let sizes: Vec<i64> = group.members.iter().map(|h| ir.regions[*h].size).collect();
    let one = sizes.len() == 1;
    let depth = i64::from(ch.depth.max(1));
    let slot = slot_bytes(ir, ch);
    if !one && sizes.iter().any(|&s| s != slot) {
        sink.push(bad(
            format!("keeps its slots in stages of different sizes ({sizes:?} bytes)"),
            "give every stage of the region the same bytes".into(),
        ));
    } else if !cuts_whole_slots(ir, g, depth) {
        let bytes = sizes[0];
        let what = if one && depth > 1 {
            format!("cuts region `{}` ({bytes} B) into {depth} slots that are not whole multiples of 16 bytes", group.name)
        } else {
            format!("has slots of {slot} bytes, not a whole positive multiple of 16")
        };
        sink.push(bad(
            what,
            format!(
                "make each slot a multiple of 16 bytes (the region {} bytes)",
                if one {
                    format!("a multiple of {}", depth * BULK_ALIGN_BYTES)
                } else {
                    "a multiple of 16".to_string()
                }
            ),
        ));
    }
    for h in &group.members {
        let r = &ir.regions[*h];
        if r.align % BULK_ALIGN_BYTES != 0 {
            sink.push(bad(
                format!(
                    "lands its bulk copies in region `{}`, aligned to {} bytes",
                    r.name, r.align
                ),
                "write `align 16` (or more) on the region".into(),
            ));
            break;
        }
        if !r.holds.is_empty() {
            sink.push(bad(
                format!(
                    "lands its bulk copies in region `{}`, which holds typed members",
                    r.name
                ),
                "keep the ring's slots in a region of their own (no `holds`)".into(),
            ));
            break;
        }
    }
}

/// Whether a consumer ring of `depth` slots over region group `g` has whole slots of 16 bytes or
/// more (E0306): the members of a staged group are its slots; one region is cut into `depth`
/// equal ones.
pub fn cuts_whole_slots(ir: &TaskIr, g: usize, depth: i64) -> bool {
    let sizes: Vec<i64> = ir.region_groups[g]
        .members
        .iter()
        .map(|h| ir.regions[*h].size)
        .collect();
    let depth = depth.max(1);
    let (slot, cut) = match sizes[..] {
        [one] => (one / depth, one % depth == 0),
        _ => (sizes.iter().copied().min().unwrap_or(0), true),
    };
    cut && slot >= BULK_ALIGN_BYTES && slot % BULK_ALIGN_BYTES == 0
}

/// Bytes of one slot of consumer ring `ch` (a region per slot, or the ring's one region cut into
/// `depth` equal slots).
pub fn slot_bytes(ir: &TaskIr, ch: &ChannelIr) -> i64 {
    let ChannelStorageIr::Region(g) = ch.storage else {
        return 0;
    };
    let group = &ir.region_groups[g];
    let sizes = group.members.iter().map(|h| ir.regions[*h].size);
    if group.members.len() == 1 {
        sizes.sum::<i64>() / i64::from(ch.depth.max(1))
    } else {
        sizes.min().unwrap_or(0)
    }
}

/// The source argument of each `NAME.copy(offset, SRC, bytes)` and `NAME.load(SRC, bytes)` in the
/// loader body (`code`: comments and strings blanked), for ring `ch`: a tensor it names must be
/// in the ring's `(bulk …)` list (E0009: the list states what the copies read, and the design
/// document and coverage take it from there) and be read, not an `out` tensor (E0005). A source
/// that names no tensor (a pointer the body computed) is not checked. Where every source names a
/// tensor, a listed tensor none of them names is E0009 as well: the loader body reads it some
/// other way (an index, a count), not through the ring's copies.
fn copy_sources(ir: &TaskIr, ch: &ChannelIr, code: &str, sink: &mut Sink) {
    let ArrivalIr::Bulk(listed) = &ch.full_arrival else {
        return;
    };
    // Every source argument, the tensors they name, and whether one of them names no tensor
    // (then what the copies read is not known by name, and no listed tensor is blamed for being
    // absent from them).
    let mut sources: Vec<String> = Vec::new();
    let mut read = Vec::new();
    let mut opaque = false;
    // A source already reported (an output, an unlisted tensor): the list's fix follows from it.
    let mut reported = false;
    for (method, arg) in [("copy", 1), ("load", 0)] {
        for args_at in ring_calls(code, &ch.name, method) {
            let Some(src) = super::body::call_args(&code[args_at..])
                .into_iter()
                .nth(arg)
            else {
                continue;
            };
            let named: Vec<_> = ir
                .tensors
                .iter()
                .filter(|(_, t)| super::body::names_word(&src, &t.name))
                .collect();
            opaque |= named.is_empty();
            read.extend(named.iter().map(|(h, _)| *h));
            if !sources.contains(&src) {
                sources.push(src.clone());
            }
            for (h, t) in named {
                if t.direction == Direction::Out {
                    reported = true;
                    sink.push(
                        Diagnostic::error(
                            codes::TYPE_MISMATCH,
                            format!(
                                "ring `{}`'s loader copies from output tensor `{}`",
                                ch.name, t.name
                            ),
                        )
                        .primary(ch.span, "the ring")
                        .secondary(t.span, "declared `out`")
                        .note(format!(
                            "the loader body's `{}.{method}` reads `{}`",
                            ch.name,
                            src.trim()
                        ))
                        .help("a ring's bulk copies read an `in` (or `inout`) tensor"),
                    );
                } else if !listed.contains(&h) {
                    reported = true;
                    sink.push(
                        Diagnostic::error(
                            codes::BODY_MISMATCH,
                            format!("ring `{}`'s loader copies from `{}`, which its `bulk` list does not name", ch.name, t.name),
                        )
                        .primary(ch.span, "the ring")
                        .secondary(t.span, "declared here")
                        .note(format!("the loader body's `{}.{method}` reads `{}`", ch.name, src.trim()))
                        .help(format!("add `{}` to the ring's `(bulk …)` list", t.name)),
                    );
                }
            }
        }
    }
    if opaque || reported || sources.is_empty() {
        return;
    }
    for h in listed {
        let t = &ir.tensors[*h];
        // A listed tensor the loader body never names at all is reported by `check` above.
        if read.contains(h) || !super::body::names_word(code, &t.name) {
            continue;
        }
        sink.push(
            Diagnostic::error(
                codes::BODY_MISMATCH,
                format!(
                    "ring `{}`'s copies never read `{}`, which its `bulk` list names",
                    ch.name, t.name
                ),
            )
            .primary(ch.span, "the ring")
            .secondary(t.span, "declared here")
            .note(format!(
                "the loader body names `{}` only outside the sources of `{}.copy` / `{}.load` (which read {})",
                t.name,
                ch.name,
                ch.name,
                sources
                    .iter()
                    .map(|s| format!("`{}`", s.trim()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
            .help(format!(
                "the `bulk` list states what the copies read: remove `{}` from it (reading it in the loader body needs no list)",
                t.name
            )),
        );
    }
}

/// The calls `RING.method(…)` of ring `ring` in `code` (comments and strings blanked), spaces
/// allowed around the `.` and before `(` as C++ lexes them; the ring not a member of something
/// else (`a.RING`). Returns the offset just after each call's `(`.
fn ring_calls(code: &str, ring: &str, method: &str) -> Vec<usize> {
    super::body::calls_of(code, method)
        .into_iter()
        .filter(|&(i, _)| {
            let Some(recv) = code[..i].trim_end().strip_suffix('.').map(str::trim_end) else {
                return false;
            };
            recv.strip_suffix(ring).is_some_and(|rest| {
                !rest
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
            })
        })
        .map(|(_, args_at)| args_at)
        .collect()
}
