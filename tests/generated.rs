//! Generated files of every stdlib contract: insta snapshots under `snapshots/`, byte-identical
//! regeneration, host-safe spec headers (compiled with the host C++ compiler), and every kernel
//! compiled by nvcc for every declared target with no spills and no local memory.

#[path = "support/nvcc_cache.rs"]
mod nvcc_cache;

#[path = "support/host_cxx.rs"]
mod host_cxx;

use mpkc::back::harness_entry;
use mpkc::back::{files, Emitter, FileKind, GeneratedFile, SUPPORT_HEADERS};
use mpkc::driver::build::{self, generate_all, write_all, UnitOutput};
use mpkc::driver::{check_source, check_sources, nvcc, stdlib, Checked};
use mpkc::ir::Target;
use mpkc::sema::SemaOptions;
use mpkc::valid::CheckOptions;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The checked stdlib, with the contracts mpkc derives from it (each split-K instance's reduce
/// task): their generated files are snapshotted and compiled like the rest.
fn checked() -> Vec<Checked> {
    check_sources(
        &stdlib::sources(),
        &SemaOptions::default(),
        &CheckOptions::default(),
    )
}

fn scratch_dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Where the snapshot of a generated file lives, under `snapshots/`: `gen/doc/` for a design
/// document (a consumer unit's `x.spec.md` and its kernel `x.cuh` would share the snapshot name
/// `x` in one directory), else `gen/<target>/` for a file of one target, `gen/common/` for a
/// target-neutral one ([`Emitter::target`] decides).
fn gen_dir(emitter: Emitter) -> String {
    match emitter.target() {
        _ if emitter == Emitter::DesignDoc => "gen/doc".to_string(),
        Some(t) => format!("gen/{t}"),
        None => "gen/common".to_string(),
    }
}

/// Every generated file of the stdlib with its snapshot directory (relative to `snapshots/`):
/// `(directory, generated file)`. The emitter of each file comes from the build's own file plan
/// ([`files::sources`]), which the generator follows.
fn gen_snapshots(checked: &[Checked]) -> Vec<(String, GeneratedFile)> {
    let mut out = Vec::new();
    for u in generate_all(checked) {
        let plan = files::sources(&checked[u.source].tasks[u.task]);
        for f in u.files {
            let planned = plan.iter().find(|p| p.name == f.name);
            let Some(p) = planned else {
                panic!("{}: not in the build's file plan", f.name)
            };
            out.push((gen_dir(p.emitter), f));
        }
    }
    out
}

/// A generated file's name as insta's binary snapshot name and extension: `x.spec.md` is
/// snapshot `x` with extension `spec.md`, kept as `x.snap` (insta's metadata) and the plain file
/// `x.snap.spec.md` (the bytes).
fn snapshot_stem_ext(name: &str) -> (&str, &str) {
    name.split_once('.')
        .unwrap_or_else(|| panic!("{name}: a generated file name has an extension"))
}

/// The generated file name a plain snapshot file stands for: `x.snap.spec.md` is `x.spec.md`;
/// `None` for insta's metadata file (`x.snap`) and anything else.
fn generated_name_of(snapshot_file: &str) -> Option<String> {
    let (stem, ext) = snapshot_file.split_once(".snap.")?;
    (!ext.is_empty() && !ext.starts_with("new")).then(|| format!("{stem}.{ext}"))
}

#[test]
fn snapshot_every_generated_file() {
    let checked = checked();
    let snaps = gen_snapshots(&checked);
    let mut names = Vec::new();
    for (dir, f) in &snaps {
        names.push(f.name.clone());
        let path = format!("../snapshots/{dir}");
        insta::with_settings!({snapshot_path => path, prepend_module_to_snapshot => false, omit_expression => true}, {
            insta::assert_binary_snapshot!(&f.name, f.text.clone().into_bytes());
        });
    }
    // Two files of one directory never share a snapshot name.
    let mut seen = std::collections::BTreeSet::new();
    for (dir, f) in &snaps {
        let (stem, _) = snapshot_stem_ext(&f.name);
        assert!(
            seen.insert(format!("{dir}/{stem}")),
            "{dir}/{stem}.snap twice"
        );
    }
    // Every unit has its spec header; consumer-only units also a kernel and a worker unit.
    for u in &generate_all(&checked) {
        assert!(
            u.files.iter().any(|f| f.kind == FileKind::SpecHeader),
            "{}",
            u.unit
        );
    }
    assert!(names.contains(&"linear_sm100_v2_spec.h".to_string()));
    assert!(names.contains(&"rmsnorm_v2_h7168.cuh".to_string()));
    let dir_of = |n: &str| {
        snaps
            .iter()
            .find(|(_, f)| f.name == n)
            .map(|(d, _)| d.as_str())
    };
    assert_eq!(dir_of("linear_sm100_v2.cuh"), Some("gen/sm_100a"));
    assert_eq!(dir_of("linear_sm100_v2_sm90.cuh"), Some("gen/sm_90a"));
    assert_eq!(dir_of("linear_sm100_v2_harness.cu"), Some("gen/common"));
    assert_eq!(dir_of("rmsnorm_v2_h7168.cuh"), Some("gen/common"));
    assert_eq!(dir_of("rmsnorm_v2_h7168.spec.md"), Some("gen/doc"));
    assert_eq!(dir_of("linear_sm100_v2.spec.md"), Some("gen/doc"));
}

#[test]
fn generation_is_deterministic() {
    let a = generate_all(&checked());
    let b = generate_all(&checked());
    let flat = |u: &[UnitOutput]| {
        u.iter()
            .flat_map(|x| x.files.iter().map(|f| (f.name.clone(), f.text.clone())))
            .collect::<Vec<_>>()
    };
    assert_eq!(flat(&a), flat(&b));
}

#[test]
fn every_generated_file_has_the_banner_and_no_host_paths() {
    for u in generate_all(&checked()) {
        for f in &u.files {
            let first = if f.kind == FileKind::DesignDoc {
                f.text.lines().nth(2).unwrap_or("")
            } else {
                f.text.lines().next().unwrap_or("")
            };
            assert!(
                first.contains(&format!("Generated by mpkc {}", mpkc::VERSION)),
                "{}: {first}",
                f.name
            );
            assert!(first.contains("stdlib/"), "{}: names the contract", f.name);
            assert!(
                !f.text.contains("/work/")
                    && !f.text.contains("/home/")
                    && !f.text.contains("/tmp/"),
                "{}",
                f.name
            );
        }
    }
}

/// I-H6: spec headers hold no device code and compile as plain host C++.
#[test]
fn spec_headers_are_host_safe() {
    let checked = checked();
    let units = generate_all(&checked);
    let dir = scratch_dir("host_safe");
    write_all(&dir, &units).unwrap();
    let mut tu = String::new();
    let mut checks = Vec::new();
    for u in &units {
        for f in u.files.iter().filter(|f| f.kind == FileKind::SpecHeader) {
            assert!(
                !f.text.contains("__device__")
                    && !f.text.contains("asm(")
                    && !f.text.contains("asm volatile"),
                "{} is not host-safe",
                f.name
            );
            tu.push_str(&format!("#include \"{}\"\n", f.name));
            // NUM_REGIONS is the contract's region count, and make_smem_info() registers that
            // many regions (checked when the program runs, below).
            let regions = checked[u.source].tasks[u.task].ir.regions.len();
            tu.push_str(&format!(
                "static_assert(kernel::{0}::NUM_REGIONS == {regions}, \"NUM_REGIONS of {0}\");\nint check_{0}() {{ return (int)kernel::{0}::make_smem_info().regions.size() - kernel::{0}::NUM_REGIONS; }}\n",
                u.unit
            ));
            checks.push(format!("check_{}", u.unit));
        }
    }
    // The program exits with the number of units whose make_smem_info() disagrees.
    tu.push_str(&format!(
        "int main() {{ int bad = 0; {} return bad; }}\n",
        checks
            .iter()
            .map(|c| format!("bad += {c}() != 0;"))
            .collect::<Vec<_>>()
            .join(" ")
    ));
    std::fs::write(dir.join("host.cc"), tu).unwrap();
    host_cxx::compile(&dir, "host.cc", &["-o", "host"]);
    assert_eq!(checks.len(), units.len(), "one spec header per unit");
    let run = Command::new(dir.join("host")).status().unwrap();
    assert_eq!(
        run.code(),
        Some(0),
        "make_smem_info() registers NUM_REGIONS regions"
    );
    assert!(SUPPORT_HEADERS
        .iter()
        .any(|(n, _)| *n == "mpkc_spec_support.h"));
}

/// The layout headers (`<unit>_layout.h`, the math the pipeline kernels and tests/oracle.rs share)
/// are host-safe too: plain C++17 without CUDA compiles them, all together, warning-free, and their
/// functions are usable in constant expressions.
#[test]
fn layout_headers_are_host_safe_constexpr() {
    let checked = checked();
    let units = generate_all(&checked);
    let dir = scratch_dir("layout_host_safe");
    write_all(&dir, &units).unwrap();
    let mut tu = String::new();
    let mut n = 0;
    for u in &units {
        for f in u.files.iter().filter(|f| f.kind == FileKind::LayoutHeader) {
            assert!(
                !f.text.contains("asm(") && !f.text.contains("asm volatile"),
                "{}",
                f.name
            );
            tu.push_str(&format!(
                "#include \"{}\"\nstatic_assert(kernel::{1}::layout::Sm100::w_mma(kernel::{1}::layout::Sm100::desc_at(kernel::{1}::layout::Sm100::SMEM_DESC, 0x400u), 1) != 0, \"\");\n",
                f.name, u.unit
            ));
            n += 1;
        }
    }
    let pipelines = checked
        .iter()
        .flat_map(|c| c.tasks.iter())
        .filter(|t| t.ir.family == mpkc::ir::Family::Pipeline)
        .count();
    assert!(pipelines > 0);
    assert_eq!(
        n, pipelines,
        "every stdlib pipeline unit has a layout header"
    );
    tu.push_str("int main() { return 0; }\n");
    std::fs::write(dir.join("layout.cc"), tu).unwrap();
    host_cxx::compile(&dir, "layout.cc", &["-fsyntax-only", "-Wextra"]);
}

/// One nvcc job of these tests: the harness `file` of `unit`, for `target`.
#[derive(Clone, Debug)]
struct Job {
    unit: String,
    file: String,
    target: Target,
}

/// The jobs `mpkc build` runs for the stdlib ([`build::jobs`]): every harness for every target
/// its contract declares.
fn stdlib_jobs(checked: &[Checked], units: &[UnitOutput]) -> Vec<Job> {
    build::jobs(checked, units)
        .into_iter()
        .map(|(ui, file, target)| Job {
            unit: units[ui].unit.clone(),
            file,
            target,
        })
        .collect()
}

/// What ptxas reported for one job's entry, after [`check_ptxas`] held.
#[derive(Debug)]
struct Ptxas {
    registers: u32,
    /// The most registers per thread the entry's launch bounds allow ([`register_limit`]).
    limit: u32,
    max_threads: u32,
    /// Spill stores and loads summed over every function ptxas reported (all are 0).
    spills: (u32, u32),
}

/// Registers of one SM of sm_90 and sm_100 (64K 32-bit registers), the most one thread may
/// use (255), and the allocation unit per thread (a warp's registers come in units of 256, i.e. 8
/// per thread): the CUDA C++ Programming Guide's table of technical specifications per compute
/// capability, and the occupancy calculator's allocation granularity.
const REGS_PER_SM: u32 = 65536;
const MAX_REGS_PER_THREAD: u32 = 255;
const REG_ALLOC_PER_THREAD: u32 = 8;

/// The register limit the harness gives ptxas for `entry`: its `__launch_bounds__(T, B)` (B
/// blocks of T threads resident on one SM: 64K registers over `B * T` threads rounded up to whole
/// warps, in units of 8), `__maxnreg__(N)` where the entry has one, and `-maxrregcount` among the
/// nvcc arguments. Errors: the entry is not in the harness, or has no launch bounds (ptxas would
/// then assume up to 1024 threads and the 256-thread launch be unchecked).
fn register_limit(harness: &str, entry: &str, args: &[String]) -> Result<(u32, u32), String> {
    let decl = harness
        .lines()
        .find(|l| l.contains(&format!(" {entry}(")) && l.contains("__global__"))
        .ok_or_else(|| format!("no __global__ {entry} in the harness"))?;
    let numbers_after = |key: &str| -> Option<Vec<u32>> {
        let rest = &decl[decl.find(key)? + key.len()..];
        let inner = &rest[..rest.find(')')?];
        inner.split(',').map(|n| n.trim().parse().ok()).collect()
    };
    let bounds = numbers_after("__launch_bounds__(")
        .ok_or_else(|| format!("{entry} has no __launch_bounds__: {decl}"))?;
    let (threads, blocks) = match bounds[..] {
        [t] => (t, 1),
        [t, b, ..] => (t, b.max(1)),
        _ => return Err(format!("{entry}: unreadable __launch_bounds__: {decl}")),
    };
    let warps = threads.div_ceil(32).max(1);
    let mut limit =
        (REGS_PER_SM / (warps * 32 * blocks)) / REG_ALLOC_PER_THREAD * REG_ALLOC_PER_THREAD;
    limit = limit.min(MAX_REGS_PER_THREAD);
    if let Some(n) = numbers_after("__maxnreg__(").and_then(|v| v.first().copied()) {
        limit = limit.min(n);
    }
    for (i, a) in args.iter().enumerate() {
        let n = if let Some(v) = a
            .strip_prefix("--maxrregcount=")
            .or_else(|| a.strip_prefix("-maxrregcount="))
        {
            v.parse().ok()
        } else if a == "-maxrregcount" || a == "--maxrregcount" {
            args.get(i + 1).and_then(|v| v.parse().ok())
        } else {
            None
        };
        if let Some(n) = n {
            limit = limit.min(n);
        }
    }
    Ok((limit, threads))
}

/// Reads ptxas's `-v` report for `entry` and checks it: the entry was compiled, its register
/// count is reported and within `limit`, its stack frame is 0 bytes, and every function ptxas
/// reported (the entry and the role functions it calls) has 0 bytes of spill stores and loads.
/// The driver's own parser ([`nvcc::parse_ptxas`]) must read the same numbers.
fn check_ptxas(stderr: &str, entry: &str, limit: u32, max_threads: u32) -> Result<Ptxas, String> {
    let num_before = |line: &str, key: &str| -> Option<u32> {
        let i = line.find(key)?;
        line[..i].split_whitespace().last()?.parse().ok()
    };
    let lines: Vec<&str> = stderr.lines().collect();
    let compiled = lines
        .iter()
        .position(|l| l.contains(&format!("Compiling entry function '{entry}'")))
        .ok_or_else(|| format!("ptxas compiled no entry {entry}"))?;
    let registers = lines[compiled..]
        .iter()
        .find_map(|l| {
            (l.contains("Used") && l.contains("registers"))
                .then(|| num_before(l, "registers"))
                .flatten()
        })
        .ok_or_else(|| format!("ptxas reported no register count for {entry}"))?;
    // `Function properties for <f>` is followed by `N bytes stack frame, N bytes spill stores,
    // N bytes spill loads`.
    let mut frames = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if let Some(f) = l.split("Function properties for ").nth(1) {
            let next = lines.get(i + 1).copied().unwrap_or("");
            let nums = (
                num_before(next, "bytes stack frame"),
                num_before(next, "bytes spill stores"),
                num_before(next, "bytes spill loads"),
            );
            let (Some(stack), Some(stores), Some(loads)) = nums else {
                return Err(format!("no frame line after `{l}`: `{next}`"));
            };
            frames.push((f.trim().to_string(), stack, stores, loads));
        }
    }
    let Some(&(_, stack, _, _)) = frames.iter().find(|(f, ..)| f == entry) else {
        return Err(format!("ptxas reported no function properties for {entry}"));
    };
    let spills = frames
        .iter()
        .fold((0, 0), |(s, l), (_, _, st, ld)| (s + st, l + ld));
    let parsed = nvcc::parse_ptxas(stderr, entry)
        .ok_or_else(|| format!("nvcc::parse_ptxas found no {entry}"))?;
    if (parsed.registers, parsed.stack_bytes) != (registers, stack) {
        return Err(format!(
            "nvcc::parse_ptxas read {parsed:?}, the report says {registers} registers, {stack} bytes stack"
        ));
    }
    let spilling: Vec<_> = frames
        .iter()
        .filter(|(_, _, st, ld)| *st != 0 || *ld != 0)
        .collect();
    if !spilling.is_empty() {
        return Err(format!(
            "spills (function, stack, stores, loads): {spilling:?}"
        ));
    }
    if stack != 0 {
        return Err(format!("{entry}: {stack} bytes stack frame (local memory)"));
    }
    // ptxas's performance advisories (C7510 / C7519: wgmma serialised, each waited before the
    // next is issued) are what `mpkc build` reports as W0702; no generated kernel may draw one.
    if !parsed.advisories.is_empty() {
        return Err(format!("{entry}: ptxas advisories {:?}", parsed.advisories));
    }
    if registers == 0 || registers > limit {
        return Err(format!(
            "{entry}: {registers} registers, but __launch_bounds__ allow {limit} per thread for {max_threads} threads"
        ));
    }
    Ok(Ptxas {
        registers,
        limit,
        max_threads,
        spills,
    })
}

