// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Responder decisions of rdma_rxe (rxe_resp.c): sequence, opcode, access,
//! resource and length checks of incoming requests, duplicate handling with
//! the responder resources, the ACK/NAK to send, error classes, and the
//! receive completion a message produces.
//!
//! The whole `rxe_receiver()` state machine runs in `super::machine` on top of
//! these pieces; the engine implements its `Io` trait, the primitives that
//! touch queues, memory regions and the wire.
//!
//! # API
//!
//! - [`State`]`::new(rq_psn, max_dest_rd_atomic)`, `.set_rq_psn(psn)`,
//!   `.set_max_dest_rd_atomic(n)`, `.reset()`: `qp->resp` plus the responder
//!   resources. About 9 KiB: keep it inside the QP, not on the stack.
//! - [`RespQp`] `{ qp_type, mtu, access, srq, min_rnr_timer }`
//! - [`Request`]`::from_packet(&PacketInfo, pkt) -> Option<Request>`
//! - [`check_request`]`(state, qp, &Request) -> Check`: the classification
//!   of a request before it takes resources (`check_psn` .. `check_op_valid`)
//! - the pure steps `super::machine` strings together: [`check_length`],
//!   [`rdma_target`], [`check_rdma_len`], [`State::prepare_res`],
//!   [`State::find_res`]
//! - in `super::machine`: trait `Io`, `run(state, qp, io) -> Outcome`, `recv_cqe`
//!
//! Before `run`, as `rxe_receiver()` does: when the QP is in ERR or RESET
//! (or going away) the engine drops every queued request, and in ERR
//! completes every posted receive WQE with `IB_WC_WR_FLUSH_ERR` (with an
//! SRQ it raises `IB_EVENT_QP_LAST_WQE_REACHED` instead).

use super::super::headers::{AtmEth, Feth, Reth, FLUSH_GLOBAL, FLUSH_PERSISTENT};
use super::super::mr::Access;
use super::super::opcode::{Mask, Opcode, Transport};
use super::super::packet::PacketInfo;
use super::super::psn::{psn_add, psn_before, psn_diff};
use super::super::qp;
use super::super::uapi::access;

/// The most responder resources a QP has (`max_dest_rd_atomic` is at most
/// 128 and stored rounded up to a power of two).
pub(crate) const MAX_RESOURCES: usize = 128;

/// Bytes of the GRH (or IPv4 header in its last 20 bytes) a UD receive
/// buffer gets in front of the payload (`union rdma_network_hdr`).
pub(crate) const GRH_LEN: u32 = 40;

/// The largest RETH DMA length rxe accepts (`IBA C9-94`).
const MAX_RETH_LEN: u32 = 1 << 31;

/// The most bytes of a FLUSH's persistent write-back one responder run
/// does: a flush of a whole large region goes piece by piece, so no step
/// holds the region's locks, or keeps bottom halves off, for long (64
/// pages of 4 KiB; a responder step of the driver makes at most 4 runs).
/// Pieces end on multiples of it.
pub(crate) const FLUSH_STEP: u64 = 1 << 18;

/// The end of the piece of a persistent write-back that starts at `next`
/// and stops at `end`: at most [`FLUSH_STEP`] bytes, up to the next
/// multiple of it.
pub(crate) const fn flush_piece_end(next: u64, end: u64) -> u64 {
    let step_end = (next | (FLUSH_STEP - 1)).saturating_add(1);
    if step_end < end {
        step_end
    } else {
        end
    }
}

/// The region rights a FLUSH of placement type `ptype` needs.
pub(crate) const fn flush_rights(ptype: u8) -> Access {
    let mut acc = Access::NONE;
    if ptype & FLUSH_GLOBAL != 0 {
        acc = acc.union(Access::FLUSH_GLOBAL);
    }
    if ptype & FLUSH_PERSISTENT != 0 {
        acc = acc.union(Access::FLUSH_PERSISTENT);
    }
    acc
}

