// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The responder's kernel side: what `proto::responder::machine` asks of the QP
//! for one run (the request queue, receive WQEs, MR lookups and accesses,
//! receive completions, replies) through [`machine::Io`].

use kernel::{prelude::*, sync::Arc};

use super::{Facts, WqeHold, WriteMr};
use crate::rxe::counters;
use crate::rxe::cq::Due;
use crate::rxe::device::Device;
use crate::rxe::dma::{Cursor, DmaError, LocalAccess};
use crate::rxe::kapi::page::PayloadPages;
use crate::rxe::kapi::trace;
use crate::rxe::mr::{self, AccessError, KeyKind, PdId, PendingFault, QpId};
use crate::rxe::net::{self, Av};
use crate::rxe::proto::conv::{len64, to_usize};
use crate::rxe::proto::cq_srq::RecvNet;
use crate::rxe::proto::events::Event;
use crate::rxe::proto::headers::{Aeth, AtmAck, Bth};
use crate::rxe::proto::ip::NetworkType;
use crate::rxe::proto::mr::{Access, AtomicOp, InvalidateError};
use crate::rxe::proto::opcode::{Mask, Opcode};
use crate::rxe::proto::params::DEFAULT_PKEY_FULL;
use crate::rxe::proto::responder::machine::{
    self, AccessFault, Ack, AtomicError, CqFull, ReadResponse, ReadSource, RecvCopyError, RecvCqe,
    RecvError, SendFailed,
};
use crate::rxe::proto::responder::rules::{Request, Target};
use crate::rxe::proto::uapi::{Cqe, RecvWqe, WcStatus};
use crate::rxe::proto::wire::Syndrome;
use crate::rxe::qp::{self, QpShared};
use crate::rxe::recv::RxPacket;
use crate::rxe::reorder::Reorder;
use crate::rxe::srq;

/// The kernel side of the responder for one run.
pub(super) struct Io<'a> {
    pub(super) sh: &'a Arc<QpShared>,
    pub(super) f: &'a Facts,
    /// The status change count `f` was read at.
    pub(super) gen: u32,
    pub(super) head: &'a mut Option<RxPacket>,
    pub(super) reorder: &'a mut Reorder,
    /// The head request came out of `reorder`.
    pub(super) head_held: bool,
    pub(super) wqe: &'a mut WqeHold,
    /// The step's replies, flushed to the device together when it ends.
    pub(super) batch: net::TxBatch<'a, ()>,
    /// The netdev the step's replies leave from.
    pub(super) ndevs: net::NdevCache,
    /// The region `lookup` resolved, until `release_mr`.
    pub(super) mr: Option<Arc<mr::MrShared>>,
    /// The region of the RDMA WRITE under way, kept across runs from its
    /// first packet to its last.
    pub(super) write_mr: &'a mut Option<WriteMr>,
    /// `lookup` found the request's region in `write_mr` (not in `mr`);
    /// `Some(true)` for the message's last packet, which lets it go.
    pub(super) on_write_mr: Option<bool>,
    /// The receive CQ's callbacks, run after the `resp` lock.
    pub(super) due: Due,
    /// The SRQ's limit event, raised after the `resp` lock.
    pub(super) srq_limit: bool,
    /// What the last access that found an ODP page absent needs.
    pub(super) fault: Option<PendingFault>,
    /// Absent pages are bad accesses now (retries used up).
    pub(super) odp_give_up: bool,
}

impl<'a> Io<'a> {
    fn dev(&self) -> Option<&Device> {
        Some(&self.sh.dev)
    }

    /// The reply AV: back to the request's source along the QP's path.
    /// Without a request at hand (a held ACK sent once the queue ran dry or
    /// the QP failed, after its request was freed), to the QP's peer, as
    /// rdma_rxe addresses every RC response.
    fn reply_av(&self) -> Option<Av> {
        let (sgid_index, dmac, tos, ttl) = self.f.path?;
        let (src, dst) = match self.head.as_ref() {
            Some(p) => (p.dst(), p.src()),
            None => qp::av_path(self.sh.status().attrs.pri_av.as_ref()?),
        };
        Some(Av {
            src,
            dst,
            sgid_index,
            dmac,
            traffic_class: tos,
            hop_limit: ttl,
            flow_label: 0,
            sport: self.f.sport,
        })
    }

