//! The protocol model check (I-M4, I-M7, I-M8): from the declared roles, channels and one-shot
//! sems, derive every role's waits and arrivals for one task, simulate them with phases for every
//! trip count from 0 (an empty split) to stages + 1, in several interleavings and with
//! asynchronous arrivals delivered at once or as late as possible, alone and as two consecutive
//! tasks on one ring slot; report a deadlock (`E0310`), or a lost or double arrival or a wait that
//! passes on the wrong phase (`E0311`), naming the barrier, the roles and the trip count.
//!
//! The programs follow the house pipeline (contract doc §2.2, §3.2): each role first re-inits
//! the barriers it owns; sems `at start` are arrived and waited before the loops, `at end`
//! after them; per tile, the TMEM channels' slot is acquired, the K loop runs `trips` times over
//! the region rings (the producer waits the stage's empty barrier with its cursor's parity, which
//! starts at 1, then arrives the full barriers; the consumer waits the fulls with its cursor's
//! parity, which starts at 0, then arrives the empty), and the TMEM slot is handed over.

mod sim;

use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::{
    ArrivalIr, ChannelIr, ChannelStorageIr, EmptyEdge, GranularityIr, Handle, RoleKind, TaskIr,
};
use crate::plan::sems::{empty_of, full_of, Ordinal};
use sim::{Delivery, Fault, Interleave, Machine, Op, Program, Site};

const ROLES: [RoleKind; 4] = [
    RoleKind::Consumer,
    RoleKind::Loader,
    RoleKind::Launcher,
    RoleKind::Storer,
];

/// The roles' programs for one task with `trips` K iterations.
fn programs(ir: &TaskIr, table: &[Ordinal], trips: u64) -> Vec<Program> {
    ROLES
        .iter()
        .map(|&r| Program {
            role: r,
            ops: program(ir, table, r, trips),
        })
        .collect()
}

fn site(what: &'static str, span: crate::span::Span) -> Site {
    Site { what, span }
}

fn is_async(a: &ArrivalIr) -> bool {
    a.is_async()
}

fn weight(a: &ArrivalIr, count: i64) -> i64 {
    match a {
        ArrivalIr::Threads(n) => *n,
        _ => count,
    }
}

/// The channels sharing `owner`'s empty edge, owner first, in declaration order.
fn group(ir: &TaskIr, owner: Handle<ChannelIr>) -> Vec<Handle<ChannelIr>> {
    let mut g = vec![owner];
    g.extend(
        ir.channels
            .iter()
            .filter(|(_, c)| matches!(c.empty, EmptyEdge::Shared(o, _) if o == owner))
            .map(|(h, _)| h),
    );
    g
}

fn program(ir: &TaskIr, table: &[Ordinal], role: RoleKind, trips: u64) -> Vec<Op> {
    let mut ops = Vec::new();
    for o in table.iter().filter(|o| o.reinit == Some(role)) {
        ops.push(Op::Reinit(o.ordinal));
    }
    one_shots(ir, table, role, false, &mut ops);
    let tiles = match &ir.granularity {
        GranularityIr::PerTile { tiles_per_task, .. } => (*tiles_per_task).max(1) as u64,
        GranularityIr::GridWide { .. } => 1,
    };
    let outer: Vec<Handle<ChannelIr>> = ir
        .channels
        .iter()
        .filter(|(_, c)| matches!(c.storage, ChannelStorageIr::Tmem))
        .map(|(h, _)| h)
        .collect();
    // Ring groups: a channel with its own (or no) empty edge, plus those sharing it.
    let owners: Vec<Handle<ChannelIr>> = ir
        .channels
        .iter()
        .filter(|(_, c)| {
            matches!(c.storage, ChannelStorageIr::Region(_))
                && !matches!(c.empty, EmptyEdge::Shared(..))
        })
        .map(|(h, _)| h)
        .collect();
    for j in 0..tiles {
        for &h in &outer {
            acquire_slot(ir, table, role, h, j, &mut ops);
        }
        if trips == 0 {
            early_exit(ir, table, role, &mut ops);
        }
        for i in 0..trips {
            for &owner in &owners {
                ring_trip(ir, table, role, owner, i, &mut ops);
            }
        }
        for &h in &outer {
            release_slot(ir, table, role, h, j, &mut ops);
        }
    }
    for &owner in &owners {
        drain(ir, table, role, owner, trips, &mut ops);
    }
    one_shots(ir, table, role, true, &mut ops);
    ops
}

