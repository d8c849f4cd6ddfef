//! `mpkc bench`, host side: which cases run at which token count (each pipeline linear, a split-K
//! linear with the reduce mpkc derives for it, each consumer op with a PyTorch eager equivalent,
//! the argmax partial with its reduce), and their production builds.
//!
//! A production build is what the runtime would compile and what `mpkc build` compiles: the
//! generated files and the harness, nvcc with mpkc's own flags only. None of `verify`'s test
//! instrumentation is in it ([`INSTRUMENTATION`]: bounded waits, the page and re-init shadow,
//! fault injection, `-lineinfo`). The persistent method compiles the same harness once more
//! through a two-line translation unit that defines `MPKC_BENCH_STAMPS` first: the worker then
//! stamps each CTA's start and the end of its last task with `%globaltimer` (two atomics per CTA,
//! nothing else).

use super::build::{write_all, UnitOutput};
use super::nvcc::{self, CompileFailure, Toolchain};
use super::verify::links;
use super::Checked;
use crate::back::{self, ContractInfo};
use crate::gpu::bench::consumer::{eager_op, is_argmax_reduce, not_benchable, EagerOp};
use crate::gpu::bench::shape::{linear_of, LinearEpilogue};
use crate::gpu::run::Link;
use crate::ir::Target;
use std::path::{Path, PathBuf};

/// What `verify`'s test builds add and a production build must not hold: the defines of the
/// bounded waits, the shadow and the fault injections, and the symbols and messages they bring
/// into a cubin.
pub const INSTRUMENTATION: &[&str] = &[
    "MPKC_BOUNDED_WAITS",
    "MPKC_WAIT_TIMEOUT_NS",
    "MPKC_INJECT_",
    "report_hang",
    "report_bad_scale",
    "note_release",
    "check_page_acquired",
    "check_reinits",
    "mpkc: hang",
    "mpkc: page protocol",
    "mpkc: re-init",
    "mpkc: scale",
];

/// The define the persistent method's build adds.
pub const STAMPS_DEFINE: &str = "MPKC_BENCH_STAMPS";

/// The define `--timeline` adds to the stamped build: every CTA's last K loop end and task end
/// (`mpkc_bench_ctas`) and the generated sm_90a consumer's K loop stamp.
pub const TIMELINE_DEFINE: &str = "MPKC_BENCH_TIMELINE";

/// One case at one M.
#[derive(Clone, Debug)]
pub struct BenchSpec {
    /// The unit, or `linear -> reduce` for split-K.
    pub name: String,
    /// Tokens.
    pub m: i64,
    /// (source, task) per task type in the M's checked sources, the linear first.
    pub units: Vec<(usize, usize)>,
    /// The partials the reduce reads.
    pub links: Vec<Link>,
    /// The harness translation unit (in the M's folder).
    pub file: String,
    /// The kernel symbol.
    pub entry: String,
    /// Why it cannot run at this M (the checker's reason, or no reduce).
    pub skip: Option<String>,
}

/// The cases of one M and the sources checked at it.
pub struct MSet {
    /// Tokens.
    pub m: i64,
    /// The sources checked with `m` and `m_real` set to `m`.
    pub checked: Vec<Checked>,
    /// The cases.
    pub cases: Vec<BenchSpec>,
}

/// A unit of the checked sources that starts a case: (source, task, unit name).
pub type LinearUnit = (usize, usize, String);

/// The units `mpkc bench` runs, and the others with why not.
#[derive(Clone, Debug, Default)]
pub struct Units {
    /// The pipeline linears (against cuBLAS / cuBLASLt).
    pub linears: Vec<LinearUnit>,
    /// The consumer ops with a PyTorch eager equivalent (`gpu::bench::consumer`), the argmax
    /// partial standing for its chain.
    pub consumers: Vec<LinearUnit>,
    /// (unit, why it is not benched).
    pub other: Vec<(String, String)>,
}

