//! Planning: the SMEM page plan (MPK's algorithm, [`pages`]) and the semaphore ordinal table
//! ([`sems`]).

pub mod pages;
pub mod sems;
