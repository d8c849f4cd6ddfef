//! The checked stdlib and the facts of every unit `mpkc wire` registers, for the wiring tests
//! (tests/wire.rs on the fixture tree, tests/wire_facts.rs on the facts and generated files).

use mpkc::driver::{check_sources_with, stdlib, Checked};
use mpkc::sema::SemaOptions;
use mpkc::valid::CheckOptions;
use mpkc::wire::UnitFacts;

/// The checked stdlib, derived contracts included.
pub fn stdlib_checked() -> Vec<Checked> {
    check_sources_with(
        &stdlib::sources(),
        |_| SemaOptions::default(),
        &CheckOptions::default(),
    )
}

/// The facts of every stdlib unit wire registers (derived tasks without a TaskType are left out,
/// W0804).
pub fn stdlib_units() -> Vec<UnitFacts> {
    stdlib_checked()
        .iter()
        .flat_map(|c| c.tasks.iter().map(move |t| (c, t)))
        .filter(|(c, t)| UnitFacts::derived_without_id(t, c.derived.is_some()).is_none())
        // Helpers are wired with the stdlib tasks that use them (their code is in those kernels).
        .filter(|(_, t)| t.ir.family != mpkc::ir::Family::Helper)
        .map(|(c, t)| {
            UnitFacts::of_unit(c, t)
                .unwrap_or_else(|d| panic!("{}: {}", t.ir.unit_name(), d.message))
        })
        .collect()
}
