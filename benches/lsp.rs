//! The language server's latencies.
//!
//! - From a change to its diagnostics: [`analyse`] (the whole analysis of the new text through
//!   the CLI's entry point, plus the symbol index and the conversion to LSP diagnostics with
//!   UTF-16 ranges) on stdlib contracts, clean and over budget. Target: under 50 ms for a
//!   stdlib-sized contract.
//! - Under load, through the session loop in-process ([`serve`] on channels): 2,000 changes of
//!   the house linear with a hover after each, until the last version's diagnostics; and a 5 MB
//!   contract (3,113 house linears): one change until its diagnostics, a request answered while
//!   it is analysed, a newer change until the running analysis is abandoned (during the parse
//!   and during the checks), `exit` and the end of input while it is analysed until the loop
//!   returns.
//! - Long lines (issue 9, hostile finding 2): UTF-16 conversions of every item of one line, and
//!   the outline of tasks on one line, at 1x and 10x.

#[path = "../tests/support/hostile_inputs.rs"]
mod hostile_inputs;

use criterion::{criterion_group, criterion_main, Criterion};
use crossbeam_channel::{Receiver, Sender};
use lsp_server::{Message, Notification, Request, RequestId};
use mpkc::driver::cancel::Token;
use mpkc::driver::stdlib;
use mpkc::lsp::analysis::analyse;
use mpkc::lsp::serve;
use mpkc::lsp::sync::Pending;
use mpkc::lsp::transport::{Incoming, Outgoing};
use serde_json::{json, Value};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

fn text(f: &str) -> String {
    stdlib::sources()
        .into_iter()
        .find(|s| s.path.ends_with(f))
        .unwrap()
        .text
}

fn pending(name: &str, version: i32, text: &str) -> Pending {
    let uri: lsp_types::Uri = format!("file:///bench/{name}").parse().unwrap();
    Pending {
        key: uri.as_str().to_string(),
        uri,
        version,
        text: Arc::new(text.to_string()),
    }
}

fn change_to_diagnostics(c: &mut Criterion) {
    let house = text("linear_sm100_v2.mpk");
    let over = house.replace("stages 6", "stages 7");
    let fp8 = text("linear_fp8_blockscale.mpk");
    let token = Token::new();
    for (name, p) in [
        ("linear_sm100_v2", pending("l.mpk", 1, &house)),
        (
            "linear_sm100_v2 at 7 stages (E0103)",
            pending("l.mpk", 2, &over),
        ),
        (
            "linear_fp8_blockscale (5 instances)",
            pending("f.mpk", 1, &fp8),
        ),
    ] {
        c.bench_function(&format!("lsp change -> diagnostics: {name}"), |b| {
            b.iter(|| std::hint::black_box(analyse(&p, &token)))
        });
    }
}

/// A session loop on channels.
struct Session {
    tx: Option<Sender<Incoming>>,
    rx: Receiver<Outgoing>,
    server: Option<JoinHandle<u8>>,
    next: i32,
}

impl Session {
    fn start() -> Session {
        let (tx, in_rx) = crossbeam_channel::unbounded();
        let (out_tx, rx) = crossbeam_channel::unbounded();
        let server = std::thread::spawn(move || serve(in_rx, &out_tx));
        let mut s = Session {
            tx: Some(tx),
            rx,
            server: Some(server),
            next: 1,
        };
        s.request("initialize", json!({"capabilities": {}}));
        s.notify("initialized", json!({}));
        s
    }

    fn notify(&self, method: &str, params: Value) {
        let n = Notification::new(method.into(), params);
        let _ = self
            .tx
            .as_ref()
            .unwrap()
            .send(Incoming::Msg(Message::Notification(n)));
    }

    fn send_request(&mut self, method: &str, params: Value) -> RequestId {
        self.next += 1;
        let id = RequestId::from(self.next);
        let r = Request::new(id.clone(), method.into(), params);
        let _ = self
            .tx
            .as_ref()
            .unwrap()
            .send(Incoming::Msg(Message::Request(r)));
        id
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params);
        loop {
            if let Ok(Outgoing::Msg(Message::Response(r))) = self.rx.recv() {
                if r.id == id {
                    return r.response_result.unwrap_or(Value::Null);
                }
            }
        }
    }

    fn stat(&mut self, name: &str) -> u64 {
        self.request(mpkc::lsp::STATS, Value::Null)[name]
            .as_u64()
            .unwrap_or(0)
    }

    fn open(&self, uri: &str, text: &str) {
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "mpk", "version": 1, "text": text}}),
        );
    }

    fn change(&self, uri: &str, version: i32, text: &str) {
        self.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]}),
        );
    }

    fn wait_diagnostics(&self, version: i32) {
        loop {
            if let Ok(Outgoing::Msg(Message::Notification(n))) = self.rx.recv() {
                if n.method == "textDocument/publishDiagnostics" && n.params["version"] == version {
                    return;
                }
            }
        }
    }

    fn wait_stat(&mut self, name: &str, at_least: u64) {
        while self.stat(name) < at_least {
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// Waits until `n` analyses ended (abandoned, or finished when the change came too late).
    fn wait_ended(&mut self, n: u64) {
        while ["cancelled", "finished", "failed"]
            .iter()
            .map(|k| self.stat(k))
            .sum::<u64>()
            < n
        {
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// Sends `exit` (or ends the input) and returns how long the loop took to return.
    fn end(mut self, exit: bool) -> Duration {
        let t = Instant::now();
        if exit {
            self.notify("exit", Value::Null);
        } else {
            drop(self.tx.take());
        }
        let _ = self.server.take().unwrap().join();
        t.elapsed()
    }
}

/// True under `cargo bench` (criterion gets `--bench`); `cargo test --benches` runs each
/// benchmark once as a test, in a debug build, where the big document is cut to 100 KB.
fn benching() -> bool {
    std::env::args().any(|a| a == "--bench")
}

/// About 5 MB of contract: house linears under distinct task names (3,113 tasks).
fn five_mb() -> String {
    let size = if benching() { 5_000_000 } else { 100_000 };
    let house = text("linear_sm100_v2.mpk");
    let mut out = String::new();
    let mut i = 0;
    while out.len() < size {
        out.push_str(&house.replace("task linear_sm100_v2", &format!("task lin_{i}")));
        i += 1;
    }
    out
}

fn churn(c: &mut Criterion) {
    let house = text("linear_sm100_v2.mpk");
    let over = house.replace("stages 6", "stages 7");
    let uri = "file:///bench/churn.mpk";
    c.bench_function(
        "lsp 2,000 changes with a hover after each -> the last version's diagnostics",
        |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let mut s = Session::start();
                    s.open(uri, &house);
                    s.wait_diagnostics(1);
                    let t = Instant::now();
                    for v in 2..=2001 {
                        s.change(uri, v, if v % 2 == 0 { &over } else { &house });
                        s.send_request(
                            "textDocument/hover",
                            json!({"textDocument": {"uri": uri}, "position": {"line": 4, "character": 6}}),
                        );
                    }
                    s.wait_diagnostics(2001);
                    total += t.elapsed();
                    s.end(true);
                }
                total
            })
        },
    );
}

