//! Answers to the document requests: hover, definition, references, document symbols,
//! completion, formatting. They read the document's latest finished analysis (which may be of an
//! older version while a newer one is analysed: positions are resolved in the text that analysis
//! saw); formatting always formats the current text. An unknown document gets a `null` result.

use super::document::Document;
use super::sync::Docs;
use super::{hover, nav};
use lsp_server::{ErrorCode, Request, Response};
use lsp_types::request::{
    Completion, DocumentSymbolRequest, Formatting, GotoDefinition, HoverRequest, References,
    Request as _,
};
use lsp_types::{TextEdit, Uri};

/// The method that panics on purpose (tests of the server's recovery).
pub const DEBUG_PANIC: &str = "mpkc/debugPanic";

/// The latest analysis of `uri`.
fn analysed<'a>(docs: &'a Docs, uri: &Uri) -> Option<&'a Document> {
    docs.get(uri)
        .and_then(|d| d.analysed.as_ref())
        .map(|(_, d)| &**d)
}

/// Answers `req` (a method it does not know: MethodNotFound; bad params: InvalidParams).
pub fn answer(docs: &Docs, req: Request) -> Response {
    let id = req.id.clone();
    let method = req.method.clone();
    let result: Result<serde_json::Value, String> = match method.as_str() {
        HoverRequest::METHOD => with_position::<lsp_types::HoverParams, _>(
            docs,
            req,
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
        GotoDefinition::METHOD => with_position::<lsp_types::GotoDefinitionParams, _>(
            docs,
            req,
            |p| &p.text_document_position_params,
            |doc, uri, off| {
                nav::definition(doc, uri, off).map(lsp_types::GotoDefinitionResponse::Scalar)
            },
        ),
        References::METHOD => match req.extract::<lsp_types::ReferenceParams>(References::METHOD) {
            Ok((_, p)) => {
                let tp = &p.text_document_position;
                let r = analysed(docs, &tp.text_document.uri).map(|doc| {
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
        },
        DocumentSymbolRequest::METHOD => {
            match req.extract::<lsp_types::DocumentSymbolParams>(DocumentSymbolRequest::METHOD) {
                Ok((_, p)) => {
                    serde_json::to_value(analysed(docs, &p.text_document.uri).map(|d| {
                        lsp_types::DocumentSymbolResponse::Nested(nav::document_symbols(d))
                    }))
                    .map_err(|e| e.to_string())
                }
                Err(e) => Err(format!("{e:?}")),
            }
        }
        Completion::METHOD => {
            match req.extract::<lsp_types::CompletionParams>(Completion::METHOD) {
                Ok((_, p)) => serde_json::to_value(
                    analysed(docs, &p.text_document_position.text_document.uri)
                        .map(|d| lsp_types::CompletionResponse::Array(nav::completion(d))),
                )
                .map_err(|e| e.to_string()),
                Err(e) => Err(format!("{e:?}")),
            }
        }
        Formatting::METHOD => {
            match req.extract::<lsp_types::DocumentFormattingParams>(Formatting::METHOD) {
                Ok((_, p)) => serde_json::to_value(formatting(docs, &p.text_document.uri))
                    .map_err(|e| e.to_string()),
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

/// The edits that format the current text of `uri`: none when it is formatted, one replacing
/// the whole text otherwise; `None` for an unknown document or a text with syntax errors (as
/// `mpkc fmt` refuses it).
fn formatting(docs: &Docs, uri: &Uri) -> Option<Vec<TextEdit>> {
    let open = docs.get(uri)?;
    let text: &str = &open.text;
    let parses = match open.current() {
        Some(doc) => doc.ast.is_some(),
        None => crate::front::parse_file(text).is_ok(),
    };
    if !parses {
        return None;
    }
    let new = crate::fmt::format(text);
    let lines = super::convert::LineIndex::new(text);
    let end = lines.position(text, text.len());
    Some(if new == text {
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
}

/// Extracts params `P` of a position request and runs `f` on its document and byte offset.
fn with_position<P: serde::de::DeserializeOwned, R: serde::Serialize>(
    docs: &Docs,
    req: Request,
    pos: impl Fn(&P) -> &lsp_types::TextDocumentPositionParams,
    f: impl Fn(&Document, &Uri, usize) -> Option<R>,
) -> Result<serde_json::Value, String> {
    let method = req.method.clone();
    let (_, p) = req.extract::<P>(&method).map_err(|e| format!("{e:?}"))?;
    let tp = pos(&p);
    let r = analysed(docs, &tp.text_document.uri).and_then(|doc| {
        let off = doc.lines.offset(&doc.text, tp.position);
        f(doc, &tp.text_document.uri, off)
    });
    serde_json::to_value(r).map_err(|e| e.to_string())
}
