//! Per-CTA task queues as the runtime deals an op: each task once, over at most one CTA per SM
//! (several tasks per CTA where the op has more tasks than SMs); and the fixed-cost queues, the
//! same CTAs each running `p` tasks.

/// `(task offset, registration)` per queued task, one list per CTA.
pub type Queues = Vec<Vec<(usize, i32)>>;

/// The whole op once: `counts[r]` tasks of registration `r` (the producer first), over
/// `min(counts[0], sms)` CTAs, task `i` of each registration on CTA `i mod ctas`, a dependent's
/// tasks behind every producer task of its CTA (they wait the producer's event).
pub fn whole_op(counts: &[usize], sms: usize) -> Queues {
    let first = counts.first().copied().unwrap_or(1).max(1);
    let ctas = first.min(sms.max(1));
    let mut q: Queues = vec![Vec::new(); ctas];
    for (reg, n) in counts.iter().enumerate() {
        for off in 0..*n {
            q[off % ctas].push((off, reg as i32));
        }
    }
    q
}

/// `per_cta` tasks on each of `min(tasks, sms)` CTAs: CTA `c` runs task offsets
/// `c, c + ctas, c + 2·ctas, …` modulo `tasks` (a task repeats when the op has fewer than
/// `per_cta · ctas`; it writes the same values again).
pub fn per_cta(tasks: usize, sms: usize, per_cta: usize) -> Queues {
    let tasks = tasks.max(1);
    let ctas = tasks.min(sms.max(1));
    (0..ctas)
        .map(|c| {
            (0..per_cta.max(1))
                .map(|i| ((c + ctas * i) % tasks, 0))
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_task_once_over_the_sms() {
        // lm_head per rank: 127 tasks fit 132 SMs, one each.
        let q = whole_op(&[127], 132);
        assert_eq!(q.len(), 127);
        assert!(q.iter().all(|x| x.len() == 1));
        // 170 tasks on 132 SMs: 38 CTAs run two, and no task runs twice.
        let q = whole_op(&[170], 132);
        assert_eq!(q.len(), 132);
        assert_eq!(q.iter().filter(|x| x.len() == 2).count(), 38);
        let mut seen: Vec<usize> = q.iter().flatten().map(|(o, _)| *o).collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..170).collect::<Vec<_>>());
    }

    #[test]
    fn a_chain_puts_the_dependents_behind_the_producers() {
        // qkv_a split 8 ways: 17 x 8 = 136 partial tasks, then 17 reduce tasks.
        let q = whole_op(&[136, 17], 132);
        assert_eq!(q.len(), 132);
        assert_eq!(q.iter().flatten().filter(|(_, r)| *r == 0).count(), 136);
        assert_eq!(q.iter().flatten().filter(|(_, r)| *r == 1).count(), 17);
        for queue in &q {
            let first_dep = queue
                .iter()
                .position(|(_, r)| *r == 1)
                .unwrap_or(queue.len());
            assert!(queue[first_dep..].iter().all(|(_, r)| *r == 1));
        }
    }

    #[test]
    fn fixed_cost_queues_keep_the_ctas() {
        let one = per_cta(56, 132, 1);
        let eight = per_cta(56, 132, 8);
        assert_eq!(one.len(), 56);
        assert_eq!(eight.len(), 56);
        assert!(eight.iter().all(|x| x.len() == 8));
        assert_eq!(eight[3][0], (3, 0));
        // More tasks than SMs: the same 132 CTAs, each task offset from its own stride.
        let q = per_cta(200, 132, 2);
        assert_eq!(q.len(), 132);
        assert_eq!(q[0], vec![(0, 0), (132, 0)]);
        assert_eq!(q[100], vec![(100, 0), (32, 0)]);
    }
}
