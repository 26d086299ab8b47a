// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Completer tests of recovery: PSN-sequence and RNR NAKs, retransmit
//! timeouts and lost read responses, duplicates and old ACKs, and heads
//! that retire with no response of their own.

use super::*;

#[test]
fn psn_sequence_nak_retries_from_its_psn() {
    let mut f = Fixture::new(10, 20);
    f.wqe(head(
        WrOpcode::RdmaWrite,
        10 * 1024,
        10,
        19,
        WqeState::Pending,
    ));
    f.req.wait_psn = true;
    f.resp(nak(14, Syndrome::Nak(NakCode::PsnSeqError)), 0);
    let o = f.run();
    assert!(o.progress && o.again);
    assert_eq!(f.comp.psn, 14);
    assert!(f.req.need_retry && f.comp.started_retry && !f.req.wait_psn);
    assert_eq!(f.sq.events, [Event::RcvdSeqNak, Event::Retry]);
    assert_eq!(f.comp.retry_cnt, 2);
    // While need_retry is pending the completer leaves packets queued.
    f.resp(nak(15, Syndrome::Nak(NakCode::PsnSeqError)), 0);
    assert_eq!(f.run(), Outcome::default());
    assert_eq!(f.sq.responses.len(), 1);
    // The requester restarts; a second NAK of the same retry is ignored.
    f.req.need_retry = false;
    f.run();
    assert_eq!(
        (f.comp.psn, f.comp.retry_cnt, f.req.need_retry),
        (15, 2, false)
    );
    // An ACK ends the retry and restores the counters.
    f.resp(ack(19), 0);
    f.run();
    assert_eq!(f.retired(), [WcStatus::Success]);
    assert_eq!((f.comp.retry_cnt, f.comp.started_retry), (3, false));
}

#[test]
fn rnr_naks_count_and_time() {
    let mut f = Fixture::new(0, 1);
    f.wqe(head(WrOpcode::Send, 8, 0, 0, WqeState::Pending));
    for left in [1u8, 0] {
        f.resp(nak(0, Syndrome::RnrNak { timer: 14 }), 0);
        let o = f.run();
        assert_eq!(o.rnr_timer, Some(14));
        assert!(!o.progress && f.req.wait_for_rnr_timer);
        assert_eq!(f.comp.rnr_retry, left);
        f.req.rnr_timer_fired();
        assert!(f.req.need_retry && !f.req.wait_for_rnr_timer);
        f.req.need_retry = false;
    }
    f.resp(nak(0, Syndrome::RnrNak { timer: 0 }), 0);
    let o = f.run();
    assert!(o.qp_error && o.rnr_timer.is_none());
    assert_eq!(f.retired(), [WcStatus::RnrRetryExcErr]);
    assert_eq!(
        f.sq.events,
        [
            Event::RcvdRnrNak,
            Event::RcvdRnrNak,
            Event::RcvdRnrNak,
            Event::RnrRetryExceeded
        ]
    );
    // 7 retries forever.
    let mut f = Fixture::new(0, 1);
    f.comp.set_rnr_retry(7);
    f.wqe(head(WrOpcode::Send, 8, 0, 0, WqeState::Pending));
    for _ in 0..50 {
        f.resp(nak(0, Syndrome::RnrNak { timer: 31 }), 0);
        assert_eq!(f.run().rnr_timer, Some(31));
    }
    assert_eq!(f.comp.rnr_retry, 7);
}

