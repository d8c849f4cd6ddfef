//! The session loop in-process ([`mpkc::lsp::serve`] on channels), counting analyses through
//! `mpkc/stats` (issue 9, item 11): a burst of changes with requests between them is analysed
//! once; a newer change cancels the running analysis; `exit` and the end of input return while
//! an analysis runs.

use crossbeam_channel::{Receiver, Sender};
use lsp_server::{Message, Notification, Request, RequestId};
use mpkc::lsp::transport::{Incoming, Outgoing};
use serde_json::{json, Value};
use std::thread::JoinHandle;
use std::time::Duration;

struct Session {
    tx: Option<Sender<Incoming>>,
    rx: Receiver<Outgoing>,
    server: Option<JoinHandle<u8>>,
    next: i32,
}

fn house() -> String {
    mpkc::driver::stdlib::sources()
        .into_iter()
        .find(|s| s.path.ends_with("linear_sm100_v2.mpk"))
        .unwrap()
        .text
}

/// The house linear with 2,000 instances: 60 KB that parse in a moment but take minutes to check
/// in a debug build (each instance is checked on its own), so an analysis of it never ends
/// during a test unless something waits for it, and its cancellation (between instances) is
/// quick.
fn heavy() -> String {
    let h = house();
    let end = h.rfind('}').unwrap();
    let instances: String = (0..2000)
        .map(|k| format!("  instance i{k}(m_real = {})\n", 1 + k % 16))
        .collect();
    format!("{}{instances}{}", &h[..end], &h[end..])
}

impl Session {
    /// A session whose first messages are `queued` (all in the channel before the loop starts,
    /// so that it sees them as one burst).
    fn start(queued: Vec<Incoming>) -> Session {
        let (tx, in_rx) = crossbeam_channel::unbounded();
        let (out_tx, rx) = crossbeam_channel::unbounded();
        for m in queued {
            tx.send(m).unwrap();
        }
        let server = std::thread::spawn(move || mpkc::lsp::serve(in_rx, &out_tx));
        Session {
            tx: Some(tx),
            rx,
            server: Some(server),
            next: 100,
        }
    }

    fn send(&self, m: Incoming) {
        self.tx.as_ref().unwrap().send(m).unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        self.send(req(id, method, params));
        loop {
            match self.recv() {
                Message::Response(r) if r.id == RequestId::from(id) => {
                    return r.response_result.expect("a result");
                }
                _ => {}
            }
        }
    }

    fn stats(&mut self) -> Value {
        self.request(mpkc::lsp::STATS, Value::Null)
    }

    fn recv(&self) -> Message {
        match self.rx.recv_timeout(Duration::from_secs(600)) {
            Ok(Outgoing::Msg(m)) => m,
            other => panic!("expected a message, got {other:?}"),
        }
    }

    /// The diagnostics published until those of `version` of `uri` (included), and how many
    /// responses came meanwhile.
    fn diagnostics_until(&self, uri: &str, version: i32) -> (Vec<Value>, usize) {
        let (mut seen, mut responses) = (Vec::new(), 0);
        loop {
            match self.recv() {
                Message::Notification(n) if n.method == "textDocument/publishDiagnostics" => {
                    let done = n.params["uri"] == uri && n.params["version"] == version;
                    seen.push(n.params);
                    if done {
                        return (seen, responses);
                    }
                }
                Message::Response(_) => responses += 1,
                _ => {}
            }
        }
    }

    /// Waits until `started` analyses were handed to the worker.
    fn wait_started(&mut self, started: u64) {
        while self.stats()["started"] != started {
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The loop's exit status, failing when it does not return within a minute (it must not
    /// wait for the running analysis, which takes minutes in a debug build).
    fn status(&mut self) -> u8 {
        let server = self.server.take().unwrap();
        let (done_tx, done_rx) = crossbeam_channel::bounded(1);
        std::thread::spawn(move || done_tx.send(server.join().unwrap()));
        done_rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the session loop waited for the running analysis")
    }
}

fn req(id: i32, method: &str, params: Value) -> Incoming {
    Incoming::Msg(Message::Request(Request::new(
        RequestId::from(id),
        method.into(),
        params,
    )))
}

fn note(method: &str, params: Value) -> Incoming {
    Incoming::Msg(Message::Notification(Notification::new(
        method.into(),
        params,
    )))
}

fn init() -> Vec<Incoming> {
    vec![
        req(1, "initialize", json!({"capabilities": {}})),
        note("initialized", json!({})),
    ]
}

fn open(uri: &str, version: i32, text: &str) -> Incoming {
    note(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "mpk", "version": version, "text": text}}),
    )
}

fn change(uri: &str, version: i32, changes: Value) -> Incoming {
    note(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": changes}),
    )
}

