// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Host tests of [`super`] (`odp.rs`).

use super::*;

#[test]
fn advice_values() {
    assert_eq!(Advice::from_raw(0), Some(Advice::Prefetch));
    assert_eq!(Advice::from_raw(1), Some(Advice::PrefetchWrite));
    assert_eq!(Advice::from_raw(2), Some(Advice::PrefetchNoFault));
    assert_eq!(Advice::from_raw(3), None);
    assert!(!Advice::Prefetch.write() && Advice::Prefetch.fault());
    assert!(Advice::PrefetchWrite.write() && Advice::PrefetchWrite.fault());
    assert!(!Advice::PrefetchNoFault.fault());
}

#[test]
fn implicit_refused() {
    assert_eq!(check_reg(0, u64::MAX, 0), Err(RegError::Implicit));
    assert_eq!(check_reg(0, u64::MAX, 5), Err(RegError::Implicit));
    assert_eq!(check_reg(0, 4096, 0), Ok(()));
    assert_eq!(check_reg(0x1000, u64::MAX, 0), Ok(()));
    assert_eq!(CAPS.general & general::IMPLICIT, 0);
}

#[test]
fn user_va_translation() {
    let s = Span {
        iova: 0x10_0000,
        start: 0x7f00_0000_1234,
        length: 0x3000,
    };
    assert_eq!(s.user_va(0x10_0000, 1), Some(0x7f00_0000_1234));
    assert_eq!(s.user_va(0x10_2fff, 1), Some(0x7f00_0000_4233));
    assert_eq!(s.user_va(0x10_0000, 0x3000), Some(0x7f00_0000_1234));
    assert_eq!(s.user_va(0x10_0000, 0x3001), None);
    assert_eq!(s.user_va(0xf_ffff, 1), None);
    assert_eq!(s.user_va(u64::MAX, 2), None);
    let top = Span {
        iova: 0,
        start: u64::MAX - 1,
        length: 0x10,
    };
    assert_eq!(top.user_va(4, 1), None);
}

#[test]
fn page_ranges() {
    assert_eq!(pages(0x1000, 12, 0x1000, 0), Some(0..0));
    assert_eq!(pages(0x1000, 12, 0x1000, 1), Some(0..1));
    assert_eq!(pages(0x1000, 12, 0x1fff, 2), Some(0..2));
    assert_eq!(pages(0x1000, 12, 0x2000, 0x1000), Some(1..2));
    assert_eq!(pages(0x1000, 12, 0x2001, 0x1000), Some(1..3));
    assert_eq!(pages(0x1000, 12, 0xfff, 1), None);
    assert_eq!(pages(0, 12, u64::MAX, 2), None);
    assert_eq!(pages(0, 64, 0, 1), None);
    assert_eq!(pages(0, 21, 0x20_0000, 0x40_0000), Some(1..3));
}

#[test]
fn retries_are_bounded() {
    let mut r = Retry::new();
    for _ in 0..MAX_FAULT_RETRIES {
        assert_eq!(r.on_absent(), Next::Fault);
    }
    assert_eq!(r.on_absent(), Next::GiveUp);
    assert_eq!(r.on_absent(), Next::GiveUp);
    r.on_success();
    assert_eq!(r.on_absent(), Next::Fault);
}

#[test]
fn tables_fit_kvmalloc_and_memory() {
    const GIB: u64 = 1 << 30;
    // 64 GiB of 4 KiB pages: 128 MiB of 8-byte entries.
    assert!(table_fits(16 << 20, 8, 2 * GIB));
    assert!(!table_fits(16 << 20, 8, 64 << 20));
    // Up to INT_MAX bytes, whatever the memory.
    assert!(table_fits(MAX_TABLE_BYTES / 8, 8, u64::MAX));
    assert!(!table_fits(MAX_TABLE_BYTES / 8 + 1, 8, u64::MAX));
    // 2 TiB of pages: 4 GiB of entries.
    assert!(!table_fits(1 << 29, 8, 24 * GIB));
    assert!(!table_fits(u64::MAX / 4, 8, u64::MAX));
    assert!(table_fits(0, 8, 0));
}
