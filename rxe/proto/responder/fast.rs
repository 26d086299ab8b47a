// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Header prediction for the responder: which received requests are the
//! next packet of a message already under way on an RC QP, and so need
//! none of the state machine's general checks.
//!
//! A predicted packet is a SEND or RDMA WRITE MIDDLE or LAST (without
//! immediate data or invalidation) that carries the expected PSN and
//! continues the message the QP is receiving, or a plain SEND ONLY that
//! carries it between two messages, with a payload length the slow path
//! would accept, on a QP with no reply, sequence NAK or status change
//! pending. `super::machine::run` executes it straight (copy, PSN and
//! message state, completion, acknowledgement); every per-packet check
//! that depends on memory (the WRITE's key lookup and range, the SEND
//! ONLY's receive WQE, the WQE's remaining space, the copy itself) is
//! still made there, through
//! the same steps as the slow path, and a failure goes on in the state
//! machine exactly where the slow path would be.
//!
//! # API
//!
//! - [`predict`]`(state, qp, request, ctx) -> Option<Fast>`
//! - [`Ctx`] `{ wqe_held, status_moved }`: what the engine knows besides

use super::super::opcode::Opcode;
use super::super::qp;
use super::super::uapi::access;
use super::rules::{check_length, check_rdma_len, Request, RespQp, State};

/// What a predicted packet does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fast {
    /// SEND MIDDLE or LAST: the payload goes on in the held receive WQE.
    Send,
    /// RDMA WRITE MIDDLE or LAST: the payload goes at the message's
    /// current address.
    Write,
    /// SEND ONLY between messages: takes a receive WQE, fills and
    /// completes it.
    SendOnly,
}

/// The engine's facts the prediction needs besides the responder state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Ctx {
    /// A receive WQE is held for the current message.
    pub(crate) wqe_held: bool,
    /// The QP's status (state, attributes) changed since the responder
    /// last read it.
    pub(crate) status_moved: bool,
}

/// `Some` when `p` is the predicted next packet of the message under way;
/// `None` sends it through the state machine.
pub(crate) fn predict(st: &State, qp: &RespQp, p: &Request, ctx: Ctx) -> Option<Fast> {
    use Opcode::*;
    if qp.qp_type != qp::Type::Rc
        || ctx.status_moved
        || p.psn != st.psn
        || st.sent_psn_nak
        || st.drop_msg
        || st.cur.is_some()
    {
        return None;
    }
    // Extension headers belong to opcodes other than the predicted ones;
    // a request that carries one anyway is not predicted.
    if p.reth.is_some()
        || p.atmeth.is_some()
        || p.feth.is_some()
        || p.imm.is_some()
        || p.invalidate.is_some()
        || p.src_qp.is_some()
    {
        return None;
    }
    let kind = match (st.opcode, p.opcode) {
        (Some(RcSendFirst | RcSendMiddle), RcSendMiddle | RcSendLast) if ctx.wqe_held => Fast::Send,
        (Some(RcWriteFirst | RcWriteMiddle), RcWriteMiddle | RcWriteLast)
            if qp.access & access::REMOTE_WRITE != 0 =>
        {
            Fast::Write
        }
        // No message under way: a SEND ONLY starts and ends one.
        (prev, RcSendOnly)
            if !matches!(
                prev,
                Some(RcSendFirst | RcSendMiddle | RcWriteFirst | RcWriteMiddle)
            ) =>
        {
            Fast::SendOnly
        }
        _ => return None,
    };
    // MIDDLE exactly the MTU, LAST 1..=MTU, ONLY at most the MTU; a WRITE
    // also within what its RETH left.
    check_length(qp, p).ok()?;
    if kind == Fast::Write {
        check_rdma_len(st, qp, p).ok()?;
    }
    Some(kind)
}

#[cfg(test)]
#[path = "fast_tests.rs"]
mod tests;
