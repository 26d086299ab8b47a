// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! When an RC requester asks for an ACK (the BTH's AckReq bit): on the last
//! packet of a message, within a long message at least every
//! [`MAX_PKT_PER_ACK`] packets, and, for messages sent back to back in one
//! engine step, only on the last of them ([`next_built`]). The counts live
//! in [`requester::State`](super::requester::State).

use super::opcode::Mask;
use super::params::pacing::{MAX_DEFERRED_ACK_PKTS, MAX_PKT_PER_ACK};
use super::psn::psn_add;
use super::qp;
use super::requester::{Packet, State};

/// Whether this packet asks for an ACK: RC and GSI on the last packet of a
/// message and after more than [`MAX_PKT_PER_ACK`] packets without one;
/// never on UC and UD. Counts packets in `req.noack_pkts`.
pub(crate) fn ack_req(req: &mut State, qp_type: qp::Type, end: bool) -> bool {
    if qp_type == qp::Type::Ud || qp_type == qp::Type::Uc {
        return false;
    }
    let ack = end || req.noack_pkts > MAX_PKT_PER_ACK;
    if ack {
        req.noack_before = req.noack_pkts;
        req.noack_pkts = 0;
    } else {
        req.noack_pkts = req.noack_pkts.saturating_add(1);
    }
    ack
}

/// Whether the engine may hold back packet `p` for [`next_built`] to
/// decide on its AckReq: the END packet of an RC send or write that asks
/// for an ACK. Reads, atomics and flushes are answered whatever their
/// AckReq says, and their answers are what the requester waits for.
pub(crate) fn may_hold(qp_type: qp::Type, p: &Packet) -> bool {
    let mask = p.opcode.mask();
    qp_type == qp::Type::Rc
        && p.ack_req
        && mask.contains(Mask::END)
        && mask.intersects(Mask::WRITE_OR_SEND)
}

/// The engine holds `p` back (it passed [`may_hold`]) until it knows the
/// packet built after it in the same step, or the step ends.
pub(crate) fn hold(req: &mut State, p: &Packet) {
    req.held = Some((p.psn, req.noack_before));
}

/// Coalesced ACK requests: the engine built `p` (planned, built and
/// committed) while holding the END packet recorded by [`hold`]
/// (`holding`: the engine still has it; otherwise a stale record is
/// dropped). Returns `true` when the held packet should go without
/// AckReq: `p` starts the next message at the next PSN, so the ACK `p`'s
/// message asks for (or the read or atomic response it gets) acknowledges
/// the held packet's message too (an acknowledgement covers every
/// earlier PSN). The held packet goes out before `p` in any
/// case. The requester therefore never waits for an ACK it did not ask
/// for: a packet gives up its request only to a packet already built
/// behind it, and the last packet of a step that asks keeps asking.
///
/// The run of packets without AckReq stays below
/// [`MAX_DEFERRED_ACK_PKTS`] for a held packet, and below
/// [`MAX_PKT_PER_ACK`] more within a long message: far inside the
/// requester's window
/// ([`MAX_UNACKED_PSNS`](super::params::pacing::MAX_UNACKED_PSNS)). The
/// counts resume as if the held packet had never asked.
pub(crate) fn next_built(req: &mut State, holding: bool, p: &Packet) -> bool {
    let Some((psn, before)) = req.held.take().filter(|_| holding) else {
        return false;
    };
    let run = before.saturating_add(1);
    if !p.opcode.mask().contains(Mask::START)
        || p.psn != psn_add(psn, 1)
        || run >= MAX_DEFERRED_ACK_PKTS
    {
        return false;
    }
    if p.ack_req {
        req.noack_before = req.noack_before.saturating_add(run);
    } else {
        req.noack_pkts = req.noack_pkts.saturating_add(run);
    }
    true
}
