//! Benchmarks of the checker: `mpkc check` on the whole embedded stdlib (parse, sema, every
//! rule, the planner and the protocol model check). Target: under 50 ms.

use criterion::{criterion_group, criterion_main, Criterion};
use mpkc::driver::{check_source, stdlib};
use mpkc::sema::SemaOptions;
use mpkc::valid::CheckOptions;

fn check_stdlib(c: &mut Criterion) {
    let sources = stdlib::sources();
    c.bench_function("check the whole stdlib", |b| {
        b.iter(|| {
            for s in &sources {
                let r = check_source(s, &SemaOptions::default(), &CheckOptions::default());
                assert!(r.diags.is_empty());
                std::hint::black_box(r);
            }
        })
    });
    let linear = sources
        .iter()
        .find(|s| s.path.ends_with("linear_sm100_v2.mpk"))
        .cloned();
    if let Some(linear) = linear {
        c.bench_function(
            "check linear_sm100_v2 (model check of 22 ordinals, 0-7 trips)",
            |b| {
                b.iter(|| {
                    std::hint::black_box(check_source(
                        &linear,
                        &SemaOptions::default(),
                        &CheckOptions::default(),
                    ))
                })
            },
        );
    }
}

criterion_group!(benches, check_stdlib);
criterion_main!(benches);
