// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Requester decisions of rdma_rxe (rxe_req.c): the opcode of each packet of
//! a send WQE, when the requester has to wait, the BTH flags and PSNs of the
//! packets it sends, what it does with local operations, and how a retry
//! rewinds the send queue.
//!
//! Nothing here touches memory, queues, skbs or timers: the requester engine
//! copies a WQE once, keeps its kernel-side progress in a [`Progress`], and
//! asks these functions what to do.
//!
//! # API
//!
//! - [`next_opcode`]`(qp_type, wr, prev, resid, path_mtu) -> Result<Opcode, OpcodeError>`
//! - [`State`]`::new(sq_psn, max_rd_atomic)`, `.reset()`, `.set_sq_psn(psn)`,
//!   `.set_max_rd_atomic(n)`, `.rnr_timer_fired()`, `.take_again() -> bool`
//! - [`ReqQp`] `{ qp_type, path_mtu, port_mtu, max_rd_atomic }`, `.mtu()`
//! - [`WqeInfo`]`::new(opcode, qp_type, send_flags, length, retry_iova)`,
//!   [`WqeInfo::from_wqe`]`(&SendWqe, qp_type)`
//! - [`Progress`]`::posted(length, iova)`: the kernel-side fields of a WQE
//! - [`plan`]`(req, qp, info, progress, gates) -> Step`: the next thing to do
//!   for the WQE at `req.wqe_index`
//! - [`commit`]`(req, qp, progress, &Packet) -> bool`: after the packet
//!   went out; `true` when the WQE is fully sent (advance `wqe_index`)
//! - [`finish_local`]`(progress)`, [`local_op_error`]`(wr) -> WcStatus`,
//!   [`skip_oversized_ud`]`(req, progress)`, [`fail`]`(progress, status)`
//! - [`begin_retry`]`(req, comp_psn)`, then [`retry_wqe`]`(req, qp, info, progress,
//!   &mut first, comp_psn) -> bool` for each WQE from the SQ consumer on
//! - [`wqe_packets`]`(len, mtu)`, [`rewind`]`(..)`: packet arithmetic
//! - [`window_moved`]`(req, comp_psn)`: for the completer, when `comp.psn`
//!   moves: wakes a requester stopped on a full window once it has room
//! - [`may_hold`]`(qp_type, &Packet)`, [`hold`]`(req, &Packet)`,
//!   [`next_built`]`(req, holding, &Packet) -> bool` (from `ack_req.rs`):
//!   coalesced ACK requests within one engine step
//!
//! # The engine's loop (one call of `rxe_requester`)
//!
//! 1. QP in ERR: the WQE at `wqe_index` (if any) fails with
//!    `IB_WC_WR_FLUSH_ERR` via [`fail`]; RESET: [`State::reset`] and stop.
//! 2. `need_retry && !wait_for_rnr_timer`: [`begin_retry`], [`retry_wqe`] over
//!    the queue, clear `need_retry`.
//! 3. No WQE at `wqe_index` (or, in SQD, one not yet started): stop.
//!    Otherwise [`plan`] and act on the [`Step`].
//!    On any failure after `plan` (no skb, no route, copy fault) the WQE
//!    fails: [`fail`], advance `wqe_index`, move the QP to ERR.
//!
//! `wqe_index` may lag behind the SQ consumer: after a retry, a late ACK can
//! let the completer retire a WQE whose tail the requester is still
//! resending. The requester must finish those packets (the PSNs of later
//! WQEs depend on them), so it keeps its copy of the WQE and its
//! [`Progress`] until `wqe_index` moves past it, whatever the consumer did.
//!
//! The retransmit timeout is `wire::local_ack_timeout_ns(attr.timeout)`; the
//! engine arms it after each packet when it is not pending, and the
//! completer asks for it to be pushed back (`completer::Outcome`).

