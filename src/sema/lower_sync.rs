//! Roles, channels, one-shot semaphores and named barriers.

use super::collect::Collected;
use super::lower::Cx;
use crate::diag::{codes, Diagnostic};
use crate::front::ast::{self, ChannelClause, ChannelStorage, SemClause};
use crate::ir::*;

/// Role bindings; without a `roles` item the runtime's layout (contract doc §3.1) applies.
pub(super) fn roles(cx: &mut Cx<'_>, c: &Collected<'_>) {
    let Some((bindings, _)) = c.roles else {
        for kind in [
            RoleKind::Consumer,
            RoleKind::Loader,
            RoleKind::Launcher,
            RoleKind::Storer,
        ] {
            let (first_warp, last_warp) = kind.runtime_warps();
            cx.ir.roles.push(RoleIr {
                kind,
                first_warp,
                last_warp,
                span: cx.ir.name_span,
            });
        }
        return;
    };
    cx.ir.roles_declared = true;
    for b in bindings {
        let Some(kind) = cx.role(&b.role) else {
            continue;
        };
        if let Some(prev) = cx.ir.roles.iter().find(|r| r.kind == kind) {
            let prev = prev.span;
            cx.report(
                Diagnostic::error(codes::DUPLICATE, format!("role `{kind}` is bound twice"))
                    .primary(b.span, "bound again")
                    .secondary(prev, "first bound here")
                    .help("bind each role once"),
            );
            continue;
        }
        if b.last.node < b.first.node {
            cx.report(
                Diagnostic::error(
                    codes::ROLE_WARPS,
                    format!("warp range W{}..W{} is empty", b.first.node, b.last.node),
                )
                .primary(b.span, "last warp before first")
                .help("write the lower warp first, e.g. `W0..W3`"),
            );
            continue;
        }
        cx.ir.roles.push(RoleIr {
            kind,
            first_warp: b.first.node,
            last_warp: b.last.node,
            span: b.span,
        });
    }
}

/// The named barrier of `threads N after B`, resolved (an unknown name is reported).
fn after(cx: &mut Cx<'_>, a: &ast::Arrival) -> Option<(Handle<BarrierIr>, crate::span::Span)> {
    let ast::Arrival::Threads(_, Some(b), _) = a else {
        return None;
    };
    barrier_ref(cx, b)
}

/// A named barrier by name (`after B`, `epilogue … with B`), resolved with the name's span; an
/// unknown name is reported (`E0002`).
pub(super) fn barrier_ref(
    cx: &mut Cx<'_>,
    b: &ast::Ident,
) -> Option<(Handle<BarrierIr>, crate::span::Span)> {
    let h = cx
        .ir
        .barriers
        .iter()
        .find(|(_, x)| x.name == b.node)
        .map(|(h, _)| h);
    if h.is_none() {
        let close = crate::diag::suggest(&b.node, cx.ir.barriers.values().map(|x| x.name.as_str()));
        cx.report(
            Diagnostic::error(
                codes::UNKNOWN_NAME,
                format!("cannot find barrier `{}`", b.node),
            )
            .primary(b.span, "no named barrier of this name")
            .help(match close {
                Some(c) => format!("did you mean `{c}`?"),
                None => "declare it: `barrier NAME = named(ID, threads 128)`".to_string(),
            }),
        );
    }
    h.map(|h| (h, b.span))
}

fn arrival(cx: &mut Cx<'_>, a: &ast::Arrival) -> Option<ArrivalIr> {
    match a {
        ast::Arrival::Tma(names, _) => {
            let hs: Option<Vec<_>> = names.iter().map(|n| cx.tensor(n)).collect();
            hs.map(ArrivalIr::Tma)
        }
        ast::Arrival::Bulk(names, _) => {
            let hs: Option<Vec<_>> = names.iter().map(|n| cx.tensor(n)).collect();
            hs.map(ArrivalIr::Bulk)
        }
        ast::Arrival::Commit(_) => Some(ArrivalIr::Commit),
        ast::Arrival::Threads(e, _, _) => cx
            .non_negative(e, "arriving thread count")
            .map(ArrivalIr::Threads),
    }
}

