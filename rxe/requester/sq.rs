// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The SQ as the requester and completer track it: a shadow entry per slot
//! with what they learned about its WQE, and the validated WQE copies read
//! out of the (possibly user-writable) ring.

use kernel::prelude::*;

use crate::rxe::kernel::alloc;
use crate::rxe::proto::conv::to_usize;
use crate::rxe::proto::req_rules::{self as rl, WqeInfo};
use crate::rxe::proto::uapi::{self, SendFlags, SendWqe, SqLimits, WrOpcode};
use crate::rxe::qp::{self, Shared};
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

/// A validated copy of the WQE in one SQ slot, kept while that slot holds
/// the same WQE. The box is lent out while in use (`take`/`put`).
pub(super) struct WqeCopy {
    wqe: Option<KBox<SendWqe>>,
    /// The slot `wqe` was parsed from; `None` when it is stale.
    slot: Option<u32>,
}

impl WqeCopy {
    fn new() -> Result<Self> {
        Ok(Self {
            wqe: Some(KBox::new(SendWqe::empty(), GFP_KERNEL)?),
            slot: None,
        })
    }

    /// The parsed WQE `off` entries past the SQ consumer, which lies in
    /// `slot`: the copy when it is of `slot` and `reuse` allows, otherwise
    /// read from the ring through `buf` and parsed. `Err(None)` when the
    /// slot cannot be read, `Err(Some(_))` when its WQE is malformed.
    #[inline]
    pub(super) fn take(
        &mut self,
        qp: &Shared,
        buf: &mut KVec<u8>,
        off: u32,
        slot: u32,
        reuse: bool,
    ) -> Result<KBox<SendWqe>, Option<uapi::WqeError>> {
        let mut wqe = self.wqe.take().ok_or(None)?;
        if reuse && self.slot == Some(slot) {
            return Ok(wqe);
        }
        self.slot = None;
        let parsed = match read_wqe(qp, buf, off) {
            Some((s, len)) if s == slot => {
                parse_wqe(qp, buf.get(..len).unwrap_or(&[]), &mut wqe).map_err(Some)
            }
            _ => Err(None),
        };
        match parsed {
            Ok(()) => {
                self.slot = Some(slot);
                Ok(wqe)
            }
            Err(e) => {
                self.wqe = Some(wqe);
                Err(e)
            }
        }
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

    /// The consumer retired its head WQE.
    pub(crate) fn retired(&mut self) {
        self.off = self.off.saturating_sub(1);
        self.touched = self.touched.saturating_sub(1);
        self.head.forget();
    }

    /// The parsed head WQE, in slot `slot`; `None` if it cannot be read or
    /// is malformed. Give it back with [`Track::put_head`].
    pub(crate) fn take_head(&mut self, qp: &Shared, slot: u32) -> Option<KBox<SendWqe>> {
        self.head.take(qp, &mut self.buf, 0, slot, true).ok()
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
pub(super) fn slot_at(qp: &Shared, off: u32) -> Option<u32> {
    slot_of(&qp.sq.lock().queue, off)
}

/// The wr_id of the head WQE, read from the ring.
pub(crate) fn head_wr_id(qp: &Shared) -> Option<u64> {
    let sq = qp.sq.lock();
    let slot = slot_of(&sq.queue, 0)?;
    let mut b = [0u8; 8];
    sq.queue.read_slot(slot, &mut b).ok()?;
    Some(u64::from_ne_bytes(b))
}

/// Copies the WQE `off` entries past the SQ consumer into the start of
/// `buf`; returns its slot and the bytes copied, `None` when the SQ holds
/// no such WQE.
///
/// Only the fixed part and the SGE or inline bytes its header names are
/// copied, not the whole slot; the parse checks the copy against itself.
fn read_wqe(qp: &Shared, buf: &mut KVec<u8>, off: u32) -> Option<(u32, usize)> {
    let sq = qp.sq.lock();
    let slot = slot_of(&sq.queue, off)?;
    let slot_len = sq.queue.elem_size().min(buf.len());
    let head = slot_len.min(uapi::send_wqe::LEN);
    sq.queue.read_slot(slot, buf.get_mut(..head)?).ok()?;
    let len = SendWqe::needed_len(buf.get(..head)?, slot_len);
    if len > head {
        sq.queue
            .read_slot_at(slot, head, buf.get_mut(head..len)?)
            .ok()?;
    }
    Some((slot, len))
}

/// Validates the slot copy `slot` into `wqe`.
fn parse_wqe(qp: &Shared, slot: &[u8], wqe: &mut SendWqe) -> Result<(), uapi::WqeError> {
    let limits = SqLimits {
        qp_type: qp.qp_type,
        max_sge: qp.sq_caps.max_sge,
        max_inline: qp.sq_caps.max_inline,
        // A kernel QP's ring is written only by `post_send`.
        kernel: !qp.is_user,
    };
    wqe.parse_from(slot, &limits)
}