/// The fields of a received request packet the responder decides on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Request {
    pub(crate) opcode: Opcode,
    pub(crate) psn: u32,
    pub(crate) ack_req: bool,
    /// Solicited event.
    pub(crate) se: bool,
    pub(crate) pad: u8,
    /// Payload bytes between the headers and the pad.
    pub(crate) payload: u32,
    pub(crate) reth: Option<Reth>,
    pub(crate) atmeth: Option<AtmEth>,
    pub(crate) feth: Option<Feth>,
    /// Immediate data, the wire bytes as a native-endian word (what a CQE stores).
    pub(crate) imm: Option<u32>,
    /// The rkey of a send with invalidate.
    pub(crate) invalidate: Option<u32>,
    /// The source QP of a datagram (DETH).
    pub(crate) src_qp: Option<u32>,
}

impl Request {
    /// Reads the request fields of a packet parsed by `packet::parse`.
    /// `None` when a header the opcode carries is missing (a parsed packet
    /// always has them).
    pub(crate) fn from_packet(info: &PacketInfo, pkt: &[u8]) -> Option<Request> {
        let mask = info.mask;
        let payload = u32::try_from(info.payload_len).ok()?;
        // Most packets of a long message (MIDDLE, plain LAST) carry no
        // extension header: nothing to look for.
        const EXT: Mask = Mask::RETH
            .union(Mask::ATMETH)
            .union(Mask::FETH)
            .union(Mask::IMMDT)
            .union(Mask::IETH)
            .union(Mask::DETH);
        let plain = Request {
            opcode: info.opcode,
            psn: info.bth.psn,
            ack_req: info.bth.ack_req,
            se: info.bth.se,
            pad: info.bth.pad,
            payload,
            reth: None,
            atmeth: None,
            feth: None,
            imm: None,
            invalidate: None,
            src_qp: None,
        };
        if !mask.intersects(EXT) {
            return Some(plain);
        }
        fn want<T>(present: bool, v: Option<T>) -> Option<Option<T>> {
            if present {
                v.map(Some)
            } else {
                Some(None)
            }
        }
        Some(Request {
            reth: want(mask.contains(Mask::RETH), info.reth(pkt))?,
            atmeth: want(mask.contains(Mask::ATMETH), info.atmeth(pkt))?,
            feth: want(mask.contains(Mask::FETH), info.feth(pkt))?,
            imm: want(
                mask.contains(Mask::IMMDT),
                info.immdt(pkt).map(|i| u32::from_ne_bytes(i.0)),
            )?,
            invalidate: want(mask.contains(Mask::IETH), info.ieth(pkt).map(|i| i.rkey))?,
            src_qp: want(mask.contains(Mask::DETH), info.deth(pkt).map(|d| d.src_qpn))?,
            ..plain
        })
    }

    pub(crate) fn has(&self, m: Mask) -> bool {
        self.opcode.has(m)
    }

    pub(crate) fn flush_type(&self) -> u8 {
        self.feth.map_or(0, |f| f.ptype)
    }
}

/// The QP facts the responder decides with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RespQp {
    pub(crate) qp_type: qp::Type,
    /// `qp->mtu`: the path MTU in bytes.
    pub(crate) mtu: u32,
    /// `qp_access_flags` (`ib_access_flags` bits).
    pub(crate) access: u32,
    /// Receives come from a shared receive queue.
    pub(crate) srq: bool,
    /// The 5-bit RNR timer code sent in RNR NAKs.
    pub(crate) min_rnr_timer: u8,
}

/// What a responder resource remembers (`resp_res.type`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum ResKind {
    #[default]
    Free,
    Read,
    Atomic,
    AtomicWrite,
    Flush,
}

/// Where a read reply stands (`enum rdatm_res_state`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum ResState {
    /// The next response is the first of the reply.
    #[default]
    New,
    Next,
    /// A duplicate read from inside an earlier reply.
    Replay,
}

/// One responder resource: an executed read, atomic, atomic write or flush,
/// kept to answer duplicates of it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Res {
    pub(crate) kind: ResKind,
    pub(crate) replay: bool,
    pub(crate) first_psn: u32,
    pub(crate) last_psn: u32,
    pub(crate) cur_psn: u32,
    pub(crate) state: ResState,
    /// Read: the requested range, and how far the reply got.
    pub(crate) va_org: u64,
    pub(crate) rkey: u32,
    pub(crate) length: u32,
    pub(crate) va: u64,
    pub(crate) resid: u32,
    /// Atomic: the value the target held.
    pub(crate) orig: u64,
    /// Flush: placement type and selectivity level.
    pub(crate) flush_type: u8,
    pub(crate) flush_level: u8,
    /// Flush: the persistent write-back still to do, `[flush_next,
    /// flush_end)` (region addresses); empty when none is under way.
    pub(crate) flush_next: u64,
    pub(crate) flush_end: u64,
}

