// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Completer decisions of rdma_rxe (rxe_comp.c): matching ACKs, NAKs, read
//! responses and atomic ACKs against the send queue, retiring WQEs,
//! counting retries, and the completion a send WQE produces.
//!
//! The completer's state machine runs here, whole: the engine implements
//! [`Sq`] (a handful of queue and copy primitives over the real send queue
//! and the dequeued packet) and calls [`run`] once per scheduling, exactly
//! where rdma_rxe calls `rxe_completer()`.
//!
//! # API
//!
//! - [`State`]`::new(sq_psn, retry_cnt, rnr_retry)`, `.set_sq_psn(psn)`,
//!   `.set_retry_cnt(n)`, `.set_rnr_retry(n)`, `.timer_fired()`, `.reset()`
//! - [`Response`] `{ opcode, psn, syndrome }`: one received ACK-side packet
//! - [`Head`] `{ info: WqeInfo, progress: Progress }`: the WQE at the SQ consumer
//! - trait [`Sq`]: `next_response()`, `head()`, `read_data()`, `atomic_data()`,
//!   `retire(status)`
//! - [`run`]`(comp, req, sq) -> Outcome`
//! - [`send_cqe`]`(info, status) -> SendCqe`, [`must_post`]`(sig_all, flags, status)`
//! - [`FLUSH_STATUS`]: what every WQE completes with when the QP is in ERR
//!
//! The engine, before [`run`]: if the QP is in ERR (or RESET, or going
//! away) it drops queued responses and retires every WQE with
//! [`FLUSH_STATUS`] (posting CQEs only in ERR, stopping at the first full
//! CQ), as `flush_send_queue()` does. In SQD, the engine raises
//! `IB_EVENT_SQ_DRAINED` once draining and `comp.psn == req.psn`.
//!
//! # Where this differs from rdma_rxe
//!
//! Each case is one where C completes a WQE wrongly or wedges, found by the
//! lossy end-to-end simulation in `sim_tests.rs` (the short read response
//! by the packet fuzzer, `fuzz_tests.rs`):
//! - a response out of sequence fails the WQE with `IB_WC_BAD_RESP_ERR`
//!   (C leaves whatever status the WQE slot held);
//! - an old duplicate positive ACK during a read's responses is dropped (C
//!   restarts the response sequence and fails the read on its next response);
//! - a plain ACK at a read's or atomic's PSN starts a retry (C completes the
//!   WQE without its data);
//! - a read response at the read's last PSN that leaves its buffer short
//!   fails the read with `IB_WC_BAD_RESP_ERR` (C moves past it, and a
//!   duplicate of that response then completes the read without its data);
//! - a sent write/send-like WQE whose PSNs are all acknowledged retires at
//!   the next run (C waits for a later response, and a timeout meanwhile
//!   makes `req_retry()` resend it as a bogus packet; see
//!   `requester::Step::Skip`).
//!
//! And where it recovers sooner: [`GAP_RETRY_RESPONSES`] read or atomic
//! responses beyond a gap, without progress between them, start a retry
//! from the gap at once (C waits for the retransmit timer; counted in
//! `completer_gap_retry`); read responses beyond a gap are held
//! ([`Sq::hold_response`]) and taken once it fills (C drops them, and the
//! read waits for the replay of every one).

use super::events::Event;
use super::opcode::{Mask, Opcode};
use super::psn::{psn_add, psn_after, psn_before, psn_diff};
use super::requester::{self, Progress, WqeInfo};
use super::uapi::{wc_flags, SendFlags, WcOpcode, WcStatus, WqeState, WrMask, WrOpcode};
use super::wire::{NakCode, Syndrome, RNR_RETRY_INFINITE};

/// Completion status of every WQE flushed from a QP in ERR.
pub(crate) const FLUSH_STATUS: WcStatus = WcStatus::WrFlushErr;

/// A retry counter of 7 never runs out (C applies this to both counters).
const INFINITE: u8 = RNR_RETRY_INFINITE;

/// Read or atomic responses beyond a gap, with no progress between them,
/// after which the completer takes the gap for a loss and retries at once
/// (see [`check_psn`]). Three, as TCP's fast retransmit counts duplicate
/// ACKs: one or two may be a response that overtook a late one.
pub(crate) const GAP_RETRY_RESPONSES: u8 = 3;

