// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The completer of a QP (rxe_comp.c): matches ACKs, read responses and
//! atomic ACKs against the send queue, retires WQEs in order into the send
//! CQ, and flushes the send queue of a QP in error.

use core::sync::atomic::{fence, Ordering};

use kernel::{prelude::*, sync::Arc};

use crate::rxe::counters::{self, Counter};
use crate::rxe::cq::Due;
use crate::rxe::dma::{Cursor, DmaError, LocalAccess};
use crate::rxe::kapi::task::Progress;
use crate::rxe::kapi::timer::Jiffies;
use crate::rxe::kapi::trace::{self, RetryCause, StateCause};
use crate::rxe::mr::{PdId, PendingFault};
use crate::rxe::proto::completer::{self as cl, CopyFault, Head, Response};
use crate::rxe::proto::events::Event;
use crate::rxe::proto::mr::Access;
use crate::rxe::proto::odp::{Next, Retry};
use crate::rxe::proto::opcode::Opcode;
use crate::rxe::proto::psn::psn_after;
use crate::rxe::proto::requester::{self as rl, WqeInfo};
use crate::rxe::proto::uapi::{Cqe, SendFlags, SendWqe, WcStatus, WqeState, WrOpcode};
use crate::rxe::proto::wire::{rnr_timer_us, Syndrome};
use crate::rxe::qp::{self, Check, Engine, QpShared};
use crate::rxe::recv::RxPacket;
use crate::rxe::reorder::Reorder;
use crate::rxe::requester::{self, Track};

/// Per-QP state of the engine, behind `QpShared::comp`, which the completer
/// holds for a whole step (outside the engines' lock `QpShared::req`). The
/// completer's protocol state sits with the requester's (see `requester::State`);
/// here is only the batch of send completions a step collects under the
/// engines' lock and posts after releasing it. It lives with the QP so that
/// no step builds (and the compiler moves) a batch on the stack.
pub(crate) struct State {
    cqes: Cqes,
    /// A response met an absent ODP page: start its fault (a job of its
    /// own, `qp/faults.rs`) before the next response.
    odp_pending: Option<PendingFault>,
    odp_retry: Retry,
    /// The retries are used up: an absent page fails the WQE.
    odp_give_up: bool,
}

impl State {
    pub(crate) fn new() -> Self {
        Self {
            cqes: Cqes::EMPTY,
            odp_pending: None,
            odp_retry: Retry::new(),
            odp_give_up: false,
        }
    }
}

/// Send completions collected under the engines' lock, posted after it.
const CQE_BATCH: usize = 16;

/// Responses one step handles under one hold of the engines' locks: a
/// read's response stream or a window of ACKs pays for the locks and the
/// status read once per batch instead of once per packet.
const RESPONSES_PER_STEP: usize = 8;

struct Cqes {
    list: [Option<Cqe>; CQE_BATCH],
    n: usize,
    /// Consumer callbacks of completions already in the CQ.
    due: Due,
}

impl Cqes {
    const EMPTY: Self = Self {
        list: [None; CQE_BATCH],
        n: 0,
        due: Due::NONE,
    };

    fn is_full(&self) -> bool {
        self.n >= CQE_BATCH
    }

    /// Past the batch the completions go to the CQ at once, still in order,
    /// their handler left for [`Self::post`].
    fn push(&mut self, qp: &QpShared, cqe: Cqe) {
        if self.is_full() {
            self.produce(qp);
        }
        if let Some(s) = self.list.get_mut(self.n) {
            *s = Some(cqe);
            self.n += 1;
        }
    }

    fn produce(&mut self, qp: &QpShared) {
        let handle = qp.link.handle();
        for c in self.list.iter_mut().take(self.n) {
            if let (Some(cqe), Some(h)) = (c.take(), handle) {
                let _ = qp.scq.produce(&cqe, h, false, None, &mut self.due);
            }
        }
        self.n = 0;
    }

    /// Puts the batch into the CQ and runs the consumer's handler: with no
    /// engine lock held (`QpShared::comp` is not one).
    fn post(&mut self, qp: &QpShared) {
        self.produce(qp);
        qp.scq.run_due(&mut self.due);
    }
}

/// Retires the head WQE: the consumer index moves on, its CQE (if due)
/// goes to `cqes`. `None` when the SQ had no head to retire, else whether
/// the SQ is empty now.
fn retire_head(
    qp: &QpShared,
    track: &mut Track,
    info: &WqeInfo,
    status: WcStatus,
    cqes: &mut Cqes,
) -> Option<bool> {
    let (wr_id, empty) = requester::pop_head(qp)?;
    track.retired();
    qp.note_completion(status);
    if cl::must_post(qp.sig_all, info.flags, status) {
        let c = cl::send_cqe(info, status);
        let mut cqe = Cqe::new(wr_id, status, qp.qpn);
        cqe.opcode = c.opcode;
        cqe.wc_flags = c.wc_flags;
        cqe.byte_len = c.byte_len;
        trace::completion(&cqe, false);
        cqes.push(qp, cqe);
    }
    Some(empty)
}