/// The units of `base` (the sources checked at their own params), derived contracts left out (a
/// reduce runs with its linear).
pub fn units(base: &[Checked]) -> Units {
    let mut u = Units::default();
    for (si, c) in base.iter().enumerate() {
        if c.derived.is_some() {
            continue;
        }
        for (ti, t) in c.tasks.iter().enumerate() {
            let unit = t.ir.unit_name();
            if linear_of(t).is_some() {
                u.linears.push((si, ti, unit));
            } else if let Some(why) = not_benchable(t) {
                u.other.push((unit, why));
            } else if eager_op(t).is_some() {
                u.consumers.push((si, ti, unit));
            } else {
                let why = if t.linear().is_some_and(|p| p.route.is_some()) {
                    "a routed linear (`route`): its cuBLAS equivalent is a grouped GEMM, which mpkc bench does not time yet"
                } else if is_argmax_reduce(t) {
                    "the end of the argmax chain: benched behind its argmax_partial, as `partial -> reduce`"
                } else {
                    "neither a pipeline linear (timed against cuBLAS) nor a consumer op with a PyTorch eager equivalent (rmsnorm, silu_mul, embedding, argmax)"
                };
                u.other.push((unit, why.to_string()));
            }
        }
    }
    u
}

/// The linears of `base` and the other units with why they are not linears (see [`units`]).
pub fn linears(base: &[Checked]) -> (Vec<LinearUnit>, Vec<(String, String)>) {
    let u = units(base);
    (u.linears, u.other)
}

/// A case of `unit` at `m` that does not run, and why.
fn skipped(unit: &str, m: i64, why: String) -> BenchSpec {
    BenchSpec {
        name: unit.to_string(),
        m,
        units: Vec::new(),
        links: Vec::new(),
        file: String::new(),
        entry: String::new(),
        skip: Some(why),
    }
}

/// Source `si` of `checked` (checked at `m`) and the position of `unit` among its tasks, or why
/// the case is skipped: no such source, the checker's first error at `m`, no such instance.
fn unit_at<'a>(
    m: i64,
    checked: &'a [Checked],
    si: usize,
    unit: &str,
) -> Result<(&'a Checked, usize), String> {
    let c = checked.get(si).ok_or("no such source")?;
    if c.has_errors() {
        let e = c
            .first_error()
            .unwrap_or_else(|| "the contract does not check".into());
        return Err(format!("at M = {m}: {e}"));
    }
    let ti = c
        .tasks
        .iter()
        .position(|t| t.ir.unit_name() == unit)
        .ok_or_else(|| format!("at M = {m}: no instance {unit}"))?;
    Ok((c, ti))
}

/// The cases of the linears `lin` (from [`linears`]) in `checked` (the same sources checked at
/// `m`). A linear whose source has errors at `m` is skipped with the checker's first error; a
/// split-K linear runs with its reduce.
pub fn cases_at(m: i64, checked: &[Checked], lin: &[LinearUnit]) -> Vec<BenchSpec> {
    let mut out = Vec::new();
    for (si, _, unit) in lin {
        let skip = |why: String| skipped(unit, m, why);
        let (c, ti) = match unit_at(m, checked, *si, unit) {
            Ok(x) => x,
            Err(why) => {
                out.push(skip(why));
                continue;
            }
        };
        let t = &c.tasks[ti];
        let split = linear_of(t).is_some_and(|s| s.epilogue == LinearEpilogue::SplitK);
        if !split {
            out.push(BenchSpec {
                name: unit.clone(),
                m,
                units: vec![(*si, ti)],
                links: Vec::new(),
                file: format!("{unit}_harness.cu"),
                entry: back::harness_entry(unit),
                skip: None,
            });
            continue;
        }
        let reduce = checked.iter().enumerate().find_map(|(di, d)| {
            let from_here = d
                .derived
                .as_ref()
                .is_some_and(|o| &o.parent_unit == unit && o.parent.path == c.source.path);
            (from_here && !d.tasks.is_empty()).then_some((di, 0))
        });
        let Some(r) = reduce else {
            out.push(skip(format!(
                "at M = {m}: no reduce task derived for the split-K linear"
            )));
            continue;
        };
        let l = links(checked, (*si, ti), r);
        let rt = &checked[r.0].tasks[r.1];
        out.push(BenchSpec {
            name: format!("{unit} -> {}", rt.ir.unit_name()),
            m,
            units: vec![(*si, ti), r],
            links: l,
            file: format!("chain_{unit}__{}.cu", rt.ir.unit_name()),
            entry: back::harness::chain_entry_name(&[t, rt]),
            skip: None,
        });
    }
    out
}

