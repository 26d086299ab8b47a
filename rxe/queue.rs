// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The rxe ring: a power-of-two array of fixed-size slots after a header
//! holding the producer and consumer indices, shared with user space
//! (`struct rxe_queue_buf` of the uapi) or private to kernel verbs users.
//!
//! Each index has one owner. The driver keeps its own copy of the index it
//! owns and only ever publishes it; the index it does not own is read from
//! shared memory and masked before any use, since user space may have
//! written anything there.

use kernel::{prelude::*, sync::Arc};

use crate::rxe::kapi::vmbuf::VmBuf;
use crate::rxe::proto::uapi::{queue_buf as hdr, QueueGeometry};

/// Which side of the ring the driver is.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// The driver produces (CQ; RQ/SQ of kernel QPs post through the driver too).
    Producer,
    /// The driver consumes (SQ, RQ, SRQ).
    Consumer,
}

pub(crate) struct Queue {
    buf: Arc<VmBuf>,
    geo: QueueGeometry,
    role: Role,
    /// The driver's private copy of the index it owns.
    own: u32,
}

impl Queue {
    /// A ring of the given geometry. `num_elem` entries of `elem_size`
    /// bytes fit in `QueueGeometry::new(num_elem, elem_size, ..)`.
    pub(crate) fn new(geo: QueueGeometry, role: Role) -> Result<Self> {
        let buf = Arc::new(VmBuf::new(geo.buf_size())?, GFP_KERNEL)?;
        let q = Self {
            buf,
            geo,
            role,
            own: 0,
        };
        q.buf
            .write(hdr::LOG2_ELEM_SIZE, &geo.log2_elem_size().to_ne_bytes())?;
        q.buf
            .write(hdr::INDEX_MASK, &geo.index_mask().to_ne_bytes())?;
        Ok(q)
    }

    pub(crate) fn buf(&self) -> &Arc<VmBuf> {
        &self.buf
    }

    pub(crate) fn elem_size(&self) -> usize {
        self.geo.elem_size()
    }

    /// Entries the ring holds.
    pub(crate) fn capacity(&self) -> u32 {
        self.geo.capacity()
    }

    fn slot_off(&self, index: u32) -> usize {
        self.geo.slot_range(index).start
    }

    /// The index owned by the other side, read fresh and masked.
    fn theirs(&self) -> u32 {
        let off = match self.role {
            Role::Producer => hdr::CONSUMER_INDEX,
            Role::Consumer => hdr::PRODUCER_INDEX,
        };
        // The offset is a fixed, aligned header field: the load cannot fail.
        self.geo
            .mask(self.buf.load_acquire(off).unwrap_or(self.own))
    }

    fn publish(&self) {
        let off = match self.role {
            Role::Producer => hdr::PRODUCER_INDEX,
            Role::Consumer => hdr::CONSUMER_INDEX,
        };
        let _ = self.buf.store_release(off, self.own);
    }

    /// Entries between consumer and producer.
    pub(crate) fn count(&self) -> u32 {
        let (prod, cons) = match self.role {
            Role::Producer => (self.own, self.theirs()),
            Role::Consumer => (self.theirs(), self.own),
        };
        self.geo.count(prod, cons)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.count() == 0
    }

    pub(crate) fn is_full(&self) -> bool {
        self.count() == self.geo.capacity()
    }

    /// The driver's own index (the next slot it produces into or consumes).
    pub(crate) fn own_index(&self) -> u32 {
        self.own
    }

    /// Copies the slot at `index` (masked) into `out`.
    pub(crate) fn read_slot(&self, index: u32, out: &mut [u8]) -> Result {
        if out.len() > self.elem_size() {
            return Err(EINVAL);
        }
        self.buf.read(self.slot_off(index), out)
    }

    /// Copies `out.len()` bytes from `offset` into the slot at `index`
    /// (masked) into `out`.
    pub(crate) fn read_slot_at(&self, index: u32, offset: usize, out: &mut [u8]) -> Result {
        let fits = offset
            .checked_add(out.len())
            .is_some_and(|end| end <= self.elem_size());
        if !fits {
            return Err(EINVAL);
        }
        self.buf.read(self.slot_off(index) + offset, out)
    }

