// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Host tests of [`super`] (`tx_frags.rs`).

use super::super::mr::Layout;
use super::*;

#[test]
fn rc_only_and_not_small() {
    let min = MIN_FRAG_PAYLOAD;
    assert!(wants_frags(qp::Type::Rc, 4096, min));
    assert!(wants_frags(qp::Type::Rc, MIN_FRAG_PAYLOAD, min));
    assert!(!wants_frags(qp::Type::Rc, MIN_FRAG_PAYLOAD - 1, min));
    assert!(!wants_frags(qp::Type::Uc, 4096, min));
    assert!(!wants_frags(qp::Type::Ud, 4096, min));
    assert!(!wants_frags(qp::Type::Gsi, 4096, min));
}

#[test]
fn from_the_size_chosen() {
    assert!(!wants_frags(qp::Type::Rc, 1024, HW_FRAG_PAYLOAD));
    assert!(wants_frags(qp::Type::Rc, HW_FRAG_PAYLOAD, HW_FRAG_PAYLOAD));
    assert!(wants_frags(qp::Type::Rc, 4096, HW_FRAG_PAYLOAD));
    assert!(!wants_frags(qp::Type::Uc, 4096, HW_FRAG_PAYLOAD));
}

#[test]
fn contiguous_pieces_of_one_page_merge() {
    let mut l = FragList::new();
    assert_eq!(l.add(7u32, 100, 50), Added::New);
    assert_eq!(l.add(7, 150, 10), Added::Merged);
    // A gap, another page, then the first page again: all new.
    assert_eq!(l.add(7, 200, 10), Added::New);
    assert_eq!(l.add(8, 210, 10), Added::New);
    assert_eq!(l.add(7, 220, 10), Added::New);
    assert_eq!(l.len(), 4);
    assert_eq!(l.total(), 90);
    let v: std::vec::Vec<_> = l.iter().copied().collect();
    assert_eq!(
        v[0],
        Frag {
            page: 7,
            offset: 100,
            len: 60
        }
    );
}

#[test]
fn full_list_refuses_without_changing() {
    let mut l = FragList::new();
    for i in 0..MAX_PAYLOAD_FRAGS {
        assert_eq!(l.add(i, 0, 8), Added::New);
    }
    assert_eq!(l.add(99usize, 0, 8), Added::Full);
    assert_eq!(l.len(), MAX_PAYLOAD_FRAGS);
    assert_eq!(l.total(), 8 * MAX_PAYLOAD_FRAGS);
    // Merging still works when full.
    assert_eq!(l.add(MAX_PAYLOAD_FRAGS - 1, 8, 8), Added::Merged);
    let mut seen = 0;
    l.drain(|_| seen += 1);
    assert_eq!(seen, MAX_PAYLOAD_FRAGS);
    assert!(l.is_empty());
    assert_eq!(l.total(), 0);
}

/// An MTU payload at any offset of a 4 KiB-page MR: at most two
/// fragments, lengths adding up, each inside its page.
#[test]
fn mtu_payloads_split_into_page_fragments() {
    for iova in [0x1000u64, 0x1001, 0x1ff0, 0x7fff_f000 + 123] {
        let layout = Layout::new(iova & !0xfff, 12, 12);
        for len in [512usize, 1024, 4096] {
            let mut l = FragList::new();
            for c in layout.chunks(iova, len) {
                let c = c.unwrap();
                assert_ne!(l.add(c.block, c.offset, c.len), Added::Full);
            }
            assert!(l.len() <= 2);
            assert_eq!(l.total(), len);
            for f in l.iter() {
                assert!(f.offset as usize + f.len as usize <= 4096);
            }
        }
    }
}

#[test]
fn small_blocks_can_overflow_the_list() {
    // A fast-reg MR with 256-byte blocks, each on a page of its own.
    let layout = Layout::new(0, 8, 12);
    let mut l = FragList::new();
    let mut full = false;
    for c in layout.chunks(0, 8192) {
        let c = c.unwrap();
        if l.add(c.block, c.offset, c.len) == Added::Full {
            full = true;
            break;
        }
    }
    assert!(full);
}
