//! `mpkc verify`, host side: which cases run (each runnable task instance, and each chain of a
//! producer and the task depending on it), the test build of their harnesses (bounded waits,
//! the runtime shadow, fault injection), and their compilation for the GPU's target.

use super::build::write_all;
use super::build::UnitOutput;
use super::nvcc::{self, CompileFailure, Toolchain};
use super::Checked;
use crate::back::{self, ContractInfo, GenOptions};
use crate::gpu::run::Link;
use crate::ir::{Family, Target};
use crate::valid::CheckedTask;
use std::path::{Path, PathBuf};

/// A fault `verify` injects into the test build (`--inject`), to show that the harness names it
/// instead of hanging or passing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Inject {
    /// A region one byte short in the spec header (`region-short[=NAME]`, default the first
    /// region): the kernel's own static_asserts must reject it.
    RegionShort(Option<String>),
    /// The release of a page skipped by CTA 0's first task (`page-skip[=P]`, default the first
    /// page of the first region).
    PageSkip(Option<usize>),
    /// The release of a page doubled by CTA 0's first task (`page-double[=P]`).
    PageDouble(Option<usize>),
    /// A barrier's init count one too high (`count-off[=K]`: op ordinal K, default 0; a task
    /// without op ordinals gets its SEM_DEP_READY's).
    CountOff(Option<usize>),
    /// A role's start-of-task re-init dropped (`reinit-drop[=K]`: op ordinal K, default the
    /// first re-initialised one).
    ReinitDrop(Option<usize>),
    /// A block scale that is not a power of two (`bad-scale[=I]`: CTA 0's fp8 loader sees weight
    /// scale element I, default 0, times 1.5): the staging's check must trap naming it.
    BadScale(Option<usize>),
}

impl std::str::FromStr for Inject {
    type Err = String;
    fn from_str(s: &str) -> Result<Inject, String> {
        let (kind, arg) = match s.split_once('=') {
            Some((k, a)) => (k, Some(a)),
            None => (s, None),
        };
        let num = |a: Option<&str>| -> Result<Option<usize>, String> {
            a.map(|x| {
                x.parse::<usize>()
                    .map_err(|_| format!("`{kind}={x}`: expected a number"))
            })
            .transpose()
        };
        Ok(match kind {
            "region-short" => Inject::RegionShort(arg.map(str::to_string)),
            "page-skip" => Inject::PageSkip(num(arg)?),
            "page-double" => Inject::PageDouble(num(arg)?),
            "count-off" => Inject::CountOff(num(arg)?),
            "reinit-drop" => Inject::ReinitDrop(num(arg)?),
            "bad-scale" => Inject::BadScale(num(arg)?),
            _ => return Err(format!("unknown fault `{kind}`: region-short[=NAME], page-skip[=P], page-double[=P], count-off[=K], reinit-drop[=K], bad-scale[=I]")),
        })
    }
}

/// One case to verify.
#[derive(Clone, Debug)]
pub struct CaseSpec {
    /// Display name: the unit, or `producer -> dependent`.
    pub name: String,
    /// (source index, task index) per task type, the producer first.
    pub units: Vec<(usize, usize)>,
    /// Tensors a producer passes to its dependent.
    pub links: Vec<Link>,
    /// Harness translation unit.
    pub file: String,
    /// Kernel symbol.
    pub entry: String,
    /// Why it cannot run (no reference, target not declared, a helper).
    pub skip: Option<String>,
    /// The token count of this run where a task's count is decided at run time (`= runtime`,
    /// docs/runtime-m.md): such a case runs once per count, every run on the one build of its
    /// `file`; `None` for the others.
    pub tokens: Option<i64>,
    /// The context length of this run where a task has a paged KV cache (`paged(...)`,
    /// docs/language.md "Paged KV caches"): such a case runs once per length, every run on the
    /// one build of its `file`; `None` for the others.
    pub context: Option<i64>,
    /// What its outputs are checked against, for a case that runs: `mpkc float64` (mpkc's own
    /// reference of a body template or pipeline) or `python PATH:FUNCTION` (the contract's);
    /// a chain's units' joined by ` -> `.
    pub reference: Option<String>,
    /// Inputs that take an earlier stage's input values (`mpkc verify --chain`, `driver::chain`).
    pub shared: Vec<Link>,
    /// The whole chain's reference (`mpkc verify --chain`).
    pub layer: Option<crate::gpu::run::LayerReference>,
}

