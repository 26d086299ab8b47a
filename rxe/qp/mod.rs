// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Queue pairs at the verbs level: creation with their rings, the state
//! machine and attributes, multicast membership, and the state the
//! datapath reaches through the device's QP pool.
//!
//! [`Qp`] (`verbs.rs`) is the core's handle on a QP: create, modify,
//! query, destroy, multicast attach and detach.
//!
//! Interface for the datapath:
//! - The device's QP pool (`DeviceState::qps`) finds the QP a packet is
//!   for (`recv.rs`; QPN 1 is the GSI QP's index).
//! - [`QpShared`] holds the QP's identity (QPN, type, PD), its CQs and SRQ,
//!   its state and attributes (`status`, read with [`QpShared::status`]), its
//!   rings (`sq`, `rq`) and the `link` to raise asynchronous events with.
//! - The hooks `QpShared::kick_requester`, `kick_responder`, `on_error`,
//!   `on_reset` and `on_destroy` are where the requester, responder and
//!   completer plug in; `finish_sq_drain` is for the requester to call.
//!   They live in `engine.rs`, with the receive hand-off and the doorbell.
//!
//! # Lock order
//!
//! The whole driver's, written once here. A lock is taken only with locks
//! listed before it (on its left in a chain) held, or with none; a lock
//! named "alone" is taken with none of the driver's locks held but those
//! of the chain that reaches it, and takes none itself. The names are the
//! lockdep classes: `new_spinlock_bh!`/`new_spinlock_irq!` give each call
//! site a class of its own, so every class below is one field of one kind
//! of object (the task and timer helpers give all tasks one `rxe_task` and
//! all timers one `rxe_timer`).
//!
//! QP engines (this module, `completer.rs`, `requester/`, `responder/`):
//!
//! - `rxe_qp_comp` (`QpShared::comp`: the completer's CQE batch and ODP
//!   retry state, held for a whole completer step) -> `rxe_qp_comp_pkts`
//!   (flush) and `rxe_qp_req`; after `rxe_qp_req` is released, the send
//!   CQ: its ring `rxe_cq`, then `rxe_cq_link` for the consumer's handler
//!   (so everything a handler may take, below, nests under `rxe_qp_comp`).
//! - `rxe_qp_req` (`QpShared::req`: the requester's and the completer's
//!   protocol state, one lock for both) -> `rxe_qp_sq` (the WQEs read and
//!   retired), `rxe_qp_comp_pkts` (the responses the completer takes),
//!   `rxe_qp_link` (a completion's `ib_qp` handle, copied out), the send
//!   CQ's ring `rxe_cq` (a full CQE batch goes in at once; its handler
//!   waits for the batch's post), local operations and payload reads (the
//!   key lookups below) and the AH (`rxe_pool` -> `rxe_ah_av`). The
//!   packet is sent after the lock is released.
//! - `rxe_qp_resp` (`QpShared::resp`) -> `rxe_qp_resp_pkts`, `rxe_qp_rq`,
//!   `rxe_qp_state` (the responder's view of the status when its change
//!   count moved, `is_in`; the QP's path for a reply with no request
//!   at hand), `rxe_srq`, `rxe_qp_link` (handle copied out), the receive
//!   CQ's ring `rxe_cq` (completions go in in order; the handler runs
//!   under `rxe_cq_link` after `rxe_qp_resp` is released, as do the SRQ
//!   limit event under `rxe_srq_link` and LAST_WQE_REACHED under
//!   `rxe_qp_link`), the key lookups below,
//!   and a reply's send: `rxe_route_cache`, and on loopback the receive of
//!   the reply (the receive path below, on the peer QP).
//!
//! `rxe_qp_comp`, `rxe_qp_req` and `rxe_qp_resp` are the engine locks.
//! `rxe_qp_req` and `rxe_qp_resp` are never held together (modify_qp takes
//! `rxe_qp_state`, then `rxe_qp_req`, then `rxe_qp_resp`, one after the
//! other), and nothing takes `rxe_qp_comp` under another lock. The
//! completer and the requester are the two halves of one task
//! (`send_task`), one after the other, never nested; the responder is its
//! own task, and neither runs the other inline.
//!
//! Consumer callbacks (`kapi/cq_srq.rs`, `kapi/event.rs`):
//!
//! - `rxe_cq_link` -> `rxe_cq`: a CQ's completion handler and its CQ error
//!   event run under the link, not under `rxe_cq`, with no engine lock but
//!   `rxe_qp_comp` held, so a kernel consumer may poll and re-arm
//!   (`rxe_cq`), post (`rxe_qp_state`, `rxe_qp_sq`/`rxe_qp_rq`, `rxe_srq`,
//!   `rxe_task`) or modify a QP (`rxe_qp_state`, `rxe_qp_req`,
//!   `rxe_qp_resp`, `rxe_qp_resp_pkts`, `rxe_task`) from there. Hence the
//!   link is never taken under `rxe_qp_req` or `rxe_qp_resp`: producers
//!   take `rxe_cq` alone.
//! - `rxe_srq_link` -> `rxe_srq`: the SRQ limit event's handler may re-arm
//!   the limit.
//! - `rxe_qp_link`: the QP's event handler runs under it with interrupts
//!   off (as hardware drivers call it from their interrupt handlers), with
//!   no other driver lock held; it may post (IPoIB does) but must not
//!   modify the QP.
//!
//! Receive path (`recv.rs`, `mcast.rs`, softirq): `rxe_pool` (the QP, the
//! index released before anything else), `rxe_mcast` alone (the members
//! are copied out before delivery), then per QP `rxe_qp_state` alone (the
//! receive checks), the engine's packet queue (`rxe_qp_comp_pkts` or
//! `rxe_qp_resp_pkts`) alone, and `rxe_task`. The task's step then runs
//! with none of these held: inline, on a worker, or from this CPU's
//! softirq list (`Task::schedule_bh`), a lock-free `llist` pushed under
//! `rxe_task` and run by a softirq work item that takes `rxe_task` alone.
//!
//! Keys and memory (`pool.rs`, `mr/`, `mw.rs`, `ah.rs`,
//! `kapi/odp.rs`): `rxe_pool` (an index to an object, released before
//! the object's lock), then one of `rxe_mr`, `rxe_mw` or `rxe_ah_av`;
//! `rxe_mr` -> `rxe_odp_table` (an access to an ODP MR). Faults and
//! registration, in process context with no spinlock held: the core's
//! `umem_mutex` -> `rxe_odp_table`, and `rxe_odp_umem` (a mutex) alone;
//! the MMU notifier's invalidation takes `umem_mutex` -> `rxe_odp_table`.
//! Faults run as jobs of their own (`faults.rs`), with none of the QP's
//! locks held; an engine that starts or checks one takes `rxe_qp_faults`
//! alone (under its engine lock or none), and a job that ends takes it
//! alone, then `rxe_task` to kick the engine.
//! A window bind builds its view of the MR (`rxe_mr`) before it takes
//! `rxe_mw`.
//!
//! Dropping cached routes (`device.rs`, process context: the netdev
//! notifier under RTNL, a namespace's exit): `rxe_rs_devices_mutex` (the
//! list of devices, `kapi/ibdev.rs`) -> `rxe_pool` (released before the
//! QP is visited), the requester's `rxe_route_cache`, and `rxe_qp_resp` ->
//! its `rxe_route_cache`. A device's registration and `dealloc_driver`
//! take the mutex alone.
//!
//! Taken alone, under whatever the caller holds: `rxe_task`, `rxe_timer`
//! (a timer is armed after the engine locks are released; cancelling one
//! takes no lock), `rxe_route_cache` (the route lookup runs outside it),
//! `rxe_req_wake` -> `rxe_task` (the transmit skbs drained: a destructor,
//! so under whatever lock the skb's last holder has), `rxe_mmaps`, and
//! `rxe_mcast` on attach and detach (the netdev's multicast list is
//! changed outside it).
//!
//! `rxe_qp_state` is never held while another lock is taken. The `_irq`
//! locks (`rxe_qp_state`, `rxe_qp_sq`, `rxe_qp_rq`, `rxe_qp_link`, `rxe_qp_faults`,
//! `rxe_pool`, `rxe_ah_av`, `rxe_task`, `rxe_req_wake`) save and mask
//! interrupts: kernel users post, modify and make AHs with interrupts off
//! (the MAD layer posts sends under its own `spin_lock_irqsave`); no `_bh`
//! lock is taken under one of them. The work items (`rxe_send`,
//! `rxe_resp`) and timers (`rxe_retrans`, `rxe_rnr`) have lockdep maps of
//! their own: they are flushed or shut down (`disable`, `shutdown`) in
//! process context with no driver lock held.

