// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! A bounded FIFO, for packets waiting for the responder or the completer.
//!
//! It starts small and doubles (with an atomic allocation, as pushes come
//! from softirq under a `SpinLockBh`) up to its limit, so an idle QP costs
//! little and a busy one queues a burst instead of dropping it. Past the
//! limit, or when the allocation fails, a push gives the item back. The
//! allocation does not warn when it fails: the larger sizes are
//! multi-page, which an atomic allocation may well not find, a peer's
//! burst decides when they are asked for, and the caller's answer (drop
//! the packet, the peer retransmits) is the expected one. The index
//! keeping is `proto::ring`.

use kernel::alloc::{
    flags::{__GFP_NOWARN, GFP_ATOMIC},
    Flags,
};
use kernel::prelude::*;

use crate::rxe::proto::ring::Ring;

pub(crate) struct Fifo<T> {
    slots: KVec<Option<T>>,
    ring: Ring,
    /// The most slots it grows to.
    limit: usize,
}

impl<T> Fifo<T> {
    /// An empty FIFO of `initial` slots that grows to at most `limit`.
    pub(crate) fn new(initial: usize, limit: usize, flags: Flags) -> Result<Self> {
        let mut slots = KVec::with_capacity(initial, flags)?;
        for _ in 0..initial {
            slots.push(None, flags)?;
        }
        Ok(Self {
            slots,
            ring: Ring::new(),
            limit: limit.max(initial),
        })
    }

    /// Appends `item`, growing the FIFO when it is full and below its
    /// limit; gives the item back when it cannot take it.
    pub(crate) fn push(&mut self, item: T) -> Result<(), T> {
        if self.ring.len() >= self.slots.len() && self.grow(GFP_ATOMIC | __GFP_NOWARN).is_err() {
            return Err(item);
        }
        self.ring.push(&mut self.slots, item)
    }

    /// Twice the slots (at most `limit`), the items kept in order.
    fn grow(&mut self, flags: Flags) -> Result {
        let cap = self.slots.len().saturating_mul(2).max(1).min(self.limit);
        if cap <= self.slots.len() {
            return Err(ENOSPC);
        }
        let mut slots = KVec::with_capacity(cap, flags)?;
        for _ in 0..cap {
            // Within the capacity just reserved: cannot fail.
            slots.push(None, flags)?;
        }
        let mut ring = Ring::new();
        while let Some(item) = self.ring.pop(&mut self.slots) {
            // `cap` exceeds the old length, so every item fits.
            if let Err(item) = ring.push(&mut slots, item) {
                drop(item);
            }
        }
        self.slots = slots;
        self.ring = ring;
        Ok(())
    }

    /// Removes the oldest item.
    pub(crate) fn pop(&mut self) -> Option<T> {
        self.ring.pop(&mut self.slots)
    }

    /// Drops every item.
    pub(crate) fn clear(&mut self) {
        self.ring.clear(&mut self.slots);
    }

    /// Whether no item is queued.
    pub(crate) fn is_empty(&self) -> bool {
        self.ring.len() == 0
    }

    /// Items queued.
    pub(crate) fn len(&self) -> usize {
        self.ring.len()
    }

    /// Slots it has now.
    #[cfg(rxe_rs_selftest)]
    pub(crate) fn capacity(&self) -> usize {
        self.slots.len()
    }
}