impl Res {
    /// A persistent write-back of this flush is under way: later steps
    /// go on with it.
    pub(crate) const fn flush_pending(&self) -> bool {
        matches!(self.kind, ResKind::Flush) && self.flush_next < self.flush_end
    }
}

/// An ACK the responder holds back ([`State::ack_owed`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OwedAck {
    /// The PSN and MSN the ACK carries: those of the newest request.
    pub(crate) psn: u32,
    pub(crate) msn: u32,
    /// The PSN of the oldest request it answers.
    pub(crate) first: u32,
}

/// `qp->resp`: the responder's per-QP state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct State {
    /// The next expected PSN.
    pub(crate) psn: u32,
    pub(crate) msn: u32,
    /// Opcode of the last executed request of the current message; `None` (C's -1).
    pub(crate) opcode: Option<Opcode>,
    /// UC: drop packets until the next first/only packet.
    pub(crate) drop_msg: bool,
    /// RC: a PSN sequence NAK is out; drop further packets until the expected one.
    pub(crate) sent_psn_nak: bool,
    /// RC: the expected request came after a sequence NAK asked for it
    /// (a resend filled the gap), and the queue has not run dry since
    /// (see `machine`'s `flush_ack_at_dry`).
    pub(crate) gap_filled: bool,
    /// The RDMA target of the current request (from the RETH/AtomicETH).
    pub(crate) va: u64,
    pub(crate) rkey: u32,
    pub(crate) resid: u32,
    pub(crate) length: u32,
    pub(crate) res: [Res; MAX_RESOURCES],
    /// `max_dest_rd_atomic`: how many of `res` are in use.
    pub(crate) res_count: usize,
    pub(crate) res_head: usize,
    /// The resource a reply is being sent from (`qp->resp.res`).
    pub(crate) cur: Option<usize>,
    /// An ACK held back because more requests were queued: the ACK of a
    /// later one covers it (coalesced acknowledgement). Sent before any
    /// other response, when the queue runs dry, and once it covers
    /// `MAX_COALESCED_PSNS`.
    pub(crate) ack_owed: Option<OwedAck>,
}

impl State {
    #[cfg(test)] // Only the host tests use it.
    pub(crate) fn new(rq_psn: u32, max_dest_rd_atomic: u32) -> State {
        let mut s = State {
            psn: psn_add(rq_psn, 0),
            msn: 0,
            opcode: None,
            drop_msg: false,
            sent_psn_nak: false,
            gap_filled: false,
            va: 0,
            rkey: 0,
            resid: 0,
            length: 0,
            res: [Res::default(); MAX_RESOURCES],
            res_count: 0,
            res_head: 0,
            cur: None,
            ack_owed: None,
        };
        s.set_max_dest_rd_atomic(max_dest_rd_atomic);
        s
    }

    /// Modify with `IB_QP_RQ_PSN`.
    pub(crate) fn set_rq_psn(&mut self, psn: u32) {
        self.psn = psn_add(psn, 0);
    }

    /// Modify with `IB_QP_MAX_DEST_RD_ATOMIC` (already rounded): the
    /// resources are reallocated empty.
    pub(crate) fn set_max_dest_rd_atomic(&mut self, n: u32) {
        // Element by element: a whole-array temporary is 9 KiB of kernel stack.
        self.res.iter_mut().for_each(|r| *r = Res::default());
        self.res_count = usize::try_from(n).map_or(MAX_RESOURCES, |n| n.min(MAX_RESOURCES));
        self.res_head = 0;
        self.cur = None;
    }

    /// What moving to RESET clears. (C keeps `qp->resp.res` across a reset,
    /// which can replay a stale resource; it is cleared here.)
    pub(crate) fn reset(&mut self) {
        self.msn = 0;
        self.opcode = None;
        self.drop_msg = false;
        self.sent_psn_nak = false;
        self.gap_filled = false;
        for r in self.res.iter_mut() {
            r.kind = ResKind::Free;
        }
        self.cur = None;
        self.ack_owed = None;
    }

