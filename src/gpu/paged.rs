//! Running a task whose KV cache is paged (`paged(page P, max_context C, requests R)`,
//! docs/language.md "Paged KV caches"): the context lengths `mpkc verify` runs one build at, and
//! the page table of one run, which the harness uploads where MPK's runtime keeps it
//! (`RuntimeConfig::paged_kv_indptr_buffer`, `paged_kv_indices_buffer`,
//! `paged_kv_last_page_len_buffer`) and a Python reference receives as its `paged_kv` argument.
//!
//! The context length is a run-time quantity, like the token count of docs/runtime-m.md: the
//! kernel reads it from the page table each step, so the runs at several lengths share one
//! build. Each run states `R` requests of one token each (decode: row `r` is request `r`, the
//! `qo_indptr_buffer` `0, 1, …, R`), every request holding `context` tokens, on pages drawn from
//! a seeded random permutation of the pool (so that a kernel which ignores the page table reads
//! the wrong pages).

use super::abi::MAX_NUM_BATCHED_REQUESTS;
use super::data::Fill;
use crate::ir::{PagedIr, TensorIr};
use crate::valid::CheckedTask;

/// The paged tensor of `task`, if it has one.
pub fn paged_of(task: &CheckedTask) -> Option<(&TensorIr, PagedIr)> {
    task.ir
        .tensors
        .values()
        .find_map(|t| t.paged.map(|p| (t, p)))
}

