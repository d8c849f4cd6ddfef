//! TaskType clashes across the tasks of one `mpkc check`, `build` or `verify` (and one document of
//! the language server): MPK's `enum TaskType` gives every task one value (contract doc §6.1 step
//! 1), and the runtime keys the registration, its variants and their SMEM plans by it (§1.2:
//! stored per (TaskType, variant_id)), so two tasks that declare one `task_id` would share one
//! registration. `mpkc wire` finds a clash against MPK's tree (E0801); this finds one between the
//! contracts of a build, before anything is generated.
//!
//! The instances of one task are variants of its TaskType and share it, as do the reduce tasks
//! mpkc derives from the instances of one split-K pipeline ([`super::Derived::task`]: their
//! `task_id` is the parent's `reduce_task_id`); a derived reduce is a task of its own, apart from
//! its parent.

use super::derived::line_of;
use super::Checked;
use crate::diag::{codes, Diagnostic};
use crate::ir::TaskIr;
use crate::span::Span;
use crate::valid::{FIRST_COMPUTE_TASK_ID, TMA_TASK_RANGE};
use std::collections::{BTreeMap, BTreeSet};

/// One task instance that declares a TaskType.
struct Site {
    /// The [`Checked`] that holds the instance (a derived contract's own).
    ci: usize,
    /// Its index in that `Checked`'s `tasks`, or `None` when a rule rejected it.
    ti: Option<usize>,
    /// The [`Checked`] its diagnostics are shown in (the parent's file for a derived reduce).
    shown: usize,
    /// The TaskType.
    id: i64,
    /// The `task_id` item (for a derived reduce, its parent's `reduce_task_id`), in `shown`.
    span: Span,
    /// The task's name (for a derived reduce, its parent's `reduce_task_id` item), in `shown`.
    name_span: Span,
    /// The MPK task it is a variant of: the task name, or [`super::Derived::task`].
    owner: String,
    /// For a derived reduce: the pipeline task it is derived from.
    derived_from: Option<String>,
    /// Whether it loads through TMA (so belongs inside 232..=255, E0510).
    tma: bool,
}

impl Site {
    /// "`linear_bf16_tail`", or "the reduce task `x_reduce` mpkc derives from `x`".
    /// Whether `other` is an instance of the same task: the same name, both declared or both
    /// derived (a task named `foo_reduce` is not the reduce mpkc derives from a pipeline `foo`,
    /// though both are `TASK_FOO_REDUCE_V2`).
    fn same_task(&self, other: &Site) -> bool {
        self.owner == other.owner && self.derived_from == other.derived_from
    }

    fn describe(&self) -> String {
        match &self.derived_from {
            Some(parent) => format!(
                "the reduce task `{}` mpkc derives from `{parent}`",
                self.owner
            ),
            None => format!("`{}`", self.owner),
        }
    }
}