/// Channels: storage, depth, the full edge, the empty edge (own or shared) and the re-init owner.
pub(super) fn channels(cx: &mut Cx<'_>, c: &Collected<'_>) {
    // Shared empty edges may point forward: resolve names after every channel exists.
    let mut pending_shares: Vec<(Handle<ChannelIr>, &ast::Ident, crate::span::Span)> = Vec::new();
    for ch in &c.channels {
        // Every `continue` below rejects the channel (after reporting why, or a follow-on).
        cx.rejected_channels.push(ch.name.node.clone());
        let Some((storage, default_depth)) = storage(cx, ch) else {
            continue;
        };
        let (depth, depth_span) = match &ch.storage {
            ChannelStorage::Region { depth: Some(e), .. } => (cx.int(e), e.span),
            ChannelStorage::Tmem { slots } => (default_depth, slots.span),
            ChannelStorage::Region { .. } => (default_depth, ch.storage_span),
        };
        let Some(depth) = depth else { continue };
        let depth = match u32::try_from(depth) {
            Ok(d) if (1..=64).contains(&d) => d,
            _ => {
                cx.report(
                    Diagnostic::error(
                        codes::OUT_OF_RANGE,
                        format!(
                            "channel `{}` has {depth} slots; a ring has 1 to 64",
                            ch.name.node
                        ),
                    )
                    .primary(depth_span, format!("{depth} slots"))
                    .help("give the channel between 1 and 64 slots (stages)"),
                );
                continue;
            }
        };
        let mut edge = None;
        let mut empty = EmptyEdge::None;
        let mut share = None;
        let mut reinit = None;
        let mut drain = None;
        let mut early_exit = None;
        for cl in &ch.clauses {
            match cl {
                ChannelClause::Edge {
                    producer,
                    consumer,
                    arrival: a,
                    span,
                } => {
                    if edge.is_some() {
                        cx.report(dup_clause(
                            &ch.name.node,
                            "producer -> consumer edge",
                            *span,
                        ));
                        continue;
                    }
                    if let ast::Arrival::Threads(_, Some(b), _) = a {
                        cx.report(
                            Diagnostic::error(codes::BAD_KEYWORD, format!("`after {}` on the full edge of channel `{}`", b.node, ch.name.node))
                                .primary(b.span, "a full edge is not released by a subset after a named barrier")
                                .help("`threads N after B` goes on an `empty by` edge or a sem: the arrival that releases what a role read"),
                        );
                    }
                    let (p, q, a) = (cx.role(producer), cx.role(consumer), arrival(cx, a));
                    edge = Some(match (p, q, a) {
                        (Some(p), Some(q), Some(a)) => Some((p, q, a)),
                        _ => None, // reported by `role` / `arrival`
                    });
                }
                ChannelClause::EmptyBy {
                    role,
                    arrival: a,
                    span,
                } => {
                    if !matches!(empty, EmptyEdge::None) || share.is_some() {
                        cx.report(dup_clause(&ch.name.node, "empty edge", *span));
                        continue;
                    }
                    let after = after(cx, a);
                    if let (Some(r), Some(a)) = (cx.role(role), arrival(cx, a)) {
                        empty = EmptyEdge::Own {
                            role: r,
                            arrival: a,
                            span: *span,
                            after,
                        };
                    }
                }
                ChannelClause::SharesEmpty(other, span) => {
                    if !matches!(empty, EmptyEdge::None) || share.is_some() {
                        cx.report(dup_clause(&ch.name.node, "empty edge", *span));
                        continue;
                    }
                    share = Some((other, *span));
                }
                ChannelClause::Reinit(role, span) => {
                    if reinit.is_some() {
                        cx.report(dup_clause(&ch.name.node, "reinit", *span));
                        continue;
                    }
                    reinit = cx.role(role);
                }
                ChannelClause::Drain(span) => drain = Some(*span),
                ChannelClause::EarlyExit { role, empty, span } => {
                    if let Some(r) = cx.role(role) {
                        early_exit = Some((r, *empty, *span));
                    }
                }
            }
        }
        let Some(edge) = edge else {
            cx.report(
                Diagnostic::error(
                    codes::MISSING,
                    format!(
                        "channel `{}` has no producer -> consumer edge",
                        ch.name.node
                    ),
                )
                .primary(ch.name.span, "no edge")
                .help("add e.g. `loader -> launcher (tma W)`"),
            );
            continue;
        };
        let Some((producer, consumer, full_arrival)) = edge else {
            continue;
        };
        cx.rejected_channels.pop();
        let h = cx.ir.channels.append(ChannelIr {
            name: ch.name.node.clone(),
            storage,
            depth,
            producer,
            consumer,
            full_arrival,
            empty,
            reinit: reinit.unwrap_or(producer),
            drain,
            early_exit,
            span: ch.span,
        });
        if let Some((other, span)) = share {
            pending_shares.push((h, other, span));
        }
    }
    resolve_shares(cx, pending_shares);
}

fn resolve_shares(
    cx: &mut Cx<'_>,
    pending: Vec<(Handle<ChannelIr>, &ast::Ident, crate::span::Span)>,
) {
    for (h, other, span) in pending {
        let target = cx
            .ir
            .channels
            .iter()
            .find(|(_, x)| x.name == other.node)
            .map(|(t, _)| t);
        match target {
            Some(t) if t == h => cx.report(
                Diagnostic::error(
                    codes::UNKNOWN_NAME,
                    format!("channel `{}` shares its own empty edge", other.node),
                )
                .primary(other.span, "names itself")
                .help("name the channel that owns the empty barriers"),
            ),
            Some(t) => set_shared(cx, h, EmptyEdge::Shared(t, span)),
            None if cx.rejected_channels.contains(&other.node) => cx.report(Diagnostic::error(
                crate::diag::FOLLOW_ON,
                format!("channel `{}` was rejected", other.node),
            )),
            None => cx.report(
                Diagnostic::error(
                    codes::UNKNOWN_NAME,
                    format!("cannot find channel `{}`", other.node),
                )
                .primary(other.span, "no channel of this name")
                .help("`shares_empty` names another channel of this task"),
            ),
        }
    }
}

