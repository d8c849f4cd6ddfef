//! Analyses run off the session loop, on one worker thread, so that the loop keeps reading input
//! and answering requests while a document is checked (a 5 MB contract takes tens of seconds).
//! Each analysis runs under a [`Token`]; the loop cancels it when a newer change of that
//! document arrives, when the document closes, on `shutdown`, `exit` or the end of input, and the
//! driver stops at its next task boundary ([`crate::driver::cancel`]). A result that arrives for
//! a version the document no longer has is dropped.
//!
//! [`Stats`] counts what happened to every analysis; the request `mpkc/stats` returns it, so that
//! tests can count analyses instead of timing them.

use super::convert;
use super::document::Document;
use super::sync::Pending;
use crate::driver::cancel::Token;
use crossbeam_channel::{Receiver, Sender};
use lsp_types::PublishDiagnosticsParams;
use serde::Serialize;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// The request that returns [`Stats`].
pub const STATS: &str = "mpkc/stats";

/// What happened to the analyses of a session.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Stats {
    /// Analyses handed to the worker.
    pub started: u64,
    /// Analyses that ran to their end.
    pub finished: u64,
    /// Analyses abandoned through their token (before or while running).
    pub cancelled: u64,
    /// Analyses whose handler panicked (logged).
    pub failed: u64,
    /// Finished analyses whose diagnostics were published (of the document's current version).
    pub published: u64,
    /// Finished analyses dropped because the document had changed or closed meanwhile.
    pub stale: u64,
}

/// An analysis result: the document and the diagnostics to publish.
pub struct Analysed {
    /// The analysed document.
    pub doc: Arc<Document>,
    /// Its diagnostics, with its version.
    pub publish: PublishDiagnosticsParams,
}

/// What the worker sends back for one job.
pub struct Done {
    /// The job.
    pub pending: Pending,
    /// The result; `None` when cancelled or failed.
    pub result: Option<Analysed>,
    /// True when it was cancelled.
    pub cancelled: bool,
}

/// The document's name in messages: the last segment of its URI (as `mpkc check` names a file
/// given by its name).
pub fn path_of(uri: &lsp_types::Uri) -> String {
    let s = uri.as_str();
    s.rsplit('/').next().unwrap_or(s).to_string()
}

/// Analyses `pending` under `token` (on the calling thread): the CLI's pipeline, the symbol
/// index and the conversion of every diagnostic to LSP terms. `None` when cancelled.
pub fn analyse(pending: &Pending, token: &Token) -> Option<Analysed> {
    let doc = Document::analyze(&path_of(&pending.uri), (*pending.text).clone(), token)?;
    let diagnostics = doc
        .checked
        .diags
        .iter()
        .map(|d| convert::diagnostic(d, &doc.text, &doc.lines, &pending.uri))
        .collect();
    Some(Analysed {
        doc: Arc::new(doc),
        publish: PublishDiagnosticsParams {
            uri: pending.uri.clone(),
            diagnostics,
            version: Some(pending.version),
        },
    })
}

struct Job {
    pending: Pending,
    token: Token,
}

/// The worker thread and the analysis it runs.
pub struct Analyzer {
    jobs: Sender<Job>,
    done: Receiver<Done>,
    running: Option<(String, i32, Token)>,
    stats: Stats,
}

impl Default for Analyzer {
    fn default() -> Self {
        Analyzer::new()
    }
}

impl Analyzer {
    /// Starts the worker. It ends when the analyzer is dropped (after its current job, which
    /// the owner cancels first); nobody waits for it.
    pub fn new() -> Analyzer {
        let (jobs, job_rx) = crossbeam_channel::unbounded::<Job>();
        let (done_tx, done) = crossbeam_channel::unbounded::<Done>();
        std::thread::spawn(move || worker(job_rx, done_tx));
        Analyzer {
            jobs,
            done,
            running: None,
            stats: Stats::default(),
        }
    }

    /// Where finished jobs arrive.
    pub fn done(&self) -> &Receiver<Done> {
        &self.done
    }

    /// True when no job is running.
    pub fn idle(&self) -> bool {
        self.running.is_none()
    }

    /// Hands `pending` to the worker (the caller checks [`Analyzer::idle`] first).
    pub fn start(&mut self, pending: Pending) {
        let token = Token::new();
        self.running = Some((pending.key.clone(), pending.version, token.clone()));
        self.stats.started += 1;
        if let Err(e) = self.jobs.send(Job { pending, token }) {
            // The worker is gone (it cannot panic: jobs run under catch_unwind); report the
            // job back as failed so that the document is not left waiting.
            self.running = None;
            self.stats.failed += 1;
            eprintln!(
                "mpkc lsp: the analysis worker is gone; {} not analysed",
                e.0.pending.key
            );
        }
    }

    /// Cancels the running analysis when it is of document `key` (any version, or only
    /// versions below `newer`).
    pub fn cancel_doc(&self, key: &str, newer: Option<i32>) {
        if let Some((k, v, token)) = &self.running {
            if k == key && newer.is_none_or(|n| *v < n) {
                token.cancel();
            }
        }
    }

    /// Cancels whatever runs.
    pub fn cancel_all(&self) {
        if let Some((_, _, token)) = &self.running {
            token.cancel();
        }
    }

    /// Accounts for a job the worker finished; the caller then decides whether to publish
    /// ([`Analyzer::published`]) or drop ([`Analyzer::stale`]) its result.
    pub fn finished(&mut self, done: &Done) {
        self.running = None;
        match (&done.result, done.cancelled) {
            (_, true) => self.stats.cancelled += 1,
            (Some(_), false) => self.stats.finished += 1,
            (None, false) => self.stats.failed += 1,
        }
    }

    /// Counts a published result.
    pub fn published(&mut self) {
        self.stats.published += 1;
    }

    /// Counts a finished result that was dropped as stale.
    pub fn stale(&mut self) {
        self.stats.stale += 1;
    }

    /// The counters so far.
    pub fn stats(&self) -> Stats {
        self.stats
    }
}

fn worker(jobs: Receiver<Job>, done: Sender<Done>) {
    for Job { pending, token } in jobs {
        let result = if token.is_cancelled() {
            None
        } else {
            catch_unwind(AssertUnwindSafe(|| analyse(&pending, &token))).unwrap_or_else(|p| {
                eprintln!(
                    "mpkc lsp: the analysis of {} (version {}) panicked: {}; the server goes on",
                    pending.key,
                    pending.version,
                    super::panic_message(&*p)
                );
                None
            })
        };
        // A result finished after its cancellation is as stale as an abandoned one.
        let cancelled = token.is_cancelled();
        let result = result.filter(|_| !cancelled);
        if done
            .send(Done {
                pending,
                result,
                cancelled,
            })
            .is_err()
        {
            break;
        }
    }
}
