//! The server's stdio transport, tolerant of bad input: frames are read by [`super::frame`]
//! (which resynchronises after a bad header and caps bodies at 64 MiB); a bad frame, or a message
//! that is not JSON, not a JSON-RPC message, or has an id the protocol types cannot carry, is
//! turned into an error reply (with its id, or `null` when it has none) instead of ending the
//! server; only the end of stdin (or an I/O error on it) ends the reader.

use crossbeam_channel::{Receiver, Sender};
use lsp_server::Message;
use serde_json::{json, Value};
use std::io::Write;

pub use super::frame::{read_frame, Frame, MAX_BODY};

/// What the reader hands the server.
#[derive(Debug)]
pub enum Incoming {
    /// A well-formed message.
    Msg(Message),
    /// A malformed one, to answer with an error.
    Invalid {
        /// The request's id when it had a usable one.
        id: Option<Value>,
        /// JSON-RPC error code (-32700 parse error, -32600 invalid request).
        code: i32,
        /// What was wrong.
        message: String,
    },
}

/// What the server sends.
#[derive(Debug)]
pub enum Outgoing {
    /// A protocol message.
    Msg(Message),
    /// An error reply built by hand (ids lsp-server cannot represent, or `null`).
    Error {
        /// The id to echo (`null` when unknown).
        id: Value,
        /// JSON-RPC error code.
        code: i32,
        /// Message.
        message: String,
    },
}

/// Classifies one body.
pub fn parse(body: &[u8]) -> Incoming {
    let invalid =
        |id: Option<Value>, code: i32, message: String| Incoming::Invalid { id, code, message };
    let v: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return invalid(None, -32700, format!("parse error: {e}")),
    };
    let Some(obj) = v.as_object() else {
        return invalid(None, -32600, "a JSON-RPC message must be an object".into());
    };
    let id = obj.get("id").cloned();
    if let Some(id) = &id {
        let usable = id.as_str().is_some() || id.as_i64().is_some_and(|n| i32::try_from(n).is_ok());
        if !usable && obj.contains_key("method") {
            return invalid(
                Some(id.clone()),
                -32600,
                "request ids must be strings or 32-bit integers".into(),
            );
        }
    }
    if obj.contains_key("method") && !obj.get("method").is_some_and(Value::is_string) {
        return invalid(id, -32600, "`method` must be a string".into());
    }
    match serde_json::from_value::<Message>(v) {
        Ok(m) => Incoming::Msg(m),
        Err(e) => invalid(id, -32600, format!("not a JSON-RPC message: {e}")),
    }
}

/// Starts the reader (stdin) and writer (stdout) threads.
pub fn stdio() -> (
    Receiver<Incoming>,
    Sender<Outgoing>,
    Vec<std::thread::JoinHandle<()>>,
) {
    let (in_tx, in_rx) = crossbeam_channel::unbounded::<Incoming>();
    let (out_tx, out_rx) = crossbeam_channel::unbounded::<Outgoing>();
    let reader = std::thread::spawn(move || {
        let stdin = std::io::stdin();
        let mut r = stdin.lock();
        loop {
            let mut skipped = |n: usize| {
                eprintln!("mpkc lsp: skipped {n} bytes of input that are not a frame header");
            };
            let item = match read_frame(&mut r, &mut skipped) {
                Ok(None) | Err(_) => break,
                Ok(Some(Frame::Body(body))) => parse(&body),
                Ok(Some(Frame::Bad(e))) => Incoming::Invalid {
                    id: None,
                    code: -32700,
                    message: e,
                },
            };
            if let Incoming::Invalid { message, .. } = &item {
                eprintln!("mpkc lsp: malformed input: {message}; the server goes on");
            }
            if in_tx.send(item).is_err() {
                break;
            }
        }
    });
    let writer = std::thread::spawn(move || {
        let stdout = std::io::stdout();
        for out in out_rx {
            let mut w = stdout.lock();
            let ok = match out {
                Outgoing::Msg(m) => m.write(&mut w).is_ok(),
                Outgoing::Error { id, code, message } => {
                    let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string();
                    write!(w, "Content-Length: {}\r\n\r\n{body}", body.len())
                        .and_then(|_| w.flush())
                        .is_ok()
                }
            };
            if !ok {
                break;
            }
        }
    });
    (in_rx, out_tx, vec![reader, writer])
}