mod details;
mod engine;
mod faults;
mod post;
mod verbs;

use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use kernel::{prelude::*, sync::Arc};

use crate::rxe::device::DeviceRef;
use crate::rxe::fifo::Fifo;
use crate::rxe::kapi::errno;
use crate::rxe::kapi::event::QpLink;
use crate::rxe::kapi::lock::{SpinLockBh, SpinLockIrq, SpinLockIrqGuard};
use crate::rxe::kapi::route::RouteScope;
use crate::rxe::kapi::task::{impl_has_task, Task};
use crate::rxe::kapi::timer::{impl_has_timer, Timer};
use crate::rxe::kapi::trace::{self, StateCause};
use crate::rxe::net::TxFlow;
use crate::rxe::proto::accept::QpFacts;
use crate::rxe::proto::conv::to_usize;
use crate::rxe::proto::ip::{IpAddr, NetworkType};
use crate::rxe::proto::params::limits;
pub(crate) use crate::rxe::proto::qp::{State, Type};
use crate::rxe::proto::qp_attr::{AttrError, QpAttrs};
use crate::rxe::proto::uapi::{self, Sge, SizeError, WcStatus};
use crate::rxe::queue::Queue;
use crate::rxe::recv::RxPacket;
use crate::rxe::{completer, requester};
use crate::rxe::{cq, srq};
pub(crate) use faults::{Check, Engine};
pub(crate) use verbs::{CreateArgs, Qp};