/// The cases of the consumer ops `cons` (from [`units`]) in `checked` (the same sources checked
/// at `m`): each op alone, and the argmax partial with the `argmax_reduce` among the inputs that
/// reads both its outputs. A source with errors at `m` is skipped with the checker's first error.
pub fn consumer_cases_at(m: i64, checked: &[Checked], cons: &[LinearUnit]) -> Vec<BenchSpec> {
    let mut out = Vec::new();
    for (si, _, unit) in cons {
        let skip = |why: String| skipped(unit, m, why);
        let (c, ti) = match unit_at(m, checked, *si, unit) {
            Ok(x) => x,
            Err(why) => {
                out.push(skip(why));
                continue;
            }
        };
        let t = &c.tasks[ti];
        if eager_op(t) != Some(EagerOp::Argmax) {
            out.push(BenchSpec {
                name: unit.clone(),
                m,
                units: vec![(*si, ti)],
                links: Vec::new(),
                file: format!("{unit}_harness.cu"),
                entry: back::harness_entry(unit),
                skip: None,
            });
            continue;
        }
        let outs = t.ir.outputs().count();
        let reduce = checked.iter().enumerate().find_map(|(di, d)| {
            if d.has_errors() {
                return None;
            }
            d.tasks.iter().enumerate().find_map(|(dt, rt)| {
                let l = links(checked, (*si, ti), (di, dt));
                (is_argmax_reduce(rt) && l.len() == outs).then_some(((di, dt), l))
            })
        });
        let Some((r, l)) = reduce else {
            out.push(skip(format!(
                "at M = {m}: no argmax_reduce among the inputs reads this partial's outputs (give both contracts: the argmax is benched as `partial -> reduce`)"
            )));
            continue;
        };
        let rt = &checked[r.0].tasks[r.1];
        out.push(BenchSpec {
            name: format!("{unit} -> {}", rt.ir.unit_name()),
            m,
            units: vec![(*si, ti), r],
            links: l,
            file: format!("chain_{unit}__{}.cu", rt.ir.unit_name()),
            entry: back::harness::chain_entry_name(&[t, rt]),
            skip: None,
        });
    }
    out
}

/// The folder of M's build inside `dir`.
pub fn m_dir(dir: &Path, m: i64) -> PathBuf {
    dir.join(format!("m{m}"))
}

/// The translation unit of `file`'s stamped build.
pub fn stamped_file(file: &str) -> String {
    let stem = file.strip_suffix(".cu").unwrap_or(file);
    format!("{stem}__stamps.cu")
}

/// Writes the production build of every runnable case of `set` into `dir` (generated files,
/// harnesses, chain harnesses, and each harness's stamped translation unit).
pub fn write_production(dir: &Path, set: &MSet, timeline: bool) -> std::io::Result<()> {
    let mut units = Vec::new();
    let mut done = Vec::new();
    for c in set.cases.iter().filter(|c| c.skip.is_none()) {
        for &u in &c.units {
            if done.contains(&u) {
                continue;
            }
            done.push(u);
            let src = &set.checked[u.0];
            let info = src.contract_info();
            let t = &src.tasks[u.1];
            units.push(UnitOutput {
                source: u.0,
                task: u.1,
                unit: t.ir.unit_name(),
                files: back::generate(t, &info),
            });
        }
    }
    write_all(dir, &units)?;
    for c in set.cases.iter().filter(|c| c.skip.is_none()) {
        if c.units.len() > 1 {
            let tasks: Vec<_> = c
                .units
                .iter()
                .map(|u| &set.checked[u.0].tasks[u.1])
                .collect();
            let src = &set.checked[c.units[0].0];
            let info = ContractInfo::new(&src.source.path, &src.source.text);
            std::fs::write(dir.join(&c.file), back::harness::emit_chain(&tasks, &info))?;
        }
        // `--timeline` adds the stamps every CTA and the consumer's K loop end write (off the
        // timed build otherwise: they sit on the path to the page release).
        let timeline = if timeline {
            format!("#define {TIMELINE_DEFINE} 1\n")
        } else {
            String::new()
        };
        std::fs::write(
            dir.join(stamped_file(&c.file)),
            format!(
                "// mpkc bench, persistent method: the production build of {} with the worker's %globaltimer stamps.\n#define {STAMPS_DEFINE} 1\n{timeline}#include \"{}\"\n",
                c.file, c.file
            ),
        )?;
    }
    Ok(())
}

