// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Lossless integer conversions between the C sizes (`u32`, `unsigned
//! int`) and Rust's `usize` and `u64`, which `From` does not offer because
//! `usize` may be 16 bits on some target. The kernel builds rxe only for
//! 64-bit targets, where both are plain widenings: the one place that
//! explains the `as`.

/// A 32-bit count or length as a `usize` (widening: `usize` has 64 bits).
#[inline(always)]
pub(crate) const fn to_usize(v: u32) -> usize {
    v as usize
}

/// A buffer length as a 64-bit byte count (`usize` has at most 64 bits).
#[inline(always)]
pub(crate) const fn len64(n: usize) -> u64 {
    n as u64
}
