// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The boundary between the responder state machine
//! ([`super::machine`](super::machine), which re-exports all of this)
//! and its engine: the [`Io`] trait the engine implements, the replies,
//! completions and errors that cross it, [`recv_cqe`] (the completion a
//! message produces) and the [`Outcome`] of a run.

use super::super::events::Event;
use super::super::mr::{AtomicOp, InvalidateError};
use super::super::opcode::{Mask, Opcode};
use super::super::uapi::{wc_flags, WcOpcode, WcStatus};
use super::rules::{self, Request, Target};

/// Why [`Io::take_recv`] has no receive WQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RecvError {
    /// The RQ/SRQ is empty (or the SRQ is in error): receiver not ready.
    Empty,
    /// `num_sge` above the queue's limit.
    Malformed,
}

/// Why [`Io::recv_data`] failed, as `copy_data()` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RecvCopyError {
    /// More bytes than the WQE has left (`-EINVAL`: a malformed WQE for C).
    TooLong,
    /// The SGEs ended before the WQE's length did (`-ENOSPC`).
    NoSpace,
    /// A bad lkey or a copy fault.
    Fault,
}

/// An rkey lookup, range check or remote memory access failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AccessFault;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AtomicError {
    /// The target is not 8-byte aligned.
    Misaligned,
    /// Invalid region or address.
    Access,
}

/// Why a read response did not go out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SendFailed {
    /// No skb, or the transmit failed: C answers with an RNR NAK.
    Send,
    /// The region is gone or the copy failed.
    Access,
}

/// Which memory region a read response reads from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReadSource {
    /// The region [`Io::lookup`] resolved for this request (absent for a
    /// zero-length read); released after this response.
    Held,
    /// Look the rkey up again (`rxe_recheck_mr()`: same key, still valid).
    Recheck(u32),
}

/// One RDMA READ response packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ReadResponse {
    pub(crate) opcode: Opcode,
    pub(crate) psn: u32,
    /// AETH MSN (the syndrome is always an unlimited-credit ACK).
    pub(crate) msn: u32,
    pub(crate) va: u64,
    pub(crate) len: u32,
    pub(crate) source: ReadSource,
}

/// An ACK, NAK, atomic ACK or zero-length read response (for flush and
/// atomic write) without payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ack {
    /// `RcAck`, `RcAtomicAck` or `RcReadResponseOnly`.
    pub(crate) opcode: Opcode,
    pub(crate) psn: u32,
    pub(crate) syndrome: u8,
    pub(crate) msn: u32,
    /// AtomicAckETH value, for `RcAtomicAck`.
    pub(crate) orig: u64,
}

/// A receive completion, in the user CQE's terms. A kernel CQ also gets
/// `IB_WC_WITH_NETWORK_HDR_TYPE` (and the VLAN), which only the engine knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RecvCqe {
    pub(crate) status: WcStatus,
    pub(crate) opcode: WcOpcode,
    pub(crate) byte_len: u32,
    pub(crate) wc_flags: u32,
    /// Immediate data or the invalidated rkey.
    pub(crate) ex: u32,
    pub(crate) src_qp: u32,
    /// Post as a solicited event (the BTH SE bit).
    pub(crate) solicited: bool,
}

/// The CQ overflowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CqFull;