/// How `--list` names the reference of `t` (`None` when it has none).
pub fn reference_of(t: &CheckedTask) -> Option<String> {
    match crate::gpu::reference::semantics(t).ok()? {
        crate::gpu::reference::Semantics::Python(r) => Some(r.describe()),
        _ => Some("mpkc float64".to_string()),
    }
}

fn task(checked: &[Checked], at: (usize, usize)) -> &CheckedTask {
    &checked[at.0].tasks[at.1]
}

/// Why `t` cannot run in the harness on `target`, if it cannot.
fn not_runnable(t: &CheckedTask, target: Target) -> Option<String> {
    if !t.ir.targets.iter().any(|x| x.target == target) {
        return Some(format!("does not declare {target}"));
    }
    if t.ir.family == Family::Helper {
        return Some("helper family: no kernel of its own".into());
    }
    crate::gpu::reference::semantics(t).err()
}

/// The tensors `b` reads from `a`: an input of `b` with the name, type and shape of an output of
/// `a`, or, for the reduce task mpkc derives from a split-K pipeline, its partials.
pub fn links(checked: &[Checked], a: (usize, usize), b: (usize, usize)) -> Vec<Link> {
    let (ta, tb) = (task(checked, a), task(checked, b));
    let derived = checked[b.0].derived.as_ref().is_some_and(|d| {
        d.parent_unit == ta.ir.unit_name() && d.parent.path == checked[a.0].source.path
    });
    let mut out = Vec::new();
    for (ii, (_, x)) in tb.ir.inputs().enumerate() {
        for (oi, (_, y)) in ta.ir.outputs().enumerate() {
            // An `inout` input is updated in the dependent's own buffer, and a view is read
            // through its stride: only a plain input of the same layout takes the output's buffer.
            let layout = |t: &crate::ir::TensorIr| t.view.map(|v| (v.row_stride, v.offset));
            let same = x.direction == crate::ir::Direction::In
                && layout(x) == layout(y)
                && x.dtype == y.dtype
                && x.dims == y.dims
                && (x.name == y.name || (derived && ii == 0 && oi == 0));
            if same {
                out.push(Link {
                    from_task: 0,
                    from_output: oi,
                    to_task: 1,
                    to_input: ii,
                });
                break;
            }
        }
    }
    out
}

/// Every case of `checked` for `target`: each task instance, then each producer → dependent chain,
/// a case with a run-time token count once per count ([`with_token_counts`], no `--m`).
pub fn cases(checked: &[Checked], target: Target) -> Vec<CaseSpec> {
    cases_at(checked, target, None)
}

/// [`cases`], the run-time counts `m` (`mpkc verify --m`) instead of the default ones.
///
/// A helper (family E) that a task of `checked` uses is no case: its code runs, and is
/// checked against that task's reference, in that task's kernel (docs/language.md, "Helpers");
/// a helper nothing uses is listed, skipped.
pub fn cases_at(checked: &[Checked], target: Target, m: Option<i64>) -> Vec<CaseSpec> {
    cases_with(checked, target, m, None)
}