/// SGEs a WQE has at most.
const MAX_SGE: usize = to_usize(limits::MAX_SGE);

/// The errno of a refused attribute.
pub(crate) fn attr_errno(e: AttrError) -> Error {
    match e {
        AttrError::Invalid => EINVAL,
        AttrError::NotSupported => errno::eopnotsupp(),
    }
}

fn size_errno(e: SizeError) -> Error {
    match e {
        SizeError::Invalid => EINVAL,
        SizeError::TooLarge => ENOMEM,
    }
}

/// Send queue limits, as created (may exceed what was asked for).
#[derive(Clone, Copy, Debug)]
pub(crate) struct SqCaps {
    pub(crate) max_wr: u32,
    pub(crate) max_sge: u32,
    pub(crate) max_inline: u32,
}

/// Receive queue limits; zero when an SRQ supplies the receive WQEs.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RqCaps {
    pub(crate) max_wr: u32,
    pub(crate) max_sge: u32,
}

/// The send queue: `struct rxe_send_wqe` slots.
pub(crate) struct Sq {
    pub(crate) queue: Queue,
    /// Send sequence number of the last WQE a kernel user posted.
    ssn: u32,
    /// Kernel QPs build a slot here before it goes into the ring.
    slot: KVec<u8>,
    inline_buf: KVec<u8>,
    /// Kernel QPs convert a WR's SGEs here (`MAX_SGE` entries).
    sges: KVec<Sge>,
}

/// The receive queue: `struct rxe_recv_wqe` slots.
pub(crate) struct Rq {
    pub(crate) queue: Queue,
    slot: KVec<u8>,
    sges: KVec<Sge>,
}

/// Status and attributes, changed by modify_qp and the datapath.
pub(crate) struct Status {
    /// Cleared by destroy: nothing may start on the QP afterwards.
    pub(crate) valid: bool,
    pub(crate) attrs: QpAttrs,
    /// UDP source port of the QP's packets.
    pub(crate) src_port: u16,
}

/// The part of a QP the datapath reaches through the device's pool.
///
/// The last reference may go in any context up to softirq, also under a
/// BH-disabling lock (a type 2 window bound to a destroyed QP, a packet
/// the receive softirq looked up while the QP was destroyed): the drop
/// only frees memory (`vfree` defers itself there) and hands the transmit
/// sockets to a work item. Not under a lock that only masks interrupts,
/// where `vfree` may sleep.
#[pin_data]
pub(crate) struct QpShared {
    /// The number on the wire (1 for GSI).
    pub(crate) qpn: u32,
    /// The index in the device's QP pool (the QPN, except for GSI).
    pub(crate) index: u32,
    pub(crate) qp_type: Type,
    /// Identity of the QP's PD, for AH and MR checks.
    pub(crate) pd: usize,
    /// The rings are shared with user space.
    pub(crate) is_user: bool,
    /// Every send completes (`IB_SIGNAL_ALL_WR`).
    pub(crate) sig_all: bool,
    pub(crate) scq: Arc<cq::CqShared>,
    pub(crate) rcq: Arc<cq::CqShared>,
    pub(crate) srq: Option<Arc<srq::SrqShared>>,
    pub(crate) sq_caps: SqCaps,
    pub(crate) rq_caps: RqCaps,
    /// Read through [`QpShared::status`], changed through
    /// [`QpShared::status_mut`] only.
    #[pin]
    status: SpinLockIrq<Status>,
    /// Counts the changes of `status` (bumped under its lock): an engine
    /// keeps a copy of what it needs with the count it was taken at, and
    /// takes the lock again only when the count moved.
    status_gen: AtomicU32,
    #[pin]
    pub(crate) sq: SpinLockIrq<Sq>,
    /// `None` with an SRQ.
    #[pin]
    pub(crate) rq: SpinLockIrq<Option<Rq>>,
    #[pin]
    pub(crate) link: QpLink,
    /// Multicast groups the QP is attached to.
    pub(crate) mcg_num: AtomicU32,
    /// The device the engines send on; the QP is destroyed before the
    /// device is released, which drops this reference.
    pub(crate) dev: DeviceRef,
    /// The engines' transmit socket and skb count.
    pub(crate) flow: TxFlow<requester::ReqWake>,

