//! `mpkc bench`: production builds timed on the GPU as the runtime runs them (the whole op, its
//! tasks spread over every SM): the linears side by side with cuBLAS / cuBLASLt on the same
//! shapes and data, in one process; the consumer ops beside PyTorch eager on the same data, in a
//! process of its own (docs/bench.md).
//!
//! [`shape`] reads a linear's extents through one accessor and counts the bytes a case moves,
//! [`consumer`] recognises the consumer ops with an eager equivalent, [`stats`] holds the
//! arithmetic (median, TB/s, share of the copy ceiling, speedup, fixed cost), [`queue`] deals
//! the tasks over the CTAs, [`timing`] times on the device (events, graph replay,
//! `%globaltimer` stamps, the copy ceiling), [`setup`] makes a case's device state, [`cublas`]
//! and [`cublaslt`] are the linears' competitors (bf16, block-scaled fp8) and [`eager`] the
//! consumer ops', [`case`] runs one case, [`persistent`] takes the stamped samples and the
//! fixed cost, and [`report`] is the table and the `--json` document.

pub mod case;
mod competitor;
pub mod consumer;
pub mod cublas;
pub mod cublaslt;
pub mod eager;
pub mod persistent;
pub mod queue;
pub mod report;
mod setup;
pub mod shape;
pub mod stats;
pub mod timeline;
pub mod timing;
