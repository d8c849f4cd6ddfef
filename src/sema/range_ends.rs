//! Each integer param at both ends of its declared range (issue 11, case 10): a contract that
//! fits at its default may not fit at `--param hidden=65536`, the top of `in 128..=65536`, which
//! the declaration promises to accept. The driver checks every instance again with each ranged
//! integer param moved to its lowest and its highest value, one param at a time.

use super::collect::collect;
use super::lower::lower_instance;
use super::param_range::declared_range;
use super::param_ty;
use super::SemaOptions;
use crate::diag::Sink;
use crate::front::ast;
use crate::ir::{ParamValue, TaskIr};
use crate::span::Span;

/// One instance lowered with one param at one end of its declared range.
#[derive(Clone, Debug)]
pub struct RangeEnd {
    /// The param moved to the end.
    pub param: String,
    /// Its value there.
    pub value: i64,
    /// True for the highest value of the range, false for the lowest.
    pub top: bool,
    /// The range as written (`128..=65536`).
    pub range_text: String,
    /// The range in the declaration.
    pub range_span: Span,
    /// The instance lowered with that value (it lowered without errors).
    pub ir: TaskIr,
}

/// The instance `base` (a clean lowering of a task of `file`) with each ranged integer param
/// at each end of its range that differs from its value in `base`. Params set by `--param` are
/// left alone: the command line already chose their value. Ends that do not lower cleanly (a
/// dependent param's own range excludes them) are skipped: lowering reports them already.
pub fn lower_range_ends(file: &ast::File, opts: &SemaOptions, base: &TaskIr) -> Vec<RangeEnd> {
    let Some(task) = file.tasks.iter().find(|t| t.name.node == base.name) else {
        return Vec::new();
    };
    let mut scratch = Sink::new();
    let c = collect(task, &mut scratch);
    let instance = base
        .instance
        .as_ref()
        .and_then(|n| c.instances.iter().copied().find(|i| &i.name.node == n));
    if base.instance.is_some() && instance.is_none() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for p in &c.params {
        let name = &p.name.node;
        if p.range.is_none() || p.runtime.is_some() || opts.overrides.iter().any(|(n, _)| n == name)
        {
            continue;
        }
        let Some(ParamValue::Int(now)) = base.params.get(name).map(|ir| ir.value.clone()) else {
            continue;
        };
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
        let Some((lo, hi)) = range.int_ends() else {
            continue;
        };
        for (value, top) in [(lo, false), (hi, true)] {
            if value == now || (top && lo == hi) {
                continue;
            }
            let mut o = opts.clone();
            o.overrides.push((name.clone(), value.to_string()));
            let mut sink = Sink::new();
            let ir = lower_instance(task, &c, instance, &o, &mut sink);
            if sink.error_count() == 0 {
                out.push(RangeEnd {
                    param: name.clone(),
                    value,
                    top,
                    range_text: range.text(),
                    range_span: range.span,
                    ir,
                });
            }
        }
    }
    out
}
