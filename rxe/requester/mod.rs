// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The requester of a QP: turns send WQEs into packets (rxe_req.c), runs
//! local operations, and owns the send-side progress the completer shares.
//!
//! The SQ ring may be user memory: each WQE is copied out and validated
//! every time it is read. What the requester learns about a WQE (state,
//! PSNs, bytes left) lives in a kernel-side shadow indexed by SQ slot.
//!
//! Requester and completer share one lock (`QpShared::req`) over [`State`]:
//! C lets both tasks touch `qp->req` and `qp->comp` freely; one lock keeps
//! the two engines from ever holding two engine locks at once.
//!
//! `sq.rs` holds the SQ as the engines track it (the shadow and the WQE
//! copies); `build.rs` turns one planned packet into an skb.

mod build;
mod sq;

use build::{build, BuildError, SendCursor};
pub(crate) use sq::{head_slot, pop_head, Shadow, Track};

use core::sync::atomic::Ordering;

use kernel::{ffi::c_ulong, prelude::*, sync::Arc};

use crate::rxe::ah;
use crate::rxe::counters::{self, Counter};
use crate::rxe::kapi::lock::{new_spinlock_irq, SpinLockIrq};
use crate::rxe::kapi::page::PayloadPages;
use crate::rxe::kapi::task::Progress as TaskProgress;
use crate::rxe::kapi::timer::{Jiffies, TimerOwner};
use crate::rxe::kapi::trace::StateCause;
use crate::rxe::mr::{self, PdId, PendingFault};
use crate::rxe::mw;
use crate::rxe::net;
use crate::rxe::proto::completer::{self as cl, Head};
use crate::rxe::proto::mr::Access;
use crate::rxe::proto::odp::{Next, Retry};
use crate::rxe::proto::params::IbMtu;
use crate::rxe::proto::qp::AttrMask;
use crate::rxe::proto::requester::{self as rl, Gates, ReqQp, Step, Wait, WqeInfo};
use crate::rxe::proto::uapi::{SendWqe, WcStatus, WqeState, WrOpcode, WrParams};
use crate::rxe::proto::wire::local_ack_timeout_ns;
use crate::rxe::qp::{self, Check, Engine, QpShared};
use crate::rxe::reorder::Reorder;

/// The transmit flow's waker: schedules the requester once its skbs in
/// flight have drained below the low mark.
///
/// It holds the QP only while the requester is paused on its skbs (a
/// reference cycle QP -> flow -> waker -> QP), and [`ReqWake::disarm`] on
/// destroy breaks the cycle after the tasks have stopped.
pub(crate) struct ReqWake {
    qp: Pin<KBox<SpinLockIrq<Option<Arc<QpShared>>>>>,
}

impl ReqWake {
    /// Process context.
    pub(crate) fn new() -> Result<Self> {
        Ok(Self {
            qp: KBox::pin_init(new_spinlock_irq!(None, "rxe_req_wake"), GFP_KERNEL)?,
        })
    }

    /// The requester of `qp` is about to pause on its skbs.
    fn arm(&self, qp: &Arc<QpShared>) {
        let mut g = self.qp.lock();
        if g.is_none() {
            *g = Some(qp.clone());
        }
    }

    /// Drops the QP reference; called once the QP's tasks are shut down, so
    /// no requester run can arm it again.
    pub(crate) fn disarm(&self) {
        let qp = self.qp.lock().take();
        drop(qp);
    }
}

impl net::TxWake for ReqWake {
    fn wake(&self) {
        if let Some(qp) = self.qp.lock().as_ref() {
            qp.kick_requester();
        }
    }
}

/// Per-QP state of the requester and completer, behind `QpShared::req`.
pub(crate) struct State {
    pub(crate) req: rl::State,
    pub(crate) comp: cl::State,
    pub(crate) sq: Track,
    /// Faults of ODP pages for the packet being built.
    odp_retry: Retry,
    /// The retries are used up: an absent page fails the WQE.
    odp_give_up: bool,
    /// The page pieces of the packet being built, empty between packets:
    /// kept here, the list (272 bytes) is neither initialised nor moved per
    /// packet.
    pages: PayloadPages,
    /// The AV of the AH the last UD packet went to.
    av_cache: ah::AvCache,
    /// Where the packets of the WQE being sent have got to in its SGEs.
    cursor: SendCursor,
    /// Read responses that came beyond a gap (the completer's).
    pub(crate) responses: Reorder,
}

