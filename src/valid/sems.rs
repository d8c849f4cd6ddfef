//! Semaphore rules (I-M1, I-M2, I-M3, I-M4, I-M7).
//!
//! By construction (not checkable from a contract, true of the generated code): ordinals do not
//! overlap (the allocator numbers them once); every ordinal is `mbarrier.init`-ed with its count
//! and fenced in `init_semaphores` (I-M2); re-init helpers are `__forceinline__` and end with the
//! fence (I-M5); producer cursors start at phase 1 and consumer cursors at 0 (I-M7).

use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::{ArrivalIr, EmptyEdge, RoleKind, TaskIr};
use crate::plan::sems::{Ordinal, MAX_OP_SEMS};
use crate::span::Span;

/// I-M1: at most 31 op-private ordinals (0-30); ring slot index 0 is SEM_DEP_READY.
pub(super) fn ordinal_budget(ir: &TaskIr, table: &[Ordinal], sink: &mut Sink) {
    if table.len() <= MAX_OP_SEMS {
        return;
    }
    let mut d = Diagnostic::error(
        codes::TOO_MANY_ORDINALS,
        format!(
            "the task needs {} semaphore ordinals but a ring slot holds 31 (0-30)",
            table.len()
        ),
    );
    let mut first = true;
    for ch in ir.channels.values() {
        let n = table.iter().filter(|o| o.span == ch.span).count();
        if n == 0 {
            continue;
        }
        let label = format!(
            "{n} ordinals ({} full + {} empty)",
            ch.depth,
            n as u32 - ch.depth
        );
        d = if first {
            d.primary(ch.span, label)
        } else {
            d.secondary(ch.span, label)
        };
        first = false;
    }
    for s in ir.sems.values() {
        d = if first {
            d.primary(s.span, "1 ordinal")
        } else {
            d.secondary(s.span, "1 ordinal")
        };
        first = false;
    }
    let over = table.len() - MAX_OP_SEMS;
    // A consumer ring costs two ordinals a slot and cannot share its empty edges (E0011): the
    // fix is fewer slots, as many as the budget leaves it.
    let ring = ir
        .channels
        .values()
        .filter(|c| super::rings::is_consumer_ring(c))
        .max_by_key(|c| c.depth);
    let hint = match (ring, ir.stages) {
        (Some(c), _) => {
            let others = table.len() - 2 * c.depth as usize;
            let most = (MAX_OP_SEMS.saturating_sub(others) / 2).max(1) as i64;
            // The most slots that also cut the ring's region into whole 16-byte slots (E0306),
            // else the most the budget leaves.
            let region = match c.storage {
                crate::ir::ChannelStorageIr::Region(gi) => Some(gi),
                _ => None,
            };
            let fits = region
                .and_then(|gi| {
                    (1..=most).rev().find(|&d| super::rings::cuts_whole_slots(ir, gi, d))
                })
                .unwrap_or(most);
            format!(
                "a consumer ring costs 2 ordinals a slot (full and empty; its empty edges cannot be shared, E0011): give `{}` `depth {fits}`, the most slots the {MAX_OP_SEMS} ordinals leave it{}",
                c.name,
                if region.is_some() { " that cut its region into whole 16-byte slots (E0306)" } else { "" }
            )
        }
        (None, Some((s, _))) if s > 1 => format!("each stage costs 2 or more ordinals: lower `stages` from {s}, or share empty edges (`shares_empty`)"),
        (None, _) => "share empty edges between channels (`shares_empty`) or merge one-shot sems".to_string(),
    };
    sink.push(
        d.note(format!("{over} over; dynamic_semaphores holds 32 mbarriers per slot and index 0 is SEM_DEP_READY"))
            .help(hint),
    );
}