/// [`cl::Sq`] over the real send queue and one dequeued packet.
struct Io<'a> {
    qp: &'a QpShared,
    track: &'a mut Track,
    /// Read responses held beyond a gap.
    held: &'a mut Reorder,
    pkt: Option<RxPacket>,
    cqes: &'a mut Cqes,
    /// What the last scatter that met an absent ODP page needs.
    fault: Option<PendingFault>,
    odp_give_up: bool,
    /// A response's data reached its buffer, or a WQE retired: the head
    /// moved on. Only that ends the retries of an ODP fault; a response
    /// dropped as stale (the rest of a read response that met an absent
    /// page) does not.
    moved: bool,
    /// The head's slot, as [`cl::Sq::head`] last found it: only a retire
    /// moves the consumer while the engines' lock is held.
    slot: Option<u32>,
    /// A retire emptied the SQ. A WQE posted since has not been started
    /// (the requester runs after this step), and the completer treats such
    /// a head as no head at all: the step need not look at the ring again.
    empty: bool,
}

impl Io<'_> {
    fn head_slot(&mut self) -> u32 {
        if let Some(s) = self.slot {
            return s;
        }
        self.qp.sq.lock().queue.own_index()
    }

    /// Writes the read response payload into the head WQE `wqe` of `slot`
    /// where its bytes left begin; the bytes left after it.
    fn read_into(&mut self, slot: u32, wqe: &SendWqe) -> Result<u32, CopyFault> {
        let sh = self.track.shadow(slot).ok_or(CopyFault)?;
        let data = self.pkt.as_ref().ok_or(CopyFault)?.payload();
        let len = u32::try_from(data.len()).map_err(|_| CopyFault)?;
        if len > sh.progress.resid || wqe.length != sh.info.length {
            return Err(CopyFault);
        }
        let mem = LocalAccess::new(self.qp.dev.state(), PdId(self.qp.pd), Access::LOCAL_WRITE);
        let mut cur = Cursor::new(wqe.length);
        cur.advance(wqe, wqe.length - sh.progress.resid)
            .map_err(|_| CopyFault)?;
        if let Err(e) = cur.copy_to_mem(&mem, wqe, data) {
            if e == DmaError::Absent {
                self.fault = cur.take_fault();
            }
            return Err(CopyFault);
        }
        sh.progress.resid -= len;
        self.moved = true;
        Ok(sh.progress.resid)
    }

    /// Returns the original value of an atomic reply into the head WQE
    /// `wqe`'s buffer.
    fn atomic_into(&mut self, wqe: &SendWqe) -> Result<(), CopyFault> {
        let orig = self
            .pkt
            .as_ref()
            .and_then(|p| p.atmack())
            .ok_or(CopyFault)?
            .orig;
        let mem = LocalAccess::new(self.qp.dev.state(), PdId(self.qp.pd), Access::LOCAL_WRITE);
        let mut cur = Cursor::new(wqe.length);
        cur.copy_to_mem(&mem, wqe, &orig.to_ne_bytes())
            .map_err(|e| {
                if e == DmaError::Absent {
                    self.fault = cur.take_fault();
                }
                CopyFault
            })?;
        self.moved = true;
        Ok(())
    }
}

impl Io<'_> {
    /// Makes `pkt` the response being handled.
    fn take(&mut self, pkt: RxPacket) -> Response {
        let r = Response {
            opcode: pkt.opcode(),
            psn: pkt.psn(),
            syndrome: pkt.aeth().map_or(0, |a| a.syndrome),
        };
        if trace::nak_recv_on() && r.opcode == Opcode::RcAck && is_nak(r.syndrome) {
            trace::nak_recv(self.qp.qpn, r.psn, r.syndrome);
        }
        self.pkt = Some(pkt);
        r
    }
}