    /// Records an access of the held MR that found a page absent.
    fn note_absent(&mut self, e: AccessError, iova: u64, len: u64, write: bool) {
        if e == AccessError::Absent {
            if let Some(mr) = self.region() {
                self.fault = Some(PendingFault {
                    mr: mr.clone(),
                    iova,
                    len,
                    write,
                });
            }
        }
    }

    /// The region `lookup` resolved for the request at hand.
    #[inline]
    fn region(&self) -> Option<&Arc<mr::MrShared>> {
        match self.on_write_mr {
            Some(_) => self.write_mr.as_ref().map(|w| &w.mr),
            None => self.mr.as_ref(),
        }
    }

    fn remote_lookup(&self, rkey: u32, access: Access) -> Result<Arc<mr::MrShared>, AccessError> {
        let dev = self.dev().ok_or(AccessError::Key)?;
        mr::lookup(
            dev.state(),
            rkey,
            KeyKind::Remote {
                qp: QpId::of(self.sh),
            },
            PdId(self.sh.pd),
            access,
        )
    }

    /// Builds and sends a payload-less or payload-carrying reply of `len`
    /// bytes: in `pages` when given, else `fill` writes it.
    fn send_reply(
        &mut self,
        opcode: Opcode,
        psn: u32,
        (aeth, orig): (Aeth, u64),
        len: u32,
        pages: Option<&mut PayloadPages>,
        fill: impl FnOnce(&mut [u8]) -> Result<(), SendFailed>,
    ) -> Result<(), SendFailed> {
        let sh: &'a Arc<QpShared> = self.sh;
        let av = self.reply_av().ok_or(SendFailed::Send)?;
        let mut tx =
            net::alloc_packet_with(&sh.dev, &mut self.ndevs, &av, opcode, to_usize(len), pages)
                .map_err(|_| SendFailed::Send)?;
        tx.write_bth(Bth::new(opcode, DEFAULT_PKEY_FULL, self.f.dest_qpn, psn))
            .map_err(|_| SendFailed::Send)?;
        if opcode.has(Mask::AETH) {
            tx.write_ext(&aeth).map_err(|_| SendFailed::Send)?;
        }
        if opcode.has(Mask::ATMACK) {
            tx.write_ext(&AtmAck { orig })
                .map_err(|_| SendFailed::Send)?;
        }
        if !tx.payload_in_frags() {
            fill(tx.payload_mut())?;
        }
        self.batch.send(tx).map_err(|_| SendFailed::Send)
    }
}

