// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The responder of a QP: executes the requests the receive path queues on
//! `resp_pkts` (sends into receive WQEs, RDMA writes, reads, atomics,
//! flushes), answers RC requests with ACKs, NAKs, read responses and atomic
//! ACKs, and posts receive completions.
//!
//! The decisions are `proto::resp_machine` (rdma_rxe's `rxe_receiver()` state
//! machine); this file gives it the kernel side through [`resp_machine::Io`].
//! The task holds `Shared::resp` while it runs one request; under it it
//! takes the RQ, SRQ and CQ locks, never another engine's. Receive
//! completions go into the CQ under it, in order, but the CQ's handler (and
//! the QP's LAST_WQE_REACHED event) run after it is released.

use kernel::{prelude::*, sync::Arc};

use crate::rxe::counters;
use crate::rxe::cq::Due;
use crate::rxe::device::Device;
use crate::rxe::dma::{Cursor, DmaError, LocalAccess};
use crate::rxe::kernel::alloc;
use crate::rxe::kernel::event::QpEvent;
use crate::rxe::kernel::page::PayloadPages;
use crate::rxe::kernel::task::{Progress, TaskOwner};
use crate::rxe::mr::{self, AccessError, KeyKind, PdId, PendingFault, QpId};
use crate::rxe::net::{self, Av, TxFlow};
use crate::rxe::proto::conv::{len64, to_usize};
use crate::rxe::proto::cq_srq::RecvNet;
use crate::rxe::proto::events::Event;
use crate::rxe::proto::headers::{Aeth, AtmAck, Bth};
use crate::rxe::proto::ip::NetworkType;
use crate::rxe::proto::mr_logic::{Access, AtomicOp, InvalidateError};
use crate::rxe::proto::odp_logic::{Next, Retry};
use crate::rxe::proto::opcode::{Mask, Opcode};
use crate::rxe::proto::params::{IbMtu, DEFAULT_PKEY_FULL};
use crate::rxe::proto::qp::AttrMask;
use crate::rxe::proto::qp_attr::QpAttrs;
use crate::rxe::proto::resp_machine::{
    self, AccessFault, Ack, AtomicError, CqFull, ReadResponse, ReadSource, RecvCopyError, RecvCqe,
    RecvError, SendFailed,
};
use crate::rxe::proto::resp_rules::{self, Request, Res, RespQp, Target, MAX_RESOURCES};
use crate::rxe::proto::tx_frags;
use crate::rxe::proto::uapi::{recv_wqe, Cqe, RecvWqe, WcStatus};
use crate::rxe::proto::wire::Syndrome;
use crate::rxe::qp::{self, Shared};
use crate::rxe::recv::RxPacket;
use crate::rxe::srq;

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

/// Per-QP state of the responder, behind `Shared::resp`.
pub(crate) struct State {
    rs: KBox<resp_rules::State>,
    /// The request being worked on: taken off `resp_pkts`, kept while a
    /// read reply spans several runs.
    head: Option<RxPacket>,
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
}