/// I-M2/I-M7: the init count equals the arrivals per phase, and thread arrivals come from no more
/// threads than the arriving role has.
pub(super) fn counts(ir: &TaskIr, sink: &mut Sink) {
    for s in ir.sems.values() {
        let want = s.arrival.init_count();
        if s.count != want {
            sink.push(
                Diagnostic::error(codes::SEM_COUNT, format!("sem `{}` is initialised for {} arrivals per phase but receives {want}", s.name, s.count))
                    .primary(s.span, format!("count {}, {} arrival{}", s.count, want, if want == 1 { "" } else { "s" }))
                    .note("a phase completes when exactly `count` arrivals land: fewer hangs the waiter, more flips the next phase early")
                    .help(format!("write `count {want}`")),
            );
        }
        check_threads(ir, &s.arrival, s.producer, &s.name, s.span, s.after, sink);
    }
    for ch in ir.channels.values() {
        check_threads(
            ir,
            &ch.full_arrival,
            ch.producer,
            &ch.name,
            ch.span,
            None,
            sink,
        );
        if let EmptyEdge::Own {
            role,
            arrival,
            span,
            after,
        } = &ch.empty
        {
            check_threads(ir, arrival, *role, &ch.name, *span, *after, sink);
        }
    }
}

fn check_threads(
    ir: &TaskIr,
    a: &ArrivalIr,
    role: RoleKind,
    name: &str,
    span: Span,
    after: Option<(crate::ir::Handle<crate::ir::BarrierIr>, Span)>,
    sink: &mut Sink,
) {
    let ArrivalIr::Threads(n) = a else { return };
    // An unbound role is E0405's business.
    let Some(have) = ir.role(role).map(|r| r.threads()) else {
        return;
    };
    if *n == 0 || *n > have {
        sink.push(
            Diagnostic::error(codes::SEM_COUNT, format!("`{name}` expects {n} thread arrivals per phase from the {role}, which has {have} threads"))
                .primary(span, format!("threads {n}"))
                .note("each arriving thread arrives once per phase; a count the role cannot reach never completes")
                .help(format!("arrive with between 1 and {have} threads of the {role}")),
        );
        return;
    }
    // What the pipeline lowering arrives (I-M2): every thread of the consumer warpgroup, one
    // elected lane of a single-warp role. A declared count the kernel does not arrive would be
    // model-checked against arrivals that never happen: a smaller consumer set completes the phase
    // after its first warp, while the other warps still read what the phase frees.
    if ir.family != crate::ir::Family::Pipeline {
        return;
    }
    // `threads N after B`: the lowering syncs the named barrier, then the role's first N threads
    // arrive. B must be the arriving role's; whether it gathers every reader is the model
    // check's question (a read after the release is E0312).
    if let Some((b, bspan)) = after {
        let bar = &ir.barriers[b];
        if bar.by != role || role != RoleKind::Consumer {
            sink.push(
                Diagnostic::error(codes::SEM_COUNT, format!("`{name}` arrives from the {role} after barrier `{}`, which the {} uses", bar.name, bar.by))
                    .primary(bspan, format!("`{}` is the {}'s", bar.name, bar.by))
                    .secondary(bar.span, "declared here")
                    .note("the pipeline lowering syncs the barrier in the arriving role, then its first threads arrive; only the consumer warpgroup has several warps to gather")
                    .help(format!("arrive from the consumer after a consumer barrier (`barrier {} = named({}, threads 128)`)", bar.name, bar.id)),
            );
        } else if bar.threads % 32 != 0 || *n % 32 != 0 && *n != 1 {
            sink.push(
                Diagnostic::error(codes::SEM_COUNT, format!("`{name}` arrives from {n} threads after `{}` of {} threads: the lowering arrives whole warps (or one thread) after a barrier of whole warps", bar.name, bar.threads))
                    .primary(span, format!("threads {n} after {}", bar.name))
                    .help("arrive from 1, 32, 64, 96 or 128 threads after a barrier of whole warps"),
            );
        }
        return;
    }
    let lowered = if role == RoleKind::Consumer { have } else { 1 };
    if *n != lowered {
        let who = if role == RoleKind::Consumer {
            format!(
                "all {have} threads of the consumer warpgroup, after each has finished its reads"
            )
        } else {
            format!("one elected lane of the {role}")
        };
        sink.push(
            Diagnostic::error(codes::SEM_COUNT, format!("`{name}` declares {n} thread arrivals per phase from the {role}, but the pipeline lowering arrives with {lowered}"))
                .primary(span, format!("threads {n}"))
                .note(format!("the kernel arrives on this barrier from {who}; with count {n} the phase would complete after the first {n} arrivals"))
                .note("a subset arriving for the whole role needs a named barrier over all its readers first")
                .help(format!("write `threads {lowered}` and `count {lowered}`, or `threads {n} after B` with `barrier B = named(ID, threads {have})`")),
        );
    }
}

