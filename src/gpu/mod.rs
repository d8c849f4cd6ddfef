//! `mpkc verify` on the GPU: the host side of mpkc's harness. It mirrors the runtime structures
//! the harness reads ([`abi`]), talks to the CUDA driver through cudarc with dynamic loading
//! ([`device`]; mpkc builds and tests where no driver exists), makes inputs and poisoned outputs
//! ([`data`]), computes float64 references ([`reference`]) or runs a contract's Python one
//! ([`python`]), runs a case ([`run`]) and compares
//! ([`compare`]).

pub mod abi;
pub mod bench;
pub mod chain_reference;
pub mod compare;
pub mod data;
pub mod device;
mod outputs;
pub mod paged;
pub mod python;
pub mod queue;
mod ref_compare;
pub mod reference;
pub mod routed;
pub mod run;
mod step1;
pub mod tokens;

pub use device::{Gpu, GpuError};
