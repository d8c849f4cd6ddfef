//! What `mpkc bench` reports: one [`BenchReport`] (the `--json` document, schema in
//! docs/bench.md) and the table printed at the end.

use super::shape::{LinearEpilogue, LinearShape};
use super::stats;
use serde::Serialize;

/// Version of the `--json` document's layout (docs/bench.md).
pub const SCHEMA: u32 = 1;

/// The whole run.
#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    /// [`SCHEMA`].
    pub schema: u32,
    /// `mpkc <version>`.
    pub tool: String,
    /// The device.
    pub gpu: GpuInfo,
    /// The target the kernels were built for (`sm_90a`, `sm_100a`).
    pub target: String,
    /// The copy ceiling measured in this run.
    pub copy_ceiling: Option<Ceiling>,
    /// How the times were taken.
    pub settings: Settings,
    /// One entry per (case, M).
    pub cases: Vec<CaseReport>,
    /// Per method: the geometric-mean speedup over the competitor and the slowest case.
    pub summary: Vec<MethodSummary>,
    /// `--fixed-cost`: one entry per (case, M).
    pub fixed_cost: Vec<FixedCost>,
}

/// The device.
#[derive(Clone, Debug, Serialize)]
pub struct GpuInfo {
    /// Name from the driver.
    pub name: String,
    /// Compute capability, `major.minor`.
    pub compute_capability: String,
    /// Streaming multiprocessors.
    pub sms: i32,
    /// L2 size in bytes.
    pub l2_bytes: u64,
}

/// The measured copy ceiling: a device-to-device copy.
#[derive(Clone, Debug, Serialize)]
pub struct Ceiling {
    /// Bytes copied per copy.
    pub bytes: u64,
    /// Median microseconds per copy.
    pub us: f64,
    /// `2 · bytes / time`, TB/s.
    pub tb_per_s: f64,
}

/// How the times were taken.
#[derive(Clone, Debug, Serialize)]
pub struct Settings {
    /// Back-to-back runs per timed sample (standalone).
    pub runs: usize,
    /// Timed samples per case and method; the median is reported.
    pub repeats: usize,
    /// Untimed runs first.
    pub warmup: usize,
    /// Seed of the random inputs.
    pub seed: u64,
    /// Methods run: `standalone`, `persistent`.
    pub methods: Vec<String>,
    /// The weights are rotated over copies totalling at least this many times the L2.
    pub rotate_l2_factor: u64,
}

/// One case at one M.
#[derive(Clone, Debug, Serialize)]
pub struct CaseReport {
    /// The unit, or `producer -> reduce` for a split-K linear.
    pub name: String,
    /// Tokens asked for (`--m`).
    pub m: i64,
    /// `ok`, `skipped` (with `reason`), `mismatch` (the check failed: not timed) or `failed`
    /// (a driver, kernel or cuBLAS error, in `reason`).
    pub status: String,
    /// Why skipped or failed.
    pub reason: Option<String>,
    /// `linear` (against cuBLAS / cuBLASLt) or `consumer` (against PyTorch eager); `None` for a
    /// unit that was not run.
    pub family: Option<Family>,
    /// The linear.
    pub shape: Option<ShapeInfo>,
    /// Tasks of the op (every registration).
    pub tasks: usize,
    /// CTAs launched.
    pub ctas: u32,
    /// Longest CTA queue.
    pub max_queue: usize,
    /// Bytes moved per run (weights, scales, activations, residual in; result out).
    pub bytes: u64,
    /// Copies of the weights the runs rotate over.
    pub weight_copies: usize,
    /// The check before timing.
    pub check: Option<CheckInfo>,
    /// The competitor, e.g. `cublasGemmEx bf16 (f32 compute)`; `None` when it has none or it
    /// disagreed with mpkc and the CPU reference (then `no_competitor` says so).
    pub competitor: Option<String>,
    /// Why there is none.
    pub no_competitor: Option<String>,
    /// One per method run.
    pub methods: Vec<MethodResult>,
}

/// What a case is timed against: the issue-12 targets differ (a linear's geomean over cuBLAS,
/// a consumer op's "no slower than PyTorch eager"), so the summary keeps them apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    /// A pipeline linear, against cuBLAS / cuBLASLt.
    Linear,
    /// A consumer op, against PyTorch eager.
    Consumer,
}

