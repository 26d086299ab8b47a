// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The responder state machine (`rxe_receiver()`) over the engine's [`Io`].
//! [`Io`], the values that cross it and [`Outcome`] live in
//! [`super::io`](super::io); this module re-exports them.
//!
//! # API
//!
//! - trait [`Io`]: the engine's primitives over the request packet at the
//!   head of its queue, the RQ/SRQ, memory regions, the CQ and the wire
//! - [`run`]`(state, qp, io) -> Outcome`: one `rxe_receiver()` call. It
//!   handles the head request until it is done, or sends one packet of a
//!   read reply; the engine calls it again while `progress`, and moves the
//!   QP to ERR on `qp_error`. A request [`fast::predict`] takes (the
//!   in-order MIDDLE or LAST of a SEND or WRITE under way, or a SEND ONLY
//!   between messages) skips the
//!   checks that cannot fail for it and runs the execute, complete and
//!   acknowledge steps straight; any failure there goes on in the state
//!   machine as it would have
//! - [`recv_cqe`]`(state, request, status, received) -> RecvCqe`
//! - the types [`Io`] uses: [`Target`](rules::Target), [`ReadResponse`],
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
//! A duplicate send or write is acknowledged with its own PSN (C uses the
//! newest executed PSN; see [`Run::duplicate`]).

use super::super::events::Event;
use super::super::headers::{FLUSH_GLOBAL, FLUSH_PERSISTENT};
use super::super::mr::{AtomicOp, InvalidateError};
use super::super::opcode::{Mask, Opcode};
use super::super::params::pacing::MAX_COALESCED_PSNS;
use super::super::psn::{psn_add, psn_before, psn_sub};
use super::super::qp;
use super::super::uapi::WcStatus;
use super::super::wire::{NakCode, Syndrome};
use super::fast;
pub(crate) use super::io::{
    recv_cqe, AccessFault, Ack, AtomicError, CqFull, Io, Outcome, ReadResponse, ReadSource,
    RecvCopyError, RecvCqe, RecvError, SendFailed,
};
use super::rules::{
    self, check_length, check_rdma_len, check_request, flush_piece_end, flush_rights, rdma_target,
    Check, OwedAck, Request, Res, ResKind, ResState, RespError, RespQp, Target, GRH_LEN,
};

/// `enum resp_states`, minus the states folded into others.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
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
    st: &'a mut rules::State,
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
pub(crate) fn run(st: &mut rules::State, qp: &RespQp, io: &mut impl Io) -> Outcome {
    run_with(st, qp, io, true)
}

/// [`run`] with header prediction off: every request goes through the
/// state machine (the reference the fast path is tested against).
#[cfg(test)]
pub(crate) fn run_slow(st: &mut rules::State, qp: &RespQp, io: &mut impl Io) -> Outcome {
    run_with(st, qp, io, false)
}

#[inline(always)]
fn run_with(st: &mut rules::State, qp: &RespQp, io: &mut impl Io, predict: bool) -> Outcome {
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
    // The request at the head of the queue, borrowed by every state below.
    let Some(pkt) = r.io.peek_next(r.st.psn) else {
        // The queue ran dry: an ACK held back goes now.
        r.flush_ack_at_dry();
        return Outcome::default();
    };
    let p = &pkt;
    if predict {
        let ctx = fast::Ctx {
            wqe_held: r.io.has_recv(),
            status_moved: r.io.status_moved(),
        };
        if let Some(kind) = fast::predict(r.st, r.qp, p, ctx) {
            return r.fast(kind, p);
        }
    }
    let s = if r.flush_pending() {
        St::FlushResume
    } else if r.st.cur.is_some() {
        St::ReadReply
    } else {
        St::ChkPsn
    };
    r.drive(s, p)
}