/// What [`run`](super::machine::run) needs from the engine: the
/// request queue, the receive queue, remote memory and the wire.
pub(crate) trait Io {
    /// The request packet at the head of the queue, not removed.
    fn peek(&mut self) -> Option<Request>;
    /// [`Io::peek`], where a request held for reordering ([`Io::hold`])
    /// with PSN `next_psn`, the one the responder expects, comes first.
    fn peek_next(&mut self, _next_psn: u32) -> Option<Request> {
        self.peek()
    }
    /// Moves the head request, an RC request beyond `next_psn` (the PSN
    /// the responder expects), off the queue into the QP's reorder buffer,
    /// where [`Io::peek_next`] finds it once the PSNs before it have come.
    /// Returns the number of requests held then, or `None` when there is
    /// no room (the request stays at the head).
    fn hold(&mut self, _next_psn: u32) -> Option<usize> {
        None
    }
    /// Whether the head request came out of the reorder buffer.
    fn head_was_held(&self) -> bool {
        false
    }
    /// Drops the head request and every request the reorder buffer holds.
    fn drop_held(&mut self) {}
    /// Whether the reorder buffer holds requests (beyond a gap).
    fn holds_requests(&self) -> bool {
        false
    }
    /// Drops the head request packet.
    fn pop(&mut self);
    /// The QP went to ERR meanwhile.
    fn qp_in_error(&mut self) -> bool;
    /// Takes the next receive WQE (RQ: a copy of its head; SRQ: a copy,
    /// consumed, with the limit event) as the held WQE; returns its length.
    fn take_recv(&mut self) -> Result<u32, RecvError>;
    /// A receive WQE is held for the current message.
    fn has_recv(&self) -> bool;
    /// Scatters into the held WQE at its cursor: first, when `with_grh`,
    /// `GRH_LEN` bytes of network header (IPv4: 20 zero bytes then the IPv4
    /// header; IPv6: the IPv6 header), then the head packet's payload.
    fn recv_data(&mut self, with_grh: bool) -> Result<(), RecvCopyError>;
    /// Bytes the held WQE received so far.
    fn recv_received(&self) -> u32;
    /// Puts the held WQE's cursor back to its start.
    fn rewind_recv(&mut self);
    /// Posts `cqe` for the held WQE, consumes it (RQ) and drops it.
    fn complete(&mut self, cqe: &RecvCqe) -> Result<(), CqFull>;
    /// Resolves `t.rkey` for `t.access` (and the range when asked) and
    /// holds the region until [`Io::release_mr`].
    fn lookup(&mut self, t: &Target) -> Result<(), AccessFault>;
    fn release_mr(&mut self);
    /// Copies the head packet's payload into the held region at `va`.
    fn write_data(&mut self, va: u64) -> Result<(), AccessFault>;
    /// Runs an 8-byte atomic at `va` in the held region; returns the old value.
    fn atomic(&mut self, va: u64, op: AtomicOp) -> Result<u64, AtomicError>;
    /// Stores the head packet's 8 payload bytes at `va` in the held region.
    fn atomic_write(&mut self, va: u64) -> Result<(), AtomicError>;
    /// The `(iova, length)` the held region (or window) covers, for a
    /// FLUSH of the whole region.
    fn region_bounds(&self) -> Option<(u64, u64)>;
    /// Writes `va..va+len` of the held region back to persistence: one
    /// piece of a FLUSH, at most [`FLUSH_STEP`](rules::FLUSH_STEP)
    /// bytes, with every lock it takes dropped again before it returns.
    fn flush(&mut self, va: u64, len: u64) -> Result<(), AccessFault>;
    /// Orders every write placed before a FLUSH before its reply (global
    /// visibility).
    fn flush_barrier(&mut self);
    /// Invalidates the MR or MW named by `rkey` (send with invalidate).
    fn invalidate(&mut self, rkey: u32) -> Result<(), InvalidateError>;
    /// Builds and sends a read response, copying `len` bytes from `va`.
    fn send_read_response(&mut self, r: &ReadResponse) -> Result<(), SendFailed>;
    /// Builds and sends an ACK-type packet; failures are not reported (C logs them).
    fn send_ack(&mut self, a: &Ack);
    /// Whether more requests wait behind the one being handled: its ACK
    /// can then be left to a later one.
    fn more_queued(&mut self) -> bool {
        false
    }
    /// Reports `ev` for the port counters.
    fn count(&mut self, _ev: Event) {}
    /// Whether the QP's state or attributes changed since the engine read
    /// them for this run: header prediction is then off.
    fn status_moved(&mut self) -> bool {
        false
    }
    /// Whether the access that just failed failed only because a page of
    /// an on-demand-paging MR was absent: the run then stops with the
    /// request kept ([`Outcome::fault`]) for the engine to fault the page
    /// in and run again. Engines without ODP memory never see one.
    fn absent(&self) -> bool {
        false
    }
    /// Whether `[va, va + len)` of the MR [`Io::lookup`] resolved is present
    /// for the access (`write` or read); `false` records what to fault in,
    /// as an absent page in an access does.
    fn probe(&mut self, _va: u64, _len: u32, _write: bool) -> bool {
        true
    }
}

/// What the engine does after [`run`](super::machine::run).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Outcome {
    /// A request (or one read response) was handled: run again.
    pub(crate) progress: bool,
    /// Move the QP to ERR.
    pub(crate) qp_error: bool,
    /// Stopped at an absent ODP page: nothing of the request was done, it
    /// is still at the head; fault the page in and run again.
    pub(crate) fault: bool,
}

/// The receive completion of a message (`do_complete()`).
pub(crate) fn recv_cqe(
    st: &rules::State,
    pkt: &Request,
    status: WcStatus,
    received: u32,
) -> RecvCqe {
    let mut c = RecvCqe {
        status,
        opcode: WcOpcode::Send,
        byte_len: 0,
        wc_flags: 0,
        ex: 0,
        src_qp: 0,
        solicited: pkt.se,
    };
    if status != WcStatus::Success {
        return c;
    }
    let write_imm = pkt.has(Mask::IMMDT) && pkt.has(Mask::WRITE);
    c.opcode = if write_imm {
        WcOpcode::RecvRdmaWithImm
    } else {
        WcOpcode::Recv
    };
    c.byte_len = if write_imm { st.length } else { received };
    c.wc_flags = wc_flags::GRH;
    if let Some(imm) = pkt.imm {
        c.wc_flags |= wc_flags::WITH_IMM;
        c.ex = imm;
    }
    if let Some(rkey) = pkt.invalidate {
        c.wc_flags |= wc_flags::WITH_INVALIDATE;
        c.ex = rkey;
    }
    c.src_qp = pkt.src_qp.unwrap_or(0);
    c
}