impl Family {
    /// `linear` or `consumer`.
    pub fn as_str(self) -> &'static str {
        match self {
            Family::Linear => "linear",
            Family::Consumer => "consumer",
        }
    }
}

/// The linear of a case.
#[derive(Clone, Debug, Serialize)]
pub struct ShapeInfo {
    /// Output features.
    pub n: i64,
    /// Reduction length.
    pub k: i64,
    /// Tokens.
    pub m: i64,
    /// K splits.
    pub splits: i64,
    /// `bf16` or `fp8 block-scaled`.
    pub operands: String,
    /// The epilogue.
    pub epilogue: LinearEpilogue,
    /// Tile rows, tokens, depth, stages.
    pub tile: [i64; 4],
    /// K iterations per task.
    pub k_iters: i64,
}

impl From<&LinearShape> for ShapeInfo {
    fn from(s: &LinearShape) -> Self {
        ShapeInfo {
            n: s.n,
            k: s.k,
            m: s.m,
            splits: s.splits,
            operands: if s.fp8 { "fp8 block-scaled" } else { "bf16" }.into(),
            epilogue: s.epilogue,
            tile: s.tile,
            k_iters: s.k_iters,
        }
    }
}

/// The check of mpkc's result before timing.
#[derive(Clone, Debug, Serialize)]
pub struct CheckInfo {
    /// `cublas`, `cublaslt` or `torch` (against the competitor's output) or `cpu reference`
    /// (float64).
    pub against: String,
    /// `rel_l2`, `dequant rel_l2`, …
    pub metric: String,
    /// The error.
    pub error: f64,
    /// The tolerance.
    pub tol: f64,
    /// Elements never written (still the poison) or NaN.
    pub bad_elements: usize,
    /// Verdict.
    pub pass: bool,
}

impl CheckInfo {
    /// The check of one output against `against`'s values, from the comparison `r`.
    pub fn of(against: &str, r: &crate::gpu::compare::OutputResult) -> CheckInfo {
        CheckInfo {
            against: against.to_string(),
            metric: r.metric.clone(),
            error: r.error,
            tol: r.tol,
            bad_elements: r.unwritten + r.nans,
            pass: r.pass,
        }
    }
}

/// The times of one method.
#[derive(Clone, Debug, Serialize)]
pub struct MethodResult {
    /// `standalone` or `persistent`.
    pub method: String,
    /// How mpkc's side was timed: `graph` (CUDA-graph replay), `stream` (plain back-to-back
    /// launches: the graph could not be captured) or `stamps` (%globaltimer stamps written by
    /// the worker: the first task's publication to the last task's end of one launch).
    pub timing: String,
    /// mpkc, median microseconds per run.
    pub us: f64,
    /// Every sample (microseconds).
    pub samples: Vec<f64>,
    /// Bytes moved / time.
    pub tb_per_s: Option<f64>,
    /// Share of the measured copy ceiling.
    pub share: Option<f64>,
    /// The competitor's median microseconds (standalone: same timing as mpkc's; persistent: the
    /// competitor's standalone time, a kernel of its own having no queue).
    pub competitor_us: Option<f64>,
    /// How the competitor was timed (`graph` or `stream`).
    pub competitor_timing: Option<String>,
    /// `competitor_us / us`.
    pub speedup: Option<f64>,
    /// Persistent: the update step of `%globaltimer` (ns), the resolution of one sample.
    pub timer_step_ns: Option<u64>,
    /// Persistent: median microseconds from the first CTA's start (after its barrier init) to the
    /// first task's publication, the runtime's copy of the first TaskDesc and its
    /// `init_semaphores`: left out of `us`, as
    /// the megakernel copies a TaskDesc while earlier tasks run (its 3-slot ring).
    pub setup_us: Option<f64>,
    /// Persistent with `--timeline`: CTA 0's timeline of the last launch, one line per task of
    /// its queue (bench::timeline); empty otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub timeline: Vec<String>,
}

/// A summary per method.
#[derive(Clone, Debug, Serialize)]
pub struct MethodSummary {
    /// The method.
    pub method: String,
    /// The family of the cases summarized (linears against cuBLAS, consumer ops against
    /// PyTorch eager).
    pub family: Family,
    /// Cases timed with a competitor.
    pub cases: usize,
    /// Geometric mean of their speedups.
    pub geomean_speedup: Option<f64>,
    /// The slowest case and its speedup.
    pub min_speedup: Option<(String, f64)>,
}

