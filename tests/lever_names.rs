//! No name the stdlib's generated kernels and harnesses use can be a lever
//! (`valid::lever_name_taken`, E0012): a lever is a `#define` and would rewrite it.

use mpkc::driver::build::generate_all;
use mpkc::driver::{check_sources, stdlib};
use mpkc::sema::SemaOptions;
use mpkc::valid::CheckOptions;

/// Every upper-case identifier (capitals, digits and `_`, two characters or more; comments and
/// literals left out, a define does not reach them) of every generated kernel and harness is
/// one `lever_name_taken` refuses, but the task's own levers; the prefixes `SEM_`, `REGION_`,
/// `BAR_` and `__` are reserved for every contract name (E0012's other rules).
#[test]
fn no_generated_name_can_be_a_lever() {
    let checked = check_sources(
        &stdlib::sources(),
        &SemaOptions::default(),
        &CheckOptions::default(),
    );
    let mut missing = std::collections::BTreeSet::new();
    for u in generate_all(&checked) {
        let task = &checked[u.source].tasks[u.task];
        for f in u.files.iter().filter(|f| !f.name.ends_with(".md")) {
            for (_, w) in mpkc::front::cuda::identifiers(&f.text) {
                let upper = w.len() >= 2
                    && w.bytes().any(|c| c.is_ascii_uppercase())
                    && w.bytes()
                        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_');
                let own_lever = task.ir.levers.iter().any(|l| l.name == w);
                let prefixed = ["SEM_", "REGION_", "BAR_", "__"]
                    .iter()
                    .any(|p| w.starts_with(p));
                if upper && !own_lever && !prefixed && !mpkc::valid::lever_name_taken(&task.ir, w) {
                    missing.insert(format!("{w} ({})", f.name));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "generated names a lever could take (add them to valid::names::GENERATED_MACROS): {missing:?}"
    );
}
