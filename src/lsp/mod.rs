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

use document::Document;
use lsp_server::{Connection, ErrorCode, Message, Notification, Request, RequestId, Response};
use lsp_types::notification::{DidChangeTextDocument, DidCloseTextDocument, DidOpenTextDocument, DidSaveTextDocument, Notification as _, PublishDiagnostics};
use lsp_types::request::{Completion, DocumentSymbolRequest, Formatting, GotoDefinition, HoverRequest, References, Request as _};
use lsp_types::{
    CompletionOptions, HoverProviderCapability, InitializeResult, OneOf, PublishDiagnosticsParams, SaveOptions, ServerCapabilities, ServerInfo,
    TextDocumentSyncCapability, TextDocumentSyncKind, TextDocumentSyncOptions, TextDocumentSyncSaveOptions, TextEdit, Uri,
};
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The method that panics on purpose (tests).
pub const DEBUG_PANIC: &str = "mpkc/debugPanic";

/// What the server advertises.
pub fn capabilities() -> ServerCapabilities {
    ServerCapabilities {
        text_document_sync: Some(TextDocumentSyncCapability::Options(TextDocumentSyncOptions {
            open_close: Some(true),
            change: Some(TextDocumentSyncKind::FULL),
            save: Some(TextDocumentSyncSaveOptions::SaveOptions(SaveOptions { include_text: Some(true) })),
            ..Default::default()
        })),
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
    docs: HashMap<String, (Uri, Document)>,
}

fn path_of(uri: &Uri) -> String {
    let s = uri.as_str();
    s.rsplit('/').next().unwrap_or(s).to_string()
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned()).unwrap_or_else(|| "panic".into())
}

impl Server {
    /// Analyses `text` as the document `uri` and returns the diagnostics to publish.
    pub fn update(&mut self, uri: Uri, text: String) -> Notification {
        let doc = Document::analyze(&path_of(&uri), text);
        let diagnostics = doc
            .checked
            .diags
            .iter()
            .map(|d| convert::diagnostic(d, &doc.text, &doc.lines, &uri))
            .collect();
        let params = PublishDiagnosticsParams { uri: uri.clone(), diagnostics, version: None };
        self.docs.insert(uri.as_str().to_string(), (uri, doc));
        Notification::new(PublishDiagnostics::METHOD.to_string(), params)
    }

    fn doc(&self, uri: &Uri) -> Option<&Document> {
        self.docs.get(uri.as_str()).map(|(_, d)| d)
    }