impl State {
    /// For an SQ of `capacity` WQEs (`capacity + 1` slots).
    pub(crate) fn new(capacity: u32) -> Result<Self> {
        Ok(Self {
            req: rl::State::new(0, 0),
            comp: cl::State::new(0, 0, 0),
            sq: Track::new(capacity)?,
            odp_retry: Retry::new(),
            odp_give_up: false,
            pages: PayloadPages::new(),
            av_cache: ah::AvCache::new(),
            cursor: SendCursor::new(),
            responses: Reorder::new(),
        })
    }
}

/// The QP facts one requester run works with.
struct Snap {
    state: qp::State,
    rq: ReqQp,
    dest_qpn: u32,
    qkey: u32,
    timeout: u8,
    /// A connected QP's destination (its primary AV), from `sport`.
    av: Option<net::Av>,
    sport: u16,
}

fn snapshot(qp: &QpShared) -> Option<Snap> {
    let s = qp.status();
    if !s.valid {
        return None;
    }
    let a = &s.attrs;
    Some(Snap {
        state: a.state,
        rq: ReqQp {
            qp_type: qp.qp_type,
            path_mtu: IbMtu::from_raw(a.path_mtu).map_or(256, IbMtu::bytes),
            port_mtu: qp.dev.state().mtu_bytes(),
            max_rd_atomic: u32::from(a.max_rd_atomic),
        },
        dest_qpn: a.dest_qp_num,
        qkey: a.qkey,
        timeout: a.timeout,
        av: if qp.qp_type.is_datagram() {
            None
        } else {
            a.pri_av.as_ref().map(|av| build::net_av(av, s.src_port))
        },
        sport: s.src_port,
    })
}

/// Moves the QP to ERR (`rxe_qp_error()`) for `cause` and lets the
/// engines flush.
pub(crate) fn qp_error(qp: &Arc<QpShared>, cause: StateCause) {
    let old = {
        let mut s = qp.status_mut();
        if !s.valid {
            return;
        }
        core::mem::replace(&mut s.attrs.state, qp::State::Err)
    };
    if old != qp::State::Err {
        qp.trace_state(old, qp::State::Err, cause);
    }
    qp.on_error();
}

/// Arms the retransmit timer if the QP has a local ACK timeout.
///
/// It expires first for the probe where that comes well before the
/// timeout (see [`retransmit_delays`]): after that long with nothing
/// acknowledged (each acknowledgement pushes the timer back) the completer
/// resends once from the oldest unacknowledged PSN without using up a
/// retry, and the timer is armed again for the rest of the timeout, which
/// then counts a retry as ever. A lost last packet, ACK or NAK, which
/// nothing after it reveals, costs the probe's delay instead of the whole
/// timeout, and a QP whose peer is gone fails no sooner than its timeout
/// and retry count say.
#[inline(always)]
pub(crate) fn arm_retransmit(qp: &Arc<QpShared>, timeout: u8, only_if_idle: bool) {
    if qp.qp_type != qp::Type::Rc {
        return;
    }
    if only_if_idle && qp.retrans_timer.pending() {
        return;
    }
    let Some((first, rest)) = retransmit_delays(timeout) else {
        return;
    };
    qp.probe_due.store(rest.is_some(), Ordering::Relaxed);
    qp.retrans_timer.arm_in(qp, first);
}

/// The retransmit timer's first delay, and what is left of the timeout
/// after it when the first is the probe's: an eighth of the timeout, where
/// that is at most half of it in ticks (at perftest's and the CM's default
/// `-u 14`, 67 ms, 12 ms at 250 Hz; not at `-u 10`, 4 ms).
///
/// The timeout is never shortened: with C's rounding (1 jiffy for every
/// timeout up to a tick) the timer fires at the next tick, however
/// recently the last response came, and each such spurious retry of a
/// long RDMA READ has the responder replay the rest of it.
fn retransmit_delays(timeout: u8) -> Option<(Jiffies, Option<Jiffies>)> {
    let ns = local_ack_timeout_ns(timeout)?;
    let full = Jiffies::at_least_nsecs(ns);
    // `Jiffies::at_least_nsecs(ns / PROBE_FRACTION)` without a second
    // conversion: `at_least_nsecs` is whole ticks plus two, and whole
    // ticks of an eighth are an eighth of the whole ticks.
    let ticks = full.raw().saturating_sub(2);
    let early = Jiffies::from_raw(ticks / PROBE_FRACTION + 2);
    if early.raw().saturating_mul(2) <= full.raw() {
        // A timer armed `n` ticks ahead fires at least `n - 1` ticks later
        // (`Jiffies::at_least_nsecs`): the probe and the rest together
        // wait at least the `full - 1` ticks the timeout alone would.
        let rest = Jiffies::from_raw(full.raw() - early.raw() + 1);
        Some((early, Some(rest)))
    } else {
        Some((full, None))
    }
}

