// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Protocol events the engines report for the port counters.
//!
//! The engines in this crate only say what happened; the driver maps each
//! event to the counter `rdma statistic` shows under rdma_rxe's name.

/// Something worth counting happened in the requester, completer or
/// responder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Event {
    /// Responder: a request with a PSN it already executed.
    DuplicateRequest,
    /// Responder: a request past the expected PSN (a sequence NAK goes out).
    OutOfSeqRequest,
    /// Responder: a request beyond a gap was held for reordering instead
    /// of dropped.
    ReorderHeld,
    /// Responder: an RNR NAK went out (no receive WQE).
    SentRnrNak,
    /// Responder: a receive WQE completed successfully.
    RecvCompleted,
    /// Completer: an RNR NAK came in.
    RcvdRnrNak,
    /// Completer: a sequence-error NAK acknowledged new PSNs.
    RcvdSeqNak,
    /// Completer: the requester was told to resend from the last ACK.
    Retry,
    /// Completer: a retry ([`Event::Retry`], counted too) started by read
    /// or atomic responses beyond a gap, before the retransmit timer.
    GapRetry,
    /// Completer: the probe started a resend (not counted as a retry: the
    /// rest of the timeout keeps the count).
    ProbeRetry,
    /// Completer: the retry count ran out (`RETRY_EXC_ERR`).
    RetryExceeded,
    /// Completer: the RNR retry count ran out (`RNR_RETRY_EXC_ERR`).
    RnrRetryExceeded,
}