/// [`cases_at`], and the context length `context` (`mpkc verify --context`) instead of the
/// default ones of a paged KV cache ([`context_lengths`](crate::gpu::paged::context_lengths)).
pub fn cases_with(
    checked: &[Checked],
    target: Target,
    m: Option<i64>,
    context: Option<i64>,
) -> Vec<CaseSpec> {
    let used: Vec<&str> = checked
        .iter()
        .flat_map(|c| c.tasks.iter())
        .flat_map(|t| t.ir.helpers.iter().map(|h| h.name.as_str()))
        .collect();
    let mut all = single_and_chains(checked, target);
    all.retain(|c| {
        !matches!(c.units.as_slice(), [u] if task(checked, *u).ir.family == Family::Helper
            && used.contains(&task(checked, *u).ir.name.as_str()))
    });
    let cases = with_token_counts(checked, all, m);
    with_context_lengths(checked, cases, context)
}

/// The context lengths a case of `units` runs at: none when no task of it has a paged KV cache;
/// else `context` (`--context`) alone, or the default lengths of its first paged cache.
pub fn context_lengths(
    checked: &[Checked],
    units: &[(usize, usize)],
    context: Option<i64>,
) -> Vec<i64> {
    let Some(p) = units
        .iter()
        .find_map(|u| crate::gpu::paged::paged_of(task(checked, *u)).map(|(_, p)| p))
    else {
        return Vec::new();
    };
    match context {
        Some(c) => vec![c],
        None => crate::gpu::paged::context_lengths(&p),
    }
}

/// Each case of `all` with a paged KV cache, once per context length, named
/// `<case> @ context=<length>`: the runs share the case's harness file (the kernel reads the
/// length from the page table), so one build serves them all. A chain (`mpkc verify --chain`)
/// with a paged stage runs so too.
pub fn with_context_lengths(
    checked: &[Checked],
    all: Vec<CaseSpec>,
    context: Option<i64>,
) -> Vec<CaseSpec> {
    let mut out = Vec::new();
    for c in all {
        let lengths = context_lengths(checked, &c.units, context);
        if lengths.is_empty() {
            out.push(c);
            continue;
        }
        for n in lengths {
            out.push(CaseSpec {
                name: format!("{} @ context={n}", c.name),
                context: Some(n),
                ..c.clone()
            });
        }
    }
    out
}

/// The token counts a case of `units` runs at: none when no task of it has a run-time count;
/// else `m` (`--m`) alone, or [`run_counts`](crate::gpu::tokens::run_counts) of the widest range
/// among its tasks (a smaller maximum clamps, as its generated code does).
pub fn token_counts(checked: &[Checked], units: &[(usize, usize)], m: Option<i64>) -> Vec<i64> {
    let ranges: Vec<(i64, i64)> = units
        .iter()
        .filter_map(|u| crate::gpu::tokens::runtime_range(task(checked, *u)))
        .collect();
    if ranges.is_empty() {
        return Vec::new();
    }
    match m {
        Some(m) => vec![m],
        None => {
            let lo = ranges.iter().map(|r| r.0).min().unwrap_or(1);
            let hi = ranges.iter().map(|r| r.1).max().unwrap_or(lo);
            crate::gpu::tokens::run_counts(lo, hi)
        }
    }
}

/// Each case of `all` with a run-time token count, once per count, named `<case> @ m=<count>`:
/// the runs share the case's harness file, so one build serves them all.
fn with_token_counts(checked: &[Checked], all: Vec<CaseSpec>, m: Option<i64>) -> Vec<CaseSpec> {
    let mut out = Vec::new();
    for c in all {
        let counts = token_counts(checked, &c.units, m);
        if counts.is_empty() {
            out.push(c);
            continue;
        }
        for n in counts {
            out.push(CaseSpec {
                name: format!("{} @ m={n}", c.name),
                tokens: Some(n),
                ..c.clone()
            });
        }
    }
    out
}

