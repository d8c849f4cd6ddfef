//! `mpkc lsp` as a process, spoken to over JSON-RPC on stdio: initialize, open an over-budget
//! contract and receive its diagnostics on the region declarations, fix it and receive an empty
//! list, hover (budget table, page map, region plan), definition, references, outline,
//! completion, formatting, a panicking request the server survives, shutdown and exit.

use lsp_server::{Message, Notification, Request, RequestId, Response};
use serde_json::{json, Value};
use std::io::{BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

struct Client {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: i32,
}

impl Client {
    fn start() -> Client {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mpkc"))
            .arg("lsp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Client {
            child,
            stdin,
            stdout,
            next: 1,
        }
    }

    fn send(&mut self, m: Message) {
        m.write(&mut self.stdin).unwrap();
        self.stdin.flush().unwrap();
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(Message::Notification(Notification::new(
            method.into(),
            params,
        )));
    }

    /// Sends a request and returns its response (notifications in between are skipped).
    fn request(&mut self, method: &str, params: Value) -> Response {
        let id = self.next;
        self.next += 1;
        self.send(Message::Request(Request::new(
            RequestId::from(id),
            method.into(),
            params,
        )));
        loop {
            match Message::read(&mut self.stdout)
                .unwrap()
                .expect("the server closed its stdout")
            {
                Message::Response(r) if r.id == RequestId::from(id) => return r,
                _ => {}
            }
        }
    }

    /// The next publishDiagnostics.
    fn diagnostics(&mut self) -> Value {
        loop {
            match Message::read(&mut self.stdout)
                .unwrap()
                .expect("the server closed its stdout")
            {
                Message::Notification(n) if n.method == "textDocument/publishDiagnostics" => {
                    return n.params
                }
                _ => {}
            }
        }
    }
}

fn house() -> String {
    std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/stdlib/linear_sm100_v2.mpk"
    ))
    .unwrap()
}

/// LSP position (line, UTF-16 column) of the first occurrence of `needle` plus `skip` bytes.
fn pos(text: &str, needle: &str, skip: usize) -> Value {
    let at = text.find(needle).unwrap() + skip;
    let line = text[..at].matches('\n').count();
    let col = at - text[..at].rfind('\n').map_or(0, |i| i + 1);
    json!({"line": line, "character": col})
}

