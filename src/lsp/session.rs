//! One session: the loop that reads the client's messages and the analyses' results, keeps the
//! documents ([`super::sync`]), schedules analyses ([`super::analysis`]) and answers requests
//! ([`super::requests`]).
//!
//! Scheduling: an analysis starts only when no input is waiting and no other analysis runs, so a
//! burst of changes, requests in between included, is analysed once at its last version. A newer
//! change of the document being analysed, its closing, `shutdown`, `exit` and the end of input
//! cancel the running analysis; nothing ever waits for one (requests are answered from the
//! latest finished analysis, `exit` returns at once).

use super::analysis::{Analyzer, Done, STATS};
use super::requests;
use super::sync::Docs;
use super::transport::{Incoming, Outgoing};
use lsp_server::{ErrorCode, Message, Notification, Request, RequestId, Response};
use lsp_types::notification::{
    DidChangeTextDocument, DidCloseTextDocument, DidOpenTextDocument, DidSaveTextDocument,
    Notification as _, PublishDiagnostics,
};
use lsp_types::{InitializeResult, PublishDiagnosticsParams, ServerInfo};
use serde_json::Value;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Serves one session: `initialize`, then requests and notifications until `exit` (status 0
/// after `shutdown`, 1 without) or the end of input (the same statuses).
pub fn serve(
    rx: crossbeam_channel::Receiver<Incoming>,
    tx: &crossbeam_channel::Sender<Outgoing>,
) -> u8 {
    let mut s = Session {
        tx,
        docs: Docs::default(),
        analyzer: Analyzer::new(),
        initialized: false,
        shutdown: false,
    };
    let done = s.analyzer.done().clone();
    loop {
        if rx.is_empty() && s.analyzer.idle() && !s.shutdown {
            if let Some(p) = s.docs.next_pending() {
                s.analyzer.start(p);
            }
        }
        crossbeam_channel::select! {
            recv(rx) -> item => match item {
                Ok(item) => {
                    if let Some(status) = s.handle(item) {
                        s.analyzer.cancel_all();
                        return status;
                    }
                }
                Err(_) => break,
            },
            recv(done) -> d => {
                if let Ok(d) = d {
                    s.finish(d);
                }
            }
        }
    }
    s.analyzer.cancel_all();
    if s.shutdown {
        0
    } else {
        1
    }
}

struct Session<'a> {
    tx: &'a crossbeam_channel::Sender<Outgoing>,
    docs: Docs,
    analyzer: Analyzer,
    initialized: bool,
    shutdown: bool,
}

