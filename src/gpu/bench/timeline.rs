//! CTA 0's timeline of the last stamped launch (`mpkc bench --timeline`, `--fixed-cost`): the
//! worker's `mpkc_bench_phases[8][16][4]` (stdlib/include/mpkc_worker.cuh), per warp and task,
//! read back and printed in microseconds from the first task's publication.

use std::sync::Arc;

use cudarc::driver::CudaStream;

use super::timing;
use crate::gpu::device::Kernel;
use crate::gpu::GpuError;

/// Tasks the worker's `mpkc_bench_phases` records per warp (`kBenchPhaseTasks`).
pub const PHASE_TASKS: usize = 16;

/// Where `mpkc_bench_phases[warp][task][i]` lies in the array read back flat.
const fn phase_at(warp: usize, task: usize, i: usize) -> usize {
    (warp * PHASE_TASKS + task) * 4 + i
}

/// Microseconds from `t0` to `t` (ns of %globaltimer).
fn us_since(t0: u64, t: u64) -> f64 {
    (t as f64 - t0 as f64) / 1000.0
}

/// Stamp indices of `mpkc_bench_phases[warp][task][i]` (mpkc_worker.cuh).
const SAW_ARRIVED: usize = 0;
const ROLE_END: usize = 1;
const PREFIX_END: usize = 2;
/// The warps whose slot [`EXTRA`] holds the split-K tail of an in-task split sum, stamped by
/// thread 0 of the consumer warpgroup (src/back/epilogue.rs emits them from these; consumer warps
/// 1-3, whose slot the runtime leaves free): its sums issued, the tile's counter returned, and
/// (the tile's last split) the sum stored.
pub const SPLIT_ISSUED: usize = 1;
pub const SPLIT_ARRIVED: usize = 2;
pub const SPLIT_SUMMED: usize = 3;
/// Loader (W4): every lane's wait of the task's used pages done (the unused ones are waited after
/// its loads). Consumer (W0, sm_90a pipelines): the K loop's end, stamped by the generated
/// consumer before it releases the pages.
pub const EXTRA: usize = 3;

/// The timeline of tasks `0..p.min(16)` of CTA 0 in the last stamped launch of `k`: per task,
/// when the controller (W7) published it and saw it finished, and each role warp's span (W0 for
/// the consumer warpgroup, W4 loader, W5 launcher) as start / end of the runtime's prefix / end,
/// with the loader's page wait and the consumer's K loop end where stamped ("-" where not).
///
/// A last line, with `ctas` > 0, spreads every CTA's last K loop end and last task end
/// (`mpkc_bench_ctas`) as min / median / max: where CTA 0 is not the one that ends the launch.
///
/// Errors: [`GpuError::Kernel`] when the module has no `mpkc_bench_phases` or `mpkc_bench_ctas`
/// of their sizes (a build without `MPKC_BENCH_STAMPS`), or the copy back fails.
pub fn read(
    stream: &Arc<CudaStream>,
    k: &Kernel,
    p: usize,
    ctas: usize,
) -> Result<Vec<String>, GpuError> {
    let (at, size) = k.global("mpkc_bench_phases", stream)?;
    if size < 8 * PHASE_TASKS * 4 * 8 {
        return Err(GpuError::Kernel(
            "mpkc_bench_phases is not [8][16][4] u64".into(),
        ));
    }
    let ph = timing::read_u64::<{ 8 * PHASE_TASKS * 4 }>(stream, at)?;
    let mut out = lines(&ph, p);
    if ctas > 0 {
        let (at, size) = k.global("mpkc_bench_ctas", stream)?;
        if size < BENCH_CTAS * 2 * 8 {
            return Err(GpuError::Kernel(
                "mpkc_bench_ctas is not [1024][2] u64".into(),
            ));
        }
        let c = timing::read_u64::<{ BENCH_CTAS * 2 }>(stream, at)?;
        out.push(spread(ph[phase_at(7, 0, SAW_ARRIVED)], &c, ctas));
    }
    Ok(out)
}

/// CTAs the worker's `mpkc_bench_ctas` records (`kBenchCtas`).
const BENCH_CTAS: usize = 1024;

/// The line of [`read`] over CTAs `0..ctas` of `c` (`c[2 * cta + i]`, ns), in microseconds from
/// `t0`; unstamped entries (0) are left out.
fn spread(t0: u64, c: &[u64], ctas: usize) -> String {
    let stat = |i: usize| {
        let mut v: Vec<f64> = (0..ctas.min(BENCH_CTAS))
            .map(|cta| c[2 * cta + i])
            .filter(|&t| t != 0)
            .map(|t| us_since(t0, t))
            .collect();
        v.sort_by(f64::total_cmp);
        match (v.first(), v.last()) {
            (Some(lo), Some(hi)) => format!("{lo:.2}/{:.2}/{hi:.2}", v[v.len() / 2]),
            _ => "-".to_string(),
        }
    };
    format!(
        "over {ctas} CTAs (min/median/max): last K loop done {}, last task finished {} us",
        stat(0),
        stat(1)
    )
}