impl<I: Io> Run<'_, I> {
    /// A predicted request ([`fast::predict`]): the steps the state
    /// machine would take after its checks, in a row. Anything but the
    /// plain outcome goes on in the state machine from where it stands.
    #[inline(always)]
    fn fast(&mut self, kind: fast::Fast, p: &Request) -> Outcome {
        let mut s = match kind {
            fast::Fast::Send => self.execute(p),
            fast::Fast::Write => match self.check_rkey(p) {
                St::Execute => self.execute(p),
                s => s,
            },
            // The lengths were checked by the prediction.
            fast::Fast::SendOnly => match self.check_resource(p) {
                St::ChkLength => self.execute(p),
                s => s,
            },
        };
        if s == St::Complete {
            s = self.complete(p);
        }
        if s == St::Acknowledge {
            s = self.acknowledge(p);
        }
        if s == St::Cleanup && !self.goto_error {
            self.io.pop();
            self.release_mr();
            return Outcome {
                progress: true,
                qp_error: false,
                fault: false,
            };
        }
        self.drive(s, p)
    }

    /// Holds a request beyond a gap (`rules::ahead`) in the reorder buffer
    /// rather than drop it; false when there is no room, and the request
    /// goes on as rdma_rxe takes it (NAKed, or dropped after the NAK).
    /// The gap is NAKed when [`rules::NAK_AFTER_HELD`] requests are held,
    /// and at each held request that asks for an ACK (the requester waits
    /// for one, and nothing may follow to reveal the loss); reordering
    /// fills a gap before either, with no resend.
    fn hold(&mut self, p: &Request) -> bool {
        let Some(held) = self.io.hold(self.st.psn) else {
            return false;
        };
        self.io.count(Event::ReorderHeld);
        // A held request that asks for an ACK gets the NAK again: the
        // resend of the gap, or the first NAK, may have been lost.
        if p.ack_req || (!self.st.sent_psn_nak && held >= rules::NAK_AFTER_HELD) {
            self.nak_gap();
        }
        true
    }

    /// NAKs the gap at the expected PSN (counted; no further NAK until the
    /// expected request comes).
    fn nak_gap(&mut self) {
        self.st.sent_psn_nak = true;
        self.io.count(Event::OutOfSeqRequest);
        self.send_seq_nak();
    }

    /// A PSN sequence NAK at the expected PSN.
    fn send_seq_nak(&mut self) {
        let syn = Syndrome::Nak(NakCode::PsnSeqError).encode();
        self.send_ack(Opcode::RcAck, syn, self.st.psn, 0);
    }

    /// A held request does not continue the message the requests before it
    /// left: the peer resent those with other contents than it first sent
    /// (rdma_rxe's requester can, when a timeout finds a WQE acknowledged
    /// but not yet retired: it resends it as an empty packet, and every
    /// later PSN moves by one). What was held belongs to the first
    /// sending: all of it goes, and a sequence NAK has the peer resend
    /// from here, as go-back-N would have.
    fn held_mismatch(&mut self) -> St {
        self.io.drop_held();
        self.nak_gap();
        St::Done
    }

    /// The state machine from state `s` until the run ends.
    fn drive(&mut self, mut s: St, p: &Request) -> Outcome {
        let r = self;
        loop {
            s = match s {
                St::ChkPsn if rules::ahead(r.st, r.qp, p) && r.hold(p) => St::Done,
                St::ChkPsn => match check_request(r.st, r.qp, p) {
                    Check::Error(
                        RespError::MissingOpcodeFirst
                        | RespError::MissingOpcodeLastC
                        | RespError::MissingOpcodeLastD1e,
                    ) if r.io.head_was_held() => r.held_mismatch(),
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
                St::ChkResource => r.check_resource(p),
                St::ChkLength => r.check_length(p),
                St::ChkRkey => r.check_rkey(p),
                St::Execute => r.execute(p),
                St::Complete => r.complete(p),
                St::ReadReply => r.read_reply(p),
                St::AtomicReply => r.atomic_reply(p),
                St::AtomicWriteReply => r.atomic_write_reply(p),
                St::ProcessFlush => r.process_flush(p),
                St::FlushResume => r.resume_flush(p),
                St::FlushMore => {
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
                St::Acknowledge => r.acknowledge(p),
                St::Cleanup => {
                    r.io.pop();
                    r.release_mr();
                    St::Done
                }
                St::Duplicate => r.duplicate(p),
                St::Err(e) => r.error(e, p),
                St::Done if r.goto_error => St::Error,
                St::Done => {
                    return Outcome {
                        progress: true,
                        qp_error: false,
                        fault: false,
                    }
                }
                St::Error => {
                    r.flush_ack();
                    return Outcome {
                        progress: false,
                        qp_error: true,
                        fault: false,
                    };
                }
                St::Fault => {
                    r.release_mr();
                    r.flush_ack();
                    return Outcome {
                        progress: false,
                        qp_error: false,
                        fault: true,
                    };
                }
            };
        }
    }
}

impl<I: Io> Run<'_, I> {
    fn release_mr(&mut self) {
        self.io.release_mr();
        self.mr_held = false;
    }

    /// [`Run::flush_ack`] when no request is left to run. Where a resend
    /// filled a NAKed gap and requests beyond another gap are still held,
    /// the answer is a sequence NAK at that gap, which acknowledges all
    /// before it as the ACK would and names what is missing: rdma_rxe's
    /// requester goes back to it at once rather than resend everything
    /// in between; rxe_rs's, already resending, skips what it acknowledges.
    fn flush_ack_at_dry(&mut self) {
        let filled = core::mem::take(&mut self.st.gap_filled);
        if filled && self.st.ack_owed.is_some() && self.io.holds_requests() {
            self.st.ack_owed = None;
            self.nak_gap();
        } else {
            self.flush_ack();
        }
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

    fn acknowledge(&mut self, p: &Request) -> St {
        if self.qp.qp_type != qp::Type::Rc {
            return St::Cleanup;
        }
        // A held ACK goes once the requests behind it span
        // MAX_COALESCED_PSNS, whether or not this one asks for an ACK;
        // not while requests come out of the reorder buffer, which run at
        // once: one ACK answers them all.
        if self
            .st
            .ack_owed
            .is_some_and(|o| psn_sub(p.psn, o.first) >= MAX_COALESCED_PSNS)
            && !self.io.head_was_held()
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
        } else if let Some(o) = &mut self.st.ack_owed {
            // The held ACK covers this request too.
            o.psn = p.psn;
            o.msn = self.st.msn;
        }
        St::Cleanup
    }

    fn duplicate(&mut self, p: &Request) -> St {
        if p.has(Mask::SEND.union(Mask::WRITE)) {
            // Acknowledge again (C9-105), with the duplicate's own PSN: it and
            // every PSN before it were executed. The newest executed PSN would
            // be as true, but rdma_rxe's completer retires a WQE on any ACK
            // for its last PSN, even one that comes while a retry is still
            // resending the WQE's first packets; its requester then goes on
            // from the retired slot and may never send the next WQE. With the
            // duplicate's PSN, only the resent last packet is answered with
            // the last PSN, once the whole WQE is out again.
            match self.st.ack_owed {
                // A held ACK covers the duplicate: it goes now.
                Some(o) if !psn_before(o.psn, p.psn) => self.flush_ack(),
                _ => self.send_ack(Opcode::RcAck, ACK, p.psn, 0),
            }
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
                self.send_seq_nak();
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

#[path = "reply.rs"]
mod reply;

#[cfg(test)]
#[path = "machine_tests.rs"]
pub(crate) mod tests;
