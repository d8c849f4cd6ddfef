//! The open documents as the client's notifications leave them: text, version, and the latest
//! finished analysis (which may be of an older version while a newer one waits or runs).
//!
//! Rules (LSP 3.17, "Text Document Synchronization"):
//! - `didOpen` sets the text and version (re-opening replaces both);
//! - `didChange` applies every content change in order (a change without a range replaces the
//!   whole text, one with a range replaces that range); its version must be higher than the
//!   document's, a stale or repeated version is ignored; a change with no content changes only
//!   raises the version; a change of a document that was never opened is ignored;
//! - `didSave` with a text different from the document's replaces it (same version);
//! - `didClose` forgets the document.
//!
//! Every text change marks the document for analysis; only the analysis is coalesced (a burst of
//! changes is analysed once, at its last version), never the edits.

use super::convert::LineIndex;
use super::document::Document;
use lsp_types::{DidChangeTextDocumentParams, Uri};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// One open document.
pub struct OpenDoc {
    /// Its URI as the client spelled it.
    pub uri: Uri,
    /// The client's version of `text`.
    pub version: i32,
    /// The current text.
    pub text: Arc<String>,
    /// The latest finished analysis and the version it analysed (`None` before the first).
    pub analysed: Option<(i32, Arc<Document>)>,
    /// The current text still needs an analysis.
    dirty: bool,
    /// The document is in the queue of documents to analyse.
    queued: bool,
}

impl OpenDoc {
    /// The analysis of the current version, when it is done.
    pub fn current(&self) -> Option<&Document> {
        self.analysed
            .as_ref()
            .filter(|(v, _)| *v == self.version && !self.dirty)
            .map(|(_, d)| &**d)
    }
}

/// Why a notification changed nothing (for the log).
#[derive(Debug, PartialEq, Eq)]
pub enum Ignored {
    /// `didChange` of a document that is not open.
    NotOpen(String),
    /// `didChange` whose version is not above the document's.
    Stale {
        /// The document.
        uri: String,
        /// The version the change carried.
        got: i32,
        /// The document's version.
        current: i32,
    },
}

impl std::fmt::Display for Ignored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ignored::NotOpen(uri) => write!(f, "didChange of {uri}, which is not open: ignored"),
            Ignored::Stale { uri, got, current } => write!(
                f,
                "didChange of {uri} with version {got}, not above its version {current}: ignored"
            ),
        }
    }
}

/// A version of a document to analyse.
#[derive(Clone, Debug)]
pub struct Pending {
    /// The document's key (its URI as a string).
    pub key: String,
    /// Its URI.
    pub uri: Uri,
    /// The version.
    pub version: i32,
    /// The text of that version.
    pub text: Arc<String>,
}

/// The open documents, and the order in which changed ones wait for analysis.
#[derive(Default)]
pub struct Docs {
    map: HashMap<String, OpenDoc>,
    queue: VecDeque<String>,
}

impl Docs {
    /// The open document `uri`.
    pub fn get(&self, uri: &Uri) -> Option<&OpenDoc> {
        self.map.get(uri.as_str())
    }

    /// How many documents are open.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True when no document is open.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// `didOpen`.
    pub fn open(&mut self, uri: Uri, version: i32, text: String) {
        let key = uri.as_str().to_string();
        self.map.insert(
            key.clone(),
            OpenDoc {
                uri,
                version,
                text: Arc::new(text),
                analysed: None,
                dirty: false,
                queued: false,
            },
        );
        self.mark(&key);
    }

    /// `didChange`: applies the changes in order. Returns the document's key when it changed.
    pub fn change(&mut self, p: DidChangeTextDocumentParams) -> Result<String, Ignored> {
        let key = p.text_document.uri.as_str().to_string();
        let Some(doc) = self.map.get_mut(&key) else {
            return Err(Ignored::NotOpen(key));
        };
        let version = p.text_document.version;
        if version <= doc.version {
            return Err(Ignored::Stale {
                uri: key,
                got: version,
                current: doc.version,
            });
        }
        doc.version = version;
        if !p.content_changes.is_empty() {
            let text = Arc::make_mut(&mut doc.text);
            for change in p.content_changes {
                match change.range {
                    None => *text = change.text,
                    Some(range) => {
                        let lines = LineIndex::new(text);
                        let a = lines.offset(text, range.start);
                        let b = lines.offset(text, range.end);
                        text.replace_range(a.min(b)..a.max(b), &change.text);
                    }
                }
            }
        }
        // A new version is analysed even when its text is unchanged: its diagnostics carry
        // the version the client now holds.
        self.mark(&key);
        Ok(key)
    }

    /// `didSave`: a saved text that differs from the document's replaces it. Returns the key
    /// when the text changed.
    pub fn save(&mut self, uri: &Uri, text: Option<String>) -> Option<String> {
        let doc = self.map.get_mut(uri.as_str())?;
        let text = text.filter(|t| *t != *doc.text)?;
        doc.text = Arc::new(text);
        let key = uri.as_str().to_string();
        self.mark(&key);
        Some(key)
    }

    /// `didClose`: forgets the document. Returns true when it was open.
    pub fn close(&mut self, uri: &Uri) -> bool {
        self.map.remove(uri.as_str()).is_some()
    }

    fn mark(&mut self, key: &str) {
        if let Some(doc) = self.map.get_mut(key) {
            doc.dirty = true;
            if !doc.queued {
                doc.queued = true;
                self.queue.push_back(key.to_string());
            }
        }
    }

    /// The next document version to analyse (documents in the order they changed), taken off
    /// the queue; it stays dirty until [`Docs::finished`] gets its analysis.
    pub fn next_pending(&mut self) -> Option<Pending> {
        while let Some(key) = self.queue.pop_front() {
            let Some(doc) = self.map.get_mut(&key) else {
                continue;
            };
            doc.queued = false;
            if doc.dirty {
                return Some(Pending {
                    key,
                    uri: doc.uri.clone(),
                    version: doc.version,
                    text: doc.text.clone(),
                });
            }
        }
        None
    }

    /// Whether the text of `version` of `key` is still the document's (an analysis of it is
    /// current).
    pub fn is_current(&self, key: &str, version: i32, text: &Arc<String>) -> bool {
        self.map
            .get(key)
            .is_some_and(|d| d.version == version && Arc::ptr_eq(&d.text, text))
    }

    /// Records the finished analysis of `pending`. Returns true when it is the current
    /// version's (to publish); a stale one is dropped and the document waits for its next
    /// analysis. `None` (cancelled or failed) puts a still-changed document back in the queue.
    pub fn finished(&mut self, pending: &Pending, doc: Option<Arc<Document>>) -> bool {
        let current = self.is_current(&pending.key, pending.version, &pending.text);
        match (current, doc) {
            (true, Some(analysed)) => {
                if let Some(d) = self.map.get_mut(&pending.key) {
                    d.analysed = Some((pending.version, analysed));
                    d.dirty = false;
                }
                true
            }
            (true, None) => {
                // A failed analysis (a panic, logged) is not retried until the next change.
                if let Some(d) = self.map.get_mut(&pending.key) {
                    d.dirty = false;
                }
                false
            }
            (false, _) => {
                self.mark_if_dirty(&pending.key);
                false
            }
        }
    }

    fn mark_if_dirty(&mut self, key: &str) {
        if self.map.get(key).is_some_and(|d| d.dirty) {
            self.mark(key);
        }
    }
}