/// `qp->comp`: the completer's per-QP state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct State {
    /// The oldest PSN not yet acknowledged.
    pub(crate) psn: u32,
    /// Opcode of the last read response of an unfinished read (FIRST or
    /// MIDDLE); `None` (C's -1) between messages.
    pub(crate) opcode: Option<Opcode>,
    /// Set by the retransmit timer, consumed by the next [`run`].
    pub(crate) timeout: bool,
    pub(crate) timeout_retry: bool,
    /// A retry is under way; further NAKs do not start another one.
    pub(crate) started_retry: bool,
    pub(crate) retry_cnt: u8,
    pub(crate) rnr_retry: u8,
    /// The QP attributes the counters are reset to.
    pub(crate) attr_retry_cnt: u8,
    pub(crate) attr_rnr_retry: u8,
    /// Read or atomic responses beyond a gap since the last progress.
    pub(crate) gap_responses: u8,
    /// The retry being started was asked for by [`GAP_RETRY_RESPONSES`]
    /// such responses.
    pub(crate) gap_retry: bool,
    /// Set by the probe (see [`State::probe_fired`]), consumed by the next
    /// [`run`].
    pub(crate) probe: bool,
}

impl State {
    pub(crate) const fn new(sq_psn: u32, retry_cnt: u8, rnr_retry: u8) -> State {
        State {
            psn: psn_add(sq_psn, 0),
            opcode: None,
            timeout: false,
            timeout_retry: false,
            started_retry: false,
            retry_cnt,
            rnr_retry,
            attr_retry_cnt: retry_cnt,
            attr_rnr_retry: rnr_retry,
            gap_responses: 0,
            gap_retry: false,
            probe: false,
        }
    }

    /// Modify with `IB_QP_SQ_PSN`.
    pub(crate) fn set_sq_psn(&mut self, psn: u32) {
        self.psn = psn_add(psn, 0);
    }

    /// Modify with `IB_QP_RETRY_CNT`.
    pub(crate) fn set_retry_cnt(&mut self, n: u8) {
        self.attr_retry_cnt = n;
        self.retry_cnt = n;
    }

    /// Modify with `IB_QP_RNR_RETRY`.
    pub(crate) fn set_rnr_retry(&mut self, n: u8) {
        self.attr_rnr_retry = n;
        self.rnr_retry = n;
    }

    /// The retransmit timer fired (the engine then schedules the completer).
    pub(crate) fn timer_fired(&mut self) {
        self.timeout = true;
    }

    /// The retransmit timer fired early, for the probe: nothing was
    /// acknowledged for a fraction of the ACK timeout while PSNs were
    /// outstanding (a lost last packet, or a lost ACK or NAK, which
    /// nothing after it would reveal). The next run resends from the
    /// oldest unacknowledged PSN, as after a timeout but without using up
    /// a retry: the rest of the timeout still runs and counts a retry.
    pub(crate) fn probe_fired(&mut self) {
        self.probe = true;
    }

    /// Moving to RESET: the completer restarts between messages
    /// (`comp.opcode` is -1 again when the QP is next used).
    pub(crate) fn reset(&mut self) {
        self.opcode = None;
        self.timeout = false;
        self.timeout_retry = false;
        self.started_retry = false;
        self.gap_responses = 0;
        self.gap_retry = false;
        self.probe = false;
    }

    fn reset_retry_counters(&mut self) {
        self.retry_cnt = self.attr_retry_cnt;
        self.rnr_retry = self.attr_rnr_retry;
        self.started_retry = false;
        self.gap_responses = 0;
    }
}

/// The fields of a received ACK, atomic ACK or read response the completer
/// decides on. `syndrome` is the raw AETH syndrome; it is ignored for
/// READ_RESPONSE_MIDDLE, which has no AETH.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Response {
    pub(crate) opcode: Opcode,
    pub(crate) psn: u32,
    pub(crate) syndrome: u8,
}

/// The WQE at the send queue's consumer index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Head {
    pub(crate) info: WqeInfo,
    pub(crate) progress: Progress,
}