#[test]
fn a_session_with_the_house_linear() {
    let uri = "file:///work/linear_sm100_v2.mpk";
    let good = house();
    let bad = good.replace("stages 6", "stages 7");
    let mut c = Client::start();
    let init = c.request(
        "initialize",
        json!({"processId": null, "rootUri": null, "capabilities": {}}),
    );
    let caps = &init.response_result.unwrap()["capabilities"];
    assert_eq!(caps["textDocumentSync"]["change"], 1, "full sync");
    assert_eq!(caps["hoverProvider"], true);
    c.notify("initialized", json!({}));

    // Over budget: E0103 on the first region declaration, the other regions as related info.
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "mpk", "version": 1, "text": bad}}),
    );
    let d = c.diagnostics();
    let diags = d["diagnostics"].as_array().unwrap();
    assert!(!diags.is_empty());
    let over: Vec<&Value> = diags.iter().filter(|x| x["code"] == "E0103").collect();
    assert_eq!(over.len(), 2, "one per target: {diags:#?}");
    assert_eq!(
        over[0]["range"]["start"],
        pos(&bad, "region W[stage]", 0),
        "{:#?}",
        over[0]
    );
    assert!(
        over[0]["message"].as_str().unwrap().contains("258064"),
        "{:#?}",
        over[0]
    );
    assert!(
        over[0]["message"].as_str().unwrap().contains("help:"),
        "{:#?}",
        over[0]
    );
    assert!(over[0]["relatedInformation"]
        .as_array()
        .is_some_and(|r| !r.is_empty()));

    // Fixed: an empty list.
    let t0 = Instant::now();
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": good}]}),
    );
    let d = c.diagnostics();
    eprintln!(
        "didChange -> publishDiagnostics: {:.1} ms (debug build)",
        t0.elapsed().as_secs_f64() * 1e3
    );
    assert_eq!(d["diagnostics"], json!([]));

    let tp = |needle: &str, skip: usize| json!({"textDocument": {"uri": uri}, "position": pos(&good, needle, skip)});
    // Hover on the task name: the budget table and the page map.
    let h = c
        .request("textDocument/hover", tp("task linear_sm100_v2", 5))
        .response_result
        .unwrap();
    let md = h["contents"]["value"].as_str().unwrap();
    assert!(
        md.contains("14 of 14") && md.contains("22 of 31") && md.contains("page 13 |"),
        "{md}"
    );
    // Hover on a region: its plan.
    let h = c
        .request("textDocument/hover", tp("region W[stage]", 7))
        .response_result
        .unwrap();
    let md = h["contents"]["value"].as_str().unwrap();
    assert!(
        md.contains("`W_0` (REGION ordinal 0): 32768 B, pages 0-1, offset 0"),
        "{md}"
    );
    // Hover on a sem: its ordinal row.
    let h = c
        .request("textDocument/hover", tp("sem consumer_done", 4))
        .response_result
        .unwrap();
    assert!(
        h["contents"]["value"]
            .as_str()
            .unwrap()
            .contains("| 128 | consumer → launcher"),
        "{h}"
    );

    // Hover on a ring: each target's rows (issue 11): sm_100a frees a stage by tcgen05.commit
    // (count 1), sm_90a by the 128 consumer threads.
    let h = c
        .request("textDocument/hover", tp("channel w_ring", 8))
        .response_result
        .unwrap();
    let md = h["contents"]["value"].as_str().unwrap();
    assert!(
        md.contains(
            "| sm_100a | 12 | `w_ring.empty[0]` | 1 | launcher → loader | tcgen05.commit |"
        ) && md.contains(
            "| sm_90a | 12 | `w_ring.empty[0]` | 128 | consumer → loader | thread arrive |"
        ),
        "{md}"
    );

    // Definition: `W` in `channel w_ring: W` is the region.
    let def = c
        .request("textDocument/definition", tp("channel w_ring: W", 16))
        .response_result
        .unwrap();
    assert_eq!(def["range"]["start"], pos(&good, "region W[stage]", 7));
    // References of the param K: its declaration and every use.
    let mut refs_params = tp("param K", 6);
    refs_params["context"] = json!({"includeDeclaration": true});
    let refs = c
        .request("textDocument/references", refs_params)
        .response_result
        .unwrap();
    assert!(refs.as_array().unwrap().len() >= 3, "{refs}");

    // Outline and completion.
    let syms = c
        .request(
            "textDocument/documentSymbol",
            json!({"textDocument": {"uri": uri}}),
        )
        .response_result
        .unwrap();
    assert_eq!(syms[0]["name"], "linear_sm100_v2");
    assert!(syms[0]["children"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["name"] == "w_ring"));
    let comp = c
        .request("textDocument/completion", tp("region W", 0))
        .response_result
        .unwrap();
    let labels: Vec<&str> = comp
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["label"].as_str())
        .collect();
    assert!(
        labels.contains(&"region") && labels.contains(&"w_ring"),
        "{labels:?}"
    );

    // Formatting: the stdlib file is formatted, a messy one gets one edit.
    let f = c.request(
        "textDocument/formatting",
        json!({"textDocument": {"uri": uri}, "options": {"tabSize": 2, "insertSpaces": true}}),
    );
    assert_eq!(f.response_result.unwrap(), json!([]));
    let messy = "file:///work/messy.mpk";
    c.notify("textDocument/didOpen", json!({"textDocument": {"uri": messy, "languageId": "mpk", "version": 1, "text": "task t{family  consumer-no-smem}"}}));
    let _ = c.diagnostics();
    let f = c.request(
        "textDocument/formatting",
        json!({"textDocument": {"uri": messy}, "options": {"tabSize": 2, "insertSpaces": true}}),
    );
    assert_eq!(
        f.response_result.unwrap()[0]["newText"],
        "task t { family consumer-no-smem }\n"
    );

    // A panicking request is answered with an internal error and the server goes on.
    let p = c.request("mpkc/debugPanic", json!(null));
    assert_eq!(p.response_result.unwrap_err().code, -32603);
    let h = c.request("textDocument/hover", tp("task linear_sm100_v2", 5));
    assert!(h.response_result.is_ok());
    // Garbage text never ends the server either.
    c.notify("textDocument/didChange", json!({"textDocument": {"uri": uri, "version": 3}, "contentChanges": [{"text": "task {{{ \u{0} ]]] region"}]}));
    assert!(!c.diagnostics()["diagnostics"]
        .as_array()
        .unwrap()
        .is_empty());

    let s = c.request("shutdown", json!(null));
    assert!(s.response_result.is_ok());
    c.notify("exit", json!(null));
    let status = c.child.wait().unwrap();
    assert!(status.success());
    let mut err = String::new();
    std::io::Read::read_to_string(c.child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(
        err.contains("mpkc/debugPanic"),
        "the panic is logged: {err}"
    );
}

