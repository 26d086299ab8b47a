// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The QP as the verbs see it: creation (rings, caps, the shared state),
//! modify, query, destroy, and multicast attach/detach.

use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use kernel::{prelude::*, sync::Arc};

use crate::rxe::device::{Device, DeviceRef, DeviceState, ObjCount, ObjKind};
use crate::rxe::fifo::Fifo;
use crate::rxe::kapi::event::QpLink;
use crate::rxe::kapi::lock::{new_spinlock_bh, new_spinlock_irq};
use crate::rxe::kapi::task::new_task;
use crate::rxe::kapi::timer::new_timer;
use crate::rxe::kapi::trace::StateCause;
use crate::rxe::kapi::udata::Udata;
use crate::rxe::mcast::Mgid;
use crate::rxe::net::TxFlow;
use crate::rxe::proto::av;
use crate::rxe::proto::conv::to_usize;
use crate::rxe::proto::qp::AttrMask;
use crate::rxe::proto::qp_attr::{self as qa, Caps, InitAttr, ModifyAttr, QpAttrs, GSI_QPN};
use crate::rxe::proto::uapi::{self, resp, MmInfo, DEFAULT_CACHE_LINE};
use crate::rxe::queue::{Queue, Role};
use crate::rxe::ucontext::Ucontext;
use crate::rxe::{completer, requester};
use crate::rxe::{cq, srq};

use super::{
    attr_errno, faults, size_errno, QpShared, Rq, RqCaps, Sq, SqCaps, State, Status, Type, MAX_SGE,
    PKT_QUEUE_INITIAL, PKT_QUEUE_LIMIT,
};

/// A QP as the core holds it.
pub(crate) struct Qp {
    pub(crate) shared: Arc<QpShared>,
    /// Where the SQ and RQ rings are published for mmap; destroy takes
    /// back the ones user space never mapped.
    mmaps: [Option<u64>; 2],
    _slot: ObjCount,
}

/// What create_qp takes from the core.
pub(crate) struct CreateArgs<'a> {
    pub(crate) init: InitAttr,
    pub(crate) sig_all: bool,
    pub(crate) pd: usize,
    pub(crate) send_cq: Option<Arc<cq::CqShared>>,
    pub(crate) recv_cq: Option<Arc<cq::CqShared>>,
    pub(crate) srq: Option<Arc<srq::SrqShared>>,
    /// The command's driver data; `None` for kernel QPs.
    pub(crate) udata: Option<&'a Udata>,
    pub(crate) ucontext: Option<&'a Ucontext>,
}

/// What query_qp returns besides the attributes.
pub(crate) struct QueryResult {
    pub(crate) attrs: QpAttrs,
    pub(crate) cap: Caps,
    pub(crate) sig_all: bool,
    pub(crate) qp_type: Type,
}

/// Undoes the parts of a create that are done when a later one fails.
struct Undo<'a> {
    state: &'a DeviceState,
    index: Option<u32>,
    gsi: bool,
    ucontext: Option<&'a Ucontext>,
    published: [Option<u64>; 2],
}

impl Undo<'_> {
    fn dismiss(mut self) {
        self.index = None;
        self.gsi = false;
        self.published = [None, None];
    }
}

impl Drop for Undo<'_> {
    fn drop(&mut self) {
        if let Some(uc) = self.ucontext {
            for off in self.published.iter().flatten() {
                uc.unpublish(*off);
            }
        }
        if let Some(i) = self.index {
            self.state.qps.remove(i);
        }
        if self.gsi {
            self.state.set_gsi_qp_index(0);
        }
    }
}

/// A slot-sized scratch buffer for kernel QPs; user QPs post nothing
/// through the driver.
fn scratch<T: Copy + Default>(len: usize, user: bool) -> Result<KVec<T>> {
    let mut v = KVec::new();
    if !user {
        v.extend_with(len, T::default(), GFP_KERNEL)?;
    }
    Ok(v)
}

