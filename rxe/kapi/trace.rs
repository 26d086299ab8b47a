// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The trace events `rxe_rs:*` (defined in C, rxe/sys/rxe_rs_trace.h).
//!
//! Each event here tests its tracepoint's static key inline and calls the
//! C emitter (rxe/sys/helpers_trace.c) only when the event is on, so a
//! disabled event costs the datapath one branch and no call:
//! - on 7.x kernels with `CONFIG_JUMP_LABEL`, the kernel crate's
//!   `arch_static_branch!`: a patched jump (a no-op until the event is
//!   enabled), as the kernel's own Rust tracepoints use;
//! - otherwise an inlined read of the key's `enabled` count, which is what
//!   C's `static_branch_unlikely` is without `CONFIG_JUMP_LABEL`. On a 6.12
//!   kernel with `CONFIG_JUMP_LABEL` this is a load and a compare where C
//!   has a patched jump (the 6.12 kernel crate has no jump labels); the
//!   count is kept up to date there too.
//!
//! Without `CONFIG_TRACEPOINTS`, or built with `RXE_RS_NO_TRACE=1` (Kbuild:
//! `cfg(rxe_trace)` unset), every event is an empty inline function.
//! `*_on` tells a caller whose arguments cost something to gather (read
//! from a packet) whether to gather them at all.

use crate::rxe::proto::qp::State;
use crate::rxe::proto::uapi::{Cqe, WcStatus};
#[cfg(rxe_trace)]
use crate::rxe::sys;

/// Why a QP changed state (`qp_state`'s `cause`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StateCause {
    /// modify_qp.
    Modify,
    /// The requester could not build or send a packet.
    SendFailed,
    /// A send WQE completed in error (the status is the WQE's).
    Completion,
    /// A request failed at the responder (the status is the receive's).
    Receive,
}

/// What started a retransmission (`retransmit`'s `cause`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RetryCause {
    /// The local ACK timeout expired.
    Timeout,
    /// A PSN sequence error NAK came in.
    Nak,
    /// An RNR NAK came in: the resend starts when its timer ends.
    Rnr,
    /// A response for a later PSN showed a read or atomic response lost.
    Implicit,
}

/// Why a received packet was dropped (`pkt_drop`'s `reason`): the
/// `rcvd_drop_*` counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DropReason {
    BadHdr,
    BadIcrc,
    NoQp,
    QpState,
    BadKey,
    NotOurs,
    NoMem,
    QueueFull,
}

/// Whether tracepoint `$tp` (a static of the bindings) is enabled.
#[cfg(all(rxe_trace, CONFIG_JUMP_LABEL, rxe_kernel_7))]
macro_rules! tp_on {
    ($tp:ident) => {
        // SAFETY: `$tp` is a tracepoint C defines (helpers_trace.c); its
        // `key` field is a static key, patched by the kernel's jump label
        // code from the entry this emits.
        unsafe { ::kernel::jump_label::arch_static_branch!(sys::$tp, sys::tracepoint, key, false) }
    };
}

/// Whether tracepoint `$tp` (a static of the bindings) is enabled.
#[cfg(all(rxe_trace, not(all(CONFIG_JUMP_LABEL, rxe_kernel_7))))]
macro_rules! tp_on {
    ($tp:ident) => {{
        // SAFETY: `$tp` is a tracepoint C defines (helpers_trace.c), alive
        // as long as the module; its count is an `atomic_t`, read here as
        // `atomic_read` reads it (one volatile load). Above 0: enabled (-1
        // while a first enable is in progress).
        unsafe {
            // 7.x wraps the key in a `static_key_false`.
            #[cfg(rxe_kernel_7)]
            let count = &raw const sys::$tp.key.key.enabled.counter;
            #[cfg(not(rxe_kernel_7))]
            let count = &raw const sys::$tp.key.enabled.counter;
            core::ptr::read_volatile(count) > 0
        }
    }};
}

