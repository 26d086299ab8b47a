// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Host tests of [`super`] (`mr.rs`).

use super::*;
use std::vec::Vec;

#[test]
fn access_values_match_the_uapi() {
    assert_eq!(Access::REMOTE.bits(), 0xe);
    assert_eq!(Access::OPTIONAL.bits(), 0x3ff0_0000);
    // RXE_ACCESS_SUPPORTED_MR as the C enum computes it.
    assert_eq!(
        Access::SUPPORTED_MR.bits(),
        0xe | 1 | 0x10 | 0x40 | 0x100 | 0x200 | 0x3ff0_0000
    );
    assert_eq!(
        Access::SUPPORTED_MW.bits(),
        Access::SUPPORTED_MR.bits() | 0x20
    );
    assert!(Access::from_raw(7).contains(Access::REMOTE_READ));
    assert!(!Access::from_raw(1).contains(Access::REMOTE_READ));
}

#[test]
fn keys() {
    let k = make_key(0x1234, 0xab);
    assert_eq!(k, 0x0012_34ab);
    assert_eq!(key_index(k), 0x1234);
    assert_eq!(key_byte(k), 0xab);
    assert_eq!(with_key_byte(k, 0xffff_ff01), 0x0012_3401);
    assert!(same_index(k, 0x0012_3400));
    assert!(!same_index(k, 0x0012_3500));
    assert!(!rkey_is_mw(make_key(pool::MR.max_index, 0)));
    assert!(rkey_is_mw(make_key(pool::MW.min_index, 0)));
    assert!(rkey_is_mw(make_key(pool::MW.max_index, 0xff)));
    assert!(!rkey_is_mw(0));
}

#[test]
fn next_key_byte_differs_and_terminates() {
    assert_eq!(next_key_byte(None, || 5), 5);
    let mut seq = [5u8, 5, 9].into_iter();
    assert_eq!(next_key_byte(Some(5), || seq.next().unwrap_or(0)), 9);
    // A random source stuck on the old value still gives a new byte.
    assert_eq!(next_key_byte(Some(0xff), || 0xff), 0);
}

#[test]
fn reg_and_rereg_rules() {
    assert_eq!(check_reg_access(Access::from_raw(0xf)), Ok(()));
    assert_eq!(
        check_reg_access(Access::ZERO_BASED),
        Err(RuleError::NotSupported)
    );
    assert_eq!(
        check_reg_access(Access::HUGETLB),
        Err(RuleError::NotSupported)
    );
    assert_eq!(check_reg_access(Access::from_raw(1 << 20)), Ok(()));
    assert_eq!(check_rereg(rereg::PD, Access::HUGETLB), Ok(()));
    assert_eq!(
        check_rereg(rereg::ACCESS, Access::HUGETLB),
        Err(RuleError::NotSupported)
    );
    assert_eq!(
        check_rereg(rereg::TRANS | rereg::PD, Access::NONE),
        Err(RuleError::NotSupported)
    );
    assert_eq!(
        check_rereg(rereg::ACCESS | rereg::PD, Access::LOCAL_WRITE),
        Ok(())
    );
    assert!(is_writable(Access::MW_BIND));
    assert!(!is_writable(Access::REMOTE_READ));
}

#[test]
fn range_checks_never_overflow() {
    assert!(range_ok(0x1000, 0x100, 0x1000, 0x100));
    assert!(range_ok(0x1000, 0x100, 0x10ff, 1));
    assert!(!range_ok(0x1000, 0x100, 0x10ff, 2));
    assert!(!range_ok(0x1000, 0x100, 0xfff, 1));
    assert!(range_ok(0x1000, 0x100, 0x1100, 0));
    assert!(!range_ok(0x1000, 0x100, 0x1101, 0));
    assert!(!range_ok(u64::MAX - 1, 2, u64::MAX, u64::MAX));
    assert!(range_ok(u64::MAX - 1, 1, u64::MAX - 1, 1));
    assert!(range_ok(0, u64::MAX, u64::MAX - 8, 8));
    assert!(!range_ok(1, u64::MAX, 0, 1));
}

#[test]
fn user_layout_maps_iova_to_pages() {
    // An MR at 0x10_0123 of system pages: block 0 starts at 0x10_0000.
    let l = Layout::new(0x10_0123, 12, 12);
    assert_eq!(l.locate(0x10_0123), Some((0, 0x123)));
    assert_eq!(l.locate(0x10_1000), Some((1, 0)));
    assert_eq!(l.locate(0x0f_ffff), None);
    assert_eq!(l.last_block(0x10_0123, 0xedd), Some(0));
    assert_eq!(l.last_block(0x10_0123, 0xede), Some(1));
    assert_eq!(l.last_block(0x10_0123, 0), None);
}

