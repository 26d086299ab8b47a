// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! In-memory models of the engines' primitives, for the state machine tests:
//! a responder [`Io`] with receive buffers, memory regions and a wire log.

use crate::proto::events::Event;
use crate::proto::mr::{Access, AtomicOp, InvalidateError};
use crate::proto::responder::machine::{
    AccessFault, Ack, AtomicError, CqFull, Io, ReadResponse, ReadSource, RecvCopyError, RecvCqe,
    RecvError, SendFailed,
};
use crate::proto::responder::rules::{Request, Target, GRH_LEN};
use std::collections::{BTreeMap, VecDeque};
use std::vec::Vec;

pub(crate) struct Mr {
    pub(crate) base: u64,
    pub(crate) data: Vec<u8>,
    pub(crate) access: Access,
}

impl Mr {
    fn range(&self, va: u64, len: u64) -> Option<core::ops::Range<usize>> {
        let off = va.checked_sub(self.base)?;
        let end = off.checked_add(len)?;
        if end > self.data.len() as u64 {
            return None;
        }
        Some(off as usize..end as usize)
    }
}

/// What the responder put on the wire, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Out {
    Ack(Ack),
    Read(ReadResponse, Vec<u8>),
}

pub(crate) struct Held {
    pub(crate) cap: usize,
    pub(crate) data: Vec<u8>,
}

#[derive(Default)]
pub(crate) struct RespModel {
    pub(crate) reqs: VecDeque<(Request, Vec<u8>)>,
    /// Receive buffer sizes.
    pub(crate) rq: VecDeque<usize>,
    pub(crate) srq: bool,
    pub(crate) rq_malformed: bool,
    pub(crate) held: Option<Held>,
    pub(crate) mrs: BTreeMap<u32, Mr>,
    /// Keys whose invalidation this QP may not ask for (another PD or QP).
    pub(crate) foreign_keys: Vec<u32>,
    pub(crate) held_mr: Option<u32>,
    pub(crate) in_error: bool,
    pub(crate) cq_full: bool,
    pub(crate) fail_read: Option<SendFailed>,
    pub(crate) out: Vec<Out>,
    pub(crate) cqes: Vec<(RecvCqe, Vec<u8>)>,
    /// The pieces of persistent write-backs, `(va, len)`, in order.
    pub(crate) flushes: Vec<(u64, u64)>,
    /// FLUSH barriers (one per FLUSH that asked for placement).
    pub(crate) barriers: u32,
    pub(crate) lookups: u32,
    pub(crate) events: Vec<Event>,
    /// ODP: how many of the next memory accesses find a page absent.
    pub(crate) absent: u32,
    /// ODP: how many of the next probes find a page absent.
    pub(crate) probe_absent: u32,
    /// The last access failed for an absent page.
    pub(crate) last_absent: bool,
    /// Report the requests queued behind the head ([`Io::more_queued`]),
    /// as the driver does; off, every ACK goes out at once.
    pub(crate) coalesce: bool,
    /// The QP's status changed since the run began ([`Io::status_moved`]).
    pub(crate) status_moved: bool,
    /// A reorder buffer of this many PSNs after the expected one
    /// ([`Io::hold`], as the driver's, which holds at most 128 requests);
    /// none when 0.
    pub(crate) reorder: u32,
    /// The requests it holds, by PSN.
    pub(crate) held_reqs: BTreeMap<u32, (Request, Vec<u8>)>,
    /// The head request came out of `held_reqs`.
    pub(crate) head_held: bool,
}

impl RespModel {
    pub(crate) fn push(&mut self, r: Request, payload: Vec<u8>) {
        self.reqs.push_back((r, payload));
    }

    pub(crate) fn mr(&mut self, rkey: u32, base: u64, len: usize, access: Access) {
        let data = (0..len)
            .map(|i| (i as u8).wrapping_mul(7).wrapping_add(rkey as u8))
            .collect();
        self.mrs.insert(rkey, Mr { base, data, access });
    }

    pub(crate) fn acks(&self) -> Vec<Ack> {
        self.out
            .iter()
            .filter_map(|o| if let Out::Ack(a) = o { Some(*a) } else { None })
            .collect()
    }

