//! `mpkc bench`: production builds of the linears timed on the GPU as the runtime runs them (the
//! whole op, its tasks spread over every SM), side by side with cuBLAS on the same shapes and
//! data, in one process (docs/bench.md).
//!
//! [`shape`] reads a linear's extents through one accessor and counts the bytes a case moves,
//! [`stats`] holds the arithmetic (median, TB/s, share of the copy ceiling, speedup, fixed
//! cost), [`queue`] deals the tasks over the CTAs, [`timing`] times on the device (events, graph
//! replay, `%globaltimer` stamps, the copy ceiling), [`cublas`] and [`cublaslt`] are the competitors (bf16, block-scaled fp8), [`case`] runs
//! one case and [`report`] is the table and the `--json` document.

pub mod case;
mod competitor;
pub mod cublas;
pub mod cublaslt;
pub mod queue;
pub mod report;
pub mod shape;
pub mod stats;
pub mod timeline;
pub mod timing;
