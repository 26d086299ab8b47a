// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Per-device packet and error counters, under the names rdma_rxe gives them,
//! which `rdma statistic show link DEV/1` lists.

use core::ffi::CStr;
use core::sync::atomic::{AtomicU64, Ordering};

use crate::rxe::device::Device;
use crate::rxe::kapi::trace::{self, DropReason};
use crate::rxe::proto::conv::len64;
use crate::rxe::proto::events::Event;
use crate::rxe::proto::headers::Bth;

/// One counter. The order is rdma_rxe's, so `rdma statistic` prints the
/// same list in the same order for both drivers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Counter {
    /// Packets handed to the IP layer or looped back.
    SentPkts,
    /// Packets that passed the header and ICRC checks.
    RcvdPkts,
    /// Responder: a request with an already-seen PSN.
    DuplicateRequest,
    /// Responder: a request with a PSN beyond the expected one.
    OutOfSeqRequest,
    /// Completer: an RNR NAK came in.
    RcvdRnrErr,
    /// Responder: sent an RNR NAK.
    SendRnrErr,
    /// Completer: a PSN sequence error NAK came in.
    RcvdSeqErr,
    /// An acknowledgement or read/atomic response was queued for the
    /// completer.
    AckDeferred,
    RetryExceededErr,
    RetryRnrExceededErr,
    /// Completer: started a retry.
    CompleterRetryErr,
    /// The IP layer refused or dropped a packet.
    SendErr,
    LinkDowned,
    /// Completer: a send-queue WQE completed.
    RdmaSends,
    /// Responder: a receive completed.
    RdmaRecvs,
    /// Bytes of the packets counted in `sent_pkts`, from the IP header on
    /// (7.3's rdma_rxe has this counter, 6.12's does not).
    SentBytes,
    /// Bytes of the packets counted in `rcvd_pkts`, from the IP header on.
    RcvdBytes,
    /// Received and dropped: bad UDP, IP or transport headers.
    RcvdBadHdr,
    /// Received and dropped: the ICRC does not match.
    RcvdBadIcrc,
    /// Received and dropped: no QP with the destination QPN.
    RcvdNoQp,
    /// Received and dropped: the QP's type, state or path does not take
    /// the packet.
    RcvdBadQpState,
    /// Received and dropped: a P_Key or Q_Key mismatch.
    RcvdBadKey,
    /// Received and dropped: not addressed to one of the device's GIDs.
    RcvdNotOurs,
    /// Received and dropped: no memory to take it in.
    RcvdNoMem,
    /// Received and dropped: the QP's packet queue was full.
    RcvdQueueFull,
    /// Completer: of `completer_retry_err`, the retries that read or
    /// atomic responses beyond a gap started before the retransmit timer
    /// (rxe_rs only).
    CompleterGapRetry,
    /// Responder: requests beyond a gap held in the QP's reorder buffer
    /// instead of dropped (rxe_rs only).
    RespReorderHeld,
    /// Completer: read responses beyond a gap held in the QP's reorder
    /// buffer instead of dropped (rxe_rs only).
    ResponsesHeld,
    /// Completer: of `completer_retry_err`'s kind but not counted there,
    /// the resends the probe started (rxe_rs only).
    CompleterProbeRetry,
    /// Requester: packets a retry did not send again, an ACK having
    /// acknowledged them first (rxe_rs only).
    ResendSkipped,
}

pub(crate) const COUNT: usize = 30;

impl Counter {
    /// Every counter, in index order.
    pub(crate) const ALL: [Counter; COUNT] = [
        Counter::SentPkts,
        Counter::RcvdPkts,
        Counter::DuplicateRequest,
        Counter::OutOfSeqRequest,
        Counter::RcvdRnrErr,
        Counter::SendRnrErr,
        Counter::RcvdSeqErr,
        Counter::AckDeferred,
        Counter::RetryExceededErr,
        Counter::RetryRnrExceededErr,
        Counter::CompleterRetryErr,
        Counter::SendErr,
        Counter::LinkDowned,
        Counter::RdmaSends,
        Counter::RdmaRecvs,
        Counter::SentBytes,
        Counter::RcvdBytes,
        Counter::RcvdBadHdr,
        Counter::RcvdBadIcrc,
        Counter::RcvdNoQp,
        Counter::RcvdBadQpState,
        Counter::RcvdBadKey,
        Counter::RcvdNotOurs,
        Counter::RcvdNoMem,
        Counter::RcvdQueueFull,
        Counter::CompleterGapRetry,
        Counter::RespReorderHeld,
        Counter::ResponsesHeld,
        Counter::CompleterProbeRetry,
        Counter::ResendSkipped,
    ];

