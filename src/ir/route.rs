//! `route W by ids per slot | sum slots` (docs/language.md, "Routed experts"): the routed
//! weights' run-time expert index, as sema lowers it.

use super::{Handle, TensorIr};
use crate::span::Span;

/// How a routed pipeline spends its slots (`route W by ids per slot | sum slots`,
/// docs/language.md "Routed experts").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RouteMode {
    /// `per slot`: a task per (token, slot, tile); expert `ids[token, slot]`; output row
    /// `token * slots + slot` of `[m_real * slots, N]`.
    PerSlot,
    /// `sum slots`: a task per (token, tile); K iteration `it` multiplies slot
    /// `it / (K / tile.K)`'s expert with that slot's K block of the activations
    /// (`[m_real, slots * K]`), so the slots are summed in the accumulator.
    SumSlots,
}

impl RouteMode {
    /// The mode as written.
    pub fn as_str(self) -> &'static str {
        match self {
            RouteMode::PerSlot => "per slot",
            RouteMode::SumSlots => "sum slots",
        }
    }
}

/// `route W by ids …`: the weights' outermost (expert) index is read at run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RouteIr {
    /// The routed weights, `[experts, N, K]`.
    pub weights: Handle<TensorIr>,
    /// The int32 expert ids, `[m_real, slots]`.
    pub ids: Handle<TensorIr>,
    /// How the slots are spent.
    pub mode: RouteMode,
    /// The item.
    pub span: Span,
}