/// Compiles every job in `dir` with the driver's own nvcc command line ([`nvcc::arguments`],
/// [`nvcc::run`]: what `mpkc build` runs), as many at a time as there are cores, and checks each
/// with [`check_ptxas`]. Panics naming every job that failed to compile or to hold; prints the
/// register counts per unit and target.
fn compile_and_check(tc: &nvcc::Toolchain, dir: &Path, jobs: &[Job]) {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(j) = jobs.get(i) else { break };
                let args = nvcc::arguments(tc, &j.file, j.target, &[]);
                let cubin = nvcc::cubin_name(&j.file, j.target);
                let entry = harness_entry(&j.unit);
                let r = match nvcc_cache::run(tc, dir, &j.file, &args, &cubin) {
                    Err(f) => Err(format!("{}\n{}", f.command, f.stderr)),
                    Ok(out) => std::fs::read_to_string(dir.join(&j.file))
                        .map_err(|e| e.to_string())
                        .and_then(|h| register_limit(&h, &entry, &args))
                        .and_then(|(limit, t)| check_ptxas(&out.stderr, &entry, limit, t)),
                };
                results.lock().unwrap().push((i, r));
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|(i, _)| *i);
    assert_eq!(results.len(), jobs.len());
    let mut bad = Vec::new();
    for (i, r) in results {
        let j = &jobs[i];
        match r {
            Ok(p) => eprintln!(
                "{:<48} {:<8} {:>3} registers (launch bounds allow {} for {} threads), spills {:?}",
                j.unit, j.target, p.registers, p.limit, p.max_threads, p.spills
            ),
            Err(e) => bad.push(format!("{} {}: {e}", j.file, j.target)),
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n\n"));
}

/// The checks of [`compile_and_check`] can fail: on a report with a spill in a role function,
/// a stack frame, more registers than the launch bounds allow, or no entry at all, and the
/// register limit follows the launch bounds and `-maxrregcount`.
#[test]
fn the_ptxas_checks_catch_spills_stacks_and_register_overruns() {
    let report = |regs: u32, frame: &str, role_frame: &str| {
        format!(
            "ptxas info    : Compiling entry function 'mpkc_harness_u' for 'sm_90a'\n\
ptxas info    : Function properties for mpkc_harness_u\n    {frame}\n\
ptxas info    : Used {regs} registers, used 1 barriers, 3072 bytes smem\n\
ptxas info    : Function properties for _ZN6kernel1u6loaderEv\n    {role_frame}\n"
        )
    };
    let clean = "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads";
    let ok = check_ptxas(&report(148, clean, clean), "mpkc_harness_u", 255, 256).unwrap();
    assert_eq!((ok.registers, ok.spills), (148, (0, 0)));
    let spill = "8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads";
    assert!(check_ptxas(&report(148, clean, spill), "mpkc_harness_u", 255, 256).is_err());
    let stack = "16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads";
    assert!(check_ptxas(&report(148, stack, clean), "mpkc_harness_u", 255, 256).is_err());
    assert!(check_ptxas(&report(148, clean, clean), "mpkc_harness_u", 128, 512).is_err());
    assert!(check_ptxas(&report(148, clean, clean), "mpkc_harness_v", 255, 256).is_err());
    assert!(check_ptxas(&report(148, "", clean), "mpkc_harness_u", 255, 256).is_err());
    let serialised = format!(
        "{}ptxas info    : (C7510) Potential Performance Loss: wgmma.mma_async instructions are serialized due to wgmma pipeline crossing function boundary at a function call in the function 'mpkc_harness_u' in line 356\n",
        report(148, clean, clean)
    );
    let e = check_ptxas(&serialised, "mpkc_harness_u", 255, 256).unwrap_err();
    assert!(e.contains("C7510"), "{e}");

    let harness = |bounds: &str| {
        format!(
            "extern \"C\" __global__ void {bounds} mpkc_harness_u(mpkc::rt::WorkerArgs args) {{"
        )
    };
    let limit = |h: &str, args: &[&str]| {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        register_limit(h, "mpkc_harness_u", &args).map(|(l, _)| l)
    };
    assert_eq!(limit(&harness("__launch_bounds__(256, 1)"), &[]), Ok(255));
    assert_eq!(limit(&harness("__launch_bounds__(512, 1)"), &[]), Ok(128));
    assert_eq!(limit(&harness("__launch_bounds__(256, 2)"), &[]), Ok(128));
    assert_eq!(limit(&harness("__launch_bounds__(384)"), &[]), Ok(168));
    assert_eq!(
        limit(&harness("__launch_bounds__(256, 1)"), &["-maxrregcount=96"]),
        Ok(96)
    );
    assert_eq!(
        limit(&harness("__launch_bounds__(256, 1) __maxnreg__(200)"), &[]),
        Ok(200)
    );
    assert!(limit(&harness(""), &[]).is_err());
}

/// Every generated kernel compiles with nvcc for every target its contract declares, within the
/// registers its harness's launch bounds allow, with no spills and no stack (local memory).
/// Needs nvcc: `scripts/setup` installs it.
#[test]
fn every_kernel_compiles_with_nvcc() {
    let tc = nvcc::find().unwrap_or_else(|e| panic!("{e}"));
    let checked = checked();
    let units = generate_all(&checked);
    let dir = scratch_dir("nvcc");
    write_all(&dir, &units).unwrap();
    let jobs = stdlib_jobs(&checked, &units);
    let expected: usize = units
        .iter()
        .map(|u| {
            let t = &checked[u.source].tasks[u.task];
            u.files
                .iter()
                .filter(|f| f.kind == FileKind::Harness)
                .count()
                * t.ir.targets.len()
        })
        .sum();
    assert_eq!(jobs.len(), expected);
    // Every checked stdlib instance is compiled (not a count tuned to today's stdlib): the
    // units are exactly the checked tasks, but for helpers (family E), whose code is compiled
    // in the kernels of the tasks that use them (each helper is used by one).
    let mut want: Vec<String> = checked
        .iter()
        .flat_map(|c| c.tasks.iter())
        .filter(|t| t.ir.family != mpkc::ir::Family::Helper)
        .map(|t| t.ir.unit_name())
        .collect();
    let users: Vec<String> = checked
        .iter()
        .flat_map(|c| c.tasks.iter())
        .flat_map(|t| t.ir.helpers.iter().map(|h| h.name.clone()))
        .collect();
    for t in checked.iter().flat_map(|c| c.tasks.iter()) {
        if t.ir.family == mpkc::ir::Family::Helper {
            assert!(
                users.contains(&t.ir.name),
                "stdlib helper `{}` is used by no stdlib task, so nvcc never compiles it",
                t.ir.name
            );
        }
    }
    let mut got: Vec<String> = jobs.iter().map(|j| j.unit.clone()).collect();
    want.sort();
    got.sort();
    got.dedup();
    assert_eq!(got, want, "every checked stdlib unit has compiled kernels");
    compile_and_check(&tc, &dir, &jobs);
    for j in &jobs {
        assert!(
            dir.join(nvcc::cubin_name(&j.file, j.target)).is_file(),
            "{} {}: no cubin",
            j.unit,
            j.target
        );
    }
}

/// The snapshot set itself compiles: the plain files under `snapshots/gen/` are copied, under
/// the names mpkc generates them with (`x.snap.cuh` is `x.cuh`), into an empty directory with
/// the support headers, and every harness among them is compiled for each target its contract
/// declares, held to the same checks as [`every_kernel_compiles_with_nvcc`]. A snapshot that
/// does not compile, or a harness the stdlib has and the snapshots lack, fails it.
#[test]
fn the_snapshot_set_compiles_with_nvcc() {
    let tc = nvcc::find().unwrap_or_else(|e| panic!("{e}"));
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("snapshots/gen");
    let dir = scratch_dir("nvcc_snapshots");
    let mut copied = std::collections::BTreeMap::new();
    for sub in std::fs::read_dir(&root).unwrap() {
        let sub = sub.unwrap().path();
        assert!(
            sub.is_dir(),
            "{}: snapshots/gen holds directories",
            sub.display()
        );
        for e in std::fs::read_dir(&sub).unwrap() {
            let p = e.unwrap().path();
            let file = p.file_name().unwrap().to_string_lossy().into_owned();
            let Some(name) = generated_name_of(&file) else {
                continue;
            };
            if let Some(first) = copied.insert(name.clone(), p.clone()) {
                panic!("{name} twice: {} and {}", first.display(), p.display());
            }
            std::fs::copy(&p, dir.join(&name)).unwrap();
        }
    }
    for (name, text) in SUPPORT_HEADERS {
        assert!(!copied.contains_key(*name), "{name} is a support header");
        std::fs::write(dir.join(name), text).unwrap();
    }
    let checked = checked();
    let units = generate_all(&checked);
    let jobs = stdlib_jobs(&checked, &units);
    let harnesses: std::collections::BTreeSet<&str> = copied
        .keys()
        .map(String::as_str)
        .filter(|n| n.ends_with("_harness.cu"))
        .collect();
    let wanted: std::collections::BTreeSet<&str> = jobs.iter().map(|j| j.file.as_str()).collect();
    assert_eq!(
        harnesses, wanted,
        "the snapshot harnesses are the stdlib's harnesses"
    );
    compile_and_check(&tc, &dir, &jobs);
}

/// CI fails on orphan snapshots: every file under `snapshots/` belongs to a generated file of
/// the stdlib (`gen/<target>/`, `gen/common/` or `gen/doc/`: insta's `x.snap` and the plain `x.snap.<ext>`),
/// to a role-program listing of tests/role_program.rs (`lower/<target>/<unit>.snap`), to an
/// example unit's design document (tests/design_doc.rs, `design/<unit>.snap`) or to a UI
/// test (`ui/<family>/<name>.snap`); a pending `.snap.new` (or `.snap.new.<ext>`) is an orphan
/// too (insta itself fails on missing or changed ones under CI=true).
#[test]
fn no_orphan_snapshots() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let checked = checked();
    let mut expected = std::collections::BTreeSet::new();
    for (dir, f) in gen_snapshots(&checked) {
        let (stem, ext) = snapshot_stem_ext(&f.name);
        expected.insert(format!("{dir}/{stem}.snap"));
        expected.insert(format!("{dir}/{stem}.snap.{ext}"));
    }
    // tests/role_program.rs: one listing per target of every stdlib pipeline unit.
    for c in &checked {
        for t in c.tasks.iter().filter(|t| t.linear().is_some()) {
            for p in &t.programs {
                expected.insert(format!(
                    "lower/{}/{}.snap",
                    p.target.as_str(),
                    t.ir.unit_name()
                ));
            }
        }
    }
    // tests/design_doc.rs: the design document of every example unit.
    let examples = root.join("examples");
    for p in walk(&examples) {
        if p.extension().is_some_and(|x| x == "mpk") {
            let source = mpkc::driver::Source {
                path: format!("examples/{}", p.file_name().unwrap().to_string_lossy()),
                text: std::fs::read_to_string(&p).unwrap(),
            };
            let c = check_source(&source, &SemaOptions::default(), &CheckOptions::default());
            for t in &c.tasks {
                expected.insert(format!("design/{}.snap", t.ir.unit_name()));
            }
        }
    }
    // tests/wire.rs: the rendered `mpkc wire` diagnostics it snapshots.
    for name in ["e0801_taken_id", "e0802_missing_anchor"] {
        expected.insert(format!("wire/{name}.snap"));
    }
    // UI tests: contracts (tests/ui.rs) and op descriptions (tests/classify.rs).
    for p in walk(&root.join("tests/ui")) {
        if p.extension().is_some_and(|x| x == "mpk" || x == "toml") {
            let rel = p.strip_prefix(root.join("tests")).unwrap();
            let rel = rel.with_extension("snap");
            expected.insert(rel.to_string_lossy().replace('\\', "/"));
        }
    }
    let snapshots = root.join("snapshots");
    let found: Vec<String> = walk(&snapshots)
        .iter()
        .map(|p| {
            p.strip_prefix(&snapshots)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/")
        })
        .collect();
    let orphans: Vec<&String> = found.iter().filter(|n| !expected.contains(*n)).collect();
    assert!(
        orphans.is_empty(),
        "orphan or pending snapshots (delete or accept them): {orphans:?}"
    );
    // And the walk sees the tree: every expected file is there.
    let missing: Vec<&String> = expected.iter().filter(|n| !found.contains(n)).collect();
    assert!(missing.is_empty(), "snapshots missing: {missing:?}");
}

/// Every file under `dir`, recursively (directories themselves not listed).
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}