#[test]
fn retransmit_timeouts() {
    let mut f = Fixture::new(PSN_MASK, 1);
    f.wqe(head(WrOpcode::Send, 8, PSN_MASK, 0, WqeState::Pending));
    // Without a timeout there is nothing to do but keep the timer going.
    let o = f.run();
    assert!(o.rearm_retransmit && !o.progress);
    for left in [2u8, 1, 0] {
        f.comp.timer_fired();
        let o = f.run();
        assert!(o.progress && o.again && f.req.need_retry, "{left}");
        assert_eq!(f.comp.retry_cnt, left);
        f.req.need_retry = false;
    }
    f.comp.timer_fired();
    let o = f.run();
    assert!(o.qp_error);
    assert_eq!(f.retired(), [WcStatus::RetryExcErr]);
    // An arriving response cancels the timeout retry.
    let mut f = Fixture::new(0, 1);
    f.wqe(head(WrOpcode::Send, 8, 0, 0, WqeState::Pending))
        .resp(ack(0), 0);
    f.comp.timer_fired();
    f.run();
    assert_eq!(
        (f.comp.retry_cnt, f.retired()),
        (3, vec![WcStatus::Success])
    );
    // Nothing outstanding: the counter still drops but no retry starts (C).
    let mut f = Fixture::new(5, 5);
    f.wqe(head(WrOpcode::Send, 5000, 4, 8, WqeState::Processing));
    f.comp.timer_fired();
    let o = f.run();
    assert!(!f.req.need_retry && !o.again && o.progress);
    assert_eq!(f.comp.retry_cnt, 2);
    // A timeout with only a posted WQE does nothing.
    let mut f = Fixture::new(5, 5);
    f.wqe(head(WrOpcode::Send, 8, 0, 0, WqeState::Posted));
    f.comp.timer_fired();
    assert_eq!(f.run(), Outcome::default());
    assert_eq!(f.comp.retry_cnt, 3);
    // retry_cnt 7 also never runs out in rxe.
    let mut f = Fixture::new(0, 1);
    f.comp.set_retry_cnt(7);
    f.wqe(head(WrOpcode::Send, 8, 0, 0, WqeState::Pending));
    for _ in 0..20 {
        f.comp.timer_fired();
        f.run();
        f.req.need_retry = false;
    }
    assert_eq!(f.comp.retry_cnt, 7);
}

#[test]
fn lost_read_response_triggers_retry() {
    // An ACK past a pending read means its responses were lost.
    let mut f = Fixture::new(0, 2);
    f.wqe(head(WrOpcode::RdmaRead, 10, 0, 0, WqeState::Pending))
        .wqe(head(WrOpcode::Send, 8, 1, 1, WqeState::Pending))
        .resp(ack(1), 0);
    let o = f.run();
    assert!(o.progress && f.req.need_retry && f.sq.retired.is_empty());
    // A response ahead of comp.psn for a read is dropped.
    let mut f = Fixture::new(0, 3);
    f.wqe(head(WrOpcode::RdmaRead, 3000, 0, 2, WqeState::Pending))
        .resp(rsp(Opcode::RcReadResponseMiddle, 1), 1024);
    f.run();
    assert_eq!((f.comp.psn, f.sq.wqes[0].progress.resid), (0, 3000));
}

#[test]
fn responses_beyond_a_gap_retry_before_the_timer() {
    // A read of 5 packets (PSNs 0..=4) whose first response is lost: the
    // third response beyond the gap starts a retry from PSN 0 at once.
    let mut f = Fixture::new(0, 5);
    f.wqe(head(WrOpcode::RdmaRead, 5000, 0, 4, WqeState::Pending));
    for psn in 1..=2 {
        f.resp(rsp(Opcode::RcReadResponseMiddle, psn), 1024);
        f.run();
        assert!(
            !f.req.need_retry,
            "retry after {psn} response(s) beyond the gap"
        );
    }
    f.resp(rsp(Opcode::RcReadResponseMiddle, 3), 1024);
    let o = f.run();
    assert!(o.progress && f.req.need_retry && f.comp.started_retry);
    assert_eq!(f.sq.events, [Event::Retry, Event::GapRetry]);
    assert_eq!(
        (f.comp.psn, f.comp.retry_cnt, f.comp.gap_responses),
        (0, 2, 0)
    );
    assert_eq!(f.sq.wqes[0].progress.resid, 5000);
    // The rest of the old responses start nothing while the retry runs.
    f.req.need_retry = false;
    f.resp(rsp(Opcode::RcReadResponseLast, 4), 1024);
    for _ in 0..3 {
        f.resp(rsp(Opcode::RcReadResponseMiddle, 3), 1024);
    }
    f.drain();
    assert!(!f.req.need_retry && f.sq.events.len() == 2);
    // The retry's responses complete the read and reset the counters.
    f.resp(rsp(Opcode::RcReadResponseFirst, 0), 1024);
    for psn in 1..=3 {
        f.resp(rsp(Opcode::RcReadResponseMiddle, psn), 1024);
    }
    f.resp(rsp(Opcode::RcReadResponseLast, 4), 904);
    f.drain();
    assert_eq!(f.retired(), [WcStatus::Success]);
    assert_eq!(
        (f.comp.psn, f.comp.retry_cnt, f.comp.started_retry),
        (5, 3, false)
    );
}

