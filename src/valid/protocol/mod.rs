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

pub mod pages;
mod sim;

use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::{ChannelStorageIr, EmptyEdge, TaskIr};
use crate::lower::{BarRef, BarrierSource, Index, LoopKind, Op as RpOp, RoleProgram, Step};
use crate::plan::sems::Ordinal;
use sim::{Delivery, Fault, Interleave, Machine, Op, Program, Resource, Site};

/// The roles' programs of one task with `trips` K iterations: `prog` flattened.
///
/// A role of several warps in which a subset arrives for the role or a named barrier gathers
/// warps is modelled warp by warp (each warp reads, syncs and arrives on its own), so that an
/// arrival that lets another role give back memory before the last warp read it is found (E0312).
fn programs(prog: &RoleProgram, trips: u64) -> Vec<Program> {
    let mut out = Vec::new();
    for r in &prog.roles {
        let warps = (r.threads / 32).max(1);
        let list: Vec<Option<u32>> = if warps > 1 && per_warp(&r.ops) {
            (0..warps).map(Some).collect()
        } else {
            vec![None]
        };
        for warp in list {
            let mut ops = Vec::new();
            let env = Env {
                warp,
                threads: r.threads,
                ..Env::default()
            };
            flatten(prog, &r.ops, trips, env, &mut ops);
            out.push(Program {
                role: r.kind,
                warp,
                ops,
            });
        }
    }
    out
}

/// Whether a role's operations need it modelled warp by warp.
fn per_warp(ops: &[RpOp]) -> bool {
    ops.iter().any(|o| match o {
        RpOp::NamedSync { .. } => true,
        RpOp::Arrive { by, .. } => matches!(by, crate::lower::ThreadSet::First(_)),
        RpOp::Loop { body, .. } | RpOp::Elect { body } => per_warp(body),
        _ => false,
    })
}

/// The model check's view of `prog` with `trips` K iterations, one line per mbarrier operation of
/// each role (re-init, wait with parity and meant phase, arrival with weight): what the model
/// simulates, for tests that compare two programs' synchronisation.
pub fn model_text(prog: &RoleProgram, trips: u64) -> String {
    programs(prog, trips)
        .iter()
        .map(|p| {
            let ops: Vec<String> = p
                .ops
                .iter()
                .map(|o| match o {
                    Op::Reinit(b) => format!("reinit {b}"),
                    Op::Sync { id, parties, .. } => format!("bar.sync {id} x{parties}"),
                    Op::Read { res, .. } => format!("read {res:?}"),
                    Op::Reuse { res } => format!("give back {res:?}"),
                    Op::Wait {
                        bar,
                        parity,
                        expect,
                        ..
                    } => format!("wait {bar} parity {parity} phase {expect:?}"),
                    Op::Arrive {
                        bar,
                        weight,
                        is_async,
                    } => format!(
                        "arrive {bar} x{weight}{}",
                        if *is_async { " async" } else { "" }
                    ),
                })
                .collect();
            format!("{}: {}\n", p.role, ops.join("; "))
        })
        .collect()
}

/// The loop variables in scope.
#[derive(Clone, Copy, Default)]
struct Env {
    tile: u64,
    k: u64,
    /// The warp of the role, when modelled warp by warp.
    warp: Option<u32>,
    /// The role's threads.
    threads: u32,
}

/// The ordinal, parity and expected phase of a wait from phase `start` on `b`.
fn slot(prog: &RoleProgram, b: &BarRef, env: Env) -> (usize, u64) {
    let f = prog.barrier(b.bar);
    let i = match b.index {
        Index::Fixed(i) => u64::from(i),
        Index::Iter(LoopKind::Tiles) => env.tile,
        Index::Iter(LoopKind::KIters) => env.k,
    };
    let slots = u64::from(f.slots.max(1));
    (f.first + (i % slots) as usize, i / slots)
}