/// The probe's delay, as a fraction of the local ACK timeout.
const PROBE_FRACTION: c_ulong = 8;

/// modify_qp changed attributes the engines keep a copy of.
pub(crate) fn modified(qp: &Arc<QpShared>, mask: AttrMask) {
    let a = qp.status().attrs;
    let mut st = qp.req.lock();
    if mask.intersects(AttrMask::SQ_PSN) {
        st.req.set_sq_psn(a.sq_psn);
        st.comp.set_sq_psn(a.sq_psn);
    }
    if mask.intersects(AttrMask::MAX_QP_RD_ATOMIC) {
        st.req.set_max_rd_atomic(u32::from(a.max_rd_atomic));
    }
    if mask.intersects(AttrMask::RETRY_CNT) {
        st.comp.set_retry_cnt(a.retry_cnt);
    }
    if mask.intersects(AttrMask::RNR_RETRY) {
        st.comp.set_rnr_retry(a.rnr_retry);
    }
}

/// The QP went to RESET: the rings are emptied next.
pub(crate) fn reset(qp: &Arc<QpShared>) {
    let mut st = qp.req.lock();
    st.req.reset();
    st.comp.reset();
    st.sq.off = 0;
    st.sq.touched = 0;
    st.sq.cur.forget();
    st.sq.head.forget();
    st.cursor.forget();
    st.responses.clear();
}

/// What one requester decision leaves for the task.
enum Outcome {
    /// Nothing to do until kicked.
    Idle,
    /// Look again now.
    Again,
    /// Too many skbs in flight: sleep until they drain.
    Paused,
    /// A packet or local operation went out; `retire`: a WQE is done
    /// without waiting for a response, for the completer to retire;
    /// `last`: it finished the last WQE the SQ held when it was read (a
    /// WQE posted since rings the doorbell, which runs the requester).
    Sent { retire: bool, last: bool },
    /// A WQE failed: the QP goes to ERR.
    Failed,
    /// The payload met an absent ODP page: nothing was sent; fault it in
    /// (a fault job, `qp/faults.rs`) and try the same packet again.
    Fault(Option<PendingFault>),
}

/// Runs a local operation of `wqe`; `Err` with the status it fails with.
fn local_op(qp: &Arc<QpShared>, wqe: &SendWqe) -> Result<(), WcStatus> {
    let dev = qp.dev.state();
    let pd = PdId(qp.pd);
    let status = rl::local_op_error(wqe.opcode);
    match (wqe.opcode, wqe.wr) {
        (WrOpcode::LocalInv, _) => {
            mr::invalidate_key(dev, wqe.ex, pd, mr::QpId::of(qp)).map_err(|e| e.local_status())
        }
        (
            WrOpcode::BindMw,
            WrParams::Mw {
                addr,
                length,
                mr_lkey,
                mw_rkey,
                rkey,
                access,
            },
        ) => {
            let wr = mw::BindWr {
                mw_rkey,
                mr_lkey,
                rkey,
                addr,
                length,
                access,
            };
            mw::bind(dev, qp, pd, &wr).map_err(|_| status)
        }
        // Parsed only from kernel rings (`SqLimits::kernel`).
        (
            WrOpcode::RegMr,
            WrParams::Reg {
                mr_lkey,
                key,
                access,
                iova,
                length,
            },
        ) => {
            let reg = mr::FastReg {
                mr_lkey,
                key,
                access: Access::from_raw(access),
                iova,
                length,
            };
            mr::fast_reg(dev, pd, &reg).map_err(|_| status)
        }
        _ => Err(status),
    }
}

/// A packet [`run_once`] built, and how the step sends it.
struct Built<'a> {
    tx: net::TxPacket<'a>,
    /// Hold it back until the next packet is known ([`rl::next_built`]).
    hold: bool,
    /// The packet the step holds goes without AckReq.
    clear_held: bool,
}