fn single_and_chains(checked: &[Checked], target: Target) -> Vec<CaseSpec> {
    let all: Vec<(usize, usize)> = checked
        .iter()
        .enumerate()
        .flat_map(|(si, c)| (0..c.tasks.len()).map(move |ti| (si, ti)))
        .collect();
    let mut out = Vec::new();
    for &u in &all {
        let t = task(checked, u);
        let unit = t.ir.unit_name();
        let skip = not_runnable(t, target);
        out.push(CaseSpec {
            name: unit.clone(),
            units: vec![u],
            links: Vec::new(),
            file: format!("{unit}_harness.cu"),
            entry: back::harness_entry(&unit),
            tokens: None,
            context: None,
            reference: skip.is_none().then(|| reference_of(t)).flatten(),
            shared: Vec::new(),
            layer: None,
            skip,
        });
    }
    // The single cases come first, in `all`'s order: their skip says whether a unit runs.
    let runnable: Vec<bool> = out.iter().map(|c| c.skip.is_none()).collect();
    for (ia, &a) in all.iter().enumerate() {
        for (ib, &b) in all.iter().enumerate() {
            if ia == ib || !runnable[ia] || !runnable[ib] {
                continue;
            }
            let l = links(checked, a, b);
            if l.is_empty() {
                continue;
            }
            let (ta, tb) = (task(checked, a), task(checked, b));
            out.push(CaseSpec {
                name: format!("{} -> {}", ta.ir.unit_name(), tb.ir.unit_name()),
                units: vec![a, b],
                links: l,
                file: format!("chain_{}__{}.cu", ta.ir.unit_name(), tb.ir.unit_name()),
                entry: back::harness::chain_entry_name(&[ta, tb]),
                skip: None,
                tokens: None,
                context: None,
                reference: Some(format!(
                    "{} -> {}",
                    reference_of(ta).unwrap_or_default(),
                    reference_of(tb).unwrap_or_default()
                )),
                shared: Vec::new(),
                layer: None,
            });
        }
    }
    out
}

/// `task` as the test build generates it under `inject` (a region one byte short, a count one too
/// high), the generation options (a dropped re-init) and the nvcc defines (page faults, the
/// SEM_DEP_READY count), or why the fault does not apply to this task.
pub fn apply_inject(
    task: &CheckedTask,
    inject: Option<&Inject>,
) -> Result<(CheckedTask, GenOptions, Vec<String>), String> {
    let mut t = task.clone();
    let mut opts = GenOptions::default();
    let mut defines = Vec::new();
    let first_page = || {
        task.primary_plan()
            .regions
            .iter()
            .find_map(|r| r.pages.first().copied())
            .unwrap_or(0)
    };
    match inject {
        None => {}
        Some(Inject::RegionShort(name)) => {
            let h = match name {
                Some(n) => {
                    t.ir.regions
                        .iter()
                        .find(|(_, r)| &r.name == n)
                        .map(|(h, _)| h)
                }
                None => t.ir.regions.iter().next().map(|(h, _)| h),
            };
            let Some(h) = h else {
                return Err("no such region to shorten".into());
            };
            t.ir.regions.get_mut(h).size -= 1;
        }
        Some(Inject::PageSkip(p)) => defines.push(format!(
            "-DMPKC_INJECT_PAGE_SKIP={}",
            p.unwrap_or_else(first_page)
        )),
        Some(Inject::PageDouble(p)) => defines.push(format!(
            "-DMPKC_INJECT_PAGE_DOUBLE={}",
            p.unwrap_or_else(first_page)
        )),
        Some(Inject::CountOff(k)) => {
            if t.ordinals.is_empty() {
                defines.push("-DMPKC_INJECT_DEP_COUNT_OFF".to_string());
            } else {
                let k = k.unwrap_or(0);
                let Some(o) = t.ordinals.iter_mut().find(|o| o.ordinal == k) else {
                    return Err(format!("no op ordinal {k}"));
                };
                o.count += 1;
                // The tables and kernels render the role programs: lower them again from the
                // changed ordinal table.
                let linear = t.linear().cloned();
                let programs =
                    t.ir.targets
                        .iter()
                        .map(|x| crate::lower::lower(&t.ir, &t.ordinals, x.target, linear.as_ref()))
                        .collect();
                t.programs = programs;
            }
        }
        Some(Inject::ReinitDrop(k)) => {
            let k = match k {
                Some(k) => *k,
                None => t
                    .ordinals
                    .iter()
                    .find(|o| o.reinit.is_some())
                    .map(|o| o.ordinal)
                    .ok_or("no barrier is re-initialised by a role")?,
            };
            if !t
                .ordinals
                .iter()
                .any(|o| o.ordinal == k && o.reinit.is_some())
            {
                return Err(format!("op ordinal {k} has no re-init owner"));
            }
            opts.drop_reinit = Some(k);
        }
        Some(Inject::BadScale(i)) => {
            let scaled = task.linear().is_some_and(|p| {
                matches!(p.operands, crate::lower::Operands::Fp8BlockScale { .. })
            });
            if !scaled {
                return Err("no block scales (not a block-scaled fp8 pipeline)".into());
            }
            defines.push(format!("-DMPKC_INJECT_BAD_SCALE={}", i.unwrap_or(0)));
        }
    }
    Ok((t, opts, defines))
}