pub(crate) use super::ack_req::{ack_req, hold, may_hold, next_built};
use super::opcode::{Mask, Opcode};
use super::params::pacing::{INFLIGHT_SKBS_PER_QP_HIGH, MAX_UNACKED_PSNS};
use super::psn::{psn_add, psn_after, psn_before, psn_distance, PSN_HALF};
use super::qp;
use super::uapi::{SendFlags, SendWqe, WcStatus, WqeState, WrMask, WrOpcode, WrParams};

/// Why [`next_opcode`] has no packet opcode for a work request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OpcodeError {
    /// REG_MR, LOCAL_INV and BIND_MW run locally; they never become packets.
    Local,
    /// The opcode cannot be sent on this QP type (C returns `-EINVAL`, the
    /// WQE completes with `IB_WC_LOC_QP_OP_ERR`).
    Unsupported,
}

/// Which message kind a work request produces, for the FIRST/MIDDLE/LAST walk.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Send,
    SendImm,
    SendInv,
    Write,
    WriteImm,
}

fn kind(wr: WrOpcode) -> Option<Kind> {
    match wr {
        WrOpcode::Send => Some(Kind::Send),
        WrOpcode::SendWithImm => Some(Kind::SendImm),
        WrOpcode::SendWithInv => Some(Kind::SendInv),
        WrOpcode::RdmaWrite => Some(Kind::Write),
        WrOpcode::RdmaWriteWithImm => Some(Kind::WriteImm),
        _ => None,
    }
}

/// The opcodes of a multi-packet message on RC or UC: first, middle, last, only.
/// `None` where the transport has no such message (send with invalidate on UC).
fn message_opcodes(rc: bool, k: Kind) -> Option<[Opcode; 4]> {
    use Opcode::*;
    Some(match (rc, k) {
        (true, Kind::Send) => [RcSendFirst, RcSendMiddle, RcSendLast, RcSendOnly],
        (true, Kind::SendImm) => [RcSendFirst, RcSendMiddle, RcSendLastImm, RcSendOnlyImm],
        (true, Kind::SendInv) => [RcSendFirst, RcSendMiddle, RcSendLastInv, RcSendOnlyInv],
        (true, Kind::Write) => [RcWriteFirst, RcWriteMiddle, RcWriteLast, RcWriteOnly],
        (true, Kind::WriteImm) => [RcWriteFirst, RcWriteMiddle, RcWriteLastImm, RcWriteOnlyImm],
        (false, Kind::Send) => [UcSendFirst, UcSendMiddle, UcSendLast, UcSendOnly],
        (false, Kind::SendImm) => [UcSendFirst, UcSendMiddle, UcSendLastImm, UcSendOnlyImm],
        (false, Kind::Write) => [UcWriteFirst, UcWriteMiddle, UcWriteLast, UcWriteOnly],
        (false, Kind::WriteImm) => [UcWriteFirst, UcWriteMiddle, UcWriteLastImm, UcWriteOnlyImm],
        (false, Kind::SendInv) => return None,
    })
}

