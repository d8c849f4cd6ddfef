//! `setmaxnreg` across the units of one build (contract doc §3.5, §6.3): register reallocation
//! is megakernel-wide in MPK (one `MPK_SETMAXNREG` / `MPK_CONSUMER_REGS` / `MPK_HELPER_REGS` for
//! the whole kernel, issued by the worker prologue for every task), so task instances of one
//! `mpkc check`, `build` or `verify` that declare different register targets cannot share a
//! megakernel. An instance without a `setmaxnreg` line asks for nothing and runs under the
//! megakernel's split.

use super::derived::line_of;
use super::Checked;
use crate::diag::{codes, Diagnostic};
use crate::span::Span;
use std::collections::BTreeMap;

/// One declaring instance: (source index, task index, (consumer, helpers), the line's span).
type Declared = (usize, usize, (i64, i64), Span);

/// Reports `E0404` on every task instance whose `setmaxnreg` differs from another instance's in
/// the same build, naming the other instance and its values (a secondary label where both are in
/// one file), and moves it from `tasks` to `rejected` (it is not built). Every instance of a
/// disagreeing pair gets the error, so each file involved shows it. Derived contracts (a split-K
/// reduce) declare no `setmaxnreg` and are skipped.
pub fn setmaxnreg_agreement(checked: &mut [Checked]) {
    let declared: Vec<Declared> = checked
        .iter()
        .enumerate()
        .filter(|(_, c)| c.derived.is_none())
        .flat_map(|(ci, c)| {
            c.tasks.iter().enumerate().filter_map(move |(ti, t)| {
                let (con, help, span) = t.ir.setmaxnreg?;
                Some((ci, ti, (con, help), span))
            })
        })
        .collect();
    let found: BTreeMap<(usize, usize), Diagnostic> = declared
        .iter()
        .filter_map(|me| {
            let other = declared.iter().find(|o| o.2 != me.2)?;
            Some(((me.0, me.1), diagnostic(checked, me, other)))
        })
        .collect();
    super::reject::reject(checked, &found);
}

fn diagnostic(checked: &[Checked], me: &Declared, other: &Declared) -> Diagnostic {
    let unit = checked[me.0].tasks[me.1].ir.unit_name();
    let o = &checked[other.0];
    let o_unit = o.tasks[other.1].ir.unit_name();
    let ((c, h), (oc, oh)) = (me.2, other.2);
    let mut d = Diagnostic::error(
        codes::SETMAXNREG,
        format!(
            "`{unit}` asks for setmaxnreg consumer {c}, helpers {h}, but `{o_unit}` in the same build asks for consumer {oc}, helpers {oh}"
        ),
    )
    .primary(me.3, format!("consumer {c}, helpers {h} for `{unit}`"));
    if other.0 == me.0 && other.3 != me.3 {
        d = d.secondary(
            other.3,
            format!("consumer {oc}, helpers {oh} for `{o_unit}`"),
        );
    } else {
        d = d.note(format!(
            "`{o_unit}` ({}:{}) declares `setmaxnreg consumer {oc}, helpers {oh}`",
            o.source.path,
            line_of(&o.source.text, other.3.start)
        ));
    }
    d.note("register reallocation is megakernel-wide (contract doc §3.5): the worker prologue issues one setmaxnreg.inc for warpgroup 0 and one setmaxnreg.dec for warpgroup 1, for every task of the megakernel")
        .help(format!(
            "give every task of the build the same `setmaxnreg` line (e.g. `setmaxnreg consumer {oc}, helpers {oh}`), or build `{unit}` and `{o_unit}` separately"
        ))
}