impl Qp {
    /// create_qp: checks the request, numbers the QP, builds its rings
    /// (mappable for user QPs, with their mmap info in the response) and
    /// makes it reachable by number. Returns the QP and the capabilities
    /// it got, which the core hands back to the caller.
    // Out of line: its frame stays off the core's create path (and the
    // QP's parts are heap-allocated so that frame stays small).
    #[inline(never)]
    pub(crate) fn new(dev: &Device, args: CreateArgs<'_>) -> Result<(Self, Caps)> {
        let state = dev.state();
        let user = match (args.udata, args.ucontext) {
            (Some(u), Some(uc)) => {
                if u.inlen() != 0 || u.outlen() < resp::CREATE_QP_LEN {
                    return Err(EINVAL);
                }
                Some((u, uc))
            }
            (None, _) => None,
            (Some(_), None) => return Err(EINVAL),
        };
        let is_gsi_request = args.init.qp_type == Type::Gsi.as_raw();
        let gsi_claimed = is_gsi_request && state.claim_gsi_qp();
        let mut undo = Undo {
            state,
            index: None,
            gsi: gsi_claimed,
            ucontext: user.map(|(_, uc)| uc),
            published: [None, None],
        };
        let qp_type =
            qa::check_init(&args.init, is_gsi_request && !gsi_claimed).map_err(attr_errno)?;
        let (Some(scq), Some(rcq)) = (args.send_cq, args.recv_cq) else {
            return Err(EINVAL);
        };
        let slot = state.take_slot(ObjKind::Qp)?;
        let index = state.qps.reserve(GFP_KERNEL)?;
        undo.index = Some(index);
        let qpn = if qp_type == Type::Gsi { GSI_QPN } else { index };

        let cap = args.init.cap;
        let sq_geo = uapi::sq_geometry(
            cap.max_send_wr,
            cap.max_send_sge,
            cap.max_inline_data,
            DEFAULT_CACHE_LINE,
        )
        .map_err(size_errno)?;
        let sq_queue = Queue::new(sq_geo.queue, Role::Consumer)?;
        let sq_caps = SqCaps {
            max_wr: sq_geo.max_wr,
            max_sge: sq_geo.max_sge,
            max_inline: sq_geo.max_inline,
        };
        let (rq_queue, rq_caps) = if args.srq.is_some() {
            (None, RqCaps::default())
        } else {
            let g = uapi::rq_geometry(cap.max_recv_wr, cap.max_recv_sge, DEFAULT_CACHE_LINE)
                .map_err(size_errno)?;
            (
                Some(Queue::new(g.queue, Role::Consumer)?),
                RqCaps {
                    max_wr: g.max_wr,
                    max_sge: g.max_sge,
                },
            )
        };

        if let Some((u, uc)) = user {
            let sq_mi = uc.publish(sq_queue.buf().clone())?;
            undo.published[0] = Some(sq_mi.offset);
            let rq_mi = match &rq_queue {
                Some(q) => {
                    let mi = uc.publish(q.buf().clone())?;
                    undo.published[1] = Some(mi.offset);
                    mi
                }
                None => MmInfo { offset: 0, size: 0 },
            };
            u.write_out(&uapi::create_qp_resp(rq_mi, sq_mi))?;
        }

        let is_user = user.is_some();
        let resp_state = crate::rxe::responder::State::new()?;
        let comp_fifo = Fifo::new(PKT_QUEUE_INITIAL, PKT_QUEUE_LIMIT, GFP_KERNEL)?;
        let req_state = requester::State::new(sq_queue.capacity())?;
        let dev_ref = DeviceRef::try_get(dev).ok_or(EINVAL)?;
        let flow = TxFlow::new(requester::ReqWake::new()?)?;
        let resp_fifo = Fifo::new(PKT_QUEUE_INITIAL, PKT_QUEUE_LIMIT, GFP_KERNEL)?;
        let faults = faults::Faults::new()?;
        let sq = Sq {
            slot: scratch(sq_queue.elem_size(), is_user)?,
            inline_buf: scratch(to_usize(sq_caps.max_inline), is_user)?,
            queue: sq_queue,
            ssn: 0,
            sges: scratch(MAX_SGE, is_user)?,
        };
        let rq = match rq_queue {
            Some(queue) => Some(Rq {
                slot: scratch(queue.elem_size(), is_user)?,
                queue,
                sges: scratch(MAX_SGE, is_user)?,
            }),
            None => None,
        };
        let st = Status {
            valid: true,
            attrs: QpAttrs::new(qp_type, args.init.port_num),
            src_port: av::src_port_for_qpn(qpn),
        };
        let shared = Arc::pin_init(
            try_pin_init!(QpShared {
                qpn,
                index,
                qp_type,
                pd: args.pd,
                is_user,
                sig_all: args.sig_all,
                scq,
                rcq,
                srq: args.srq,
                sq_caps,
                rq_caps,
                status <- new_spinlock_irq!(st, "rxe_qp_state"),
                status_gen: AtomicU32::new(0),
                sq <- new_spinlock_irq!(sq, "rxe_qp_sq"),
                rq <- new_spinlock_irq!(rq, "rxe_qp_rq"),
                link <- QpLink::new(),
                mcg_num: AtomicU32::new(0),
                dev: dev_ref,
                flow,
                req <- new_spinlock_bh!(req_state, "rxe_qp_req"),
                comp <- new_spinlock_bh!(completer::State::new(), "rxe_qp_comp"),
                resp <- new_spinlock_bh!(resp_state, "rxe_qp_resp"),
                comp_pkts <- new_spinlock_bh!(comp_fifo, "rxe_qp_comp_pkts"),
                resp_pkts <- new_spinlock_bh!(resp_fifo, "rxe_qp_resp_pkts"),
                send_task <- new_task!("rxe_send"),
                want_comp: AtomicBool::new(false),
                want_req: AtomicBool::new(false),
                last_err: AtomicU32::new(u32::MAX),
                resp_task <- new_task!("rxe_resp"),
                faults,
                retrans_timer <- new_timer!("rxe_retrans"),
                probe_due: AtomicBool::new(false),
                rnr_timer <- new_timer!("rxe_rnr"),
            }? Error),
            GFP_KERNEL,
        )?;

        // Nothing fails from here on: make the QP reachable.
        let mmaps = undo.published;
        undo.dismiss();
        state.qps.set(index, shared.clone());
        if qp_type == Type::Gsi {
            state.set_gsi_qp_index(index);
        }
        let caps = Caps {
            max_send_wr: sq_caps.max_wr,
            max_send_sge: sq_caps.max_sge,
            max_inline_data: sq_caps.max_inline,
            max_recv_wr: if shared.srq.is_some() {
                cap.max_recv_wr
            } else {
                rq_caps.max_wr
            },
            max_recv_sge: cap.max_recv_sge,
        };
        Ok((
            Self {
                shared,
                mmaps,
                _slot: slot,
            },
            caps,
        ))
    }

