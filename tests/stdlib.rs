//! The stdlib contracts re-express real MPK ops: their plans and semaphore tables must be MPK's
//! (mpk-v2-contract.md §1.6 and §2.4), and they must check with no errors and no warnings.

use mpkc::driver::{check_source, stdlib, Checked};
use mpkc::ir::{ArrivalIr, RoleKind};
use mpkc::sema::SemaOptions;
use mpkc::valid::{CheckOptions, CheckedTask};

fn checked() -> Vec<Checked> {
    stdlib::sources()
        .iter()
        .map(|s| check_source(s, &SemaOptions::default(), &CheckOptions::default()))
        .collect()
}

fn unit(name: &str) -> CheckedTask {
    checked()
        .into_iter()
        .flat_map(|c| c.tasks)
        .find(|t| t.ir.unit_name() == name)
        .unwrap_or_else(|| panic!("no stdlib unit {name}"))
}

/// (name, physical pages, offset) of each region of the first target's plan.
fn placements(t: &CheckedTask) -> Vec<(String, Vec<usize>, i64)> {
    t.primary_plan()
        .regions
        .iter()
        .map(|r| (r.name.clone(), r.pages.clone(), r.offset))
        .collect()
}

#[test]
fn stdlib_checks_clean() {
    for c in checked() {
        assert!(c.diags.is_empty(), "{}: {:#?}", c.source.path, c.diags);
        assert!(!c.tasks.is_empty(), "{} yields no task", c.source.path);
    }
}

#[test]
fn every_stdlib_file_is_embedded() {
    // `stdlib/*.mpk`, the contracts of its subdirectories (`stdlib/dsv3/`) and their Python
    // references (`*.ref.py`), not `bodies/`.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut on_disk: Vec<String> = Vec::new();
    let mut dirs = vec![root.join("stdlib")];
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "mpk")
                || p.to_string_lossy().ends_with(".ref.py")
            {
                let rel = p.strip_prefix(root).unwrap();
                on_disk.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    // A chain's reference (`*.chain.toml`, `mpkc verify --chain`) is read from disk with its
    // manifest, like the stage files it names.
    let chain_refs: Vec<String> = on_disk
        .iter()
        .filter(|p| p.ends_with(".ref.py"))
        .filter(|p| {
            let dir = std::path::Path::new(p.as_str()).parent().unwrap();
            std::fs::read_dir(root.join(dir)).unwrap().any(|e| {
                let f = e.unwrap().path();
                f.to_string_lossy().ends_with(".chain.toml")
                    && std::fs::read_to_string(&f).unwrap().contains(&format!(
                        "python = \"{}\"",
                        std::path::Path::new(p.as_str())
                            .file_name()
                            .unwrap()
                            .to_string_lossy()
                    ))
            })
        })
        .cloned()
        .collect();
    on_disk.retain(|p| !chain_refs.contains(p));
    on_disk.sort();
    let mut embedded: Vec<String> = stdlib::CONTRACTS
        .iter()
        .chain(stdlib::REFERENCES)
        .map(|(p, _)| p.to_string())
        .collect();
    embedded.sort();
    assert_eq!(on_disk, embedded);
}

#[test]
fn linear_plan_is_mpk_linear_spec() {
    let t = unit("linear_sm100_v2");
    let p = t.primary_plan();
    assert_eq!(t.ir.region_bytes(), 221_200);
    assert_eq!(p.pages_used, 14);
    let got = placements(&t);
    for (s, g) in got.iter().take(6).enumerate() {
        assert_eq!(*g, (format!("W_{s}"), vec![2 * s, 2 * s + 1], 0), "W_{s}");
    }
    let a: Vec<_> = got[6..]
        .iter()
        .map(|(n, pages, off)| (n.as_str(), pages[0], *off))
        .collect();
    assert_eq!(
        a,
        vec![
            ("A_0", 12, 0),
            ("A_1", 12, 4096),
            ("A_2", 12, 8192),
            ("A_3", 12, 12288),
            ("A_4", 13, 0),
            ("A_5", 13, 4096),
            ("scratch", 13, 8192)
        ]
    );
    assert_eq!(
        p.release_order,
        vec![0, 1, 2, 3, 4, 5, 6, 7, 12, 8, 9, 10, 11, 13]
    );
    let steps: Vec<i64> = t.ir.regions.values().map(|r| r.release_step).collect();
    assert_eq!(steps, vec![1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6, 7]);
}

#[test]
fn rmsnorm_plans_are_mpk_rmsnorm_spec() {
    let t = unit("rmsnorm_v2_h4096");
    assert_eq!(t.primary_plan().pages_used, 2);
    assert_eq!(
        placements(&t),
        vec![
            ("input".into(), vec![0], 0),
            ("weight".into(), vec![0], 8192),
            ("output".into(), vec![1], 0),
            ("reduce".into(), vec![1], 8192)
        ]
    );
    let t = unit("rmsnorm_v2_h7168");
    assert_eq!(t.ir.region_bytes(), 44_032);
    assert_eq!(t.primary_plan().pages_used, 3);
    assert_eq!(
        placements(&t),
        vec![
            ("input".into(), vec![0], 0),
            ("weight".into(), vec![1], 0),
            ("output".into(), vec![2], 0),
            ("reduce".into(), vec![0], 14336)
        ]
    );
}

