//! Coverage (issue 11 Deliver 3, E0014): over every clean contract of the tree (stdlib,
//! examples, the passing UI tests, the issue 11 cases, with the contracts mpkc derives), every
//! declaration `valid::declarations` enumerates has a consumer (an operation of some target's
//! role program, or a documented generated file). The enumeration destructures every IR struct,
//! so an item kind added to the IR without coverage does not compile; an item enumerated but
//! consumed by nothing fails here. And the check is not vacuous: dropping from the programs the
//! operations of any barrier family (a lowering that forgot a channel edge or a sem) leaves the
//! item uncovered.

use mpkc::driver::{check_sources, Source};
use mpkc::lower::{BarrierSource, Op, RoleProgram};
use mpkc::sema::SemaOptions;
use mpkc::valid::{consumers, declarations, CheckOptions, CheckedTask, Item};
use std::path::{Path, PathBuf};

fn files(dir: &Path, pass_only: bool, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, pass_only, out);
        } else if p.extension().is_some_and(|x| x == "mpk")
            && (!pass_only
                || p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("pass_"))
        {
            out.push(p);
        }
    }
}

/// Every clean task instance of the tree's contracts, with its file's length.
fn clean_tasks() -> Vec<(String, usize, CheckedTask)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths = Vec::new();
    files(&root.join("stdlib"), false, &mut paths);
    files(&root.join("examples"), false, &mut paths);
    files(&root.join("tests/ui"), true, &mut paths);
    files(&root.join("tests/cases/issue11"), false, &mut paths);
    paths.sort();
    let mut out = Vec::new();
    for p in paths {
        let text = std::fs::read_to_string(&p).unwrap();
        let src = Source {
            path: p.display().to_string(),
            text: text.clone(),
        };
        for c in check_sources(&[src], &SemaOptions::default(), &CheckOptions::default()) {
            for t in c.tasks {
                out.push((c.source.path.clone(), c.source.text.len(), t));
            }
        }
    }
    out
}

#[test]
fn every_declaration_of_every_clean_contract_is_consumed() {
    let tasks = clean_tasks();
    assert!(tasks.len() >= 40, "only {} clean tasks found", tasks.len());
    let mut problems = Vec::new();
    let mut seen_kinds = std::collections::HashSet::new();
    for (path, len, t) in &tasks {
        let found = consumers(&t.ir, t.binding.as_ref(), &t.programs);
        let decls = declarations(&t.ir);
        assert!(!decls.is_empty(), "{path}: no declarations");
        for d in decls {
            assert!(
                d.span.end <= *len && d.span.start <= d.span.end,
                "{path}: {} has span {:?} outside the file",
                d.label,
                d.span
            );
            seen_kinds.insert(std::mem::discriminant(&d.item));
            if !found.contains_key(&d.item) {
                problems.push(format!(
                    "{path} ({}): {} at {:?} has no consumer",
                    t.ir.unit_name(),
                    d.label,
                    d.span
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The tree declares most kinds of item: a walk that saw none would prove nothing.
    assert!(seen_kinds.len() >= 18, "{} item kinds", seen_kinds.len());
}

/// `ops` without the operations on barrier family `source` of `prog`.
fn strip(prog: &RoleProgram, ops: &[Op], source: BarrierSource) -> Vec<Op> {
    let on = |b: &mpkc::lower::BarRef| prog.barrier(b.bar).source == source;
    ops.iter()
        .filter_map(|op| match op {
            Op::Wait { bar, .. }
            | Op::Arrive { bar, .. }
            | Op::Commit { bar }
            | Op::TmaLoad { bar, .. }
            | Op::StageScales { bar, .. }
            | Op::EarlyExit { bar, .. }
                if on(bar) =>
            {
                None
            }
            Op::Drain { bar, .. } if prog.barrier(*bar).source == source => None,
            Op::Loop { kind, body } => Some(Op::Loop {
                kind: *kind,
                body: strip(prog, body, source),
            }),
            Op::Elect { body } => Some(Op::Elect {
                body: strip(prog, body, source),
            }),
            other => Some(other.clone()),
        })
        .collect()
}

#[test]
fn a_lowering_that_drops_a_barrier_family_is_caught() {
    let mut families = 0;
    for (path, _, t) in clean_tasks() {
        let Some(first) = t.programs.first() else {
            continue;
        };
        for b in &first.barriers {
            let item = match b.source {
                BarrierSource::Full(h) => Item::Full(h.index()),
                BarrierSource::Empty(h) => Item::Empty(h.index()),
                BarrierSource::Sem(h) => Item::Sem(h.index()),
                // The consumer-only page hand-off: not declared, nothing for coverage to name.
                BarrierSource::PagesReady => continue,
            };
            let progs: Vec<RoleProgram> = t
                .programs
                .iter()
                .map(|p| {
                    let mut p = p.clone();
                    let roles = p
                        .roles
                        .iter()
                        .map(|r| strip(&p, &r.ops, b.source))
                        .collect::<Vec<_>>();
                    for (r, ops) in p.roles.iter_mut().zip(roles) {
                        r.ops = ops;
                    }
                    p
                })
                .collect();
            let found = consumers(&t.ir, t.binding.as_ref(), &progs);
            // The accumulator channel is bound by the linear engine on every target (an
            // sm_90a-only contract needs it): its edges stay covered by the binding.
            let bound = t
                .linear()
                .is_some_and(|p| matches!(b.source, BarrierSource::Full(h) | BarrierSource::Empty(h) if h == p.acc));
            if bound {
                continue;
            }
            families += 1;
            assert!(
                !found.contains_key(&item),
                "{path} ({}): `{}` is still covered with its operations dropped: {:?}",
                t.ir.unit_name(),
                b.label,
                found.get(&item)
            );
        }
    }
    assert!(families >= 100, "only {families} barrier families mutated");
}
