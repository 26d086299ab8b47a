//! A fixed-capacity FIFO, for packets waiting for the responder or the
//! completer: allocated once, so pushing (in softirq, under a
//! `SpinLockBh`) never allocates. The index keeping is `proto::ring`.

use kernel::{alloc::Flags, prelude::*};

use crate::rxe::proto::ring::Ring;

pub(crate) struct Fifo<T> {
    slots: KVec<Option<T>>,
    ring: Ring,
}

impl<T> Fifo<T> {
    /// An empty FIFO of `capacity` items.
    pub(crate) fn new(capacity: usize, flags: Flags) -> Result<Self> {
        let mut slots = KVec::with_capacity(capacity, flags)?;
        for _ in 0..capacity {
            slots.push(None, flags)?;
        }
        Ok(Self { slots, ring: Ring::new() })
    }

    /// Appends `item`, or gives it back when the FIFO is full.
    pub(crate) fn push(&mut self, item: T) -> Result<(), T> {
        self.ring.push(&mut self.slots, item)
    }

    /// Removes the oldest item.
    pub(crate) fn pop(&mut self) -> Option<T> {
        self.ring.pop(&mut self.slots)
    }

    /// Drops every item.
    pub(crate) fn clear(&mut self) {
        self.ring.clear(&mut self.slots);
    }
}
