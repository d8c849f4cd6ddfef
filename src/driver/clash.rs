//! Generated-file clashes: two task instances (in one file, in two files, or one mpkc derives)
//! that `mpkc build` would make write a file of the same name, or an instance that would
//! overwrite one of mpkc's support headers. Decided on the file names themselves
//! ([`crate::back::files::outputs`], the list the writer and nvcc use), not on unit names:
//! `linear_sm100_v2`'s sm_90a kernel and the main kernel of a task `linear_sm100_v2_sm90` are
//! both `linear_sm100_v2_sm90.cuh`.

use super::derived::line_of;
use super::Checked;
use crate::back::{files, SUPPORT_HEADERS};
use crate::diag::{codes, Diagnostic};
use std::collections::BTreeMap;

/// One file one instance would write: (source index, task index, what the file is).
type Writer = (usize, usize, String);
/// One file a clashing instance would write: (file, what it is there, the other writers).
type Clash = (String, String, Vec<Writer>);

/// Reports `E0012` on every task instance that shares a generated file name with another
/// instance or a support header, naming the file and the other writer, and moves it from
/// `tasks` to `rejected` (neither instance is built). Every clashing instance gets the error,
/// so each file involved shows it.
pub fn unit_collisions(checked: &mut [Checked]) {
    let mut writers: BTreeMap<String, Vec<Writer>> = BTreeMap::new();
    for (ci, c) in checked.iter().enumerate() {
        for (ti, t) in c.tasks.iter().enumerate() {
            for (name, what) in files::outputs(t) {
                writers.entry(name).or_default().push((ci, ti, what));
            }
        }
    }
    // Per clashing instance: (file, what it is here, the other writers), in write order.
    let mut clashes: BTreeMap<(usize, usize), Vec<Clash>> = BTreeMap::new();
    for (ci, c) in checked.iter().enumerate() {
        for (ti, t) in c.tasks.iter().enumerate() {
            for (name, what) in files::outputs(t) {
                let others: Vec<Writer> = writers
                    .get(&name)
                    .into_iter()
                    .flatten()
                    .filter(|(c, t, _)| (*c, *t) != (ci, ti))
                    .cloned()
                    .collect();
                let support = SUPPORT_HEADERS.iter().any(|(h, _)| *h == name);
                if support || !others.is_empty() {
                    clashes
                        .entry((ci, ti))
                        .or_default()
                        .push((name, what, others));
                }
            }
        }
    }
    let found: BTreeMap<(usize, usize), Diagnostic> = clashes
        .iter()
        .filter_map(|(&(ci, ti), files)| Some(((ci, ti), diagnostic(checked, ci, ti, files)?)))
        .collect();
    super::reject::reject(checked, &found);
}

/// "task instance `x` (path:line)", or for a derived task "the reduce task `x_reduce` mpkc derives
/// from `x` (path:line)".
fn describe(checked: &[Checked], ci: usize, ti: usize) -> String {
    let c = &checked[ci];
    let t = &c.tasks[ti];
    match &c.derived {
        Some(d) => format!(
            "the reduce task `{}` mpkc derives from `{}` ({}:{})",
            t.ir.unit_name(),
            d.parent_unit,
            d.parent.path,
            line_of(&d.parent.text, d.span.start)
        ),
        None => format!(
            "task instance `{}` ({}:{})",
            t.ir.unit_name(),
            c.source.path,
            line_of(&c.source.text, t.ir.unit_span().start)
        ),
    }
}

fn diagnostic(checked: &[Checked], ci: usize, ti: usize, clashes: &[Clash]) -> Option<Diagnostic> {
    let t = &checked[ci].tasks[ti];
    let unit = t.ir.unit_name();
    let (name, what, others) = clashes.first()?;
    let other = match others.first() {
        Some((oc, ot, owhat)) => format!("as {owhat} of {}", describe(checked, *oc, *ot)),
        None => "as one of mpkc's support headers".to_string(),
    };
    let mut d = Diagnostic::error(
        codes::NAME_CLASH,
        format!("`{name}` would be written twice: as {what} of `{unit}` and {other}"),
    )
    .primary(t.ir.unit_span(), format!("`{unit}` generates `{name}`"));
    for (oc, ot, owhat) in others.iter().skip(1) {
        d = d.note(format!(
            "`{name}` is also {owhat} of {}",
            describe(checked, *oc, *ot)
        ));
    }
    if clashes.len() > 1 {
        let rest: Vec<String> = clashes[1..]
            .iter()
            .map(|(n, _, _)| format!("`{n}`"))
            .collect();
        d = d.note(format!(
            "{} would be written twice as well",
            rest.join(", ")
        ));
    }
    Some(d.note("`mpkc build` names every file it generates after the unit (`<task>` or `<task>_<instance>`) and writes them all into one directory")
        .help("rename this task or instance, or the other one, so that their generated file names differ"))
}
