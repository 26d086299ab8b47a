// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! An RC QP's reorder buffer: requests that came beyond a gap in the PSNs,
//! held until the requests before them come, then taken in PSN order.
//!
//! Go-back-N drops such requests (rdma_rxe does), and the requester then
//! sends them again after the one that was lost or late. Held here, a
//! reordered packet costs nothing and a lost one costs one resend: the
//! requests behind it are executed as soon as it comes, and their ACK
//! tells the requester that the rest of its resend is not needed (an
//! rxe_rs requester then skips it; rdma_rxe's sends it, and finds every
//! packet acknowledged as a duplicate). The wire does not change.
//!
//! A QP holds the [`SLOTS`] PSNs after the expected one at most, each in
//! the slot of its PSN modulo [`SLOTS`], allocated at the first hold; all
//! the QPs of a device hold at most [`DEVICE_LIMIT`] requests (counted in
//! the device's `reorder_held`). A request it cannot place is treated as
//! rdma_rxe treats it. A held request that the gap's resend overtook
//! (its PSN is behind the expected one by then) is dropped when its slot
//! is next looked at, or with the others when the QP resets or fails.

use core::sync::atomic::Ordering;

use kernel::alloc::flags::{__GFP_NOWARN, GFP_ATOMIC};
use kernel::prelude::*;

use crate::rxe::proto::psn::{psn_before, psn_diff};
use crate::rxe::recv::RxPacket;

/// PSNs after the expected one a QP holds requests for.
pub(super) const SLOTS: usize = 64;

/// Requests the QPs of one device hold at most (each an skb of at most
/// one MTU of payload).
const DEVICE_LIMIT: u32 = 2048;

/// See the module documentation.
pub(super) struct Reorder {
    /// Empty until the QP first holds a request; then [`SLOTS`] long.
    slots: KVec<Option<RxPacket>>,
    /// Slots that hold a request.
    held: usize,
}

impl Reorder {
    pub(super) const fn new() -> Self {
        Self {
            slots: KVec::new(),
            held: 0,
        }
    }

    /// Holds `pkt`, a request beyond `next`, the PSN the responder
    /// expects. Returns the number of requests held, or gives `pkt` back
    /// when it cannot hold it (beyond the slots, no memory, the device at
    /// its limit).
    pub(super) fn hold(&mut self, pkt: RxPacket, next: u32) -> Result<usize, RxPacket> {
        let psn = pkt.psn();
        let ahead = psn_diff(psn, next);
        if ahead <= 0 || ahead as usize >= SLOTS {
            return Err(pkt);
        }
        if self.slots.is_empty() && self.allocate().is_err() {
            return Err(pkt);
        }
        let Some(slot) = self.slots.get_mut(psn as usize % SLOTS) else {
            return Err(pkt);
        };
        match slot {
            // A second copy (the requester resent it): keep the first.
            Some(old) if old.psn() == psn => pkt.consume(),
            // Another PSN of this slot, in the window only once the
            // expected PSN had passed it: a request the resend overtook.
            Some(_) => {
                if let Some(old) = slot.replace(pkt) {
                    old.consume();
                }
            }
            None => {
                let count = &pkt.device().state().reorder_held;
                if count.fetch_add(1, Ordering::Relaxed) >= DEVICE_LIMIT {
                    count.fetch_sub(1, Ordering::Relaxed);
                    return Err(pkt);
                }
                *slot = Some(pkt);
                self.held += 1;
            }
        }
        Ok(self.held)
    }

    /// The held request with PSN `next`, taken out; drops one its slot
    /// holds that is behind `next`.
    #[inline]
    pub(super) fn take(&mut self, next: u32) -> Option<RxPacket> {
        if self.held == 0 {
            return None;
        }
        let slot = self.slots.get_mut(next as usize % SLOTS)?;
        let psn = slot.as_ref()?.psn();
        if psn != next && !psn_before(psn, next) {
            return None;
        }
        let pkt = slot.take()?;
        self.held -= 1;
        pkt.device()
            .state()
            .reorder_held
            .fetch_sub(1, Ordering::Relaxed);
        if psn == next {
            Some(pkt)
        } else {
            pkt.consume();
            None
        }
    }

    /// Drops every held request (RESET, ERR, a new receive PSN).
    pub(super) fn clear(&mut self) {
        if self.held == 0 {
            return;
        }
        for slot in self.slots.iter_mut() {
            if let Some(pkt) = slot.take() {
                pkt.device()
                    .state()
                    .reorder_held
                    .fetch_sub(1, Ordering::Relaxed);
                drop(pkt);
            }
        }
        self.held = 0;
    }

    /// The slots, allocated in the receive path (softirq): atomically,
    /// without a warning when memory is short (the request is then
    /// dropped, as without the buffer).
    fn allocate(&mut self) -> Result {
        let flags = GFP_ATOMIC | __GFP_NOWARN;
        let mut slots = KVec::with_capacity(SLOTS, flags)?;
        for _ in 0..SLOTS {
            slots.push(None, flags)?;
        }
        self.slots = slots;
        Ok(())
    }
}

impl Drop for Reorder {
    fn drop(&mut self) {
        self.clear();
    }
}
