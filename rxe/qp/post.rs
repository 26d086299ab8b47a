// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Posting work requests: the send doorbell of user QPs, and the send and
//! receive WRs of kernel users, checked and written into the rings as the
//! WQEs user space would have written.

use kernel::prelude::*;

use super::{Qp, QpShared, Rq, Sq, State};
use crate::rxe::ah::Ah;
use crate::rxe::kapi::wr::{RecvWr, RecvWrs, SendWr, SendWrs};
use crate::rxe::proto::conv::to_usize;
use crate::rxe::proto::post::{self, PostError};

fn post_errno(e: PostError) -> Error {
    match e {
        PostError::Invalid => EINVAL,
    }
}

/// A failed post: the errno and the position of the WR that failed.
pub(crate) type PostFailure = (Error, usize);

impl Sq {
    /// `post_one_send()`.
    fn post_one(&mut self, sh: &QpShared, wr: &SendWr<'_, Ah>) -> Result {
        let caps = sh.sq_caps;
        let sges = self.sges.get_mut(..to_usize(caps.max_sge)).ok_or(EINVAL)?;
        let n = wr.read_sges(sges)?;
        let swr = post::SendWr {
            wr_id: wr.wr_id(),
            opcode: wr.opcode(),
            send_flags: wr.send_flags(),
            ex: wr.ex(),
            target: wr.target(),
            sges: self.sges.get(..n).ok_or(EINVAL)?,
        };
        let limits = post::SqLimits {
            max_sge: caps.max_sge,
            max_inline: caps.max_inline,
        };
        let checked = post::check_send_wr(sh.qp_type, limits, &swr).map_err(post_errno)?;
        if self.queue.is_full() {
            return Err(ENOMEM);
        }
        let inline_len = if checked.inline {
            wr.gather_inline(&mut self.inline_buf)?
        } else {
            0
        };
        let inline = self.inline_buf.get(..inline_len).ok_or(EINVAL)?;
        let ssn = self.ssn.wrapping_add(1);
        let used_ssn =
            post::encode_send_wqe(&mut self.slot, sh.qp_type, &swr, &checked, inline, ssn)
                .ok_or(EINVAL)?;
        self.queue.kernel_produce(&self.slot)?;
        if used_ssn {
            self.ssn = ssn;
        }
        Ok(())
    }
}

impl Rq {
    /// `post_one_recv()`.
    fn post_one(&mut self, max_sge: u32, wr: &RecvWr<'_>) -> Result {
        if self.queue.is_full() {
            return Err(ENOMEM);
        }
        let sges = self.sges.get_mut(..to_usize(max_sge)).ok_or(EINVAL)?;
        let n = wr.read_sges(sges)?;
        let sges = self.sges.get(..n).ok_or(EINVAL)?;
        let length = post::check_recv_wr(max_sge, sges).map_err(post_errno)?;
        post::encode_recv_wqe(&mut self.slot, wr.wr_id(), sges, length).ok_or(EINVAL)?;
        self.queue.kernel_produce(&self.slot)
    }
}

impl Qp {
    /// post_send. For a user QP the WQEs are in the ring already and this
    /// is the doorbell; a kernel user's WRs are written into the ring here.
    /// Refused before RTS.
    pub(crate) fn post_send(&self, wrs: SendWrs<'_, Ah>) -> Result<(), PostFailure> {
        let sh = &self.shared;
        let rts = {
            let st = sh.status();
            if !st.valid || (st.attrs.state.as_raw() < State::Rts.as_raw()) {
                return Err((EINVAL, 0));
            }
            st.attrs.state == State::Rts
        };
        if sh.is_user {
            sh.ring_doorbell(rts);
            return Ok(());
        }
        let mut posted = 0usize;
        let res = {
            let mut sq = sh.sq.lock();
            let mut res = Ok(());
            for wr in wrs {
                if let Err(e) = sq.post_one(sh, &wr) {
                    res = Err((e, posted));
                    break;
                }
                posted += 1;
            }
            res
        };
        if posted > 0 {
            sh.kick_requester();
        }
        res
    }

    /// post_recv. Refused in RESET and on QPs with an SRQ; on a QP in error
    /// the responder is kicked to flush what was posted.
    pub(crate) fn post_recv(&self, wrs: RecvWrs<'_>) -> Result<(), PostFailure> {
        let sh = &*self.shared;
        {
            let st = sh.status();
            if !st.valid || st.attrs.state == State::Reset {
                return Err((EINVAL, 0));
            }
        }
        if sh.srq.is_some() {
            return Err((EINVAL, 0));
        }
        let res = {
            let mut guard = sh.rq.lock();
            let rq = Option::as_mut(&mut guard).ok_or((EINVAL, 0))?;
            let mut res = Ok(());
            for (i, wr) in wrs.enumerate() {
                if let Err(e) = rq.post_one(sh.rq_caps.max_sge, &wr) {
                    res = Err((e, i));
                    break;
                }
            }
            res
        };
        if sh.is_in(State::Err) {
            self.shared.kick_responder();
        }
        res
    }
}
