//! Benchmarks of diagnostics at scale: `check` plus rendering every diagnostic (human and JSON,
//! as `mpkc check` and `mpkc check --message-format json` do) of contracts with one diagnostic
//! per repeated piece, at 1x and 10x the input: duplicate lines (2,000 and 20,000), unaddressed
//! regions (800 and 8,000), tasks written on one line (16 and 160). The file is indexed once and
//! each diagnostic renders a bounded excerpt, so 10x the input should take about 10x the time
//! (issue 9 allows at most 20x).

#[path = "../tests/support/big_inputs.rs"]
mod big_inputs;

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
    g.finish();
}

criterion_group!(benches, diagnostics);
criterion_main!(benches);