fn one_shots(ir: &TaskIr, table: &[Ordinal], role: RoleKind, at_end: bool, ops: &mut Vec<Op>) {
    for (h, s) in ir.sems.iter().filter(|(_, s)| s.at_end == at_end) {
        let Some(o) = table
            .iter()
            .find(|o| o.source == crate::plan::sems::OrdinalSource::Sem(h))
        else {
            continue;
        };
        if s.producer == role {
            ops.push(Op::Arrive {
                bar: o.ordinal,
                weight: weight(&s.arrival, s.count),
                is_async: is_async(&s.arrival),
            });
        }
        if s.consumer == role {
            ops.push(Op::Wait {
                bar: o.ordinal,
                parity: 0,
                expect: Some(0),
                site: site("waits", s.span),
            });
        }
    }
}

fn lap(use_index: u64, depth: u64) -> (u64, u64) {
    (use_index % depth, use_index / depth)
}

/// Producer: wait the slot's empty barrier (cursor parity 1 ^ lap); consumer: wait its full.
fn acquire_slot(
    ir: &TaskIr,
    table: &[Ordinal],
    role: RoleKind,
    h: Handle<ChannelIr>,
    j: u64,
    ops: &mut Vec<Op>,
) {
    let ch = &ir.channels[h];
    let depth = u64::from(ch.depth.max(1));
    let (s, l) = lap(j, depth);
    let slot = s as u32;
    if ch.producer == role {
        if let Some(e) = empty_of(ir, table, h, slot) {
            let expect = l.checked_sub(1);
            ops.push(Op::Wait {
                bar: e,
                parity: 1 ^ (l & 1) as u32,
                expect,
                site: site("waits the empty barrier", ch.span),
            });
        }
    }
    if ch.consumer == role {
        if let Some(f) = full_of(table, h, slot) {
            ops.push(Op::Wait {
                bar: f,
                parity: (l & 1) as u32,
                expect: Some(l),
                site: site("waits the full barrier", ch.span),
            });
        }
    }
}

/// Producer: arrive the full barrier; empty arriver: arrive the empty barrier.
fn release_slot(
    ir: &TaskIr,
    table: &[Ordinal],
    role: RoleKind,
    h: Handle<ChannelIr>,
    j: u64,
    ops: &mut Vec<Op>,
) {
    let ch = &ir.channels[h];
    let depth = u64::from(ch.depth.max(1));
    let (s, _) = lap(j, depth);
    let slot = s as u32;
    if ch.producer == role {
        if let Some(f) = full_of(table, h, slot) {
            let count = table[f].count;
            ops.push(Op::Arrive {
                bar: f,
                weight: weight(&ch.full_arrival, count),
                is_async: is_async(&ch.full_arrival),
            });
        }
    }
    if let EmptyEdge::Own {
        role: er, arrival, ..
    } = &ch.empty
    {
        if *er == role {
            if let Some(e) = empty_of(ir, table, h, slot) {
                ops.push(Op::Arrive {
                    bar: e,
                    weight: weight(arrival, table[e].count),
                    is_async: is_async(arrival),
                });
            }
        }
    }
}

/// One K iteration of a ring group (owner plus the channels sharing its empty edge).
fn ring_trip(
    ir: &TaskIr,
    table: &[Ordinal],
    role: RoleKind,
    owner: Handle<ChannelIr>,
    i: u64,
    ops: &mut Vec<Op>,
) {
    let members = group(ir, owner);
    let o = &ir.channels[owner];
    let depth = u64::from(o.depth.max(1));
    let (s, l) = lap(i, depth);
    let slot = s as u32;
    if o.producer == role {
        if let Some(e) = empty_of(ir, table, owner, slot) {
            ops.push(Op::Wait {
                bar: e,
                parity: 1 ^ (l & 1) as u32,
                expect: l.checked_sub(1),
                site: site("waits the empty barrier", o.span),
            });
        }
    }
    for &h in &members {
        let ch = &ir.channels[h];
        if ch.producer == role {
            if let Some(f) = full_of(table, h, slot) {
                ops.push(Op::Arrive {
                    bar: f,
                    weight: weight(&ch.full_arrival, table[f].count),
                    is_async: is_async(&ch.full_arrival),
                });
            }
        }
    }
    let empty_role = match &o.empty {
        EmptyEdge::Own { role, .. } => Some(*role),
        _ => None,
    };
    for &h in &members {
        let ch = &ir.channels[h];
        if ch.consumer == role || (empty_role == Some(role) && ch.consumer != role) {
            if let Some(f) = full_of(table, h, slot) {
                ops.push(Op::Wait {
                    bar: f,
                    parity: (l & 1) as u32,
                    expect: Some(l),
                    site: site("waits the full barrier", ch.span),
                });
            }
        }
    }
    if let EmptyEdge::Own {
        role: er, arrival, ..
    } = &o.empty
    {
        if *er == role {
            if let Some(e) = empty_of(ir, table, owner, slot) {
                ops.push(Op::Arrive {
                    bar: e,
                    weight: weight(arrival, table[e].count),
                    is_async: is_async(arrival),
                });
            }
        }
    }
}

