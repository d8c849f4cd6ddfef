//! The end of each check across a build's units (`clash`, `setmaxnreg`, `levers`): a unit with a
//! diagnostic is moved from its file's `tasks` to `rejected` (it is not built) and the file's
//! diagnostics are sorted again.

use super::Checked;
use crate::diag::Diagnostic;
use std::collections::BTreeMap;

/// Pushes `found[(source index, task index)]` onto that file's diagnostics and moves the task to
/// `rejected`; files with no entry are left as they are.
pub(super) fn reject(checked: &mut [Checked], found: &BTreeMap<(usize, usize), Diagnostic>) {
    for (ci, c) in checked.iter_mut().enumerate() {
        if !found.keys().any(|(i, _)| *i == ci) {
            continue;
        }
        let mut keep = Vec::new();
        for (ti, t) in std::mem::take(&mut c.tasks).into_iter().enumerate() {
            match found.get(&(ci, ti)) {
                Some(d) => {
                    c.diags.push(d.clone());
                    c.rejected.push(t.ir);
                }
                None => keep.push(t),
            }
        }
        c.tasks = keep;
        c.diags = super::sorted(std::mem::take(&mut c.diags));
    }
}