/// The opcode of the next packet of a WQE, as `next_opcode()` in rxe_req.c.
///
/// `prev` is the opcode of the last packet the requester sent (`req.opcode`,
/// `None` for -1): a message continues only after its own FIRST or MIDDLE.
/// `resid` is what is left of the WQE; the packet is the last when it fits
/// in `path_mtu` (the QP's MTU even on UD, where it does not matter).
pub(crate) fn next_opcode(
    qp_type: qp::Type,
    wr: WrOpcode,
    prev: Option<Opcode>,
    resid: u32,
    path_mtu: u32,
) -> Result<Opcode, OpcodeError> {
    let fits = resid <= path_mtu;
    match qp_type {
        qp::Type::Rc | qp::Type::Uc => {
            let rc = qp_type == qp::Type::Rc;
            if let Some(k) = kind(wr) {
                let ops = message_opcodes(rc, k).ok_or(OpcodeError::Unsupported)?;
                let [first, middle, last, only] = ops;
                let in_message = prev == Some(first) || prev == Some(middle);
                return Ok(match (in_message, fits) {
                    (true, true) => last,
                    (true, false) => middle,
                    (false, true) => only,
                    (false, false) => first,
                });
            }
            match (rc, wr) {
                (true, WrOpcode::Flush) => Ok(Opcode::RcFlush),
                (true, WrOpcode::RdmaRead) => Ok(Opcode::RcReadRequest),
                (true, WrOpcode::AtomicCmpAndSwp) => Ok(Opcode::RcCompareSwap),
                (true, WrOpcode::AtomicFetchAndAdd) => Ok(Opcode::RcFetchAdd),
                (true, WrOpcode::AtomicWrite) => Ok(Opcode::RcAtomicWrite),
                (_, WrOpcode::RegMr | WrOpcode::LocalInv | WrOpcode::BindMw) => {
                    Err(OpcodeError::Local)
                }
                _ => Err(OpcodeError::Unsupported),
            }
        }
        qp::Type::Ud | qp::Type::Gsi => match wr {
            WrOpcode::Send => Ok(Opcode::UdSendOnly),
            WrOpcode::SendWithImm => Ok(Opcode::UdSendOnlyImm),
            _ => Err(OpcodeError::Unsupported),
        },
        _ => Err(OpcodeError::Unsupported),
    }
}

/// Packets a message of `len` bytes takes at `mtu`: at least one, so a
/// zero-length message still sends (and for a read, expects) one packet.
pub(crate) const fn wqe_packets(len: u32, mtu: u32) -> u32 {
    if mtu == 0 {
        return 1;
    }
    let n = len.div_ceil(mtu);
    if n == 0 {
        1
    } else {
        n
    }
}

/// `qp->req`: the requester's per-QP state. The completer clears
/// `wait_psn`/`wait_fence`/`need_rd_atomic`, returns rd_atomic credits and
/// sets `need_retry`/`wait_for_rnr_timer` (see `completer`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct State {
    /// PSN of the next packet.
    pub(crate) psn: u32,
    /// Opcode of the last packet sent; `None` is C's -1.
    pub(crate) opcode: Option<Opcode>,
    /// Free initiator-depth credits (`req.rd_atomic`): reads, atomics and
    /// atomic writes each hold one until acknowledged.
    pub(crate) rd_atomic: u32,
    /// Packets since the last one with AckReq set.
    pub(crate) noack_pkts: u32,
    /// What the last packet that asked for an ACK reset `noack_pkts` from:
    /// the packets without AckReq before it.
    pub(crate) noack_before: u32,
    /// The END packet the engine holds back ([`hold`]): its PSN and its
    /// `noack_before`.
    pub(crate) held: Option<(u32, u32)>,
    pub(crate) wait_fence: bool,
    pub(crate) need_rd_atomic: bool,
    pub(crate) wait_psn: bool,
    /// The completer asked for the send queue to be resent from `comp.psn`.
    pub(crate) need_retry: bool,
    /// An RNR NAK arrived: do not retry before the RNR timer fires.
    pub(crate) wait_for_rnr_timer: bool,
    /// The completer made room for the requester: run it again.
    pub(crate) again: bool,
}

impl State {
    pub(crate) const fn new(sq_psn: u32, max_rd_atomic: u32) -> State {
        State {
            psn: psn_add(sq_psn, 0),
            opcode: None,
            rd_atomic: max_rd_atomic,
            noack_pkts: 0,
            noack_before: 0,
            held: None,
            wait_fence: false,
            need_rd_atomic: false,
            wait_psn: false,
            need_retry: false,
            wait_for_rnr_timer: false,
            again: false,
        }
    }

    /// What moving to (or running in) RESET clears. Credits and PSN stay:
    /// C resets them only through modify (max_rd_atomic, sq_psn).
    pub(crate) fn reset(&mut self) {
        self.opcode = None;
        self.noack_pkts = 0;
        self.noack_before = 0;
        self.held = None;
        self.need_rd_atomic = false;
        self.wait_psn = false;
        self.need_retry = false;
        self.wait_for_rnr_timer = false;
    }

