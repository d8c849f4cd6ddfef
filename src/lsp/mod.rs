//! `mpkc lsp`: a language server over stdio (lsp-server + lsp-types) on the same pipeline as the
//! CLI. Full-document sync; on open, change and save the document is re-analysed and its
//! diagnostics published (same codes, messages, labels and help as `mpkc check`, secondary
//! labels as related information). Requests: hover, definition, references, document symbols,
//! completion, formatting.
//!
//! Bad input never ends the server: the analysis never panics on any input (the compiler's own
//! guarantee), and a request or notification whose handler panics anyway is caught, logged on
//! stderr and answered with an InternalError; the server keeps serving. The request
//! `mpkc/debugPanic` panics on purpose, for the test of that guarantee.

pub mod convert;
pub mod document;
pub mod hover;
pub mod index;
pub mod nav;
pub mod transport;

use document::Document;
use lsp_server::{ErrorCode, Message, Notification, Request, RequestId, Response};
use lsp_types::notification::{
    DidChangeTextDocument, DidCloseTextDocument, DidOpenTextDocument, DidSaveTextDocument,
    Notification as _, PublishDiagnostics,
};
use lsp_types::request::{
    Completion, DocumentSymbolRequest, Formatting, GotoDefinition, HoverRequest, References,
    Request as _,
};
use lsp_types::{
    CompletionOptions, HoverProviderCapability, InitializeResult, OneOf, PublishDiagnosticsParams,
    SaveOptions, ServerCapabilities, ServerInfo, TextDocumentSyncCapability, TextDocumentSyncKind,
    TextDocumentSyncOptions, TextDocumentSyncSaveOptions, TextEdit, Uri,
};
use serde_json::Value;
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use transport::{Incoming, Outgoing};

/// The method that panics on purpose (tests).
pub const DEBUG_PANIC: &str = "mpkc/debugPanic";

/// What the server advertises.
pub fn capabilities() -> ServerCapabilities {
    ServerCapabilities {
        text_document_sync: Some(TextDocumentSyncCapability::Options(
            TextDocumentSyncOptions {
                open_close: Some(true),
                change: Some(TextDocumentSyncKind::FULL),
                save: Some(TextDocumentSyncSaveOptions::SaveOptions(SaveOptions {
                    include_text: Some(true),
                })),
                ..Default::default()
            },
        )),
        hover_provider: Some(HoverProviderCapability::Simple(true)),
        definition_provider: Some(OneOf::Left(true)),
        references_provider: Some(OneOf::Left(true)),
        document_symbol_provider: Some(OneOf::Left(true)),
        completion_provider: Some(CompletionOptions::default()),
        document_formatting_provider: Some(OneOf::Left(true)),
        ..Default::default()
    }
}

/// The server state: the open documents.
#[derive(Default)]
pub struct Server {
    docs: HashMap<String, (Uri, Option<i32>, Document)>,
}

fn path_of(uri: &Uri) -> String {
    let s = uri.as_str();
    s.rsplit('/').next().unwrap_or(s).to_string()
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".into())
}

impl Server {
    /// Analyses `text` as version `version` of the document `uri` and returns the diagnostics
    /// to publish (with that version, so that a client can drop stale ones).
    pub fn update(&mut self, uri: Uri, version: Option<i32>, text: String) -> Notification {
        let doc = Document::analyze(&path_of(&uri), text);
        let diagnostics = doc
            .checked
            .diags
            .iter()
            .map(|d| convert::diagnostic(d, &doc.text, &doc.lines, &uri))
            .collect();
        let params = PublishDiagnosticsParams {
            uri: uri.clone(),
            diagnostics,
            version,
        };
        self.docs
            .insert(uri.as_str().to_string(), (uri, version, doc));
        Notification::new(PublishDiagnostics::METHOD.to_string(), params)
    }

    fn doc(&self, uri: &Uri) -> Option<&Document> {
        self.docs.get(uri.as_str()).map(|(_, _, d)| d)
    }