    pub(crate) fn reads(&self) -> Vec<ReadResponse> {
        self.out
            .iter()
            .filter_map(|o| {
                if let Out::Read(r, _) = o {
                    Some(*r)
                } else {
                    None
                }
            })
            .collect()
    }

    fn payload(&self) -> &[u8] {
        self.reqs.front().map_or(&[], |(_, p)| p.as_slice())
    }

    /// Whether this access finds a page absent (and counts it).
    fn take_absent(&mut self) -> bool {
        self.last_absent = self.absent > 0;
        if self.last_absent {
            self.absent -= 1;
        }
        self.last_absent
    }

    fn held(&mut self) -> Option<&mut Mr> {
        let k = self.held_mr?;
        self.mrs.get_mut(&k)
    }
}

impl Io for RespModel {
    fn peek(&mut self) -> Option<Request> {
        self.reqs.front().map(|(r, _)| *r)
    }

    fn peek_next(&mut self, next_psn: u32) -> Option<Request> {
        // Those the expected PSN has passed are dropped as they are met.
        self.held_reqs
            .retain(|&psn, _| !crate::proto::psn::psn_before(psn, next_psn));
        if let Some(r) = self.held_reqs.remove(&next_psn) {
            self.reqs.push_front(r);
            self.head_held = true;
        }
        self.peek()
    }

    fn hold(&mut self, next_psn: u32) -> Option<usize> {
        let psn = self.reqs.front()?.0.psn;
        let ahead = crate::proto::psn::psn_diff(psn, next_psn);
        if ahead <= 0 || ahead as u32 >= self.reorder {
            return None;
        }
        if self.held_reqs.len() >= 128 && !self.held_reqs.contains_key(&psn) {
            return None;
        }
        let r = self.reqs.pop_front()?;
        self.head_held = false;
        // A second copy leaves the first held.
        self.held_reqs.entry(psn).or_insert(r);
        Some(self.held_reqs.len())
    }

    fn pop(&mut self) {
        self.reqs.pop_front();
        self.head_held = false;
    }

    fn head_was_held(&self) -> bool {
        self.head_held
    }

    fn drop_held(&mut self) {
        if self.head_held {
            self.reqs.pop_front();
        }
        self.head_held = false;
        self.held_reqs.clear();
    }

    fn more_queued(&mut self) -> bool {
        self.coalesce && (self.reqs.len() > 1 || self.holds_requests())
    }

    fn holds_requests(&self) -> bool {
        !self.held_reqs.is_empty()
    }

    fn qp_in_error(&mut self) -> bool {
        self.in_error
    }

    fn take_recv(&mut self) -> Result<u32, RecvError> {
        if self.rq_malformed {
            return Err(RecvError::Malformed);
        }
        let cap = if self.srq {
            self.rq.pop_front()
        } else {
            self.rq.front().copied()
        };
        let cap = cap.ok_or(RecvError::Empty)?;
        self.held = Some(Held {
            cap,
            data: Vec::new(),
        });
        Ok(cap as u32)
    }

    fn has_recv(&self) -> bool {
        self.held.is_some()
    }

    fn recv_data(&mut self, with_grh: bool) -> Result<(), RecvCopyError> {
        if self.take_absent() {
            return Err(RecvCopyError::Fault);
        }
        let mut bytes = Vec::new();
        if with_grh {
            bytes.extend(core::iter::repeat_n(0x47u8, GRH_LEN as usize));
        }
        bytes.extend_from_slice(self.payload());
        let h = self.held.as_mut().ok_or(RecvCopyError::Fault)?;
        if h.data.len() + bytes.len() > h.cap {
            return Err(RecvCopyError::TooLong);
        }
        h.data.extend(bytes);
        Ok(())
    }

    fn recv_received(&self) -> u32 {
        self.held.as_ref().map_or(0, |h| h.data.len() as u32)
    }

    fn rewind_recv(&mut self) {
        if let Some(h) = self.held.as_mut() {
            h.data.clear();
        }
    }

    fn complete(&mut self, cqe: &RecvCqe) -> Result<(), CqFull> {
        if self.cq_full {
            return Err(CqFull);
        }
        let data = self.held.take().map(|h| h.data).unwrap_or_default();
        self.cqes.push((*cqe, data));
        if !self.srq {
            self.rq.pop_front();
        }
        Ok(())
    }