/// A scatter into the WQE's local buffers failed (bad lkey, out of range,
/// more data than the WQE expects): the WQE completes with `IB_WC_LOC_PROT_ERR`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CopyFault;

/// What [`run`] needs from the engine.
pub(crate) trait Sq {
    /// Dequeues the next response packet, if any. The engine keeps its skb
    /// until `run` returns, for [`Sq::read_data`]/[`Sq::atomic_data`].
    fn next_response(&mut self) -> Option<Response>;
    /// [`Sq::next_response`], where a read response held beyond a gap
    /// ([`Sq::hold_response`]) with PSN `comp_psn`, the one the completer
    /// expects, comes first.
    fn next_response_from(&mut self, _comp_psn: u32) -> Option<Response> {
        self.next_response()
    }
    /// Keeps the dequeued response, a read response beyond `comp_psn`, in
    /// the QP's reorder buffer instead of dropping it, for
    /// [`Sq::next_response_from`] once the responses before it have come.
    fn hold_response(&mut self, _comp_psn: u32) {}
    /// The WQE at the SQ consumer index, or `None` when the queue is empty.
    fn head(&mut self) -> Option<Head>;
    /// Scatters the dequeued read response's payload into the head WQE at
    /// its cursor and returns its `resid` afterwards.
    fn read_data(&mut self) -> Result<u32, CopyFault>;
    /// Scatters the atomic ACK's original value (8 bytes) into the head WQE.
    fn atomic_data(&mut self) -> Result<(), CopyFault>;
    /// Retires the head WQE with `status`: writes status and state back,
    /// posts a CQE when [`must_post`] says so (see [`send_cqe`]), advances
    /// the consumer index.
    fn retire(&mut self, status: WcStatus);
    /// Reports `ev` for the port counters.
    fn count(&mut self, _ev: Event) {}
    /// Whether the scatter that just failed failed only because a page of
    /// an on-demand-paging MR was absent. The response is then dropped as
    /// if lost on the wire and the requester retries from the completer's
    /// PSN, once the engine faulted the page in.
    fn absent(&self) -> bool {
        false
    }
}

/// What the engine does after [`run`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Outcome {
    /// A response packet was handled: run again (C returned 0).
    pub(crate) progress: bool,
    /// The requester has work again (C's `req.again`); run it, and keep the
    /// task looping even when `progress` is false.
    pub(crate) again: bool,
    /// Arm the RNR NAK timer for this 5-bit timer code (`wire::rnr_timer_us`);
    /// when it fires, call `requester::State::rnr_timer_fired` and run the requester.
    pub(crate) rnr_timer: Option<u8>,
    /// Packets are outstanding: restart the retransmit timer, if the QP is
    /// RC, has a timeout and is at least RTS (`reset_retry_timer()`).
    pub(crate) rearm_retransmit: bool,
    /// A WQE completed in error: move the QP to ERR.
    pub(crate) qp_error: bool,
}

impl Outcome {
    /// Folds the outcome of a later run into this one: `again` and
    /// `qp_error` add up; whether there is more to run, the timer and the
    /// retransmit decision are the later run's.
    pub(crate) fn merge(&mut self, later: Outcome) {
        self.progress = later.progress;
        self.again |= later.again;
        self.qp_error |= later.qp_error;
        self.rnr_timer = later.rnr_timer.or(self.rnr_timer);
        self.rearm_retransmit = later.rearm_retransmit;
    }
}

/// `enum comp_state`, with the status of COMPST_ERROR carried along.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    GetWqe,
    CompWqe,
    CompAck,
    CheckPsn,
    CheckAck,
    Read,
    Atomic,
    WriteSend,
    UpdateComp,
    ErrorRetry,
    /// A read response beyond a gap: hold it, then retry (`true`: the gap
    /// was found lost) or stop.
    Hold(bool),
    RnrRetry,
    Error(WcStatus),
    Exit,
    Done,
}

/// Status for a response that does not fit the WQE or the response
/// sequence. rdma_rxe leaves `wqe->status` as it was (and WARNs) before it
/// completes the WQE and errors the QP; the verbs status for exactly this
/// case is a bad response.
const BAD_RESPONSE: WcStatus = WcStatus::BadRespErr;

