//! What the parent of `mpkc verify` prints per case: a PASS / FAIL / SKIP line with the worst
//! output's error against its tolerance, and for a failure each failing output and the first
//! distinct lines the child printed.

use super::child::{ChildResult, OutputRow};
use crate::driver::verify::CaseSpec;

pub(super) fn print_skip(name: &str, why: &str, json: bool) {
    if json {
        outln!(
            "{}",
            serde_json::json!({"reason": "case-result", "name": name, "verdict": "skip", "error": why})
        );
    } else {
        outln!("  SKIP  {name:<52} {why}");
    }
}

fn worst(outputs: &[OutputRow]) -> Option<&OutputRow> {
    let score = |o: &OutputRow| {
        if o.tol > 0.0 {
            o.error / o.tol
        } else {
            o.error
        }
    };
    outputs.iter().max_by(|a, b| {
        score(a)
            .partial_cmp(&score(b))
            .unwrap_or(std::cmp::Ordering::Equal)
    })
}

fn describe(o: &OutputRow) -> String {
    let value = if o.tol > 0.0 {
        format!(
            "{} {:.2e} {} {:.0e}",
            o.metric,
            o.error,
            if o.error < o.tol { "<" } else { ">=" },
            o.tol
        )
    } else {
        format!("{} {}", o.metric, o.error as u64)
    };
    let mut s = format!("{}.{}: {value}", o.unit, o.tensor);
    if o.unwritten > 0 || o.nans > 0 {
        s.push_str(&format!(
            ", {} of {} never written, {} NaN",
            o.unwritten, o.elements, o.nans
        ));
    }
    if o.past_m > 0 {
        s.push_str(&format!(
            ", {} written past the run's token count",
            o.past_m
        ));
    }
    s
}

pub(super) fn print_case(
    c: &CaseSpec,
    r: &ChildResult,
    ok: bool,
    secs: f64,
    device: Option<usize>,
    messages: &[String],
) {
    let verdict = if ok { "PASS" } else { "FAIL" };
    let summary = match (r.status.as_str(), worst(&r.outputs)) {
        ("ok", Some(o)) => describe(o),
        _ => r.error.clone().unwrap_or_else(|| "no result".into()),
    };
    let shape = if r.status == "ok" {
        format!("{} tasks on {} CTAs, ", r.tasks, r.ctas)
    } else {
        String::new()
    };
    let on = device.map(|d| format!(", GPU {d}")).unwrap_or_default();
    outln!(
        "  {verdict}  {:<52} {summary}  [{shape}{secs:.1}s{on}]",
        c.name
    );
    // A chain's stages that an in-place update hides from their own check (`driver::in_place`).
    if let (Some(layer), "ok") = (&c.layer, r.status.as_str()) {
        for (_, why) in &layer.alone_unchecked {
            outln!("        checked through the chain's output only: {why}");
        }
    }
    if !ok {
        for o in r.outputs.iter().filter(|o| !o.pass) {
            outln!("        {}", describe(o));
        }
        let mut shown: Vec<&String> = Vec::new();
        for m in messages {
            if !shown.contains(&m) && shown.len() < 6 {
                shown.push(m);
                outln!("        {m}");
            }
        }
    }
}