    /// `rxe_prepare_res()`: recycles the oldest resource. `None` when the
    /// QP has none (C would write through a zero-size array).
    pub(crate) fn prepare_res(&mut self, kind: ResKind, pkt: &Request, mtu: u32) -> Option<usize> {
        if self.res_count == 0 {
            return None;
        }
        let i = self.res_head.min(self.res_count - 1);
        self.res_head = if i + 1 >= self.res_count { 0 } else { i + 1 };
        let mut r = Res {
            kind,
            first_psn: pkt.psn,
            cur_psn: pkt.psn,
            last_psn: pkt.psn,
            ..Res::default()
        };
        match kind {
            ResKind::Read => {
                r.va = self.va;
                r.va_org = self.va;
                r.resid = self.resid;
                r.length = self.resid;
                r.rkey = self.rkey;
                let len = pkt.reth.map_or(0, |h| h.len);
                let pkts = if mtu == 0 {
                    1
                } else {
                    len.div_ceil(mtu).max(1)
                };
                r.last_psn = psn_add(pkt.psn, pkts - 1);
            }
            ResKind::Flush => {
                r.va = self.va;
                r.length = self.length;
                r.rkey = self.rkey;
                r.flush_type = pkt.flush_type();
                r.flush_level = pkt.feth.map_or(0, |f| f.level);
            }
            ResKind::Atomic | ResKind::AtomicWrite | ResKind::Free => {}
        }
        let slot = self.res.get_mut(i)?;
        *slot = r;
        self.cur = Some(i);
        Some(i)
    }

    /// `find_resource()`: the live resource whose PSN range holds `psn`.
    pub(crate) fn find_res(&self, psn: u32) -> Option<usize> {
        self.res.iter().take(self.res_count).position(|r| {
            r.kind != ResKind::Free && !psn_before(psn, r.first_psn) && !psn_before(r.last_psn, psn)
        })
    }

    /// `qp_resp_take_reth()`.
    fn take_reth(&mut self, pkt: &Request) {
        if let Some(r) = pkt.reth {
            self.va = r.va;
            self.resid = r.len;
            self.length = r.len;
            self.rkey = if pkt.has(Mask::READ_OR_WRITE) && r.len == 0 {
                0
            } else {
                r.rkey
            };
        }
    }

    /// The bookkeeping of a new request that executed (`execute()` tail,
    /// and the same lines of the atomic/flush replies).
    pub(crate) fn executed(&mut self, pkt: &Request, count_msn: bool) {
        if count_msn {
            self.msn = psn_add(self.msn, 1);
        }
        self.psn = psn_add(pkt.psn, 1);
        self.opcode = Some(pkt.opcode);
    }
}

/// Errors of the responder, named after C's `RESPST_ERR_*` states; `run`
/// turns each into its error class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RespError {
    MalformedWqe,
    UnsupportedOpcode,
    MisalignedAtomic,
    PsnOutOfSeq,
    MissingOpcodeFirst,
    /// RC: a message did not end before another began (class C).
    MissingOpcodeLastC,
    /// UC: the same, class D1/E.
    MissingOpcodeLastD1e,
    TooManyRdmaAtmReq,
    Rnr,
    RkeyViolation,
    InvalidateRkey,
    Length,
    CqOverflow,
}

/// The classification of a request by [`check_request`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Check {
    /// Drop the packet silently.
    Drop,
    /// An already executed request (RC).
    Duplicate,
    Error(RespError),
    /// A new request: go on to take resources.
    Valid,
}

/// Requests held beyond a gap (see [`ahead`]) after which the gap is taken
/// for a loss and NAKed; until then it may be reordering, which fills it.
pub(crate) const NAK_AFTER_HELD: usize = 8;

/// Whether `pkt` is an RC request beyond the PSN the responder expects:
/// one that [`check_request`] would NAK (or drop, the NAK being out), and
/// which the responder may instead hold until the gap before it fills.
pub(crate) fn ahead(st: &State, qp: &RespQp, pkt: &Request) -> bool {
    qp.qp_type == qp::Type::Rc
        && pkt.opcode.transport() == Transport::Rc
        && pkt.has(Mask::REQ)
        && psn_diff(pkt.psn, st.psn) > 0
}