impl cl::Sq for Io<'_> {
    fn next_response(&mut self) -> Option<Response> {
        let pkt = self.qp.comp_pkts.lock().pop()?;
        Some(self.take(pkt))
    }

    #[inline]
    fn next_response_from(&mut self, comp_psn: u32) -> Option<Response> {
        if !self.held.is_empty() {
            if let Some(pkt) = self.held.take(comp_psn) {
                return Some(self.take(pkt));
            }
        }
        self.next_response()
    }

    fn hold_response(&mut self, comp_psn: u32) {
        let Some(pkt) = self.pkt.take() else {
            return;
        };
        match self.held.hold(pkt, comp_psn) {
            Ok(_) => counters::inc(&self.qp.dev, Counter::ResponsesHeld),
            Err(pkt) => self.pkt = Some(pkt),
        }
    }

    fn head(&mut self) -> Option<Head> {
        if self.empty {
            return None;
        }
        self.slot = requester::head_slot(self.qp);
        let slot = self.slot?;
        if self.track.touched == 0 {
            // Not started: only its being posted matters.
            let info = WqeInfo::new(WrOpcode::Send, self.qp.qp_type, SendFlags(0), 0, 0);
            return Some(Head {
                info,
                progress: rl::Progress::posted(0, 0),
            });
        }
        self.track.shadow(slot).map(|s| Head {
            info: s.info,
            progress: s.progress,
        })
    }

    fn read_data(&mut self) -> Result<u32, CopyFault> {
        let slot = self.head_slot();
        let wqe = self.track.take_head(self.qp, slot).ok_or(CopyFault)?;
        let r = self.read_into(slot, &wqe);
        self.track.put_head(wqe);
        r
    }

    fn atomic_data(&mut self) -> Result<(), CopyFault> {
        let slot = self.head_slot();
        let wqe = self.track.take_head(self.qp, slot).ok_or(CopyFault)?;
        let r = self.atomic_into(&wqe);
        self.track.put_head(wqe);
        r
    }

    fn retire(&mut self, status: WcStatus) {
        self.moved = true;
        let slot = self.head_slot();
        let Some(sh) = self.track.shadow(slot).copied() else {
            return;
        };
        self.slot = None;
        if matches!(
            sh.info.opcode,
            WrOpcode::Send | WrOpcode::SendWithImm | WrOpcode::SendWithInv
        ) {
            counters::inc(&self.qp.dev, Counter::RdmaSends);
        }
        self.empty = retire_head(self.qp, self.track, &sh.info, status, self.cqes) == Some(true);
    }

    fn count(&mut self, ev: Event) {
        counters::inc(&self.qp.dev, ev.into());
    }

    fn absent(&self) -> bool {
        self.fault.is_some() && !self.odp_give_up
    }
}

/// `flush_send_queue()`: a QP in ERR completes every WQE, the first one
/// that failed with its own status, the others with `WR_FLUSH_ERR`.
fn flush(qp: &Arc<QpShared>, cqes: &mut Cqes, notify: bool) -> Progress {
    qp.comp_pkts.lock().clear();
    let more = {
        let mut st = qp.req.lock();
        st.responses.clear();
        loop {
            if cqes.is_full() {
                break true;
            }
            let Some(slot) = requester::head_slot(qp) else {
                st.sq.off = 0;
                st.sq.touched = 0;
                break false;
            };
            let (info, status) = match (st.sq.touched > 0, st.sq.shadow(slot).copied()) {
                (true, Some(sh)) if sh.progress.state == WqeState::Error => {
                    (sh.info, sh.progress.status)
                }
                (true, Some(sh)) => (sh.info, cl::FLUSH_STATUS),
                _ => {
                    let info = WqeInfo::new(WrOpcode::Send, qp.qp_type, SendFlags(0), 0, 0);
                    (info, cl::FLUSH_STATUS)
                }
            };
            let retired = if notify {
                retire_head(qp, &mut st.sq, &info, status, cqes).is_some()
            } else {
                let r = requester::pop_head(qp).is_some();
                if r {
                    st.sq.retired();
                }
                r
            };
            // The ring emptied meanwhile (user space rewrote its producer
            // index), or its head is unreadable (never expected): the
            // flush ends as on an empty ring rather than spin on it.
            if !retired {
                st.sq.off = 0;
                st.sq.touched = 0;
                break false;
            }
        }
    };
    cqes.post(qp);
    if more {
        Progress::More
    } else {
        Progress::Done
    }
}

/// An AETH syndrome other than an ACK: an RNR NAK or a NAK.
fn is_nak(syndrome: u8) -> bool {
    !matches!(Syndrome::try_from(syndrome), Ok(Syndrome::Ack { .. }))
}

/// The `retransmit` event for a completer run that decided to send again:
/// `started` whether it set a retry going, `pkt` the response it handled,
/// `comp_psn` the oldest PSN not acknowledged, where the resend starts.
#[cold]
fn trace_retry(
    qp: &QpShared,
    comp_psn: u32,
    pkt: Option<&RxPacket>,
    started: bool,
    one: &cl::Outcome,
) {
    if one.rnr_timer.is_some() {
        // The resend starts at the NAKed PSN when the RNR timer ends.
        if let Some(p) = pkt {
            trace::retransmit(qp.qpn, RetryCause::Rnr, p.psn());
        }
        return;
    }
    if !started {
        return;
    }
    let cause = match pkt {
        // Only a run without a response acts on the timeout.
        None => RetryCause::Timeout,
        Some(p) if p.aeth().is_some_and(|a| is_nak(a.syndrome)) => RetryCause::Nak,
        Some(_) => RetryCause::Implicit,
    };
    trace::retransmit(qp.qpn, cause, comp_psn);
}

