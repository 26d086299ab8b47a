// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The responder of a QP: executes the requests the receive path queues on
//! `resp_pkts` (sends into receive WQEs, RDMA writes, reads, atomics,
//! flushes), answers RC requests with ACKs, NAKs, read responses and atomic
//! ACKs, and posts receive completions.
//!
//! The decisions are `proto::responder::machine` (rdma_rxe's `rxe_receiver()` state
//! machine); `io.rs` gives it the kernel side through [`machine::Io`].
//! The task holds `QpShared::resp` while it runs one request; under it it
//! takes the RQ, SRQ and CQ locks, never another engine's. Receive
//! completions go into the CQ under it, in order, but the CQ's handler (and
//! the QP's LAST_WQE_REACHED event) run after it is released.

mod io;

use io::Io;

use kernel::{prelude::*, sync::Arc};

use crate::rxe::cq::Due;
use crate::rxe::dma::Cursor;
use crate::rxe::kapi::alloc;
use crate::rxe::kapi::event::QpEvent;
use crate::rxe::kapi::route::RouteScope;
use crate::rxe::kapi::task::{Progress, TaskOwner};
use crate::rxe::kapi::trace::{self, StateCause};
use crate::rxe::mr::PendingFault;
use crate::rxe::net::{self, TxFlow};
use crate::rxe::proto::odp::{Next, Retry};
use crate::rxe::proto::params::IbMtu;
use crate::rxe::proto::qp::AttrMask;
use crate::rxe::proto::qp_attr::QpAttrs;
use crate::rxe::proto::responder::machine;
use crate::rxe::proto::responder::rules::{self, Res, ResKind, RespQp, MAX_RESOURCES};
use crate::rxe::proto::uapi::{recv_wqe, Cqe, RecvWqe, WcStatus};
use crate::rxe::qp::{self, Check, Engine, QpShared};
use crate::rxe::recv::RxPacket;
use crate::rxe::reorder::Reorder;

/// The receive WQE the current message lands in, with its progress.
struct HeldWqe {
    wqe: RecvWqe,
    cursor: Cursor,
}

/// Storage for the [`HeldWqe`], kept with the QP: a receive WQE (over
/// 500 bytes) is read from the ring straight into it, never built on the
/// stack and moved.
struct WqeHold {
    w: KBox<HeldWqe>,
    live: bool,
    /// The message's first packet stopped at an absent ODP page after it
    /// took this (SRQ) WQE: its next try takes the same WQE.
    retry: bool,
}

impl WqeHold {
    fn new() -> Result<Self> {
        let w = KBox::new(
            HeldWqe {
                wqe: RecvWqe::empty(),
                cursor: Cursor::new(0),
            },
            GFP_KERNEL,
        )?;
        Ok(Self {
            w,
            live: false,
            retry: false,
        })
    }

    fn get(&self) -> Option<&HeldWqe> {
        self.live.then_some(&*self.w)
    }

    fn get_mut(&mut self) -> Option<&mut HeldWqe> {
        if self.live {
            Some(&mut self.w)
        } else {
            None
        }
    }

    fn clear(&mut self) {
        self.live = false;
        self.retry = false;
    }
}

/// Per-QP state of the responder, behind `QpShared::resp`.
pub(crate) struct State {
    rs: KBox<rules::State>,
    /// The request being worked on: taken off `resp_pkts`, kept while a
    /// read reply spans several runs.
    head: Option<RxPacket>,
    /// Requests that came beyond a gap in the PSNs (RC).
    reorder: Reorder,
    wqe: WqeHold,
    /// Owns the responder's skbs in flight; the responder never pauses.
    flow: TxFlow<()>,
    /// An SRQ QP in ERR reported its last WQE.
    last_wqe_reported: bool,
    /// Faults of ODP pages for the request at the head.
    odp_retry: Retry,
    /// The retries are used up: an absent page is a bad access.
    odp_give_up: bool,
    /// The QP's status as the responder last read it.
    view: Option<View>,
    /// The region the RDMA WRITE under way resolved at its first packet,
    /// with its rkey: its middle and last packets use it while it has not
    /// changed, without a lookup.
    write_mr: Option<WriteMr>,
}

/// A region held for the RDMA WRITE under way (see [`State::write_mr`]).
pub(super) struct WriteMr {
    rkey: u32,
    /// The region's generation its first packet's checks were made at.
    gen: u64,
    mr: Arc<crate::rxe::mr::MrShared>,
}