impl machine::Io for Io<'_> {
    #[inline(always)]
    fn peek(&mut self) -> Option<Request> {
        loop {
            if self.head.is_none() {
                *self.head = self.sh.resp_pkts.lock().pop();
                self.head_held = false;
            }
            let p = self.head.as_ref()?;
            match Request::from_packet(p.info(), p.bytes()) {
                Some(r) => return Some(r),
                // Not possible for a parsed packet; drop it rather than stall.
                None => {
                    *self.head = None;
                }
            }
        }
    }

    #[inline]
    fn peek_next(&mut self, next_psn: u32) -> Option<Request> {
        if self.head.is_none() && !self.reorder.is_empty() {
            *self.head = self.reorder.take(next_psn);
            self.head_held = self.head.is_some();
        }
        self.peek()
    }

    fn hold(&mut self, next_psn: u32) -> Option<usize> {
        let pkt = self.head.take()?;
        match self.reorder.hold(pkt, next_psn) {
            Ok(held) => Some(held),
            Err(pkt) => {
                *self.head = Some(pkt);
                None
            }
        }
    }

    fn head_was_held(&self) -> bool {
        self.head_held
    }

    fn drop_held(&mut self) {
        if let Some(p) = self.head.take() {
            p.consume();
        }
        self.head_held = false;
        self.reorder.clear();
    }

    #[inline]
    fn pop(&mut self) {
        if let Some(p) = self.head.take() {
            p.consume();
        }
        self.head_held = false;
    }

    fn more_queued(&mut self) -> bool {
        self.holds_requests() || !self.sh.resp_pkts.lock().is_empty()
    }

    fn holds_requests(&self) -> bool {
        !self.reorder.is_empty()
    }

    #[inline]
    fn status_moved(&mut self) -> bool {
        self.sh.status_gen() != self.gen
    }

    fn qp_in_error(&mut self) -> bool {
        // The step started in a live state other than ERR: only a change
        // since can have moved it there.
        self.sh.status_gen() != self.gen && self.sh.is_in(qp::State::Err)
    }

    fn take_recv(&mut self) -> Result<u32, RecvError> {
        if let Some(srq) = &self.sh.srq {
            if self.wqe.retry && self.wqe.live {
                self.wqe.retry = false;
                let h = &mut *self.wqe.w;
                h.cursor.reset(h.wqe.length);
                return Ok(h.wqe.length);
            }
            self.wqe.clear();
            if take_srq(srq, &mut self.wqe.w.wqe)? {
                self.srq_limit = true;
            }
        } else {
            if let Some(h) = self.wqe.get() {
                // The RQ head stays ours until it completes.
                return Ok(h.wqe.length);
            }
            let rq = self.sh.rq.lock();
            let rq = rq.as_ref().ok_or(RecvError::Empty)?;
            let mut empty = false;
            let r = self.wqe.w.wqe.read_from(
                rq.queue.elem_size(),
                self.sh.rq_caps.max_sge,
                |off, out| match rq.queue.peek_at(off, out) {
                    Ok(true) => true,
                    Ok(false) => {
                        empty = true;
                        false
                    }
                    Err(_) => false,
                },
            );
            if empty {
                return Err(RecvError::Empty);
            }
            r.map_err(|_| RecvError::Malformed)?;
        }
        let h = &mut *self.wqe.w;
        h.cursor = Cursor::new(h.wqe.length);
        self.wqe.live = true;
        Ok(h.wqe.length)
    }

    fn has_recv(&self) -> bool {
        self.wqe.live
    }

    fn recv_data(&mut self, with_grh: bool) -> Result<(), RecvCopyError> {
        let p = self.head.as_ref().ok_or(RecvCopyError::Fault)?;
        let h = self.wqe.get_mut().ok_or(RecvCopyError::Fault)?;
        let mem = LocalAccess::new(p.device().state(), PdId(self.sh.pd), Access::LOCAL_WRITE);
        let map = |e: DmaError| match e {
            DmaError::TooLong => RecvCopyError::TooLong,
            DmaError::NoSpace => RecvCopyError::NoSpace,
            _ => RecvCopyError::Fault,
        };
        let mut r = Ok(());
        if with_grh {
            r = h.cursor.copy_to_mem(&mem, &h.wqe, &p.network_hdr());
        }
        if r.is_ok() {
            r = h.cursor.copy_to_mem(&mem, &h.wqe, p.payload());
        }
        if r == Err(DmaError::Absent) {
            self.fault = h.cursor.take_fault();
            if with_grh {
                // A UD message is one packet: its next try starts over.
                h.cursor.reset(h.wqe.length);
            }
            // A first packet's next try takes the WQE it took now.
            self.wqe.retry = self.sh.srq.is_some();
        }
        r.map_err(map)
    }

    fn recv_received(&self) -> u32 {
        self.wqe
            .get()
            .map_or(0, |h| h.wqe.length.saturating_sub(h.cursor.resid()))
    }

    fn rewind_recv(&mut self) {
        if let Some(h) = self.wqe.get_mut() {
            h.cursor.reset(h.wqe.length);
        }
    }

    fn complete(&mut self, c: &RecvCqe) -> Result<(), CqFull> {
        let Some(wr_id) = self.wqe.get().map(|h| h.wqe.wr_id) else {
            return Ok(());
        };
        self.wqe.clear();
        if self.sh.srq.is_none() {
            if let Some(rq) = Option::as_mut(&mut self.sh.rq.lock()) {
                rq.queue.advance();
            }
        }
        self.sh.note_completion(c.status);
        let mut cqe = Cqe::new(wr_id, c.status, self.sh.qpn);
        if c.status == WcStatus::Success {
            cqe.opcode = c.opcode;
            cqe.byte_len = c.byte_len;
            cqe.wc_flags = c.wc_flags;
            cqe.ex = c.ex;
            cqe.src_qp = c.src_qp;
            cqe.port_num = self.f.port_num;
        }
        let net = RecvNet {
            ipv6: self
                .head
                .as_ref()
                .is_some_and(|p| p.network_type() == NetworkType::Ipv6),
            vlan_id: self.head.as_ref().and_then(|p| p.vlan_id()),
        };
        trace::completion(&cqe, true);
        let Some(handle) = self.sh.link.handle() else {
            return Ok(());
        };
        match self
            .sh
            .rcq
            .produce(&cqe, handle, c.solicited, Some(net), &mut self.due)
        {
            Ok(()) => Ok(()),
            Err(e) if e == EBUSY => Err(CqFull),
            Err(_) => Ok(()),
        }
    }

    fn lookup(&mut self, t: &Target) -> Result<(), AccessFault> {
        let kind = KeyKind::Remote {
            qp: QpId::of(self.sh),
        };
        let pd = PdId(self.sh.pd);
        let range = t.check_range.then_some((t.va, u64::from(t.len)));
        let m = self.head.as_ref().map_or(Mask::NONE, RxPacket::mask);
        let write = m.contains(Mask::WRITE);
        self.on_write_mr = None;
        // A WRITE's middle and last packets go on in the region its first
        // packet resolved, whose checks covered the whole message: while
        // nothing changed in the region, they hold. Any other request lets
        // the held region go.
        if write && !m.contains(Mask::START) {
            if let Some(w) = self.write_mr.as_ref() {
                if w.rkey == t.rkey && w.mr.unchanged_since(w.gen) {
                    self.on_write_mr = Some(m.contains(Mask::END));
                    return Ok(());
                }
            }
        }
        *self.write_mr = None;
        let (mr, gen) = mr::lookup_range(self.sh.dev.state(), t.rkey, kind, pd, t.access, range)
            .map_err(|_| AccessFault)?;
        if write && m.contains(Mask::START) && !m.contains(Mask::END) && !mr.is_window() {
            *self.write_mr = Some(WriteMr {
                rkey: t.rkey,
                gen,
                mr: mr.clone(),
            });
        }
        self.mr = Some(mr);
        Ok(())
    }

    fn release_mr(&mut self) {
        self.mr = None;
        if self.on_write_mr.take() == Some(true) {
            *self.write_mr = None;
        }
    }

    fn write_data(&mut self, va: u64) -> Result<(), AccessFault> {
        let p = self.head.as_ref().ok_or(AccessFault)?;
        let mr = self.region().ok_or(AccessFault)?;
        let len = len64(p.payload().len());
        let r = mr.copy_in(va, p.payload());
        if let Err(e) = r {
            self.note_absent(e, va, len, true);
        }
        r.map_err(|_| AccessFault)
    }

    fn atomic(&mut self, va: u64, op: AtomicOp) -> Result<u64, AtomicError> {
        let mr = self.region().ok_or(AtomicError::Access)?;
        let r = mr.atomic_op(va, op);
        if let Err(e) = r {
            self.note_absent(e, va, 8, true);
        }
        r.map_err(|e| match e {
            AccessError::Misaligned => AtomicError::Misaligned,
            _ => AtomicError::Access,
        })
    }

    fn atomic_write(&mut self, va: u64) -> Result<(), AtomicError> {
        let p = self.head.as_ref().ok_or(AtomicError::Access)?;
        let mr = self.region().ok_or(AtomicError::Access)?;
        let value = p
            .payload()
            .first_chunk::<8>()
            .map(|b| u64::from_ne_bytes(*b))
            .ok_or(AtomicError::Access)?;
        let r = mr.atomic_write(va, value);
        if let Err(e) = r {
            self.note_absent(e, va, 8, true);
        }
        r.map_err(|e| match e {
            AccessError::Misaligned => AtomicError::Misaligned,
            _ => AtomicError::Access,
        })
    }

    fn region_bounds(&self) -> Option<(u64, u64)> {
        self.region().map(|mr| mr.bounds())
    }

    fn flush(&mut self, va: u64, len: u64) -> Result<(), AccessFault> {
        let mr = self.region().ok_or(AccessFault)?;
        mr.flush(va, len).map_err(|_| AccessFault)
    }

    fn flush_barrier(&mut self) {
        core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst);
    }

    fn invalidate(&mut self, rkey: u32) -> Result<(), InvalidateError> {
        let dev = self.dev().ok_or(InvalidateError::Invalid)?;
        mr::invalidate_key(dev.state(), rkey, PdId(self.sh.pd), QpId::of(self.sh))
    }

    fn send_read_response(&mut self, r: &ReadResponse) -> Result<(), SendFailed> {
        let mr = match r.source {
            ReadSource::Held => self.region().cloned(),
            ReadSource::Recheck(rkey) => Some(
                self.remote_lookup(rkey, Access::REMOTE_READ)
                    .map_err(|_| SendFailed::Access)?,
            ),
        };
        // Read responses are RC: the payload may go as page fragments.
        let mut p = PayloadPages::new();
        let mut referenced = false;
        if let Some(mr) = mr
            .as_ref()
            .filter(|_| net::wants_frags(qp::Type::Rc, to_usize(r.len)))
        {
            referenced = mr
                .ref_pages(r.va, to_usize(r.len), &mut p)
                .map_err(|_| SendFailed::Access)?;
        }
        let pages = referenced.then_some(&mut p);
        let ack = Syndrome::ACK_UNLIMITED.encode();
        let mut absent = false;
        let sent = self.send_reply(
            r.opcode,
            r.psn,
            (
                Aeth {
                    syndrome: ack,
                    msn: r.msn,
                },
                0,
            ),
            r.len,
            pages,
            |out| {
                if out.is_empty() {
                    return Ok(());
                }
                let mr = mr.as_ref().ok_or(SendFailed::Access)?;
                mr.copy_out(r.va, out).map_err(|e| {
                    absent = e == AccessError::Absent;
                    SendFailed::Access
                })
            },
        );
        if absent {
            if let Some(mr) = mr {
                self.fault = Some(PendingFault {
                    mr,
                    iova: r.va,
                    len: u64::from(r.len),
                    write: false,
                });
            }
        }
        sent
    }

    fn send_ack(&mut self, a: &Ack) {
        if trace::nak_send_on()
            && !matches!(Syndrome::try_from(a.syndrome), Ok(Syndrome::Ack { .. }))
        {
            trace::nak_send(self.sh.qpn, a.psn, a.syndrome);
        }
        let aeth = Aeth {
            syndrome: a.syndrome,
            msn: a.msn,
        };
        let _ = self.send_reply(a.opcode, a.psn, (aeth, a.orig), 0, None, |_| Ok(()));
    }

    fn count(&mut self, ev: Event) {
        counters::inc(&self.sh.dev, ev.into());
    }

    fn absent(&self) -> bool {
        self.fault.is_some() && !self.odp_give_up
    }

    fn probe(&mut self, va: u64, len: u32, write: bool) -> bool {
        let Some(mr) = self.region() else {
            return true;
        };
        if self.odp_give_up || mr.present(va, u64::from(len), write) {
            return true;
        }
        self.fault = Some(PendingFault {
            mr: mr.clone(),
            iova: va,
            len: u64::from(len),
            write,
        });
        false
    }
}

/// A consumed SRQ WQE as the responder's held WQE; `true` when the SRQ's
/// limit event is due.
fn take_srq(srq: &srq::SrqShared, wqe: &mut RecvWqe) -> Result<bool, RecvError> {
    match srq.take_into(wqe) {
        None => Err(RecvError::Empty),
        Some(Err(_)) => Err(RecvError::Malformed),
        Some(Ok(fire)) => Ok(fire),
    }
}
