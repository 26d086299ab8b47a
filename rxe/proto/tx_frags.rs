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
/// page references and the trailer fragment even where copies are dearest
/// (under QEMU's TCG, where the bench's 4 KiB and 64 KiB rows gain from
/// fragments and messages of a few hundred bytes do not).
pub(crate) const MIN_FRAG_PAYLOAD: usize = 512;

/// Smallest payload sent as fragments on a real CPU. There a copy runs
/// about a third of an instruction per byte (the `memcpy`, and the CRC's
/// pass over the copy, which fragments need too), fragments about 600
/// instructions a packet whatever their size (page references, a trailer
/// fragment, longer scatter lists): 1 KiB payloads are cheaper copied, 4
/// KiB ones as fragments.
pub(crate) const HW_FRAG_PAYLOAD: usize = 2048;

/// Fragments a payload may use; one more slot of the skb takes the pad
/// and ICRC trailer. `CONFIG_MAX_SKB_FRAGS` is at least 17.
pub(crate) const MAX_PAYLOAD_FRAGS: usize = 16;

/// Whether a packet of `qp_type` with `payload_len` bytes of registered
/// memory (not inline data) should reference that memory, when payloads
/// from `min` bytes on are sent as fragments.
///
/// Only RC: its buffers stay the user's only after the ACK, which comes
/// after the skb has left. UC and UD complete as the packet is handed to
/// the IP layer, while the skb may still wait in a qdisc and the user could
/// already be writing the buffer again.
pub(crate) fn wants_frags(qp_type: qp::Type, payload_len: usize, min: usize) -> bool {
    qp_type == qp::Type::Rc && payload_len >= min
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
#[path = "tx_frags_tests.rs"]
mod tests;