fn set_shared(cx: &mut Cx<'_>, h: Handle<ChannelIr>, edge: EmptyEdge) {
    cx.ir.channels.get_mut(h).empty = edge;
}

fn dup_clause(ch: &str, what: &str, span: crate::span::Span) -> Diagnostic {
    Diagnostic::error(
        codes::DUPLICATE,
        format!("channel `{ch}` gives its {what} twice"),
    )
    .primary(span, "given again")
    .help(format!("a channel has one {what}"))
}

fn storage(cx: &mut Cx<'_>, ch: &ast::Channel) -> Option<(ChannelStorageIr, Option<i64>)> {
    match &ch.storage {
        ChannelStorage::Tmem { slots } => {
            let n = cx.non_negative(slots, "TMEM slot count")?;
            Some((ChannelStorageIr::Tmem, Some(n)))
        }
        ChannelStorage::Region { region, .. } => {
            let Some(gi) = cx
                .ir
                .region_groups
                .iter()
                .position(|g| g.name == region.node)
            else {
                if cx.rejected_regions.contains(&region.node) {
                    cx.report(Diagnostic::error(
                        crate::diag::FOLLOW_ON,
                        format!("region `{}` was rejected", region.node),
                    ));
                    return None;
                }
                cx.report(
                    Diagnostic::error(
                        codes::UNKNOWN_NAME,
                        format!("cannot find region `{}`", region.node),
                    )
                    .primary(region.span, "no region of this name")
                    .help("a channel's storage is a region declared as `region NAME[stage] { … }`"),
                );
                return None;
            };
            let n = cx.ir.region_groups[gi].members.len() as i64;
            Some((ChannelStorageIr::Region(gi), Some(n)))
        }
    }
}

/// One-shot semaphores; the count defaults to the arrival's (1 for TMA/commit, N for threads).
pub(super) fn sems(cx: &mut Cx<'_>, c: &Collected<'_>) {
    for s in &c.sems {
        let (p, q) = (cx.role(&s.producer), cx.role(&s.consumer));
        let a = match &s.arrival {
            Some(a) => arrival(cx, a),
            None => Some(ArrivalIr::Threads(1)),
        };
        let after = s.arrival.as_ref().and_then(|a| after(cx, a));
        let mut count = None;
        let mut reinit: Option<Option<RoleKind>> = None;
        let mut at_end = false;
        for cl in &s.clauses {
            match cl {
                SemClause::Count(e, sp) => {
                    if count.is_some() {
                        cx.report(dup_sem(&s.name.node, "count", *sp));
                    }
                    count = cx.non_negative(e, "arrival count");
                }
                SemClause::Reinit(r, sp) => {
                    if reinit.is_some() {
                        cx.report(dup_sem(&s.name.node, "re-init owner", *sp));
                    }
                    reinit = Some(cx.role(r));
                }
                SemClause::NoReinit(sp) => {
                    if reinit.is_some() {
                        cx.report(dup_sem(&s.name.node, "re-init owner", *sp));
                    }
                    reinit = Some(None);
                }
                SemClause::At { end, .. } => at_end = *end,
            }
        }
        let (Some(producer), Some(consumer), Some(arrival)) = (p, q, a) else {
            continue;
        };
        let count = count.unwrap_or_else(|| arrival.init_count());
        cx.ir.sems.append(SemIr {
            name: s.name.node.clone(),
            producer,
            consumer,
            arrival,
            count,
            reinit: reinit.unwrap_or(Some(producer)),
            at_end,
            after,
            span: s.span,
        });
    }
}

fn dup_sem(s: &str, what: &str, span: crate::span::Span) -> Diagnostic {
    Diagnostic::error(
        codes::DUPLICATE,
        format!("sem `{s}` gives its {what} twice"),
    )
    .primary(span, "given again")
    .help(format!("a sem has one {what}"))
}

/// Named barriers; the using role defaults to the consumer warpgroup.
pub(super) fn barriers(cx: &mut Cx<'_>, c: &Collected<'_>) {
    for b in &c.barriers {
        let id = cx.int(&b.id);
        let threads = cx.int(&b.threads);
        let by = match &b.by {
            Some(r) => cx.role(r),
            None => Some(RoleKind::Consumer),
        };
        let (Some(id), Some(threads), Some(by)) = (id, threads, by) else {
            continue;
        };
        cx.ir.barriers.append(BarrierIr {
            name: b.name.node.clone(),
            id,
            threads,
            by,
            span: b.span,
            id_span: b.id.span,
            threads_span: b.threads.span,
        });
    }
}