    /// Modify with `IB_QP_SQ_PSN` (the completer's `psn` takes it too).
    pub(crate) fn set_sq_psn(&mut self, psn: u32) {
        self.psn = psn_add(psn, 0);
    }

    /// Modify with `IB_QP_MAX_QP_RD_ATOMIC`, after [`round_rd_atomic`].
    pub(crate) fn set_max_rd_atomic(&mut self, n: u32) {
        self.rd_atomic = n;
    }

    /// The RNR timer fired: retry now.
    pub(crate) fn rnr_timer_fired(&mut self) {
        self.need_retry = true;
        self.wait_for_rnr_timer = false;
    }

    /// Reads and clears `again`.
    pub(crate) fn take_again(&mut self) -> bool {
        core::mem::take(&mut self.again)
    }
}

/// `roundup_pow_of_two` of a max_rd_atomic / max_dest_rd_atomic attribute
/// (0 stays 0), as modify_qp stores them. Inputs above 2^31 saturate.
#[cfg(test)] // Only the host tests use it.
pub(crate) const fn round_rd_atomic(n: u32) -> u32 {
    if n == 0 {
        0
    } else {
        match n.checked_next_power_of_two() {
            Some(p) => p,
            None => 1 << 31,
        }
    }
}

/// The QP facts the requester decides with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ReqQp {
    pub(crate) qp_type: qp::Type,
    /// `qp->mtu`: the path MTU in bytes.
    pub(crate) path_mtu: u32,
    /// The port's active MTU in bytes (what UD and GSI packets are limited to).
    pub(crate) port_mtu: u32,
    /// `attr.max_rd_atomic` as stored (rounded).
    pub(crate) max_rd_atomic: u32,
}

impl ReqQp {
    /// `get_mtu()`: the payload limit of one packet.
    pub(crate) const fn mtu(&self) -> u32 {
        match self.qp_type {
            qp::Type::Rc | qp::Type::Uc => self.path_mtu,
            _ => self.port_mtu,
        }
    }
}

/// The immutable facts of a send WQE the requester and completer use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WqeInfo {
    pub(crate) opcode: WrOpcode,
    /// `wr_opcode_mask(opcode, qp)`.
    pub(crate) mask: WrMask,
    pub(crate) flags: SendFlags,
    /// `dma.length`.
    pub(crate) length: u32,
    /// The remote address the WQE starts (and a retry restarts) from: the
    /// RDMA, atomic or flush address, else 0. rdma-core sets `iova` to the
    /// same value; C's retry path resets it to 0 for an atomic write or a
    /// flush, which would then fail the rkey check, so that is not copied.
    pub(crate) retry_iova: u64,
}

impl WqeInfo {
    pub(crate) const fn new(
        opcode: WrOpcode,
        qp_type: qp::Type,
        flags: SendFlags,
        length: u32,
        retry_iova: u64,
    ) -> WqeInfo {
        WqeInfo {
            opcode,
            mask: opcode.mask(qp_type),
            flags,
            length,
            retry_iova,
        }
    }

    /// The facts of a validated send WQE.
    pub(crate) fn from_wqe(wqe: &SendWqe, qp_type: qp::Type) -> WqeInfo {
        let retry_iova = match wqe.wr {
            WrParams::Atomic { remote_addr, .. }
            | WrParams::Rdma { remote_addr, .. }
            | WrParams::Flush { remote_addr, .. } => remote_addr,
            _ => 0,
        };
        WqeInfo::new(wqe.opcode, qp_type, wqe.send_flags, wqe.length, retry_iova)
    }
}