/// The responder state (9 KiB, mostly the read/atomic resources), built in
/// place on the heap: as a value it would not fit on a 16 KiB kernel stack
/// beside the verbs call that creates the QP.
fn resp_state_init() -> impl Init<resp_rules::State, Error> {
    // `try_init!` takes a bare type name.
    use resp_rules::State as Rules;
    kernel::try_init!(Rules {
        psn: 0,
        ack_psn: 0,
        msn: 0,
        opcode: None,
        drop_msg: false,
        sent_psn_nak: false,
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
            wqe: WqeHold::new()?,
            flow: TxFlow::new(())?,
            last_wqe_reported: false,
            odp_retry: Retry::new(),
            odp_give_up: false,
            view: None,
        })
    }

    /// Drops the responder's cached route.
    pub(crate) fn forget_route(&self) {
        self.flow.forget_route();
    }

    /// Drops the queued request and the held WQE (RESET, flush).
    fn forget(&mut self) {
        if let Some(p) = self.head.take() {
            p.consume();
        }
        self.wqe.clear();
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

impl Shared {
    /// The PSN the responder expects next, which query_qp reports as
    /// `rq_psn`.
    pub(crate) fn resp_psn(&self) -> u32 {
        self.resp.lock().rs.psn
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
            st.rs.set_rq_psn(attrs.rq_psn);
        }
        if attrs.state != qp::State::Err {
            st.last_wqe_reported = false;
        }
    }

    /// Moves the QP to ERR after a fatal receive error (`rxe_qp_error`).
    fn resp_enter_error(self: &Arc<Self>) {
        let changed = {
            let mut s = self.status_mut();
            let c = s.valid && s.attrs.state != qp::State::Err;
            if c {
                s.attrs.state = qp::State::Err;
            }
            c
        };
        if changed {
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

fn facts(sh: &Shared, attrs: &QpAttrs, sport: u16) -> Facts {
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
fn view<'a>(sh: &Shared, cached: &'a mut Option<View>) -> &'a View {
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

/// The kernel side of the responder for one run.
struct Io<'a> {
    sh: &'a Arc<Shared>,
    f: &'a Facts,
    /// The status change count `f` was read at.
    gen: u32,
    head: &'a mut Option<RxPacket>,
    wqe: &'a mut WqeHold,
    /// The step's replies, flushed to the device together when it ends.
    batch: net::TxBatch<'a, ()>,
    /// The region `lookup` resolved, until `release_mr`.
    mr: Option<Arc<mr::Shared>>,
    /// The receive CQ's callbacks, run after the `resp` lock.
    due: Due,
    /// The SRQ's limit event, raised after the `resp` lock.
    srq_limit: bool,
    /// What the last access that found an ODP page absent needs.
    fault: Option<PendingFault>,
    /// Absent pages are bad accesses now (retries used up).
    odp_give_up: bool,
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
            if let Some(mr) = &self.mr {
                self.fault = Some(PendingFault {
                    mr: mr.clone(),
                    iova,
                    len,
                    write,
                });
            }
        }
    }

    fn remote_lookup(&self, rkey: u32, access: Access) -> Result<Arc<mr::Shared>, AccessError> {
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
        let sh: &'a Arc<Shared> = self.sh;
        let av = self.reply_av().ok_or(SendFailed::Send)?;
        let mut tx = net::alloc_packet_with(&sh.dev, &av, opcode, to_usize(len), pages)
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

impl resp_machine::Io for Io<'_> {
    #[inline(always)]
    fn peek(&mut self) -> Option<Request> {
        loop {
            if self.head.is_none() {
                *self.head = self.sh.resp_pkts.lock().pop();
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
    fn pop(&mut self) {
        if let Some(p) = self.head.take() {
            p.consume();
        }
    }

    fn more_queued(&mut self) -> bool {
        !self.sh.resp_pkts.lock().is_empty()
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
        let mr = mr::lookup_range(
            self.sh.dev.state(),
            t.rkey,
            KeyKind::Remote {
                qp: QpId::of(self.sh),
            },
            PdId(self.sh.pd),
            t.access,
            t.check_range.then_some((t.va, u64::from(t.len))),
        )
        .map_err(|_| AccessFault)?;
        self.mr = Some(mr);
        Ok(())
    }

    fn release_mr(&mut self) {
        self.mr = None;
    }

    fn write_data(&mut self, va: u64) -> Result<(), AccessFault> {
        let p = self.head.as_ref().ok_or(AccessFault)?;
        let mr = self.mr.as_ref().ok_or(AccessFault)?;
        let len = len64(p.payload().len());
        let r = mr.copy_in(va, p.payload());
        if let Err(e) = r {
            self.note_absent(e, va, len, true);
        }
        r.map_err(|_| AccessFault)
    }

    fn atomic(&mut self, va: u64, op: AtomicOp) -> Result<u64, AtomicError> {
        let mr = self.mr.as_ref().ok_or(AtomicError::Access)?;
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
        let mr = self.mr.as_ref().ok_or(AtomicError::Access)?;
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

    fn flush(
        &mut self,
        whole_mr: bool,
        va: u64,
        len: u32,
        persistent: bool,
    ) -> Result<(), AccessFault> {
        let mr = self.mr.as_ref().ok_or(AccessFault)?;
        let (start, length) = if whole_mr {
            mr.bounds()
        } else {
            (va, u64::from(len))
        };
        if persistent {
            mr.flush(start, length).map_err(|_| AccessFault)?;
        }
        core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst);
        Ok(())
    }

    fn invalidate(&mut self, rkey: u32) -> Result<(), InvalidateError> {
        let dev = self.dev().ok_or(InvalidateError::Invalid)?;
        mr::invalidate_key(dev.state(), rkey, PdId(self.sh.pd), QpId::of(self.sh))
    }

    fn send_read_response(&mut self, r: &ReadResponse) -> Result<(), SendFailed> {
        let mr = match r.source {
            ReadSource::Held => self.mr.clone(),
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
            .filter(|_| tx_frags::wants_frags(qp::Type::Rc, to_usize(r.len)))
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
        let Some(mr) = &self.mr else {
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

/// What the responder does about an absent ODP page after a run.
enum OdpStep {
    None,
    /// Not on a worker: go to one.
    Defer,
    /// Fault the page in, then run again.
    Fault(Option<PendingFault>),
    /// Retries used up: run again, the access now failing as a bad one.
    Rerun,
}

/// A consumed SRQ WQE as the responder's held WQE; `true` when the SRQ's
/// limit event is due.
fn take_srq(srq: &srq::Shared, wqe: &mut RecvWqe) -> Result<bool, RecvError> {
    match srq.take_into(wqe) {
        None => Err(RecvError::Empty),
        Some(Err(_)) => Err(RecvError::Malformed),
        Some(Ok(fire)) => Ok(fire),
    }
}

impl TaskOwner<{ qp::RESP_TASK }> for Shared {
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
        let may_sleep = this.resp_task.in_worker();
        let (out, mut due, fault, srq_limit) = {
            let State {
                rs,
                head,
                wqe,
                flow,
                odp_retry,
                odp_give_up,
                view,
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
                wqe,
                batch: net::TxBatch::new(flow),
                mr: None,
                due: Due::NONE,
                srq_limit: false,
                fault: None,
                odp_give_up: *odp_give_up,
            };
            // Run after run while each handles something; the last one
            // tells the step what to do next.
            let mut handled = false;
            let mut out = resp_machine::run(rs, &f.qp, &mut io);
            for _ in 1..RUNS_PER_STEP {
                if !out.progress || out.qp_error || out.fault {
                    break;
                }
                handled = true;
                out = resp_machine::run(rs, &f.qp, &mut io);
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
            let fault = match (out.fault, may_sleep) {
                (false, _) => OdpStep::None,
                (true, false) => OdpStep::Defer,
                (true, true) => match odp_retry.on_absent() {
                    Next::Fault => OdpStep::Fault(pending),
                    Next::GiveUp => {
                        *odp_give_up = true;
                        OdpStep::Rerun
                    }
                },
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
            OdpStep::Defer => return Progress::Defer,
            OdpStep::Rerun => return Progress::More,
            OdpStep::Fault(pending) => {
                // In a worker, no lock held: the fault may sleep.
                let ok = pending.is_some_and(|p| p.resolve().is_ok());
                if !ok {
                    this.resp.lock().odp_give_up = true;
                }
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
