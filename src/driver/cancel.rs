//! Co-operative cancellation of a check: a [`Token`] installed on the checking thread with
//! [`Token::run`] makes the driver stop between task instances (and before the derived
//! contracts) once the token is cancelled from another thread. The result of a cancelled check
//! is partial and must be thrown away by whoever cancelled it (the language server abandons the
//! analysis of a document version that a newer change, `exit` or the end of input replaced).
//!
//! The token is ambient (a thread-local) so that the CLI's one entry point,
//! [`super::check_sources`], serves the language server unchanged: without an installed token
//! nothing is ever cancelled.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A cancellation flag shared between the thread that runs a check and the one that may cancel
/// it. Clones share the flag.
#[derive(Clone, Debug, Default)]
pub struct Token(Arc<AtomicBool>);

thread_local! {
    static CURRENT: RefCell<Option<Token>> = const { RefCell::new(None) };
}

impl Token {
    /// A token not cancelled yet.
    pub fn new() -> Token {
        Token::default()
    }

    /// Asks every check running under this token to stop at its next task boundary.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// True once [`Token::cancel`] was called on this token or a clone.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Runs `f` with this token installed on the current thread (the previous one, if any, is
    /// restored afterwards, also when `f` panics).
    pub fn run<R>(&self, f: impl FnOnce() -> R) -> R {
        struct Restore(Option<Token>);
        impl Drop for Restore {
            fn drop(&mut self) {
                let previous = self.0.take();
                CURRENT.with(|c| *c.borrow_mut() = previous);
            }
        }
        let _restore = Restore(CURRENT.with(|c| c.borrow_mut().replace(self.clone())));
        f()
    }
}

/// True when the token installed on this thread (if any) is cancelled: the driver's checks
/// stop at the next task boundary.
pub fn requested() -> bool {
    CURRENT.with(|c| c.borrow().as_ref().is_some_and(Token::is_cancelled))
}