/// The kernel-owned progress of one send WQE (the fields rxe keeps in the
/// WQE slot: state, PSNs, `dma.resid`, `iova`, `has_rd_atomic`). The SGE
/// cursor of a WQE is always `length - resid` bytes in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Progress {
    pub(crate) state: WqeState,
    pub(crate) first_psn: u32,
    pub(crate) last_psn: u32,
    /// Bytes still to send (write/send), or still to receive (read).
    pub(crate) resid: u32,
    /// Remote address the RETH/AtomicETH carries.
    pub(crate) iova: u64,
    /// Holds an initiator-depth credit.
    pub(crate) has_rd_atomic: bool,
    /// The status the WQE completes with when it fails.
    pub(crate) status: WcStatus,
}

impl Progress {
    /// A freshly posted WQE of `length` bytes aimed at `iova` (from the WQE).
    pub(crate) const fn posted(length: u32, iova: u64) -> Progress {
        Progress {
            state: WqeState::Posted,
            first_psn: 0,
            last_psn: 0,
            resid: length,
            iova,
            has_rd_atomic: false,
            status: WcStatus::Success,
        }
    }
}

/// What the requester is waiting for when it stops without sending.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wait {
    /// A fenced WQE waits for earlier reads/atomics (or, for LOCAL_INV, for
    /// every earlier WQE) to complete; `wait_fence` is set.
    Fence,
    /// 128 PSNs are unacknowledged on RC; `wait_psn` is set.
    Psn,
    /// Too many skbs in flight; the engine sets `need_req_skb` and reruns
    /// when the count drops below the low mark.
    Skb,
    /// No initiator-depth credit; `need_rd_atomic` is set.
    RdAtomic,
}

/// One packet to build and send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Packet {
    pub(crate) opcode: Opcode,
    pub(crate) psn: u32,
    /// Payload bytes, taken from the WQE at its cursor (`length - resid`).
    pub(crate) payload: u32,
    /// BTH pad count: the payload is padded to 4 bytes.
    pub(crate) pad: u8,
    pub(crate) ack_req: bool,
    pub(crate) solicited: bool,
    /// RETH va and length, for opcodes that carry a RETH (rkey from the WR).
    pub(crate) reth_va: u64,
    pub(crate) reth_len: u32,
}

/// The requester's decision for the WQE at `wqe_index`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    Wait(Wait),
    /// Run the local operation (REG_MR, LOCAL_INV, BIND_MW); then
    /// [`finish_local`] on success, or set `status` to [`local_op_error`] and fail.
    Local,
    /// A UD message longer than the port MTU: no packet, no error (C10-93.1.1);
    /// call [`skip_oversized_ud`] and advance `wqe_index`.
    SkipUd,
    Send(Packet),
    /// Nothing left to send for this WQE (a retry found it fully sent and
    /// acknowledged, or done): advance `wqe_index`.
    Skip,
    /// The WQE fails with this status: [`fail`], advance `wqe_index`, QP to ERR.
    Fail(WcStatus),
}

/// What [`plan`] needs to know beyond the QP and the WQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Gates {
    /// `req.wqe_index` equals the SQ consumer: every earlier WQE completed.
    pub(crate) prior_done: bool,
    /// `comp.psn`: the oldest unacknowledged PSN.
    pub(crate) comp_psn: u32,
    /// `qp->skb_out`.
    pub(crate) inflight: u32,
}

/// `rxe_wqe_is_fenced()`: LOCAL_INV waits for every earlier WQE; a FENCE
/// flag waits while any initiator-depth credit is out.
pub(crate) fn is_fenced(req: &State, qp: &ReqQp, info: &WqeInfo, prior_done: bool) -> bool {
    if info.opcode == WrOpcode::LocalInv {
        return !prior_done;
    }
    info.flags.has(SendFlags::FENCE) && req.rd_atomic != qp.max_rd_atomic
}

/// The RC window: more than [`MAX_UNACKED_PSNS`] PSNs past `comp_psn`.
pub(crate) fn window_full(qp_type: qp::Type, req_psn: u32, comp_psn: u32) -> bool {
    qp_type == qp::Type::Rc && psn_after(req_psn, psn_add(comp_psn, MAX_UNACKED_PSNS))
}

