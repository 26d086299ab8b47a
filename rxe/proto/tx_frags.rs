// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Zero-copy transmit: which packets carry their payload as page fragments
//! of the source memory instead of a copy, and how the byte ranges of that
//! memory become the fragment list of one skb.
//!
//! A payload is handed over as the pieces the MR layout yields (each within
//! one page). Pieces that continue the previous one in the same page merge
//! into one fragment; the list is bounded, and a payload that needs more
//! fragments than that falls back to the copy.

use super::conv::to_usize;
use super::qp;

/// Smallest payload sent as fragments. Below it a copy is cheaper than the
/// page references and the trailer fragment: the bench's 4 KiB and 64 KiB
/// rows gain, messages of a few hundred bytes do not (measured under the
/// QEMU bench, where copies are dear, so the cut is set low).
pub(crate) const MIN_FRAG_PAYLOAD: usize = 512;

/// Fragments a payload may use; one more slot of the skb takes the pad
/// and ICRC trailer. `CONFIG_MAX_SKB_FRAGS` is at least 17.
pub(crate) const MAX_PAYLOAD_FRAGS: usize = 16;

/// Whether a packet of `qp_type` with `payload_len` bytes of registered
/// memory (not inline data) should reference that memory.
///
/// Only RC: its buffers stay the user's only after the ACK, which comes
/// after the skb has left. UC and UD complete as the packet is handed to
/// the IP layer, while the skb may still wait in a qdisc and the user could
/// already be writing the buffer again.
pub(crate) fn wants_frags(qp_type: qp::Type, payload_len: usize) -> bool {
    qp_type == qp::Type::Rc && payload_len >= MIN_FRAG_PAYLOAD
}

/// One fragment: a page handle, the offset in the page and the length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Frag<P> {
    pub(crate) page: P,
    pub(crate) offset: u32,
    pub(crate) len: u32,
}

/// What [`FragList::add`] did with a piece.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Added {
    /// Extended the last fragment: no new page reference is needed.
    Merged,
    /// A new fragment: the caller owes it a page reference.
    New,
    /// No room (or a length that does not fit): fall back to the copy.
    Full,
}

/// The fragments of one payload, in order.
#[derive(Debug)]
pub(crate) struct FragList<P> {
    frags: [Option<Frag<P>>; MAX_PAYLOAD_FRAGS],
    n: usize,
    total: usize,
}

impl<P: Copy + PartialEq> FragList<P> {
    pub(crate) const fn new() -> Self {
        Self {
            frags: [None; MAX_PAYLOAD_FRAGS],
            n: 0,
            total: 0,
        }
    }

    /// Appends bytes `[offset, offset + len)` of `page`.
    pub(crate) fn add(&mut self, page: P, offset: usize, len: usize) -> Added {
        let (Ok(offset), Ok(len)) = (u32::try_from(offset), u32::try_from(len)) else {
            return Added::Full;
        };
        let Some(total) = self.total.checked_add(to_usize(len)) else {
            return Added::Full;
        };
        if let Some(Some(last)) = self.n.checked_sub(1).and_then(|i| self.frags.get_mut(i)) {
            if last.page == page && last.offset.checked_add(last.len) == Some(offset) {
                if let Some(l) = last.len.checked_add(len) {
                    last.len = l;
                    self.total = total;
                    return Added::Merged;
                }
            }
        }
        match self.frags.get_mut(self.n) {
            Some(slot) => {
                *slot = Some(Frag { page, offset, len });
                self.n += 1;
                self.total = total;
                Added::New
            }
            None => Added::Full,
        }
    }

    /// Number of fragments.
    pub(crate) fn len(&self) -> usize {
        self.n
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Payload bytes in all fragments.
    pub(crate) fn total(&self) -> usize {
        self.total
    }

    #[cfg(test)]
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Frag<P>> {
        self.frags.iter().take(self.n).flatten()
    }

    /// Empties the list, handing each fragment to `f` in order.
    pub(crate) fn drain(&mut self, mut f: impl FnMut(Frag<P>)) {
        for slot in self.frags.iter_mut().take(self.n) {
            if let Some(fr) = slot.take() {
                f(fr);
            }
        }
        self.n = 0;
        self.total = 0;
    }
}

impl<P: Copy + PartialEq> Default for FragList<P> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::super::mr_logic::Layout;
    use super::*;

    #[test]
    fn rc_only_and_not_small() {
        assert!(wants_frags(qp::Type::Rc, 4096));
        assert!(wants_frags(qp::Type::Rc, MIN_FRAG_PAYLOAD));
        assert!(!wants_frags(qp::Type::Rc, MIN_FRAG_PAYLOAD - 1));
        assert!(!wants_frags(qp::Type::Uc, 4096));
        assert!(!wants_frags(qp::Type::Ud, 4096));
        assert!(!wants_frags(qp::Type::Gsi, 4096));
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
}
