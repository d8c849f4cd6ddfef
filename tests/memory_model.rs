//! What the PTX memory model asks of the generated kernels, shown on the SASS of every stdlib
//! task (one instance of each: instances differ in constants only) for sm_90a and sm_100a
//! (issue 10, findings 3, 4 and 6; no sm_100a code runs here):
//!
//! - inputs a task of the same launch may write are never read through the non-coherent path
//!   (`LDG…CONSTANT`, `ld.global.nc`): each such load comes from a line of the kernel that reads a
//!   weight input with `mpkc::ld_global_nc_v8`;
//! - the residual epilogue issues every residual load before its first output store;
//! - the loader fences between generic stores and its TMA: `fence.proxy.async.shared::cta` before
//!   the first TMA of the task, `fence.proxy.async.global` after the dependency wait and before the
//!   first activation TMA.
//!
//! The SASS is attributed to source lines through a `-lineinfo` build, which is checked to hold
//! the same instructions as the build `mpkc build` makes; it is compiled only for the units whose
//! lines a test reads (`needs_lines`: the linears, and the tasks whose production SASS holds a
//! non-coherent load), the production SASS standing for the rest.

#[path = "support/nvcc_cache.rs"]
mod nvcc_cache;

#[path = "support/sass_lines.rs"]
mod sass_lines;

use mpkc::back::FileKind;
use mpkc::driver::build::{generate_all, jobs, write_all, UnitOutput};
use mpkc::driver::{check_sources, nvcc, stdlib, Checked};
use mpkc::ir::Target;
use mpkc::lower::Epilogue;
use mpkc::templates::Access;
use mpkc::valid::CheckedTask;
use nvcc_cache::compile_all;
use sass_lines::{disassemble, opcodes, Instr};
use std::path::PathBuf;
use std::sync::OnceLock;

/// The stdlib as `mpkc build` builds it, and with `-lineinfo` where a test reads the SASS by
/// source line.
struct Builds {
    tc: nvcc::Toolchain,
    checked: Vec<Checked>,
    units: Vec<UnitOutput>,
    jobs: Vec<Job>,
}

/// One unit and target of [`Builds`].
struct Job {
    ui: usize,
    target: Target,
    /// The production cubin's opcodes, in order.
    opcodes: Vec<String>,
    /// The `-lineinfo` cubin, where [`needs_lines`] holds.
    lines: Option<PathBuf>,
}

fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A non-coherent global load (`ld.global.nc`).
fn non_coherent(opcode: &str) -> bool {
    opcode.starts_with("LDG") && opcode.contains(".CONSTANT")
}

/// Whether the tests read a job's SASS by source line: every linear (its loader's fences, and
/// the residual epilogue's order), and a task whose production SASS holds a non-coherent load
/// (whose source line must read a weight). The others' production SASS already shows them
/// free of non-coherent loads, so a second, `-lineinfo` compile (the cost of this test) is
/// spent only where a line is read.
fn needs_lines(task: &CheckedTask, opcodes: &[String]) -> bool {
    task.linear().is_some() || opcodes.iter().any(|o| non_coherent(o))
}

fn builds() -> &'static Builds {
    static B: OnceLock<Builds> = OnceLock::new();
    B.get_or_init(|| {
        let tc = nvcc::find().unwrap_or_else(|e| panic!("{e}"));
        let checked = check_sources(&stdlib::sources(), &Default::default(), &Default::default());
        // One instance of each task (a task's instances differ in constants only, not in the
        // loads, stores and fences checked here); every derived split-K reduce.
        let mut seen = std::collections::BTreeSet::new();
        let units: Vec<UnitOutput> = generate_all(&checked)
            .into_iter()
            .filter(|u| {
                checked[u.source].derived.is_some()
                    || seen.insert((u.source, checked[u.source].tasks[u.task].ir.name.clone()))
            })
            .collect();
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        // The production build first: the same units as `mpkc build` (tests/cli.rs), from the
        // shared nvcc cache.
        let prod = scratch("memory_model_build");
        write_all(&prod, &units).unwrap();
        let built: Vec<(usize, Target, PathBuf)> =
            compile_all(&tc, &prod, &checked, &units, threads)
                .into_iter()
                .map(|j| {
                    let (cubin, _) = j
                        .result
                        .unwrap_or_else(|f| panic!("{}: {}\n{}", j.file, f.command, f.stderr));
                    (j.unit, j.target, cubin)
                })
                .collect();
        let files: Vec<(usize, String, Target)> = jobs(&checked, &units);
        let lines = scratch("memory_model_lineinfo");
        write_all(&lines, &units).unwrap();
        let out = std::sync::Mutex::new((0..built.len()).map(|_| None).collect::<Vec<_>>());
        let next = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some((ui, target, cubin)) = built.get(i) else {
                        break;
                    };
                    let sass = tc.sass(cubin).unwrap_or_else(|e| panic!("cuobjdump: {e}"));
                    let ops = opcodes(&sass);
                    let u = &units[*ui];
                    let line_cubin =
                        needs_lines(&checked[u.source].tasks[u.task], &ops).then(|| {
                            let (_, file, t) = &files[i];
                            assert_eq!(
                                (t, &files[i].0),
                                (target, ui),
                                "jobs and compile_all agree"
                            );
                            let args = nvcc::arguments(&tc, file, *t, &["-lineinfo".to_string()]);
                            let cubin = nvcc::cubin_name(file, *t);
                            nvcc_cache::run(&tc, &lines, file, &args, &cubin)
                                .unwrap_or_else(|f| panic!("{}: {}\n{}", file, f.command, f.stderr))
                                .cubin
                        });
                    out.lock().unwrap()[i] = Some(Job {
                        ui: *ui,
                        target: *target,
                        opcodes: ops,
                        lines: line_cubin,
                    });
                });
            }
        });
        let jobs = out
            .into_inner()
            .unwrap()
            .into_iter()
            .map(Option::unwrap)
            .collect();
        Builds {
            tc,
            checked,
            units,
            jobs,
        }
    })
}

