// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! What `rdma resource show` prints for rxe_rs objects beyond the RDMA
//! core's own fields: the driver attributes of a QP or CQ entry (shown with
//! `-dd`), and the same facts as one packed record for the raw form (`-r`).
//!
//! The attribute names are an interface (scripts parse `rdma -j` output):
//! a name keeps its meaning once published. The raw record starts with a
//! version byte; fields are only ever appended.

use core::ffi::CStr;

use super::uapi::WcStatus;

/// How one attribute's value is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Value {
    U32(u32),
    /// Printed in hex (PSNs, as the core prints its own).
    Hex32(u32),
    /// A work completion status, printed by its kernel name
    /// (`ib_wc_status_msg`), or "none".
    Status(Option<WcStatus>),
}

/// One driver attribute: a name and its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Attr {
    pub(crate) name: &'static CStr,
    pub(crate) value: Value,
}

const fn attr(name: &'static CStr, value: Value) -> Attr {
    Attr { name, value }
}

/// Why a requester is not sending, as bits of [`QpDetails::req_waits`].
pub(crate) mod wait {
    /// A fenced WQE waits for the reads and atomics before it.
    pub(crate) const FENCE: u32 = 1 << 0;
    /// A read or atomic waits for an initiator-depth credit.
    pub(crate) const RD_ATOMIC: u32 = 1 << 1;
    /// The PSN window (unacknowledged packets) is full.
    pub(crate) const PSN_WINDOW: u32 = 1 << 2;
    /// An RNR NAK arrived; the RNR timer has not fired yet.
    pub(crate) const RNR_TIMER: u32 = 1 << 3;
    /// The completer asked for a resend from the oldest unacknowledged PSN.
    pub(crate) const RETRY: u32 = 1 << 4;
}

/// The raw record of `attrs`: [`RAW_VERSION`], then each value as a
/// little-endian `u32` (a status as its `ib_wc_status` value, `u32::MAX`
/// for none). `N` is one byte more than four per attribute.
fn raw_record<const N: usize>(attrs: &[Attr]) -> [u8; N] {
    let mut out = [0u8; N];
    if let Some(v) = out.first_mut() {
        *v = RAW_VERSION;
    }
    let words = out.get_mut(1..).unwrap_or(&mut []).chunks_exact_mut(4);
    for (a, chunk) in attrs.iter().zip(words) {
        let v = match a.value {
            Value::U32(v) | Value::Hex32(v) => v,
            Value::Status(s) => s.map_or(u32::MAX, WcStatus::as_raw),
        };
        chunk.copy_from_slice(&v.to_le_bytes());
    }
    out
}

/// A QP's transport state. Each engine's part is read under that engine's
/// lock, one lock at a time: the parts are each consistent, not
/// necessarily with one another.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct QpDetails {
    /// The PSN of the next packet the requester sends.
    pub(crate) sq_psn: u32,
    /// The oldest PSN the peer has not acknowledged yet.
    pub(crate) unacked_psn: u32,
    /// The PSN the responder expects next.
    pub(crate) rq_psn: u32,
    /// Send WQEs posted and not yet completed.
    pub(crate) sq_wqes: u32,
    /// Receive WQEs posted and not yet consumed (0 on an SRQ).
    pub(crate) rq_wqes: u32,
    /// Reads and atomics sent and not yet answered, and how many may be.
    pub(crate) rd_atomic_out: u32,
    pub(crate) max_rd_atomic: u32,
    /// Responder resources holding a read or atomic reply, and how many
    /// there are.
    pub(crate) resp_res_used: u32,
    pub(crate) max_dest_rd_atomic: u32,
    /// Transport retries left, and the QP's limit they restart from.
    pub(crate) retry_left: u32,
    pub(crate) retry_cnt: u32,
    /// RNR retries left, and the QP's limit (7: unlimited).
    pub(crate) rnr_retry_left: u32,
    pub(crate) rnr_retry: u32,
    /// The retransmit and RNR timers are armed.
    pub(crate) retrans_timer: bool,
    pub(crate) rnr_timer: bool,
    /// [`wait`] bits.
    pub(crate) req_waits: u32,
    /// Requests queued for the responder, responses for the completer.
    pub(crate) resp_queue: u32,
    pub(crate) comp_queue: u32,
    /// The status of the last completion in error (flushes not counted).
    pub(crate) last_err: Option<WcStatus>,
}

