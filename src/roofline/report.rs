//! The roofline's table and its `--json` document (schema in docs/roofline.md).

use super::peaks::Gpu;
use super::{Bound, Row};
use serde::Serialize;

/// The `schema` value of the JSON document.
pub const SCHEMA: &str = "mpkc-roofline/1";

/// A unit that could not be counted at an M: the checker's reason.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Skipped {
    /// The contract file.
    pub file: String,
    /// Tokens asked for.
    pub m: i64,
    /// The checker's first error at that M.
    pub reason: String,
}

/// The whole report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    /// [`SCHEMA`].
    pub schema: &'static str,
    /// `mpkc <version>`.
    pub tool: String,
    /// The GPUs' peaks the floors are taken against.
    pub gpus: Vec<Gpu>,
    /// One row per task instance (and M).
    pub rows: Vec<Row>,
    /// Contracts that could not take an M.
    pub skipped: Vec<Skipped>,
}

/// `bytes` with a decimal unit (B, kB, MB, GB: powers of 1000, as bandwidths are quoted).
pub fn human_bytes(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= 1e9 {
        format!("{:.2} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.2} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.2} kB", b / 1e3)
    } else {
        format!("{bytes} B")
    }
}

fn bound_word(b: Bound) -> &'static str {
    match b {
        Bound::Memory => "memory",
        Bound::Compute => "compute",
    }
}

/// The human table: a header naming the peaks, then one line per row with each GPU's floor and
/// bound (and the copy floor where measured), then the measured time and shares (`--measure`).
pub fn table(r: &Report) -> String {
    let mut s = String::from(
        "floor = max(bytes / HBM bandwidth, tensor-core FLOPs / dense peak); peaks by spec:\n",
    );
    for g in &r.gpus {
        s.push_str(&format!(
            "  {}: {} TB/s{}, {} TFLOPS bf16, {} TFLOPS fp8\n",
            g.name,
            g.hbm_tb_per_s,
            g.copy_tb_per_s
                .map(|c| format!(" ({c} TB/s measured copy)"))
                .unwrap_or_default(),
            g.bf16_tflops,
            g.fp8_tflops
        ));
    }
    let unit_w = r
        .rows
        .iter()
        .map(|x| x.unit.len())
        .max()
        .unwrap_or(4)
        .max(4);
    s.push_str(&format!(
        "\n{:<unit_w$}  {:>4}  {:>10}  {:>10}  {:>7}",
        "unit", "M", "bytes", "MFLOP", "FLOP/B"
    ));
    for g in &r.gpus {
        s.push_str(&format!(
            "  | {:>9} {:<7}",
            format!("{} us", g.name),
            "bound"
        ));
        if g.copy_tb_per_s.is_some() {
            s.push_str(&format!(" {:>8}", "copy us"));
        }
    }
    if r.rows.iter().any(|x| x.measured.is_some()) {
        s.push_str("  | measured us  floor%  copy%");
    }
    s.truncate(s.trim_end_matches(' ').len());
    s.push('\n');
    for row in &r.rows {
        s.push_str(&format!(
            "{:<unit_w$}  {:>4}  {:>10}  {:>10.3}  {:>7.2}",
            row.unit,
            row.m.map(|m| m.to_string()).unwrap_or_else(|| "-".into()),
            human_bytes(row.bytes),
            row.flops as f64 / 1e6,
            row.intensity
        ));
        for f in &row.floors {
            s.push_str(&format!(
                "  | {:>9.2} {:<7}",
                f.floor_us,
                bound_word(f.bound)
            ));
            if let Some(c) = f.copy_us {
                s.push_str(&format!(" {c:>8.2}"));
            }
        }
        if let Some(m) = &row.measured {
            let pct = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{:.0}%", v * 100.0));
            s.push_str(&format!(
                "  | {:>11.2}  {:>6}  {:>5}",
                m.us,
                pct(m.floor_share),
                pct(m.copy_share)
            ));
        }
        s.truncate(s.trim_end_matches(' ').len());
        s.push('\n');
    }
    for k in &r.skipped {
        s.push_str(&format!(
            "skipped {} at M = {}: {}\n",
            k.file, k.m, k.reason
        ));
    }
    s
}