/// The completer moved `comp_psn` on. A requester stopped on a full window
/// (`wait_psn`) is woken once the window has room for its next packet,
/// not on every response: a read of four PSNs sent at the window's edge
/// needs four responses before the next request fits, and waking on each
/// would run the requester three times for nothing (rdma_rxe wakes on
/// each). The requester's PSN does not move while it waits; a retry
/// rewinds it, and the completer wakes the requester for that itself.
pub(crate) fn window_moved(req: &mut State, comp_psn: u32) {
    if req.wait_psn && !psn_after(req.psn, psn_add(comp_psn, MAX_UNACKED_PSNS)) {
        req.wait_psn = false;
        req.again = true;
    }
}

/// Whether the planned packet `p` of an RC QP need not go out: a retry is
/// resending from an older PSN, and an ACK has since acknowledged `p`'s
/// (the peer had it, held beyond the gap the first resent packet filled,
/// or an ACK was late). The requester commits it as sent without sending
/// it. Only SEND and WRITE packets: a read or atomic request is answered
/// by its response, which retires it.
pub(crate) fn acked_resend(qp: &ReqQp, p: &Packet, comp_psn: u32) -> bool {
    qp.qp_type == qp::Type::Rc && p.opcode.has(Mask::WRITE_OR_SEND) && psn_before(p.psn, comp_psn)
}

/// `check_init_depth()`: take a credit once per WQE.
fn take_rd_atomic(req: &mut State, progress: &mut Progress) -> bool {
    if progress.has_rd_atomic {
        return true;
    }
    if req.rd_atomic > 0 {
        req.rd_atomic -= 1;
        req.need_rd_atomic = false;
        progress.has_rd_atomic = true;
        true
    } else {
        req.need_rd_atomic = true;
        false
    }
}

/// BTH SE: a signalled-solicited send, or write with immediate, on its last packet.
pub(crate) fn solicited(flags: SendFlags, mask: Mask) -> bool {
    flags.has(SendFlags::SOLICITED)
        && mask.contains(Mask::END)
        && (mask.contains(Mask::SEND) || mask.contains(Mask::WRITE.union(Mask::IMMDT)))
}

/// Pad bytes after a payload of `len` bytes.
pub(crate) const fn pad_for(len: u32) -> u8 {
    // The value is 0..=3.
    (len.wrapping_neg() & 3) as u8
}

/// Decides what the requester does with the WQE at `wqe_index`, in the order
/// of `rxe_requester()`. Sets the wait flags of `req` it reports, takes an
/// initiator-depth credit for reads and atomics, and counts the packet for
/// AckReq when it returns [`Step::Send`].
pub(crate) fn plan(
    req: &mut State,
    qp: &ReqQp,
    info: &WqeInfo,
    progress: &mut Progress,
    gates: &Gates,
) -> Step {
    // Outside a retry `wqe_index` only meets posted or half-sent WQEs; a
    // retry leaves fully acknowledged ones pending and done ones done. C
    // would send a spurious packet or run a local operation again.
    if matches!(progress.state, WqeState::Pending | WqeState::Done) {
        return Step::Skip;
    }
    if is_fenced(req, qp, info, gates.prior_done) {
        req.wait_fence = true;
        return Step::Wait(Wait::Fence);
    }
    if info.mask.intersects(WrMask::LOCAL_OP) {
        return Step::Local;
    }
    if window_full(qp.qp_type, req.psn, gates.comp_psn) {
        req.wait_psn = true;
        return Step::Wait(Wait::Psn);
    }
    if gates.inflight > INFLIGHT_SKBS_PER_QP_HIGH {
        return Step::Wait(Wait::Skb);
    }
    let opcode = match next_opcode(
        qp.qp_type,
        info.opcode,
        req.opcode,
        progress.resid,
        qp.path_mtu,
    ) {
        Ok(op) => op,
        Err(_) => return Step::Fail(WcStatus::LocQpOpErr),
    };
    let mask = opcode.mask();
    if mask.intersects(Mask::READ_OR_ATOMIC.union(Mask::ATOMIC_WRITE))
        && !take_rd_atomic(req, progress)
    {
        return Step::Wait(Wait::RdAtomic);
    }
    let mtu = qp.mtu();
    let mut payload = if mask.intersects(Mask::WRITE_OR_SEND.union(Mask::ATOMIC_WRITE)) {
        progress.resid
    } else {
        0
    };
    if payload > mtu {
        if qp.qp_type == qp::Type::Ud {
            return Step::SkipUd;
        }
        // GSI included: rxe sends the first MTU of an oversized GSI message.
        payload = mtu;
    }
    let end = mask.contains(Mask::END);
    Step::Send(Packet {
        opcode,
        psn: req.psn,
        payload,
        pad: pad_for(payload),
        ack_req: ack_req(req, qp.qp_type, end),
        solicited: solicited(info.flags, mask),
        reth_va: progress.iova,
        reth_len: progress.resid,
    })
}