/// Appends the mbarrier operations of `ops` run with `trips` K iterations: waits keep their
/// parities and the phase they mean, thread arrivals weigh the threads that execute them, TMA
/// loads and commits are one asynchronous arrival, everything else is no operation of the model.
fn flatten(prog: &RoleProgram, ops: &[RpOp], trips: u64, env: Env, out: &mut Vec<Op>) {
    for op in ops {
        match op {
            RpOp::Reinit { ordinals } => out.extend(ordinals.iter().map(|&o| Op::Reinit(o))),
            RpOp::Wait { bar, start, site } => {
                let (ordinal, lap) = slot(prog, bar, env);
                out.push(Op::Wait {
                    bar: ordinal,
                    parity: u32::from(*start) ^ (lap & 1) as u32,
                    expect: if *start == 1 {
                        lap.checked_sub(1)
                    } else {
                        Some(lap)
                    },
                    site: Site {
                        what: site.what,
                        span: site.span,
                    },
                });
            }
            RpOp::Arrive { bar, by, threads } => {
                let weight = match env.warp {
                    Some(w) => by.in_warp(w, env.threads),
                    None => *threads,
                };
                if weight > 0 {
                    out.push(Op::Arrive {
                        bar: slot(prog, bar, env).0,
                        weight: i64::from(weight),
                        is_async: false,
                    });
                }
            }
            RpOp::NamedSync { id, threads, span } => {
                if env.warp.is_some() {
                    out.push(Op::Sync {
                        id: *id,
                        parties: threads / 32,
                        site: Site {
                            what: "syncs the named barrier",
                            span: *span,
                        },
                    });
                }
            }
            RpOp::StageScales { bar, .. } => out.push(Op::Arrive {
                bar: slot(prog, bar, env).0,
                weight: 1,
                is_async: false,
            }),
            RpOp::TmaLoad { bar, .. } | RpOp::Commit { bar } => out.push(Op::Arrive {
                bar: slot(prog, bar, env).0,
                weight: 1,
                is_async: true,
            }),
            RpOp::Step(step) => out.extend(step_effect(step)),
            RpOp::Elect { body } => flatten(prog, body, trips, env, out),
            RpOp::Loop { kind, body } => {
                let n = match kind {
                    LoopKind::Tiles => u64::from(prog.tiles),
                    LoopKind::KIters => trips,
                };
                for i in 0..n {
                    let env = match kind {
                        LoopKind::Tiles => Env { tile: i, ..env },
                        LoopKind::KIters => Env { k: i, ..env },
                    };
                    flatten(prog, body, trips, env, out);
                }
            }
            RpOp::EarlyExit {
                bar,
                weight,
                is_async,
                ..
            } => {
                if trips == 0 {
                    out.push(Op::Arrive {
                        bar: slot(prog, bar, env).0,
                        weight: *weight,
                        is_async: *is_async,
                    });
                }
            }
            RpOp::Drain { bar, span } => {
                let f = prog.barrier(*bar);
                let laps = trips.div_ceil(u64::from(f.slots.max(1)));
                if laps == 0 {
                    continue;
                }
                for s in 0..f.slots as usize {
                    out.push(Op::Wait {
                        bar: f.first + s,
                        parity: ((laps - 1) & 1) as u32,
                        expect: Some(laps - 1),
                        site: Site {
                            what: "drains the empty barrier",
                            span: *span,
                        },
                    });
                }
            }
        }
    }
}

/// What an engine step does to memory another role gives back: the consumer's TMEM load and
/// SMEM reads are reads, the launcher's dealloc and page release give the memory back.
fn step_effect(step: &Step) -> Option<Op> {
    let read = |res, what, span| {
        Some(Op::Read {
            res,
            site: Site { what, span },
        })
    };
    match step {
        Step::AccLoad { span, .. } => {
            read(Resource::Tmem, "loads the accumulator from TMEM", *span)
        }
        Step::StageMma { span, .. } => read(Resource::Pages, "reads the stage's SMEM", *span),
        Step::Epilogue {
            smem: true, span, ..
        } => read(Resource::Pages, "reads the scratch region", *span),
        Step::TmemDealloc => Some(Op::Reuse {
            res: Resource::Tmem,
        }),
        Step::PageRelease | Step::ConsumerPageRelease => Some(Op::Reuse {
            res: Resource::Pages,
        }),
        _ => None,
    }
}