/// Defines event `$name`: `$name(args)` emits it when enabled, `$on()`
/// tells whether it is.
macro_rules! event {
    ($(#[$doc:meta])* $name:ident, $on:ident, $tp:ident, $emit:ident,
     ($($arg:ident: $ty:ty),*) => ($($val:expr),*)) => {
        /// Whether the event of the same name is enabled.
        #[inline(always)]
        pub(crate) fn $on() -> bool {
            #[cfg(rxe_trace)]
            {
                tp_on!($tp)
            }
            #[cfg(not(rxe_trace))]
            {
                false
            }
        }

        $(#[$doc])*
        #[inline(always)]
        pub(crate) fn $name($($arg: $ty),*) {
            #[cfg(rxe_trace)]
            if $on() {
                // SAFETY: the emitter takes plain values and may be
                // called in any context, as the event's `trace_*` is.
                unsafe { sys::$emit($($val),*) }
            }
            #[cfg(not(rxe_trace))]
            {
                $(let _ = $arg;)*
            }
        }
    };
}

event!(
    /// QP `qpn` moved from `old` to `new` for `cause`; `status` is the
    /// error completion behind it (`Success` for a modify).
    qp_state, qp_state_on, __tracepoint_qp_state, rxe_rs_trace_qp_state,
    (qpn: u32, old: State, new: State, cause: StateCause, status: WcStatus)
        => (qpn, state_raw(old), state_raw(new), cause.raw(), status_raw(status))
);

event!(
    /// A packet handed to the IP layer or looped back: the BTH's
    /// destination QPN, opcode and PSN, and the payload length.
    pkt_send, pkt_send_on, __tracepoint_pkt_send, rxe_rs_trace_pkt_send,
    (qpn: u32, opcode: u8, psn: u32, len: u32) => (qpn, opcode, psn, len)
);

event!(
    /// A packet that passed every check, handed to its QP or group.
    pkt_recv, pkt_recv_on, __tracepoint_pkt_recv, rxe_rs_trace_pkt_recv,
    (qpn: u32, opcode: u8, psn: u32, len: u32) => (qpn, opcode, psn, len)
);

event!(
    /// QP `qpn` sends again from `psn`.
    retransmit, retransmit_on, __tracepoint_retransmit, rxe_rs_trace_retransmit,
    (qpn: u32, cause: RetryCause, psn: u32) => (qpn, cause.raw(), psn)
);

event!(
    /// QP `qpn`'s responder NAKs `psn` with AETH `syndrome`.
    nak_send, nak_send_on, __tracepoint_nak_send, rxe_rs_trace_nak_send,
    (qpn: u32, psn: u32, syndrome: u8) => (qpn, psn, syndrome)
);

event!(
    /// QP `qpn`'s requester got a NAK for `psn` with AETH `syndrome`.
    nak_recv, nak_recv_on, __tracepoint_nak_recv, rxe_rs_trace_nak_recv,
    (qpn: u32, psn: u32, syndrome: u8) => (qpn, psn, syndrome)
);

event!(
    /// A work completion in error on QP `qpn`'s send or receive queue
    /// (flushes included).
    cqe_error, cqe_error_on, __tracepoint_cqe_error, rxe_rs_trace_cqe_error,
    (qpn: u32, wr_id: u64, status: WcStatus, vendor_err: u32, recv: bool)
        => (qpn, wr_id, status_raw(status), vendor_err, recv)
);

event!(
    /// A received packet dropped for `reason`; `qpn`, `opcode` and `psn`
    /// are its BTH's (see `counters::dropped` for a packet not parsed).
    pkt_drop, pkt_drop_on, __tracepoint_pkt_drop, rxe_rs_trace_pkt_drop,
    (reason: DropReason, qpn: u32, opcode: u8, psn: u32) => (reason.raw(), qpn, opcode, psn)
);

/// `cqe_error` for `cqe`, a completion of a send (`recv` false) or receive
/// queue, when it is in error.
#[inline(always)]
pub(crate) fn completion(cqe: &Cqe, recv: bool) {
    if cqe_error_on() && cqe.status != WcStatus::Success {
        cqe_error(cqe.qp_num, cqe.wr_id, cqe.status, cqe.vendor_err, recv);
    }
}

/// A QP state (`enum ib_qp_state`, 0 to 6) as the event's `u8` field.
#[cfg(rxe_trace)]
fn state_raw(state: State) -> u8 {
    // `State` is `repr(u32)` with the C values.
    u8::try_from(state as u32).unwrap_or(u8::MAX)
}

/// An `ib_wc_status` as the event's `u8` field: the statuses run from 0 to
/// 21.
#[cfg(rxe_trace)]
fn status_raw(status: WcStatus) -> u8 {
    u8::try_from(status.as_raw()).unwrap_or(u8::MAX)
}

// The C enums' values are 0-7: each fits the events' `u8` fields.
#[cfg(rxe_trace)]
impl StateCause {
    fn raw(self) -> u8 {
        (match self {
            StateCause::Modify => sys::rxe_rs_trace_cause_RXE_RS_CAUSE_MODIFY,
            StateCause::SendFailed => sys::rxe_rs_trace_cause_RXE_RS_CAUSE_SEND_FAILED,
            StateCause::Completion => sys::rxe_rs_trace_cause_RXE_RS_CAUSE_COMPLETION,
            StateCause::Receive => sys::rxe_rs_trace_cause_RXE_RS_CAUSE_RECEIVE,
        }) as u8
    }
}

#[cfg(rxe_trace)]
impl RetryCause {
    fn raw(self) -> u8 {
        (match self {
            RetryCause::Timeout => sys::rxe_rs_trace_retry_RXE_RS_RETRY_TIMEOUT,
            RetryCause::Nak => sys::rxe_rs_trace_retry_RXE_RS_RETRY_NAK,
            RetryCause::Rnr => sys::rxe_rs_trace_retry_RXE_RS_RETRY_RNR,
            RetryCause::Implicit => sys::rxe_rs_trace_retry_RXE_RS_RETRY_IMPLICIT,
        }) as u8
    }
}

#[cfg(rxe_trace)]
impl DropReason {
    fn raw(self) -> u8 {
        (match self {
            DropReason::BadHdr => sys::rxe_rs_trace_drop_RXE_RS_DROP_BAD_HDR,
            DropReason::BadIcrc => sys::rxe_rs_trace_drop_RXE_RS_DROP_BAD_ICRC,
            DropReason::NoQp => sys::rxe_rs_trace_drop_RXE_RS_DROP_NO_QP,
            DropReason::QpState => sys::rxe_rs_trace_drop_RXE_RS_DROP_QP_STATE,
            DropReason::BadKey => sys::rxe_rs_trace_drop_RXE_RS_DROP_BAD_KEY,
            DropReason::NotOurs => sys::rxe_rs_trace_drop_RXE_RS_DROP_NOT_OURS,
            DropReason::NoMem => sys::rxe_rs_trace_drop_RXE_RS_DROP_NOMEM,
            DropReason::QueueFull => sys::rxe_rs_trace_drop_RXE_RS_DROP_QUEUE_FULL,
        }) as u8
    }
}