/// One requester decision, and the packet it may have built; runs under
/// the engines' lock. `holding`: the step holds back a packet built
/// before (see [`rl::next_built`]). `draining`: the QP is in SQD, where
/// only messages already started go on (their retries included).
fn run_once<'a>(
    qp: &'a Arc<QpShared>,
    snap: &Snap,
    holding: bool,
    draining: bool,
    ndevs: &mut net::NdevCache,
) -> (Outcome, Option<Built<'a>>) {
    let mut guard = qp.req.lock();
    let st = &mut *guard;
    if st.req.need_retry && !st.req.wait_for_rnr_timer {
        let comp_psn = st.comp.psn;
        rl::begin_retry(&mut st.req, comp_psn);
        let mut first = true;
        let cons = qp.sq.lock().queue.own_index();
        for i in 0..st.sq.touched {
            let Some(sh) = st.sq.shadow(cons.wrapping_add(i)) else {
                break;
            };
            let mut s = *sh;
            if !rl::retry_wqe(
                &mut st.req,
                &snap.rq,
                &s.info,
                &mut s.progress,
                &mut first,
                comp_psn,
            ) {
                break;
            }
            if let Some(sh) = st.sq.shadow(cons.wrapping_add(i)) {
                *sh = s;
            }
        }
        st.sq.off = 0;
        st.req.need_retry = false;
    }

    let off = st.sq.off;
    let fresh = off >= st.sq.touched;
    if draining && fresh {
        return (Outcome::Idle, None);
    }
    // A WQE met for the first time is read from the ring; one met again
    // (the next packet, or a retry) reuses its copy while that is kept.
    let Track { cur, buf, .. } = &mut st.sq;
    let (slot, wqe, more) = match cur.take(qp, buf, off, !fresh) {
        Ok(w) => w,
        Err(None) => return (Outcome::Idle, None),
        Err(Some((slot, e))) => {
            if let Some(sh) = st.sq.shadow(slot) {
                *sh = Shadow::EMPTY;
                rl::fail(&mut sh.progress, e.wc_status());
            }
            st.sq.touched = st.sq.touched.max(off + 1);
            st.sq.off = off + 1;
            st.cursor.forget();
            return (Outcome::Failed, None);
        }
    };
    let seq = st.sq.cur.seq();
    let mut r = run_wqe(qp, snap, st, (off, seq), slot, fresh, &wqe, holding, ndevs);
    st.sq.cur.put(wqe);
    if matches!(r.0, Outcome::Failed) {
        // Pins no MR for a QP going to ERR.
        st.cursor.forget();
    }
    if let Outcome::Sent { last, .. } = &mut r.0 {
        *last = !more && st.sq.off > off;
    }
    r
}

