//! mpkc: a compiler from MPK Runtime-V2 op contracts (`.mpk`) to the files a kernel engineer
//! writes by hand today: the host-safe `<op>_spec.h`, the `<op>.cuh` kernel, the page plan, and
//! the nvcc build of each for every declared target.
//!
//! Stages run one way: [`front`] (parse) → [`sema`] (resolve, evaluate, expand) → [`valid`]
//! (house-style invariants) → [`plan`] (SMEM pages, semaphore ordinals) → [`back`] (code
//! generation) → [`driver`] (nvcc). Every stage reports through [`diag`].

pub mod back;
pub mod build;
pub mod classify;
pub mod cli;
pub mod diag;
pub mod driver;
pub mod fmt;
pub mod front;
pub mod gpu;
pub mod ir;
pub mod lower;
pub mod lsp;
pub mod plan;
pub mod roofline;
pub mod sema;
pub mod span;
pub mod templates;
pub mod traffic;
pub mod valid;
pub mod wire;

/// mpkc's version, printed in every generated file's banner.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