#[test]
fn argmax_is_one_page_and_elementwise_ops_none() {
    for name in ["argmax_partial_v2", "argmax_reduce_v2"] {
        let t = unit(name);
        assert_eq!(t.primary_plan().pages_used, 1, "{name}");
        assert_eq!(
            placements(&t),
            vec![("idx".into(), vec![0], 0), ("val".into(), vec![0], 256)],
            "{name}"
        );
    }
    for name in ["silu_mul_v2", "embedding_v2"] {
        let t = unit(name);
        assert_eq!(t.ir.regions.len(), 0);
        assert_eq!(t.primary_plan().pages_used, 0, "{name}");
        assert_eq!(
            t.primary_plan().release_order,
            (0..14).collect::<Vec<_>>(),
            "forwards the preferred order"
        );
    }
}

/// MPK's linear semaphore table (contract doc §2.4): counts, producer → consumer, arrival kind,
/// re-init owner. mpkc's numbering happens to be MPK's too, but for the accumulator: MPK's table
/// has two `mainloop_mbar` and two `epilogue_mbar` slots, and with one tile per task (I-P6) and
/// the barriers re-initialised every task, slot 1 is never waited or arrived (E0014), so the
/// stdlib linear declares `tmem slots 1`: 22 ordinals, not 24.
#[test]
fn linear_ordinals_are_mpk_table() {
    use RoleKind::*;
    let t = unit("linear_sm100_v2");
    assert_eq!(t.ordinals.len(), 22);
    #[derive(Debug, PartialEq)]
    enum K {
        Tma,
        Bulk,
        Commit,
        Thread,
    }
    let mut want: Vec<(i64, RoleKind, RoleKind, K, Option<RoleKind>)> = Vec::new();
    want.extend((0..6).map(|_| (1, Loader, Launcher, K::Tma, Some(Loader)))); // W_tma_mbar
    want.extend((0..6).map(|_| (1, Loader, Launcher, K::Tma, Some(Loader)))); // A_tma_mbar
    want.extend((0..6).map(|_| (1, Launcher, Loader, K::Commit, Some(Loader)))); // mma_mbar (shared empty)
    want.push((1, Launcher, Consumer, K::Commit, Some(Launcher))); // mainloop_mbar[0]
    want.push((128, Consumer, Launcher, K::Thread, Some(Launcher))); // epilogue_mbar[0]
    want.push((1, Launcher, Consumer, K::Thread, None)); // tmem_ready
    want.push((128, Consumer, Launcher, K::Thread, Some(Launcher))); // consumer_done
    let got: Vec<_> = t
        .ordinals
        .iter()
        .map(|o| {
            let k = match o.arrival {
                ArrivalIr::Tma(_) => K::Tma,
                ArrivalIr::Bulk(_) => K::Bulk,
                ArrivalIr::Commit => K::Commit,
                ArrivalIr::Threads(_) => K::Thread,
            };
            (o.count, o.producer, o.consumer, k, o.reinit)
        })
        .collect();
    assert_eq!(got, want);
    assert!(t.ordinals.iter().enumerate().all(|(i, o)| o.ordinal == i));
}

/// A helper's regions and barriers join the plan and registry of the task that uses it
/// (docs/language.md, "Helpers"): `rope` plans `rope_yarn`'s frequency region and registers its
/// barrier; `rmsnorm_fp8` uses a helper without SMEM, so its plan is its own regions.
#[test]
fn helpers_join_their_callers_plans() {
    let rope = unit("rope");
    assert_eq!(rope.ir.helpers.len(), 1);
    assert_eq!(rope.ir.helpers[0].name, "rope_yarn");
    let regions: Vec<(String, i64)> = rope
        .ir
        .regions
        .values()
        .map(|r| (r.name.clone(), r.size))
        .collect();
    assert_eq!(regions, vec![("rope_yarn_inv_freq".to_string(), 128)]);
    assert!(placements(&rope)
        .iter()
        .any(|(n, _, _)| n == "rope_yarn_inv_freq"));
    let bars: Vec<(String, i64)> = rope
        .ir
        .barriers
        .values()
        .map(|b| (b.name.clone(), b.id))
        .collect();
    assert_eq!(bars, vec![("rope_yarn_sync".to_string(), 4)]);
    let norm = unit("rmsnorm_fp8");
    assert_eq!(norm.ir.helpers[0].name, "fp8_quant_1x128");
    // The helper's `n` is bound to the task's `hidden`.
    let n = &norm.ir.helpers[0].helper.params["n"].value;
    assert_eq!(n.to_string(), "7168");
    assert_eq!(norm.ir.regions.len(), 2);
    // The helpers themselves are units of their own (spec header and design document).
    for h in ["rope_yarn", "fp8_quant_1x128"] {
        assert_eq!(unit(h).ir.family, mpkc::ir::Family::Helper);
    }
}