    /// The name user space sees.
    pub(crate) const fn name(self) -> &'static CStr {
        match self {
            Counter::SentPkts => c"sent_pkts",
            Counter::RcvdPkts => c"rcvd_pkts",
            Counter::DuplicateRequest => c"duplicate_request",
            Counter::OutOfSeqRequest => c"out_of_seq_request",
            Counter::RcvdRnrErr => c"rcvd_rnr_err",
            Counter::SendRnrErr => c"send_rnr_err",
            Counter::RcvdSeqErr => c"rcvd_seq_err",
            Counter::AckDeferred => c"ack_deferred",
            Counter::RetryExceededErr => c"retry_exceeded_err",
            Counter::RetryRnrExceededErr => c"retry_rnr_exceeded_err",
            Counter::CompleterRetryErr => c"completer_retry_err",
            Counter::SendErr => c"send_err",
            Counter::LinkDowned => c"link_downed",
            Counter::RdmaSends => c"rdma_sends",
            Counter::RdmaRecvs => c"rdma_recvs",
            Counter::SentBytes => c"sent_bytes",
            Counter::RcvdBytes => c"rcvd_bytes",
            Counter::RcvdBadHdr => c"rcvd_drop_bad_hdr",
            Counter::RcvdBadIcrc => c"rcvd_drop_bad_icrc",
            Counter::RcvdNoQp => c"rcvd_drop_no_qp",
            Counter::RcvdBadQpState => c"rcvd_drop_qp_state",
            Counter::RcvdBadKey => c"rcvd_drop_bad_key",
            Counter::RcvdNotOurs => c"rcvd_drop_not_ours",
            Counter::RcvdNoMem => c"rcvd_drop_nomem",
            Counter::RcvdQueueFull => c"rcvd_drop_queue_full",
            Counter::CompleterGapRetry => c"completer_gap_retry",
            Counter::RespReorderHeld => c"resp_reorder_held",
            Counter::ResponsesHeld => c"comp_reorder_held",
            Counter::CompleterProbeRetry => c"completer_probe_retry",
            Counter::ResendSkipped => c"resend_skipped",
        }
    }

    /// The drop reason of an `rcvd_drop_*` counter.
    fn drop_reason(self) -> Option<DropReason> {
        Some(match self {
            Counter::RcvdBadHdr => DropReason::BadHdr,
            Counter::RcvdBadIcrc => DropReason::BadIcrc,
            Counter::RcvdNoQp => DropReason::NoQp,
            Counter::RcvdBadQpState => DropReason::QpState,
            Counter::RcvdBadKey => DropReason::BadKey,
            Counter::RcvdNotOurs => DropReason::NotOurs,
            Counter::RcvdNoMem => DropReason::NoMem,
            Counter::RcvdQueueFull => DropReason::QueueFull,
            _ => return None,
        })
    }

    const fn index(self) -> usize {
        self as usize
    }
}

/// The counter values of one device.
pub(crate) struct Counters([AtomicU64; COUNT]);

impl Counters {
    pub(crate) const fn new() -> Self {
        // A const item is a fresh value at each use, as the array repeat needs.
        #[allow(clippy::declare_interior_mutable_const)]
        const ZERO: AtomicU64 = AtomicU64::new(0);
        Counters([ZERO; COUNT])
    }

    pub(crate) fn inc(&self, c: Counter) {
        self.add(c, 1);
    }

    pub(crate) fn add(&self, c: Counter, n: u64) {
        // Statistics only: no ordering with other memory is needed.
        self.0[c.index()].fetch_add(n, Ordering::Relaxed);
    }

    /// All values, in [`Counter::ALL`] order.
    pub(crate) fn snapshot(&self) -> [u64; COUNT] {
        let mut out = [0u64; COUNT];
        for (o, c) in out.iter_mut().zip(&self.0) {
            *o = c.load(Ordering::Relaxed);
        }
        out
    }
}

/// Counts one event of kind `c` on `dev`.
pub(crate) fn inc(dev: &Device, c: Counter) {
    dev.state().counters.inc(c);
}

/// Adds `n` to counter `c` of `dev`.
pub(crate) fn add(dev: &Device, c: Counter, n: u64) {
    dev.state().counters.add(c, n);
}

/// Counts `pkts` packets of `bytes` in all sent.
pub(crate) fn packets_sent(dev: &Device, pkts: u64, bytes: usize) {
    let c = &dev.state().counters;
    c.add(Counter::SentPkts, pkts);
    c.add(Counter::SentBytes, len64(bytes));
}

/// Counts a received packet dropped for `why` (an `rcvd_drop_*` counter)
/// and reports it in the `pkt_drop` trace event with its BTH (`None`: the
/// headers were not parsed, reported as QPN 0, opcode 0xff (none the
/// driver takes), PSN 0).
pub(crate) fn dropped(dev: &Device, why: Counter, bth: Option<&Bth>) {
    inc(dev, why);
    if trace::pkt_drop_on() {
        if let Some(reason) = why.drop_reason() {
            let (qpn, opcode, psn) = bth.map_or((0, 0xff, 0), |b| (b.qpn, b.opcode, b.psn));
            trace::pkt_drop(reason, qpn, opcode, psn);
        }
    }
}

/// Counts one packet of `bytes` bytes, sent (`sent_pkts`, `sent_bytes`)
/// or received (`rcvd_pkts`, `rcvd_bytes`).
pub(crate) fn packet(dev: &Device, sent: bool, bytes: usize) {
    let (pkts, total) = if sent {
        (Counter::SentPkts, Counter::SentBytes)
    } else {
        (Counter::RcvdPkts, Counter::RcvdBytes)
    };
    let c = &dev.state().counters;
    c.inc(pkts);
    c.add(total, len64(bytes));
}

impl From<Event> for Counter {
    fn from(ev: Event) -> Counter {
        match ev {
            Event::DuplicateRequest => Counter::DuplicateRequest,
            Event::OutOfSeqRequest => Counter::OutOfSeqRequest,
            Event::SentRnrNak => Counter::SendRnrErr,
            Event::RecvCompleted => Counter::RdmaRecvs,
            Event::RcvdRnrNak => Counter::RcvdRnrErr,
            Event::RcvdSeqNak => Counter::RcvdSeqErr,
            Event::Retry => Counter::CompleterRetryErr,
            Event::GapRetry => Counter::CompleterGapRetry,
            Event::ReorderHeld => Counter::RespReorderHeld,
            Event::ProbeRetry => Counter::CompleterProbeRetry,
            Event::RetryExceeded => Counter::RetryExceededErr,
            Event::RnrRetryExceeded => Counter::RetryRnrExceededErr,
        }
    }
}