/// The part of [`run_once`] that acts on the parsed WQE `wqe` of `slot`,
/// `off` entries past the consumer, the WQE copy `seq`.
#[allow(clippy::too_many_arguments)]
fn run_wqe<'a>(
    qp: &'a Arc<QpShared>,
    snap: &Snap,
    st: &mut State,
    (off, seq): (u32, u64),
    slot: u32,
    fresh: bool,
    wqe: &SendWqe,
    holding: bool,
    ndevs: &mut net::NdevCache,
) -> (Outcome, Option<Built<'a>>) {
    let info = WqeInfo::from_wqe(wqe, qp.qp_type);
    if fresh {
        if let Some(sh) = st.sq.shadow(slot) {
            *sh = Shadow {
                info,
                progress: rl::Progress::posted(info.length, info.retry_iova),
            };
        }
        st.sq.touched = off + 1;
    }
    let State {
        req,
        comp,
        sq,
        odp_retry,
        odp_give_up,
        pages,
        av_cache,
        cursor,
        ..
    } = st;
    // The shadow entry is worked on in place; the WQE is done with once
    // `next` is set.
    let (sh, sq_off) = match sq.shadow_and_off(slot) {
        Some(s) => s,
        None => return (Outcome::Idle, None),
    };
    if matches!(sh.progress.state, WqeState::Done | WqeState::Error) {
        *sq_off = off + 1;
        return (Outcome::Again, None);
    }
    let gates = Gates {
        prior_done: off == 0,
        comp_psn: comp.psn,
        inflight: qp.flow.inflight(),
    };
    let step = rl::plan(req, &snap.rq, &sh.info, &mut sh.progress, &gates);
    let mut next = true;
    let r = match step {
        // Sleep until the skbs in flight drain; look again at once if they
        // drained meanwhile.
        Step::Wait(Wait::Skb) => {
            next = false;
            (Outcome::Paused, None)
        }
        Step::Wait(_) => {
            next = false;
            (Outcome::Idle, None)
        }
        Step::Local => {
            match local_op(qp, wqe) {
                Ok(()) => rl::finish_local(&mut sh.progress),
                Err(status) => rl::fail(&mut sh.progress, status),
            }
            if sh.progress.state == WqeState::Error {
                (Outcome::Failed, None)
            } else {
                (
                    Outcome::Sent {
                        retire: true,
                        last: false,
                    },
                    None,
                )
            }
        }
        // Fully sent and acknowledged already (found again by a retry):
        // move on; the completer retires it.
        Step::Skip => (
            Outcome::Sent {
                retire: true,
                last: false,
            },
            None,
        ),
        Step::SkipUd => {
            rl::skip_oversized_ud(req, &mut sh.progress);
            (
                Outcome::Sent {
                    retire: true,
                    last: false,
                },
                None,
            )
        }
        Step::Fail(status) => {
            rl::fail(&mut sh.progress, status);
            (Outcome::Failed, None)
        }
        // Acknowledged while a retry was on its way to it: sent as far as
        // the WQE is concerned, not on the wire.
        Step::Send(p) if rl::acked_resend(&snap.rq, &p, comp.psn) => {
            counters::inc(&qp.dev, Counter::ResendSkipped);
            let end = rl::commit(req, &snap.rq, &mut sh.progress, &p);
            next = end;
            let retire = retires(qp.qp_type, end, comp, sh);
            (
                Outcome::Sent {
                    retire,
                    last: false,
                },
                None,
            )
        }
        Step::Send(p) => {
            let done = sh.info.length.saturating_sub(sh.progress.resid);
            let built = build(
                qp,
                snap,
                wqe,
                &p,
                done,
                *odp_give_up,
                pages,
                av_cache,
                ndevs,
                (cursor, seq),
            );
            // The pieces the skb did not take (a failure, or a packet to
            // our own MAC address, whose payload is copied) give their
            // references back.
            pages.clear();
            match built {
                Ok(tx) => {
                    odp_retry.on_success();
                    *odp_give_up = false;
                    let end = rl::commit(req, &snap.rq, &mut sh.progress, &p);
                    next = end;
                    let retire = retires(qp.qp_type, end, comp, sh);
                    let clear_held = rl::next_built(req, holding, &p);
                    let hold = rl::may_hold(qp.qp_type, &p);
                    if hold {
                        rl::hold(req, &p);
                    }
                    let built = Built {
                        tx,
                        hold,
                        clear_held,
                    };
                    (
                        Outcome::Sent {
                            retire,
                            last: false,
                        },
                        Some(built),
                    )
                }
                // Nothing committed: the same packet is planned again.
                Err(BuildError::Absent(f)) => {
                    next = false;
                    (Outcome::Fault(f), None)
                }
                Err(BuildError::Status(status)) => {
                    rl::fail(&mut sh.progress, status);
                    (Outcome::Failed, None)
                }
            }
        }
    };
    if next {
        *sq_off = off + 1;
    }
    r
}

/// Whether the WQE `sh`, whose packet just went (its message's last when
/// `end`), is for the completer to retire now: UC/UD messages are done
/// once sent; an RC message is retired by the response to come, unless the
/// ACKs already passed it (a retry resending its tail).
fn retires(qp_type: qp::Type, end: bool, comp: &cl::State, sh: &Shadow) -> bool {
    end && (qp_type != qp::Type::Rc
        || cl::fully_acked(
            comp,
            &Head {
                info: sh.info,
                progress: sh.progress,
            },
        ))
}

/// Sends a packet the requester built (into the step's batch), and keeps
/// an RC QP's retransmit timer running.
#[inline]
fn send_packet<'a>(
    qp: &Arc<QpShared>,
    snap: &Snap,
    batch: &mut net::TxBatch<'a, ReqWake>,
    tx: net::TxPacket<'a>,
) {
    // Losses are recovered by retries on RC; UC and UD lose the message.
    let _ = batch.send(tx);
    if qp.qp_type == qp::Type::Rc {
        arm_retransmit(qp, snap.timeout, true);
    }
}

/// Packets (or local operations) one requester step handles at most: the
/// snapshot of the QP's attributes serves them all while its status stays
/// the same.
const PACKETS_PER_STEP: u32 = 8;

