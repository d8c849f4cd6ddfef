//! `mpkc lsp` as a process under faults (issue 9, item 11): mis-framed and oversized frames,
//! stale and unknown document versions, a change followed by an empty one, and a 5 MB contract
//! whose analysis `exit` and the end of input must not wait for. The analysis counters come from
//! the `mpkc/stats` request, so the tests count analyses instead of timing them (the deadlines
//! below only turn a hang into a failure).

#[path = "support/lsp_client.rs"]
mod lsp_client;

use lsp_client::{five_mb, stdlib, Client};
use serde_json::{json, Value};

/// Reads messages until the response with id `id`; returns it and the `null`-id error replies
/// seen on the way.
fn response_and_errors(c: &mut Client, id: i64) -> (Value, Vec<Value>) {
    let mut errors = Vec::new();
    loop {
        let v = c.read().expect("the server closed its stdout");
        if v.get("method").is_some() {
            continue;
        }
        if v["id"] == id {
            return (v, errors);
        }
        if v["id"].is_null() {
            errors.push(v["error"].clone());
        }
    }
}

#[test]
fn a_short_content_length_does_not_break_the_stream() {
    let mut c = Client::initialized();
    // The input: one byte announced, two sent; the second is glued to the next header.
    c.write(b"Content-Length: 1\r\n\r\n{}");
    let id = c.send_request("mpkc/stats", Value::Null);
    let (r, errors) = response_and_errors(&mut c, id);
    assert!(r["result"]["started"].is_u64(), "{r}");
    assert_eq!(errors.len(), 1, "the body `{{` is not JSON: {errors:?}");
    assert_eq!(errors[0]["code"], -32700);
    // The next request is answered as well, and `exit` exits.
    assert!(c.request("shutdown", Value::Null)["result"].is_null());
    c.notify("exit", Value::Null);
    assert_eq!(c.wait_exit(60), Some(0));
}

#[test]
fn a_long_content_length_loses_one_frame_only() {
    let mut c = Client::initialized();
    // Five bytes announced, two sent: the body takes three bytes of the next frame's header,
    // which is lost (answered with an error); the one after it is answered.
    c.write(b"Content-Length: 5\r\n\r\n{}");
    let _lost = c.send_request("mpkc/stats", Value::Null);
    let id = c.send_request("mpkc/stats", Value::Null);
    let (r, errors) = response_and_errors(&mut c, id);
    assert!(r["result"]["started"].is_u64(), "{r}");
    // `{}Con` is not JSON; `tent-Length: …` and the blank line are a block without a length.
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(
        errors.iter().any(|e| e["message"]
            .as_str()
            .unwrap()
            .contains("without Content-Length")),
        "{errors:?}"
    );
    c.notify("exit", Value::Null);
    assert_eq!(c.wait_exit(60), Some(1));
}

#[test]
fn huge_content_lengths_are_refused_and_the_stream_goes_on() {
    let mut c = Client::initialized();
    for n in ["100000000000", "18446744073709551615"] {
        c.write(format!("Content-Length: {n}\r\n\r\n").as_bytes());
        let id = c.send_request("mpkc/stats", Value::Null);
        let (r, errors) = response_and_errors(&mut c, id);
        assert!(r["result"]["started"].is_u64(), "{n}: {r}");
        assert_eq!(errors.len(), 1, "{n}: {errors:?}");
        let m = errors[0]["message"].as_str().unwrap();
        assert!(m.contains(n) && m.contains("64 MiB"), "{n}: {m}");
    }
    c.notify("exit", Value::Null);
    assert_eq!(c.wait_exit(60), Some(1));
    let err = c.stderr();
    assert!(!err.contains("panicked"), "{err}");
}