/// `early_exit ROLE arrives EDGE`: with zero trips, the role arrives slot 0 of that edge once.
fn early_exit(ir: &TaskIr, table: &[Ordinal], role: RoleKind, ops: &mut Vec<Op>) {
    for (h, ch) in ir.channels.iter() {
        let Some((r, empty, span)) = ch.early_exit else {
            continue;
        };
        let _ = span;
        if r != role {
            continue;
        }
        let (bar, arrival) = if empty {
            let a = match &ch.empty {
                EmptyEdge::Own { arrival, .. } => arrival.clone(),
                EmptyEdge::Shared(o, _) => match &ir.channels[*o].empty {
                    EmptyEdge::Own { arrival, .. } => arrival.clone(),
                    _ => ArrivalIr::Commit,
                },
                EmptyEdge::None => continue,
            };
            (empty_of(ir, table, h, 0), a)
        } else {
            (full_of(table, h, 0), ch.full_arrival.clone())
        };
        if let Some(b) = bar {
            ops.push(Op::Arrive {
                bar: b,
                weight: weight(&arrival, table[b].count),
                is_async: arrival.is_async(),
            });
        }
    }
}

/// `drain`: at task end the producer waits every stage's empty barrier for the release of the
/// lap it believes every stage reached (ceil(trips / depth) fills each).
fn drain(
    ir: &TaskIr,
    table: &[Ordinal],
    role: RoleKind,
    owner: Handle<ChannelIr>,
    trips: u64,
    ops: &mut Vec<Op>,
) {
    let o = &ir.channels[owner];
    let Some(span) = o
        .drain
        .or_else(|| group(ir, owner).iter().find_map(|h| ir.channels[*h].drain))
    else {
        return;
    };
    if o.producer != role {
        return;
    }
    let depth = u64::from(o.depth.max(1));
    let laps = trips.div_ceil(depth);
    if laps == 0 {
        return;
    }
    for s in 0..o.depth {
        if let Some(e) = empty_of(ir, table, owner, s) {
            ops.push(Op::Wait {
                bar: e,
                parity: ((laps - 1) & 1) as u32,
                expect: Some(laps - 1),
                site: site("drains the empty barrier", span),
            });
        }
    }
}

/// Phases each barrier must complete in a task of `trips` iterations.
fn expected_phases(ir: &TaskIr, table: &[Ordinal], trips: u64) -> Vec<u64> {
    let tiles = match &ir.granularity {
        GranularityIr::PerTile { tiles_per_task, .. } => (*tiles_per_task).max(1) as u64,
        GranularityIr::GridWide { .. } => 1,
    };
    table
        .iter()
        .map(|o| match &o.source {
            crate::plan::sems::OrdinalSource::Sem(_) => 1,
            crate::plan::sems::OrdinalSource::Full(h, s)
            | crate::plan::sems::OrdinalSource::Empty(h, s) => {
                let ch = &ir.channels[*h];
                let d = u64::from(ch.depth.max(1));
                let uses = if matches!(ch.storage, ChannelStorageIr::Tmem) {
                    tiles
                } else {
                    trips * tiles
                };
                let s = u64::from(*s);
                uses / d + u64::from(s < uses % d)
            }
        })
        .collect()
}

/// The orders the roles are stepped in: every rotation and its reverse.
fn orders(n: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    for k in 0..n {
        let rot: Vec<usize> = (0..n).map(|i| (i + k) % n).collect();
        let mut rev = rot.clone();
        rev.reverse();
        out.push(rot);
        out.push(rev);
    }
    out
}

