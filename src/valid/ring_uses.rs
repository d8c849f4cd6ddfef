//! E0311 for the uses of a consumer ring that its loader body does not open and close in
//! order (I-M7: a phase completed that no copy filled, or left incomplete), and E0304 for a use
//! whose copies do not add up to the bytes its `acquire` arms (I-M6):
//! a use is `RING.acquire(BYTES)`, its `RING.copy(OFFSET, src, BYTES)` calls, then
//! `RING.commit()` (`mpkc_ring.cuh`; `RING.load(src, BYTES)` is all three).
//!
//! - A `commit` with no open use (a second `commit`, or one before any `acquire`) advances the
//!   ring past a slot no copy filled: the consumer's `wait` on it never completes.
//! - An `acquire` (or `load`) while a use is open re-arms the next slot before the open one is
//!   committed; an `acquire` never committed leaves its slot to the next `acquire`, which waits
//!   for it: both desynchronise the ring's parity from the consumer's.
//! - A `copy` outside a use has no armed barrier to complete.
//! - `acquire(B)` arms the slot's full barrier with B bytes of expect_tx, and each copy
//!   completes its own bytes: fewer bytes never complete the phase (the consumer hangs), more
//!   complete it early (the consumer reads a slot still being written).
//!
//! The calls are read in the order the body's text gives them, which is the order they run
//! for straight-line code and for a loop whose body is a whole use. A call that would be out of
//! order just after a branch or loop keyword is taken for another branch's (`if (p) { copy;
//! commit(); } else { copy; commit(); }` is one use), and calls inside a lambda are left out
//! (they run where the lambda is called). The byte balance is checked only where the use's text
//! between `acquire` and `commit` has no branch or loop (its copies then run once each), no copy
//! of the ring lies in a lambda, and every count is a constant expression
//! ([`super::ring_copies`]).

use super::body::{call_args, calls_of, strip_comments_and_strings};
use super::body_constants::body_constants;
use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::{BodyIr, TaskIr};
use crate::span::Span;

/// One call of a ring's producer end: where it is (from the ring's name to its `)`), which
/// method, and its byte count where that is a constant.
struct Call {
    at: std::ops::Range<usize>,
    method: &'static str,
    bytes: Option<i64>,
}