/// Writes a raw frame (for malformed input).
fn raw(c: &mut Client, body: &[u8]) {
    write!(c.stdin, "Content-Length: {}\r\n\r\n", body.len()).unwrap();
    c.stdin.write_all(body).unwrap();
    c.stdin.flush().unwrap();
}

/// The next response with id `id` (as JSON), skipping notifications.
fn response_with_id(c: &mut Client, id: Value) -> Value {
    loop {
        let mut len = 0usize;
        loop {
            let mut line = String::new();
            std::io::BufRead::read_line(&mut c.stdout, &mut line).unwrap();
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some(v) = l.strip_prefix("Content-Length: ") {
                len = v.parse().unwrap();
            }
        }
        let mut body = vec![0u8; len];
        std::io::Read::read_exact(&mut c.stdout, &mut body).unwrap();
        let v: Value = serde_json::from_slice(&body).unwrap();
        if v.get("method").is_none() && v["id"] == id {
            return v;
        }
    }
}

#[test]
fn malformed_input_and_the_shutdown_protocol() {
    let mut c = Client::start();
    c.request(
        "initialize",
        json!({"processId": null, "rootUri": null, "capabilities": {}}),
    );
    c.notify("initialized", json!({}));
    // Not JSON, not an object, a method that is not a string, an id lsp types cannot carry:
    // each gets an error reply and the server goes on.
    raw(&mut c, b"{abc}");
    assert_eq!(
        response_with_id(&mut c, Value::Null)["error"]["code"],
        -32700
    );
    raw(&mut c, b"[]");
    assert_eq!(
        response_with_id(&mut c, Value::Null)["error"]["code"],
        -32600
    );
    raw(&mut c, br#"{"jsonrpc":"2.0","id":9,"method":5}"#);
    assert_eq!(response_with_id(&mut c, json!(9))["error"]["code"], -32600);
    raw(
        &mut c,
        br#"{"jsonrpc":"2.0","id":2147483648,"method":"textDocument/hover","params":{}}"#,
    );
    assert_eq!(
        response_with_id(&mut c, json!(2147483648u64))["error"]["code"],
        -32600
    );

    // A burst of changes: the diagnostics that come last are the last version's.
    let uri = "file:///work/burst.mpk";
    let good = house();
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "mpk", "version": 1, "text": good}}),
    );
    assert_eq!(c.diagnostics()["version"], 1);
    for v in 2..=30 {
        let text = if v == 30 {
            good.replace("stages 6", "stages 7")
        } else {
            good.clone()
        };
        c.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": v}, "contentChanges": [{"text": text}]}),
        );
    }
    let mut last = c.diagnostics();
    while last["version"] != 30 {
        last = c.diagnostics();
    }
    assert!(last["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .any(|d| d["code"] == "E0103"));

    // After shutdown, requests are refused; exit then ends the server with status 0.
    assert!(c.request("shutdown", json!(null)).response_result.is_ok());
    let after = c.request(
        "textDocument/documentSymbol",
        json!({"textDocument": {"uri": uri}}),
    );
    assert_eq!(after.response_result.unwrap_err().code, -32600);
    c.notify("exit", json!(null));
    assert_eq!(c.child.wait().unwrap().code(), Some(0));

    // `exit` without `shutdown`: status 1, as the protocol asks.
    let mut c = Client::start();
    c.request(
        "initialize",
        json!({"processId": null, "rootUri": null, "capabilities": {}}),
    );
    c.notify("exit", json!(null));
    assert_eq!(c.child.wait().unwrap().code(), Some(1));
}