    // The datapath engines' locks (rxe/requester/, rxe/completer.rs, rxe/responder/;
    // their order is in the module doc): the requester and the completer
    // share `req` (one protocol state), the responder has `resp`.
    #[pin]
    pub(crate) req: SpinLockBh<requester::State>,
    /// The completer's CQE batch and ODP retries, held for a whole
    /// completer step, outside `req`.
    #[pin]
    pub(crate) comp: SpinLockBh<completer::State>,
    #[pin]
    pub(crate) resp: SpinLockBh<crate::rxe::responder::State>,
    /// Acknowledgements and read responses waiting for the completer.
    #[pin]
    pub(crate) comp_pkts: SpinLockBh<Fifo<RxPacket>>,
    /// Requests waiting for the responder.
    #[pin]
    pub(crate) resp_pkts: SpinLockBh<Fifo<RxPacket>>,
    /// The sender: the completer and the requester share one task, as in
    /// C since 6.9, so a completer run never overlaps a requester run, and
    /// the task can run inline wherever a response arrives. `want_comp`
    /// and `want_req` say which half has work; each is set before the
    /// task is scheduled and cleared by the run that takes it.
    #[pin]
    pub(crate) send_task: Task<QpShared, SEND_TASK>,
    want_comp: AtomicBool,
    want_req: AtomicBool,
    /// `ib_wc_status` of the QP's last completion in error (flushes aside),
    /// `u32::MAX` before any; for `rdma resource show`.
    last_err: AtomicU32,
    #[pin]
    pub(crate) resp_task: Task<QpShared, RESP_TASK>,
    /// The engines' ODP faults in progress (`faults.rs`).
    pub(crate) faults: Arc<faults::Faults>,
    /// Local ACK timeout: retransmit when nothing was acknowledged. Armed
    /// first for the probe when `probe_due` (see
    /// `requester::arm_retransmit`).
    #[pin]
    pub(crate) retrans_timer: Timer<QpShared, RETRANS_TIMER>,
    /// The retransmit timer's next expiry is the probe's, not the
    /// timeout's.
    pub(crate) probe_due: AtomicBool,
    /// RNR NAK wait before the requester resends.
    #[pin]
    pub(crate) rnr_timer: Timer<QpShared, RNR_TIMER>,
}

/// Task and timer identities of a QP.
pub(crate) const SEND_TASK: u64 = 0;
pub(crate) const RESP_TASK: u64 = 2;
pub(crate) const RETRANS_TIMER: u64 = 0;
pub(crate) const RNR_TIMER: u64 = 1;

/// Packets a QP queues per engine: room to start with, and the most it
/// grows to before it drops (RC peers retransmit; UC and UD lose the
/// message). Bursts are real: a UC sender does not wait for anything, and
/// one RDMA READ of 1 MiB brings 1024 responses.
const PKT_QUEUE_INITIAL: usize = 64;
const PKT_QUEUE_LIMIT: usize = 8192;

impl_has_task! {
    impl HasTask<SEND_TASK> for QpShared { self.send_task }
    impl HasTask<RESP_TASK> for QpShared { self.resp_task }
}

impl_has_timer! {
    impl HasTimer<RETRANS_TIMER> for QpShared { self.retrans_timer }
}
impl_has_timer! {
    impl HasTimer<RNR_TIMER> for QpShared { self.rnr_timer }
}

/// The QP's status, locked for reading.
pub(crate) struct StatusRead<'a>(SpinLockIrqGuard<'a, Status>);

impl core::ops::Deref for StatusRead<'_> {
    type Target = Status;
    fn deref(&self) -> &Status {
        &self.0
    }
}

