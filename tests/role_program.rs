//! The role program (issue 11): one per declared target of every stdlib unit. Its listing is a
//! snapshot (`snapshots/lower/<target>/<unit>.snap`); the synchronisation the model check proved (the protocol-only program, lowered
//! before the linear engine's binding is known) is the synchronisation of the program the
//! kernels render; every barrier a target uses has both a waiter and an arrival in it.

use mpkc::driver::{check_source, stdlib};
use mpkc::lower::{self, BarRef, Op, RoleProgram};
use mpkc::sema::SemaOptions;
use mpkc::valid::{model_text, CheckOptions, CheckedTask};

fn units() -> Vec<CheckedTask> {
    stdlib::sources()
        .iter()
        .flat_map(|s| check_source(s, &SemaOptions::default(), &CheckOptions::default()).tasks)
        .collect()
}

fn pipelines() -> Vec<CheckedTask> {
    units()
        .into_iter()
        .filter(|t| t.linear().is_some())
        .collect()
}

#[test]
fn one_program_per_declared_target() {
    for t in units() {
        let targets: Vec<_> = t.ir.targets.iter().map(|x| x.target).collect();
        let got: Vec<_> = t.programs.iter().map(|p| p.target).collect();
        assert_eq!(got, targets, "{}", t.ir.unit_name());
        for p in &t.programs {
            assert_eq!(p.lowered(), t.linear().is_some(), "{}", t.ir.unit_name());
            assert_eq!(p.ordinal_count(), t.ordinals.len(), "{}", t.ir.unit_name());
        }
    }
}

#[test]
fn dumps() {
    let mut n = 0;
    for t in pipelines() {
        for p in &t.programs {
            n += 1;
            let dir = format!("../snapshots/lower/{}", p.target.as_str());
            insta::with_settings!({snapshot_path => dir, prepend_module_to_snapshot => false, omit_expression => true}, {
                insta::assert_snapshot!(t.ir.unit_name(), lower::dump::dump(p, &t.ir));
            });
        }
    }
    let expected: usize = pipelines().iter().map(|t| t.ir.targets.len()).sum();
    assert_eq!(n, expected);
}

/// The model check runs on the protocol-only program; the kernels render the lowered one. The
/// engine's work may add no wait, arrival or re-init, for any trip count.
#[test]
fn lowering_adds_no_synchronisation() {
    for t in pipelines() {
        for p in &t.programs {
            let bare = lower::lower(&t.ir, &t.ordinals, p.target, None);
            assert!(!bare.lowered());
            // The lowered program adds the engine's memory effects (reads, give-backs), no
            // synchronisation.
            let sync = |t: String| {
                t.lines()
                    .map(|l| {
                        l.split("; ")
                            .filter(|op| !op.starts_with("read ") && !op.starts_with("give back "))
                            .collect::<Vec<_>>()
                            .join("; ")
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            for trips in 0..=5 {
                assert_eq!(
                    sync(model_text(&bare, trips)),
                    sync(model_text(p, trips)),
                    "{} on {}: {trips} trips",
                    t.ir.unit_name(),
                    p.target.as_str()
                );
            }
        }
    }
}

fn refs(ops: &[Op], waits: &mut Vec<BarRef>, arrivals: &mut Vec<BarRef>) {
    for op in ops {
        match op {
            Op::Wait { bar, .. } => waits.push(*bar),
            Op::Arrive { bar, .. }
            | Op::TmaLoad { bar, .. }
            | Op::StageScales { bar, .. }
            | Op::Commit { bar } => arrivals.push(*bar),
            Op::Loop { body, .. } | Op::Elect { body } => refs(body, waits, arrivals),
            _ => {}
        }
    }
}

/// Every barrier family a target uses is waited and arrived by the roles the table names;
/// one it does not use (sm_90a's TMEM accumulator) is neither.
#[test]
fn every_used_barrier_is_waited_and_arrived() {
    for t in pipelines() {
        for p in &t.programs {
            check_barriers(&t, p);
        }
    }
}

fn check_barriers(t: &CheckedTask, p: &RoleProgram) {
    for (i, b) in p.barriers.iter().enumerate() {
        let id = lower::BarrierId(i as u16);
        let by = |role| {
            let (mut w, mut a) = (Vec::new(), Vec::new());
            if let Some(r) = p.role(role) {
                refs(&r.ops, &mut w, &mut a);
            }
            (w.iter().any(|x| x.bar == id), a.iter().any(|x| x.bar == id))
        };
        let (waited, _) = by(b.waiter);
        let (_, arrived) = by(b.producer);
        let what = format!("{} on {}: {}", t.ir.unit_name(), p.target.as_str(), b.label);
        assert_eq!(waited, b.used, "{what}: waited by the {}", b.waiter);
        assert_eq!(arrived, b.used, "{what}: arrived by the {}", b.producer);
    }
}

/// Issue 11, case 3: `consumer_done` arrived by 32 of the 128 consumer threads. Without a named
/// barrier over all four warps first, the launcher may give TMEM back while warps 1-3 still
/// load the accumulator (E0312); with `bar.sync` over 128 threads before warp 0's arrival the
/// program is clean. The model checks the program the kernels render, warp by warp.
#[test]
fn a_partial_arrival_needs_the_named_barrier_first() {
    use mpkc::ir::{RoleKind, Target};
    use mpkc::lower::{BarrierSource, ThreadSet};
    let t = pipelines()
        .into_iter()
        .find(|t| t.ir.unit_name() == "linear_sm100_v2")
        .unwrap();
    let table = lower::target::table(&t.ir, &t.ordinals, Target::Sm100a);
    let base = t.program(Target::Sm100a).unwrap().clone();
    let done = base
        .barriers
        .iter()
        .position(|b| b.label == "consumer_done")
        .unwrap();
    assert!(matches!(base.barriers[done].source, BarrierSource::Sem(_)));
    let partial = |with_sync: bool| {
        let mut p = base.clone();
        p.barriers[done].counts = vec![32];
        let table: Vec<_> = table
            .iter()
            .cloned()
            .map(|mut o| {
                if o.ordinal == p.barriers[done].first {
                    o.count = 32;
                }
                o
            })
            .collect();
        let consumer = p
            .roles
            .iter_mut()
            .find(|r| r.kind == RoleKind::Consumer)
            .unwrap();
        let at = consumer
            .ops
            .iter()
            .position(|o| matches!(o, Op::Arrive { bar, .. } if usize::from(bar.bar.0) == done))
            .unwrap();
        let Op::Arrive { bar, .. } = consumer.ops[at].clone() else {
            unreachable!()
        };
        consumer.ops[at] = Op::Arrive {
            bar,
            by: ThreadSet::First(32),
            threads: 32,
        };
        if with_sync {
            consumer.ops.insert(
                at,
                Op::NamedSync {
                    id: 1,
                    threads: 128,
                    span: t.ir.span,
                },
            );
        }
        mpkc::valid::model_check(&t.ir, &p, &table)
    };
    let codes = |d: Vec<mpkc::diag::Diagnostic>| d.iter().map(|d| d.code).collect::<Vec<_>>();
    assert!(codes(mpkc::valid::model_check(&t.ir, &base, &table)).is_empty());
    let without = partial(false);
    assert!(
        codes(without.clone()).contains(&"E0312"),
        "{:?}",
        without.iter().map(|d| &d.message).collect::<Vec<_>>()
    );
    assert!(
        codes(partial(true)).is_empty(),
        "{:?}",
        partial(true).iter().map(|d| &d.message).collect::<Vec<_>>()
    );
}