fn get_wqe(comp: &State, head: Option<&Head>, pkt: Option<&Response>) -> St {
    let Some(h) = head else {
        return if pkt.is_some() { St::Done } else { St::Exit };
    };
    if fully_acked(comp, h) {
        return St::CompWqe;
    }
    match h.progress.state {
        WqeState::Posted => {
            if pkt.is_some() {
                St::Done
            } else {
                St::Exit
            }
        }
        WqeState::Done => St::CompWqe,
        WqeState::Error => St::Error(h.progress.status),
        WqeState::Processing | WqeState::Pending => {
            if pkt.is_some() {
                St::CheckPsn
            } else {
                St::Exit
            }
        }
    }
}

/// A sent write/send-like WQE whose every PSN `comp.psn` has passed. C only
/// retires it when a later response arrives; until then a timeout retries
/// it, and `req_retry()` rewinds a fully acknowledged WQE into a spurious
/// zero-length packet that shifts every later PSN by one (the responder
/// then splices two messages). An ACK for its last PSN can arrive while a
/// retry is still resending its tail, which is how `comp.psn` gets there.
pub(crate) fn fully_acked(comp: &State, h: &Head) -> bool {
    h.progress.state == WqeState::Pending
        && !h.info.mask.intersects(WrMask::ATOMIC_OR_READ)
        && psn_after(comp.psn, h.progress.last_psn)
}

fn read_in_progress(op: Option<Opcode>) -> bool {
    matches!(
        op,
        Some(Opcode::RcReadResponseFirst | Opcode::RcReadResponseMiddle)
    )
}

fn check_psn(comp: &mut State, h: &Head, pkt: &Response) -> St {
    let read_or_atomic = h.info.mask.intersects(WrMask::ATOMIC_OR_READ);
    if psn_after(pkt.psn, h.progress.last_psn) {
        // The response is for a later WQE: this one was implicitly acked
        // (write/send) or its response was lost (read/atomic).
        if h.progress.state != WqeState::Pending {
            return St::Done;
        }
        if read_or_atomic {
            return St::ErrorRetry;
        }
        comp.reset_retry_counters();
        return St::CompWqe;
    }
    let diff = psn_diff(pkt.psn, comp.psn);
    if diff < 0 {
        // An old response for the head's last PSN completes it only while
        // the head is sent whole (pending). A retry may be resending it:
        // retired now, the requester would find the next WQE where it
        // left this one and go on with this message's opcodes and PSNs
        // (C does; the responder then NAKs an invalid request). Such a
        // head completes once its resend ends (`fully_acked`).
        if pkt.psn == h.progress.last_psn && h.progress.state == WqeState::Pending {
            St::CompAck
        } else if pkt.psn == h.progress.last_psn {
            St::Done
        } else if pkt.opcode == Opcode::RcAck
            && read_in_progress(comp.opcode)
            && !is_ack(pkt.syndrome)
        {
            // An old NAK still reports an error on the read in progress. C
            // also takes an old positive ACK here, which ends the read's
            // response sequence early and fails the read on its next
            // response; such an ACK carries nothing new.
            St::CheckAck
        } else {
            St::Done
        }
    } else if diff > 0 && read_or_atomic {
        // Go-back-N drops a read or atomic response beyond a gap: an
        // earlier one was lost, or is late. rdma_rxe then waits for its
        // retransmit timer (the QP's ACK timeout, 67 ms and more). After
        // a few such responses with no progress between them the gap is
        // taken for a loss, and the requester asks again from it at once,
        // as after the timer: a duplicate request, which every responder
        // answers by replaying from that PSN. Not while a retry is under
        // way (its own responses are yet to come).
        let mut retry = false;
        if !comp.started_retry {
            comp.gap_responses = comp.gap_responses.saturating_add(1);
            if comp.gap_responses >= GAP_RETRY_RESPONSES {
                comp.gap_responses = 0;
                comp.gap_retry = true;
                retry = true;
            }
        }
        // A read response is kept for when the gap fills (by the late
        // response or the replay the retry asks for): the read then goes
        // on from it without waiting for its replay.
        if matches!(
            pkt.opcode,
            Opcode::RcReadResponseMiddle | Opcode::RcReadResponseLast
        ) {
            St::Hold(retry)
        } else if retry {
            St::ErrorRetry
        } else {
            St::Done
        }
    } else {
        St::CheckAck
    }
}