    /// Writes `data` into the slot at `index` (masked).
    pub(crate) fn write_slot(&self, index: u32, data: &[u8]) -> Result {
        if data.len() > self.elem_size() {
            return Err(EINVAL);
        }
        self.buf.write(self.slot_off(index), data)
    }

    /// Producer: writes `data` into the next slot and publishes it.
    pub(crate) fn produce(&mut self, data: &[u8]) -> Result {
        if self.role != Role::Producer || self.is_full() {
            return Err(ENOSPC);
        }
        self.write_slot(self.own, data)?;
        self.own = self.geo.next(self.own);
        self.publish();
        Ok(())
    }

    /// Consumer: copies `out.len()` bytes at `offset` of the head entry into
    /// `out`, without consuming it; `Ok(false)` when the queue is empty.
    pub(crate) fn peek_at(&self, offset: usize, out: &mut [u8]) -> Result<bool> {
        if self.role != Role::Consumer || self.is_empty() {
            return Ok(false);
        }
        self.read_slot_at(self.own, offset, out)?;
        Ok(true)
    }

    /// Consumer: releases the head entry back to the producer.
    pub(crate) fn advance(&mut self) {
        if self.role == Role::Consumer && !self.is_empty() {
            self.own = self.geo.next(self.own);
            self.publish();
        }
    }

    /// The driver as producer on behalf of a kernel user (post_recv of a
    /// kernel QP, say): the index lives in shared memory only we write.
    pub(crate) fn kernel_produce(&mut self, data: &[u8]) -> Result {
        // For a ring the driver consumes, its producer index is "theirs";
        // kernel users have no user space to race with, so it is stable.
        let prod = self.theirs();
        if self.geo.is_full(prod, self.own) {
            return Err(ENOMEM);
        }
        self.write_slot(prod, data)?;
        self.buf
            .store_release(hdr::PRODUCER_INDEX, self.geo.next(prod))
    }

    /// The driver as consumer on behalf of a kernel user (poll_cq of a
    /// kernel CQ): takes the head entry the driver itself produced.
    pub(crate) fn kernel_consume(&mut self, out: &mut [u8]) -> Result<bool> {
        let cons = self.theirs();
        if cons == self.own {
            return Ok(false);
        }
        self.read_slot(cons, out)?;
        self.buf
            .store_release(hdr::CONSUMER_INDEX, self.geo.next(cons))?;
        Ok(true)
    }

    /// Empties the ring (QP reset): both indices back to zero.
    pub(crate) fn reset(&mut self) -> Result {
        self.own = 0;
        self.buf.store_release(hdr::PRODUCER_INDEX, 0)?;
        self.buf.store_release(hdr::CONSUMER_INDEX, 0)
    }

    /// Moves the live entries of `self` into `new` (resize), oldest first.
    /// Callers hold the ring's spinlock, so this copies through a small
    /// stack buffer instead of allocating.
    pub(crate) fn drain_into(&mut self, new: &mut Queue, elem_len: usize) -> Result {
        const CHUNK: usize = 64;
        let mut tmp = [0u8; CHUNK];
        if elem_len > self.elem_size() || elem_len > new.elem_size() {
            return Err(EINVAL);
        }
        let n = self.count();
        if n > new.capacity() {
            return Err(EINVAL);
        }
        let start = match self.role {
            Role::Producer => self.theirs(),
            Role::Consumer => self.own,
        };
        for i in 0..n {
            let (src, dst) = (self.slot_off(start.wrapping_add(i)), new.slot_off(i));
            let mut done = 0;
            while done < elem_len {
                let part = &mut tmp[..(elem_len - done).min(CHUNK)];
                self.buf.read(src + done, part)?;
                new.buf.write(dst + done, part)?;
                done += part.len();
            }
        }
        match new.role {
            Role::Producer => {
                new.own = n;
                new.publish();
            }
            Role::Consumer => {
                new.buf.store_release(hdr::PRODUCER_INDEX, n)?;
            }
        }
        Ok(())
    }
}