/// One step of the requester: up to [`PACKETS_PER_STEP`] packets or local
/// operations.
pub(crate) fn step(qp: &Arc<QpShared>) -> TaskProgress {
    let Some(snap) = snapshot(qp) else {
        return TaskProgress::Done;
    };
    let draining = match snap.state {
        qp::State::Rts => false,
        // Nothing new starts, but a message already started is sent whole
        // (and resent on a retry); the drain ends once every started WQE
        // has completed.
        qp::State::Sqd => true,
        qp::State::Err => {
            qp.kick_completer();
            return TaskProgress::Done;
        }
        _ => return TaskProgress::Done,
    };
    let gen = qp.status_gen();
    let mut outcome = Outcome::Idle;
    // The last message's END packet, until the next packet tells whether
    // it keeps its ACK request (`rl::next_built`).
    let mut held: Option<net::TxPacket<'_>> = None;
    // The step's packets reach the device together (see `net::TxBatch`).
    let mut batch = net::TxBatch::new(&qp.flow);
    let mut ndevs = net::NdevCache::new();
    // A WQE is done without a response: the completer (the other half of
    // this task, run after this step) is to retire it.
    let mut retired = false;
    for _ in 0..PACKETS_PER_STEP {
        let built;
        (outcome, built) = run_once(qp, &snap, held.is_some(), draining, &mut ndevs);
        if let Some(b) = built {
            if let Some(mut h) = held.take() {
                // On failure the packet still asks: only a wasted ACK.
                if b.clear_held {
                    let _ = h.set_ack_req(false);
                }
                send_packet(qp, &snap, &mut batch, h);
            }
            if b.hold {
                held = Some(b.tx);
            } else {
                send_packet(qp, &snap, &mut batch, b.tx);
            }
        }
        match outcome {
            Outcome::Sent { retire, last } => {
                retired |= retire;
                // Looking again would only find the SQ as it was read.
                if last && !draining {
                    break;
                }
            }
            Outcome::Again => {}
            _ => break,
        }
        // The snapshot holds while the status does.
        if qp.status_gen() != gen {
            break;
        }
    }
    if let Some(h) = held {
        send_packet(qp, &snap, &mut batch, h);
    }
    batch.flush();
    if retired {
        qp.kick_completer();
    }
    if draining && matches!(outcome, Outcome::Idle) && qp.req.lock().sq.touched == 0 {
        qp.finish_sq_drain();
    }
    match outcome {
        Outcome::Idle => TaskProgress::Done,
        Outcome::Again => TaskProgress::More,
        Outcome::Paused => {
            qp.flow.waker().arm(qp);
            if qp.flow.pause() {
                TaskProgress::Done
            } else {
                TaskProgress::More
            }
        }
        // The doorbell of a WQE posted since runs the requester again.
        Outcome::Sent { last: true, .. } if !draining => TaskProgress::Done,
        Outcome::Sent { .. } => TaskProgress::More,
        Outcome::Failed => {
            qp.kick_completer();
            qp_error(qp, StateCause::SendFailed);
            TaskProgress::Done
        }
        Outcome::Fault(pending) => {
            let next = match qp.faults.check(Engine::Requester, pending.as_ref()) {
                // The fault in progress kicks the requester when it ends.
                Check::Busy => return TaskProgress::Done,
                Check::Failed => Next::GiveUp,
                Check::Free => qp.req.lock().odp_retry.on_absent(),
            };
            // The WQE was not committed: the fault's end kicks the
            // requester, which builds the packet again.
            if next == Next::Fault && qp.start_fault(Engine::Requester, pending) {
                return TaskProgress::Done;
            }
            qp.req.lock().odp_give_up = true;
            TaskProgress::More
        }
    }
}

impl TimerOwner<{ qp::RETRANS_TIMER }> for QpShared {
    fn expired(this: Arc<Self>) {
        let (valid, timeout) = {
            let s = this.status();
            (s.valid, s.attrs.timeout)
        };
        if !valid {
            return;
        }
        if this.probe_due.swap(false, Ordering::Relaxed) {
            // The probe: the rest of the timeout is still to run.
            this.req.lock().comp.probe_fired();
            if let Some((_, Some(rest))) = retransmit_delays(timeout) {
                this.retrans_timer.arm_in(&this, rest);
            }
        } else {
            this.req.lock().comp.timer_fired();
        }
        this.kick_completer();
    }
}

impl TimerOwner<{ qp::RNR_TIMER }> for QpShared {
    fn expired(this: Arc<Self>) {
        if !this.status().valid {
            return;
        }
        this.req.lock().req.rnr_timer_fired();
        this.kick_requester();
    }
}