fn is_ack(syndrome: u8) -> bool {
    matches!(Syndrome::try_from(syndrome), Ok(Syndrome::Ack { .. }))
}

fn check_ack(
    comp: &mut State,
    req: &mut requester::State,
    h: &Head,
    pkt: &Response,
    sq: &mut impl Sq,
) -> St {
    use Opcode::*;
    let mask = pkt.opcode.mask();
    let wr = h.info.opcode;

    // The opcode sequence of a read response.
    if read_in_progress(comp.opcode) {
        let continues = matches!(
            pkt.opcode,
            RcAck | RcReadResponseMiddle | RcReadResponseLast
        );
        // A retried read restarts with FIRST (from its first PSN) or ONLY.
        let restarts = (pkt.psn == h.progress.first_psn && pkt.opcode == RcReadResponseFirst)
            || (h.progress.first_psn == h.progress.last_psn && pkt.opcode == RcReadResponseOnly);
        if !continues && !restarts {
            return St::Error(BAD_RESPONSE);
        }
    } else if !mask.contains(Mask::START) {
        return St::Error(BAD_RESPONSE);
    }

    match pkt.opcode {
        RcReadResponseFirst | RcReadResponseLast | RcReadResponseOnly | RcReadResponseMiddle => {
            if pkt.opcode != RcReadResponseMiddle {
                if !is_ack(pkt.syndrome) {
                    return St::Error(BAD_RESPONSE);
                }
                if wr == WrOpcode::AtomicWrite {
                    return St::WriteSend;
                }
            }
            if !matches!(
                wr,
                WrOpcode::RdmaRead | WrOpcode::RdmaReadWithInv | WrOpcode::Flush
            ) {
                return St::Error(WcStatus::FatalErr);
            }
            comp.reset_retry_counters();
            St::Read
        }
        RcAtomicAck => {
            if !is_ack(pkt.syndrome)
                || !matches!(wr, WrOpcode::AtomicCmpAndSwp | WrOpcode::AtomicFetchAndAdd)
            {
                return St::Error(BAD_RESPONSE);
            }
            comp.reset_retry_counters();
            St::Atomic
        }
        RcAck => match Syndrome::try_from(pkt.syndrome) {
            Ok(Syndrome::Ack { .. }) => {
                if h.info.mask.intersects(WrMask::ATOMIC_OR_READ) {
                    // A plain ACK at the PSN of a read or atomic (rxe acks a
                    // duplicate send with the PSN before its expected one,
                    // which may be an atomic's) carries no data; C completes
                    // the WQE with nothing in its buffer. A retry gets the
                    // response replayed.
                    return St::ErrorRetry;
                }
                comp.reset_retry_counters();
                St::WriteSend
            }
            Ok(Syndrome::RnrNak { .. }) => {
                sq.count(Event::RcvdRnrNak);
                St::RnrRetry
            }
            Ok(Syndrome::Nak(NakCode::PsnSeqError)) => {
                // A sequence NAK implicitly acknowledges every earlier PSN.
                if psn_after(pkt.psn, comp.psn) {
                    sq.count(Event::RcvdSeqNak);
                    comp.psn = pkt.psn;
                    requester::window_moved(req, comp.psn);
                }
                St::ErrorRetry
            }
            Ok(Syndrome::Nak(NakCode::InvalidRequest)) => St::Error(WcStatus::RemInvReqErr),
            Ok(Syndrome::Nak(NakCode::RemoteAccessError)) => St::Error(WcStatus::RemAccessErr),
            Ok(Syndrome::Nak(NakCode::RemoteOperationalError | NakCode::InvalidRdRequest)) => {
                St::Error(WcStatus::RemOpErr)
            }
            Err(bad) => {
                // Undefined NAK codes count as remote operational errors;
                // the reserved syndrome kind as a bad response.
                if bad.0 & 0xe0 == 0x60 {
                    St::Error(WcStatus::RemOpErr)
                } else {
                    St::Error(BAD_RESPONSE)
                }
            }
        },
        _ => St::Error(BAD_RESPONSE),
    }
}