/// The context lengths `mpkc verify` runs a paged task at, without `--context`: 1 token (one
/// partial page, so most splits of a split-KV kernel are empty), one token past eight whole
/// pages (a partial last page; for DeepSeek-V3's 64-token pages, 513), a quarter of the maximum
/// (whole pages; 4,096 of 16,384) and the maximum; each once, in increasing order, none past the
/// maximum.
pub fn context_lengths(p: &PagedIr) -> Vec<i64> {
    let max = p.max_context.max(1);
    let mut v: Vec<i64> = [1, 8 * p.page_tokens + 1, max / 4, max]
        .into_iter()
        .map(|c| c.clamp(1, max))
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The page table of one run: what the harness uploads and the reference receives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PagedRun {
    /// Tokens per page.
    pub page_tokens: i64,
    /// Tokens of context of every request of the run.
    pub context: i64,
    /// Requests (one token each).
    pub requests: i64,
    /// `paged_kv_indptr_buffer`: `MPK_MAX_NUM_BATCHED_REQUESTS + 1` page offsets; the unused
    /// slots repeat the total, as MPK's `prepare_next_batch` writes them.
    pub indptr: Vec<i32>,
    /// `paged_kv_indices_buffer`: the page ids of every request, back to back (at least one
    /// entry, so that the buffer exists).
    pub indices: Vec<i32>,
    /// `paged_kv_last_page_len_buffer`: per request slot, the tokens of its last page (the
    /// unused slots hold the page size).
    pub last_page_len: Vec<i32>,
    /// `qo_indptr_buffer`: `0, 1, …, R`, then `R` (one token per request).
    pub qo_indptr: Vec<i32>,
}

impl PagedRun {
    /// The table of `requests` requests of `context` tokens (clamped to `1..=max_context`) in a
    /// pool of `pool_pages` pages, pages drawn from a permutation of the pool seeded by `seed`.
    pub fn new(p: &PagedIr, pool_pages: i64, context: i64, seed: u64) -> PagedRun {
        let context = context.clamp(1, p.max_context.max(1));
        let requests = p.requests.clamp(0, MAX_NUM_BATCHED_REQUESTS as i64);
        let per = p.pages_of(context);
        let mut pool: Vec<i32> = (0..pool_pages.max(0))
            .map(|i| i32::try_from(i).unwrap_or(i32::MAX))
            .collect();
        // Fisher-Yates with the verify inputs' generator.
        let mut fill = Fill::new(seed ^ 0x7061_6765_645f_6b76);
        for i in (1..pool.len()).rev() {
            let j = fill.int(0, i as i64 + 1) as usize;
            pool.swap(i, j.min(i));
        }
        let used = ((requests * per) as usize).min(pool.len());
        let mut indices: Vec<i32> = pool[..used].to_vec();
        if indices.is_empty() {
            indices.push(0);
        }
        let to_i32 = |x: i64| i32::try_from(x).unwrap_or(i32::MAX);
        let indptr = (0..=MAX_NUM_BATCHED_REQUESTS as i64)
            .map(|r| to_i32(r.min(requests) * per))
            .collect();
        let last = context - (per - 1) * p.page_tokens;
        let last_page_len = (0..MAX_NUM_BATCHED_REQUESTS as i64)
            .map(|r| to_i32(if r < requests { last } else { p.page_tokens }))
            .collect();
        let qo_indptr = (0..=MAX_NUM_BATCHED_REQUESTS as i64)
            .map(|r| to_i32(r.min(requests)))
            .collect();
        PagedRun {
            page_tokens: p.page_tokens,
            context,
            requests,
            indptr,
            indices,
            last_page_len,
            qo_indptr,
        }
    }

    /// Little-endian bytes of an `int` buffer.
    pub fn bytes(v: &[i32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    /// What a Python reference's `paged_kv` argument holds (docs/references.md): `page`,
    /// `context`, `requests`, and per request its `pages` (the page ids, in token order) and
    /// `context_lens`.
    pub fn to_json(&self) -> serde_json::Value {
        let pages: Vec<Vec<i32>> = (0..self.requests as usize)
            .map(|r| {
                let (a, b) = (self.indptr[r] as usize, self.indptr[r + 1] as usize);
                self.indices
                    .get(a..b)
                    .map(<[i32]>::to_vec)
                    .unwrap_or_default()
            })
            .collect();
        let lens: Vec<i64> = (0..self.requests as usize)
            .map(|r| {
                let n = i64::from(self.indptr[r + 1] - self.indptr[r]);
                if n <= 0 {
                    0
                } else {
                    (n - 1) * self.page_tokens + i64::from(self.last_page_len[r])
                }
            })
            .collect();
        serde_json::json!({
            "page": self.page_tokens,
            "context": self.context,
            "requests": self.requests,
            "pages": pages,
            "context_lens": lens,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::span::Span;

    fn dsv3() -> PagedIr {
        PagedIr {
            page_tokens: 64,
            max_context: 16384,
            requests: 2,
            value_spans: [Span::default(); 3],
            span: Span::default(),
        }
    }

    #[test]
    fn verify_runs_the_issue_s_context_lengths() {
        assert_eq!(context_lengths(&dsv3()), vec![1, 513, 4096, 16384]);
        let small = PagedIr {
            max_context: 100,
            ..dsv3()
        };
        assert_eq!(context_lengths(&small), vec![1, 25, 100]);
    }

    #[test]
    fn the_table_states_every_request_s_pages_and_context() {
        let p = dsv3();
        let pool = 2 * 256;
        let r = PagedRun::new(&p, pool, 513, 7);
        assert_eq!(r.indptr[..4], [0, 9, 18, 18]);
        assert_eq!(r.indptr[MAX_NUM_BATCHED_REQUESTS], 18);
        assert_eq!(r.last_page_len[..3], [1, 1, 64]);
        assert_eq!(r.qo_indptr[..4], [0, 1, 2, 2]);
        // Distinct pages inside the pool, not simply 0, 1, 2, ….
        let mut ids = r.indices.clone();
        assert!(ids.iter().all(|&i| (0..pool as i32).contains(&i)));
        assert_ne!(ids, (0..18).collect::<Vec<i32>>());
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 18);
        let j = r.to_json();
        assert_eq!(j["context_lens"], serde_json::json!([513, 513]));
        assert_eq!(j["pages"][1].as_array().map(Vec::len), Some(9));
        // Whole pages: the last one is full.
        let r = PagedRun::new(&p, pool, 4096, 7);
        assert_eq!((r.indptr[1], r.last_page_len[0]), (64, 64));
        assert_eq!(PagedRun::new(&p, pool, 1, 7).last_page_len[0], 1);
    }
}
