//! Issue 11, case 3, in generated code: `consumer_done` arrived by the first 32 consumer threads
//! after the named barrier over all 128 (`examples/linear_partial_arrival.mpk`). In both kernels
//! the `bar.sync 3, 128` comes before the guarded arrival (and, on sm_100a, the tcgen05 fence
//! before the barrier); in the SASS of both targets the `BAR.SYNC 0x3, 0x80` is followed by a
//! predicated exit of the other threads and the arrive on an mbarrier no earlier arrive used.

use mpkc::back::FileKind;
use mpkc::driver::build::{compile_all, generate_all, write_all};
use mpkc::driver::sass::{instructions, opcode};
use mpkc::driver::{check_sources, nvcc, Source};
use mpkc::ir::Target;
use mpkc::sema::SemaOptions;
use mpkc::valid::CheckOptions;
use std::path::{Path, PathBuf};

fn example() -> Vec<mpkc::driver::Checked> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/linear_partial_arrival.mpk");
    let src = Source {
        path: "examples/linear_partial_arrival.mpk".into(),
        text: std::fs::read_to_string(path).unwrap(),
    };
    let c = check_sources(&[src], &SemaOptions::default(), &CheckOptions::default());
    assert!(c.iter().all(|c| !c.has_errors()), "{:#?}", c[0].diags);
    c
}

/// The consumer function of a kernel text.
fn consumer(text: &str) -> &str {
    // `__noinline__` on sm_100a, `__forceinline__` on sm_90a (the wgmma issuer is inlined).
    let start = [
        "__device__ __noinline__ void consumer(",
        "__device__ __forceinline__ void consumer(",
    ]
    .iter()
    .find_map(|s| text.find(s))
    .unwrap();
    let end = text[start..].find("\n}\n").unwrap();
    &text[start..start + end]
}

#[test]
fn the_arrival_follows_the_barrier_in_both_kernels() {
    let checked = example();
    let units = generate_all(&checked);
    let kernels: Vec<_> = units[0]
        .files
        .iter()
        .filter(|f| f.kind == FileKind::Kernel)
        .collect();
    assert_eq!(kernels.len(), 2);
    for k in kernels {
        let c = consumer(&k.text);
        let sync = c
            .find("mpkc::named_barrier_sync(3, 128);")
            .unwrap_or_else(|| panic!("{}: no bar.sync", k.name));
        let arrive = c
            .find("if (threadIdx.x < 32) mpkc::rt::mbar_arrive(&sem[SEM_CONSUMER_DONE]);")
            .unwrap_or_else(|| panic!("{}: no guarded arrival", k.name));
        assert!(sync < arrive, "{}", k.name);
        // Every TMEM load and every output store is before the barrier.
        for read in ["tmem_ld_32x32b", "out[static_cast<int64_t>(n) * N + row]"] {
            if let Some(r) = c.rfind(read) {
                assert!(r < sync, "{}: `{read}` after the barrier", k.name);
            }
        }
        // No other arrival on consumer_done.
        assert_eq!(c.matches("SEM_CONSUMER_DONE]").count(), 1, "{}", k.name);
        if !k.name.ends_with("_sm90.cuh") {
            let fence = c[..sync]
                .rfind("mpkc::sm100::tcgen05_fence_before();")
                .unwrap();
            assert!(
                !c[fence..sync].contains("mbar_arrive"),
                "{}: the fence is right before the barrier",
                k.name
            );
        }
    }
}

#[test]
fn the_arrival_follows_the_barrier_in_the_sass() {
    let tc = nvcc::find().unwrap_or_else(|e| panic!("{e}"));
    let checked = example();
    let units = generate_all(&checked);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("partial_arrival");
    let _ = std::fs::remove_dir_all(&dir);
    write_all(&dir, &units).unwrap();
    let mut seen = Vec::new();
    for j in compile_all(&tc, &dir, &checked, &units, 2) {
        let (cubin, _) = j
            .result
            .unwrap_or_else(|f| panic!("{}\n{}", f.command, f.stderr));
        let listing = tc.sass(&cubin).unwrap();
        let ins = instructions(&listing);
        let bar = ins
            .iter()
            .position(|i| i.starts_with("BAR.SYNC") && i.ends_with("0x3, 0x80"))
            .unwrap_or_else(|| panic!("{}: no BAR.SYNC 0x3, 0x80", j.target));
        let after: Vec<&str> = ins[bar + 1..].iter().copied().take(8).collect();
        // Only warp 0 arrives: either the other warps leave before the arrive (a predicated exit
        // or branch, the role function returning) or the arrive itself is predicated (the role
        // inlined into the worker, as the sm_90a consumer is).
        let is_arrive = |i: &str| opcode(i).starts_with("SYNCS.ARRIVE");
        let arrive = after
            .iter()
            .position(|i| is_arrive(i))
            .unwrap_or_else(|| panic!("{}: no arrive after the barrier: {after:?}", j.target));
        let exit = after[..arrive].iter().any(|i| {
            i.starts_with('@') && (i.contains("RET") || i.contains("EXIT") || i.contains("BRA"))
        });
        assert!(
            exit || after[arrive].starts_with('@'),
            "{}: the arrive after the barrier is neither predicated nor behind a predicated exit: {after:?}",
            j.target
        );
        let operand = after[arrive]
            .split_whitespace()
            .find(|w| w.starts_with('['))
            .unwrap()
            .to_string();
        assert!(
            !ins[..bar]
                .iter()
                .any(|i| i.starts_with("SYNCS.ARRIVE") && i.contains(&operand)),
            "{}: {operand} is arrived before the barrier too",
            j.target
        );
        seen.push(j.target);
    }
    seen.sort_by_key(|t| t.as_str());
    assert_eq!(seen, vec![Target::Sm100a, Target::Sm90a]);
}