/// The QP's status, locked for a change: the change count moves when the
/// guard goes, before the lock is released.
pub(crate) struct StatusWrite<'a> {
    guard: SpinLockIrqGuard<'a, Status>,
    gen: &'a AtomicU32,
}

impl core::ops::Deref for StatusWrite<'_> {
    type Target = Status;
    fn deref(&self) -> &Status {
        &self.guard
    }
}

impl core::ops::DerefMut for StatusWrite<'_> {
    fn deref_mut(&mut self) -> &mut Status {
        &mut self.guard
    }
}

impl Drop for StatusWrite<'_> {
    fn drop(&mut self) {
        // Release: whoever sees the new count and then takes the lock
        // reads what this guard wrote.
        self.gen.fetch_add(1, Ordering::Release);
    }
}

impl QpShared {
    /// Remembers `status` as the QP's last completion in error; success and
    /// flushes (which only follow an error) are not.
    pub(crate) fn note_completion(&self, status: WcStatus) {
        if !matches!(status, WcStatus::Success | WcStatus::WrFlushErr) {
            self.last_err.store(status.as_raw(), Ordering::Relaxed);
        }
    }

    /// The `qp_state` trace event: the QP moved from `old` to `new` for
    /// `cause`. A move to ERR after an error completion names its status
    /// (the last one noted); the others name `Success`.
    pub(crate) fn trace_state(&self, old: State, new: State, cause: StateCause) {
        if !trace::qp_state_on() {
            return;
        }
        let status = match cause {
            StateCause::Completion | StateCause::Receive => {
                WcStatus::try_from(self.last_err.load(Ordering::Relaxed))
                    .unwrap_or(WcStatus::Success)
            }
            StateCause::Modify | StateCause::SendFailed => WcStatus::Success,
        };
        trace::qp_state(self.qpn, old, new, cause, status);
    }

    /// Drops the routes the requester and the responder cached within
    /// `scope`: their netdev or namespace is going away while the QP lives
    /// on (see `RouteCache`).
    pub(crate) fn forget_routes(&self, scope: RouteScope) {
        self.flow.forget_route(scope);
        self.resp.lock().forget_route(scope);
    }

    /// Drops the cached routes and caches none from now on: the QP is
    /// about to leave the pool, where `forget_routes` finds it.
    fn close_routes(&self) {
        self.flow.close_routes();
        self.resp.lock().close_routes();
    }

    /// The status and attributes, for reading.
    pub(crate) fn status(&self) -> StatusRead<'_> {
        StatusRead(self.status.lock())
    }

    /// The status and attributes, for a change.
    pub(crate) fn status_mut(&self) -> StatusWrite<'_> {
        StatusWrite {
            guard: self.status.lock(),
            gen: &self.status_gen,
        }
    }

    /// The status change count: equal counts mean an unchanged status.
    pub(crate) fn status_gen(&self) -> u32 {
        self.status_gen.load(Ordering::Acquire)
    }

    /// Whether the QP is live and in `state`.
    pub(crate) fn is_in(&self, state: State) -> bool {
        let s = self.status();
        s.valid && s.attrs.state == state
    }

    /// What the receive path checks a packet against; `None` (the QP is
    /// being destroyed) drops it.
    pub(crate) fn rx_facts(&self) -> Option<QpFacts> {
        let s = self.status();
        if !s.valid {
            return None;
        }
        let a = &s.attrs;
        Some(QpFacts {
            qp_type: self.qp_type,
            state: a.state,
            qkey: a.qkey,
            port: a.port_num,
            path: a.pri_av.as_ref().map(av_path),
        })
    }

    /// `rxe_qp_reset()`: the rings lose their WQEs without completions.
    fn reset(self: &Arc<Self>) {
        self.on_reset();
        {
            let mut sq = self.sq.lock();
            let _ = sq.queue.reset();
            sq.ssn = 0;
        }
        if let Some(rq) = Option::as_mut(&mut self.rq.lock()) {
            let _ = rq.queue.reset();
        }
    }
}

/// (our address, the peer's address) of an address vector.
pub(crate) fn av_path(av: &uapi::Av) -> (IpAddr, IpAddr) {
    match av.network_type {
        NetworkType::Ipv4 => (IpAddr::V4(av.src_ipv4()), IpAddr::V4(av.dst_ipv4())),
        NetworkType::Ipv6 => (IpAddr::V6(av.src_ipv6()), IpAddr::V6(av.dst_ipv6())),
    }
}