#[test]
fn progress_between_gap_responses_starts_over() {
    // Two responses beyond a gap, then the late one (progress), then two
    // beyond the next gap: never three without progress, no retry.
    let mut f = Fixture::new(0, 8);
    f.wqe(head(WrOpcode::RdmaRead, 8192, 0, 7, WqeState::Pending));
    f.resp(rsp(Opcode::RcReadResponseMiddle, 2), 1024)
        .resp(rsp(Opcode::RcReadResponseMiddle, 3), 1024)
        .resp(rsp(Opcode::RcReadResponseFirst, 0), 1024)
        .resp(rsp(Opcode::RcReadResponseMiddle, 5), 1024)
        .resp(rsp(Opcode::RcReadResponseMiddle, 6), 1024);
    f.drain();
    assert!(!f.req.need_retry && f.sq.events.is_empty());
    assert_eq!((f.comp.psn, f.comp.gap_responses), (1, 2));
}

#[test]
fn duplicate_of_the_last_packet_completes() {
    // A retried packet below comp.psn that ends the head WQE completes it.
    let mut f = Fixture::new(12, 13);
    f.wqe(head(WrOpcode::Send, 8, 11, 11, WqeState::Pending))
        .resp(ack(11), 0);
    f.run();
    assert_eq!(f.retired(), [WcStatus::Success]);
    assert_eq!(f.comp.psn, 12);
    // A NAK below comp.psn inside an unfinished read is still looked at.
    let mut f = Fixture::new(2, 4);
    f.comp.opcode = Some(Opcode::RcReadResponseMiddle);
    f.wqe(head(WrOpcode::RdmaRead, 4000, 0, 3, WqeState::Pending))
        .resp(nak(1, Syndrome::Nak(NakCode::RemoteAccessError)), 0);
    assert!(f.run().qp_error);
    assert_eq!(f.retired(), [WcStatus::RemAccessErr]);
}

#[test]
fn old_ack_does_not_retire_a_head_being_resent() {
    // A retry rewound the head (PSNs 10..=13) and resent 10..=12; the
    // original ACK of 13 moved comp.psn to 14. A duplicate ACK of 13 must
    // leave the head to the requester, which still has packet 13 to send.
    let mut f = Fixture::new(14, 13);
    f.wqe(head(WrOpcode::Send, 4096, 10, 13, WqeState::Processing))
        .resp(ack(13), 0);
    f.run();
    assert!(f.retired().is_empty());
    assert_eq!(f.comp.psn, 14);
    // Once the resend is whole the head completes without another ACK.
    f.sq.wqes[0].progress.state = WqeState::Pending;
    f.run();
    assert_eq!(f.retired(), [WcStatus::Success]);
}

