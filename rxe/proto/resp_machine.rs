// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The responder state machine (`rxe_receiver()`) over the engine's [`Io`].
//! [`Io`], the values that cross it and [`Outcome`] live in
//! [`resp_io`](super::resp_io); this module re-exports them.
//!
//! # API
//!
//! - trait [`Io`]: the engine's primitives over the request packet at the
//!   head of its queue, the RQ/SRQ, memory regions, the CQ and the wire
//! - [`run`]`(state, qp, io) -> Outcome`: one `rxe_receiver()` call. It
//!   handles the head request until it is done, or sends one packet of a
//!   read reply; the engine calls it again while `progress`, and moves the
//!   QP to ERR on `qp_error`
//! - [`recv_cqe`]`(state, request, status, received) -> RecvCqe`
//! - the types [`Io`] uses: [`Target`](resp_rules::Target), [`ReadResponse`],
//!   [`ReadSource`], [`Ack`], [`RecvCqe`] and the error types
//!
//! # Where this differs from rdma_rxe
//!
//! Only where C reads stale or missing state: a send failure in a read
//! reply forgets the reply (C continues it with whatever packet comes
//! next); a duplicate matched to a resource of another kind is dropped; a
//! write with payload but a zero-length RETH, and a flush on a QP without
//! responder resources, are length/resource errors (C dereferences NULL);
//! a replayed read rechecks its key unless it is zero-length (C looks at
//! the last RETH's length instead); the duplicate of a zero-length read is
//! answered (C drops it for its rkey, and the requester retries it until
//! it gives up); a UC message cut short is forgotten even when it holds
//! no receive WQE (a write, or any message with an SRQ), where C keeps its
//! opcode and refuses every later message: the QP never receives again.

use super::events::Event;
use super::headers::{FLUSH_GLOBAL, FLUSH_PERSISTENT};
use super::mr_logic::{AtomicOp, InvalidateError};
use super::opcode::{Mask, Opcode};
use super::params::pacing::MAX_COALESCED_PSNS;
use super::psn::{psn_add, psn_before, psn_sub};
use super::qp;
pub(crate) use super::resp_io::{
    recv_cqe, AccessFault, Ack, AtomicError, CqFull, Io, Outcome, ReadResponse, ReadSource,
    RecvCopyError, RecvCqe, RecvError, SendFailed,
};
use super::resp_rules::{
    self, check_length, check_rdma_len, check_request, flush_piece_end, flush_rights, rdma_target,
    Check, OwedAck, Request, Res, ResKind, ResState, RespError, RespQp, Target, GRH_LEN,
};
use super::uapi::WcStatus;
use super::wire::{NakCode, Syndrome};

/// `enum resp_states`, minus the states folded into others.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    GetReq,
    ChkPsn,
    ChkResource,
    ChkLength,
    ChkRkey,
    Execute,
    Complete,
    ReadReply,
    AtomicReply,
    AtomicWriteReply,
    ProcessFlush,
    /// The next piece of a FLUSH's persistent write-back.
    FlushResume,
    /// A piece of a FLUSH is done and more are left: stop, keeping the
    /// request, and go on in the next run.
    FlushMore,
    Acknowledge,
    Cleanup,
    Duplicate,
    Err(RespError),
    Done,
    Exit,
    Error,
    /// An absent ODP page: stop, keeping the request.
    Fault,
}

const ACK: u8 = Syndrome::ACK_UNLIMITED.encode();

/// The responder resources as they were before a reply took one.
struct ResUndo {
    res_head: usize,
    cur: Option<usize>,
    slot: Option<(usize, Res)>,
}

/// One run of the responder.
struct Run<'a, I: Io> {
    st: &'a mut resp_rules::State,
    qp: &'a RespQp,
    io: &'a mut I,
    /// `qp->resp.aeth_syndrome`, `status` and `goto_error`: per request.
    syndrome: u8,
    status: WcStatus,
    goto_error: bool,
    recv_len: u32,
    mr_held: bool,
}

