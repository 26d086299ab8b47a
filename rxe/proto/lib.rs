//! Host build of the kernel-independent protocol code, for `cargo test`.
//!
//! The kernel module includes `mod.rs` directly; this crate only wraps it so
//! the same files are unit-tested and fuzzed on the host.
#![no_std]

#[cfg(test)]
extern crate std;

#[path = "mod.rs"]
mod proto;
