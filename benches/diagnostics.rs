//! Benchmarks of diagnostics at scale: `check` plus rendering every diagnostic (human and JSON,
//! as `mpkc check` and `mpkc check --message-format json` do) of contracts with one diagnostic
//! per repeated piece, at 1x and 10x the input: duplicate lines (2,000 and 20,000), unaddressed
//! regions (800 and 8,000), tasks written on one line (16 and 160), and issue 9's hostile inputs:
//! one syntax error per one-line task (200 and 2,000 lines), one unresolved name per item of one
//! long line (300 and 3,000), and `check --predecessors all` (100 and 1,000 tasks). The file is indexed once and
//! each diagnostic renders a bounded excerpt, so 10x the input should take about 10x the time
//! (issue 9 allows at most 20x).

#[path = "../tests/support/big_inputs.rs"]
mod big_inputs;
#[path = "../tests/support/hostile_inputs.rs"]
mod hostile_inputs;

use criterion::{criterion_group, criterion_main, Criterion};
use mpkc::diag::{render_human, render_json, ColorMode, SourceFile};
use mpkc::driver::{check_source, Source};
use std::hint::black_box;
use std::time::Duration;

/// Checks `src` and renders all its diagnostics both ways; returns the bytes rendered.
fn check_and_render(src: &Source) -> usize {
    let c = check_source(src, &Default::default(), &Default::default());
    let file = SourceFile::new(&src.path, &src.text);
    c.diags
        .iter()
        .map(|d| render_human(d, &file, ColorMode::Never).len() + render_json(d, &file).len())
        .sum()
}

fn diagnostics(c: &mut Criterion) {
    let mut g = c.benchmark_group("diagnostics");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(10));
    type Input = (&'static str, fn(usize) -> Source, usize);
    let inputs: [Input; 3] = [
        ("duplicate lines", big_inputs::duplicate_lines, 2000),
        ("regions", big_inputs::many_regions, 800),
        ("tasks on one line", big_inputs::one_line, 16),
    ];
    for (name, make, base) in inputs {
        for scale in [1, 10] {
            let src = make(base * scale);
            g.bench_function(format!("check + render, {} {name}", base * scale), |b| {
                b.iter(|| black_box(check_and_render(&src)))
            });
        }
    }
    // Issue 9's hostile findings 1 and 2: one syntax error on each of many one-line tasks (the
    // recovery), and one unresolved name per item of one long line.
    type Hostile = (&'static str, fn(usize) -> String, usize);
    let hostile: [Hostile; 3] = [
        (
            "one-line tasks with a stray token",
            hostile_inputs::stray_token_lines,
            200,
        ),
        (
            "one-line tasks with a broken param",
            hostile_inputs::bad_param_lines,
            200,
        ),
        (
            "unresolved names on one line",
            hostile_inputs::many_errors_line,
            300,
        ),
    ];
    for (name, make, base) in hostile {
        for scale in [1, 10] {
            let src = Source {
                path: "hostile.mpk".into(),
                text: make(base * scale),
            };
            g.bench_function(format!("check + render, {} {name}", base * scale), |b| {
                b.iter(|| black_box(check_and_render(&src)))
            });
        }
    }
    g.finish();
}

/// Issue 9's hostile finding 3: `check --predecessors all` over tasks with six regions each
/// (the report of every task instance against every known release order).
fn predecessors(c: &mut Criterion) {
    use mpkc::driver::predecessors::report;
    let mut g = c.benchmark_group("predecessors");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(10));
    for n in [100, 1000] {
        let checked = check_source(
            &Source {
                path: "regions.mpk".into(),
                text: hostile_inputs::region_tasks(n),
            },
            &Default::default(),
            &Default::default(),
        );
        let known: Vec<(String, Vec<usize>)> = checked
            .tasks
            .iter()
            .map(|t| (t.ir.unit_name(), t.primary_plan().release_order.clone()))
            .collect();
        let tasks: Vec<_> = checked.tasks.iter().collect();
        g.bench_function(format!("report, {n} tasks with 6 regions"), |b| {
            b.iter(|| black_box(report(&tasks, &known).len()))
        });
    }
    g.finish();
}

criterion_group!(benches, diagnostics, predecessors);
criterion_main!(benches);
