// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Bindings generated at build time from the headers of the target kernel.
//!
//! Private to the driver and used by its unsafe layers only: `rxe::kapi`,
//! which builds the safe wrappers the driver logic is written against; the
//! C entry points in `rxe::ops`, which take the core's structures as the
//! C ABI hands them over; and the in-kernel self-test (`rxe::selftest`).
//! The driver logic above them does not name the bindings.
#![allow(
    clippy::all,
    clippy::as_underscore,
    clippy::cast_lossless,
    clippy::ptr_as_ptr,
    clippy::ptr_cast_constness,
    clippy::ref_as_ptr,
    clippy::undocumented_unsafe_blocks,
    dead_code,
    improper_ctypes,
    missing_docs,
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    unreachable_pub,
    unsafe_op_in_unsafe_fn
)]

use kernel::ffi;
// 7.x's bindgen parameters derive `MaybeZeroable` on every struct.
#[cfg(rxe_kernel_7)]
use pin_init::MaybeZeroable;

// The kernel's bindgen parameters block these so they map to Rust's own sizes.
type __kernel_size_t = usize;
type __kernel_ssize_t = isize;
type __kernel_ptrdiff_t = isize;

include!("bindings_generated.rs");
