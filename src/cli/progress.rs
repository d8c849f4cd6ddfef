//! `mpkc build`'s progress on stderr: a progress bar (indicatif) on a terminal, else one plain
//! line per job (not a terminal, or `--message-format json`), printed in job order whatever order
//! the jobs finish in, so the lines are the same from run to run.

use crate::driver::build::UnitOutput;
use crate::driver::build::{CacheUse, CompileJob, Progress};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::sync::Mutex;

/// A job's line: `[ 3/44] rmsnorm_v2_h4096 sm_90a: compiled`.
fn line(index: usize, total: usize, units: &[UnitOutput], job: &CompileJob) -> String {
    let what = match (&job.result, job.cache) {
        (Err(_), _) => "FAILED",
        (Ok(_), CacheUse::Hit) => "cached",
        (Ok(_), _) => "compiled",
    };
    let w = total.to_string().len();
    format!(
        "[{:>w$}/{total}] {} {}: {what}",
        index + 1,
        units[job.unit].unit,
        job.target
    )
}

/// Plain lines held back until every earlier job has printed.
pub struct Lines {
    total: usize,
    next: usize,
    pending: Vec<Option<String>>,
}

/// The progress report of one build.
pub enum BuildProgress<'a> {
    /// A bar on a terminal.
    Bar(ProgressBar, &'a [UnitOutput]),
    /// Plain lines in job order.
    Lines(Mutex<Lines>, &'a [UnitOutput]),
}

impl<'a> BuildProgress<'a> {
    /// A bar when `terminal`, else plain lines.
    pub fn new(terminal: bool, units: &'a [UnitOutput]) -> BuildProgress<'a> {
        if terminal {
            let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
            if let Ok(style) =
                ProgressStyle::with_template("{prefix:>8} [{bar:30}] {pos}/{len} {wide_msg}")
            {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_prefix("nvcc");
            BuildProgress::Bar(bar, units)
        } else {
            BuildProgress::Lines(
                Mutex::new(Lines {
                    total: 0,
                    next: 0,
                    pending: Vec::new(),
                }),
                units,
            )
        }
    }

    /// Removes the bar (the report follows on stdout).
    pub fn finish(&self) {
        if let BuildProgress::Bar(bar, _) = self {
            bar.finish_and_clear();
        }
    }
}

impl Progress for BuildProgress<'_> {
    fn start(&self, total: usize) {
        match self {
            BuildProgress::Bar(bar, _) => bar.set_length(total as u64),
            BuildProgress::Lines(l, _) => {
                if let Ok(mut l) = l.lock() {
                    l.total = total;
                    l.pending = vec![None; total];
                }
            }
        }
    }

    fn done(&self, index: usize, job: &CompileJob) {
        match self {
            BuildProgress::Bar(bar, units) => {
                bar.inc(1);
                bar.set_message(format!("{} {}", units[job.unit].unit, job.target));
            }
            BuildProgress::Lines(l, units) => {
                let Ok(mut l) = l.lock() else { return };
                let total = l.total;
                if let Some(slot) = l.pending.get_mut(index) {
                    *slot = Some(line(index, total, units, job));
                }
                while let Some(Some(text)) = l.pending.get(l.next).cloned() {
                    errln!("{text}");
                    l.next += 1;
                }
            }
        }
    }
}
