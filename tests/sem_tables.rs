//! One semaphore table per declared target (issue 11, case 12): `spec.h` holds `kSems_sm100a`
//! and/or `kSems_sm90a`, each what that target's kernel initialises. On sm_90a the consumer
//! warpgroup frees a stage after its wgmma reads, so a ring's commit-released empty barriers
//! count 128 thread arrivals there and 1 on sm_100a; every other row is the same. The kernels'
//! `init_semaphores` and re-init helpers read their own target's table, row by row.

use mpkc::back::{generate, ContractInfo};
use mpkc::driver::{check_sources, stdlib};
use mpkc::ir::{Family, Target};
use mpkc::sema::SemaOptions;
use mpkc::valid::CheckOptions;

/// The rows of table `name` in `spec`: (name, ordinal, count, producer, arrival).
fn rows(spec: &str, name: &str) -> Vec<(String, usize, i64, String, String)> {
    let start = spec
        .find(&format!("::mpkc::SemSpec {name}[NUM_OP_SEMS] = {{"))
        .unwrap_or_else(|| panic!("{name} in spec.h"));
    spec[start..]
        .lines()
        .skip(1)
        .take_while(|l| l.trim_start().starts_with('{'))
        .map(|l| {
            let f: Vec<&str> = l
                .trim()
                .trim_start_matches('{')
                .trim_end_matches("},")
                .split(", ")
                .collect();
            (
                f[0].trim_matches('"').to_string(),
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
                f[3].to_string(),
                f[5].to_string(),
            )
        })
        .collect()
}

#[test]
fn each_target_has_the_table_its_kernel_initialises() {
    let checked = check_sources(
        &stdlib::sources(),
        &SemaOptions::default(),
        &CheckOptions::default(),
    );
    let mut pipelines = 0;
    for c in &checked {
        let info = ContractInfo::new(&c.source.path, &c.source.text);
        for t in c.tasks.iter().filter(|t| t.ir.family == Family::Pipeline) {
            pipelines += 1;
            let unit = t.ir.unit_name();
            let files = generate(t, &info);
            let text = |name: &str| {
                files
                    .iter()
                    .find(|f| f.name == name)
                    .unwrap_or_else(|| panic!("{name}"))
                    .text
                    .clone()
            };
            let spec = text(&format!("{unit}_spec.h"));
            let n = t.ordinals.len();
            assert!(n > 0, "{unit}: a pipeline has op ordinals");
            let by_target: Vec<(Target, String, String)> =
                t.ir.targets
                    .iter()
                    .map(|d| match d.target {
                        Target::Sm100a => (
                            d.target,
                            "kSems_sm100a".to_string(),
                            text(&format!("{unit}.cuh")),
                        ),
                        Target::Sm90a => (
                            d.target,
                            "kSems_sm90a".to_string(),
                            text(&format!("{unit}_sm90.cuh")),
                        ),
                    })
                    .collect();
            for (target, table, kernel) in &by_target {
                let r = rows(&spec, table);
                assert_eq!(r.len(), n, "{unit} {table}: one row per ordinal");
                for (i, (name, ordinal, count, producer, arrival)) in r.iter().enumerate() {
                    let o = &t.ordinals[i];
                    assert_eq!(
                        (name, *ordinal),
                        (&o.name, o.ordinal),
                        "{unit} {table} row {i}"
                    );
                    // The ring's commit-released empties change on sm_90a, nothing else does.
                    let sm90_empty = *target == Target::Sm90a
                        && name.contains(".empty[")
                        && o.arrival == mpkc::ir::ArrivalIr::Commit;
                    if sm90_empty {
                        assert_eq!(*count, 128 + (o.count - 1), "{unit} {table} {name}");
                        assert_eq!(producer, "::mpkc::Role::Consumer", "{unit} {table} {name}");
                        assert_eq!(arrival, "::mpkc::Arrival::Thread", "{unit} {table} {name}");
                    } else {
                        assert_eq!(*count, o.count, "{unit} {table} {name}");
                    }
                    // The kernel initialises row i from this table, and from no other.
                    let init = format!("mpkc::rt::mbar_init(&sem[{table}[{i}].ordinal], {table}[{i}].count);  // {name}: {count}");
                    assert!(
                        kernel.contains(&init),
                        "{unit}: `{init}` in the {target} kernel"
                    );
                    if o.reinit.is_some()
                        && matches!(o.reinit, Some(r) if r != mpkc::ir::RoleKind::Consumer)
                    {
                        let reinit = format!("mpkc::rt::mbar_reinit(&sem[{table}[{i}].ordinal], {table}[{i}].count);  // {name}: {count}");
                        assert!(
                            kernel.contains(&reinit),
                            "{unit}: `{reinit}` in the {target} kernel"
                        );
                    }
                }
                for (other, other_table, _) in &by_target {
                    if other != target {
                        assert!(
                            !kernel.contains(&format!("{other_table}[")),
                            "{unit}: the {target} kernel reads {other_table}"
                        );
                    }
                }
            }
            let sm90 = by_target.iter().any(|(t, ..)| *t == Target::Sm90a);
            assert_eq!(
                spec.contains("kSems_sm90a"),
                sm90,
                "{unit}: a table for each declared target only"
            );
        }
    }
    assert!(
        pipelines >= 5,
        "the stdlib's pipeline units were found ({pipelines})"
    );
}
