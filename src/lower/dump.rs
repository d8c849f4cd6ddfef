//! A text listing of a [`RoleProgram`], one operation per line, for snapshots and reviews.

use super::program::*;
use crate::ir::{RoleKind, TaskIr};
use std::fmt::Write as _;

/// The operations of `role` in `p`, one per line, indented by nesting (loops, elect), tensors
/// named from `ir`.
pub fn role_text(p: &RoleProgram, ir: &TaskIr, role: RoleKind) -> String {
    let mut s = String::new();
    if let Some(r) = p.role(role) {
        ops(p, ir, &r.ops, 0, &mut s);
    }
    s
}

/// The program as text: the barrier table of its target, then each role's operations.
pub fn dump(p: &RoleProgram, ir: &TaskIr) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "target {} (min trips {}, tiles {}, {})",
        p.target.as_str(),
        p.min_trips,
        p.tiles,
        if p.lowered() {
            "lowered"
        } else {
            "protocol only"
        }
    );
    for b in &p.barriers {
        let _ = writeln!(
            s,
            "  bar {:<22} ordinals {}..{} count {:>3} {} -> {} ({}){}{}",
            b.label,
            b.first,
            b.first + b.slots as usize,
            b.count(0),
            b.producer,
            b.waiter,
            b.arrival.kind_str(),
            b.reinit.map_or(String::new(), |r| format!(", reinit {r}")),
            if b.used { "" } else { ", unused" }
        );
    }
    for r in &p.roles {
        let _ = writeln!(s, "  {} ({} threads):", r.kind, r.threads);
        ops(p, ir, &r.ops, 2, &mut s);
    }
    s
}

fn bar(p: &RoleProgram, b: &BarRef) -> String {
    let f = p.barrier(b.bar);
    match b.index {
        Index::Fixed(i) => format!("{}[{}]", f.label, i % f.slots.max(1)),
        Index::Iter(LoopKind::KIters) => format!("{}[it % {}]", f.label, f.slots),
        Index::Iter(LoopKind::Tiles) => format!("{}[tile % {}]", f.label, f.slots),
    }
}

fn ops(p: &RoleProgram, ir: &TaskIr, list: &[Op], depth: usize, s: &mut String) {
    let pad = "  ".repeat(depth);
    // A consumer-only role's ring uses follow its body step in the program, but the body makes
    // them (`ring.wait()` / `ring.release()` inside it).
    let mut after_body = false;
    for op in list {
        let _ = match op {
            Op::Reinit { ordinals } => writeln!(s, "{pad}reinit {ordinals:?}"),
            Op::Wait { bar: b, start, .. } => {
                writeln!(s, "{pad}wait {} from phase {start}", bar(p, b))
            }
            Op::Arrive {
                bar: b,
                by,
                threads,
            } => {
                writeln!(s, "{pad}arrive {} by {by:?} ({threads})", bar(p, b))
            }
            Op::TmaLoad {
                tensor,
                operand,
                bar: b,
                group,
                bytes,
                box_dims,
                coords,
                l2,
            } => writeln!(
                s,
                "{pad}tma `{}` ({operand:?}) box {box_dims:?} at ({}) -> group {group}, {} (+{bytes} B), l2 {:?}{}",
                ir.tensors[*tensor].name,
                coords.iter().map(|c| c.c_expr()).collect::<Vec<_>>().join(", "),
                bar(p, b),
                l2.default,
                l2.lever
                    .as_ref()
                    .map_or(String::new(), |(n, h)| {
                        // A lever that defaults on (W0603) sets the default build's policy.
                        let default_on = ir.levers.iter().any(|l| &l.name == n && l.default_on);
                        let default = if default_on { ", the default build: on" } else { "" };
                        format!(" ({h:?} with {n} on{default})")
                    })
            ),
            Op::StageScales { bar: b, group } => {
                writeln!(
                    s,
                    "{pad}stage scales -> group {group}, arrive {}",
                    bar(p, b)
                )
            }
            Op::Commit { bar: b } => match p.barrier(b.bar).arrival {
                // A consumer ring's full barrier: the loader body's expect_tx arrive, completed
                // by its bulk copies (`mpkc_ring.cuh`).
                crate::ir::ArrivalIr::Bulk(_) | crate::ir::ArrivalIr::Tma(_) => writeln!(
                    s,
                    "{pad}arrive.expect_tx {} (completed by the bulk copies)",
                    bar(p, b)
                ),
                _ => writeln!(s, "{pad}commit {}", bar(p, b)),
            },
            Op::NamedSync { id, threads, .. } => {
                writeln!(s, "{pad}bar.sync {id}, {threads}")
            }
            Op::Step(st) => writeln!(s, "{pad}{}", step(st)),
            Op::Loop { kind, body } => {
                let within = if after_body { " (in the body)" } else { "" };
                let _ = writeln!(s, "{pad}loop {kind:?}{within}:");
                ops(p, ir, body, depth + 1, s);
                Ok(())
            }
            Op::Elect { body } => {
                let _ = writeln!(s, "{pad}elect:");
                ops(p, ir, body, depth + 1, s);
                Ok(())
            }
            Op::EarlyExit { bar: b, weight, .. } => {
                writeln!(s, "{pad}early exit: arrive {} x{weight}", bar(p, b))
            }
            Op::Drain { bar: b, .. } => writeln!(s, "{pad}drain {}", p.barrier(*b).label),
        };
        after_body |= matches!(op, Op::Step(Step::Body));
    }
}

fn step(st: &Step) -> String {
    match st {
        Step::TmemAlloc { scratch } => format!("tmem alloc (address in group {scratch})"),
        Step::TmemDealloc => "tmem dealloc".to_string(),
        Step::StageMma { w, a, sf, mma, .. } => {
            let what = match mma {
                Some(m) => format!("{} x{} (m{} n{} k{})", m.ptx(), m.count, m.m, m.n, m.k),
                None => "stage mma".into(),
            };
            match sf {
                Some(sf) => format!("{what} (groups {w} x {a}, scales {sf})"),
                None => format!("{what} (groups {w} x {a})"),
            }
        }
        Step::AccLoad { scratch, .. } => format!("accumulator load (address in group {scratch})"),
        Step::EpilogueLoads { .. } => "epilogue inputs loaded into registers".to_string(),
        Step::Epilogue { smem, .. } => {
            format!(
                "epilogue{}",
                if *smem {
                    " (reads the scratch region)"
                } else {
                    ""
                }
            )
        }
        Step::PageRelease => "release the used pages".to_string(),
        Step::ConsumerPageRelease => {
            "release the used pages (every consumer thread's wgmmas waited, named barrier 8)"
                .to_string()
        }
        Step::PageAcquire => "page acquire (the loader's prefix: wait the used pages)".to_string(),
        Step::PagesFence => "proxy fence (async after generic, the pages)".to_string(),
        Step::PageFreeUnused => "wait and free the unused pages".to_string(),
        Step::DepWait => {
            "wait the dependency (`SEM_DEP_READY`, once: a K loop's first iteration)".to_string()
        }
        Step::RouteRead => "read the stage's expert from the route's ids".to_string(),
        Step::SyncWarp => "__syncwarp".to_string(),
        Step::Body => {
            "the body (the runtime's dependency prefix before it, its page suffix after it)"
                .to_string()
        }
    }
}