/// Records a sent packet (`finish_packet` + `update_wqe_state` +
/// `update_wqe_psn` + `update_state`). Returns `true` when the packet ended
/// the WQE, i.e. `wqe_index` moves on. The engine also arms the retransmit
/// timer when the QP has a timeout and it is not pending.
pub(crate) fn commit(req: &mut State, qp: &ReqQp, progress: &mut Progress, pkt: &Packet) -> bool {
    let mask = pkt.opcode.mask();
    if mask.intersects(Mask::WRITE_OR_SEND.union(Mask::ATOMIC_WRITE)) {
        progress.resid = progress.resid.saturating_sub(pkt.payload);
    } else if mask.intersects(Mask::FLUSH) {
        progress.resid = 0;
    }
    let end = mask.contains(Mask::END);
    progress.state = match (end, qp.qp_type) {
        (true, qp::Type::Rc) => WqeState::Pending,
        (true, _) => WqeState::Done,
        (false, _) => WqeState::Processing,
    };
    // Packets left including this one, counted at the path MTU as C does.
    let left = wqe_packets(progress.resid.saturating_add(pkt.payload), qp.path_mtu);
    if mask.contains(Mask::START) {
        progress.first_psn = req.psn;
        progress.last_psn = psn_add(req.psn, left - 1);
    }
    req.psn = if mask.intersects(Mask::READ) {
        psn_add(progress.first_psn, left)
    } else {
        psn_add(req.psn, 1)
    };
    req.opcode = Some(pkt.opcode);
    end
}

/// A local operation succeeded: the WQE is done (the completer retires it).
pub(crate) fn finish_local(progress: &mut Progress) {
    progress.state = WqeState::Done;
    progress.status = WcStatus::Success;
}

/// The status a failed local operation completes with.
pub(crate) const fn local_op_error(wr: WrOpcode) -> WcStatus {
    match wr {
        WrOpcode::BindMw => WcStatus::MwBindErr,
        _ => WcStatus::LocQpOpErr,
    }
}

/// The WQE failed with `status` (the engine advances `wqe_index` and moves
/// the QP to ERR).
pub(crate) fn fail(progress: &mut Progress, status: WcStatus) {
    progress.state = WqeState::Error;
    progress.status = status;
}

/// [`Step::SkipUd`]: the message consumes one PSN and succeeds unsent.
pub(crate) fn skip_oversized_ud(req: &mut State, progress: &mut Progress) {
    progress.first_psn = req.psn;
    progress.last_psn = req.psn;
    req.psn = psn_add(req.psn, 1);
    req.opcode = Some(Opcode::UdSendOnly);
    progress.state = WqeState::Done;
    progress.status = WcStatus::Success;
}

/// Where a write/send WQE stands after its first `n` packets were acknowledged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rewind {
    /// Bytes still to send.
    pub(crate) resid: u32,
    /// Opcode of packet `n` (the last skipped one), `None` when `n` is 0.
    pub(crate) opcode: Option<Opcode>,
}

