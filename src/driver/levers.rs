//! Levers across the units of one build (I-H7): a lever is a preprocessor define, and each
//! kernel that reads it writes `#ifndef NAME` / `#define NAME <default>`. In one megakernel
//! translation unit the first such define wins, so two units that give one lever name different
//! defaults would each compile alone (`mpkc build` compiles a harness per unit) while one of them
//! silently runs with the other's default once wired together.

use super::derived::line_of;
use super::Checked;
use crate::diag::{codes, Diagnostic};
use crate::span::Span;
use std::collections::BTreeMap;

/// One declaring instance: (source index, task index, lever name, default on, the lever's span).
type Declared = (usize, usize, String, bool, Span);

/// Reports `E0606` on every task instance whose lever defaults differently from another
/// instance's lever of the same name in the same build, naming the other instance (a secondary
/// label where both are in one file), and moves it from `tasks` to `rejected` (it is not built).
/// Derived contracts declare no levers.
pub fn lever_agreement(checked: &mut [Checked]) {
    let declared: Vec<Declared> = checked
        .iter()
        .enumerate()
        .filter(|(_, c)| c.derived.is_none())
        .flat_map(|(ci, c)| {
            c.tasks.iter().enumerate().flat_map(move |(ti, t)| {
                t.ir.levers
                    .iter()
                    .map(move |l| (ci, ti, l.name.clone(), l.default_on, l.span))
            })
        })
        .collect();
    let mut found: BTreeMap<(usize, usize), Diagnostic> = BTreeMap::new();
    for me in &declared {
        if found.contains_key(&(me.0, me.1)) {
            continue;
        }
        if let Some(other) = declared.iter().find(|o| o.2 == me.2 && o.3 != me.3) {
            found.insert((me.0, me.1), diagnostic(checked, me, other));
        }
    }
    super::reject::reject(checked, &found);
}

fn word(on: bool) -> &'static str {
    if on {
        "on"
    } else {
        "off"
    }
}

fn diagnostic(checked: &[Checked], me: &Declared, other: &Declared) -> Diagnostic {
    let unit = checked[me.0].tasks[me.1].ir.unit_name();
    let o = &checked[other.0];
    let o_unit = o.tasks[other.1].ir.unit_name();
    let name = &me.2;
    let mut d = Diagnostic::error(
        codes::LEVER_DEFAULT_CLASH,
        format!(
            "lever `{name}` defaults {} in `{unit}` but {} in `{o_unit}` of the same build",
            word(me.3),
            word(other.3)
        ),
    )
    .primary(
        me.4,
        format!(
            "`#define {name} {}` unless the build sets it",
            u8::from(me.3)
        ),
    );
    if other.0 == me.0 && other.4 != me.4 {
        d = d.secondary(other.4, format!("`{o_unit}` defaults it {}", word(other.3)));
    } else {
        d = d.note(format!(
            "`{o_unit}` ({}:{}) declares `lever {name} default {}`",
            o.source.path,
            line_of(&o.source.text, other.4.start),
            word(other.3)
        ));
    }
    d.note("a lever is one preprocessor define for the whole megakernel: each kernel writes `#ifndef` / `#define` with its own default, and the first one included wins, so one of the two tasks would run with the other's default")
        .help(format!(
            "give `{name}` one default in every task of the build (`default off`, I-H7), or name the two levers differently"
        ))
}