pub(crate) fn step(qp: &Arc<QpShared>) -> Progress {
    let (state, valid, timeout) = {
        let s = qp.status();
        (s.attrs.state, s.valid, s.attrs.timeout)
    };
    if !valid || state == qp::State::Reset {
        qp.comp_pkts.lock().clear();
        return Progress::Done;
    }
    let mut comp = qp.comp.lock();
    if state == qp::State::Err {
        comp.odp_pending = None;
        return flush(qp, &mut comp.cqes, true);
    }
    if let Some(pending) = comp.odp_pending.take() {
        drop(comp);
        // The fault's end kicks the requester, which sends the request
        // again; meanwhile the completer goes on with other responses.
        if !qp.start_fault(Engine::Completer, Some(pending)) {
            qp.comp.lock().odp_give_up = true;
            qp.kick_requester();
        }
        return Progress::More;
    }
    let State {
        cqes,
        odp_pending,
        odp_retry,
        odp_give_up,
    } = &mut *comp;
    let out = {
        let mut guard = qp.req.lock();
        let st = &mut *guard;
        let mut io = Io {
            qp,
            track: &mut st.sq,
            held: &mut st.responses,
            pkt: None,
            cqes,
            fault: None,
            odp_give_up: *odp_give_up,
            moved: false,
            slot: None,
            empty: false,
        };
        let gen = qp.status_gen();
        // `progress` is the last run's: an empty queue ends the batch with
        // nothing left to run for.
        let mut out = cl::Outcome::default();
        let tracing = trace::retransmit_on();
        for _ in 0..RESPONSES_PER_STEP {
            let retrying = tracing && st.req.need_retry;
            let one = cl::run(&mut st.comp, &mut st.req, &mut io);
            if tracing {
                let now = st.req.need_retry && !retrying;
                trace_retry(qp, st.comp.psn, io.pkt.as_ref(), now, &one);
            }
            if let Some(p) = io.pkt.take() {
                p.consume();
            }
            out.merge(one);
            if io.fault.is_some() && !*odp_give_up {
                // While a fault is in progress the responses it is for are
                // dropped uncounted: the requester sends them again after it.
                match qp.faults.check(Engine::Completer, io.fault.as_ref()) {
                    Check::Busy => io.fault = None,
                    Check::Failed => *odp_give_up = true,
                    Check::Free => match odp_retry.on_absent() {
                        Next::Fault => *odp_pending = io.fault.take(),
                        Next::GiveUp => *odp_give_up = true,
                    },
                }
                break;
            }
            if io.moved {
                io.moved = false;
                odp_retry.on_success();
                *odp_give_up = false;
                io.odp_give_up = false;
            }
            // Go on only while each response was a plain step forward on
            // an unchanged QP: anything else (a timer, an error, a retry,
            // a change of state) is the caller's to act on first.
            if !one.progress
                || one.rnr_timer.is_some()
                || one.qp_error
                || st.req.need_retry
                || qp.status_gen() != gen
            {
                break;
            }
        }
        // Everything sent is acknowledged: a retransmit timer left pending
        // would fire later, while the next message is in flight, and have
        // it resent for nothing. The requester arms it again when it sends;
        // it moves the PSN under this lock before it arms, so no timer it
        // armed for a packet not yet acknowledged is cancelled here.
        if qp.qp_type == qp::Type::Rc && !psn_after(st.req.psn, st.comp.psn) {
            qp.retrans_timer.cancel(qp);
            // A doorbell that still saw the timer armed left its WQEs to
            // the send task (`QpShared::ring_doorbell`): order the disarm
            // before the requester half reads `want_req`.
            fence(Ordering::SeqCst);
        }
        out
    };
    cqes.post(qp);
    drop(comp);
    if let Some(code) = out.rnr_timer {
        let us = rnr_timer_us(code).unwrap_or(0);
        qp.rnr_timer.arm_in(qp, Jiffies::at_least_usecs(us));
    }
    if out.rearm_retransmit && qp.qp_type == qp::Type::Rc {
        requester::arm_retransmit(qp, timeout, false);
    }
    if out.qp_error {
        requester::qp_error(qp, StateCause::Completion);
        return Progress::More;
    }
    if out.again {
        qp.kick_requester();
    }
    // An SQD drain may have just completed.
    if state == qp::State::Sqd {
        qp.kick_requester();
    }
    if out.progress || out.again {
        Progress::More
    } else {
        Progress::Done
    }
}
