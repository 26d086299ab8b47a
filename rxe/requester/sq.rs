// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The SQ as the requester and completer track it: a shadow entry per slot
//! with what they learned about its WQE, and the validated WQE copies read
//! out of the (possibly user-writable) ring.

use kernel::prelude::*;

use crate::rxe::kapi::alloc;
use crate::rxe::proto::conv::to_usize;
use crate::rxe::proto::requester::{self as rl, WqeInfo};
use crate::rxe::proto::uapi::{self, SendFlags, SendWqe, SqLimits, WrOpcode};
use crate::rxe::qp::{self, QpShared};
use crate::rxe::queue::Queue;

/// What the engines know about one SQ slot.
#[derive(Clone, Copy)]
pub(crate) struct Shadow {
    pub(crate) info: WqeInfo,
    pub(crate) progress: rl::Progress,
}

impl Shadow {
    pub(super) const EMPTY: Shadow = Shadow {
        info: WqeInfo::new(WrOpcode::Send, qp::Type::Rc, SendFlags(0), 0, 0),
        progress: rl::Progress::posted(0, 0),
    };
}

/// The SQ as the engines track it.
pub(crate) struct Track {
    /// WQEs past the SQ consumer the requester has finished with
    /// (`req.wqe_index - consumer`).
    pub(crate) off: u32,
    /// WQEs past the consumer whose shadow entry is live.
    pub(crate) touched: u32,
    /// One entry per SQ slot: up to 2^20 + 1 of them, so kvmalloc'd.
    shadow: KVVec<Shadow>,
    /// Scratch copy of one SQ slot.
    pub(super) buf: KVec<u8>,
    /// The requester's copy of the WQE it works on: the packets after the
    /// first of a message neither copy nor parse the slot again, and all
    /// of them agree with the shadow entry whatever user space writes to
    /// the ring meanwhile.
    pub(super) cur: WqeCopy,
    /// The completer's copy of the head WQE, which read responses and
    /// atomic replies write into; forgotten when the head is retired.
    pub(super) head: WqeCopy,
}

/// Why [`WqeCopy::take`] gave no WQE: `None` when the SQ holds no such
/// WQE or its slot cannot be read, else the slot and what is wrong with
/// the WQE in it.
pub(super) type TakeError = Option<(u32, uapi::WqeError)>;

/// A validated copy of the WQE in one SQ slot, kept while that slot holds
/// the same WQE. The box is lent out while in use (`take`/`put`).
pub(super) struct WqeCopy {
    wqe: Option<KBox<SendWqe>>,
    /// The slot `wqe` was parsed from; `None` when it is stale.
    slot: Option<u32>,
    /// Counts the parses into `wqe`: the same count means the same copy.
    seq: u64,
}

impl WqeCopy {
    fn new() -> Result<Self> {
        Ok(Self {
            wqe: Some(KBox::new(SendWqe::empty(), GFP_KERNEL)?),
            slot: None,
            seq: 0,
        })
    }

    /// The parsed WQE `off` entries past the SQ consumer, with its slot
    /// and whether the SQ held more WQEs after it: the copy when it is of
    /// that slot and `reuse` allows, otherwise read from the ring through
    /// `buf` and parsed.
    #[inline]
    pub(super) fn take(
        &mut self,
        qp: &QpShared,
        buf: &mut KVec<u8>,
        off: u32,
        reuse: bool,
    ) -> Result<(u32, KBox<SendWqe>, bool), TakeError> {
        let mut wqe = self.wqe.take().ok_or(None)?;
        match self.fill(qp, buf, off, reuse, &mut wqe) {
            Ok((slot, more)) => Ok((slot, wqe, more)),
            Err(e) => {
                self.wqe = Some(wqe);
                Err(e)
            }
        }
    }

    /// [`WqeCopy::take`] into the lent box `wqe`: one hold of the SQ lock
    /// finds the slot and, unless the copy serves, copies the WQE out.
    #[inline]
    fn fill(
        &mut self,
        qp: &QpShared,
        buf: &mut KVec<u8>,
        off: u32,
        reuse: bool,
        wqe: &mut SendWqe,
    ) -> Result<(u32, bool), TakeError> {
        let (slot, more, len) = {
            let sq = qp.sq.lock();
            let q = &sq.queue;
            let count = q.count();
            if off >= count {
                return Err(None);
            }
            let slot = q.own_index().wrapping_add(off) % (q.capacity() + 1);
            let more = count - off > 1;
            if reuse && self.slot == Some(slot) {
                return Ok((slot, more));
            }
            self.slot = None;
            (slot, more, read_wqe(q, buf, slot).ok_or(None)?)
        };
        self.seq = self.seq.wrapping_add(1);
        parse_wqe(qp, buf.get(..len).unwrap_or(&[]), wqe).map_err(|e| Some((slot, e)))?;
        self.slot = Some(slot);
        Ok((slot, more))
    }

    /// Which copy the WQE [`WqeCopy::take`] last gave is: the next parse
    /// gives another number.
    pub(super) fn seq(&self) -> u64 {
        self.seq
    }

    /// Returns the box [`WqeCopy::take`] lent.
    pub(super) fn put(&mut self, wqe: KBox<SendWqe>) {
        self.wqe = Some(wqe);
    }