/// Phases each barrier must complete in a task of `trips` iterations: one per one-shot; for a
/// channel slot, the uses of that slot (a TMEM channel is used once per tile, a ring once per
/// tile and trip); none for a barrier the target does not use.
fn expected_phases(ir: &TaskIr, prog: &RoleProgram, trips: u64) -> Vec<u64> {
    let tiles = u64::from(prog.tiles);
    prog.ordinals()
        .map(|(_, b, s)| match b.source {
            _ if !b.used => 0,
            BarrierSource::Sem(_) | BarrierSource::PagesReady => 1,
            BarrierSource::Full(h) | BarrierSource::Empty(h) => {
                let ch = &ir.channels[h];
                let d = u64::from(ch.depth.max(1));
                let uses = if matches!(ch.storage, ChannelStorageIr::Tmem) {
                    tiles
                } else {
                    trips * tiles
                };
                let s = u64::from(s);
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

/// Runs the model check of each target's program (`progs`, with that target's ordinal table).
/// Returns one diagnostic per distinct fault (smallest trip count first); a fault of one target
/// only says which.
pub(super) fn check(ir: &TaskIr, ordinals: &[Ordinal], progs: &[RoleProgram], sink: &mut Sink) {
    let mut all: Vec<(Diagnostic, Vec<crate::ir::Target>)> = Vec::new();
    // Targets whose programs (at three trip counts), init counts and least trip count agree
    // share one model check: its diagnostics, by that key.
    type Seen = (Vec<Vec<Op>>, Vec<i64>, u64, Vec<Diagnostic>);
    let mut seen_models: Vec<Seen> = Vec::new();
    for prog in progs {
        // This target's ordinal table (its init counts: sm_90a's ring empties count 128).
        let table = &crate::lower::target::table(ir, ordinals, prog.target);
        let counts: Vec<i64> = table.iter().map(|o| o.count).collect();
        let key: Vec<Vec<Op>> = (prog.min_trips..=prog.min_trips + 2)
            .flat_map(|t| programs(prog, t).into_iter().map(|p| p.ops))
            .collect();
        let diags = match seen_models
            .iter()
            .find(|(k, c, m, _)| *k == key && *c == counts && *m == prog.min_trips)
        {
            Some((_, _, _, d)) => d.clone(),
            None => {
                let d = check_one(ir, prog, table);
                seen_models.push((key, counts, prog.min_trips, d.clone()));
                d
            }
        };
        for d in diags {
            match all
                .iter_mut()
                .find(|(x, _)| x.message == d.message && x.code == d.code)
            {
                Some((_, ts)) => ts.push(prog.target),
                None => all.push((d, vec![prog.target])),
            }
        }
    }
    for (d, ts) in all {
        if ts.len() < progs.len() {
            let names: Vec<&str> = ts.iter().map(|t| t.as_str()).collect();
            sink.push(d.note(format!("in the {} lowering", names.join(" and "))));
        } else {
            sink.push(d);
        }
    }
}

/// The model check of one target's program with that target's ordinal table
/// (`lower::target::table`): one diagnostic per distinct fault.
pub fn check_one(ir: &TaskIr, prog: &RoleProgram, table: &[Ordinal]) -> Vec<Diagnostic> {
    if table.is_empty() {
        return Vec::new();
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
    let hi = max_trips.max(prog.min_trips);
    let by_trips: Vec<Vec<Program>> = (0..=hi).map(|t| programs(prog, t)).collect();
    let n = by_trips[0].len();
    // Every order with round-robin and greedy stepping; with the first order, each warp modelled
    // on its own also lagging behind the others (the order barely matters when one waits).
    let mut schedules: Vec<(Vec<usize>, Interleave)> = Vec::new();
    for (k, order) in orders(n).into_iter().enumerate() {
        for il in [Interleave::RoundRobin, Interleave::Greedy] {
            schedules.push((order.clone(), il));
        }
        if k == 0 {
            for i in (0..n).filter(|&i| by_trips[0][i].warp.is_some()) {
                schedules.push((order.clone(), Interleave::Laggard(i)));
            }
        }
    }
    // Two consecutive tasks on the same ring slot: the first task's run, with its asynchronous
    // arrivals landing late, depends on its own trips and the schedule only; it is run once.
    let depth = u64::from(ir.stages.map_or(1, |(s, _)| s));
    let mut previous: Vec<u64> = vec![0, 1, depth.saturating_sub(1), depth, depth + 1];
    previous.retain(|&p| p >= prog.min_trips && p <= hi);
    previous.sort_unstable();
    previous.dedup();
    let after_first: Vec<Vec<Option<Machine>>> = schedules
        .iter()
        .map(|(order, il)| {
            previous
                .iter()
                .map(|&prev| {
                    let mut m = Machine::new(&counts);
                    // A faulty first task is reported by the single-task runs.
                    match m.run_task(&by_trips[prev as usize], order, *il, Delivery::Lazy) {
                        None => Some(m),
                        Some(_) => None,
                    }
                })
                .collect()
        })
        .collect();
    for trips in prog.min_trips..=hi {
        let progs = &by_trips[trips as usize];
        let expected = expected_phases(ir, prog, trips);
        for (si, (order, il)) in schedules.iter().enumerate() {
            // One task alone, arrivals delivered at once: deadlocks, flips, accounting.
            let mut m = Machine::new(&counts);
            if let Some(f) = m.run_task(progs, order, *il, Delivery::Immediate) {
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
            for (bar, ((done, pending), want)) in m
                .phases()
                .into_iter()
                .zip(expected.iter().copied())
                .enumerate()
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
            for (pi, &prev) in previous.iter().enumerate() {
                let Some(mut m) = after_first[si][pi].clone() else {
                    continue;
                };
                if let Some(f) = m.run_task(progs, order, *il, Delivery::Lazy) {
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
    findings.iter().map(|f| diagnostic(ir, table, f)).collect()
}

/// One report per problem: a deadlock or flip per waiting site, an accounting error per barrier.
fn fault_key(f: &Fault) -> (u8, usize, crate::span::Span) {
    match f {
        Fault::Deadlock { site, .. } => (0, 0, site.span),
        Fault::SyncDeadlock { site, .. } => (3, 0, site.span),
        Fault::UseAfterRelease { site, .. } => (4, 0, site.span),
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
        Fault::UseAfterRelease {
            role,
            warp,
            res,
            site,
        } => {
            let (what, giver) = match res {
                Resource::Tmem => ("TMEM", "the launcher deallocated it"),
                Resource::Pages => ("the task's SMEM pages", "the launcher released them"),
            };
            let who = match warp {
                Some(w) => format!("warp {w} of the {role}"),
                None => format!("the {role}"),
            };
            Diagnostic::error(
                codes::USE_AFTER_RELEASE,
                format!("at {when}, {who} reads {what} after {giver}: an arrival let the launcher go on before every reader was done"),
            )
            .primary(site.span, format!("{who} {} here", site.what))
            .note("an arrival from fewer threads than the role reads with completes the phase as soon as those threads arrive; the other warps may still be reading")
            .help("arrive from every reading thread (`threads 128`), or from a subset after a named barrier over all readers: `threads 32 after B` with `barrier B = named(id, threads 128)`")
        }
        Fault::SyncDeadlock {
            role,
            id,
            parties,
            arrived,
            site,
        } => Diagnostic::error(
            codes::DEADLOCK,
            format!("deadlock at {when}: the {role}'s named barrier {id} waits for {parties} warps, but {arrived} reach it"),
        )
        .primary(site.span, format!("the {role} {} here", site.what))
        .help("every warp the barrier counts must reach it: check the waits before it"),
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