/// `retry_first_write_send()` in closed form: skips `n` packets of a
/// `length`-byte message at `path_mtu`. Past the end of the message C keeps
/// computing opcodes with nothing left, which gives the ONLY opcode.
pub(crate) fn rewind(
    qp_type: qp::Type,
    wr: WrOpcode,
    length: u32,
    path_mtu: u32,
    n: u32,
) -> Rewind {
    if n == 0 {
        return Rewind {
            resid: length,
            opcode: None,
        };
    }
    let total = wqe_packets(length, path_mtu);
    let skipped = u64::from(n).saturating_mul(u64::from(path_mtu));
    // Bounded by `length`, so it fits.
    let resid = u64::from(length).saturating_sub(skipped) as u32;
    let opcode = if n > total {
        next_opcode(qp_type, wr, None, 0, path_mtu).ok()
    } else {
        // Packet n starts with resid_before = length - (n - 1) * mtu and
        // continues a message iff it is not the first packet.
        let before = u64::from(length).saturating_sub(u64::from(n - 1) * u64::from(path_mtu));
        let prev = if n == 1 {
            None
        } else {
            next_opcode(qp_type, wr, None, u32::MAX, path_mtu).ok()
        };
        next_opcode(
            qp_type,
            wr,
            prev,
            u32::try_from(before).unwrap_or(u32::MAX),
            path_mtu,
        )
        .ok()
    };
    Rewind { resid, opcode }
}

/// Starts a retry (`req_retry()`): resend from `comp_psn`; the engine sets
/// `wqe_index` to the SQ consumer and walks the WQEs with [`retry_wqe`].
pub(crate) fn begin_retry(req: &mut State, comp_psn: u32) {
    req.psn = comp_psn;
    req.opcode = None;
}

/// Resets one WQE for a retry, walking from the SQ consumer with `first`
/// initially `true`. Returns `false` at the first WQE not yet started (stop
/// walking). Done WQEs are skipped; every other WQE goes back to posted with
/// its remote address and length reset, except that the first one resumes
/// after its acknowledged packets (write/send: `comp_psn - first_psn`
/// packets; read: the response bytes already received). A first write/send
/// that was sent whole and acknowledged whole stays pending (the requester
/// skips it) and the next WQE counts as first.
pub(crate) fn retry_wqe(
    req: &mut State,
    qp: &ReqQp,
    info: &WqeInfo,
    progress: &mut Progress,
    first: &mut bool,
    comp_psn: u32,
) -> bool {
    match progress.state {
        WqeState::Posted => return false,
        WqeState::Done => return true,
        _ => {}
    }
    let read = info.mask.intersects(WrMask::READ);
    if *first && progress.state == WqeState::Pending && info.mask.intersects(WrMask::WRITE_OR_SEND)
    {
        // Every packet acknowledged: nothing to resend (see Step::Skip).
        let n = psn_distance(progress.first_psn, comp_psn);
        if n >= wqe_packets(info.length, qp.path_mtu) && n < PSN_HALF {
            return true;
        }
    }
    progress.iova = info.retry_iova;
    if !*first || !read {
        progress.resid = info.length;
    }
    if *first {
        *first = false;
        if info.mask.intersects(WrMask::WRITE_OR_SEND) {
            let n = psn_distance(progress.first_psn, comp_psn);
            let r = rewind(qp.qp_type, info.opcode, info.length, qp.path_mtu, n);
            progress.resid = r.resid;
            if r.opcode.is_some() {
                req.opcode = r.opcode;
            }
        }
        if read && qp.path_mtu != 0 {
            let done = info.length.saturating_sub(progress.resid) / qp.path_mtu;
            let skip = u64::from(done) * u64::from(qp.path_mtu);
            progress.iova = progress.iova.wrapping_add(skip);
        }
    }
    progress.state = WqeState::Posted;
    true
}

#[cfg(test)]
#[path = "requester_tests.rs"]
mod tests;