    /// The slot may hold another WQE from now on.
    pub(super) fn forget(&mut self) {
        self.slot = None;
    }
}

impl Track {
    /// For an SQ of `capacity` WQEs (`capacity + 1` slots).
    pub(super) fn new(capacity: u32) -> Result<Self> {
        let slots = to_usize(capacity) + 1;
        let shadow = KVVec::from_elem(Shadow::EMPTY, slots, alloc::caller_sized())?;
        let mut buf = KVec::new();
        buf.extend_with(uapi::send_wqe::LEN + limits_area(), 0u8, GFP_KERNEL)?;
        Ok(Self {
            off: 0,
            touched: 0,
            shadow,
            buf,
            cur: WqeCopy::new()?,
            head: WqeCopy::new()?,
        })
    }

    /// The shadow entry of SQ slot `slot`.
    pub(crate) fn shadow(&mut self, slot: u32) -> Option<&mut Shadow> {
        let n = self.shadow.len();
        if n == 0 {
            return None;
        }
        self.shadow.get_mut(to_usize(slot) % n)
    }

    /// The shadow entry of SQ slot `slot`, and `off` beside it.
    pub(super) fn shadow_and_off(&mut self, slot: u32) -> Option<(&mut Shadow, &mut u32)> {
        let n = self.shadow.len();
        if n == 0 {
            return None;
        }
        let sh = self.shadow.get_mut(to_usize(slot) % n)?;
        Some((sh, &mut self.off))
    }

    /// The consumer retired its head WQE.
    pub(crate) fn retired(&mut self) {
        self.off = self.off.saturating_sub(1);
        self.touched = self.touched.saturating_sub(1);
        self.head.forget();
    }

    /// The parsed head WQE, in slot `slot`; `None` if it cannot be read or
    /// is malformed. Give it back with [`Track::put_head`].
    pub(crate) fn take_head(&mut self, qp: &QpShared, slot: u32) -> Option<KBox<SendWqe>> {
        let (s, wqe, _) = self.head.take(qp, &mut self.buf, 0, true).ok()?;
        if s == slot {
            return Some(wqe);
        }
        self.head.put(wqe);
        None
    }

    /// Returns the box [`Track::take_head`] lent.
    pub(crate) fn put_head(&mut self, wqe: KBox<SendWqe>) {
        self.head.put(wqe);
    }
}

/// The largest SGE/inline area after a send WQE's fixed part.
fn limits_area() -> usize {
    to_usize(crate::rxe::proto::params::limits::MAX_INLINE_DATA)
}

/// The slot of the WQE `off` entries past the consumer of `q`, `None` when
/// the SQ holds no such WQE.
fn slot_of(q: &Queue, off: u32) -> Option<u32> {
    (off < q.count()).then(|| q.own_index().wrapping_add(off) % (q.capacity() + 1))
}

/// The slot of the WQE `off` entries past the SQ consumer.
fn slot_at(qp: &QpShared, off: u32) -> Option<u32> {
    slot_of(&qp.sq.lock().queue, off)
}

/// The slot of the head WQE, `None` when the SQ is empty.
pub(crate) fn head_slot(qp: &QpShared) -> Option<u32> {
    slot_at(qp, 0)
}

/// Retires the head WQE from the ring: reads its wr_id and moves the
/// consumer past it, under one hold of the SQ lock; with the wr_id, whether
/// that emptied the SQ. `None` (and nothing moved) when the SQ is empty or
/// the slot cannot be read.
pub(crate) fn pop_head(qp: &QpShared) -> Option<(u64, bool)> {
    let mut sq = qp.sq.lock();
    let slot = slot_of(&sq.queue, 0)?;
    let mut b = [0u8; 8];
    sq.queue.read_slot(slot, &mut b).ok()?;
    sq.queue.advance();
    Some((u64::from_ne_bytes(b), sq.queue.is_empty()))
}

/// Copies the WQE in `slot` of the SQ ring `q` into the start of `buf`;
/// returns the bytes copied.
///
/// Only the fixed part and the SGE or inline bytes its header names are
/// copied, not the whole slot; the parse checks the copy against itself.
fn read_wqe(q: &Queue, buf: &mut KVec<u8>, slot: u32) -> Option<usize> {
    let slot_len = q.elem_size().min(buf.len());
    let head = slot_len.min(uapi::send_wqe::LEN);
    q.read_slot(slot, buf.get_mut(..head)?).ok()?;
    let len = SendWqe::needed_len(buf.get(..head)?, slot_len);
    if len > head {
        q.read_slot_at(slot, head, buf.get_mut(head..len)?).ok()?;
    }
    Some(len)
}

/// Validates the slot copy `slot` into `wqe`.
fn parse_wqe(qp: &QpShared, slot: &[u8], wqe: &mut SendWqe) -> Result<(), uapi::WqeError> {
    let limits = SqLimits {
        qp_type: qp.qp_type,
        max_sge: qp.sq_caps.max_sge,
        max_inline: qp.sq_caps.max_inline,
        // A kernel QP's ring is written only by `post_send`.
        kernel: !qp.is_user,
    };
    wqe.parse_from(slot, &limits)
}