/// Attributes of a QP entry.
pub(crate) const QP_ATTRS: usize = 19;

/// Length of a QP's raw record.
pub(crate) const QP_RAW_LEN: usize = 1 + 4 * QP_ATTRS;

/// Version of the raw records' layout.
pub(crate) const RAW_VERSION: u8 = 1;

impl QpDetails {
    /// The attributes, in print order.
    pub(crate) fn attrs(&self) -> [Attr; QP_ATTRS] {
        [
            attr(c"sq_psn", Value::Hex32(self.sq_psn)),
            attr(c"unacked_psn", Value::Hex32(self.unacked_psn)),
            attr(c"rq_psn", Value::Hex32(self.rq_psn)),
            attr(c"sq_wqes", Value::U32(self.sq_wqes)),
            attr(c"rq_wqes", Value::U32(self.rq_wqes)),
            attr(c"rd_atomic_out", Value::U32(self.rd_atomic_out)),
            attr(c"max_rd_atomic", Value::U32(self.max_rd_atomic)),
            attr(c"resp_res_used", Value::U32(self.resp_res_used)),
            attr(c"max_dest_rd_atomic", Value::U32(self.max_dest_rd_atomic)),
            attr(c"retry_left", Value::U32(self.retry_left)),
            attr(c"retry_cnt", Value::U32(self.retry_cnt)),
            attr(c"rnr_retry_left", Value::U32(self.rnr_retry_left)),
            attr(c"rnr_retry", Value::U32(self.rnr_retry)),
            attr(c"retrans_timer", Value::U32(self.retrans_timer.into())),
            attr(c"rnr_timer", Value::U32(self.rnr_timer.into())),
            attr(c"req_waits", Value::Hex32(self.req_waits)),
            attr(c"resp_queue", Value::U32(self.resp_queue)),
            attr(c"comp_queue", Value::U32(self.comp_queue)),
            attr(c"last_err", Value::Status(self.last_err)),
        ]
    }

    /// The raw record: [`RAW_VERSION`], then every attribute of
    /// [`QpDetails::attrs`] in order as a little-endian `u32` (a status as
    /// its `ib_wc_status` value, `u32::MAX` for none).
    pub(crate) fn raw(&self) -> [u8; QP_RAW_LEN] {
        raw_record(&self.attrs())
    }
}

/// A CQ's fill state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CqDetails {
    /// Completions waiting to be polled, and the ring's capacity.
    pub(crate) cqe_used: u32,
    pub(crate) cqe_max: u32,
    /// The armed notification: `ib_cq_notify_flags` bits (1 solicited
    /// only, 2 any next completion), 0 when not armed.
    pub(crate) armed: u32,
}

/// Attributes of a CQ entry.
pub(crate) const CQ_ATTRS: usize = 3;

/// Length of a CQ's raw record.
pub(crate) const CQ_RAW_LEN: usize = 1 + 4 * CQ_ATTRS;

impl CqDetails {
    pub(crate) fn attrs(&self) -> [Attr; CQ_ATTRS] {
        [
            attr(c"cqe_used", Value::U32(self.cqe_used)),
            attr(c"cqe_max", Value::U32(self.cqe_max)),
            attr(c"armed", Value::U32(self.armed)),
        ]
    }

    /// As [`QpDetails::raw`].
    pub(crate) fn raw(&self) -> [u8; CQ_RAW_LEN] {
        raw_record(&self.attrs())
    }
}

#[cfg(test)]
#[path = "res_details_tests.rs"]
mod tests;