/// Reports `E0605` on every task instance whose TaskType another task of the build declared
/// first (in file order, then position in the file): the primary label on its `task_id` (for a
/// derived reduce, on its parent's `reduce_task_id`), a secondary one on the first task's when both
/// are in one file, else a note naming that file and line; the help names a TaskType no task of
/// the build uses, on the side of MPK's TMA range (232..=255) the task belongs to (E0510). The
/// instance moves from `tasks` to `rejected` (it is not built). Runs after the diagnostics of
/// derived contracts are attributed to their parents: `parents[k]` is the index of the `Checked`
/// that derived contract `first_derived + k` comes from.
pub fn task_type_clashes(checked: &mut [Checked], first_derived: usize, parents: &[usize]) {
    let mut sites: Vec<Site> = Vec::new();
    for (ci, c) in checked.iter().enumerate() {
        let (shown, derived_span) = match &c.derived {
            Some(d) => {
                let Some(&parent) = ci.checked_sub(first_derived).and_then(|k| parents.get(k))
                else {
                    continue;
                };
                (
                    parent,
                    Some(d.reduce_task_id.as_ref().map(|(_, item)| *item)),
                )
            }
            None => (ci, None),
        };
        let irs = c
            .tasks
            .iter()
            .enumerate()
            .map(|(ti, t)| (Some(ti), &t.ir))
            .chain(c.rejected.iter().map(|ir| (None, ir)));
        for (ti, ir) in irs {
            let Some(id) = ir.task_id else { continue };
            let (span, name_span, owner, derived_from) = match (&c.derived, derived_span) {
                (Some(d), Some(Some(item))) => {
                    // The pipeline task (not instance): the reduces of its instances share the
                    // value, and each gets the same diagnostic, reported once.
                    let parent = d.task.strip_suffix("_reduce").unwrap_or(&d.task);
                    (item, item, d.task.clone(), Some(parent.to_string()))
                }
                // A derived contract's `task_id` always comes from a `reduce_task_id`.
                (Some(_), _) => continue,
                (None, _) => (ir.task_id_span, ir.name_span, ir.name.clone(), None),
            };
            sites.push(Site {
                ci,
                ti,
                shown,
                id,
                span,
                name_span,
                owner,
                derived_from,
                tma: uses_tma(ir),
            });
        }
    }
    sites.sort_by_key(|s| (s.shown, s.span.start, s.ci));
    let mut used: BTreeSet<i64> = sites.iter().map(|s| s.id).collect();
    let mut first: BTreeMap<i64, usize> = BTreeMap::new();
    // The TaskType each clashing item's help offers, one per item (its instances share it), none
    // offered twice: taking every help's advice leaves no clash.
    let mut offered: BTreeMap<(usize, usize), Option<i64>> = BTreeMap::new();
    // (the Checked shown in, the diagnostic, the instance to reject)
    let mut found: Vec<(usize, Diagnostic, (usize, Option<usize>))> = Vec::new();
    for (k, s) in sites.iter().enumerate() {
        let f = &sites[*first.entry(s.id).or_insert(k)];
        if f.same_task(s) {
            continue;
        }
        let free = *offered.entry((s.shown, s.span.start)).or_insert_with(|| {
            let v = free_task_type(s.id, s.tma, &used);
            used.extend(v);
            v
        });
        found.push((s.shown, diagnostic(checked, s, f, free), (s.ci, s.ti)));
    }
    // Two tasks whose names give one enum name (`foo` and `foo_v2` are both `TASK_FOO_V2`, contract
    // doc §6.1 step 1): MPK's enum cannot hold both, whatever their values.
    let mut named: BTreeMap<String, usize> = BTreeMap::new();
    for (k, s) in sites.iter().enumerate() {
        let e = crate::wire::facts::enum_name(&s.owner);
        let f = &sites[*named.entry(e.clone()).or_insert(k)];
        if f.same_task(s) || found.iter().any(|(_, _, r)| *r == (s.ci, s.ti)) {
            continue;
        }
        found.push((s.shown, enum_diagnostic(checked, s, f, &e), (s.ci, s.ti)));
    }
    if found.is_empty() {
        return;
    }
    let mut reject: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
    let mut touched = BTreeSet::new();
    for (shown, mut d, (ci, ti)) in found {
        d.widen_to_chars(&checked[shown].source.text);
        checked[shown].diags.push(d);
        touched.insert(shown);
        if let Some(ti) = ti {
            reject.entry(ci).or_default().insert(ti);
        }
    }
    for (ci, tis) in reject {
        let c = &mut checked[ci];
        let mut keep = Vec::new();
        for (ti, t) in std::mem::take(&mut c.tasks).into_iter().enumerate() {
            if tis.contains(&ti) {
                c.rejected.push(t.ir);
            } else {
                keep.push(t);
            }
        }
        c.tasks = keep;
    }
    for shown in touched {
        let c = &mut checked[shown];
        c.diags = super::sorted(std::mem::take(&mut c.diags));
    }
}

/// Whether `ir` takes tensor maps (E0510's test: such a task sits inside MPK's TMA range).
fn uses_tma(ir: &TaskIr) -> bool {
    ir.tensors.values().any(|t| t.tma.is_some())
}

/// A TaskType none of `used` is, for a task that does (`tma`) or does not load through TMA:
/// inside 232..=255 the lowest free one, outside it the next free one above `id` (from 100 up).
fn free_task_type(id: i64, tma: bool, used: &BTreeSet<i64>) -> Option<i64> {
    let (lo, hi) = (TMA_TASK_RANGE.0 + 1, TMA_TASK_RANGE.1 - 1);
    if tma {
        (lo..=hi).find(|v| !used.contains(v))
    } else {
        (id.max(FIRST_COMPUTE_TASK_ID - 1).saturating_add(1)..=i64::MAX)
            .filter(|v| !(lo..=hi).contains(v))
            .find(|v| !used.contains(v))
    }
}