fn codes(d: &Value) -> Vec<String> {
    d["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["code"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn stale_repeated_and_unknown_changes_are_ignored() {
    let uri = "file:///work/versions.mpk";
    let good = stdlib("linear_sm100_v2.mpk");
    let bad = good.replace("stages 6", "stages 7");
    let mut c = Client::initialized();
    c.open(uri, 1, &good);
    assert_eq!(codes(&c.diagnostics_of(uri, 1)), Vec::<String>::new());
    c.change(uri, 3, &bad);
    assert!(codes(&c.diagnostics_of(uri, 3)).contains(&"E0103".to_string()));
    // A lower version and a repeated one: both ignored, the text stays version 3's.
    c.change(uri, 2, &good);
    c.change(uri, 3, &good);
    // No content changes: only the version moves; the text analysed is still the bad one.
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 4}, "contentChanges": []}),
    );
    assert!(codes(&c.diagnostics_of(uri, 4)).contains(&"E0103".to_string()));
    // A change of a document never opened does not open it.
    let never = "file:///work/never-opened.mpk";
    c.change(never, 5, &good);
    let syms = c.request(
        "textDocument/documentSymbol",
        json!({"textDocument": {"uri": never}}),
    );
    assert!(syms["result"].is_null(), "{syms}");
    assert_eq!(c.stats()["openDocuments"], 1);
    c.notify("exit", Value::Null);
    assert_eq!(c.wait_exit(60), Some(1));
    let err = c.stderr();
    assert!(
        err.contains("with version 2, not above its version 3: ignored")
            && err.contains("with version 3, not above its version 3: ignored")
            && err.contains("never-opened.mpk, which is not open: ignored"),
        "the ignored changes are logged: {err}"
    );
}

#[test]
fn a_change_followed_by_an_empty_change_is_applied() {
    let uri = "file:///work/empty-after.mpk";
    let good = stdlib("linear_sm100_v2.mpk");
    let bad = good.replace("stages 6", "stages 7");
    let mut c = Client::initialized();
    c.open(uri, 1, &good);
    assert_eq!(codes(&c.diagnostics_of(uri, 1)), Vec::<String>::new());
    // Both in one write, so that the server sees them back to back.
    let change = |v: i64, changes: Value| {
        let body = json!({"jsonrpc": "2.0", "method": "textDocument/didChange",
            "params": {"textDocument": {"uri": uri, "version": v}, "contentChanges": changes}})
        .to_string();
        format!("Content-Length: {}\r\n\r\n{body}", body.len())
    };
    let burst = change(2, json!([{ "text": bad }])) + &change(3, json!([]));
    c.write(burst.as_bytes());
    let d = c.diagnostics_of(uri, 3);
    assert!(codes(&d).contains(&"E0103".to_string()), "{d}");
    c.notify("exit", Value::Null);
    assert_eq!(c.wait_exit(60), Some(1));
}

/// Opens the 5 MB contract and waits until its analysis runs.
fn analysing_five_mb(c: &mut Client, uri: &str) {
    c.open(uri, 1, &five_mb());
    while c.stats()["started"] != 1 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn requests_and_exit_do_not_wait_for_a_5_mb_analysis() {
    let uri = "file:///work/five.mpk";
    let mut c = Client::initialized();
    analysing_five_mb(&mut c, uri);
    // A request is answered while the analysis runs (from no analysis yet: null).
    let h = c.request(
        "textDocument/documentSymbol",
        json!({"textDocument": {"uri": uri}}),
    );
    assert!(h["result"].is_null(), "{h}");
    assert_eq!(c.stats()["finished"], 0);
    // `exit` while it runs: the server exits without finishing it (a debug build takes minutes
    // to analyse 5 MB). The cancellation of an analysis by a newer change is counted in
    // tests/lsp_session.rs.
    c.notify("exit", Value::Null);
    assert_eq!(c.wait_exit(60), Some(1));
}

#[test]
fn the_end_of_input_does_not_wait_for_a_5_mb_analysis() {
    let mut c = Client::initialized();
    analysing_five_mb(&mut c, "file:///work/five-eof.mpk");
    drop(c.stdin.take());
    assert_eq!(c.wait_exit(60), Some(1));
}