/// Runs the responder once over the request at the head of the queue.
pub(crate) fn run(st: &mut resp_rules::State, qp: &RespQp, io: &mut impl Io) -> Outcome {
    let mut r = Run {
        st,
        qp,
        io,
        syndrome: ACK,
        status: WcStatus::Success,
        goto_error: false,
        recv_len: 0,
        mr_held: false,
    };
    let mut pkt: Option<Request> = None;
    let mut s = St::GetReq;
    loop {
        s = match (s, pkt) {
            (St::GetReq, _) => match r.io.peek() {
                None => St::Exit,
                Some(p) => {
                    pkt = Some(p);
                    if r.flush_pending() {
                        St::FlushResume
                    } else if r.st.cur.is_some() {
                        St::ReadReply
                    } else {
                        St::ChkPsn
                    }
                }
            },
            (St::ChkPsn, Some(p)) => match check_request(r.st, r.qp, &p) {
                Check::Drop => St::Cleanup,
                Check::Duplicate => {
                    r.io.count(Event::DuplicateRequest);
                    St::Duplicate
                }
                Check::Error(e) => {
                    if e == RespError::PsnOutOfSeq {
                        r.io.count(Event::OutOfSeqRequest);
                    }
                    St::Err(e)
                }
                Check::Valid => St::ChkResource,
            },
            (St::ChkResource, Some(p)) => r.check_resource(&p),
            (St::ChkLength, Some(p)) => r.check_length(&p),
            (St::ChkRkey, Some(p)) => r.check_rkey(&p),
            (St::Execute, Some(p)) => r.execute(&p),
            (St::Complete, Some(p)) => r.complete(&p),
            (St::ReadReply, Some(p)) => r.read_reply(&p),
            (St::AtomicReply, Some(p)) => r.atomic_reply(&p),
            (St::AtomicWriteReply, Some(p)) => r.atomic_write_reply(&p),
            (St::ProcessFlush, Some(p)) => r.process_flush(&p),
            (St::FlushResume, Some(p)) => r.resume_flush(&p),
            (St::FlushMore, _) => {
                r.release_mr();
                // Earlier requests are not kept waiting for their ACK while
                // the write-back goes on.
                r.flush_ack();
                return Outcome {
                    progress: true,
                    qp_error: false,
                    fault: false,
                };
            }
            (St::Acknowledge, Some(p)) => r.acknowledge(&p),
            (St::Cleanup, _) => {
                if pkt.is_some() {
                    r.io.pop();
                }
                r.release_mr();
                St::Done
            }
            (St::Duplicate, Some(p)) => r.duplicate(&p),
            (St::Err(e), Some(p)) => r.error(e, &p),
            (St::Done | St::Exit, _) if r.goto_error => St::Error,
            (St::Done, _) => {
                return Outcome {
                    progress: true,
                    qp_error: false,
                    fault: false,
                }
            }
            (St::Error, _) => {
                r.flush_ack();
                return Outcome {
                    progress: false,
                    qp_error: true,
                    fault: false,
                };
            }
            (St::Fault, _) => {
                r.release_mr();
                r.flush_ack();
                return Outcome {
                    progress: false,
                    qp_error: false,
                    fault: true,
                };
            }
            // St::Exit (the queue ran dry: a held ACK goes now), and states
            // that need a packet reached without one (not possible: only
            // GetReq sets it and every path starts there).
            _ => {
                r.flush_ack();
                return Outcome::default();
            }
        };
    }
}