    /// Handles one notification; returns what to send.
    pub fn notify(&mut self, n: Notification) -> Vec<Notification> {
        match n.method.as_str() {
            DidOpenTextDocument::METHOD => match n.extract::<lsp_types::DidOpenTextDocumentParams>(DidOpenTextDocument::METHOD) {
                Ok(p) => vec![self.update(p.text_document.uri, p.text_document.text)],
                Err(_) => Vec::new(),
            },
            DidChangeTextDocument::METHOD => match n.extract::<lsp_types::DidChangeTextDocumentParams>(DidChangeTextDocument::METHOD) {
                // Full sync: the last change holds the whole text.
                Ok(p) => p.content_changes.into_iter().last().map(|c| vec![self.update(p.text_document.uri, c.text)]).unwrap_or_default(),
                Err(_) => Vec::new(),
            },
            DidSaveTextDocument::METHOD => match n.extract::<lsp_types::DidSaveTextDocumentParams>(DidSaveTextDocument::METHOD) {
                Ok(p) => {
                    let text = p.text.or_else(|| self.doc(&p.text_document.uri).map(|d| d.text.clone()));
                    text.map(|t| vec![self.update(p.text_document.uri, t)]).unwrap_or_default()
                }
                Err(_) => Vec::new(),
            },
            DidCloseTextDocument::METHOD => {
                if let Ok(p) = n.extract::<lsp_types::DidCloseTextDocumentParams>(DidCloseTextDocument::METHOD) {
                    self.docs.remove(p.text_document.uri.as_str());
                    let params = PublishDiagnosticsParams { uri: p.text_document.uri, diagnostics: Vec::new(), version: None };
                    return vec![Notification::new(PublishDiagnostics::METHOD.to_string(), params)];
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
            HoverRequest::METHOD => self.with_position::<lsp_types::HoverParams, _>(req, HoverRequest::METHOD, |p| &p.text_document_position_params, |doc, _, off| {
                hover::hover(doc, off).map(|md| lsp_types::Hover {
                    contents: lsp_types::HoverContents::Markup(lsp_types::MarkupContent { kind: lsp_types::MarkupKind::Markdown, value: md }),
                    range: None,
                })
            }),
            GotoDefinition::METHOD => self.with_position::<lsp_types::GotoDefinitionParams, _>(req, GotoDefinition::METHOD, |p| &p.text_document_position_params, |doc, uri, off| {
                nav::definition(doc, uri, off).map(lsp_types::GotoDefinitionResponse::Scalar)
            }),
            References::METHOD => match req.extract::<lsp_types::ReferenceParams>(References::METHOD) {
                Ok((_, p)) => {
                    let tp = &p.text_document_position;
                    let r = self.doc(&tp.text_document.uri).map(|doc| {
                        let off = doc.lines.offset(&doc.text, tp.position);
                        nav::references(doc, &tp.text_document.uri, off, p.context.include_declaration)
                    });
                    serde_json::to_value(r).map_err(|e| e.to_string())
                }
                Err(e) => Err(format!("{e:?}")),
            },
            DocumentSymbolRequest::METHOD => match req.extract::<lsp_types::DocumentSymbolParams>(DocumentSymbolRequest::METHOD) {
                Ok((_, p)) => serde_json::to_value(self.doc(&p.text_document.uri).map(|d| lsp_types::DocumentSymbolResponse::Nested(nav::document_symbols(d))))
                    .map_err(|e| e.to_string()),
                Err(e) => Err(format!("{e:?}")),
            },
            Completion::METHOD => match req.extract::<lsp_types::CompletionParams>(Completion::METHOD) {
                Ok((_, p)) => serde_json::to_value(self.doc(&p.text_document_position.text_document.uri).map(|d| lsp_types::CompletionResponse::Array(nav::completion(d))))
                    .map_err(|e| e.to_string()),
                Err(e) => Err(format!("{e:?}")),
            },
            Formatting::METHOD => match req.extract::<lsp_types::DocumentFormattingParams>(Formatting::METHOD) {
                Ok((_, p)) => {
                    let edits = self.doc(&p.text_document.uri).and_then(|d| {
                        // Files with syntax errors are not formatted (as `mpkc fmt`).
                        d.ast.as_ref()?;
                        let new = crate::fmt::format(&d.text);
                        let end = d.lines.position(&d.text, d.text.len());
                        Some(if new == d.text {
                            Vec::new()
                        } else {
                            vec![TextEdit { range: lsp_types::Range { start: lsp_types::Position::new(0, 0), end }, new_text: new }]
                        })
                    });
                    serde_json::to_value(edits).map_err(|e| e.to_string())
                }
                Err(e) => Err(format!("{e:?}")),
            },
            DEBUG_PANIC => panic!("mpkc/debugPanic: a deliberate panic to test the server's recovery"),
            _ => return Response::new_err(id, ErrorCode::MethodNotFound as i32, format!("mpkc lsp does not handle `{method}`")),
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

/// Serves `connection` until `shutdown` and `exit`.
pub fn serve(connection: &Connection) -> Result<(), String> {
    let init = InitializeResult {
        capabilities: capabilities(),
        server_info: Some(ServerInfo { name: "mpkc".into(), version: Some(crate::VERSION.into()) }),
    };
    let (id, _params) = connection.initialize_start().map_err(|e| e.to_string())?;
    connection.initialize_finish(id, serde_json::to_value(init).map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
    let mut server = Server::default();
    for msg in &connection.receiver {
        match msg {
            Message::Request(req) => {
                if connection.handle_shutdown(&req).map_err(|e| e.to_string())? {
                    return Ok(());
                }
                let (id, method) = (req.id.clone(), req.method.clone());
                let resp = catch_unwind(AssertUnwindSafe(|| server.request(req))).unwrap_or_else(|p| {
                    eprintln!("mpkc lsp: request `{method}` panicked: {}; the server goes on", panic_message(&*p));
                    internal_error(id, &method)
                });
                connection.sender.send(Message::Response(resp)).map_err(|e| e.to_string())?;
            }
            Message::Notification(n) => {
                let method = n.method.clone();
                match catch_unwind(AssertUnwindSafe(|| server.notify(n))) {
                    Ok(out) => {
                        for o in out {
                            connection.sender.send(Message::Notification(o)).map_err(|e| e.to_string())?;
                        }
                    }
                    Err(p) => eprintln!("mpkc lsp: notification `{method}` panicked: {}; the server goes on", panic_message(&*p)),
                }
            }
            Message::Response(_) => {}
        }
    }
    Ok(())
}

fn internal_error(id: RequestId, method: &str) -> Response {
    Response::new_err(id, ErrorCode::InternalError as i32, format!("mpkc lsp: internal error while handling `{method}` (logged); the server goes on"))
}

/// `mpkc lsp`: serves on stdio. Returns the exit status.
pub fn run_stdio() -> u8 {
    let (connection, io_threads) = Connection::stdio();
    let r = serve(&connection);
    // Drop the connection first, or joining the IO threads waits forever.
    drop(connection);
    let joined = io_threads.join();
    match (r, joined) {
        (Ok(()), Ok(())) => 0,
        (Err(e), _) => {
            eprintln!("mpkc lsp: {e}");
            1
        }
        (_, Err(e)) => {
            eprintln!("mpkc lsp: {e}");
            1
        }
    }
}