    /// Handles one notification; returns what to send.
    pub fn notify(&mut self, n: Notification) -> Vec<Notification> {
        match n.method.as_str() {
            DidOpenTextDocument::METHOD => match n
                .extract::<lsp_types::DidOpenTextDocumentParams>(DidOpenTextDocument::METHOD)
            {
                Ok(p) => vec![self.update(
                    p.text_document.uri,
                    Some(p.text_document.version),
                    p.text_document.text,
                )],
                Err(_) => Vec::new(),
            },
            DidChangeTextDocument::METHOD => match n
                .extract::<lsp_types::DidChangeTextDocumentParams>(DidChangeTextDocument::METHOD)
            {
                // Full sync: the last change holds the whole text.
                Ok(p) => {
                    let version = Some(p.text_document.version);
                    p.content_changes
                        .into_iter()
                        .last()
                        .map(|c| vec![self.update(p.text_document.uri, version, c.text)])
                        .unwrap_or_default()
                }
                Err(_) => Vec::new(),
            },
            DidSaveTextDocument::METHOD => match n
                .extract::<lsp_types::DidSaveTextDocumentParams>(DidSaveTextDocument::METHOD)
            {
                Ok(p) => {
                    let version = self
                        .docs
                        .get(p.text_document.uri.as_str())
                        .and_then(|(_, v, _)| *v);
                    let text = p
                        .text
                        .or_else(|| self.doc(&p.text_document.uri).map(|d| d.text.clone()));
                    text.map(|t| vec![self.update(p.text_document.uri, version, t)])
                        .unwrap_or_default()
                }
                Err(_) => Vec::new(),
            },
            DidCloseTextDocument::METHOD => {
                if let Ok(p) =
                    n.extract::<lsp_types::DidCloseTextDocumentParams>(DidCloseTextDocument::METHOD)
                {
                    self.docs.remove(p.text_document.uri.as_str());
                    let params = PublishDiagnosticsParams {
                        uri: p.text_document.uri,
                        diagnostics: Vec::new(),
                        version: None,
                    };
                    return vec![Notification::new(
                        PublishDiagnostics::METHOD.to_string(),
                        params,
                    )];
                }
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    /// Answers one request.
    pub fn request(&mut self, req: Request) -> Response {
        let id = req.id.clone();
        let method = req.method.clone();
        let result: Result<serde_json::Value, String> = match method.as_str() {
            HoverRequest::METHOD => self.with_position::<lsp_types::HoverParams, _>(
                req,
                HoverRequest::METHOD,
                |p| &p.text_document_position_params,
                |doc, _, off| {
                    hover::hover(doc, off).map(|md| lsp_types::Hover {
                        contents: lsp_types::HoverContents::Markup(lsp_types::MarkupContent {
                            kind: lsp_types::MarkupKind::Markdown,
                            value: md,
                        }),
                        range: None,
                    })
                },
            ),
            GotoDefinition::METHOD => self.with_position::<lsp_types::GotoDefinitionParams, _>(
                req,
                GotoDefinition::METHOD,
                |p| &p.text_document_position_params,
                |doc, uri, off| {
                    nav::definition(doc, uri, off).map(lsp_types::GotoDefinitionResponse::Scalar)
                },
            ),
            References::METHOD => {
                match req.extract::<lsp_types::ReferenceParams>(References::METHOD) {
                    Ok((_, p)) => {
                        let tp = &p.text_document_position;
                        let r = self.doc(&tp.text_document.uri).map(|doc| {
                            let off = doc.lines.offset(&doc.text, tp.position);
                            nav::references(
                                doc,
                                &tp.text_document.uri,
                                off,
                                p.context.include_declaration,
                            )
                        });
                        serde_json::to_value(r).map_err(|e| e.to_string())
                    }
                    Err(e) => Err(format!("{e:?}")),
                }
            }
            DocumentSymbolRequest::METHOD => {
                match req.extract::<lsp_types::DocumentSymbolParams>(DocumentSymbolRequest::METHOD)
                {
                    Ok((_, p)) => serde_json::to_value(self.doc(&p.text_document.uri).map(|d| {
                        lsp_types::DocumentSymbolResponse::Nested(nav::document_symbols(d))
                    }))
                    .map_err(|e| e.to_string()),
                    Err(e) => Err(format!("{e:?}")),
                }
            }
            Completion::METHOD => {
                match req.extract::<lsp_types::CompletionParams>(Completion::METHOD) {
                    Ok((_, p)) => serde_json::to_value(
                        self.doc(&p.text_document_position.text_document.uri)
                            .map(|d| lsp_types::CompletionResponse::Array(nav::completion(d))),
                    )
                    .map_err(|e| e.to_string()),
                    Err(e) => Err(format!("{e:?}")),
                }
            }
            Formatting::METHOD => {
                match req.extract::<lsp_types::DocumentFormattingParams>(Formatting::METHOD) {
                    Ok((_, p)) => {
                        let edits = self.doc(&p.text_document.uri).and_then(|d| {
                            // Files with syntax errors are not formatted (as `mpkc fmt`).
                            d.ast.as_ref()?;
                            let new = crate::fmt::format(&d.text);
                            let end = d.lines.position(&d.text, d.text.len());
                            Some(if new == d.text {
                                Vec::new()
                            } else {
                                vec![TextEdit {
                                    range: lsp_types::Range {
                                        start: lsp_types::Position::new(0, 0),
                                        end,
                                    },
                                    new_text: new,
                                }]
                            })
                        });
                        serde_json::to_value(edits).map_err(|e| e.to_string())
                    }
                    Err(e) => Err(format!("{e:?}")),
                }
            }
            DEBUG_PANIC => {
                panic!("mpkc/debugPanic: a deliberate panic to test the server's recovery")
            }
            _ => {
                return Response::new_err(
                    id,
                    ErrorCode::MethodNotFound as i32,
                    format!("mpkc lsp does not handle `{method}`"),
                )
            }
        };
        match result {
            Ok(v) => Response::new_ok(id, v),
            Err(e) => Response::new_err(id, ErrorCode::InvalidParams as i32, e),
        }
    }

    /// Extracts params `P` of a position request and runs `f` on its document and byte offset.
    fn with_position<P: serde::de::DeserializeOwned, R: serde::Serialize>(
        &self,
        req: Request,
        method: &str,
        pos: impl Fn(&P) -> &lsp_types::TextDocumentPositionParams,
        f: impl Fn(&Document, &Uri, usize) -> Option<R>,
    ) -> Result<serde_json::Value, String> {
        let (_, p) = req.extract::<P>(method).map_err(|e| format!("{e:?}"))?;
        let tp = pos(&p);
        let r = self.doc(&tp.text_document.uri).and_then(|doc| {
            let off = doc.lines.offset(&doc.text, tp.position);
            f(doc, &tp.text_document.uri, off)
        });
        serde_json::to_value(r).map_err(|e| e.to_string())
    }
}

/// One step of the session loop's input: the next message, with the pending queue first.
struct Input {
    rx: crossbeam_channel::Receiver<Incoming>,
    pending: std::collections::VecDeque<Incoming>,
}

impl Input {
    fn next(&mut self) -> Option<Incoming> {
        self.pending.pop_front().or_else(|| self.rx.recv().ok())
    }

    /// Drops a didChange of `uri` that the next queued message (another full-text change of the
    /// same document) replaces, so that a burst of edits is analysed once.
    fn superseded(&mut self, uri: &str) -> bool {
        while let Ok(m) = self.rx.try_recv() {
            self.pending.push_back(m);
        }
        match self.pending.front() {
            Some(Incoming::Msg(Message::Notification(n)))
                if n.method == DidChangeTextDocument::METHOD =>
            {
                n.params
                    .pointer("/textDocument/uri")
                    .and_then(|u| u.as_str())
                    == Some(uri)
            }
            _ => false,
        }
    }
}

/// Serves one session: `initialize`, then requests and notifications until `exit` (status 0
/// after `shutdown`, 1 without) or the end of input.
pub fn serve(
    rx: crossbeam_channel::Receiver<Incoming>,
    tx: &crossbeam_channel::Sender<Outgoing>,
) -> u8 {
    let send = |m: Message| {
        let _ = tx.send(Outgoing::Msg(m));
    };
    let error = |id: Value, code: i32, message: String| {
        let _ = tx.send(Outgoing::Error { id, code, message });
    };
    let mut input = Input {
        rx,
        pending: Default::default(),
    };
    let mut server = Server::default();
    let (mut initialized, mut shutdown) = (false, false);
    while let Some(item) = input.next() {
        let msg = match item {
            Incoming::Invalid { id, code, message } => {
                error(id.unwrap_or(Value::Null), code, message);
                continue;
            }
            Incoming::Msg(m) => m,
        };
        match msg {
            Message::Request(req) => {
                let (id, method) = (req.id.clone(), req.method.clone());
                if shutdown {
                    send(Message::Response(Response::new_err(
                        id,
                        ErrorCode::InvalidRequest as i32,
                        "the server is shutting down".into(),
                    )));
                } else if method == "initialize" {
                    let init = InitializeResult {
                        capabilities: capabilities(),
                        server_info: Some(ServerInfo {
                            name: "mpkc".into(),
                            version: Some(crate::VERSION.into()),
                        }),
                    };
                    initialized = true;
                    send(Message::Response(Response::new_ok(id, init)));
                } else if !initialized {
                    send(Message::Response(Response::new_err(
                        id,
                        ErrorCode::ServerNotInitialized as i32,
                        "initialize first".into(),
                    )));
                } else if method == "shutdown" {
                    shutdown = true;
                    send(Message::Response(Response::new_ok(id, Value::Null)));
                } else {
                    let resp = catch_unwind(AssertUnwindSafe(|| server.request(req)))
                        .unwrap_or_else(|p| {
                            eprintln!(
                                "mpkc lsp: request `{method}` panicked: {}; the server goes on",
                                panic_message(&*p)
                            );
                            internal_error(id, &method)
                        });
                    send(Message::Response(resp));
                }
            }
            Message::Notification(n) => {
                if n.method == "exit" {
                    return if shutdown { 0 } else { 1 };
                }
                if !initialized || shutdown {
                    continue;
                }
                if n.method == DidChangeTextDocument::METHOD {
                    let uri = n
                        .params
                        .pointer("/textDocument/uri")
                        .and_then(|u| u.as_str())
                        .unwrap_or_default()
                        .to_string();
                    if input.superseded(&uri) {
                        continue;
                    }
                }
                let method = n.method.clone();
                match catch_unwind(AssertUnwindSafe(|| server.notify(n))) {
                    Ok(out) => out.into_iter().for_each(|o| send(Message::Notification(o))),
                    Err(p) => eprintln!(
                        "mpkc lsp: notification `{method}` panicked: {}; the server goes on",
                        panic_message(&*p)
                    ),
                }
            }
            Message::Response(_) => {}
        }
    }
    if shutdown {
        0
    } else {
        1
    }
}

fn internal_error(id: RequestId, method: &str) -> Response {
    Response::new_err(
        id,
        ErrorCode::InternalError as i32,
        format!("mpkc lsp: internal error while handling `{method}` (logged); the server goes on"),
    )
}

/// `mpkc lsp`: serves on stdio. Returns the exit status (0 after `shutdown` and `exit`).
pub fn run_stdio() -> u8 {
    let (rx, tx, threads) = transport::stdio();
    let status = serve(rx, &tx);
    // Close the writer's channel so that it flushes and ends; the reader ends with stdin (it is
    // not joined: a client may keep stdin open after `exit`).
    drop(tx);
    let mut threads = threads;
    if threads.len() == 2 {
        let _ = threads.remove(1).join();
    }
    status
}