/// The text of [`read`] from the raw stamps (`ph[phase_at(warp, task, i)]`, ns).
fn lines(ph: &[u64], p: usize) -> Vec<String> {
    let get = |w: usize, s: usize, i: usize| ph[phase_at(w, s, i)];
    let t0 = get(7, 0, SAW_ARRIVED);
    let us = |t: u64| {
        if t == 0 {
            "-".to_string()
        } else {
            format!("{:.2}", us_since(t0, t))
        }
    };
    let span = |w: usize, s: usize| {
        format!(
            "{}/{}/{}",
            us(get(w, s, SAW_ARRIVED)),
            us(get(w, s, PREFIX_END)),
            us(get(w, s, ROLE_END))
        )
    };
    // The split-K tail (slot EXTRA of W1-W3, stamped by the in-task split sums only). A stamp
    // before the first publication is an earlier launch's: the sum of a split that was its
    // tile's last then but not in this launch.
    let split = |s: usize| {
        let tail = |w: usize| match get(w, s, EXTRA) {
            t if t < t0 => 0,
            t => t,
        };
        if (1..=3).all(|w| tail(w) == 0) {
            String::new()
        } else {
            format!(
                ", split-K tail: sums issued {}, tile counter returned {}, tile sum stored {}",
                us(tail(SPLIT_ISSUED)),
                us(tail(SPLIT_ARRIVED)),
                us(tail(SPLIT_SUMMED))
            )
        }
    };
    (0..p.min(PHASE_TASKS))
        .map(|s| {
            format!(
                "task {s}: published {}, consumer {} (K loop done {}{}), loader {} (pages waited {}), launcher {}, finished {} us",
                us(get(7, s, SAW_ARRIVED)),
                span(0, s),
                us(get(0, s, EXTRA)),
                split(s),
                span(4, s),
                us(get(4, s, EXTRA)),
                span(5, s),
                us(get(7, s, ROLE_END))
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_reads_in_microseconds_from_the_first_publication_and_unstamped_is_a_dash() {
        let mut ph = vec![0u64; 8 * PHASE_TASKS * 4];
        let at = phase_at;
        ph[at(7, 0, SAW_ARRIVED)] = 10_000;
        ph[at(7, 0, ROLE_END)] = 16_500;
        ph[at(0, 0, SAW_ARRIVED)] = 10_100;
        ph[at(0, 0, PREFIX_END)] = 10_200;
        ph[at(0, 0, EXTRA)] = 14_000;
        ph[at(0, 0, ROLE_END)] = 16_000;
        ph[at(4, 0, SAW_ARRIVED)] = 10_050;
        ph[at(4, 0, EXTRA)] = 10_150;
        ph[at(4, 0, PREFIX_END)] = 10_160;
        ph[at(4, 0, ROLE_END)] = 11_000;
        let l = lines(&ph, 2);
        assert_eq!(l.len(), 2);
        assert_eq!(
            l[0],
            "task 0: published 0.00, consumer 0.10/0.20/6.00 (K loop done 4.00), loader 0.05/0.16/1.00 \
             (pages waited 0.15), launcher -/-/-, finished 6.50 us"
        );
        assert!(l[1].starts_with("task 1: published -,"), "{}", l[1]);
        assert_eq!(lines(&ph, 40).len(), PHASE_TASKS);
    }

    #[test]
    fn a_split_k_tail_shows_where_stamped_and_a_split_that_was_not_last_has_no_sum() {
        let mut ph = vec![0u64; 8 * PHASE_TASKS * 4];
        let at = phase_at;
        ph[at(7, 0, SAW_ARRIVED)] = 10_000;
        ph[at(0, 0, EXTRA)] = 14_000;
        ph[at(SPLIT_ISSUED, 0, EXTRA)] = 14_200;
        ph[at(SPLIT_ARRIVED, 0, EXTRA)] = 15_000;
        // The runtime's stamps of W1-W3's other slots are not the tail's.
        ph[at(1, 0, ROLE_END)] = 16_000;
        let l = lines(&ph, 1);
        assert!(
            l[0].contains("(K loop done 4.00, split-K tail: sums issued 4.20, tile counter returned 5.00, tile sum stored -)"),
            "{}",
            l[0]
        );
        ph[at(SPLIT_SUMMED, 0, EXTRA)] = 9_000;
        assert!(
            lines(&ph, 1)[0].contains("tile sum stored -)"),
            "an earlier launch's stamp"
        );
        ph[at(SPLIT_SUMMED, 0, EXTRA)] = 16_250;
        assert!(lines(&ph, 1)[0].contains("tile sum stored 6.25)"));
    }

    #[test]
    fn the_spread_over_ctas_skips_unstamped_ones() {
        let c = [12_000, 15_000, 0, 0, 11_000, 13_000, 14_000, 18_000];
        assert_eq!(
            spread(10_000, &c, 4),
            "over 4 CTAs (min/median/max): last K loop done 1.00/2.00/4.00, last task finished 3.00/5.00/8.00 us"
        );
        assert_eq!(
            spread(10_000, &[0; 4], 2),
            "over 2 CTAs (min/median/max): last K loop done -, last task finished - us"
        );
    }
}
