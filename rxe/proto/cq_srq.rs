// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The rules rdma_rxe applies to completion queues and shared receive queues
//! that need no kernel: size and attribute checks, completion notification
//! arming, the SRQ limit event, and receive WQEs posted by kernel users.
//!
//! Each check mirrors the C driver's order, because the first failing check
//! decides the errno user space sees.

use super::params::{limits, MAX_MSG_SZ};
use super::uapi::{dma, queue_buf, recv_wqe, sge, Sge};

/// A request the C driver refuses with `EINVAL`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Invalid;

/// `rxe_cq_chk_attr()`: a CQ of `cqe` entries, 1 to `max_cqe`; on resize
/// (`count` is the number of completions waiting) not fewer than those.
/// `cqe` is the C `int` of the verbs, so a negative request is refused too.
pub(crate) fn check_cqe(cqe: i32, count: Option<u32>) -> Result<u32, Invalid> {
    let n = u32::try_from(cqe).map_err(|_| Invalid)?;
    if n == 0 || n > limits::MAX_CQE {
        return Err(Invalid);
    }
    match count {
        Some(c) if n < c => Err(Invalid),
        _ => Ok(n),
    }
}

/// `enum ib_cq_notify_flags`.
pub(crate) mod notify_flags {
    pub(crate) const SOLICITED: u32 = 1 << 0;
    pub(crate) const NEXT_COMP: u32 = 1 << 1;
    pub(crate) const SOLICITED_MASK: u32 = SOLICITED | NEXT_COMP;
    pub(crate) const REPORT_MISSED_EVENTS: u32 = 1 << 2;
}

/// How a CQ is armed: the consumer asked to be told about the next
/// completion, or only the next solicited one. One event disarms it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Notify(u32);

impl Notify {
    /// The armed kinds (`ib_cq_notify_flags` bits), 0 when not armed.
    pub(crate) fn armed(&self) -> u32 {
        self.0
    }

    /// `req_notify_cq`: arms with the requested kind (arming twice keeps the
    /// wider kind). Returns the verb's result: 1 when the caller asked to
    /// hear about completions already waiting and some are, else 0.
    pub(crate) fn arm(&mut self, flags: u32, empty: bool) -> i32 {
        self.0 |= flags & notify_flags::SOLICITED_MASK;
        i32::from(flags & notify_flags::REPORT_MISSED_EVENTS != 0 && !empty)
    }

    /// A completion was queued: whether the completion handler runs now. It
    /// runs once per arming.
    pub(crate) fn on_completion(&mut self, solicited: bool) -> bool {
        let fire = self.0 & notify_flags::NEXT_COMP != 0
            || (self.0 & notify_flags::SOLICITED != 0 && solicited);
        if fire {
            self.0 = 0;
        }
        fire
    }
}

/// `enum ib_srq_attr_mask`.
pub(crate) mod srq_mask {
    pub(crate) const MAX_WR: u32 = 1 << 0;
    pub(crate) const LIMIT: u32 = 1 << 1;
}

/// The attributes of `struct ib_srq_attr`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SrqAttr {
    pub(crate) max_wr: u32,
    pub(crate) max_sge: u32,
    pub(crate) srq_limit: u32,
}

/// What an SRQ looks like to `modify_srq` before the change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SrqNow {
    /// The armed limit, 0 when not armed.
    pub(crate) limit: u32,
    /// Entries the current ring holds (its `index_mask`).
    pub(crate) capacity: u32,
}

/// What `modify_srq` will do, once checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SrqChange {
    /// Resize to hold at least this many WQEs.
    pub(crate) max_wr: Option<u32>,
    /// Arm the limit event at this level (0 disarms).
    pub(crate) limit: Option<u32>,
}

/// `rxe_srq_chk_attr()`. The checks of both attributes use the SRQ as it is
/// before the call: a new `max_wr` is compared with the armed limit, a new
/// limit with the current ring, even when both change at once.
pub(crate) fn check_srq_modify(
    now: SrqNow,
    mask: u32,
    max_wr: u32,
    srq_limit: u32,
) -> Result<SrqChange, Invalid> {
    let mut change = SrqChange {
        max_wr: None,
        limit: None,
    };
    if mask & srq_mask::MAX_WR != 0 {
        if max_wr > limits::MAX_SRQ_WR || max_wr == 0 {
            return Err(Invalid);
        }
        if now.limit != 0 && max_wr < now.limit {
            return Err(Invalid);
        }
        change.max_wr = Some(max_wr.max(limits::MIN_SRQ_WR));
    }
    if mask & srq_mask::LIMIT != 0 {
        if srq_limit > limits::MAX_SRQ_WR || srq_limit > now.capacity {
            return Err(Invalid);
        }
        change.limit = Some(srq_limit);
    }
    Ok(change)
}