/// I-M4: asynchronously arrived barriers are re-initialised at task start by their arriving role;
/// a thread-arrived one-shot is re-initialised only by its waiter (consumer_done) or not at all
/// (tmem_ready: the consumers wait it at task start, concurrently with the launcher).
pub(super) fn reinit(ir: &TaskIr, sink: &mut Sink) {
    for s in ir.sems.values() {
        match (&s.arrival, s.reinit) {
            (a, None) if a.is_async() => sink.push(
                Diagnostic::error(codes::REINIT, format!("sem `{}` is arrived by {} but never re-initialised", s.name, a.kind_str()))
                    .primary(s.span, "no_reinit")
                    .note("an asynchronous arrival from the previous occupant of the ring slot can land after the controller's init and flip the phase (I-M4)")
                    .help(format!("write `reinit {}` (the arriving role, before its first arrival)", s.producer)),
            ),
            (a, Some(r)) if a.is_async() && r != s.producer => sink.push(
                Diagnostic::error(codes::REINIT, format!("sem `{}` is re-initialised by the {r}, not by the {} that arrives it", s.name, s.producer))
                    .primary(s.span, format!("reinit {r}"))
                    .help(format!("write `reinit {}`", s.producer)),
            ),
            (ArrivalIr::Threads(_), Some(r)) if r == s.producer && r != s.consumer => sink.push(
                Diagnostic::error(codes::REINIT, format!("sem `{}` is re-initialised by the {r}, which arrives it, while the {} may already wait on it", s.name, s.consumer))
                    .primary(s.span, format!("reinit {r}"))
                    .note("this is the tmem_ready class: the waiter starts waiting at task start, concurrently with the re-init (contract doc §2.4)")
                    .help(format!("write `no_reinit`, or `reinit {}` if the waiter re-initialises it before it hands off", s.consumer)),
            ),
            (_, None) if s.at_end => sink.push(
                Diagnostic::error(codes::REINIT, format!("sem `{}` is arrived at the end of the task but never re-initialised", s.name))
                    .primary(s.span, "no_reinit")
                    .note("the previous occupant of the ring slot arrived it at its end; without a start-of-task re-init this task's wait can pass on that phase (I-M4)")
                    .help(format!("write `reinit {}` (the role that waits it at the end, as the house linear's `consumer_done`)", s.consumer)),
            ),
            (_, Some(r)) if r != s.producer && r != s.consumer => sink.push(
                Diagnostic::error(codes::REINIT, format!("sem `{}` is re-initialised by the {r}, which neither arrives nor waits it", s.name))
                    .primary(s.span, format!("reinit {r}"))
                    .help(format!("re-initialise it by the {} or the {}", s.producer, s.consumer)),
            ),
            _ => {}
        }
    }
    for ch in ir.channels.values() {
        if ch.full_arrival.is_async() && ch.reinit != ch.producer {
            sink.push(
                Diagnostic::error(codes::REINIT, format!("channel `{}` is filled by {} but re-initialised by the {}, not by the {} that fills it", ch.name, ch.full_arrival.kind_str(), ch.reinit, ch.producer))
                    .primary(ch.span, format!("reinit {}", ch.reinit))
                    .note("the re-init at task start must precede the arriving role's first arrival, or it wipes that arrival (I-M4)")
                    .help(format!("write `reinit {}` (or drop `reinit`: it defaults to the producer)", ch.producer)),
            );
            continue;
        }
        let empty_role = match &ch.empty {
            EmptyEdge::Own { role, .. } => Some(*role),
            _ => None,
        };
        if ch.reinit != ch.producer && ch.reinit != ch.consumer && Some(ch.reinit) != empty_role {
            sink.push(
                Diagnostic::error(
                    codes::REINIT,
                    format!(
                        "channel `{}` is re-initialised by the {}, which takes no part in it",
                        ch.name, ch.reinit
                    ),
                )
                .primary(ch.span, format!("reinit {}", ch.reinit))
                .help(format!(
                    "re-initialise it by its producer, the {}",
                    ch.producer
                )),
            );
        }
    }
}

