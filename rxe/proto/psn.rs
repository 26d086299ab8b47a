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
mod tests {
    use super::*;

    /// The C driver's comparison, written out for cross-checking.
    fn c_psn_compare(a: u32, b: u32) -> i32 {
        (a.wrapping_sub(b) << 8) as i32
    }

    #[test]
    fn add_sub_wrap() {
        assert_eq!(psn_add(PSN_MASK, 1), 0);
        assert_eq!(psn_add(PSN_MASK - 1, 5), 3);
        assert_eq!(psn_sub(0, 1), PSN_MASK);
        assert_eq!(psn_sub(3, 5), PSN_MASK - 1);
        assert_eq!(psn_add(0xff12_3456, 0), 0x12_3456);
        assert_eq!(psn_mask(0x0100_0000), 0);
        assert_eq!(msn_add(PSN_MASK, 2), 1);
    }

    #[test]
    fn compare_across_wrap() {
        assert_eq!(psn_cmp(0, PSN_MASK), Ordering::Greater);
        assert_eq!(psn_cmp(PSN_MASK, 0), Ordering::Less);
        assert_eq!(psn_cmp(5, 5), Ordering::Equal);
        assert_eq!(psn_cmp(10, 5), Ordering::Greater);
        assert!(psn_before(PSN_MASK - 10, 10));
        assert!(psn_after(10, PSN_MASK - 10));
        assert_eq!(psn_diff(0, PSN_MASK), 1);
        assert_eq!(psn_diff(PSN_MASK, 0), -1);
        assert_eq!(psn_diff(PSN_HALF, 0), -(PSN_HALF as i32));
        assert_eq!(psn_diff(PSN_HALF - 1, 0), (PSN_HALF - 1) as i32);
        assert_eq!(msn_cmp(1, 0), Ordering::Greater);
        assert_eq!(msn_diff(0, 1), -1);
    }

    #[test]
    fn agrees_with_c_compare() {
        let mut x = 0x9e37_79b9u32;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let a = x & PSN_MASK;
            let b = x.rotate_left(11) & PSN_MASK;
            assert_eq!(psn_cmp(a, b), c_psn_compare(a, b).cmp(&0), "{a:#x} {b:#x}");
            assert_eq!(psn_add(b, psn_distance(b, a)), a);
            assert_eq!(psn_sub(a, psn_diff(a, b) as u32), b);
        }
    }

    #[test]
    fn windows() {
        assert!(psn_in_window(PSN_MASK, PSN_MASK - 1, 3));
        assert!(psn_in_window(0, PSN_MASK - 1, 3));
        assert!(!psn_in_window(1, PSN_MASK - 1, 3));
        assert!(!psn_in_window(5, 5, 0));
        assert!(psn_in_range(0, PSN_MASK, 2));
        assert!(psn_in_range(2, PSN_MASK, 2));
        assert!(!psn_in_range(3, PSN_MASK, 2));
        assert!(!psn_in_range(PSN_MASK - 1, PSN_MASK, 2));
        assert!(psn_in_range(7, 7, 7));
    }
}