#[test]
fn heads_without_packets() {
    // Done WQEs (UC/UD sends, local ops) retire without any response.
    let mut f = Fixture::new(0, 0);
    f.wqe(head(WrOpcode::Send, 8, 0, 0, WqeState::Done))
        .wqe(head(WrOpcode::LocalInv, 0, 0, 0, WqeState::Done))
        .wqe(head(WrOpcode::Send, 8, 0, 0, WqeState::Posted));
    f.req.wait_fence = true;
    let o = f.run();
    assert_eq!(f.retired().len(), 2);
    assert!(o.again && !f.req.wait_fence && !o.progress);
    // A response with no started WQE is consumed and dropped.
    f.resp(ack(0), 0);
    assert!(f.run().progress);
    assert_eq!(f.sq.responses.len(), 0);
    let mut f = Fixture::new(0, 0);
    f.resp(ack(0), 0);
    assert!(f.run().progress);
    // A WQE the requester failed retires with its own status.
    let mut f = Fixture::new(0, 0);
    let mut h = head(WrOpcode::Send, 8, 0, 0, WqeState::Error);
    h.progress.status = WcStatus::LocQpOpErr;
    f.wqe(h);
    assert!(f.run().qp_error);
    assert_eq!(f.retired(), [WcStatus::LocQpOpErr]);
}

#[test]
fn fully_acknowledged_heads_retire_without_a_response() {
    // An ACK for the last PSN came while a retry was resending the tail; once
    // the tail is out the WQE retires at the next run, before any timeout.
    let mut f = Fixture::new(PSN_MASK - 4, PSN_MASK + 1);
    f.wqe(head(
        WrOpcode::RdmaWrite,
        5 * 1024,
        PSN_MASK - 4,
        PSN_MASK,
        WqeState::Processing,
    ))
    .wqe(head(WrOpcode::Send, 8, 0, 0, WqeState::Posted))
    .resp(ack(PSN_MASK), 0);
    f.run();
    assert!(f.sq.retired.is_empty());
    assert_eq!(f.comp.psn, 0);
    f.sq.wqes[0].progress.state = WqeState::Pending;
    f.comp.timer_fired();
    let o = f.run();
    assert_eq!(f.retired(), [WcStatus::Success]);
    assert!(!f.req.need_retry && !o.qp_error);
    // Reads and atomics are never retired that way: they need their data.
    let mut f = Fixture::new(5, 6);
    f.wqe(head(
        WrOpcode::AtomicFetchAndAdd,
        8,
        4,
        4,
        WqeState::Pending,
    ));
    f.run();
    assert!(f.sq.retired.is_empty());
}

/// The probe timer resends from the oldest unacknowledged PSN without
/// using up a retry, once per stall: not while a retry is under way, not
/// with nothing outstanding, not when a response came.
#[test]
fn probe_resends_without_using_a_retry() {
    let mut f = Fixture::new(PSN_MASK, 1);
    f.wqe(head(WrOpcode::Send, 8, PSN_MASK, 0, WqeState::Pending));
    f.comp.probe_fired();
    let o = f.run();
    assert!(o.progress && o.again && f.req.need_retry && !o.rearm_retransmit);
    assert_eq!(f.comp.retry_cnt, 3);
    assert_eq!(f.sq.events, [Event::ProbeRetry]);
    f.req.need_retry = false;
    // A second probe in the same stall does nothing, and leaves the rest
    // of the timeout as it runs (re-armed, it would never expire); the
    // timeout retries, and counts.
    f.comp.probe_fired();
    let o = f.run();
    assert!(!f.req.need_retry && !o.rearm_retransmit && !o.progress);
    f.comp.timer_fired();
    f.run();
    assert!(f.req.need_retry);
    assert_eq!(f.comp.retry_cnt, 2);
    assert_eq!(f.sq.events, [Event::ProbeRetry, Event::Retry]);
    // A response in the same run: no probe.
    let mut f = Fixture::new(0, 2);
    f.wqe(head(WrOpcode::Send, 8, 0, 0, WqeState::Pending))
        .wqe(head(WrOpcode::Send, 8, 1, 1, WqeState::Pending))
        .resp(ack(0), 0);
    f.comp.probe_fired();
    f.run();
    assert!(!f.req.need_retry);
    assert_eq!(f.retired(), [WcStatus::Success]);
    // Everything acknowledged: nothing to resend.
    let mut f = Fixture::new(5, 5);
    f.wqe(head(WrOpcode::Send, 8, 4, 4, WqeState::Pending));
    f.comp.probe_fired();
    f.run();
    assert!(!f.req.need_retry && f.sq.events.is_empty());
}