/// I-M3: a shared empty edge points at a channel that owns one, with the same depth and the same
/// producer (the role that waits the empties).
pub(super) fn shared_empty(ir: &TaskIr, sink: &mut Sink) {
    for ch in ir.channels.values() {
        let EmptyEdge::Shared(owner, span) = ch.empty else {
            continue;
        };
        let o = &ir.channels[owner];
        let why = match &o.empty {
            EmptyEdge::Shared(..) => Some(format!(
                "`{}` itself shares another channel's empty edge",
                o.name
            )),
            EmptyEdge::None => Some(format!("`{}` has no empty edge to share", o.name)),
            EmptyEdge::Own { .. } if o.depth != ch.depth => Some(format!(
                "`{}` has {} stages and `{}` has {}",
                o.name, o.depth, ch.name, ch.depth
            )),
            EmptyEdge::Own { .. } if o.producer != ch.producer => Some(format!(
                "`{}` is produced by the {} and `{}` by the {}",
                o.name, o.producer, ch.name, ch.producer
            )),
            EmptyEdge::Own { .. } => None,
        };
        if let Some(why) = why {
            sink.push(
                Diagnostic::error(codes::SHARED_EMPTY, format!("channel `{}` cannot share the empty edge of `{}`: {why}", ch.name, o.name))
                    .primary(span, "shared here")
                    .secondary(o.span, "the owner")
                    .note("channels sharing an empty edge are filled and freed in lock step: one empty barrier per stage serves both")
                    .help(format!("give `{}` its own `empty by ROLE (arrival)`", ch.name)),
            );
        }
    }
}

/// I-R1: every role a channel or sem names is bound (the controller is the runtime's).
pub(super) fn roles_bound(ir: &TaskIr, sink: &mut Sink) {
    let mut reported: Vec<(String, RoleKind)> = Vec::new();
    let mut check = |role: RoleKind, what: &str, span: Span| {
        if reported.iter().any(|(w, r)| w == what && *r == role) {
            return;
        }
        if role == RoleKind::Controller {
            reported.push((what.to_string(), role));
            sink.push(
                Diagnostic::error(codes::ROLE_UNBOUND, format!("{what} names the controller, which belongs to the runtime"))
                    .primary(span, "the controller here")
                    .note("W7 publishes tasks and runs init_semaphores; task code arrives and waits only in W0-W6")
                    .help("use the loader, launcher, consumer or storer"),
            );
        } else if ir.role(role).is_none() {
            reported.push((what.to_string(), role));
            sink.push(
                Diagnostic::error(
                    codes::ROLE_UNBOUND,
                    format!("{what} names the {role}, which `roles` does not bind"),
                )
                .primary(span, format!("uses the {role}"))
                .help(format!(
                    "bind it in `roles`, e.g. `{role} W{}`",
                    role.runtime_warps().0
                )),
            );
        }
    };
    for ch in ir.channels.values() {
        let what = format!("channel `{}`", ch.name);
        check(ch.producer, &what, ch.span);
        check(ch.consumer, &what, ch.span);
        if let EmptyEdge::Own { role, span, .. } = &ch.empty {
            check(*role, &what, *span);
        }
    }
    for s in ir.sems.values() {
        let what = format!("sem `{}`", s.name);
        check(s.producer, &what, s.span);
        check(s.consumer, &what, s.span);
    }
    implicit_roles_bound(ir, sink);
}

