//! Planning: the SMEM page plan (MPK's algorithm, [`pages`]), its walk over a worker's queue
//! ([`queue`]) and the semaphore ordinal table ([`sems`]).

pub mod pages;
pub mod queue;
pub mod sems;
