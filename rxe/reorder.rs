// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! A reorder buffer: RC packets that came beyond a gap in the PSNs, held
//! until the packets before them come, then taken in PSN order. The
//! responder holds requests in one (`responder`), the completer read
//! responses in another (`completer`).
//!
//! Go-back-N drops such packets (rdma_rxe does), and the requester then
//! sends them again after the one that was lost or late (for a read, the
//! responder sends its responses again). Held here, a reordered packet
//! costs nothing and a lost one little: the packets behind it are taken
//! as soon as it comes. A responder's ACK then tells the requester that
//! the rest of its resend is not needed (rxe_rs's requester skips it;
//! rdma_rxe's sends it, and finds it acknowledged as duplicates); the
//! responses of a read replayed from the gap are dropped as old. The wire
//! does not change.
//!
//! A buffer holds at most [`CAPACITY`] packets, of the [`WINDOW`] PSNs after
//! the expected one (room for a reordering of a few milliseconds at the
//! rates rxe reaches, and the requester's window of 128 PSNs after a
//! loss), in slots allocated at the first hold and searched by PSN (a
//! scan of at most [`CAPACITY`] slots per packet taken); all the buffers of a
//! device hold at most [`DEVICE_LIMIT`] packets (counted in the device's
//! `reorder_held`). A packet it cannot place is treated as rdma_rxe treats
//! it. A held packet that a resend overtook (its PSN is behind the
//! expected one by then) is dropped at the next look for the expected
//! PSN, or with the others when the QP resets or fails.

use core::sync::atomic::Ordering;

use kernel::alloc::flags::{__GFP_NOWARN, GFP_ATOMIC};
use kernel::prelude::*;

use crate::rxe::proto::psn::{psn_before, psn_diff};
use crate::rxe::recv::RxPacket;

/// Packets one buffer holds at most.
pub(crate) const CAPACITY: usize = 128;

/// How far beyond the expected PSN a held packet may be.
pub(crate) const WINDOW: i32 = 1024;

/// Packets the buffers of one device hold at most (each an skb of at
/// most one MTU of payload).
const DEVICE_LIMIT: u32 = 2048;

/// See the module documentation.
pub(crate) struct Reorder {
    /// Empty until the first hold; then [`CAPACITY`] slots, in no order.
    slots: KVec<Option<RxPacket>>,
    /// Slots that hold a packet.
    held: usize,
}

impl Reorder {
    pub(crate) const fn new() -> Self {
        Self {
            slots: KVec::new(),
            held: 0,
        }
    }

    /// Holds `pkt`, a packet beyond `next`, the PSN expected. Returns the
    /// number of packets held, or gives `pkt` back when it cannot hold it
    /// (beyond the window, full, no memory, the device at its limit).
    pub(crate) fn hold(&mut self, pkt: RxPacket, next: u32) -> Result<usize, RxPacket> {
        let psn = pkt.psn();
        let ahead = psn_diff(psn, next);
        if ahead <= 0 || ahead >= WINDOW {
            return Err(pkt);
        }
        if self.slots.is_empty() && self.allocate().is_err() {
            return Err(pkt);
        }
        // A second copy (the peer resent it): keep the first.
        if self.slots.iter().flatten().any(|p| p.psn() == psn) {
            pkt.consume();
            return Ok(self.held);
        }
        if self.held >= CAPACITY {
            self.drop_behind(next);
        }
        let Some(slot) = self.slots.iter_mut().find(|s| s.is_none()) else {
            return Err(pkt);
        };
        let count = &pkt.device().state().reorder_held;
        if count.fetch_add(1, Ordering::Relaxed) >= DEVICE_LIMIT {
            count.fetch_sub(1, Ordering::Relaxed);
            return Err(pkt);
        }
        *slot = Some(pkt);
        self.held += 1;
        Ok(self.held)
    }

    /// Whether it holds nothing: the per-packet test, inlined at the
    /// callers, which call [`Reorder::take`] only otherwise.
    #[inline(always)]
    pub(crate) fn is_empty(&self) -> bool {
        self.held == 0
    }

    /// The held packet with PSN `next`, taken out; drops those behind it.
    pub(crate) fn take(&mut self, next: u32) -> Option<RxPacket> {
        if self.held == 0 {
            return None;
        }
        self.drop_behind(next);
        let slot = self
            .slots
            .iter_mut()
            .find(|s| s.as_ref().is_some_and(|p| p.psn() == next))?;
        let pkt = slot.take()?;
        self.held -= 1;
        uncount(&pkt);
        Some(pkt)
    }

    /// Drops every held packet (RESET, ERR, destroy, a new PSN).
    pub(crate) fn clear(&mut self) {
        if self.held == 0 {
            return;
        }
        for slot in self.slots.iter_mut() {
            if let Some(pkt) = slot.take() {
                uncount(&pkt);
                drop(pkt);
            }
        }
        self.held = 0;
    }

    /// Drops the held packets a resend overtook: behind `next`.
    fn drop_behind(&mut self, next: u32) {
        for slot in self.slots.iter_mut() {
            if slot.as_ref().is_some_and(|p| psn_before(p.psn(), next)) {
                if let Some(pkt) = slot.take() {
                    self.held -= 1;
                    uncount(&pkt);
                    pkt.consume();
                }
            }
        }
    }

    /// The slots, allocated in the receive path (softirq): atomically,
    /// without a warning when memory is short (the packet is then
    /// dropped, as without the buffer).
    fn allocate(&mut self) -> Result {
        let flags = GFP_ATOMIC | __GFP_NOWARN;
        let mut slots = KVec::with_capacity(CAPACITY, flags)?;
        for _ in 0..CAPACITY {
            slots.push(None, flags)?;
        }
        self.slots = slots;
        Ok(())
    }
}

/// `pkt` leaves its device's count of held packets.
fn uncount(pkt: &RxPacket) {
    pkt.device()
        .state()
        .reorder_held
        .fetch_sub(1, Ordering::Relaxed);
}

impl Drop for Reorder {
    fn drop(&mut self) {
        self.clear();
    }
}
