// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Host build of the kernel-independent protocol code, for `cargo test`.
//!
//! The kernel module includes `mod.rs` directly; this crate only wraps it so
//! the same files are unit-tested and fuzzed on the host.
#![no_std]

#[cfg(test)]
extern crate std;

#[allow(dead_code, unused_imports)] // The kernel crate is the user; this wrapper only tests.
#[path = "mod.rs"]
mod proto;

/// The PCLMULQDQ CRC kernel lives in the wrapper layer (it is `unsafe` and
/// x86-only); it is built here too, to be checked against the table CRC.
#[cfg(all(test, target_arch = "x86_64"))]
#[path = "../kapi/clmul.rs"]
mod clmul;

/// The module path the kernel crate gives `proto`, for the files built in
/// both (`clmul.rs`).
#[cfg(all(test, target_arch = "x86_64"))]
mod rxe {
    pub(crate) use super::proto;
}
