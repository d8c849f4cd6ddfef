//! The language server's latency from a change to its diagnostics: `Server::update` (the whole
//! analysis of the new text, as `mpkc check` runs it, plus the symbol index and the conversion to
//! LSP diagnostics with UTF-16 ranges) on stdlib contracts, clean and over budget. Target: under
//! 50 ms for a stdlib-sized contract.

use criterion::{criterion_group, criterion_main, Criterion};
use mpkc::driver::stdlib;
use mpkc::lsp::Server;

fn uri(name: &str) -> lsp_types::Uri {
    format!("file:///bench/{name}").parse().unwrap()
}

fn change_to_diagnostics(c: &mut Criterion) {
    let text = |f: &str| {
        stdlib::sources()
            .into_iter()
            .find(|s| s.path.ends_with(f))
            .unwrap()
            .text
    };
    let house = text("linear_sm100_v2.mpk");
    let over = house.replace("stages 6", "stages 7");
    let fp8 = text("linear_fp8_blockscale.mpk");
    let mut server = Server::default();
    c.bench_function("lsp change -> diagnostics: linear_sm100_v2", |b| {
        b.iter(|| std::hint::black_box(server.update(uri("l.mpk"), Some(1), house.clone())))
    });
    c.bench_function(
        "lsp change -> diagnostics: linear_sm100_v2 at 7 stages (E0103)",
        |b| b.iter(|| std::hint::black_box(server.update(uri("l.mpk"), Some(2), over.clone()))),
    );
    c.bench_function(
        "lsp change -> diagnostics: linear_fp8_blockscale (5 instances)",
        |b| b.iter(|| std::hint::black_box(server.update(uri("f.mpk"), Some(1), fp8.clone()))),
    );
}

criterion_group!(benches, change_to_diagnostics);
criterion_main!(benches);