/// `--fixed-cost`: the per-task fixed cost of one case.
#[derive(Clone, Debug, Serialize)]
pub struct FixedCost {
    /// The unit.
    pub name: String,
    /// Tokens.
    pub m: i64,
    /// `ok`, `skipped`, `failed`.
    pub status: String,
    /// Why skipped or failed, or a caveat (not one stage, weights not L2-resident).
    pub reason: Option<String>,
    /// CTAs.
    pub ctas: u32,
    /// K iterations per task (1 for a one-stage linear).
    pub k_iters: i64,
    /// Weight bytes (resident in L2 when below about half of it).
    pub weight_bytes: u64,
    /// Median microseconds with 1 task per CTA (persistent stamps).
    pub t1_us: f64,
    /// Tasks per CTA of the second measurement (8).
    pub p: usize,
    /// Median microseconds with `p` tasks per CTA.
    pub tp_us: f64,
    /// `(tp − t1) / (p − 1)`.
    pub per_task_us: Option<f64>,
    /// The update step of `%globaltimer` (ns), the resolution of one sample.
    pub timer_step_ns: Option<u64>,
    /// CTA 0's timeline in the last launch with `p` tasks per CTA: one line per task, each
    /// role's span in microseconds from the first task's publication (the stamped build's
    /// `mpkc_bench_phases`).
    pub timeline: Vec<String>,
}

/// Fills `summary` from the cases: per method, per family that has a timed case.
pub fn summarize(cases: &[CaseReport], methods: &[String]) -> Vec<MethodSummary> {
    let mut out = Vec::new();
    for m in methods {
        for family in [Family::Linear, Family::Consumer] {
            let sp: Vec<(String, f64)> = cases
                .iter()
                .filter(|c| c.status == "ok" && c.family == Some(family))
                .flat_map(|c| {
                    c.methods
                        .iter()
                        .filter(|r| &r.method == m)
                        .filter_map(|r| r.speedup.map(|s| (format!("{} M={}", c.name, c.m), s)))
                })
                .collect();
            if sp.is_empty() && family == Family::Consumer {
                continue;
            }
            let values: Vec<f64> = sp.iter().map(|(_, s)| *s).collect();
            out.push(MethodSummary {
                method: m.clone(),
                family,
                cases: sp.len(),
                geomean_speedup: stats::geomean(&values),
                min_speedup: sp.into_iter().min_by(|a, b| a.1.total_cmp(&b.1)),
            });
        }
    }
    out
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".to_string(), |x| format!("{x:.digits$}"))
}