impl Builds {
    fn task(&self, ui: usize) -> &CheckedTask {
        let u = &self.units[ui];
        &self.checked[u.source].tasks[u.task]
    }

    /// The kernel file the harness of unit `ui` includes for `target`: `<unit>_sm90.cuh` for a
    /// pipeline on sm_90a, else `<unit>.cuh`.
    fn kernel(&self, ui: usize, target: Target) -> (&str, &str) {
        let u = &self.units[ui];
        let sm90 = format!("{}_sm90.cuh", u.unit);
        let want = if target == Target::Sm90a && u.files.iter().any(|f| f.name == sm90) {
            sm90
        } else {
            format!("{}.cuh", u.unit)
        };
        let f = u
            .files
            .iter()
            .find(|f| f.kind == FileKind::Kernel && f.name == want)
            .unwrap_or_else(|| panic!("{}: no {want}", u.unit));
        (f.name.as_str(), f.text.as_str())
    }

    /// The `-lineinfo` build's instructions of job `j`, after checking that they are the
    /// production build's (same opcodes in the same order). Panics for a job without one
    /// ([`needs_lines`]).
    fn instructions(&self, j: &Job) -> Vec<Instr> {
        let lines = j.lines.as_ref().unwrap_or_else(|| {
            panic!(
                "{} {}: no -lineinfo build (needs_lines)",
                self.units[j.ui].unit, j.target
            )
        });
        let v = disassemble(&self.tc, lines);
        let a: Vec<String> = v.iter().map(|i| i.opcode.clone()).collect();
        assert_eq!(
            a, j.opcodes,
            "{} {}: the -lineinfo build holds other code than the build",
            self.units[j.ui].unit, j.target
        );
        assert!(v.iter().any(|i| !i.at.is_empty()), "no line info");
        v
    }
}

/// The source statement at line index `l`: the line itself, or for a `for` loop header the whole
/// loop (to the brace that closes it).
fn statement_at(src: &[&str], l: usize) -> String {
    if !src[l].trim_start().starts_with("for (") {
        return src[l].to_string();
    }
    let mut depth = 0i32;
    let mut out = String::new();
    for line in &src[l..] {
        out.push_str(line);
        out.push('\n');
        depth += line.matches('{').count() as i32 - line.matches('}').count() as i32;
        if depth <= 0 && line.contains('}') {
            break;
        }
    }
    out
}

/// Whether `line` mentions identifier `id` (not as part of a longer identifier, nor as a member:
/// `threadIdx.x` does not mention `x`).
fn mentions(line: &str, id: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    line.match_indices(id).any(|(i, _)| {
        !line[..i].ends_with(|c: char| ident(c) || c == '.' || c == '>')
            && !line[i + id.len()..].starts_with(ident)
    })
}

/// The prelude's non-coherent load helpers (`ld.global.nc`).
const NC_HELPERS: [&str; 1] = ["ld_global_nc_v8("];

/// The first token of the argument of each non-coherent helper call on `line`.
fn helper_args(line: &str) -> impl Iterator<Item = &str> {
    NC_HELPERS.iter().flat_map(move |h| {
        line.split(h)
            .skip(1)
            .map(|arg| arg.split([' ', ')', '+', '[']).next().unwrap_or(""))
    })
}