    fn lookup(&mut self, t: &Target) -> Result<(), AccessFault> {
        self.lookups += 1;
        let mr = self.mrs.get(&t.rkey).ok_or(AccessFault)?;
        if !mr.access.contains(t.access)
            || (t.check_range && mr.range(t.va, u64::from(t.len)).is_none())
        {
            return Err(AccessFault);
        }
        self.held_mr = Some(t.rkey);
        Ok(())
    }

    fn release_mr(&mut self) {
        self.held_mr = None;
    }

    fn write_data(&mut self, va: u64) -> Result<(), AccessFault> {
        if self.take_absent() {
            return Err(AccessFault);
        }
        let p = self.payload().to_vec();
        let mr = self.held().ok_or(AccessFault)?;
        let r = mr.range(va, p.len() as u64).ok_or(AccessFault)?;
        mr.data[r].copy_from_slice(&p);
        Ok(())
    }

    fn atomic(&mut self, va: u64, op: AtomicOp) -> Result<u64, AtomicError> {
        if self.take_absent() {
            return Err(AtomicError::Access);
        }
        let mr = self.held().ok_or(AtomicError::Access)?;
        let r = mr.range(va, 8).ok_or(AtomicError::Access)?;
        if !va.is_multiple_of(8) {
            return Err(AtomicError::Misaligned);
        }
        let old = u64::from_ne_bytes(mr.data[r.clone()].try_into().unwrap());
        if let Some(new) = op.apply(old) {
            mr.data[r].copy_from_slice(&new.to_ne_bytes());
        }
        Ok(old)
    }

    fn atomic_write(&mut self, va: u64) -> Result<(), AtomicError> {
        if self.take_absent() {
            return Err(AtomicError::Access);
        }
        let p = self.payload().to_vec();
        let mr = self.held().ok_or(AtomicError::Access)?;
        let r = mr.range(va, 8).ok_or(AtomicError::Access)?;
        if !va.is_multiple_of(8) {
            return Err(AtomicError::Misaligned);
        }
        mr.data[r].copy_from_slice(p.get(..8).ok_or(AtomicError::Access)?);
        Ok(())
    }

    fn region_bounds(&self) -> Option<(u64, u64)> {
        let mr = self.mrs.get(&self.held_mr?)?;
        Some((mr.base, mr.data.len() as u64))
    }

    fn flush(&mut self, va: u64, len: u64) -> Result<(), AccessFault> {
        self.held()
            .ok_or(AccessFault)?
            .range(va, len)
            .ok_or(AccessFault)?;
        self.flushes.push((va, len));
        Ok(())
    }

    fn flush_barrier(&mut self) {
        self.barriers += 1;
    }

    fn invalidate(&mut self, rkey: u32) -> Result<(), InvalidateError> {
        if self.foreign_keys.contains(&rkey) {
            return Err(InvalidateError::Protection { window: true });
        }
        self.mrs
            .remove(&rkey)
            .map(|_| ())
            .ok_or(InvalidateError::Invalid)
    }

    fn send_read_response(&mut self, r: &ReadResponse) -> Result<(), SendFailed> {
        if let Some(e) = self.fail_read {
            return Err(e);
        }
        if self.take_absent() {
            return Err(SendFailed::Access);
        }
        let key = match r.source {
            ReadSource::Held => self.held_mr,
            ReadSource::Recheck(k) => Some(k),
        };
        let data = match key.and_then(|k| self.mrs.get(&k)) {
            Some(mr) => {
                let range = mr.range(r.va, u64::from(r.len)).ok_or(SendFailed::Access)?;
                mr.data[range].to_vec()
            }
            None if r.len == 0 => Vec::new(),
            None => return Err(SendFailed::Access),
        };
        self.out.push(Out::Read(*r, data));
        Ok(())
    }

    fn send_ack(&mut self, a: &Ack) {
        self.out.push(Out::Ack(*a));
    }

    fn count(&mut self, ev: Event) {
        self.events.push(ev);
    }

    fn status_moved(&mut self) -> bool {
        self.status_moved
    }

    fn absent(&self) -> bool {
        self.last_absent
    }

    fn probe(&mut self, _va: u64, _len: u32, _write: bool) -> bool {
        if self.probe_absent > 0 {
            self.probe_absent -= 1;
            self.last_absent = true;
            return false;
        }
        true
    }
}