fn five_mb_document(c: &mut Criterion) {
    let big = five_mb();
    let uri = "file:///bench/five.mpk";
    let mut g = c.benchmark_group("lsp 5 MB contract");
    // One iteration per sample: an analysis of 5 MB takes seconds.
    g.sampling_mode(criterion::SamplingMode::Flat);
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(5));
    // One analysis of the whole document, from the change to its diagnostics.
    g.bench_function("change -> diagnostics", |b| {
        b.iter_custom(|iters| {
            let s = Session::start();
            s.open(uri, &big);
            let mut total = Duration::ZERO;
            for i in 0..iters {
                let v = 2 + i as i32;
                let t = Instant::now();
                s.change(uri, v, &big);
                s.wait_diagnostics(v);
                total += t.elapsed();
            }
            s.end(true);
            total
        })
    });
    // Requests while the document is analysed: answered at once.
    g.bench_function("documentSymbol answered during its analysis", |b| {
        let mut s = Session::start();
        s.open(uri, &big);
        s.wait_stat("started", 1);
        b.iter(|| {
            s.request(
                "textDocument/documentSymbol",
                json!({"textDocument": {"uri": uri}}),
            )
        });
        s.end(true);
    });
    // A newer change while the analysis runs, until the running analysis is abandoned: at once
    // (while the text is parsed, which cannot be interrupted: about 2 s for 5 MB) and 6 s in
    // (while the task instances are checked: it stops at the next one).
    for (when, delay) in [("at once", 0), ("6 s in", 6)] {
        g.bench_function(
            format!("newer change {when} -> running analysis abandoned"),
            |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    let mut s = Session::start();
                    s.open(uri, &big);
                    for i in 0..iters {
                        let v = 2 + i as i32;
                        s.wait_stat("started", i + 1);
                        if benching() {
                            std::thread::sleep(Duration::from_secs(delay));
                        }
                        let t = Instant::now();
                        s.change(uri, v, &big);
                        s.wait_ended(i + 1);
                        total += t.elapsed();
                    }
                    s.end(true);
                    total
                })
            },
        );
    }
    for (name, exit) in [("exit", true), ("end of input", false)] {
        g.bench_function(
            format!("{name} during the analysis -> the loop returns"),
            |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let mut s = Session::start();
                        s.open(uri, &big);
                        s.wait_stat("started", 1);
                        total += s.end(exit);
                    }
                    total
                })
            },
        );
    }
    g.finish();
}

/// Issue 9's hostile finding 2, long lines: the UTF-16 position of every item of one line
/// (1,000 and 10,000 items) and back, and the outline of tasks written on one line (100 and
/// 1,000 tasks). Each should take about 10x as long at 10x the input.
fn long_lines(c: &mut Criterion) {
    use mpkc::lsp::convert::LineIndex;
    use mpkc::lsp::document::Document;
    use mpkc::lsp::nav::document_symbols;
    let mut g = c.benchmark_group("long lines");
    g.sample_size(10);
    for n in [1_000, 10_000] {
        let text = hostile_inputs::many_params_line(n).replace("; param", "; /* é */ param");
        let starts: Vec<usize> = text.match_indices("param q").map(|(i, _)| i).collect();
        g.bench_function(
            format!("position and offset of {n} items on one line"),
            |b| {
                b.iter(|| {
                    let lines = LineIndex::new(&text);
                    starts
                        .iter()
                        .map(|&at| lines.offset(&text, lines.position(&text, at)))
                        .sum::<usize>()
                })
            },
        );
    }
    let token = Token::new();
    for n in [100, 1_000] {
        let doc = Document::analyze("t.mpk", hostile_inputs::tasks_one_line(n), &token).unwrap();
        g.bench_function(format!("documentSymbol of {n} tasks on one line"), |b| {
            b.iter(|| document_symbols(&doc).len())
        });
    }
    g.finish();
}

criterion_group!(
    benches,
    change_to_diagnostics,
    churn,
    five_mb_document,
    long_lines
);
criterion_main!(benches);