/// I-R1 for the roles a consumer-only kernel runs that no channel or sem names: its body on the
/// consumer warps, and, where it has regions, mpkc's page hand-off `pages_ready` (the loader
/// arrives it, `plan::sems::needs_page_handoff`). A `roles` item that leaves one out says the
/// role does not exist, while the generated kernel runs it on the runtime's warps.
fn implicit_roles_bound(ir: &TaskIr, sink: &mut Sink) {
    if !ir.roles_declared || !ir.family.is_consumer_only() {
        return;
    }
    let (Some(first), Some(last)) = (ir.roles.first(), ir.roles.last()) else {
        return;
    };
    let item = first.span.to(last.span);
    let mut needed: Vec<(RoleKind, String, &'static str)> = Vec::new();
    if ir.body.is_some() {
        needed.push((
            RoleKind::Consumer,
            "the body runs on the consumer warps".to_string(),
            "a consumer-only task's body runs on the consumer warpgroup (W0-W3), threads 0..127",
        ));
    }
    if crate::plan::sems::needs_page_handoff(ir) {
        needed.push((
            RoleKind::Loader,
            format!("the page hand-off `{}` is arrived by the loader", crate::plan::sems::PAGES_READY),
            "a consumer-only task with regions gets mpkc's page hand-off: the loader warp (W4) runs the page prefix itself and arrives `pages_ready` once the task's used pages are waited, the consumer waits it before the body (docs/language.md, \"Pages of a consumer-only task\")",
        ));
    }
    for (role, what, note) in needed {
        if ir.role(role).is_some() {
            continue;
        }
        let (f, l) = role.runtime_warps();
        let warps = if f == l {
            format!("W{f}")
        } else {
            format!("W{f}..W{l}")
        };
        sink.push(
            Diagnostic::error(
                codes::ROLE_UNBOUND,
                format!("{what}, which `roles` does not bind"),
            )
            .primary(item, format!("binds no {role}"))
            .note(note)
                .note("with a `roles` item only the roles it lists exist, but the generated kernel runs this one on the runtime's warps")
                .help(format!("add `{role} {warps}` to `roles`, or leave `roles` out (the runtime's layout binds every role)")),
        );
    }
}

/// A region ring's depth equals its region's stages, and every ring has an empty edge (own or
/// shared): without one the producer refills a stage before its consumer released it.
/// I-M3 / I-S1: each ring owns its stage region. The loader writes a channel's stage at the base
/// of its region's stage, so two channels on one region write the same bytes: the second TMA
/// overwrites the first (E0306).
pub(super) fn shared_storage(ir: &TaskIr, sink: &mut Sink) {
    let mut owner: Vec<Option<&crate::ir::ChannelIr>> = vec![None; ir.region_groups.len()];
    for ch in ir.channels.values() {
        let crate::ir::ChannelStorageIr::Region(g) = ch.storage else {
            continue;
        };
        let Some(slot) = owner.get_mut(g) else {
            continue;
        };
        match slot {
            None => *slot = Some(ch),
            Some(first) => {
                let region = &ir.region_groups[g];
                sink.push(
                    Diagnostic::error(
                        codes::CHANNEL_SHAPE,
                        format!(
                            "channels `{}` and `{}` both store their stages in region `{}`",
                            first.name, ch.name, region.name
                        ),
                    )
                    .primary(ch.span, format!("`{}` writes region `{}` here", ch.name, region.name))
                    .secondary(first.span, format!("`{}` already writes it", first.name))
                    .secondary(region.head_span, "one region")
                    .note("the loader lands each channel's stage at the base of its region's stage: both TMA loads write the same bytes and the second overwrites the first")
                    .help(format!("give `{}` its own staged region (`region {}_{}[stage] {{ ... }}`)", ch.name, region.name, ch.name)),
                );
            }
        }
    }
}

pub(super) fn channel_shape(ir: &TaskIr, sink: &mut Sink) {
    for ch in ir.channels.values() {
        if let crate::ir::ChannelStorageIr::Region(g) = ch.storage {
            let group = &ir.region_groups[g];
            let stages = group.members.len() as u32;
            // A consumer ring may cut its one region into `depth` equal slots (`valid::rings`).
            // (Another channel of a consumer family is E0011, `valid::rings`: not this too.)
            let cut = ir.family.is_consumer_only() && stages == 1;
            if ch.depth != stages && !cut {
                sink.push(
                    Diagnostic::error(
                        codes::CHANNEL_SHAPE,
                        format!(
                            "channel `{}` has depth {} but its region `{}` has {stages} stage{}",
                            ch.name,
                            ch.depth,
                            group.name,
                            if stages == 1 { "" } else { "s" }
                        ),
                    )
                    .primary(ch.span, format!("depth {}", ch.depth))
                    .secondary(group.head_span, format!("{stages} stages"))
                    .help(format!(
                        "drop `depth` (it defaults to the region's {stages} stages)"
                    )),
                );
            }
        }
        if matches!(ch.empty, EmptyEdge::None) {
            sink.push(
                Diagnostic::error(codes::CHANNEL_SHAPE, format!("channel `{}` has no empty edge", ch.name))
                    .primary(ch.span, "no `empty by` or `shares_empty`")
                    .note("the producer waits a stage's empty barrier before refilling it; without one it overwrites data the consumer still reads")
                    .help(format!("add `empty by {} (commit)` (or the consumer's arrival kind)", ch.consumer)),
            );
        }
    }
}