/// A test build's nvcc defines (the fault's) and the cases whose fault does not apply, as
/// `(case name, why)`.
pub type TestBuild = (Vec<String>, Vec<(String, String)>);

/// Writes the test build of every runnable case into `dir`: the generated files of each unit
/// (with the fault applied) and the chain harnesses. Returns the nvcc defines of the fault, and
/// the cases whose fault does not apply, with why.
pub fn write_test_build(
    dir: &Path,
    checked: &[Checked],
    cases: &[CaseSpec],
    inject: Option<&Inject>,
) -> std::io::Result<TestBuild> {
    let mut units = Vec::new();
    let mut defines = Vec::new();
    let mut not_applicable = Vec::new();
    let mut done: Vec<(usize, usize)> = Vec::new();
    for c in cases.iter().filter(|c| c.skip.is_none()) {
        for &u in &c.units {
            if done.contains(&u) {
                continue;
            }
            done.push(u);
            let info = checked[u.0].contract_info();
            match apply_inject(task(checked, u), inject) {
                Ok((t, opts, d)) => {
                    for x in d {
                        if !defines.contains(&x) {
                            defines.push(x);
                        }
                    }
                    units.push(UnitOutput {
                        source: u.0,
                        task: u.1,
                        unit: t.ir.unit_name(),
                        files: back::generate_with(&t, &info, &opts),
                    });
                }
                Err(why) => not_applicable.push((task(checked, u).ir.unit_name(), why)),
            }
        }
    }
    write_all(dir, &units)?;
    for c in cases
        .iter()
        .filter(|c| c.skip.is_none() && c.units.len() > 1)
    {
        let tasks: Vec<&CheckedTask> = c.units.iter().map(|u| task(checked, *u)).collect();
        let info = ContractInfo::new(
            &checked[c.units[0].0].source.path,
            &checked[c.units[0].0].source.text,
        );
        std::fs::write(dir.join(&c.file), back::harness::emit_chain(&tasks, &info))?;
    }
    Ok((defines, not_applicable))
}

/// The nvcc flags of a test build: bounded waits (trapping after `timeout_ms`), the shadow
/// checks, line info for compute-sanitizer, and the fault's defines.
pub fn test_flags(timeout_ms: u64, defines: &[String]) -> Vec<String> {
    let mut f = vec![
        "-DMPKC_BOUNDED_WAITS".to_string(),
        format!(
            "-DMPKC_WAIT_TIMEOUT_NS={}ull",
            timeout_ms.saturating_mul(1_000_000)
        ),
        "-lineinfo".to_string(),
    ];
    f.extend(defines.iter().cloned());
    f
}

