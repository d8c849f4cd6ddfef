//! The ring depth: `stages N` (1 to 64, E0006), evaluated after the tile so that it may read
//! `tile.K`.

use super::collect::Collected;
use super::lower::Cx;
use crate::diag::{codes, Diagnostic};

/// Lowers `stages`: a count outside 1..=64 is E0006 (with the split count named where a
/// `K / (tile K x splits)` count came out 0).
pub(super) fn stages(cx: &mut Cx<'_>, c: &Collected<'_>) {
    let Some((e, s)) = c.stages else { return };
    // A rejected stage count poisons `stages`: later uses are follow-on errors.
    cx.poisoned.push("stages".to_string());
    // `stages stages`: the poisoned name would make its own use a silent follow-on error (and
    // the task vanish from check with no error): E0002, as for a param's own value.
    if let Some(at) = super::param_runtime::first_use(e, "stages") {
        cx.report(
            Diagnostic::error(codes::UNKNOWN_NAME, "`stages` is used in its own value")
                .primary(at, "refers to itself")
                .note("the stage count may use the params and `tile`, not itself")
                .help("write a number, or an expression over params and `tile.K` (e.g. `min(3, ceil_div(K, tile.K))`)"),
        );
        return;
    }
    let Some(v) = cx.int(e) else { return };
    match u32::try_from(v) {
        Ok(n) if (1..=64).contains(&n) => {
            cx.poisoned.retain(|p| p != "stages");
            cx.ir.stages = Some((n, s));
        }
        _ => {
            let mut d = Diagnostic::error(
                codes::OUT_OF_RANGE,
                format!("`stages` is {v}; a ring needs 1 to 64 stages"),
            )
            .primary(e.span, format!("evaluates to {v}"));
            // A count of K / (tile K x splits) is 0 when the splits outnumber the K blocks.
            if v == 0 && super::param_runtime::mentions(e, "splits") {
                d = d
                    .note("a stage count of K / (tile K x splits) is 0 where the splits outnumber the K blocks of tile K: a split would run no K iteration (E0013)")
                    .help("use at most K / tile K splits; `ceil_div(K, tile.K * splits)` counts the longest split's iterations");
            } else {
                d = d.help("use between 1 and 64 stages");
            }
            cx.report(d)
        }
    }
}