impl<I: Io> Run<'_, I> {
    fn release_mr(&mut self) {
        self.io.release_mr();
        self.mr_held = false;
    }

    /// Sends the ACK held back by [`Run::acknowledge`], if any.
    fn flush_ack(&mut self) {
        if let Some(o) = self.st.ack_owed.take() {
            self.io.send_ack(&Ack {
                opcode: Opcode::RcAck,
                psn: o.psn,
                syndrome: ACK,
                msn: o.msn,
                orig: 0,
            });
        }
    }

    fn send_ack(&mut self, opcode: Opcode, syndrome: u8, psn: u32, orig: u64) {
        if opcode == Opcode::RcAck && syndrome == ACK {
            // A positive ACK covers every earlier PSN, the held one too.
            self.st.ack_owed = None;
        } else {
            self.flush_ack();
        }
        let a = Ack {
            opcode,
            psn,
            syndrome,
            msn: self.st.msn,
            orig,
        };
        self.io.send_ack(&a);
    }

    fn check_resource(&mut self, p: &Request) -> St {
        if p.has(Mask::READ_OR_ATOMIC.union(Mask::ATOMIC_WRITE)) {
            // The requester keeps within our depth; we only need some.
            return if self.st.res_count > 0 {
                St::ChkLength
            } else {
                St::Err(RespError::TooManyRdmaAtmReq)
            };
        }
        if p.has(Mask::RWR) {
            return match self.io.take_recv() {
                Ok(len) => {
                    self.recv_len = len;
                    St::ChkLength
                }
                Err(RecvError::Empty) => St::Err(RespError::Rnr),
                Err(RecvError::Malformed) => St::Err(RespError::MalformedWqe),
            };
        }
        St::ChkLength
    }

    fn check_length(&mut self, p: &Request) -> St {
        // UD: the payload and the network header must fit the buffer (C9-92).
        if matches!(self.qp.qp_type, qp::Type::Ud | qp::Type::Gsi)
            && u64::from(p.payload) + u64::from(GRH_LEN) > u64::from(self.recv_len)
        {
            return St::Err(RespError::Length);
        }
        if let Err(e) = check_length(self.qp, p) {
            return St::Err(e);
        }
        if p.has(Mask::RDMA_OP) {
            St::ChkRkey
        } else {
            St::Execute
        }
    }

    fn check_rkey(&mut self, p: &Request) -> St {
        let Some(t) = rdma_target(self.st, p) else {
            return St::Execute;
        };
        if self.io.lookup(&t).is_err() {
            return St::Err(RespError::RkeyViolation);
        }
        self.mr_held = true;
        if let Err(e) = check_rdma_len(self.st, self.qp, p) {
            self.release_mr();
            return St::Err(e);
        }
        St::Execute
    }

    fn execute(&mut self, p: &Request) -> St {
        if p.has(Mask::SEND) {
            let grh = matches!(self.qp.qp_type, qp::Type::Ud | qp::Type::Gsi);
            match self.io.recv_data(grh) {
                Ok(()) => {}
                Err(_) if self.io.absent() => return St::Fault,
                Err(RecvCopyError::NoSpace) => return St::Err(RespError::Length),
                Err(RecvCopyError::TooLong | RecvCopyError::Fault) => {
                    return St::Err(RespError::MalformedWqe)
                }
            }
        } else if p.has(Mask::WRITE) {
            if !self.mr_held {
                // A zero-length RETH names no memory: nothing may be written.
                if p.payload > 0 {
                    return St::Err(RespError::Length);
                }
            } else if self.io.write_data(self.st.va).is_err() {
                if self.io.absent() {
                    return St::Fault;
                }
                return St::Err(RespError::RkeyViolation);
            }
            self.st.va = self.st.va.wrapping_add(u64::from(p.payload));
            self.st.resid = self.st.resid.saturating_sub(p.payload);
        } else if p.has(Mask::READ) {
            // The first response's bytes; each later response stops at its
            // own absent pages.
            let first = self.st.resid.min(self.qp.mtu);
            if self.mr_held && !self.io.probe(self.st.va, first, false) {
                return St::Fault;
            }
            // The MSN counts a read when it starts (C9-148).
            self.st.msn = psn_add(self.st.msn, 1);
            return St::ReadReply;
        } else if p.has(Mask::ATOMIC) {
            if self.mr_held && !self.io.probe(self.st.va, 8, true) {
                return St::Fault;
            }
            return St::AtomicReply;
        } else if p.has(Mask::ATOMIC_WRITE) {
            if self.mr_held && !self.io.probe(self.st.va, 8, true) {
                return St::Fault;
            }
            return St::AtomicWriteReply;
        } else if p.has(Mask::FLUSH) {
            return St::ProcessFlush;
        }
        if let Some(rkey) = p.invalidate {
            match self.io.invalidate(rkey) {
                Ok(()) => {}
                Err(InvalidateError::Invalid) => return St::Err(RespError::InvalidateRkey),
                // Stricter than rdma_rxe: a key of another PD, or a window
                // bound to another QP, is a protection error (class C).
                Err(InvalidateError::Protection { .. }) => {
                    return St::Err(RespError::RkeyViolation)
                }
            }
        }
        self.st.executed(p, p.has(Mask::END));
        self.status = WcStatus::Success;
        if p.has(Mask::COMP) {
            St::Complete
        } else if self.qp.qp_type == qp::Type::Rc {
            St::Acknowledge
        } else {
            St::Cleanup
        }
    }

    fn complete(&mut self, p: &Request) -> St {
        if self.io.has_recv() {
            let cqe = recv_cqe(self.st, p, self.status, self.io.recv_received());
            if self.io.complete(&cqe).is_err() {
                return St::Err(RespError::CqOverflow);
            }
            if cqe.status == WcStatus::Success {
                self.io.count(Event::RecvCompleted);
            }
        }
        // Executed and completed before the QP failed: consume it once.
        if self.io.qp_in_error() {
            return St::Cleanup;
        }
        if self.qp.qp_type == qp::Type::Rc {
            St::Acknowledge
        } else {
            St::Cleanup
        }
    }

    fn read_reply(&mut self, p: &Request) -> St {
        let i = match self.st.cur {
            Some(i) => i,
            None => match self.st.prepare_res(ResKind::Read, p, self.qp.mtu) {
                Some(i) => i,
                None => return St::Err(RespError::TooManyRdmaAtmReq),
            },
        };
        let (mtu, msn) = (self.qp.mtu, self.st.msn);
        let Some(res) = self.st.res.get_mut(i).filter(|r| r.kind == ResKind::Read) else {
            // Only a read reply spans runs; anything else is stale.
            self.st.cur = None;
            return St::ChkPsn;
        };
        let prev_state = res.state;
        let (opcode, source) = if res.state == ResState::New {
            // A first response that stopped at an absent ODP page and runs
            // again no longer holds the MR: it looks the key up again.
            let src = if res.length == 0 || (!res.replay && self.mr_held) {
                ReadSource::Held
            } else {
                ReadSource::Recheck(res.rkey)
            };
            let op = if res.resid <= mtu {
                Opcode::RcReadResponseOnly
            } else {
                Opcode::RcReadResponseFirst
            };
            (op, src)
        } else {
            let op = if res.resid > mtu {
                Opcode::RcReadResponseMiddle
            } else {
                Opcode::RcReadResponseLast
            };
            (op, ReadSource::Recheck(res.rkey))
        };
        res.state = ResState::Next;
        let len = res.resid.min(mtu);
        let r = ReadResponse {
            opcode,
            psn: res.cur_psn,
            msn,
            va: res.va,
            len,
            source,
        };
        self.flush_ack();
        let sent = self.io.send_read_response(&r);
        if source == ReadSource::Held {
            self.release_mr();
        }
        if sent.is_err() && self.io.absent() {
            // Nothing went out: the same response is sent again later.
            if let Some(res) = self.st.res.get_mut(i) {
                res.state = prev_state;
            }
            return St::Fault;
        }
        if let Err(e) = sent {
            self.st.cur = None;
            return St::Err(match e {
                SendFailed::Send => RespError::Rnr,
                SendFailed::Access => RespError::RkeyViolation,
            });
        }
        let Some(res) = self.st.res.get_mut(i) else {
            return St::Cleanup;
        };
        res.va = res.va.wrapping_add(u64::from(len));
        res.resid -= len;
        res.cur_psn = psn_add(res.cur_psn, 1);
        if res.resid > 0 {
            return St::Done;
        }
        let (replay, cur_psn) = (res.replay, res.cur_psn);
        self.st.cur = None;
        if !replay {
            self.st.opcode = None;
        }
        if !psn_before(cur_psn, self.st.psn) {
            self.st.psn = cur_psn;
        }
        St::Cleanup
    }

    /// What [`Run::reply_res`] may change, to put back when the reply stops
    /// at an absent ODP page.
    fn res_undo(&self) -> ResUndo {
        let slot = if self.st.cur.is_none() && self.st.res_count > 0 {
            let i = self.st.res_head.min(self.st.res_count - 1);
            self.st.res.get(i).map(|r| (i, *r))
        } else {
            None
        };
        ResUndo {
            res_head: self.st.res_head,
            cur: self.st.cur,
            slot,
        }
    }

    fn res_restore(&mut self, u: ResUndo) {
        self.st.res_head = u.res_head;
        self.st.cur = u.cur;
        if let Some((i, r)) = u.slot {
            if let Some(s) = self.st.res.get_mut(i) {
                *s = r;
            }
        }
    }

    /// The resource of an atomic, atomic write or flush reply: the replayed
    /// one, or a new one.
    fn reply_res(&mut self, kind: ResKind, p: &Request) -> Option<usize> {
        match self.st.cur {
            Some(i) => Some(i),
            None => self.st.prepare_res(kind, p, self.qp.mtu),
        }
    }

    fn atomic_reply(&mut self, p: &Request) -> St {
        let undo = self.res_undo();
        let Some(i) = self.reply_res(ResKind::Atomic, p) else {
            return St::Err(RespError::TooManyRdmaAtmReq);
        };
        if self.st.res.get(i).is_some_and(|r| r.replay) {
            return St::Acknowledge;
        }
        let a = p.atmeth.unwrap_or_default();
        let op = if p.opcode == Opcode::RcCompareSwap {
            AtomicOp::CompareSwap {
                compare: a.compare,
                swap: a.swap_add,
            }
        } else {
            AtomicOp::FetchAdd { add: a.swap_add }
        };
        match self.io.atomic(self.st.va, op) {
            Ok(orig) => {
                if let Some(r) = self.st.res.get_mut(i) {
                    r.orig = orig;
                }
                self.st.executed(p, true);
                self.status = WcStatus::Success;
                St::Acknowledge
            }
            Err(_) if self.io.absent() => {
                self.res_restore(undo);
                St::Fault
            }
            Err(AtomicError::Misaligned) => St::Err(RespError::MisalignedAtomic),
            Err(AtomicError::Access) => St::Err(RespError::RkeyViolation),
        }
    }

    fn atomic_write_reply(&mut self, p: &Request) -> St {
        let undo = self.res_undo();
        let Some(i) = self.reply_res(ResKind::AtomicWrite, p) else {
            return St::Err(RespError::TooManyRdmaAtmReq);
        };
        if self.st.res.get(i).is_some_and(|r| r.replay) {
            return St::Acknowledge;
        }
        match self.io.atomic_write(self.st.va) {
            Ok(()) => {
                self.st.resid = 0;
                self.st.executed(p, true);
                self.status = WcStatus::Success;
                St::Acknowledge
            }
            Err(_) if self.io.absent() => {
                self.res_restore(undo);
                St::Fault
            }
            Err(AtomicError::Misaligned) => St::Err(RespError::MisalignedAtomic),
            Err(AtomicError::Access) => St::Err(RespError::RkeyViolation),
        }
    }

    fn process_flush(&mut self, p: &Request) -> St {
        let Some(i) = self.reply_res(ResKind::Flush, p) else {
            return St::Err(RespError::TooManyRdmaAtmReq);
        };
        let Some(res) = self.st.res.get(i).copied() else {
            return St::Err(RespError::TooManyRdmaAtmReq);
        };
        if res.replay {
            return St::Acknowledge;
        }
        if res.flush_type & FLUSH_PERSISTENT == 0 {
            return self.flush_done(p, res.flush_type & FLUSH_GLOBAL != 0);
        }
        // The write-back covers the range, or the whole region, and goes
        // piece by piece from here (`flush_piece`).
        let range = if res.flush_level != 0 {
            self.io.region_bounds()
        } else {
            Some((res.va, u64::from(res.length)))
        };
        let Some((start, end)) = range.and_then(|(va, len)| Some((va, va.checked_add(len)?)))
        else {
            return St::Err(RespError::RkeyViolation);
        };
        if let Some(r) = self.st.res.get_mut(i) {
            r.flush_next = start;
            r.flush_end = end;
        }
        self.flush_piece(i, p)
    }

    /// Whether the head request is a FLUSH whose write-back an earlier run
    /// left unfinished.
    fn flush_pending(&self) -> bool {
        self.st
            .cur
            .and_then(|i| self.st.res.get(i))
            .is_some_and(|r| r.flush_pending())
    }

    /// The next piece of the write-back [`Run::process_flush`] began: the
    /// key is looked up again, as the region may have gone since.
    fn resume_flush(&mut self, p: &Request) -> St {
        let Some(i) = self.st.cur else {
            return St::ChkPsn;
        };
        let Some(res) = self.st.res.get(i).copied() else {
            return St::ChkPsn;
        };
        if !p.has(Mask::FLUSH) || p.psn != res.first_psn {
            // Not the request the write-back belongs to: forget it.
            self.stop_flush(i);
            self.st.cur = None;
            return St::ChkPsn;
        }
        let t = Target {
            rkey: res.rkey,
            access: flush_rights(res.flush_type),
            va: res.flush_next,
            len: 0,
            check_range: false,
        };
        if self.io.lookup(&t).is_err() {
            self.stop_flush(i);
            return St::Err(RespError::RkeyViolation);
        }
        self.mr_held = true;
        self.flush_piece(i, p)
    }

    /// Writes back one piece of resource `i`'s range; acknowledges the
    /// FLUSH after the last.
    fn flush_piece(&mut self, i: usize, p: &Request) -> St {
        let Some(res) = self.st.res.get(i).copied() else {
            return St::Err(RespError::TooManyRdmaAtmReq);
        };
        let (next, end) = (res.flush_next, res.flush_end);
        let piece_end = flush_piece_end(next, end);
        if piece_end > next && self.io.flush(next, piece_end - next).is_err() {
            self.stop_flush(i);
            return St::Err(RespError::RkeyViolation);
        }
        if let Some(r) = self.st.res.get_mut(i) {
            r.flush_next = piece_end;
        }
        if piece_end < end {
            return St::FlushMore;
        }
        self.flush_done(p, true)
    }

    /// Ends the write-back of resource `i` where it stands.
    fn stop_flush(&mut self, i: usize) {
        if let Some(r) = self.st.res.get_mut(i) {
            r.flush_end = r.flush_next;
        }
    }

    /// The end of a FLUSH: the barrier, when it asks for placement, then
    /// the bookkeeping of an executed request.
    fn flush_done(&mut self, p: &Request, barrier: bool) -> St {
        if barrier {
            self.io.flush_barrier();
        }
        self.st.executed(p, true);
        self.status = WcStatus::Success;
        St::Acknowledge
    }

    fn acknowledge(&mut self, p: &Request) -> St {
        if self.qp.qp_type != qp::Type::Rc {
            return St::Cleanup;
        }
        // A held ACK goes once the requests behind it span
        // MAX_COALESCED_PSNS, whether or not this one asks for an ACK.
        if self
            .st
            .ack_owed
            .is_some_and(|o| psn_sub(p.psn, o.first) >= MAX_COALESCED_PSNS)
        {
            self.flush_ack();
        }
        if self.syndrome != ACK {
            self.send_ack(Opcode::RcAck, self.syndrome, p.psn, 0);
        } else if p.has(Mask::ATOMIC) {
            let orig = self
                .st
                .cur
                .and_then(|i| self.st.res.get(i))
                .map_or(0, |r| r.orig);
            self.send_ack(Opcode::RcAtomicAck, ACK, p.psn, orig);
            self.st.cur = None;
        } else if p.has(Mask::FLUSH.union(Mask::ATOMIC_WRITE)) {
            self.send_ack(Opcode::RcReadResponseOnly, ACK, p.psn, 0);
            self.st.cur = None;
        } else if p.ack_req {
            // Any held ACK is within MAX_COALESCED_PSNS here (see above).
            // One still held when the QP fails goes out then (`St::Error`).
            if self.io.more_queued() {
                self.st.ack_owed = Some(OwedAck {
                    psn: p.psn,
                    msn: self.st.msn,
                    first: self.st.ack_owed.map_or(p.psn, |o| o.first),
                });
            } else {
                self.send_ack(Opcode::RcAck, ACK, p.psn, 0);
            }
        }
        St::Cleanup
    }

    fn duplicate(&mut self, p: &Request) -> St {
        if p.has(Mask::SEND.union(Mask::WRITE)) {
            // Acknowledge again (C9-105).
            let prev = psn_sub(self.st.ack_psn, 1);
            self.send_ack(Opcode::RcAck, ACK, prev, 0);
            return St::Cleanup;
        }
        let (kind, next) = if p.has(Mask::FLUSH) {
            (ResKind::Flush, St::ProcessFlush)
        } else if p.has(Mask::READ) {
            (ResKind::Read, St::ReadReply)
        } else if p.has(Mask::ATOMIC) {
            (ResKind::Atomic, St::AtomicReply)
        } else {
            (ResKind::AtomicWrite, St::AtomicWriteReply)
        };
        // Not found: too old to answer (class D), drop it.
        let Some(i) = self.st.find_res(p.psn) else {
            return St::Cleanup;
        };
        let Some(res) = self.st.res.get_mut(i).filter(|r| r.kind == kind) else {
            return St::Cleanup;
        };
        if kind == ResKind::Read {
            // Only the same read, or a tail of it, is replayed.
            let (va, len, rkey) = p.reth.map_or((0, 0, 0), |h| (h.va, h.len, h.rkey));
            let end = u128::from(va) + u128::from(len);
            let org_end = u128::from(res.va_org) + u128::from(res.length);
            // A zero-length read kept rkey 0 (it names no memory), so its
            // duplicate is matched without the key; C compares it anyway and
            // never answers a retried zero-length read.
            if va < res.va_org
                || len > res.length
                || end > org_end
                || (rkey != res.rkey && len != 0)
            {
                return St::Cleanup;
            }
            res.state = if p.psn == res.first_psn {
                ResState::New
            } else {
                ResState::Replay
            };
            res.va_org = va;
            res.va = va;
            res.resid = len;
        }
        res.replay = true;
        res.cur_psn = p.psn;
        self.st.cur = Some(i);
        next
    }

    /// Classes A and C: NAK the request, fail its receive WQE, error the QP.
    fn class_ac(&mut self, nak: NakCode, status: WcStatus) -> St {
        self.syndrome = Syndrome::Nak(nak).encode();
        self.status = status;
        self.goto_error = true;
        St::Complete
    }

    fn error(&mut self, e: RespError, p: &Request) -> St {
        let rc = self.qp.qp_type == qp::Type::Rc;
        match e {
            RespError::PsnOutOfSeq => {
                let syn = Syndrome::Nak(NakCode::PsnSeqError).encode();
                self.send_ack(Opcode::RcAck, syn, self.st.psn, 0);
                St::Cleanup
            }
            RespError::TooManyRdmaAtmReq
            | RespError::MissingOpcodeFirst
            | RespError::MissingOpcodeLastC
            | RespError::UnsupportedOpcode
            | RespError::MisalignedAtomic => {
                self.class_ac(NakCode::InvalidRequest, WcStatus::RemInvReqErr)
            }
            RespError::MissingOpcodeLastD1e => {
                // The broken message is forgotten whatever it held, so the
                // next first or only packet starts a new one.
                self.st.opcode = None;
                if self.qp.srq {
                    // Class E: fail the message's WQE.
                    self.st.drop_msg = true;
                    if self.io.has_recv() {
                        self.status = WcStatus::RemInvReqErr;
                        return St::Complete;
                    }
                    return St::Cleanup;
                }
                // Class D1: forget the broken message, keep its WQE.
                if self.io.has_recv() {
                    self.io.rewind_recv();
                }
                self.release_mr();
                St::Cleanup
            }
            RespError::Rnr => {
                if rc {
                    self.io.count(Event::SentRnrNak);
                    let syn = Syndrome::RnrNak {
                        timer: self.qp.min_rnr_timer,
                    }
                    .encode();
                    self.send_ack(Opcode::RcAck, syn, p.psn, 0);
                } else {
                    self.st.drop_msg = true;
                }
                St::Cleanup
            }
            RespError::RkeyViolation => {
                if rc {
                    return self.class_ac(NakCode::RemoteAccessError, WcStatus::RemAccessErr);
                }
                self.st.drop_msg = true;
                if self.qp.srq {
                    self.status = WcStatus::RemAccessErr;
                    St::Complete
                } else {
                    St::Cleanup
                }
            }
            RespError::InvalidateRkey => {
                self.goto_error = true;
                self.status = WcStatus::RemInvReqErr;
                St::Complete
            }
            RespError::Length => {
                if rc {
                    self.class_ac(NakCode::InvalidRequest, WcStatus::RemInvReqErr)
                } else if self.qp.srq {
                    self.status = WcStatus::RemInvReqErr;
                    St::Complete
                } else {
                    self.st.drop_msg = true;
                    St::Cleanup
                }
            }
            RespError::MalformedWqe => {
                self.class_ac(NakCode::RemoteOperationalError, WcStatus::LocQpOpErr)
            }
            RespError::CqOverflow => St::Error,
        }
    }
}

#[cfg(test)]
#[path = "resp_machine_tests/mod.rs"]
mod tests;