/// One simulated fault, first seen at `trips`, and every trip count it appears at.
#[derive(Clone, Debug)]
struct Finding {
    fault: Fault,
    trips: u64,
    previous: Option<u64>,
    all_trips: Vec<u64>,
}

/// Runs the model check. Returns one diagnostic per distinct fault (smallest trip count first).
pub(super) fn check(ir: &TaskIr, table: &[Ordinal], sink: &mut Sink) {
    if table.is_empty() {
        return;
    }
    let counts: Vec<i64> = table.iter().map(|o| o.count).collect();
    let max_trips = u64::from(ir.stages.map_or(1, |(s, _)| s)) + 1;
    let mut findings: Vec<Finding> = Vec::new();
    let seen = |f: Finding, findings: &mut Vec<Finding>| {
        let key = fault_key(&f.fault);
        match findings.iter_mut().find(|x| fault_key(&x.fault) == key) {
            Some(x) => {
                if !x.all_trips.contains(&f.trips) {
                    x.all_trips.push(f.trips);
                }
            }
            None => findings.push(Finding {
                all_trips: vec![f.trips],
                ..f
            }),
        }
    };
    for trips in 0..=max_trips {
        let progs = programs(ir, table, trips);
        for order in orders(progs.len()) {
            for il in [Interleave::RoundRobin, Interleave::Greedy] {
                // One task alone, arrivals delivered at once: deadlocks, flips, accounting.
                let mut m = Machine::new(&counts);
                if let Some(f) = m.run_task(&progs, &order, il, Delivery::Immediate) {
                    seen(
                        Finding {
                            fault: f,
                            trips,
                            previous: None,
                            all_trips: Vec::new(),
                        },
                        &mut findings,
                    );
                    continue;
                }
                let expected = expected_phases(ir, table, trips);
                for (bar, ((done, pending), want)) in
                    m.phases().into_iter().zip(expected).enumerate()
                {
                    if done != want || pending != 0 {
                        let f = Fault::Arrivals {
                            bar,
                            expected: want,
                            completed: done,
                            pending,
                            site: None,
                        };
                        seen(
                            Finding {
                                fault: f,
                                trips,
                                previous: None,
                                all_trips: Vec::new(),
                            },
                            &mut findings,
                        );
                    }
                }
                // Two consecutive tasks on the same ring slot, async arrivals landing late.
                let depth = u64::from(ir.stages.map_or(1, |(s, _)| s));
                let mut previous: Vec<u64> = vec![0, 1, depth.saturating_sub(1), depth, depth + 1];
                previous.sort_unstable();
                previous.dedup();
                for prev in previous {
                    let mut m = Machine::new(&counts);
                    let first = programs(ir, table, prev);
                    if m.run_task(&first, &order, il, Delivery::Lazy).is_some() {
                        continue; // reported by the single-task runs
                    }
                    if let Some(f) = m.run_task(&progs, &order, il, Delivery::Lazy) {
                        seen(
                            Finding {
                                fault: f,
                                trips,
                                previous: Some(prev),
                                all_trips: Vec::new(),
                            },
                            &mut findings,
                        );
                    }
                }
            }
        }
    }
    for f in findings {
        sink.push(diagnostic(ir, table, &f));
    }
}

/// One report per problem: a deadlock or flip per waiting site, an accounting error per barrier.
fn fault_key(f: &Fault) -> (u8, usize, crate::span::Span) {
    match f {
        Fault::Deadlock { site, .. } => (0, 0, site.span),
        Fault::EarlyFlip { site, .. } => (1, 0, site.span),
        Fault::Arrivals { bar, .. } => (2, *bar, crate::span::Span::default()),
    }
}

fn trip_list(t: &[u64]) -> String {
    let mut t = t.to_vec();
    t.sort_unstable();
    let parts: Vec<String> = t.iter().map(u64::to_string).collect();
    match parts.len() {
        0 | 1 => String::new(),
        _ => format!("; it also fails at {} trips", parts[1..].join(", ")),
    }
}

fn trips_text(n: u64) -> String {
    format!("{n} trip{}", if n == 1 { "" } else { "s" })
}