/// The responder took a WQE and `count` remain: whether the armed limit
/// fires now. It fires once, disarming itself, and only for an SRQ whose
/// owner installed an event handler (without one it stays armed).
pub(crate) fn srq_limit_reached(limit: &mut u32, count: u32, has_handler: bool) -> bool {
    if *limit != 0 && has_handler && count < *limit {
        *limit = 0;
        return true;
    }
    false
}

/// Why a receive work request of a kernel user was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PostRecvError {
    /// The queue is full (`ENOMEM`).
    Full,
    /// More SGEs than the queue was created for, or a negative count (`EINVAL`).
    TooManySge,
    /// The SGEs add up to more than a message may carry (`EINVAL`).
    TooLong,
}

/// The largest receive WQE image: the fixed part and `RXE_MAX_SGE` SGEs.
pub(crate) const RECV_WQE_MAX: usize = recv_wqe::LEN + sge::LEN * limits::MAX_SGE as usize;

/// `post_one_recv()` after the full check: validates a kernel receive work
/// request with `num_sge` SGEs (the C `int`) on a queue of `max_sge`, and
/// builds its WQE image in `out`. `sge(i)` yields SGE `i`; it is only asked
/// for indices below a validated `num_sge`. Returns the image length.
pub(crate) fn build_recv_wqe(
    out: &mut [u8; RECV_WQE_MAX],
    wr_id: u64,
    num_sge: i32,
    max_sge: u32,
    mut sge: impl FnMut(usize) -> Sge,
) -> Result<usize, PostRecvError> {
    let n = u32::try_from(num_sge).map_err(|_| PostRecvError::TooManySge)?;
    if n > max_sge.min(limits::MAX_SGE) {
        return Err(PostRecvError::TooManySge);
    }
    let count = n as usize; // At most 32: checked above.
    out.fill(0);
    let mut length: u64 = 0;
    for i in 0..count {
        let s = sge(i);
        length += u64::from(s.length);
        let off = recv_wqe::DATA + i * sge::LEN;
        out[off + sge::ADDR..off + sge::ADDR + 8].copy_from_slice(&s.addr.to_ne_bytes());
        out[off + sge::LENGTH..off + sge::LENGTH + 4].copy_from_slice(&s.length.to_ne_bytes());
        out[off + sge::LKEY..off + sge::LKEY + 4].copy_from_slice(&s.lkey.to_ne_bytes());
    }
    if length > u64::from(MAX_MSG_SZ) {
        return Err(PostRecvError::TooLong);
    }
    // At most 2^31 after the check above.
    let length = length as u32;
    let d = recv_wqe::DMA;
    out[recv_wqe::WR_ID..recv_wqe::WR_ID + 8].copy_from_slice(&wr_id.to_ne_bytes());
    out[d + dma::LENGTH..d + dma::LENGTH + 4].copy_from_slice(&length.to_ne_bytes());
    out[d + dma::RESID..d + dma::RESID + 4].copy_from_slice(&length.to_ne_bytes());
    out[d + dma::NUM_SGE..d + dma::NUM_SGE + 4].copy_from_slice(&n.to_ne_bytes());
    Ok(recv_wqe::DATA + count * sge::LEN)
}

/// The network facts a receive completion of a kernel CQ carries beyond the
/// user-space CQE (`network_hdr_type`, `vlan_id` of `struct ib_wc`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RecvNet {
    /// The packet came over IPv6 (else IPv4).
    pub(crate) ipv6: bool,
    /// The VLAN of the receiving netdev, if it is a VLAN device.
    pub(crate) vlan_id: Option<u16>,
}

/// `enum rdma_network_type` values of a RoCEv2 packet.
pub(crate) mod network_type {
    pub(crate) const IPV4: u8 = 2;
    pub(crate) const IPV6: u8 = 3;
}

impl RecvNet {
    pub(crate) const fn network_hdr_type(self) -> u8 {
        if self.ipv6 {
            network_type::IPV6
        } else {
            network_type::IPV4
        }
    }
}

// The header and SGE sizes the image arithmetic above relies on.
const _: () = assert!(queue_buf::LEN == 384 && sge::LEN == 16 && recv_wqe::LEN == 40);

#[cfg(test)]
#[path = "cq_srq_tests.rs"]
mod tests;