/// Finding 6: a `.CONSTANT` load (`ld.global.nc`, non-coherent) only ever reads a weight, never an
/// input a task of the launch writes; the stdlib's weights (rmsnorm's `w`, embedding's `table`)
/// still use it.
#[test]
fn activation_inputs_are_never_read_through_the_non_coherent_path() {
    let b = builds();
    let mut weight_loads = 0;
    for j in &b.jobs {
        let (ui, target) = (&j.ui, &j.target);
        let unit = &b.units[*ui].unit;
        let task = b.task(*ui);
        if j.lines.is_none() {
            // needs_lines: no non-coherent load in its production SASS.
            assert!(
                !j.opcodes.iter().any(|o| non_coherent(o)),
                "{unit} {target}"
            );
            continue;
        }
        let (name, text) = b.kernel(*ui, *target);
        let src: Vec<&str> = text.lines().collect();
        let (weights, activations): (Vec<&str>, Vec<&str>) = match &task.binding {
            Some(bd) => {
                let w = bd
                    .sig
                    .inputs
                    .iter()
                    .filter(|f| f.access == Access::Weight)
                    .map(|f| f.name)
                    .collect();
                let a = bd
                    .sig
                    .inputs
                    .iter()
                    .filter(|f| f.access == Access::Activation)
                    .map(|f| f.name)
                    .collect();
                (w, a)
            }
            None => (
                Vec::new(),
                task.ir.inputs().map(|(_, t)| t.name.as_str()).collect(),
            ),
        };
        for i in b.instructions(j).iter().filter(|i| non_coherent(&i.opcode)) {
            let at = i.line_in(name).unwrap_or_else(|| {
                panic!(
                    "{unit} {target}: {} at {:#x} comes from no line of {name} ({:?})",
                    i.text, i.addr, i.at
                )
            });
            // ptxas may file a load of a loop's first trip under the loop's `for` line (a peeled
            // or rotated loop): the statement is then the loop, header and body.
            let stmt = statement_at(&src, at - 1);
            let line = stmt.as_str();
            // Through the prelude's non-coherent helper.
            let reads_weight = weights
                .iter()
                .any(|w| helper_args(line).any(|a| mentions(a, w)));
            // ptxas may hoist or sink a load of read-only data and file it under an unrelated
            // line (a body's first weight loads under its pointer set-up or a barrier). Such a load
            // still reads a weight when nothing else can make one: `.CONSTANT` comes from
            // `ld.global.nc`, which the kernel emits only through the helpers (every call
            // taking a weight) or for a `const __restrict__` pointer (no activation is one).
            let moved = !NC_HELPERS.iter().any(|h| line.contains(h))
                && text
                    .lines()
                    .all(|l| helper_args(l).all(|a| weights.iter().any(|w| mentions(a, w))))
                && !text.lines().any(|l| {
                    l.contains("__restrict__")
                        && activations
                            .iter()
                            .any(|a| l.contains(&format!(" const {a} = ")))
                });
            assert!(
                (reads_weight && !activations.iter().any(|a| mentions(line, a))) || moved,
                "{unit} {target}: {} (non-coherent) at {:#x} reads `{}` ({name}:{}); weights: {weights:?}",
                i.text,
                i.addr,
                line.trim(),
                i.line_in(name).unwrap_or(0)
            );
            weight_loads += 1;
        }
    }
    assert!(
        weight_loads > 0,
        "the weights' non-coherent loads were found (the attribution works)"
    );
}

/// Finding 3: in the residual epilogue every residual load of a consumer thread is issued before
/// its first output store, on both targets (`out` may alias `res`, so the compiler keeps the
/// order of the source).
#[test]
fn residual_loads_are_issued_before_the_output_stores() {
    let b = builds();
    let mut seen = 0;
    for j in &b.jobs {
        let (ui, target) = (&j.ui, &j.target);
        let task = b.task(*ui);
        let Some(p) = task
            .linear()
            .filter(|p| p.epilogue == Epilogue::ResidualAdd)
        else {
            continue;
        };
        let unit = &b.units[*ui].unit;
        let (name, text) = b.kernel(*ui, *target);
        let lines_with = |pat: &str| -> Vec<usize> {
            text.lines()
                .enumerate()
                .filter(|(_, l)| l.contains(pat))
                .map(|(n, _)| n + 1)
                .collect()
        };
        let (res_lines, out_lines) = (lines_with("res["), lines_with("out["));
        let instrs = b.instructions(j);
        let at_any = |i: &Instr, ls: &[usize]| ls.iter().any(|l| i.is_at(name, *l));
        let loads: Vec<&Instr> = instrs
            .iter()
            .filter(|i| {
                (i.opcode.starts_with("LD.") || i.opcode.starts_with("LDG."))
                    && at_any(i, &res_lines)
            })
            .collect();
        let stores: Vec<&Instr> = instrs
            .iter()
            .filter(|i| {
                (i.opcode.starts_with("ST.") || i.opcode.starts_with("STG."))
                    && at_any(i, &out_lines)
            })
            .collect();
        let n = p.block_n as usize;
        assert_eq!(
            (loads.len(), stores.len()),
            (n, n),
            "{unit} {target}: one residual load and one output store per fragment element"
        );
        let last_load = loads.iter().map(|i| (i.section, i.addr)).max().unwrap();
        let first_store = stores.iter().map(|i| (i.section, i.addr)).min().unwrap();
        assert!(
            last_load < first_store,
            "{unit} {target}: residual load at {:#x} after the first output store at {:#x}",
            last_load.1,
            first_store.1
        );
        seen += 1;
    }
    assert!(seen >= 6, "the residual units on both targets ({seen})");
}