/// The E0605 of `me`, whose TaskType `first` has; `free`: the TaskType its help offers.
fn diagnostic(checked: &[Checked], me: &Site, first: &Site, free: Option<i64>) -> Diagnostic {
    let id = me.id;
    let item = if me.derived_from.is_some() {
        "reduce_task_id"
    } else {
        "task_id"
    };
    let mut d = Diagnostic::error(
        codes::TASK_TYPE_CLASH,
        format!(
            "TaskType {id} is declared by two tasks: {} already has it, so {} cannot",
            first.describe(),
            me.describe()
        ),
    )
    .primary(me.span, format!("{} asks for TaskType {id}", me.describe()));
    d = at_first(
        d,
        checked,
        me,
        first,
        first.span,
        format!("{} has TaskType {id} here", first.describe()),
        format!("{} declares TaskType {id}", first.describe()),
    );
    d = d.note("MPK's `enum TaskType` gives each task one value (contract doc §6.1 step 1), and the runtime keys a task's registration, variants and SMEM plans by it (§1.2, §6.1): the two tasks would share one registration (`mpkc wire` would report it against MPK's tree, E0801)");
    let (lo, hi) = (TMA_TASK_RANGE.0 + 1, TMA_TASK_RANGE.1 - 1);
    let help = match (free, me.tma) {
        (Some(v), true) => format!(
            "give {} a TaskType no task of this build uses, e.g. `{item} {v}` (free in {lo}..={hi}, MPK's TMA range, where a task that loads through TMA must stay: E0510, contract doc §6.1)",
            me.describe()
        ),
        (Some(v), false) => format!(
            "give {} a TaskType no task of this build uses, e.g. `{item} {v}` (free, from 100 up and outside {lo}..={hi}, MPK's TMA range, which a task without tensor maps must stay out of: E0510, contract doc §6.1)",
            me.describe()
        ),
        (None, _) => format!(
            "every TaskType of MPK's TMA range {lo}..={hi} is taken in this build, and a task that loads through TMA must stay inside it (E0510): check or build {} and {} separately",
            me.describe(),
            first.describe()
        ),
    };
    d.help(help)
}

/// The E0605 of `me`, whose task name gives the enum name `enum_name` that `first`'s already does.
fn enum_diagnostic(checked: &[Checked], me: &Site, first: &Site, enum_name: &str) -> Diagnostic {
    let d = Diagnostic::error(
        codes::TASK_TYPE_CLASH,
        format!(
            "{} and {} both take the name `{enum_name}` in MPK's `enum TaskType`",
            first.describe(),
            me.describe()
        ),
    )
    .primary(me.name_span, format!("{} is `{enum_name}`", me.describe()));
    at_first(
        d,
        checked,
        me,
        first,
        first.name_span,
        format!("{} is `{enum_name}` too", first.describe()),
        format!("{} is declared", first.describe()),
    )
    .note("a task's enum name is `TASK_<NAME>`, with `_V2` added unless the name ends in `_v2` (contract doc §6.1 step 1), so `foo` and `foo_v2` are one name: `mpkc wire` would enter it twice")
        .help(match (&me.derived_from, &first.derived_from) {
            // A derived reduce is named after its pipeline: rename the declared task, or the
            // pipeline.
            (Some(parent), None) => format!(
                "rename {} (its `task`), or the pipeline `{parent}`, whose derived reduce is `{parent}_reduce`",
                first.describe()
            ),
            _ => format!(
                "rename {} (its `task`) so that its enum name differs from `{enum_name}`",
                me.describe()
            ),
        })
}

/// Points `d` at `first`'s item `at`: a secondary label `here` when it is in the file `me` is
/// shown in, else a note "`elsewhere` at PATH:LINE".
fn at_first(
    d: Diagnostic,
    checked: &[Checked],
    me: &Site,
    first: &Site,
    at: Span,
    here: String,
    elsewhere: String,
) -> Diagnostic {
    if first.shown == me.shown {
        return d.secondary(at, here);
    }
    let src = checked[first.shown].display_source();
    d.note(format!(
        "{elsewhere} at {}:{}",
        src.path,
        line_of(&src.text, at.start)
    ))
}