#[test]
fn a_burst_with_requests_between_the_changes_is_analysed_once() {
    let uri = "file:///s/burst.mpk";
    let good = house();
    let bad = good.replace("stages 6", "stages 7");
    let mut queued = init();
    queued.push(open(uri, 1, &good));
    for v in 2..=2001 {
        let text = if v % 2 == 0 { &bad } else { &good };
        queued.push(change(uri, v, json!([{ "text": text }])));
        queued.push(req(
            v,
            "textDocument/hover",
            json!({"textDocument": {"uri": uri}, "position": {"line": 4, "character": 6}}),
        ));
    }
    // The last change is an edit in place (a range), then an empty change bumps the version.
    let line = good.lines().position(|l| l.contains("stages 6")).unwrap() as u32;
    queued.push(change(
        uri,
        2002,
        json!([{ "range": {"start": {"line": line, "character": 9}, "end": {"line": line, "character": 10}}, "text": "7" }]),
    ));
    queued.push(change(uri, 2003, json!([])));
    let mut s = Session::start(queued);
    let (published, responses) = s.diagnostics_until(uri, 2003);
    assert_eq!(
        published.len(),
        1,
        "one analysis for the burst: {published:?}"
    );
    // initialize and every hover of the burst were answered first (from no analysis: null).
    assert_eq!(responses, 2001);
    assert!(
        published[0]["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["code"] == "E0103"),
        "the ranged edit was applied: {:?}",
        published[0]
    );
    let stats = s.stats();
    assert_eq!(
        (&stats["started"], &stats["published"], &stats["cancelled"]),
        (&json!(1), &json!(1), &json!(0)),
        "{stats}"
    );
    s.send(note("exit", Value::Null));
    assert_eq!(s.status(), 1);
}

#[test]
fn every_request_of_a_burst_is_answered() {
    let uri = "file:///s/answers.mpk";
    let mut queued = init();
    queued.push(open(uri, 1, &house()));
    for v in 2..=501 {
        queued.push(change(uri, v, json!([{ "text": house() }])));
        queued.push(req(
            v,
            "textDocument/documentSymbol",
            json!({"textDocument": {"uri": uri}}),
        ));
    }
    let s = Session::start(queued);
    let mut ids = Vec::new();
    while ids.len() < 501 {
        if let Message::Response(r) = s.recv() {
            ids.push(r.id);
        }
    }
    let expected: Vec<RequestId> = std::iter::once(1)
        .chain(2..=501)
        .map(RequestId::from)
        .collect();
    assert_eq!(ids, expected);
}

#[test]
fn a_newer_change_cancels_the_running_analysis() {
    let uri = "file:///s/heavy.mpk";
    let mut queued = init();
    queued.push(open(uri, 1, &heavy()));
    let mut s = Session::start(queued);
    s.wait_started(1);
    s.send(change(uri, 2, json!([{ "text": house() }])));
    let (published, _) = s.diagnostics_until(uri, 2);
    assert_eq!(published.len(), 1, "{published:?}");
    let stats = s.stats();
    assert_eq!(
        (
            &stats["started"],
            &stats["cancelled"],
            &stats["finished"],
            &stats["published"]
        ),
        (&json!(2), &json!(1), &json!(1), &json!(1)),
        "{stats}"
    );
    // Closing the document forgets it.
    s.send(note(
        "textDocument/didClose",
        json!({"textDocument": {"uri": uri}}),
    ));
    assert_eq!(s.stats()["openDocuments"], 0);
    s.send(note("exit", Value::Null));
    assert_eq!(s.status(), 1);
}

#[test]
fn exit_does_not_wait_for_the_running_analysis() {
    let mut queued = init();
    queued.push(open("file:///s/exit.mpk", 1, &heavy()));
    let mut s = Session::start(queued);
    s.wait_started(1);
    assert_eq!(s.stats()["finished"], 0);
    s.send(req(2, "shutdown", Value::Null));
    s.send(note("exit", Value::Null));
    assert_eq!(s.status(), 0);
}

#[test]
fn the_end_of_input_does_not_wait_for_the_running_analysis() {
    let mut queued = init();
    queued.push(open("file:///s/eof.mpk", 1, &heavy()));
    let mut s = Session::start(queued);
    s.wait_started(1);
    drop(s.tx.take());
    assert_eq!(s.status(), 1);
}

#[test]
fn closed_documents_are_forgotten() {
    // 1,200 documents opened and closed in one burst: none is kept, none analysed; then 1,200
    // opened one by one and closed: each analysed once, none kept.
    let mut queued = init();
    for k in 0..1200 {
        let uri = format!("file:///s/many/{k}.mpk");
        queued.push(open(&uri, 1, &house()));
        queued.push(note(
            "textDocument/didClose",
            json!({"textDocument": {"uri": uri}}),
        ));
    }
    let mut s = Session::start(queued);
    let stats = s.stats();
    assert_eq!(
        (&stats["openDocuments"], &stats["started"]),
        (&json!(0), &json!(0)),
        "{stats}"
    );
    for k in 0..1200 {
        let uri = format!("file:///s/one-by-one/{k}.mpk");
        s.send(open(&uri, 1, "task t { family consumer-no-smem }\n"));
        s.diagnostics_until(&uri, 1);
        s.send(note(
            "textDocument/didClose",
            json!({"textDocument": {"uri": uri}}),
        ));
    }
    let stats = s.stats();
    assert_eq!(
        (&stats["openDocuments"], &stats["published"]),
        (&json!(0), &json!(1200)),
        "{stats}"
    );
    s.send(note("exit", Value::Null));
    assert_eq!(s.status(), 1);
}