/// The 1-based line of the definition of `name` in the support header `header`.
fn wrapper_line(header: &str, name: &str) -> usize {
    let text = mpkc::back::SUPPORT_HEADERS
        .iter()
        .find(|(h, _)| *h == header)
        .map(|(_, t)| *t)
        .unwrap_or_else(|| panic!("no {header}"));
    text.lines()
        .position(|l| l.contains("__device__") && l.contains(&format!(" {name}(")))
        .map(|n| n + 1)
        .unwrap_or_else(|| panic!("{header}: no {name}"))
}

/// The lines of the loader role of a pipeline kernel.
fn loader_of(text: &str) -> Vec<&str> {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.starts_with("__device__ __noinline__ void loader("))
        .expect("a loader role");
    let len = lines[start..]
        .iter()
        .position(|l| *l == "}")
        .expect("its end");
    lines[start..start + len].to_vec()
}

/// Finding 4: the loader's proxy fences. In the source of every pipeline kernel (both targets),
/// `fence.proxy.async.shared::cta` comes before the task's first TMA and `fence.proxy.async.global`
/// between the dependency wait and the first activation TMA, in the block that runs once; the
/// SASS holds both fences.
#[test]
fn the_loader_fences_between_generic_stores_and_its_tma() {
    let b = builds();
    let mut seen = 0;
    for j in &b.jobs {
        let (ui, target) = (&j.ui, &j.target);
        if b.task(*ui).linear().is_none() {
            continue;
        }
        let unit = &b.units[*ui].unit;
        let (name, text) = b.kernel(*ui, *target);
        let body = loader_of(text);
        let find = |pat: &str| -> usize {
            body.iter()
                .position(|l| l.contains(pat))
                .unwrap_or_else(|| panic!("{name}: the loader has no `{pat}`"))
        };
        let (smem_fence, first_tma) = (find("fence_proxy_async_smem();"), find("tma_load_3d("));
        let (once, dep_wait, global_fence, a_tma) = (
            find("if (it == 0) {"),
            find("mbar_wait(dep_ready"),
            find("fence_proxy_async_global();"),
            find("tma_load_3d(a_dst"),
        );
        let closes = once + body[once..].iter().position(|l| l.trim() == "}").unwrap();
        assert!(
            smem_fence < first_tma,
            "{name}: the shared::cta fence after a TMA"
        );
        assert!(
            once < dep_wait && dep_wait < global_fence && global_fence < closes && closes < a_tma,
            "{name}: the global fence is not between the dependency wait and the activation TMA"
        );
        // In the SASS: the fences of the wrappers, at least one per call site in the kernel. (Line
        // info places an inlined fence only roughly, so the instruction is recognised by the
        // wrapper's own line; the order against the TMA is the source's: both are asm volatile.)
        let instrs = b.instructions(j);
        for (wrapper, op) in [
            ("fence_proxy_async_smem", "FENCE.VIEW.ASYNC.S"),
            ("fence_proxy_async_global", "FENCE.VIEW.ASYNC.G"),
        ] {
            let def = wrapper_line("mpkc_tma.cuh", wrapper);
            let calls = text.matches(&format!("::{wrapper}();")).count();
            let fences = instrs
                .iter()
                .filter(|i| {
                    i.opcode == op
                        && i.at
                            .first()
                            .is_some_and(|(f, l)| f == "mpkc_tma.cuh" && *l == def)
                })
                .count();
            assert!(
                calls >= 1 && fences >= calls,
                "{unit} {target}: {fences} {op} from {wrapper} for {calls} calls"
            );
        }
        seen += 1;
    }
    // One instance of each pipeline task of the stdlib, on both targets.
    assert!(seen >= 16, "every pipeline task on both targets ({seen})");
}
