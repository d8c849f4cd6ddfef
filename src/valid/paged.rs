//! Paged KV caches (`docs/language.md`, "Paged KV caches"; `E0028`).
//!
//! `paged(page P, max_context C, requests R)` declares a tensor `[pages, P, row]` to be a pool of
//! KV-cache pages that the task addresses through MPK's paged-KV page table, the three
//! `RuntimeConfig` fields MPK's `prepare_next_batch` writes each step (`paged_kv_indptr_buffer`,
//! `paged_kv_indices_buffer`, `paged_kv_last_page_len_buffer`; `runtime_header.h` at upstream
//! `de8745d9`, lines 342-345). The checks:
//!
//! - the tensor is `[pages, P, row]`: rank 3, its second extent the page size;
//! - `P`, `C` and `R` are at least 1, and `R` at most `MPK_MAX_NUM_BATCHED_REQUESTS` (16, the
//!   request slots of the page table the harness compiles);
//! - the pool holds every request at the most context: `pages ≥ R × ceil(C / P)` (what the
//!   runtime allocates and `mpkc verify` fills);
//! - it is read (`in`), or updated in place (`inout`: the append of a step's new token, which
//!   writes its rows and leaves the pool's others as they were); never `out`, which would make
//!   the whole pool the task's output (the cache persists across steps);
//! - one paged tensor per task (the runtime has one page table), not a view (pages are whole);
//! - an inline body reads it: only `body cuda` gets `<name>_page_tokens` and the runtime
//!   configuration's page table, so a template, a pipeline or a helper is `E0028`.

use crate::diag::{codes, Diagnostic, Sink};
use crate::ir::{BodyIr, Direction, TaskIr};

/// `MPK_MAX_NUM_BATCHED_REQUESTS` as the harness compiles it (`mpkc_runtime.cuh`;
/// `gpu::abi::MAX_NUM_BATCHED_REQUESTS`, tested equal), the request slots of the page table.
pub const MAX_REQUESTS: i64 = 16;

/// `E0028`: the paged tensors of `ir` against their shapes, the family and the body.
pub(super) fn paged(ir: &TaskIr, sink: &mut Sink) {
    let err = |msg: String| Diagnostic::error(codes::PAGED_KV, msg);
    let mut first: Option<(&str, crate::span::Span)> = None;
    for t in ir.tensors.values() {
        let Some(p) = &t.paged else { continue };
        if let Some((name, span)) = first {
            sink.push(
                err(format!("`{}` and `{name}` are both paged, but the runtime has one page table", t.name))
                    .primary(p.span, "a second paged pool")
                    .secondary(span, format!("`{name}` is paged here"))
                    .help("keep one paged KV cache per task (concatenate the latent and rope parts in one row)"),
            );
            continue;
        }
        first = Some((&t.name, p.span));
        let [page_span, context_span, requests_span] = p.value_spans;
        for (what, v, span) in [
            ("page", p.page_tokens, page_span),
            ("max_context", p.max_context, context_span),
            ("requests", p.requests, requests_span),
        ] {
            if v > i64::from(i32::MAX) {
                sink.push(
                    err(format!(
                        "`{what}` of `{}` is {v}, past the runtime's `int` page table",
                        t.name
                    ))
                    .primary(span, format!("{what} {v}"))
                    .help(format!("keep `{what}` at most {}", i32::MAX)),
                );
            }
            if v < 1 {
                sink.push(
                    err(format!(
                        "`{what}` of `{}` is {v}; it must be at least 1",
                        t.name
                    ))
                    .primary(span, format!("{what} {v}"))
                    .help(format!("give `{what}` a value of 1 or more")),
                );
            }
        }
        if p.requests > MAX_REQUESTS {
            sink.push(
                err(format!(
                    "`{}` serves {} requests, but the page table has {MAX_REQUESTS} request slots",
                    t.name, p.requests
                ))
                .primary(requests_span, format!("requests {}", p.requests))
                .note("MPK_MAX_NUM_BATCHED_REQUESTS (16 by default) bounds the requests of a step")
                .help(format!("serve at most {MAX_REQUESTS} requests per task")),
            );
        }
        if t.dims.len() != 3 {
            sink.push(
                err(format!(
                    "paged `{}` has {} dimensions, but a page pool is [pages, page, row]",
                    t.name,
                    t.dims.len()
                ))
                .primary(t.span, format!("rank {}", t.dims.len()))
                .secondary(p.span, "paged")
                .help(format!("declare it `[pages, {}, row]`", p.page_tokens)),
            );
        } else if t.dims[1] != p.page_tokens {
            sink.push(
                err(format!(
                    "pages of `{}` are {} tokens, but its second extent is {}",
                    t.name, p.page_tokens, t.dims[1]
                ))
                .primary(p.value_spans[0], format!("page {}", p.page_tokens))
                .secondary(
                    t.span,
                    format!("[{}, {}, {}]", t.dims[0], t.dims[1], t.dims[2]),
                )
                .help(format!(
                    "make the second extent the page size, {}",
                    p.page_tokens
                )),
            );
        } else if p.page_tokens >= 1 && p.requests >= 1 && p.max_context >= 1 {
            let need = crate::ir::exact::mul(p.requests, p.pages_of(p.max_context));
            if i128::from(t.dims[0]) < need {
                sink.push(
                    err(format!(
                        "the pool `{}` holds {} page{}, but `requests {}` at `max_context {}` need {need}",
                        t.name,
                        t.dims[0],
                        if t.dims[0] == 1 { "" } else { "s" },
                        p.requests,
                        p.max_context
                    ))
                    .primary(t.span, format!("{} pages", t.dims[0]))
                    .secondary(p.span, format!("{} x ceil({} / {}) pages", p.requests, p.max_context, p.page_tokens))
                    .help(format!("give the pool at least {need} pages (`requests * ceil_div(max_context, page)`)")),
                );
            }
        }
        if t.direction == Direction::Out {
            sink.push(
                err(format!("paged `{}` is out, but a KV cache persists across steps", t.name))
                    .primary(t.span, direction_word(t.direction))
                    .note("`out` makes the whole pool the task's output; a task reads the cache (`in`) or appends rows to it in place (`inout`, stdlib/dsv3/kv_append.mpk)")
                    .help(format!("declare `{}` `in`, or `inout` to write rows of it", t.name)),
            );
        }
        if t.view.is_some() {
            sink.push(
                err(format!(
                    "paged `{}` is also a view, but a page pool is whole pages",
                    t.name
                ))
                .primary(p.span, "paged")
                .help("drop `view(...)`: a page's rows are contiguous"),
            );
        }
        if !ir.family.is_consumer_only() || !matches!(ir.body, Some(BodyIr::Cuda { .. })) {
            sink.push(
                err(format!(
                    "`{}` is paged, but only an inline body reads the runtime's page table",
                    t.name
                ))
                .primary(p.span, "paged")
                .note(format!("the {} family with this body generates no code that reads `{}` through its pages", ir.family.as_str(), t.name))
                .help("read it from a consumer family's `body cuda { … }` (it gets `<name>_page_tokens` and `mpkc::paged_kv_*`)"),
            );
        }
    }
}

fn direction_word(d: Direction) -> &'static str {
    match d {
        Direction::In => "in",
        Direction::Out => "out",
        Direction::InOut => "inout",
    }
}

#[cfg(test)]
mod tests {
    /// The request slots the checker allows are the ones the harness's page table holds.
    #[test]
    fn request_slots_match_the_harness() {
        assert_eq!(
            super::MAX_REQUESTS,
            crate::gpu::abi::MAX_NUM_BATCHED_REQUESTS as i64
        );
    }
}