/// Compiles each runnable case's harness for `target`, `jobs` at a time. Returns per case the
/// cubin or the failure.
pub fn compile_cases(
    tc: &Toolchain,
    dir: &Path,
    cases: &[CaseSpec],
    target: Target,
    flags: &[String],
    jobs: usize,
) -> Vec<Option<Result<PathBuf, CompileFailure>>> {
    // One build per harness file: the runs of a run-time-M case at several counts share it.
    let builds = unique_builds(cases);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(vec![None; builds.len()]);
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(&c) = builds.get(i) else { break };
                let c = &cases[c];
                let r =
                    nvcc::compile_with(tc, dir, &c.file, &c.entry, target, flags).map(|(p, _)| p);
                if let Ok(mut v) = results.lock() {
                    v[i] = Some(r);
                }
            });
        }
    });
    let built = results.into_inner().unwrap_or_default();
    cases
        .iter()
        .map(|c| {
            if c.skip.is_some() {
                return None;
            }
            builds
                .iter()
                .position(|&b| cases[b].file == c.file)
                .and_then(|i| built[i].clone())
        })
        .collect()
}

/// The index of the first runnable case of each harness file of `cases`: what is compiled.
pub fn unique_builds(cases: &[CaseSpec]) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        if c.skip.is_none() && !out.iter().any(|&b| cases[b].file == c.file) {
            out.push(i);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stdlib() -> Vec<Checked> {
        super::super::check_sources(
            &super::super::stdlib::sources(),
            &Default::default(),
            &Default::default(),
        )
    }

    #[test]
    fn the_stdlib_has_its_chains() {
        let checked = stdlib();
        let cs = cases(&checked, Target::Sm90a);
        let chains: Vec<&str> = cs
            .iter()
            .filter(|c| c.units.len() == 2)
            .map(|c| c.name.as_str())
            .collect();
        assert!(
            chains.contains(&"argmax_partial_v2 -> argmax_reduce_v2"),
            "{chains:?}"
        );
        assert!(
            chains.contains(&"linear_bf16_splitk_q_b -> linear_bf16_splitk_q_b_reduce"),
            "{chains:?}"
        );
        // argmax passes both of its outputs.
        let am = cs
            .iter()
            .find(|c| c.name == "argmax_partial_v2 -> argmax_reduce_v2")
            .map(|c| c.links.len());
        assert_eq!(am, Some(2));
        // Every stdlib instance runs on sm_90a.
        assert!(
            cs.iter().all(|c| c.skip.is_none()),
            "{:?}",
            cs.iter()
                .filter(|c| c.skip.is_some())
                .map(|c| (&c.name, &c.skip))
                .collect::<Vec<_>>()
        );
    }

    /// A dependent's `inout` input or a view of another layout never takes the producer's
    /// output buffer; a plain input of the same name, type and shape does.
    #[test]
    fn links_skip_inout_inputs_and_other_layouts() {
        let src = |path: &str, text: &str| super::super::Source {
            path: path.into(),
            text: text.into(),
        };
        let producer = "task p {\n  family consumer-no-smem\n  targets sm_90a\n  tensor x: bf16[2, 64] out\n  body cuda { x[0] = x[1]; }\n}\n";
        let consumer = |decl: &str| {
            // A view's second row is `x_row_stride` elements on (E0020 without it).
            let row = if decl.contains("view") {
                "x_row_stride"
            } else {
                "64"
            };
            format!("task c {{\n  family consumer-no-smem\n  targets sm_90a\n  tensor x: bf16[2, 64] {decl}\n  tensor y: bf16[2] out\n  body cuda {{ y[0] = x[0]; y[1] = x[{row}]; }}\n}}\n")
        };
        for (decl, want) in [("in", 1), ("inout", 0), ("in view(stride 128)", 0)] {
            let checked = super::super::check_sources(
                &[src("p.mpk", producer), src("c.mpk", &consumer(decl))],
                &Default::default(),
                &Default::default(),
            );
            assert!(checked.iter().all(|c| c.diags.is_empty()), "{decl}");
            assert_eq!(links(&checked, (0, 0), (1, 0)).len(), want, "{decl}");
        }
    }

    /// A paged task's cases (and its chains) run once per context length on one harness file;
    /// `--context` picks one length; tasks without a paged cache are not repeated.
    #[test]
    fn paged_cases_run_at_each_context_length() {
        let checked = stdlib();
        let cs = cases(&checked, Target::Sm90a);
        let names: Vec<&str> = cs
            .iter()
            .filter(|c| c.name.starts_with("mla_decode"))
            .map(|c| c.name.as_str())
            .collect();
        for n in [1, 513, 4096, 16384] {
            assert!(
                names.contains(&format!("mla_decode_partial @ context={n}").as_str()),
                "{names:?}"
            );
            assert!(
                names.contains(
                    &format!("mla_decode_partial -> mla_decode_merge @ context={n}").as_str()
                ),
                "{names:?}"
            );
        }
        assert!(names.contains(&"mla_decode_merge"), "{names:?}");
        let partial: Vec<&CaseSpec> = cs
            .iter()
            .filter(|c| c.name.starts_with("mla_decode_partial @"))
            .collect();
        assert!(partial
            .iter()
            .all(|c| c.file == "mla_decode_partial_harness.cu"));
        assert_eq!(
            partial.iter().map(|c| c.context).collect::<Vec<_>>(),
            vec![Some(1), Some(513), Some(4096), Some(16384)]
        );
        let one = cases_with(&checked, Target::Sm90a, None, Some(100));
        let mla: Vec<&str> = one
            .iter()
            .filter(|c| c.name.starts_with("mla_decode_partial"))
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(
            mla,
            vec![
                "mla_decode_partial @ context=100",
                "mla_decode_partial -> mla_decode_merge @ context=100"
            ]
        );
        assert!(one
            .iter()
            .any(|c| c.name == "rmsnorm_v2_h4096" && c.context.is_none()));
    }

    #[test]
    fn faults_parse_and_apply() {
        assert_eq!(
            "page-skip=3".parse::<Inject>(),
            Ok(Inject::PageSkip(Some(3)))
        );
        assert!("page-skip=x".parse::<Inject>().is_err());
        assert!("melt".parse::<Inject>().is_err());
        let checked = stdlib();
        let lin = checked
            .iter()
            .flat_map(|c| c.tasks.iter())
            .find(|t| t.ir.unit_name() == "linear_sm100_v2")
            .expect("house linear");
        let (t, _, _) = apply_inject(lin, Some(&Inject::RegionShort(None))).expect("applies");
        let first = lin
            .ir
            .regions
            .iter()
            .next()
            .map(|(h, _)| h)
            .expect("a region");
        assert_eq!(t.ir.regions[first].size, lin.ir.regions[first].size - 1);
        let (t, _, _) = apply_inject(lin, Some(&Inject::CountOff(Some(0)))).expect("applies");
        assert_eq!(t.ordinals[0].count, lin.ordinals[0].count + 1);
        let (_, opts, _) = apply_inject(lin, Some(&Inject::ReinitDrop(None))).expect("applies");
        assert!(opts.drop_reinit.is_some());
        let rms = checked
            .iter()
            .flat_map(|c| c.tasks.iter())
            .find(|t| t.ir.unit_name() == "rmsnorm_v2_h4096")
            .expect("rmsnorm");
        assert!(apply_inject(rms, Some(&Inject::ReinitDrop(None))).is_err());
        // A consumer-only task with regions has one op ordinal, the page hand-off.
        let (t, _, d) = apply_inject(rms, Some(&Inject::CountOff(None))).expect("applies");
        assert!(d.is_empty());
        assert_eq!(t.ordinals[0].name, "pages_ready");
        assert_eq!(t.ordinals[0].count, rms.ordinals[0].count + 1);
        // Without regions, none: the runtime's SEM_DEP_READY count is off instead.
        let silu = checked
            .iter()
            .flat_map(|c| c.tasks.iter())
            .find(|t| t.ir.unit_name() == "silu_mul_v2")
            .expect("silu_mul_v2");
        let (_, _, d) = apply_inject(silu, Some(&Inject::CountOff(None))).expect("applies");
        assert_eq!(d, vec!["-DMPKC_INJECT_DEP_COUNT_OFF".to_string()]);
    }
}
