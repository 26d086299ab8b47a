// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! A QP's transport state as `rdma resource show qp -dd` prints it
//! (`ops/qp.rs` fills the entry; the names are `proto/res_details.rs`'s).

use core::sync::atomic::Ordering;

use super::Qp;
use crate::rxe::proto::res_details::{wait, QpDetails};
use crate::rxe::proto::uapi::WcStatus;

impl Qp {
    /// The transport state `rdma resource show qp -dd` prints. Each lock is
    /// taken alone, so each engine's part is consistent in itself.
    pub(crate) fn details(&self) -> QpDetails {
        let sh = &self.shared;
        let (max_rd_atomic, max_dest_rd_atomic) = {
            let s = sh.status();
            (s.attrs.max_rd_atomic, s.attrs.max_dest_rd_atomic)
        };
        let mut d = QpDetails {
            max_rd_atomic: max_rd_atomic.into(),
            max_dest_rd_atomic: max_dest_rd_atomic.into(),
            ..QpDetails::default()
        };
        {
            let st = sh.req.lock();
            let (req, comp) = (&st.req, &st.comp);
            d.sq_psn = req.psn;
            d.unacked_psn = comp.psn;
            d.rd_atomic_out = d.max_rd_atomic.saturating_sub(req.rd_atomic);
            d.retry_left = comp.retry_cnt.into();
            d.retry_cnt = comp.attr_retry_cnt.into();
            d.rnr_retry_left = comp.rnr_retry.into();
            d.rnr_retry = comp.attr_rnr_retry.into();
            for (on, bit) in [
                (req.wait_fence, wait::FENCE),
                (req.need_rd_atomic, wait::RD_ATOMIC),
                (req.wait_psn, wait::PSN_WINDOW),
                (req.wait_for_rnr_timer, wait::RNR_TIMER),
                (req.need_retry, wait::RETRY),
            ] {
                if on {
                    d.req_waits |= bit;
                }
            }
        }
        (d.rq_psn, d.resp_res_used) = sh.resp_details();
        d.sq_wqes = sh.sq.lock().queue.count();
        d.rq_wqes = sh.rq.lock().as_ref().map_or(0, |rq| rq.queue.count());
        d.retrans_timer = sh.retrans_timer.pending();
        d.rnr_timer = sh.rnr_timer.pending();
        d.resp_queue = u32::try_from(sh.resp_pkts.lock().len()).unwrap_or(u32::MAX);
        d.comp_queue = u32::try_from(sh.comp_pkts.lock().len()).unwrap_or(u32::MAX);
        d.last_err = WcStatus::try_from(sh.last_err.load(Ordering::Relaxed)).ok();
        d
    }
}
