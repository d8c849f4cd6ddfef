//! `mpkc lsp`: a language server over stdio (lsp-server + lsp-types) on the same pipeline as the
//! CLI. Full-document sync; on open, change and save the document is re-analysed by the CLI's own
//! entry point and its diagnostics published (same codes, messages, labels and help as
//! `mpkc check`, secondary labels as related information). Requests: hover, definition,
//! references, document symbols, completion, formatting.
//!
//! Structure: [`transport`] and [`frame`] read and write the stdio stream; [`session`] is the
//! loop; [`sync`] keeps the open documents' texts and versions; [`analysis`] runs analyses on a
//! worker thread, cancellably; [`document`] is one analysed version; [`requests`] answers from
//! it.
//!
//! Bad input never ends the server: malformed frames and messages are answered with errors, the
//! analysis never panics on any input (the compiler's own guarantee), and a request, notification
//! or analysis whose handler panics anyway is caught, logged on stderr (and a request answered
//! with an InternalError); the server keeps serving. The request `mpkc/debugPanic` panics on
//! purpose, for the test of that guarantee; `mpkc/stats` returns the analysis counters
//! ([`analysis::Stats`]) and the number of open documents.

pub mod analysis;
pub mod convert;
pub mod document;
pub mod frame;
pub mod hover;
pub mod index;
pub mod nav;
pub mod requests;
pub mod session;
pub mod sync;
pub mod transport;
pub mod words;

use lsp_types::{
    CompletionOptions, HoverProviderCapability, OneOf, SaveOptions, ServerCapabilities,
    TextDocumentSyncCapability, TextDocumentSyncKind, TextDocumentSyncOptions,
    TextDocumentSyncSaveOptions,
};

pub use analysis::STATS;
pub use requests::DEBUG_PANIC;
pub use session::serve;

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

/// The message of a caught panic.
pub(crate) fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".into())
}

/// `mpkc lsp`: serves on stdio. Returns the exit status (0 after `shutdown` and `exit`).
pub fn run_stdio() -> u8 {
    let (rx, tx, threads) = transport::stdio();
    let status = serve(rx, &tx);
    // Close the writer's channel so that it flushes and ends. Neither the reader (it ends with
    // stdin, which a client may keep open after `exit`) nor the analysis worker (its analysis is
    // cancelled; it may still be between two task boundaries) is waited for.
    drop(tx);
    let mut threads = threads;
    if threads.len() == 2 {
        let _ = threads.remove(1).join();
    }
    status
}
