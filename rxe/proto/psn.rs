// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! 24-bit sequence number arithmetic for PSNs and MSNs.
//!
//! Both counters wrap at 2^24. Ordering is by the sign of the 24-bit
//! difference, so it is meaningful only while the two values are less than
//! 2^23 apart, which the protocol's window sizes guarantee.

#[cfg(test)]
use core::cmp::Ordering;

pub(crate) const PSN_BITS: u32 = 24;
pub(crate) const PSN_MASK: u32 = (1 << PSN_BITS) - 1;
/// Half the sequence space: the largest distance [`psn_cmp`] can order.
pub(crate) const PSN_HALF: u32 = 1 << (PSN_BITS - 1);

/// Keeps the low 24 bits.
#[cfg(test)] // Only the host tests use it.
pub(crate) const fn psn_mask(psn: u32) -> u32 {
    psn & PSN_MASK
}

/// `psn + n`, wrapping at 2^24.
pub(crate) const fn psn_add(psn: u32, n: u32) -> u32 {
    psn.wrapping_add(n) & PSN_MASK
}

/// `psn - n`, wrapping at 2^24.
pub(crate) const fn psn_sub(psn: u32, n: u32) -> u32 {
    psn.wrapping_sub(n) & PSN_MASK
}

/// Forward distance from `from` to `to` in 0..2^24.
pub(crate) const fn psn_distance(from: u32, to: u32) -> u32 {
    to.wrapping_sub(from) & PSN_MASK
}

/// Signed 24-bit difference `a - b`, in -2^23..2^23.
pub(crate) const fn psn_diff(a: u32, b: u32) -> i32 {
    // Move the 24-bit difference to the top of the word so its bit 23 becomes
    // the i32 sign bit (a bit-for-bit reinterpretation), then shift back with
    // sign extension.
    ((a.wrapping_sub(b) << 8) as i32) >> 8
}

/// Orders `a` against `b` by the sign of their 24-bit difference.
#[cfg(test)] // Only the host tests use it.
pub(crate) const fn psn_cmp(a: u32, b: u32) -> Ordering {
    let d = psn_diff(a, b);
    if d < 0 {
        Ordering::Less
    } else if d > 0 {
        Ordering::Greater
    } else {
        Ordering::Equal
    }
}

pub(crate) const fn psn_before(a: u32, b: u32) -> bool {
    psn_diff(a, b) < 0
}

pub(crate) const fn psn_after(a: u32, b: u32) -> bool {
    psn_diff(a, b) > 0
}

/// `psn` lies in the `len` PSNs starting at `start` (wrapping).
#[cfg(test)] // Only the host tests use it.
pub(crate) const fn psn_in_window(psn: u32, start: u32, len: u32) -> bool {
    psn_distance(start, psn) < len
}

/// `psn` lies in `first..=last` (wrapping), with `last` not before `first`.
#[cfg(test)] // Only the host tests use it.
pub(crate) const fn psn_in_range(psn: u32, first: u32, last: u32) -> bool {
    psn_distance(first, psn) <= psn_distance(first, last)
}

/// MSNs share the PSN space; these names keep call sites readable.
#[cfg(test)] // Only the host tests use it.
pub(crate) const fn msn_add(msn: u32, n: u32) -> u32 {
    psn_add(msn, n)
}

#[cfg(test)] // Only the host tests use it.
pub(crate) const fn msn_cmp(a: u32, b: u32) -> Ordering {
    psn_cmp(a, b)
}

#[cfg(test)] // Only the host tests use it.
pub(crate) const fn msn_diff(a: u32, b: u32) -> i32 {
    psn_diff(a, b)
}

#[cfg(test)]
#[path = "psn_tests.rs"]
mod tests;