/// The responder state (9 KiB, mostly the read/atomic resources), built in
/// place on the heap: as a value it would not fit on a 16 KiB kernel stack
/// beside the verbs call that creates the QP.
fn resp_state_init() -> impl Init<rules::State, Error> {
    // `try_init!` takes a bare type name.
    use rules::State as Rules;
    kernel::try_init!(Rules {
        psn: 0,
        msn: 0,
        opcode: None,
        drop_msg: false,
        sent_psn_nak: false,
        gap_filled: false,
        va: 0,
        rkey: 0,
        resid: 0,
        length: 0,
        res <- alloc::array_from_fn::<Res, { MAX_RESOURCES }>(|_| Res::default()),
        res_count: 0,
        res_head: 0,
        cur: None,
        ack_owed: None,
    }? Error)
}

impl State {
    /// Process context (creates the transmit socket).
    pub(crate) fn new() -> Result<Self> {
        Ok(Self {
            rs: KBox::init(resp_state_init(), GFP_KERNEL)?,
            head: None,
            reorder: Reorder::new(),
            wqe: WqeHold::new()?,
            flow: TxFlow::new(())?,
            last_wqe_reported: false,
            odp_retry: Retry::new(),
            odp_give_up: false,
            view: None,
            write_mr: None,
        })
    }

    /// Drops the responder's cached route within `scope`.
    pub(crate) fn forget_route(&self, scope: RouteScope) {
        self.flow.forget_route(scope);
    }

    /// Drops the responder's cached route and caches none from now on.
    pub(crate) fn close_routes(&self) {
        self.flow.close_routes();
    }

    /// Drops the queued request and the held WQE (RESET, flush).
    fn forget(&mut self) {
        if let Some(p) = self.head.take() {
            p.consume();
        }
        self.reorder.clear();
        self.wqe.clear();
        self.write_mr = None;
    }
}

/// Receive WQEs one responder step flushes at most.
const FLUSH_BATCH: u32 = 64;

/// `max_dest_rd_atomic` as rdma_rxe stores it: rounded up to a power of two.
fn rounded_rd_atomic(n: u8) -> u32 {
    if n == 0 {
        0
    } else {
        u32::from(n).next_power_of_two()
    }
}

impl QpShared {
    /// Drops the request at the head and those held for reordering
    /// (destroy: the packets keep their device referenced).
    pub(crate) fn resp_forget(&self) {
        self.resp.lock().forget();
    }

    /// The PSN the responder expects next, which query_qp reports as
    /// `rq_psn`.
    pub(crate) fn resp_psn(&self) -> u32 {
        self.resp.lock().rs.psn
    }

    /// The expected PSN and the resources holding a reply, for `rdma
    /// resource show`.
    pub(crate) fn resp_details(&self) -> (u32, u32) {
        let st = self.resp.lock();
        let used = st
            .rs
            .res
            .iter()
            .take(st.rs.res_count)
            .filter(|r| r.kind != ResKind::Free)
            .count();
        (st.rs.psn, u32::try_from(used).unwrap_or(u32::MAX))
    }

    /// modify_qp stored new attributes: the responder takes the receive PSN
    /// and its resource count, and starts over on RESET. Call without the
    /// state lock held.
    pub(crate) fn resp_modified(&self, mask: AttrMask, attrs: &QpAttrs) {
        let mut st = self.resp.lock();
        if attrs.state == qp::State::Reset && mask.contains(AttrMask::STATE) {
            st.rs.reset();
            st.forget();
            st.last_wqe_reported = false;
            drop(st);
            let mut q = self.resp_pkts.lock();
            while let Some(p) = q.pop() {
                p.consume();
            }
            return;
        }
        if mask.contains(AttrMask::MAX_DEST_RD_ATOMIC) {
            st.rs
                .set_max_dest_rd_atomic(rounded_rd_atomic(attrs.max_dest_rd_atomic));
        }
        if mask.contains(AttrMask::RQ_PSN) {
            st.reorder.clear();
            st.rs.set_rq_psn(attrs.rq_psn);
        }
        if attrs.state != qp::State::Err {
            st.last_wqe_reported = false;
        }
    }

    /// Moves the QP to ERR after a fatal receive error (`rxe_qp_error`).
    fn resp_enter_error(self: &Arc<Self>) {
        let old = {
            let mut s = self.status_mut();
            let c = s.valid && s.attrs.state != qp::State::Err;
            c.then(|| core::mem::replace(&mut s.attrs.state, qp::State::Err))
        };
        if let Some(old) = old {
            self.trace_state(old, qp::State::Err, StateCause::Receive);
            self.on_error();
        }
    }

