//! `mpkc roofline`: the floor of every task instance of the inputs (the stdlib when none) at
//! each `--m`, and with `--measure` the time `mpkc bench` measures beside it (bench's own
//! checking, building and timing, called, not repeated here).

use super::args::{BenchArgs, CommonArgs, RooflineArgs, RooflineGpu};
use super::{bench, exit, inputs, report};
use crate::diag::ColorMode;
use crate::driver::{self, Checked};
use crate::roofline::report::{table, Report, Skipped, SCHEMA};
use crate::roofline::{peaks, row, Row};
use clap::{Args, FromArgMatches};

/// The options `mpkc bench` runs with for `--measure`: its defaults (one standalone method) at
/// the roofline's token counts, read through bench's own argument parser so they stay its.
fn bench_args(ms: &[i64]) -> Result<BenchArgs, String> {
    let cmd = BenchArgs::augment_args(clap::Command::new("bench"));
    let mut argv = vec!["bench".to_string(), "--method".into(), "standalone".into()];
    if !ms.is_empty() {
        argv.push("--m".into());
        argv.push(
            ms.iter()
                .map(|m| m.to_string())
                .collect::<Vec<_>>()
                .join(","),
        );
    }
    let matches = cmd.try_get_matches_from(argv).map_err(|e| e.to_string())?;
    BenchArgs::from_arg_matches(&matches).map_err(|e| e.to_string())
}

/// Runs `mpkc roofline`; returns the exit status.
pub fn run(common: &CommonArgs, r: &RooflineArgs, color: ColorMode) -> u8 {
    let gpus: Vec<peaks::Gpu> = match r.gpu {
        None => peaks::GPUS.to_vec(),
        Some(RooflineGpu::H200) => vec![peaks::H200],
        Some(RooflineGpu::B200) => vec![peaks::B200],
    };
    // The inputs at their own params: diagnostics printed, errors stop here.
    let base = match super::check_all(common, color) {
        Ok(c) => c,
        Err(code) => return code,
    };
    if base.iter().any(Checked::has_errors) {
        report::summary(&base, common.message_format);
        return exit::ERRORS;
    }
    let mut rows: Vec<Row> = Vec::new();
    let mut skipped = Vec::new();
    if r.m.is_empty() {
        rows.extend(base.iter().flat_map(|c| &c.tasks).map(|t| row(t, &gpus)));
    } else {
        let sources: Vec<driver::Source> = match inputs::load(&common.files) {
            Ok(l) => l.into_iter().filter_map(Result::ok).collect(),
            Err(e) => {
                errln!("error: {e}");
                return exit::USAGE;
            }
        };
        let mut seen = std::collections::HashSet::new();
        for &m in &dedup(&r.m) {
            let checked = match bench::check_at(common, &sources, m) {
                Ok(c) => c,
                Err(code) => return code,
            };
            for c in &checked {
                if c.has_errors() {
                    skipped.push(Skipped {
                        file: c.source.path.clone(),
                        m,
                        reason: c.first_error().unwrap_or_else(|| "does not check".into()),
                    });
                    continue;
                }
                for t in &c.tasks {
                    let x = row(t, &gpus);
                    // A unit without a token param is the same at every M: once.
                    if x.m.is_some() || seen.insert(x.unit.clone()) {
                        rows.push(x);
                    }
                }
            }
        }
    }
    let mut code = exit::OK;
    if r.measure {
        let b = match bench_args(&r.m) {
            Ok(b) => b,
            Err(e) => {
                errln!("error: {e}");
                return exit::USAGE;
            }
        };
        let (measured, status) = match bench::measure(common, &b, color, "roofline --measure") {
            Ok(x) => x,
            Err(code) => return code,
        };
        code = status;
        for case in measured.cases.iter().filter(|c| c.status == "ok") {
            let Some(us) = case
                .methods
                .iter()
                .find(|m| m.method == "standalone")
                .map(|m| m.us)
            else {
                continue;
            };
            let unit = case.name.split(" -> ").next().unwrap_or(&case.name);
            if let Some(x) = rows
                .iter_mut()
                .find(|x| x.unit == unit && (r.m.is_empty() || x.m == Some(case.m)))
            {
                x.measure(&measured.gpu.name, &case.name, us);
            }
        }
    }
    let rep = Report {
        schema: SCHEMA,
        tool: format!("mpkc {}", env!("CARGO_PKG_VERSION")),
        gpus,
        rows,
        skipped,
    };
    // With `--message-format json` stdout holds only JSON: the document, not the table.
    if r.json || common.message_format == super::args::MessageFormat::Json {
        outln!("{}", serde_json::to_string_pretty(&rep).unwrap_or_default());
    } else {
        out!("{}", table(&rep));
    }
    code
}

fn dedup(ms: &[i64]) -> Vec<i64> {
    let mut v = Vec::new();
    for m in ms {
        if !v.contains(m) {
            v.push(*m);
        }
    }
    v
}