/// `check_psn()`, `check_op_seq()` and `check_op_valid()`: what a request
/// is before it takes resources. Updates `sent_psn_nak` and `drop_msg` as C
/// does. Packets of another transport than the QP's, and non-requests, are
/// dropped (rxe_recv never delivers them).
pub(crate) fn check_request(st: &mut State, qp: &RespQp, pkt: &Request) -> Check {
    // rxe_recv only hands a QP requests of its own transport; be as strict.
    let transport = match qp.qp_type {
        qp::Type::Rc => Transport::Rc,
        qp::Type::Uc => Transport::Uc,
        qp::Type::Ud | qp::Type::Gsi => Transport::Ud,
        _ => return Check::Drop,
    };
    if pkt.opcode.transport() != transport || !pkt.has(Mask::REQ) {
        return Check::Drop;
    }
    let diff = psn_diff(pkt.psn, st.psn);
    match qp.qp_type {
        qp::Type::Rc => {
            if diff > 0 {
                if st.sent_psn_nak {
                    return Check::Drop;
                }
                st.sent_psn_nak = true;
                return Check::Error(RespError::PsnOutOfSeq);
            }
            if diff < 0 {
                return Check::Duplicate;
            }
            st.gap_filled |= st.sent_psn_nak;
            st.sent_psn_nak = false;
        }
        qp::Type::Uc if st.drop_msg || diff != 0 => {
            // Out of sequence, or dropping: resynchronise on a first packet.
            if !pkt.has(Mask::START) {
                st.drop_msg = true;
                return Check::Drop;
            }
            st.drop_msg = false;
        }
        _ => {}
    }
    if let Err(c) = check_op_seq(st, qp, pkt) {
        return c;
    }
    check_op_valid(st, qp, pkt)
}

fn check_op_seq(st: &mut State, qp: &RespQp, pkt: &Request) -> Result<(), Check> {
    use Opcode::*;
    // Per transport: the opcodes that open a send or write, those that
    // continue one, and the error for a message cut short.
    let (send_open, send_cont, write_open, write_cont, lost): (
        [Opcode; 2],
        &[Opcode],
        [Opcode; 2],
        &[Opcode],
        RespError,
    ) = match qp.qp_type {
        qp::Type::Rc => (
            [RcSendFirst, RcSendMiddle],
            &[RcSendMiddle, RcSendLast, RcSendLastImm, RcSendLastInv],
            [RcWriteFirst, RcWriteMiddle],
            &[RcWriteMiddle, RcWriteLast, RcWriteLastImm],
            RespError::MissingOpcodeLastC,
        ),
        qp::Type::Uc => (
            [UcSendFirst, UcSendMiddle],
            &[UcSendMiddle, UcSendLast, UcSendLastImm],
            [UcWriteFirst, UcWriteMiddle],
            &[UcWriteMiddle, UcWriteLast, UcWriteLastImm],
            RespError::MissingOpcodeLastD1e,
        ),
        _ => return Ok(()),
    };
    let op = pkt.opcode;
    let cont = match st.opcode {
        Some(prev) if send_open.contains(&prev) => Some(send_cont),
        Some(prev) if write_open.contains(&prev) => Some(write_cont),
        _ => None,
    };
    match cont {
        Some(allowed) if allowed.contains(&op) => Ok(()),
        Some(_) => Err(Check::Error(lost)),
        None if send_cont.contains(&op) || write_cont.contains(&op) => {
            if qp.qp_type == qp::Type::Uc {
                st.drop_msg = true;
                Err(Check::Drop)
            } else {
                Err(Check::Error(RespError::MissingOpcodeFirst))
            }
        }
        None => Ok(()),
    }
}

/// `check_qp_attr_access()`: the QP's remote rights allow the operation.
fn qp_allows(qp: &RespQp, pkt: &Request) -> bool {
    let has = |bit: u32| qp.access & bit != 0;
    if (pkt.has(Mask::READ) && !has(access::REMOTE_READ))
        || (pkt.has(Mask::WRITE.union(Mask::ATOMIC_WRITE)) && !has(access::REMOTE_WRITE))
        || (pkt.has(Mask::ATOMIC) && !has(access::REMOTE_ATOMIC))
    {
        return false;
    }
    if pkt.has(Mask::FLUSH) {
        let t = pkt.flush_type();
        if (t & FLUSH_GLOBAL != 0 && !has(access::FLUSH_GLOBAL))
            || (t & FLUSH_PERSISTENT != 0 && !has(access::FLUSH_PERSISTENT))
        {
            return false;
        }
    }
    true
}