    /// Drops every queued request.
    fn resp_drain_pkts(&self) {
        loop {
            let p = self.resp_pkts.lock().pop();
            match p {
                Some(p) => p.consume(),
                None => break,
            }
        }
    }

    /// `flush_recv_queue()`: every posted receive WQE completes with
    /// `WR_FLUSH_ERR` (`notify`; the CQ's handler is left in `due`) or is
    /// dropped. User space may keep moving the producer index, so one call
    /// takes at most a ring's worth, and at most [`FLUSH_BATCH`] (a task
    /// step is one of up to 1024 in a row).
    fn resp_flush_recv(&self, st: &mut State, notify: bool, due: &mut Due) -> Flushed {
        st.wqe.clear();
        if self.srq.is_some() {
            if notify && !st.last_wqe_reported {
                st.last_wqe_reported = true;
                return Flushed::LastWqe;
            }
            return Flushed::Done;
        }
        let Some(capacity) = self.rq.lock().as_ref().map(|rq| rq.queue.capacity()) else {
            return Flushed::Done;
        };
        let mut notify = notify;
        for _ in 0..capacity.min(FLUSH_BATCH) {
            let wr_id = {
                let mut rq = self.rq.lock();
                let Some(rq) = Option::as_mut(&mut rq) else {
                    return Flushed::Done;
                };
                // Only the WR ID is needed: the WQE is not parsed.
                let mut id = [0u8; 8];
                match rq.queue.peek_at(recv_wqe::WR_ID, &mut id) {
                    Ok(true) => {}
                    _ => return Flushed::Done,
                }
                rq.queue.advance();
                u64::from_ne_bytes(id)
            };
            if notify {
                let cqe = Cqe::new(wr_id, WcStatus::WrFlushErr, self.qpn);
                trace::completion(&cqe, true);
                let Some(h) = self.link.handle() else {
                    notify = false;
                    continue;
                };
                if self.rcq.produce(&cqe, h, false, None, due).is_err() {
                    notify = false;
                }
            }
        }
        Flushed::More
    }
}

/// What one pass of the receive queue flush left to do.
enum Flushed {
    /// WQEs may be left: another pass.
    More,
    /// Nothing left.
    Done,
    /// An SRQ QP's last WQE: the event is due (after the `resp` lock).
    LastWqe,
}

/// What the responder needs of the QP's attributes for one run.
struct Facts {
    qp: RespQp,
    port_num: u8,
    dest_qpn: u32,
    /// The RC reply path (from the primary AV): (sgid index, dmac, tos, ttl).
    path: Option<(u8, [u8; 6], u8, u8)>,
    sport: u16,
}

fn facts(sh: &QpShared, attrs: &QpAttrs, sport: u16) -> Facts {
    let mtu = IbMtu::from_raw(attrs.path_mtu).map_or(256, |m| m.bytes());
    Facts {
        qp: RespQp {
            qp_type: sh.qp_type,
            mtu,
            access: attrs.access_flags,
            srq: sh.srq.is_some(),
            min_rnr_timer: attrs.min_rnr_timer,
        },
        port_num: u8::try_from(attrs.port_num).unwrap_or(1),
        dest_qpn: attrs.dest_qp_num,
        path: attrs.pri_av.as_ref().map(|av| {
            (
                av.grh.sgid_index,
                av.dmac,
                av.grh.traffic_class,
                av.grh.hop_limit,
            )
        }),
        sport,
    }
}

/// What the responder reads of the QP's status, with the change count
/// it was read at: a step takes the status lock only when the count moved.
struct View {
    gen: u32,
    valid: bool,
    state: qp::State,
    facts: Facts,
}

/// The responder's view of the QP's status, read again if it changed.
/// Under `resp` (the state lock nests inside it).
fn view<'a>(sh: &QpShared, cached: &'a mut Option<View>) -> &'a View {
    if cached.as_ref().is_some_and(|v| v.gen == sh.status_gen()) {
        if let Some(v) = cached {
            return v;
        }
    }
    let s = sh.status();
    // Writers move the count before they unlock: it is stable here.
    cached.insert(View {
        gen: sh.status_gen(),
        valid: s.valid,
        state: s.attrs.state,
        facts: facts(sh, &s.attrs, s.src_port),
    })
}

