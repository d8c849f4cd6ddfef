//! Each ranged param (integer or float) at both ends of its declared range (issue 11, case 10): a contract that
//! fits at its default may not fit at `--param hidden=65536`, the top of `in 128..=65536`, which
//! the declaration promises to accept. The driver checks every instance again with each ranged
//! param moved to its lowest and its highest value, one param at a time, and then, where
//! a task has 2 to [`MAX_JOINT`] ranged integer params, at every corner where two or more of them sit at
//! an end together (`--param m=4 --param ring=98304`: each fits alone, the two together may
//! not; a size that grows or shrinks with each param is largest at a corner). A small integer
//! range (at most [`MAX_INSIDE`] values) is also checked at every value inside it, one param at
//! a time: MPK's page plan is not monotone in a region's size (a 17..=32-token A stage can land a
//! page past the pool where 1 and 64 tokens fit), and a divisibility rule (short tiles of a
//! multiple of 8 rows, E0013) fails between ends that keep it. A larger range is also checked
//! one step inside each end, which is enough for a divisibility rule of an affine function of
//! the param (a body's `static_assert(params::n % 8 == 0)`) to fail where any value breaks it.

use super::collect::collect;
use super::lower::lower_instance;
use super::param_range::declared_range;
use super::param_ty;
use super::SemaOptions;
use crate::diag::{Severity, Sink};
use crate::front::ast;
use crate::ir::{ParamValue, TaskIr};
use crate::span::Span;

/// Ranged params moved together at most for the joint corners: each at its base value or one
/// of its ends, 3^3 - 1 - 6 = 20 corners an instance at most.
pub const MAX_JOINT: usize = 3;

/// Integer ranges of at most this many values are checked at every value, not only at their
/// ends: a token count `in 1..=64`, a tile's rows `in 8..=64`. Larger ranges (a hidden size
/// `in 128..=65536`) are checked at their ends and corners only.
pub const MAX_INSIDE: i64 = 64;

/// Where in its declared range a checked value lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RangePoint {
    /// The lowest value the range admits.
    Lowest,
    /// The highest value the range admits.
    Highest,
    /// A value strictly between the ends: every one of a range of at most [`MAX_INSIDE`]
    /// values, one step inside each end of a larger range.
    Inside,
}

/// One param at one value of its declared range: an end, or a value inside a small range.
#[derive(Clone, Debug)]
pub struct EndValue {
    /// The param moved to the end.
    pub param: String,
    /// Its value there, as a contract writes it (an `f32`'s shortest f32 text): what the
    /// diagnostics show and the `--param` value it is lowered with.
    pub value: String,
    /// Where in the range the value lies.
    pub point: RangePoint,
    /// The range as written (`128..=65536`).
    pub range_text: String,
    /// The range in the declaration.
    pub range_span: Span,
}

/// One instance lowered with one or more params at ends of their declared ranges.
#[derive(Clone, Debug)]
pub struct RangeEnd {
    /// The params moved, each to one value of its range (one for a single end or inside value,
    /// two or more for a corner).
    pub at: Vec<EndValue>,
    /// The instance lowered with those values.
    pub ir: TaskIr,
    /// The errors lowering reported there (none when it lowered cleanly): a tensor extent of 0
    /// at `m = 0`, a ring depth of 65, say. A value outside another param's declared range (an
    /// `E0006` of its `in`) is not among them: a dependent param's own range excludes that
    /// corner.
    pub lowering: Vec<crate::diag::Diagnostic>,
}

/// What the ranges of an instance give to check: its ends and corners, lowered, and the
/// ranges left out of the corners.
#[derive(Clone, Debug, Default)]
pub struct RangeEnds {
    /// Each end (and, with 2 to [`MAX_JOINT`] ranged params, each corner, then each value inside
    /// a range of at most [`MAX_INSIDE`] values) lowered.
    pub ends: Vec<RangeEnd>,
    /// Where the task has more than [`MAX_JOINT`] ranged params (so no corner is lowered:
    /// W0016), their ranges, as (param, range span); empty otherwise.
    pub unjoined: Vec<(String, Span)>,
}