impl Session<'_> {
    fn send(&self, m: Message) {
        let _ = self.tx.send(Outgoing::Msg(m));
    }

    fn respond(&self, r: Response) {
        self.send(Message::Response(r));
    }

    /// Handles one message; `Some(status)` on `exit`.
    fn handle(&mut self, item: Incoming) -> Option<u8> {
        match item {
            Incoming::Invalid { id, code, message } => {
                let _ = self.tx.send(Outgoing::Error {
                    id: id.unwrap_or(Value::Null),
                    code,
                    message,
                });
            }
            Incoming::Msg(Message::Request(req)) => self.request(req),
            Incoming::Msg(Message::Notification(n)) => {
                if n.method == "exit" {
                    return Some(if self.shutdown { 0 } else { 1 });
                }
                if self.initialized && !self.shutdown {
                    let method = n.method.clone();
                    if let Err(p) = catch_unwind(AssertUnwindSafe(|| self.notify(n))) {
                        eprintln!(
                            "mpkc lsp: notification `{method}` panicked: {}; the server goes on",
                            super::panic_message(&*p)
                        );
                    }
                }
            }
            Incoming::Msg(Message::Response(_)) => {}
        }
        None
    }

    fn request(&mut self, req: Request) {
        let (id, method) = (req.id.clone(), req.method.clone());
        let refuse =
            |code: ErrorCode, why: &str| Response::new_err(id.clone(), code as i32, why.into());
        if self.shutdown {
            self.respond(refuse(
                ErrorCode::InvalidRequest,
                "the server is shutting down",
            ));
        } else if method == "initialize" {
            let init = InitializeResult {
                capabilities: super::capabilities(),
                server_info: Some(ServerInfo {
                    name: "mpkc".into(),
                    version: Some(crate::VERSION.into()),
                }),
            };
            self.initialized = true;
            self.respond(Response::new_ok(id, init));
        } else if !self.initialized {
            self.respond(refuse(ErrorCode::ServerNotInitialized, "initialize first"));
        } else if method == "shutdown" {
            self.shutdown = true;
            self.analyzer.cancel_all();
            self.respond(Response::new_ok(id, Value::Null));
        } else if method == STATS {
            let mut v = serde_json::to_value(self.analyzer.stats()).unwrap_or(Value::Null);
            if let Some(o) = v.as_object_mut() {
                o.insert("openDocuments".into(), self.docs.len().into());
            }
            self.respond(Response::new_ok(id, v));
        } else {
            let docs = &self.docs;
            let resp = catch_unwind(AssertUnwindSafe(|| requests::answer(docs, req)))
                .unwrap_or_else(|p| {
                    eprintln!(
                        "mpkc lsp: request `{method}` panicked: {}; the server goes on",
                        super::panic_message(&*p)
                    );
                    internal_error(id, &method)
                });
            self.respond(resp);
        }
    }

    /// Text synchronisation: updates the documents and cancels the analysis a change replaces.
    fn notify(&mut self, n: Notification) {
        let method = n.method.clone();
        let bad = |e: lsp_server::ExtractError<Notification>| {
            eprintln!("mpkc lsp: `{method}` with unusable params ignored: {e:?}");
        };
        match n.method.as_str() {
            DidOpenTextDocument::METHOD => {
                match n.extract::<lsp_types::DidOpenTextDocumentParams>(DidOpenTextDocument::METHOD)
                {
                    Ok(p) => {
                        let d = p.text_document;
                        self.analyzer.cancel_doc(d.uri.as_str(), None);
                        self.docs.open(d.uri, d.version, d.text);
                    }
                    Err(e) => bad(e),
                }
            }
            DidChangeTextDocument::METHOD => match n
                .extract::<lsp_types::DidChangeTextDocumentParams>(DidChangeTextDocument::METHOD)
            {
                Ok(p) => {
                    let version = p.text_document.version;
                    match self.docs.change(p) {
                        Ok(key) => self.analyzer.cancel_doc(&key, Some(version)),
                        Err(ignored) => eprintln!("mpkc lsp: {ignored}"),
                    }
                }
                Err(e) => bad(e),
            },
            DidSaveTextDocument::METHOD => {
                match n.extract::<lsp_types::DidSaveTextDocumentParams>(DidSaveTextDocument::METHOD)
                {
                    Ok(p) => {
                        if let Some(key) = self.docs.save(&p.text_document.uri, p.text) {
                            self.analyzer.cancel_doc(&key, None);
                        }
                    }
                    Err(e) => bad(e),
                }
            }
            DidCloseTextDocument::METHOD => match n
                .extract::<lsp_types::DidCloseTextDocumentParams>(DidCloseTextDocument::METHOD)
            {
                Ok(p) => {
                    let uri = p.text_document.uri;
                    self.analyzer.cancel_doc(uri.as_str(), None);
                    if self.docs.close(&uri) {
                        self.publish(PublishDiagnosticsParams {
                            uri,
                            diagnostics: Vec::new(),
                            version: None,
                        });
                    }
                }
                Err(e) => bad(e),
            },
            _ => {}
        }
    }

    /// A finished analysis: published when it is of the document's current text.
    fn finish(&mut self, d: Done) {
        self.analyzer.finished(&d);
        let Done {
            pending, result, ..
        } = d;
        match result {
            Some(a) => {
                if self.docs.finished(&pending, Some(a.doc)) {
                    self.analyzer.published();
                    self.publish(a.publish);
                } else {
                    self.analyzer.stale();
                }
            }
            None => {
                self.docs.finished(&pending, None);
            }
        }
    }

    fn publish(&self, params: PublishDiagnosticsParams) {
        self.send(Message::Notification(Notification::new(
            PublishDiagnostics::METHOD.to_string(),
            params,
        )));
    }
}

fn internal_error(id: RequestId, method: &str) -> Response {
    Response::new_err(
        id,
        ErrorCode::InternalError as i32,
        format!("mpkc lsp: internal error while handling `{method}` (logged); the server goes on"),
    )
}