/// `do_complete()`: retire the head and let a fenced requester go on.
fn retire(req: &mut requester::State, sq: &mut impl Sq, status: WcStatus) {
    sq.retire(status);
    if req.wait_fence {
        req.wait_fence = false;
        req.again = true;
    }
}

/// Runs the completer once (`rxe_completer()` minus the ERR/RESET flush):
/// handles at most one response packet, retiring every WQE it settles.
/// Inlined, with [`drive`], into its one caller, the send task's step: as
/// a call it costs 20-45 instructions per packet (arguments and saved
/// registers), and whether the compiler inlines it on its own turns on the
/// size of the step around it (the trace events' calls were enough to tip
/// it).
#[inline(always)]
pub(crate) fn run(comp: &mut State, req: &mut requester::State, sq: &mut impl Sq) -> Outcome {
    req.again = false;
    comp.timeout_retry = core::mem::take(&mut comp.timeout);
    let probe = core::mem::take(&mut comp.probe);
    let mut out = Outcome::default();

    if !req.need_retry {
        drive(comp, req, sq, &mut out, probe);
    }
    out.again = req.take_again();
    out
}

/// [`run`]'s state machine; inlined as `run` is.
#[inline(always)]
fn drive(
    comp: &mut State,
    req: &mut requester::State,
    sq: &mut impl Sq,
    out: &mut Outcome,
    probe: bool,
) {
    let pkt = sq.next_response_from(comp.psn);
    // A run the probe asked for keeps the rest of the timeout, which the
    // engine armed as the probe expired: pushed back by each such run, it
    // would never expire while nothing comes.
    let probed = probe;
    // A response moves things on: no timeout or probe retry this run.
    let probe = probe && pkt.is_none();
    if pkt.is_some() {
        comp.timeout_retry = false;
    }
    let mut head: Option<Head> = None;
    let mut state = St::GetWqe;
    loop {
        state = match (state, head.as_ref(), pkt.as_ref()) {
            (St::GetWqe, _, _) => {
                head = sq.head();
                get_wqe(comp, head.as_ref(), pkt.as_ref())
            }
            (St::CheckPsn, Some(h), Some(p)) => check_psn(comp, h, p),
            (St::Hold(retry), _, _) => {
                sq.hold_response(comp.psn);
                if retry {
                    St::ErrorRetry
                } else {
                    St::Done
                }
            }
            (St::CheckAck, Some(h), Some(p)) => check_ack(comp, req, h, p, sq),
            (St::Read, Some(h), Some(p)) => match sq.read_data() {
                Ok(0) if p.opcode.has(Mask::END) => St::CompAck,
                // The response at the read's last PSN left part of its
                // buffer unfilled: nothing can fill it any more.
                Ok(resid) if resid > 0 && p.psn == h.progress.last_psn => St::Error(BAD_RESPONSE),
                Ok(_) => St::UpdateComp,
                Err(CopyFault) if sq.absent() => St::ErrorRetry,
                Err(CopyFault) => St::Error(WcStatus::LocProtErr),
            },
            (St::Atomic, Some(_), Some(_)) => match sq.atomic_data() {
                Ok(()) => St::CompAck,
                Err(CopyFault) if sq.absent() => St::ErrorRetry,
                Err(CopyFault) => St::Error(WcStatus::LocProtErr),
            },
            (St::WriteSend, Some(h), Some(p)) => {
                if h.progress.state == WqeState::Pending && h.progress.last_psn == p.psn {
                    St::CompAck
                } else {
                    St::UpdateComp
                }
            }
            (St::CompAck, Some(h), Some(p)) => {
                if h.progress.has_rd_atomic {
                    req.rd_atomic = req.rd_atomic.saturating_add(1);
                    if req.need_rd_atomic {
                        comp.timeout_retry = false;
                        req.need_rd_atomic = false;
                        req.again = true;
                    }
                }
                retire(req, sq, WcStatus::Success);
                if psn_before(p.psn, comp.psn) {
                    St::Done
                } else {
                    St::UpdateComp
                }
            }
            (St::CompWqe, Some(h), _) => {
                if pkt.is_some() && h.progress.state == WqeState::Pending {
                    if !psn_before(h.progress.last_psn, comp.psn) {
                        comp.psn = psn_add(h.progress.last_psn, 1);
                        comp.opcode = None;
                    }
                    requester::window_moved(req, comp.psn);
                }
                retire(req, sq, h.progress.status);
                St::GetWqe
            }
            (St::UpdateComp, _, Some(p)) => {
                comp.opcode = if p.opcode.has(Mask::END) {
                    None
                } else {
                    Some(p.opcode)
                };
                if !psn_before(p.psn, comp.psn) {
                    comp.psn = psn_add(p.psn, 1);
                }
                requester::window_moved(req, comp.psn);
                St::Done
            }
            (St::Exit, h, _) => {
                if comp.timeout_retry && h.is_some() {
                    St::ErrorRetry
                } else if probe
                    && !comp.started_retry
                    && psn_after(req.psn, comp.psn)
                    && matches!(h, Some(h) if h.progress.state != WqeState::Posted)
                {
                    // Resend from the oldest unacknowledged PSN, without
                    // a retry's count (`State::probe_fired`).
                    sq.count(Event::ProbeRetry);
                    req.need_retry = true;
                    comp.started_retry = true;
                    req.again = true;
                    St::Done
                } else {
                    out.rearm_retransmit = psn_after(req.psn, comp.psn) && !probed;
                    return;
                }
            }
            (St::ErrorRetry, h, _) => {
                // Whether responses beyond a gap asked for this retry: told
                // once, whatever becomes of it.
                let gap = core::mem::take(&mut comp.gap_retry);
                if !matches!(h, Some(h) if h.progress.state != WqeState::Posted) {
                    return;
                }
                if comp.started_retry && !comp.timeout_retry {
                    St::Done
                } else if comp.retry_cnt > 0 {
                    if comp.retry_cnt != INFINITE {
                        comp.retry_cnt -= 1;
                    }
                    // Nothing to resend once everything sent was acked.
                    if psn_after(req.psn, comp.psn) {
                        sq.count(Event::Retry);
                        if gap {
                            sq.count(Event::GapRetry);
                        }
                        req.need_retry = true;
                        comp.started_retry = true;
                        req.again = true;
                    }
                    St::Done
                } else {
                    sq.count(Event::RetryExceeded);
                    St::Error(WcStatus::RetryExcErr)
                }
            }
            (St::RnrRetry, _, Some(p)) => {
                if comp.rnr_retry > 0 {
                    if comp.rnr_retry != INFINITE {
                        comp.rnr_retry -= 1;
                    }
                    req.wait_for_rnr_timer = true;
                    out.rnr_timer = Some(p.syndrome & 0x1f);
                    return;
                }
                sq.count(Event::RnrRetryExceeded);
                St::Error(WcStatus::RnrRetryExcErr)
            }
            (St::Error(status), Some(_), _) => {
                retire(req, sq, status);
                out.qp_error = true;
                return;
            }
            (St::Done, _, _) => {
                out.progress = true;
                return;
            }
            // Every state above that needs a head or a packet is only
            // reached with them; stop rather than guess.
            _ => return,
        };
    }
}

/// The opcode, flags and length of a send completion (`make_send_cqe()`):
/// filled in on success only, left zero on errors as C does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SendCqe {
    pub(crate) opcode: WcOpcode,
    pub(crate) wc_flags: u32,
    pub(crate) byte_len: u32,
}

pub(crate) fn send_cqe(info: &WqeInfo, status: WcStatus) -> SendCqe {
    if status != WcStatus::Success {
        return SendCqe {
            opcode: WcOpcode::Send,
            wc_flags: 0,
            byte_len: 0,
        };
    }
    SendCqe {
        opcode: info.opcode.wc_opcode(),
        wc_flags: if info.opcode.has_imm() {
            wc_flags::WITH_IMM
        } else {
            0
        },
        byte_len: info.length,
    }
}

/// Whether a retired WQE posts a CQE: always on error, otherwise when the
/// QP signals all WRs or the WR asked for it.
pub(crate) fn must_post(sig_all: bool, flags: SendFlags, status: WcStatus) -> bool {
    sig_all || flags.has(SendFlags::SIGNALED) || status != WcStatus::Success
}

#[cfg(test)]
#[path = "completer_tests.rs"]
mod tests;