/// The rules of the module doc on each consumer ring of the task's loader body.
pub(super) fn ring_uses(ir: &TaskIr, sink: &mut Sink) {
    let Some(BodyIr::Cuda {
        code, code_span, ..
    }) = &ir.loader_body
    else {
        return;
    };
    let names = body_constants(ir, code);
    let text = strip_comments_and_strings(code);
    let span =
        |r: &std::ops::Range<usize>| Span::new(code_span.start + r.start, code_span.start + r.end);
    for ch in ir
        .channels
        .values()
        .filter(|c| super::rings::is_consumer_ring(c))
    {
        let mut calls: Vec<Call> = Vec::new();
        for (method, n) in [
            ("acquire", Some(0)),
            ("copy", Some(2)),
            ("commit", None),
            ("load", Some(1)),
        ] {
            for (at, args_at) in calls_of(&text, &format!("{}.{method}", ch.name)) {
                let args = call_args(&text[args_at..]);
                let close =
                    (args_at + args.iter().map(|a| a.len() + 1).sum::<usize>()).min(text.len());
                let bytes = n
                    .and_then(|k| args.get(k))
                    .and_then(|a| super::ring_copies::constant_bytes(a, &names));
                calls.push(Call {
                    at: at..close,
                    method,
                    bytes,
                });
            }
        }
        // A call inside a lambda runs where the lambda is called, which the text order does not
        // show: such calls are left out, and a ring whose copies one makes gets no balance check.
        let copies_in_lambdas = calls
            .iter()
            .any(|c| c.method == "copy" && super::grid_sync::in_lambda(&text, c.at.start));
        calls.retain(|c| !super::grid_sync::in_lambda(&text, c.at.start));
        calls.sort_by_key(|c| c.at.start);
        let error = |msg: String, at: &std::ops::Range<usize>, label: &str| {
            Diagnostic::error(codes::ARRIVALS, msg)
                .primary(span(at), label.to_string())
                .note(format!("a use of ring `{}` is `acquire(bytes)`, its `copy` calls, then one `commit()` (or one `load`): the consumer's `wait` and `release` count the uses in the same order (I-M7)", ch.name))
        };
        // The open use: its `acquire` and the sum of its copies' constant bytes (`None` once one
        // is not constant).
        let mut open: Option<(&Call, Option<i64>)> = None;
        // The use the last `commit` closed, and where the previous call ended: a call that
        // would be out of order after a branch (`} else {`, `; else`) is the other branch's
        // (`if (p) { copy; commit(); } else { copy; commit(); }`), not an error.
        let mut closed: Option<&Call> = None;
        let mut prev_end = 0usize;
        for c in &calls {
            let branched = !straight(&text[prev_end.min(c.at.start)..c.at.start]);
            prev_end = c.at.end;
            match c.method {
                "acquire" | "load" => {
                    if let Some((a, _)) = open {
                        if !branched {
                            sink.push(
                                error(format!("ring `{}`'s `{}` begins a use while the one its `acquire` began is not committed", ch.name, c.method), &c.at, "a second use begins here")
                                    .secondary(span(&a.at), "the open use")
                                    .help(format!("call `{}.commit()` after the open use's copies", ch.name)),
                            );
                        }
                    }
                    // After a branch the bytes armed are one branch's: no balance to check.
                    let bytes = if branched && open.is_some() { None } else { Some(0) };
                    open = (c.method == "acquire").then_some((c, bytes));
                }
                "copy" => match &mut open {
                    Some((_, sum)) => *sum = sum.zip(c.bytes).map(|(s, b)| s + b),
                    None if branched => open = closed.map(|a| (a, None)),
                    None => sink.push(
                        error(format!("ring `{}`'s `copy` lies outside a use", ch.name), &c.at, "no `acquire` before it")
                            .help(format!("begin the use with `{}.acquire(bytes)` (the sum of its copies) and end it with `commit()`", ch.name)),
                    ),
                },
                _ => {
                    let Some((a, sum)) = open.take() else {
                        if !branched {
                            sink.push(
                                error(format!("ring `{}`'s `commit` ends no use", ch.name), &c.at, "no open `acquire` before it")
                                    .note("a `commit` advances the ring to the next slot: one that ends no use skips a slot no copy filled, whose `wait` never completes")
                                    .help("call `commit()` once per `acquire`"),
                            );
                        }
                        continue;
                    };
                    closed = Some(a);
                    let between = &text[a.at.end..c.at.start];
                    if let (Some(armed), Some(sum), false) = (a.bytes, sum, copies_in_lambdas) {
                        if armed != sum && straight(between) {
                            let fate = if sum < armed {
                                "the phase never completes and the consumer's `wait` hangs"
                            } else {
                                "the phase completes before the last bytes land and the consumer reads a slot still being written"
                            };
                            sink.push(
                                Diagnostic::error(
                                    codes::EXPECT_TX,
                                    format!("ring `{}`'s use arms {armed} bytes but its copies move {sum}", ch.name),
                                )
                                .primary(span(&a.at), format!("expect_tx of {armed} bytes"))
                                .secondary(span(&(a.at.start..c.at.end)), format!("copies of {sum} bytes in all"))
                                .note(format!("`acquire(bytes)` arms the slot's full barrier with `bytes` of expect_tx and each copy completes its own bytes (I-M6): {fate}"))
                                .help(format!("pass `acquire` the sum of the use's copies ({sum})")),
                            );
                        }
                    }
                }
            }
        }
        if let Some((a, _)) = open {
            sink.push(
                error(
                    format!("ring `{}`'s `acquire` is never committed", ch.name),
                    &a.at,
                    "this use stays open",
                )
                .help(format!(
                    "end the use with `{}.commit()` after its copies",
                    ch.name
                )),
            );
        }
    }
}

/// Whether `between` (the text of a use between its `acquire` and `commit`) runs each of its
/// calls once: no branch, loop, jump or conditional expression.
fn straight(between: &str) -> bool {
    !crate::front::cuda::identifiers(between)
        .iter()
        .any(|(_, w)| {
            matches!(
                *w,
                "if" | "else"
                    | "for"
                    | "while"
                    | "do"
                    | "switch"
                    | "case"
                    | "default"
                    | "goto"
                    | "return"
                    | "break"
                    | "continue"
            )
        })
        && !between.contains('?')
}