/// Requests (or read response packets) one responder step handles at
/// most: the lock and status checks of a step are shared by them, and a
/// run that finds the queue empty ends the step without another one.
const RUNS_PER_STEP: u32 = 4;

/// What the responder does about an absent ODP page after a run.
enum OdpStep {
    None,
    /// A fault is in progress: stop until it ends and kicks the responder.
    Wait,
    /// Start a fault job and stop until it kicks the responder.
    Fault(Option<PendingFault>),
    /// Retries used up: run again, the access now failing as a bad one.
    Rerun,
}

impl TaskOwner<{ qp::RESP_TASK }> for QpShared {
    fn step(this: &Arc<Self>) -> Progress {
        let mut guard = this.resp.lock();
        let (valid, state) = {
            let v = view(this, &mut guard.view);
            (v.valid, v.state)
        };
        if !valid || matches!(state, qp::State::Err | qp::State::Reset) {
            drop(guard);
            let notify = valid && state == qp::State::Err;
            this.resp_drain_pkts();
            let mut due = Due::NONE;
            let flushed = {
                let mut st = this.resp.lock();
                st.forget();
                this.resp_flush_recv(&mut st, notify, &mut due)
            };
            this.rcq.run_due(&mut due);
            return match flushed {
                Flushed::More => Progress::More,
                Flushed::Done => Progress::Done,
                Flushed::LastWqe => {
                    this.link.dispatch(QpEvent::LastWqeReached);
                    Progress::Done
                }
            };
        }
        let (out, mut due, fault, srq_limit) = {
            let State {
                rs,
                head,
                reorder,
                wqe,
                flow,
                odp_retry,
                odp_give_up,
                view,
                write_mr,
                ..
            } = &mut *guard;
            let Some(View { gen, facts: f, .. }) = view.as_ref() else {
                return Progress::Done;
            };
            let mut io = Io {
                sh: this,
                f,
                gen: *gen,
                head,
                reorder,
                head_held: false,
                wqe,
                batch: net::TxBatch::new(flow),
                ndevs: net::NdevCache::new(),
                mr: None,
                write_mr,
                on_write_mr: None,
                due: Due::NONE,
                srq_limit: false,
                fault: None,
                odp_give_up: *odp_give_up,
            };
            // Run after run while each handles something; the last one
            // tells the step what to do next.
            let mut handled = false;
            let mut out = machine::run(rs, &f.qp, &mut io);
            for _ in 1..RUNS_PER_STEP {
                if !out.progress || out.qp_error || out.fault {
                    break;
                }
                handled = true;
                out = machine::run(rs, &f.qp, &mut io);
            }
            handled |= out.progress;
            io.batch.flush();
            let (due, pending, srq_limit) = (io.due, io.fault, io.srq_limit);
            // What was handled before a fault ends the previous request's
            // retries; the fault then counts for the request that took it.
            if handled {
                odp_retry.on_success();
                *odp_give_up = false;
            }
            let fault = if !out.fault {
                OdpStep::None
            } else {
                let next = match this.faults.check(Engine::Responder, pending.as_ref()) {
                    Check::Busy => None,
                    Check::Failed => Some(Next::GiveUp),
                    Check::Free => Some(odp_retry.on_absent()),
                };
                match next {
                    None => OdpStep::Wait,
                    Some(Next::Fault) => OdpStep::Fault(pending),
                    Some(Next::GiveUp) => {
                        *odp_give_up = true;
                        OdpStep::Rerun
                    }
                }
            };
            (out, due, fault, srq_limit)
        };
        // Completion and event handlers run with no QP lock held: they may
        // post to or modify this QP, which takes the lock again.
        drop(guard);
        this.rcq.run_due(&mut due);
        if srq_limit {
            if let Some(srq) = &this.srq {
                srq.limit_reached();
            }
        }
        match fault {
            OdpStep::None => {}
            OdpStep::Wait => return Progress::Done,
            OdpStep::Rerun => return Progress::More,
            OdpStep::Fault(pending) => {
                // The request stays at the head of the queue; the fault's
                // end kicks the responder, which runs it again.
                if this.start_fault(Engine::Responder, pending) {
                    return Progress::Done;
                }
                this.resp.lock().odp_give_up = true;
                return Progress::More;
            }
        }
        if out.qp_error {
            this.resp_enter_error();
            return Progress::More;
        }
        if out.progress {
            Progress::More
        } else {
            Progress::Done
        }
    }
}