/// The instance `base` (a clean lowering of a task of `file`) with each ranged param at each
/// end of its range that differs from its value in `base`, the ranged integer params' corners,
/// and each value inside an integer range of at most [`MAX_INSIDE`] values. Params set by `--param` are
/// left alone: the command line already chose their value. An end that does not lower cleanly
/// comes with lowering's errors ([`RangeEnd::lowering`]), unless the only ones are another
/// param's range (a dependent param's own range excludes that end): such an end is skipped.
pub fn lower_range_ends(file: &ast::File, opts: &SemaOptions, base: &TaskIr) -> RangeEnds {
    let Some(task) = file.tasks.iter().find(|t| t.name.node == base.name) else {
        return RangeEnds::default();
    };
    let mut scratch = Sink::new();
    let c = collect(task, &mut scratch);
    let instance = base
        .instance
        .as_ref()
        .and_then(|n| c.instances.iter().copied().find(|i| &i.name.node == n));
    if base.instance.is_some() && instance.is_none() {
        return RangeEnds::default();
    }
    // Each ranged integer param's ends that differ from its value in `base` (`alone`: a float
    // param's, not joined in corners).
    let mut ranged: Vec<Vec<EndValue>> = Vec::new();
    let mut alone: Vec<Vec<EndValue>> = Vec::new();
    // Each small integer range's values strictly between its ends (but `base`'s), lowered alone
    // after the ends and corners, so that an end reports a fault the two share.
    let mut inside: Vec<EndValue> = Vec::new();
    // Each ranged integer param's step and value in `base`: where a `require` does not hold at
    // a point of a large range, the nearest value toward `base` that keeps it is checked instead.
    // Only a range of more than MAX_INSIDE values: a smaller one is checked at every value.
    let mut steps: Vec<(String, i64, i64)> = Vec::new();
    for p in &c.params {
        let name = &p.name.node;
        if p.range.is_none() || p.runtime.is_some() || opts.overrides.iter().any(|(n, _)| n == name)
        {
            continue;
        }
        let Some(now) = base.params.get(name).map(|ir| ir.value.clone()) else {
            continue;
        };
        if matches!(now, ParamValue::Bool(_)) {
            continue;
        }
        let Some(ty) = param_ty::resolve(p, &mut Sink::new()) else {
            continue;
        };
        let env = super::eval::Env {
            params: Some(&base.params),
            ..Default::default()
        };
        let Ok(Some(range)) = declared_range(p, ty, &env, &mut Sink::new()) else {
            continue;
        };
        let Some((lo, hi)) = range.ends() else {
            continue;
        };
        let one = lo == hi;
        let at = |value: &ParamValue, point: RangePoint| EndValue {
            param: name.clone(),
            value: range.value_text(value),
            point,
            range_text: range.text(),
            range_span: range.span,
        };
        if let Some((a, b)) = range.int_ends() {
            let step = range.step();
            let large =
                (i128::from(b) - i128::from(a)) / i128::from(step) >= i128::from(MAX_INSIDE);
            if let (ParamValue::Int(n), true) = (&now, large) {
                steps.push((name.clone(), step, *n));
            }
            // Values a + k * step strictly between the ends, if the range has at most
            // MAX_INSIDE values (`(b - a) / step + 1`; `int_ends` puts b on the step).
            if (i128::from(b) - i128::from(a)) / i128::from(step) < i128::from(MAX_INSIDE) {
                inside.extend(
                    (a.saturating_add(step)..b)
                        .step_by(usize::try_from(step).unwrap_or(usize::MAX))
                        .map(ParamValue::Int)
                        .filter(|v| *v != now)
                        .map(|v| at(&v, RangePoint::Inside)),
                );
            } else {
                // A larger range at the value one step inside each end: a rule that holds at an
                // end and one step from it holds at every value of the range if it is a
                // divisibility of an affine function of the param (`c | f(LO)` and
                // `c | f(LO + S)` give `c | f(LO + k * S)`), as a body's or helper's
                // `static_assert(n % 8 == 0)` is, which `in 128..=8192 step 4` breaks at 132.
                inside.extend(
                    [a.saturating_add(step), b.saturating_sub(step)]
                        .into_iter()
                        .map(ParamValue::Int)
                        .filter(|v| *v != now)
                        .map(|v| at(&v, RangePoint::Inside)),
                );
            }
        }
        let ends: Vec<EndValue> = [(lo, RangePoint::Lowest), (hi, RangePoint::Highest)]
            .into_iter()
            .filter(|(value, point)| *value != now && !(*point == RangePoint::Highest && one))
            .map(|(value, point)| at(&value, point))
            .collect();
        if ends.is_empty() {
            continue;
        }
        // A float (an epsilon, a scale) is checked at each end alone: it reaches the scalar
        // checks of a body, not the sizes that grow together, which the corners are for.
        if matches!(now, ParamValue::Float(_)) {
            alone.push(ends);
        } else {
            ranged.push(ends);
        }
    }
    // `None` where lowering there is clean or fails only on another param's range, `Err(())`
    // where a `require` does not hold there (the point is outside what the ranges promise).
    let lower_at = |at: Vec<EndValue>| -> Result<Option<RangeEnd>, ()> {
        let mut o = opts.clone();
        o.overrides
            .extend(at.iter().map(|e| (e.param.clone(), e.value.clone())));
        o.range_end_overrides
            .extend(at.iter().map(|e| e.param.clone()));
        let mut sink = Sink::new();
        let ir = lower_instance(task, &c, instance, &o, &mut sink);
        if sink.error_count() == 0 {
            return Ok(Some(RangeEnd {
                at,
                ir,
                lowering: Vec::new(),
            }));
        }
        let all = sink.into_sorted();
        if all.iter().any(super::require::is_unmet) {
            return Err(());
        }
        let lowering: Vec<_> = all
            .into_iter()
            .filter(|d| d.severity == Severity::Error && !super::param_value::is_outside_range(d))
            .collect();
        Ok((!lowering.is_empty()).then_some(RangeEnd { at, ir, lowering }))
    };
    // A corner where a `require` does not hold is skipped; a single point moves toward the
    // param's value in `base`, one step at a time (at most MAX_INSIDE steps), to the nearest
    // value that keeps every requirement: the end of the range the requirements narrow.
    let lower = |at: Vec<EndValue>| -> Option<RangeEnd> {
        let first = match lower_at(at.clone()) {
            Ok(r) => return r,
            Err(()) => at,
        };
        let [one] = first.as_slice() else {
            return None;
        };
        let (_, step, now) = steps.iter().find(|(n, _, _)| *n == one.param)?;
        let mut v: i64 = one.value.parse().ok()?;
        let toward = if v < *now { *step } else { -*step };
        for _ in 0..MAX_INSIDE {
            v = v.checked_add(toward)?;
            if (toward > 0 && v >= *now) || (toward < 0 && v <= *now) {
                return None;
            }
            let moved = EndValue {
                value: v.to_string(),
                point: RangePoint::Inside,
                ..one.clone()
            };
            if let Ok(r) = lower_at(vec![moved]) {
                return r;
            }
        }
        None
    };
    let mut out: Vec<RangeEnd> = ranged
        .iter()
        .chain(&alone)
        .flatten()
        .filter_map(|e| lower(vec![e.clone()]))
        .collect();
    if (2..=MAX_JOINT).contains(&ranged.len()) {
        out.extend(corners(&ranged).into_iter().filter_map(lower));
    }
    out.extend(inside.into_iter().filter_map(|e| lower(vec![e])));
    let unjoined = if ranged.len() > MAX_JOINT {
        ranged
            .iter()
            .filter_map(|ends| ends.first())
            .map(|e| (e.param.clone(), e.range_span))
            .collect()
    } else {
        Vec::new()
    };
    RangeEnds {
        ends: out,
        unjoined,
    }
}

/// Every choice of an end or the base value for each ranged param with two or more at an end,
/// in declaration order.
fn corners(ranged: &[Vec<EndValue>]) -> Vec<Vec<EndValue>> {
    let mut all: Vec<Vec<EndValue>> = vec![Vec::new()];
    for ends in ranged {
        let mut next = Vec::new();
        for chosen in &all {
            next.push(chosen.clone());
            for e in ends {
                let mut c = chosen.clone();
                c.push(e.clone());
                next.push(c);
            }
        }
        all = next;
    }
    all.retain(|c| c.len() >= 2);
    all
}