fn diagnostic(ir: &TaskIr, table: &[Ordinal], f: &Finding) -> Diagnostic {
    let when = match f.previous {
        Some(p) => format!(
            "{} (after a task of {} on the same ring slot)",
            trips_text(f.trips),
            trips_text(p)
        ),
        None => trips_text(f.trips),
    };
    let stages = ir.stages.map_or(1, |(s, _)| s);
    match &f.fault {
        Fault::Deadlock {
            role,
            bar,
            parity,
            phase,
            site,
        } => {
            let o = &table[*bar];
            Diagnostic::error(
                codes::DEADLOCK,
                format!("deadlock at {when}: the {role} waits `{}` (ordinal {}) at parity {parity}, but after {phase} completed phase{} nothing arrives", o.name, o.ordinal, if *phase == 1 { "" } else { "s" }),
            )
            .primary(site.span, format!("the {role} {} here", site.what))
            .note(format!("`{}` is arrived by the {} ({}){}", o.name, o.producer, o.arrival.kind_str(), trip_list(&f.all_trips)))
            .note(format!("simulated every trip count from 0 to stages + 1 = {}, and pairs of consecutive tasks on one ring slot", stages + 1))
            .help(deadlock_help(ir, table, *bar, site))
        }
        Fault::EarlyFlip {
            role,
            bar,
            expect,
            phase,
            site,
            stray,
        } => {
            let o = &table[*bar];
            let meant = expect.map_or("the pre-empty phase".to_string(), |k| {
                format!("the completion of phase {k}")
            });
            let cause = if *stray {
                format!("a late {} from the previous task on this ring slot landed after the controller's init", o.arrival.kind_str())
            } else {
                "an extra arrival completed a phase nobody waited for".to_string()
            };
            Diagnostic::error(
                codes::ARRIVALS,
                format!("at {when}, the {role}'s wait on `{}` (ordinal {}) passes on the wrong phase: it means {meant}, but {phase} phase{} completed", o.name, o.ordinal, if *phase == 1 { "" } else { "s" }),
            )
            .primary(site.span, format!("the {role} {} here", site.what))
            .note(cause)
            .help(match o.reinit {
                None => format!("re-initialise `{}` at task start by the role that arrives it (`reinit {}`)", o.name, o.producer),
                Some(_) => "arrive each barrier exactly once per phase its waiter waits".to_string(),
            })
        }
        Fault::Arrivals {
            bar,
            expected,
            completed,
            pending,
            ..
        } => {
            let o = &table[*bar];
            let extra = early_exit_span(ir, o);
            let mut d = Diagnostic::error(
                codes::ARRIVALS,
                format!(
                    "at {when}, `{}` (ordinal {}) completes {completed} phase{} where the protocol fills {expected}{}",
                    o.name,
                    o.ordinal,
                    if *completed == 1 { "" } else { "s" },
                    if *pending != 0 { format!(", with {pending} arrival(s) left over") } else { String::new() }
                ),
            );
            d = match extra {
                Some(s) => d.primary(s, "arrives without a fill to release"),
                None => d.primary(o.span, format!("`{}` declared here", o.name)),
            };
            d.note(format!("its waiter, the {}, waits every phase: an extra arrival releases a stage early, a missing one hangs it", o.consumer))
                .help("arrive a barrier only for a phase its waiter waits; on an early exit, skip the arrival")
        }
    }
}

fn early_exit_span(ir: &TaskIr, o: &Ordinal) -> Option<crate::span::Span> {
    let h = match &o.source {
        crate::plan::sems::OrdinalSource::Full(h, _)
        | crate::plan::sems::OrdinalSource::Empty(h, _) => *h,
        _ => return None,
    };
    // The early-exit clause may sit on the owner or on a channel sharing its empty edge.
    ir.channels.iter().find_map(|(x, c)| {
        let related = x == h || matches!(c.empty, EmptyEdge::Shared(own, _) if own == h);
        c.early_exit.filter(|_| related).map(|(_, _, s)| s)
    })
}

fn deadlock_help(ir: &TaskIr, table: &[Ordinal], bar: usize, site: &Site) -> String {
    let o = &table[bar];
    if ir.channels.values().any(|c| c.drain == Some(site.span)) {
        "remove the end-of-task drain: stages the K loop never filled are never released (I-M8); rely on the role re-init at the next task's start".to_string()
    } else if o.reinit.is_some_and(|r| r != o.producer) {
        format!(
            "re-initialise `{}` by the {} that arrives it: the {}'s re-init at task start can wipe an arrival the {} already made (I-M4)",
            o.name, o.producer, o.reinit.map_or("?", |r| r.as_str()), o.producer
        )
    } else {
        "make every wait match an arrival for the same phase: check the producer and consumer of the barrier and their parities".to_string()
    }
}