#[test]
fn chunks_split_at_block_edges() {
    let l = Layout::new(0x1ff0, 12, 12);
    let c: Vec<_> = l.chunks(0x1ff0, 0x2020).collect::<Result<_, _>>().unwrap();
    assert_eq!(
        c,
        [
            Chunk {
                block: 0,
                offset: 0xff0,
                len: 0x10,
                pos: 0
            },
            Chunk {
                block: 1,
                offset: 0,
                len: 0x1000,
                pos: 0x10
            },
            Chunk {
                block: 2,
                offset: 0,
                len: 0x1000,
                pos: 0x1010
            },
            Chunk {
                block: 3,
                offset: 0,
                len: 0x10,
                pos: 0x2010
            },
        ]
    );
    assert_eq!(l.chunks(0x1ff0, 0).count(), 0);
    // Below the MR: one error, then nothing.
    let mut it = l.chunks(0x0, 4);
    assert_eq!(it.next(), Some(Err(())));
    assert_eq!(it.next(), None);
}

#[test]
fn chunks_at_the_top_of_the_address_space() {
    let l = Layout::new(u64::MAX - 0xfff, 12, 12);
    let c: Vec<_> = l.chunks(u64::MAX - 0xf, 0x10).collect();
    assert_eq!(
        c,
        [Ok(Chunk {
            block: 0,
            offset: 0xff0,
            len: 0x10,
            pos: 0
        })]
    );
    let c: Vec<_> = l.chunks(u64::MAX - 0xf, 0x11).collect();
    assert_eq!(c.len(), 2);
    assert_eq!(c[1], Err(()));
}

#[test]
fn fast_reg_page_sizes() {
    // 64 KiB MR pages on 4 KiB system pages: blocks are system pages
    // counted from the 64 KiB-aligned base.
    let l = Layout::new(0x3_2100, 16, 12);
    assert_eq!(l.locate(0x3_2100), Some((2, 0x100)));
    // 512-byte MR pages: blocks are MR pages, so a copy never runs past
    // one into memory the next entry does not describe.
    let l = Layout::new(0x1300, 9, 12);
    assert_eq!(l.locate(0x1300), Some((0, 0x100)));
    let c: Vec<_> = l.chunks(0x13f0, 0x20).map(Result::unwrap).collect();
    assert_eq!(
        c[0],
        Chunk {
            block: 0,
            offset: 0x1f0,
            len: 0x10,
            pos: 0
        }
    );
    assert_eq!(
        c[1],
        Chunk {
            block: 1,
            offset: 0,
            len: 0x10,
            pos: 0x10
        }
    );
    // Absurd shifts are clamped instead of overflowing.
    let l = Layout::new(5, 200, 200);
    assert_eq!(l.locate(5), Some((0, 5)));
}

#[test]
fn pages_spanned_matches_umem() {
    assert_eq!(pages_spanned(0x1000, 0x1000, 12), Some(1));
    assert_eq!(pages_spanned(0x1001, 0x1000, 12), Some(2));
    assert_eq!(pages_spanned(0x1fff, 1, 12), Some(1));
    assert_eq!(pages_spanned(0x1fff, 2, 12), Some(2));
    assert_eq!(pages_spanned(0, 0, 12), Some(0));
    assert_eq!(pages_spanned(u64::MAX - 5, 3, 12), None);
}

#[test]
fn atomics() {
    let cas = AtomicOp::CompareSwap {
        compare: 3,
        swap: 9,
    };
    assert_eq!(cas.apply(3), Some(9));
    assert_eq!(cas.apply(4), None);
    assert_eq!(AtomicOp::FetchAdd { add: 2 }.apply(u64::MAX), Some(1));
    assert!(atomic_aligned(0x1008));
    assert!(!atomic_aligned(0x1004));
}

#[test]
fn window_translation() {
    assert_eq!(
        window_target(0x1000, 0x100, false, 0x1010, 0x10),
        Some(0x1010)
    );
    assert_eq!(window_target(0x1000, 0x100, false, 0x10f8, 0x10), None);
    assert_eq!(window_target(0x1000, 0x100, true, 0x10, 0x10), Some(0x1010));
    assert_eq!(window_target(0x1000, 0x100, true, 0xf8, 0x10), None);
    assert_eq!(window_target(u64::MAX, 0x100, true, 0x10, 0x10), None);
}