/// The cubins of a case: the production build, and the stamped one when asked for.
pub type Built = Result<(PathBuf, Option<PathBuf>), CompileFailure>;

/// Compiles the production build (and, with `stamps`, the stamped build) of each runnable case
/// of `set` (in `dir`) for `target`, `jobs` nvcc processes at a time, with mpkc's own flags only
/// (as `mpkc build`).
pub fn compile(
    tc: &Toolchain,
    dir: &Path,
    set: &MSet,
    target: Target,
    jobs: usize,
    stamps: bool,
) -> Vec<Option<Built>> {
    let mut work: Vec<(usize, bool, String, String)> = Vec::new();
    for (i, c) in set
        .cases
        .iter()
        .enumerate()
        .filter(|(_, c)| c.skip.is_none())
    {
        work.push((i, false, c.file.clone(), c.entry.clone()));
        if stamps {
            work.push((i, true, stamped_file(&c.file), c.entry.clone()));
        }
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let done = std::sync::Mutex::new(vec![None; work.len()]);
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1) {
            s.spawn(|| loop {
                let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((_, _, file, entry)) = work.get(k) else {
                    break;
                };
                let r = nvcc::compile(tc, dir, file, entry, target).map(|(p, _)| p);
                if let Ok(mut d) = done.lock() {
                    d[k] = Some(r);
                }
            });
        }
    });
    let done = done.into_inner().unwrap_or_default();
    let mut out: Vec<Option<Built>> = vec![None; set.cases.len()];
    for ((i, stamped, _, _), r) in work.iter().zip(done) {
        let Some(r) = r else { continue };
        out[*i] = match (out[*i].take(), r, *stamped) {
            (Some(Err(e)), _, _) => Some(Err(e)),
            (_, Err(e), _) => Some(Err(e)),
            (None, Ok(p), false) => Some(Ok((p, None))),
            (Some(Ok((p, _))), Ok(s), true) => Some(Ok((p, Some(s)))),
            (prev, Ok(_), _) => prev,
        };
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sema::SemaOptions;

    fn at(m: i64) -> Vec<Checked> {
        super::super::check_sources_with(
            &super::super::stdlib::sources(),
            |s| SemaOptions {
                overrides: super::super::token_overrides(s, m),
                instance: None,
                ..Default::default()
            },
            &Default::default(),
        )
    }

    #[test]
    fn the_stdlib_linears_and_their_reduces() {
        let base = at(16);
        let (lin, other) = linears(&base);
        let names: Vec<&str> = lin.iter().map(|(_, _, u)| u.as_str()).collect();
        assert!(names.contains(&"linear_sm100_v2"), "{names:?}");
        assert!(names.contains(&"linear_fp8_blockscale_o_proj"), "{names:?}");
        assert!(!names.iter().any(|n| n.ends_with("_reduce")), "{names:?}");
        assert!(!other.iter().any(|(u, _)| u == "rmsnorm_v2_h4096"));
        assert!(units(&base)
            .consumers
            .iter()
            .any(|(_, _, u)| u == "rmsnorm_v2_h4096"));
        let cs = cases_at(16, &base, &lin);
        assert!(cs.iter().all(|c| c.skip.is_none()), "{cs:?}");
        let q_b = cs
            .iter()
            .find(|c| c.name.starts_with("linear_bf16_splitk_q_b"))
            .expect("q_b");
        assert_eq!(
            q_b.name,
            "linear_bf16_splitk_q_b -> linear_bf16_splitk_q_b_reduce"
        );
        assert_eq!(q_b.units.len(), 2);
        assert_eq!(q_b.links.len(), 1);
    }

    #[test]
    fn the_stdlib_consumer_ops_and_the_argmax_chain() {
        let base = at(1);
        let u = units(&base);
        let names: Vec<&str> = u.consumers.iter().map(|(_, _, n)| n.as_str()).collect();
        for want in [
            "rmsnorm_v2_h4096",
            "rmsnorm_v2_h7168",
            "silu_mul_v2",
            "embedding_v2",
            "argmax_partial_v2",
        ] {
            assert!(names.contains(&want), "{want}: {names:?}");
        }
        assert!(!names.contains(&"argmax_reduce_v2"), "{names:?}");
        let why = &u
            .other
            .iter()
            .find(|(n, _)| n == "argmax_reduce_v2")
            .expect("the reduce is listed")
            .1;
        assert!(why.contains("behind its argmax_partial"), "{why}");
        let cs = consumer_cases_at(1, &base, &u.consumers);
        assert!(cs.iter().all(|c| c.skip.is_none()), "{cs:?}");
        let a = cs
            .iter()
            .find(|c| c.name.starts_with("argmax_partial_v2"))
            .expect("argmax");
        assert_eq!(a.name, "argmax_partial_v2 -> argmax_reduce_v2");
        assert_eq!((a.units.len(), a.links.len()), (2, 2));
        // Without the reduce among the inputs, the partial says what is missing.
        let alone: Vec<Checked> = base
            .into_iter()
            .filter(|c| !c.tasks.iter().any(is_argmax_reduce))
            .collect();
        let u = units(&alone);
        let cs = consumer_cases_at(1, &alone, &u.consumers);
        let a = cs
            .iter()
            .find(|c| c.name == "argmax_partial_v2")
            .expect("argmax");
        assert!(
            a.skip
                .as_deref()
                .is_some_and(|w| w.contains("no argmax_reduce")),
            "{a:?}"
        );
        // At M = 64 the consumer contracts (m in 1..=16) are skipped with the checker's reason.
        let cs = consumer_cases_at(64, &at(64), &units(&at(1)).consumers);
        assert!(
            cs.iter().all(|c| c
                .skip
                .as_deref()
                .is_some_and(|w| w.starts_with("at M = 64: E"))),
            "{cs:?}"
        );
    }

    #[test]
    fn an_m_the_contract_cannot_take_is_skipped_with_the_checkers_reason() {
        let (lin, _) = linears(&at(16));
        let cs = cases_at(64, &at(64), &lin);
        let house = cs
            .iter()
            .find(|c| c.name == "linear_sm100_v2")
            .expect("house linear");
        let why = house.skip.as_deref().expect("skipped at 64");
        assert!(why.starts_with("at M = 64: E"), "{why}");
        assert!(why.contains("64"), "{why}");
    }

    #[test]
    fn the_stamped_unit_includes_the_production_one() {
        assert_eq!(
            stamped_file("linear_sm100_v2_harness.cu"),
            "linear_sm100_v2_harness__stamps.cu"
        );
        let base = at(1);
        let (lin, _) = linears(&base);
        let set = MSet {
            m: 1,
            cases: cases_at(1, &base, &lin[..1]),
            checked: base,
        };
        let dir = tempfile::tempdir().expect("temp dir");
        write_production(dir.path(), &set, false).expect("written");
        let c = &set.cases[0];
        let stamped =
            std::fs::read_to_string(dir.path().join(stamped_file(&c.file))).expect("stamped");
        assert!(stamped.contains("#define MPKC_BENCH_STAMPS 1"));
        assert!(stamped.contains(&format!("#include \"{}\"", c.file)));
        let harness = std::fs::read_to_string(dir.path().join(&c.file)).expect("harness");
        for i in INSTRUMENTATION {
            assert!(!harness.contains(i), "{i} in the production harness");
        }
    }
}