    /// modify_qp: checks every attribute and the transition, stores them,
    /// then acts on the new state.
    pub(crate) fn modify(&self, mask: AttrMask, attr: &ModifyAttr) -> Result {
        let sh = &self.shared;
        qa::check_modify(mask, attr, sh.qp_type, sh.srq.is_some()).map_err(attr_errno)?;
        let (old_state, new_state, attrs) = {
            let mut st = sh.status_mut();
            let old_state = st.attrs.state;
            let new_state = st
                .attrs
                .modify(mask, attr, sh.qp_type)
                .map_err(attr_errno)?;
            if let Some(ah) = attr
                .ah_attr
                .filter(|a| mask.intersects(AttrMask::AV) && a.has_grh())
            {
                st.src_port = av::udp_sport(ah.grh.flow_label, sh.qpn, st.attrs.dest_qp_num);
            }
            (old_state, new_state, st.attrs)
        };
        if let Some(new) = new_state {
            sh.trace_state(old_state, new, StateCause::Modify);
        }
        requester::modified(sh, mask);
        sh.resp_modified(mask, &attrs);
        match new_state {
            Some(State::Reset) => sh.reset(),
            // Into SQD the drain may end at once; back into RTS the WQEs
            // posted meanwhile go out without waiting for a doorbell.
            Some(State::Sqd | State::Rts) => sh.kick_requester(),
            Some(State::Err) => sh.on_error(),
            _ => {}
        }
        Ok(())
    }

    /// query_qp: the stored attributes with the live PSNs (the requester's
    /// next one and the one the responder expects, as rdma_rxe reports
    /// them), and the queue capabilities.
    pub(crate) fn query(&self) -> QueryResult {
        let sh = &self.shared;
        let mut attrs = sh.status().attrs;
        attrs.sq_psn = sh.req.lock().req.psn;
        attrs.rq_psn = sh.resp_psn();
        QueryResult {
            attrs,
            cap: Caps {
                max_send_wr: sh.sq_caps.max_wr,
                max_send_sge: sh.sq_caps.max_sge,
                max_inline_data: sh.sq_caps.max_inline,
                max_recv_wr: sh.rq_caps.max_wr,
                max_recv_sge: sh.rq_caps.max_sge,
            },
            sig_all: sh.sig_all,
            qp_type: sh.qp_type,
        }
    }

    /// destroy_qp: refused while attached to a multicast group; otherwise
    /// the QP stops being reachable and its work stops. The rings go with
    /// the last reference (a user mapping keeps its pages); `ctx`, the
    /// caller's context, drops the ones it still holds for mmap.
    pub(crate) fn destroy(&self, dev: &Device, ctx: Option<&Ucontext>) -> Result {
        let sh = &self.shared;
        if sh.mcg_num.load(Ordering::Relaxed) != 0 {
            return Err(EBUSY);
        }
        sh.status_mut().valid = false;
        sh.link.revoke();
        // Before the QP leaves the pool: from then on no namespace exit or
        // netdev unregistration reaches its routes.
        sh.close_routes();
        let state = dev.state();
        state.qps.remove(sh.index);
        if sh.qp_type == Type::Gsi && state.gsi_qp_index() == Some(sh.index) {
            state.set_gsi_qp_index(0);
        }
        sh.on_destroy();
        if let Some(ctx) = ctx {
            for offset in self.mmaps.iter().flatten() {
                ctx.unpublish(*offset);
            }
        }
        Ok(())
    }

    /// attach_mcast.
    pub(crate) fn attach_mcast(&self, dev: &Device, mgid: &Mgid) -> Result {
        dev.state().mcast.attach(dev, &self.shared, mgid)
    }

    /// detach_mcast.
    pub(crate) fn detach_mcast(&self, dev: &Device, mgid: &Mgid) -> Result {
        dev.state().mcast.detach(dev, &self.shared, mgid)
    }
}