fn check_op_valid(st: &mut State, qp: &RespQp, pkt: &Request) -> Check {
    match qp.qp_type {
        qp::Type::Rc if !qp_allows(qp, pkt) => Check::Error(RespError::UnsupportedOpcode),
        qp::Type::Uc if pkt.has(Mask::WRITE) && qp.access & access::REMOTE_WRITE == 0 => {
            st.drop_msg = true;
            Check::Drop
        }
        _ => Check::Valid,
    }
}

/// `rxe_resp_check_length()` minus the UD buffer check: payload sizes
/// against the MTU, and the RETH length limit.
pub(crate) fn check_length(qp: &RespQp, pkt: &Request) -> Result<(), RespError> {
    if pkt.has(Mask::PAYLOAD) && matches!(qp.qp_type, qp::Type::Rc | qp::Type::Uc) {
        let (start, end) = (pkt.has(Mask::START), pkt.has(Mask::END));
        let bad = if start && end {
            pkt.payload > qp.mtu
        } else if start || pkt.has(Mask::MIDDLE) {
            pkt.payload != qp.mtu
        } else if end {
            pkt.payload == 0 || pkt.payload > qp.mtu
        } else {
            false
        };
        if bad {
            return Err(RespError::Length);
        }
    }
    if pkt.reth.is_some_and(|r| r.len > MAX_RETH_LEN) {
        return Err(RespError::Length);
    }
    Ok(())
}

/// The remote memory a request needs, for `Io::lookup`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Target {
    pub(crate) rkey: u32,
    pub(crate) access: Access,
    pub(crate) va: u64,
    pub(crate) len: u32,
    /// Check `va..va+len` against the region (not for a whole-MR flush).
    pub(crate) check_range: bool,
}

/// The first half of `check_rkey()`: takes the target from the RETH or
/// AtomicETH (middle and last write packets use the stored one). `None`
/// for a zero-length read or write, which names no memory (C9-88).
pub(crate) fn rdma_target(st: &mut State, pkt: &Request) -> Option<Target> {
    let mut acc = Access::NONE;
    let mut check_range = true;
    if pkt.has(Mask::READ_OR_WRITE.union(Mask::ATOMIC_WRITE)) {
        st.take_reth(pkt);
        acc = if pkt.has(Mask::READ) {
            Access::REMOTE_READ
        } else {
            Access::REMOTE_WRITE
        };
    } else if pkt.has(Mask::FLUSH) {
        st.take_reth(pkt);
        acc = flush_rights(pkt.flush_type());
        check_range = !matches!(pkt.feth, Some(f) if f.level == 1);
    } else if let Some(a) = pkt.atmeth {
        st.va = a.va;
        st.rkey = a.rkey;
        st.resid = 8;
        acc = Access::REMOTE_ATOMIC;
    }
    if pkt.has(Mask::READ_OR_WRITE) && pkt.reth.is_some_and(|r| r.len == 0) {
        return None;
    }
    Some(Target {
        rkey: st.rkey,
        access: acc,
        va: st.va,
        len: st.resid,
        check_range,
    })
}

/// The second half of `check_rkey()`: payload length rules of writes and
/// atomic writes against the remaining transfer.
pub(crate) fn check_rdma_len(st: &State, qp: &RespQp, pkt: &Request) -> Result<(), RespError> {
    let resid = st.resid;
    let ok = if pkt.has(Mask::ATOMIC_WRITE) {
        resid == 8 && pkt.payload == 8 && pkt.pad == 0
    } else if pkt.has(Mask::WRITE) {
        if resid > qp.mtu {
            pkt.payload == qp.mtu && pkt.pad == 0
        } else {
            pkt.payload == resid && u32::from(pkt.pad) == (resid.wrapping_neg() & 3)
        }
    } else {
        true
    };
    if ok {
        Ok(())
    } else {
        Err(RespError::Length)
    }
}

#[cfg(test)]
#[path = "rules_tests.rs"]
mod tests;
