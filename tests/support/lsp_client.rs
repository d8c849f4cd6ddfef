//! A JSON-RPC client of `mpkc lsp` as a process, for the integration tests: raw frames, requests
//! and notifications, and reading what the server sends (by id, or the next diagnostics).

#![allow(dead_code)]

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// The server process and its pipes.
pub struct Client {
    pub child: Child,
    pub stdin: Option<ChildStdin>,
    pub stdout: BufReader<ChildStdout>,
    next: i64,
    /// Dropped with the client; until then a watchdog kills a server that hangs the test.
    _watchdog: std::sync::mpsc::Sender<()>,
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How long one test may talk to one server before the watchdog kills it (so that a server that
/// never answers fails the test instead of hanging it).
const WATCHDOG: std::time::Duration = std::time::Duration::from_secs(600);

impl Client {
    /// Starts `mpkc lsp` (stderr kept for [`Client::stderr`]).
    pub fn start() -> Client {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mpkc"))
            .arg("lsp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (watchdog, rx) = std::sync::mpsc::channel::<()>();
        let pid = child.id().to_string();
        std::thread::spawn(move || {
            if rx.recv_timeout(WATCHDOG) == Err(std::sync::mpsc::RecvTimeoutError::Timeout) {
                eprintln!("watchdog: the server hangs the test; killing it");
                let _ = Command::new("kill").arg("-9").arg(&pid).status();
            }
        });
        Client {
            child,
            stdin,
            stdout,
            next: 1,
            _watchdog: watchdog,
        }
    }

    /// Starts the server and initializes it.
    pub fn initialized() -> Client {
        let mut c = Client::start();
        c.request(
            "initialize",
            json!({"processId": null, "rootUri": null, "capabilities": {}}),
        );
        c.notify("initialized", json!({}));
        c
    }

    /// Writes raw bytes to the server's stdin.
    pub fn write(&mut self, bytes: &[u8]) {
        let w = self.stdin.as_mut().expect("stdin is open");
        w.write_all(bytes).unwrap();
        w.flush().unwrap();
    }

    /// Sends one correctly framed message.
    pub fn send(&mut self, v: &Value) {
        let body = v.to_string();
        self.write(format!("Content-Length: {}\r\n\r\n{body}", body.len()).as_bytes());
    }

    /// Sends a notification.
    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request without waiting; returns its id.
    pub fn send_request(&mut self, method: &str, params: Value) -> i64 {
        let id = self.next;
        self.next += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// Sends a request and returns its response (the whole message).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params);
        self.response(&json!(id))
    }

    /// The next message from the server; `None` when it closed its stdout.
    pub fn read(&mut self) -> Option<Value> {
        let mut len = None;
        loop {
            let mut line = String::new();
            if self.stdout.read_line(&mut line).unwrap() == 0 {
                return None;
            }
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some(v) = l.strip_prefix("Content-Length: ") {
                len = Some(v.parse::<usize>().unwrap());
            }
        }
        let mut body = vec![0u8; len.expect("the server framed its message")];
        self.stdout.read_exact(&mut body).unwrap();
        Some(serde_json::from_slice(&body).unwrap())
    }

    /// The response with id `id` (other messages are skipped).
    pub fn response(&mut self, id: &Value) -> Value {
        loop {
            let v = self.read().expect("the server closed its stdout");
            if v.get("method").is_none() && v["id"] == *id {
                return v;
            }
        }
    }

    /// The next publishDiagnostics (its params).
    pub fn diagnostics(&mut self) -> Value {
        loop {
            let v = self.read().expect("the server closed its stdout");
            if v["method"] == "textDocument/publishDiagnostics" {
                return v["params"].clone();
            }
        }
    }

    /// The publishDiagnostics of `uri` with version `version` (earlier ones are skipped).
    pub fn diagnostics_of(&mut self, uri: &str, version: i64) -> Value {
        loop {
            let d = self.diagnostics();
            if d["uri"] == uri && d["version"] == version {
                return d;
            }
        }
    }

    /// The server's analysis counters (`mpkc/stats`).
    pub fn stats(&mut self) -> Value {
        self.request("mpkc/stats", Value::Null)["result"].clone()
    }

    /// Opens `uri` at `version` with `text`.
    pub fn open(&mut self, uri: &str, version: i64, text: &str) {
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "mpk", "version": version, "text": text}}),
        );
    }

    /// A full-text change of `uri` to `version`.
    pub fn change(&mut self, uri: &str, version: i64, text: &str) {
        self.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]}),
        );
    }

    /// Waits for the process to end (at most `secs` seconds, then kills it and fails).
    pub fn wait_exit(&mut self, secs: u64) -> Option<i32> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s.code();
            }
            if std::time::Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("the server did not exit within {secs} s");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// Everything the server wrote on stderr (after it exited).
    pub fn stderr(&mut self) -> String {
        let mut err = String::new();
        if let Some(e) = self.child.stderr.as_mut() {
            e.read_to_string(&mut err).unwrap();
        }
        err
    }
}

/// A stdlib contract's text.
pub fn stdlib(name: &str) -> String {
    std::fs::read_to_string(format!("{}/stdlib/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// About 5 MB of contract: copies of the house linear under distinct task names (the issue's
/// load: each change took 21-25 s to analyse in a release build).
pub fn five_mb() -> String {
    let house = stdlib("linear_sm100_v2.mpk");
    let mut out = String::new();
    let mut i = 0;
    while out.len() < 5_000_000 {
        out.push_str(&house.replace("task linear_sm100_v2", &format!("task lin_{i}")));
        i += 1;
    }
    out
}
