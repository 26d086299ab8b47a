// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Host tests of [`super`] (`psn.rs`).

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