/// The table printed at the end (plain text, one line per case and method).
pub fn table(r: &BenchReport) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "mpkc bench: {} (sm_{}, {} SMs, L2 {} MB), target {}\n",
        r.gpu.name,
        r.gpu.compute_capability.replace('.', ""),
        r.gpu.sms,
        r.gpu.l2_bytes / 1_000_000,
        r.target
    ));
    match &r.copy_ceiling {
        Some(c) => s.push_str(&format!(
            "copy ceiling: {:.2} TB/s ({} MB device-to-device in {:.1} us)\n",
            c.tb_per_s,
            c.bytes / 1_000_000,
            c.us
        )),
        None => s.push_str("copy ceiling: not measured\n"),
    }
    s.push_str(&format!(
        "method: median of {} samples; standalone = {} back-to-back runs per sample; weights rotated over >= {}x L2\n",
        r.settings.repeats, r.settings.runs, r.settings.rotate_l2_factor
    ));
    if !r.cases.is_empty() {
        s.push_str(&format!(
            "{:<44} {:>3} {:<10} {:<6} {:>9} {:>6} {:>6} {:>9} {:>7}  {}\n",
            "case",
            "M",
            "method",
            "timing",
            "mpkc us",
            "TB/s",
            "%ceil",
            "theirs us",
            "speedup",
            "check"
        ));
    }
    for c in &r.cases {
        let check = c.check.as_ref().map_or_else(String::new, |k| {
            format!(
                "{} {} {:.1e}{}",
                k.against,
                k.metric,
                k.error,
                if k.pass { "" } else { " FAIL" }
            )
        });
        if c.status != "ok" {
            s.push_str(&format!(
                "{:<44} {:>3} {}: {}{}\n",
                c.name,
                c.m,
                c.status.to_uppercase(),
                c.reason.as_deref().unwrap_or(""),
                if check.is_empty() {
                    String::new()
                } else {
                    format!(" ({check})")
                }
            ));
            continue;
        }
        for m in &c.methods {
            s.push_str(&format!(
                "{:<44} {:>3} {:<10} {:<6} {:>9.2} {:>6} {:>6} {:>9} {:>7}  {}\n",
                c.name,
                c.m,
                m.method,
                m.timing,
                m.us,
                opt(m.tb_per_s, 2),
                opt(m.share.map(|x| 100.0 * x), 0),
                opt(m.competitor_us, 2),
                opt(m.speedup, 2),
                check
            ));
        }
        if let Some(step) = c.methods.iter().find_map(|m| m.timer_step_ns) {
            let setup = c
                .methods
                .iter()
                .find_map(|m| m.setup_us)
                .map(|u| format!("; from the first task's publication (the TaskDesc copy before it, {u:.2} us, left out)"))
                .unwrap_or_default();
            s.push_str(&format!(
                "{:<44} {:>3} persistent samples: %globaltimer step {step} ns{setup}\n",
                "", c.m
            ));
        }
        for line in c.methods.iter().flat_map(|m| &m.timeline) {
            let who = if line.starts_with("task ") {
                "CTA 0 "
            } else {
                ""
            };
            s.push_str(&format!("{:<44} {:>3} {who}{line}\n", "", c.m));
        }
        if let Some(why) = &c.no_competitor {
            s.push_str(&format!("{:<44} {:>3} no competitor: {why}\n", "", c.m));
        }
    }
    for m in &r.summary {
        s.push_str(&format!(
            "{} ({}): {} cases with a competitor, geomean speedup {}{}\n",
            m.method,
            match m.family {
                Family::Linear => "linears vs cuBLAS, cuBLASLt",
                Family::Consumer => "consumer ops vs PyTorch eager",
            },
            m.cases,
            opt(m.geomean_speedup, 2),
            m.min_speedup
                .as_ref()
                .map(|(n, v)| format!(", slowest {n} at {v:.2}x"))
                .unwrap_or_default()
        ));
    }
    if !r.fixed_cost.is_empty() {
        s.push_str(&format!(
            "{:<44} {:>3} {:>5} {:>7} {:>9} {:>9} {:>12}  {}\n",
            "fixed cost", "M", "CTAs", "k_iters", "T1 us", "Tp us", "per task us", "note"
        ));
        for f in &r.fixed_cost {
            if f.status != "ok" {
                s.push_str(&format!(
                    "{:<44} {:>3} {}: {}\n",
                    f.name,
                    f.m,
                    f.status.to_uppercase(),
                    f.reason.as_deref().unwrap_or("")
                ));
                continue;
            }
            s.push_str(&format!(
                "{:<44} {:>3} {:>5} {:>7} {:>9.2} {:>9.2} {:>12}  p = {}, timer step {} ns{}\n",
                f.name,
                f.m,
                f.ctas,
                f.k_iters,
                f.t1_us,
                f.tp_us,
                opt(f.per_task_us, 3),
                f.p,
                f.timer_step_ns.map_or("?".to_string(), |t| t.to_string()),
                f.reason
                    .as_deref()
                    .map(|r| format!("; {r}"))
                    .unwrap_or_default()
            ));
            for line in &f.timeline {
                s.push_str(&format!("{:<44} {line}\n", ""));
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(name: &str, m: i64, status: &str, speedup: Option<f64>) -> CaseReport {
        CaseReport {
            name: name.into(),
            m,
            status: status.into(),
            reason: None,
            family: Some(Family::Linear),
            shape: None,
            tasks: 56,
            ctas: 56,
            max_queue: 1,
            bytes: 1000,
            weight_copies: 2,
            check: None,
            competitor: Some("cublasGemmEx".into()),
            no_competitor: None,
            methods: vec![MethodResult {
                method: "standalone".into(),
                timing: "graph".into(),
                us: 10.0,
                samples: vec![10.0],
                tb_per_s: Some(1.0),
                share: Some(0.25),
                competitor_us: speedup.map(|s| 10.0 * s),
                competitor_timing: Some("graph".into()),
                speedup,
                timer_step_ns: None,
                setup_us: None,
                timeline: Vec::new(),
            }],
        }
    }

    fn report(cases: Vec<CaseReport>) -> BenchReport {
        let methods = vec!["standalone".to_string()];
        BenchReport {
            schema: SCHEMA,
            tool: "mpkc test".into(),
            gpu: GpuInfo {
                name: "H200".into(),
                compute_capability: "9.0".into(),
                sms: 132,
                l2_bytes: 60_000_000,
            },
            target: "sm_90a".into(),
            copy_ceiling: Some(Ceiling {
                bytes: 1 << 30,
                us: 505.0,
                tb_per_s: 4.25,
            }),
            settings: Settings {
                runs: 100,
                repeats: 9,
                warmup: 3,
                seed: 1,
                methods: methods.clone(),
                rotate_l2_factor: 2,
            },
            summary: summarize(&cases, &methods),
            cases,
            fixed_cost: Vec::new(),
        }
    }

    #[test]
    fn the_json_document_has_the_documented_fields() {
        let mut skipped = case("linear_sm100_v2", 64, "skipped", None);
        skipped.reason = Some("at M = 64: E0106: out of range".into());
        skipped.methods.clear();
        let r = report(vec![case("linear_sm100_v2", 16, "ok", Some(1.5)), skipped]);
        let v = serde_json::to_value(&r).expect("serializes");
        assert_eq!(v["schema"], 1);
        assert_eq!(v["gpu"]["sms"], 132);
        assert_eq!(v["copy_ceiling"]["tb_per_s"], 4.25);
        let m = &v["cases"][0]["methods"][0];
        for key in [
            "method",
            "timing",
            "us",
            "samples",
            "tb_per_s",
            "share",
            "competitor_us",
            "speedup",
            "timer_step_ns",
            "setup_us",
        ] {
            assert!(m.get(key).is_some(), "{key} missing: {m}");
        }
        assert_eq!(v["cases"][1]["status"], "skipped");
        assert_eq!(v["summary"][0]["cases"], 1);
        let t = table(&r);
        assert!(t.contains("copy ceiling: 4.25 TB/s"), "{t}");
        assert!(t.contains("SKIPPED: at M = 64: E0106"), "{t}");
        assert!(t.contains("geomean speedup 1.50"), "{t}");
    }

    #[test]
    fn the_summary_takes_only_timed_cases_with_a_competitor() {
        let cases = vec![
            case("a", 1, "ok", Some(2.0)),
            case("b", 1, "ok", Some(0.5)),
            case("c", 1, "ok", None),
            case("d", 1, "mismatch", Some(100.0)),
        ];
        let s = summarize(
            &cases,
            &["standalone".to_string(), "persistent".to_string()],
        );
        assert_eq!(s[0].cases, 2);
        assert!((s[0].geomean_speedup.expect("two") - 1.0).abs() < 1e-12);
        assert_eq!(s[0].min_speedup, Some(("b M=1".to_string(), 0.5)));
        assert_eq!(s[1].cases, 0);
        assert_eq!(s[1].geomean_speedup, None);
    }

    #[test]
    fn consumer_ops_are_summarized_apart_from_the_linears() {
        let mut norm = case("rmsnorm_v2_h7168", 1, "ok", Some(3.0));
        norm.family = Some(Family::Consumer);
        let cases = vec![case("a", 1, "ok", Some(2.0)), norm];
        let s = summarize(&cases, &["standalone".to_string()]);
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].family, s[0].cases), (Family::Linear, 1));
        assert!((s[0].geomean_speedup.expect("one") - 2.0).abs() < 1e-12);
        assert_eq!((s[1].family, s[1].cases), (Family::Consumer, 1));
        assert!((s[1].geomean_speedup.expect("one") - 3.0).abs() < 1e-12);
        let t = table(&report(cases));
        assert!(
            t.contains("standalone (consumer ops vs PyTorch eager): 1 cases"),
            "{t}"
        );
        assert!(
            t.contains("standalone (linears vs cuBLAS, cuBLASLt): 1 cases"),
            "{t}"
        );
        // Without a consumer case, only the linears' line.
        assert_eq!(
            summarize(
                &[case("a", 1, "ok", Some(2.0))],
                &["standalone".to_string()]
            )
            .len(),
            1
        );
    }
}
