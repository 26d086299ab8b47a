// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Tests of the completer state machine with a model send queue.

use super::*;
use crate::proto::opcode::ALL;
use crate::proto::psn::{psn_sub, PSN_MASK};
use crate::proto::qp;
use crate::proto::test_rng::Rng;
use std::collections::VecDeque;
use std::vec;
use std::vec::Vec;

/// A send queue in memory; responses carry their payload length.
#[derive(Default)]
struct Model {
    wqes: VecDeque<Head>,
    responses: VecDeque<(Response, u32)>,
    current: Option<(Response, u32)>,
    retired: Vec<(WrOpcode, WcStatus)>,
    fault: bool,
    /// The scatter fails for an absent ODP page while this is set.
    absent: bool,
    events: Vec<Event>,
}

impl Sq for Model {
    fn next_response(&mut self) -> Option<Response> {
        self.current = self.responses.pop_front();
        self.current.map(|(r, _)| r)
    }

    fn head(&mut self) -> Option<Head> {
        self.wqes.front().copied()
    }

    fn read_data(&mut self) -> Result<u32, CopyFault> {
        let len = self.current.map_or(0, |(_, n)| n);
        let h = self.wqes.front_mut().ok_or(CopyFault)?;
        if self.fault || self.absent || len > h.progress.resid {
            return Err(CopyFault);
        }
        h.progress.resid -= len;
        Ok(h.progress.resid)
    }

    fn atomic_data(&mut self) -> Result<(), CopyFault> {
        if self.fault {
            Err(CopyFault)
        } else {
            Ok(())
        }
    }

    fn retire(&mut self, status: WcStatus) {
        let h = self.wqes.pop_front().expect("retire without a head");
        self.retired.push((h.info.opcode, status));
    }

    fn count(&mut self, ev: Event) {
        self.events.push(ev);
    }

    fn absent(&self) -> bool {
        self.absent
    }
}

fn ack(psn: u32) -> Response {
    Response {
        opcode: Opcode::RcAck,
        psn,
        syndrome: Syndrome::ACK_UNLIMITED.encode(),
    }
}

fn nak(psn: u32, syndrome: Syndrome) -> Response {
    Response {
        opcode: Opcode::RcAck,
        psn,
        syndrome: syndrome.encode(),
    }
}

fn rsp(opcode: Opcode, psn: u32) -> Response {
    Response {
        opcode,
        psn,
        syndrome: 0x1f,
    }
}

fn head(wr: WrOpcode, len: u32, first: u32, last: u32, state: WqeState) -> Head {
    let info = WqeInfo::new(wr, qp::Type::Rc, SendFlags(0), len, 0);
    let mut progress = Progress::posted(len, 0);
    progress.state = state;
    progress.first_psn = first;
    progress.last_psn = last;
    progress.has_rd_atomic =
        info.mask.intersects(WrMask::ATOMIC_OR_READ) || wr == WrOpcode::AtomicWrite;
    if wr == WrOpcode::Flush {
        progress.resid = 0;
    }
    Head { info, progress }
}

struct Fixture {
    comp: State,
    req: req_rules::State,
    sq: Model,
}

impl Fixture {
    fn new(comp_psn: u32, req_psn: u32) -> Fixture {
        let mut req = req_rules::State::new(req_psn, 4);
        req.rd_atomic = 2;
        Fixture {
            comp: State::new(comp_psn, 3, 2),
            req,
            sq: Model::default(),
        }
    }

    fn wqe(&mut self, h: Head) -> &mut Self {
        self.sq.wqes.push_back(h);
        self
    }

    fn resp(&mut self, r: Response, payload: u32) -> &mut Self {
        self.sq.responses.push_back((r, payload));
        self
    }

    fn run(&mut self) -> Outcome {
        run(&mut self.comp, &mut self.req, &mut self.sq)
    }

    /// Runs until the completer reports no more progress.
    fn drain(&mut self) -> Outcome {
        for _ in 0..1000 {
            let o = self.run();
            if !o.progress {
                return o;
            }
        }
        panic!("completer never settles");
    }

    fn retired(&self) -> Vec<WcStatus> {
        self.sq.retired.iter().map(|r| r.1).collect()
    }
}

#[test]
fn ack_completes_send() {
    let mut f = Fixture::new(10, 11);
    f.wqe(head(WrOpcode::Send, 8, 10, 10, WqeState::Pending))
        .resp(ack(10), 0);
    let o = f.run();
    assert!(o.progress && !o.qp_error);
    assert_eq!(f.retired(), [WcStatus::Success]);
    assert_eq!(f.comp.psn, 11);
    assert_eq!(f.comp.opcode, None);
    // No response, nothing left: exit, nothing outstanding.
    let o = f.run();
    assert_eq!(o, Outcome::default());
}

#[test]
fn ack_implicitly_completes_earlier_sends() {
    let mut f = Fixture::new(PSN_MASK - 1, 2);
    f.wqe(head(
        WrOpcode::Send,
        8,
        PSN_MASK - 1,
        PSN_MASK - 1,
        WqeState::Pending,
    ))
    .wqe(head(
        WrOpcode::RdmaWrite,
        8,
        PSN_MASK,
        PSN_MASK,
        WqeState::Pending,
    ))
    .wqe(head(WrOpcode::SendWithImm, 3000, 0, 2, WqeState::Pending))
    .wqe(head(WrOpcode::Send, 8, 3, 3, WqeState::Processing))
    .resp(ack(1), 0);
    f.req.wait_psn = true;
    let o = f.run();
    assert_eq!(f.retired(), [WcStatus::Success, WcStatus::Success]);
    // The third WQE is acked up to PSN 1 only.
    assert_eq!(f.sq.wqes.len(), 2);
    assert_eq!(f.comp.psn, 2);
    assert!(o.again && !f.req.wait_psn);
    f.resp(ack(2), 0);
    f.run();
    assert_eq!(f.retired().len(), 3);
    assert_eq!(f.comp.psn, 3);
}

#[test]
fn coalesced_ack_inside_a_message_only_moves_the_psn() {
    let mut f = Fixture::new(100, 200);
    f.wqe(head(
        WrOpcode::RdmaWrite,
        100 * 256,
        100,
        199,
        WqeState::Processing,
    ))
    .resp(ack(165), 0);
    let o = f.run();
    assert!(o.progress);
    assert!(f.sq.retired.is_empty());
    assert_eq!(f.comp.psn, 166);
    // A stale duplicate ACK is dropped without effect.
    f.resp(ack(150), 0);
    let o = f.run();
    assert!(o.progress);
    assert_eq!(f.comp.psn, 166);
}

#[test]
fn read_responses_in_sequence() {
    let mut f = Fixture::new(0, 3);
    f.wqe(head(WrOpcode::RdmaRead, 2500, 0, 2, WqeState::Pending));
    f.req.need_rd_atomic = true;
    f.resp(rsp(Opcode::RcReadResponseFirst, 0), 1024);
    f.run();
    assert_eq!(
        (f.comp.psn, f.comp.opcode),
        (1, Some(Opcode::RcReadResponseFirst))
    );
    f.resp(rsp(Opcode::RcReadResponseMiddle, 1), 1024);
    f.run();
    assert_eq!(
        (f.comp.psn, f.comp.opcode),
        (2, Some(Opcode::RcReadResponseMiddle))
    );
    assert_eq!(f.sq.wqes[0].progress.resid, 452);
    f.resp(rsp(Opcode::RcReadResponseLast, 2), 452);
    let o = f.run();
    assert_eq!(f.retired(), [WcStatus::Success]);
    assert_eq!((f.comp.psn, f.comp.opcode), (3, None));
    // The credit came back and woke the requester.
    assert_eq!(f.req.rd_atomic, 3);
    assert!(o.again && !f.req.need_rd_atomic);
}

#[test]
fn read_response_into_an_absent_odp_page_retries() {
    let mut f = Fixture::new(0, 3);
    f.wqe(head(WrOpcode::RdmaRead, 2500, 0, 2, WqeState::Pending));
    f.resp(rsp(Opcode::RcReadResponseFirst, 0), 1024);
    f.run();
    // The middle response meets an absent page: dropped as if lost, and the
    // requester resends the read from the completer's PSN.
    f.sq.absent = true;
    f.resp(rsp(Opcode::RcReadResponseMiddle, 1), 1024);
    let o = f.run();
    assert!(o.again && f.req.need_retry);
    assert_eq!((f.comp.psn, f.sq.wqes[0].progress.resid), (1, 1476));
    assert!(f.retired().is_empty());
    // Faulted in: the requester resends the rest of the read from PSN 1
    // (its responses start over there), which completes it.
    f.sq.absent = false;
    f.req.need_retry = false;
    f.sq.wqes[0].progress.first_psn = 1;
    f.resp(rsp(Opcode::RcReadResponseFirst, 1), 1024);
    f.resp(rsp(Opcode::RcReadResponseLast, 2), 452);
    f.drain();
    assert_eq!(f.retired(), [WcStatus::Success]);
}

#[test]
fn read_only_response_and_zero_length() {
    let mut f = Fixture::new(7, 9);
    f.wqe(head(WrOpcode::RdmaRead, 0, 7, 7, WqeState::Pending))
        .wqe(head(WrOpcode::RdmaRead, 100, 8, 8, WqeState::Pending))
        .resp(rsp(Opcode::RcReadResponseOnly, 7), 0)
        .resp(rsp(Opcode::RcReadResponseOnly, 8), 100);
    f.drain();
    assert_eq!(f.retired(), [WcStatus::Success, WcStatus::Success]);
    assert_eq!(f.comp.psn, 9);
}

#[test]
fn read_short_at_its_last_psn_fails() {
    // Found by fuzz_tests: a read's last response that leaves part of the
    // buffer unfilled moved comp.psn past the read, and a duplicate of it
    // then completed the read successfully without its data.
    let mut f = Fixture::new(8, 9);
    f.wqe(head(WrOpcode::RdmaRead, 100, 8, 8, WqeState::Pending))
        .resp(rsp(Opcode::RcReadResponseOnly, 8), 60)
        .resp(rsp(Opcode::RcReadResponseOnly, 8), 60);
    let o = f.drain();
    assert_eq!(f.retired(), [WcStatus::BadRespErr]);
    assert!(o.qp_error);

    // Same with a MIDDLE at the last PSN.
    let mut f = Fixture::new(0, 3);
    f.wqe(head(WrOpcode::RdmaRead, 2500, 0, 2, WqeState::Pending))
        .resp(rsp(Opcode::RcReadResponseFirst, 0), 1024)
        .resp(rsp(Opcode::RcReadResponseMiddle, 1), 1024)
        .resp(rsp(Opcode::RcReadResponseMiddle, 2), 100)
        .resp(rsp(Opcode::RcReadResponseLast, 2), 100);
    let o = f.drain();
    assert_eq!(f.retired(), [WcStatus::BadRespErr]);
    assert!(o.qp_error);

    // A MIDDLE at the last PSN that fills the buffer is only early; an
    // empty LAST then completes the read.
    let mut f = Fixture::new(0, 2);
    f.wqe(head(WrOpcode::RdmaRead, 2048, 0, 1, WqeState::Pending))
        .resp(rsp(Opcode::RcReadResponseFirst, 0), 1024)
        .resp(rsp(Opcode::RcReadResponseMiddle, 1), 1024)
        .resp(rsp(Opcode::RcReadResponseLast, 1), 0);
    f.drain();
    assert_eq!(f.retired(), [WcStatus::Success]);
}

#[test]
fn broken_read_sequences_fail_the_wqe() {
    use Opcode::*;
    // (comp.opcode before, response opcode, response psn, status)
    let cases = [
        (None, RcReadResponseMiddle, 0, BAD_RESPONSE),
        (None, RcReadResponseLast, 0, BAD_RESPONSE),
        (
            Some(RcReadResponseFirst),
            RcReadResponseOnly,
            1,
            BAD_RESPONSE,
        ),
        (
            Some(RcReadResponseMiddle),
            RcReadResponseFirst,
            1,
            BAD_RESPONSE,
        ),
        (Some(RcReadResponseMiddle), RcAtomicAck, 1, BAD_RESPONSE),
    ];
    for (prev, op, psn, status) in cases {
        let mut f = Fixture::new(psn, 3);
        f.comp.opcode = prev;
        f.wqe(head(WrOpcode::RdmaRead, 3000, 0, 2, WqeState::Pending))
            .resp(rsp(op, psn), 1024);
        let o = f.run();
        assert!(o.qp_error, "{prev:?} {op:?}");
        assert_eq!(f.retired(), [status]);
    }
    // A retried read may restart with FIRST at its first PSN, or ONLY
    // (with all that is left of it).
    for (first, last, len, op) in [
        (1, 3, 3000, RcReadResponseFirst),
        (1, 1, 1024, RcReadResponseOnly),
    ] {
        let mut f = Fixture::new(1, 4);
        f.comp.opcode = Some(RcReadResponseMiddle);
        f.wqe(head(
            WrOpcode::RdmaRead,
            len,
            first,
            last,
            WqeState::Pending,
        ))
        .resp(rsp(op, 1), 1024);
        let o = f.run();
        assert!(!o.qp_error, "{op:?}");
    }
    // A bad syndrome on a response that carries an AETH.
    let mut f = Fixture::new(0, 1);
    f.wqe(head(WrOpcode::RdmaRead, 10, 0, 0, WqeState::Pending));
    f.resp(
        Response {
            opcode: RcReadResponseOnly,
            psn: 0,
            syndrome: 0x61,
        },
        10,
    );
    assert!(f.run().qp_error);
    assert_eq!(f.retired(), [BAD_RESPONSE]);
    // A read response for a send.
    let mut f = Fixture::new(0, 1);
    f.wqe(head(WrOpcode::Send, 10, 0, 0, WqeState::Pending))
        .resp(rsp(RcReadResponseOnly, 0), 10);
    assert!(f.run().qp_error);
    assert_eq!(f.retired(), [WcStatus::FatalErr]);
    // More data than the WQE expects, or a bad local key.
    let mut f = Fixture::new(0, 1);
    f.wqe(head(WrOpcode::RdmaRead, 10, 0, 0, WqeState::Pending))
        .resp(rsp(RcReadResponseOnly, 0), 11);
    assert!(f.run().qp_error);
    assert_eq!(f.retired(), [WcStatus::LocProtErr]);
}

#[test]
fn atomics_flush_and_atomic_write() {
    let mut f = Fixture::new(0, 3);
    f.wqe(head(
        WrOpcode::AtomicFetchAndAdd,
        8,
        0,
        0,
        WqeState::Pending,
    ))
    .wqe(head(WrOpcode::AtomicWrite, 8, 1, 1, WqeState::Pending))
    .wqe(head(WrOpcode::Flush, 4096, 2, 2, WqeState::Pending))
    .resp(
        Response {
            opcode: Opcode::RcAtomicAck,
            psn: 0,
            syndrome: 0x1f,
        },
        0,
    )
    .resp(rsp(Opcode::RcReadResponseOnly, 1), 0)
    .resp(rsp(Opcode::RcReadResponseOnly, 2), 0);
    f.drain();
    assert_eq!(f.retired(), [WcStatus::Success; 3]);
    assert_eq!(f.comp.psn, 3);
    assert_eq!(f.req.rd_atomic, 4);
    // An atomic ACK for the wrong WQE, or with a NAK syndrome.
    for (wr, syn) in [
        (WrOpcode::RdmaRead, 0x1f),
        (WrOpcode::AtomicCmpAndSwp, 0x20),
    ] {
        let mut f = Fixture::new(0, 1);
        f.wqe(head(wr, 8, 0, 0, WqeState::Pending));
        f.resp(
            Response {
                opcode: Opcode::RcAtomicAck,
                psn: 0,
                syndrome: syn,
            },
            0,
        );
        assert!(f.run().qp_error);
        assert_eq!(f.retired(), [BAD_RESPONSE]);
    }
    let mut f = Fixture::new(0, 1);
    f.sq.fault = true;
    f.wqe(head(WrOpcode::AtomicCmpAndSwp, 8, 0, 0, WqeState::Pending));
    f.resp(
        Response {
            opcode: Opcode::RcAtomicAck,
            psn: 0,
            syndrome: 0x1f,
        },
        0,
    );
    assert!(f.run().qp_error);
    assert_eq!(f.retired(), [WcStatus::LocProtErr]);
}

#[test]
fn naks_map_to_statuses() {
    let cases = [
        (0x61, WcStatus::RemInvReqErr),
        (0x62, WcStatus::RemAccessErr),
        (0x63, WcStatus::RemOpErr),
        (0x64, WcStatus::RemOpErr),
        (0x7f, WcStatus::RemOpErr),
        (0x40, BAD_RESPONSE),
        (0x80, BAD_RESPONSE),
        (0xe0, BAD_RESPONSE),
    ];
    for (syn, status) in cases {
        let mut f = Fixture::new(5, 6);
        f.wqe(head(WrOpcode::Send, 8, 5, 5, WqeState::Pending))
            .wqe(head(WrOpcode::Send, 8, 6, 6, WqeState::Posted));
        f.resp(
            Response {
                opcode: Opcode::RcAck,
                psn: 5,
                syndrome: syn,
            },
            0,
        );
        let o = f.run();
        assert!(o.qp_error, "{syn:#x}");
        // Only the head fails; the engine flushes the rest once in ERR.
        assert_eq!(f.retired(), [status], "{syn:#x}");
    }
}

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

#[test]
fn state_setters() {
    let mut c = State::new(0x0123_4567, 5, 6);
    assert_eq!(c.psn, 0x23_4567);
    c.set_sq_psn(PSN_MASK + 3);
    assert_eq!(c.psn, 2);
    c.set_retry_cnt(1);
    c.set_rnr_retry(7);
    assert_eq!(
        (c.retry_cnt, c.attr_retry_cnt, c.rnr_retry, c.attr_rnr_retry),
        (1, 1, 7, 7)
    );
    c.opcode = Some(Opcode::RcReadResponseFirst);
    c.started_retry = true;
    c.timer_fired();
    c.reset();
    assert_eq!(
        c,
        State {
            psn: 2,
            ..State::new(0, 1, 7)
        }
    );
}

#[test]
fn send_completions() {
    let all = [
        (WrOpcode::RdmaWrite, WcOpcode::RdmaWrite, 0),
        (
            WrOpcode::RdmaWriteWithImm,
            WcOpcode::RdmaWrite,
            wc_flags::WITH_IMM,
        ),
        (WrOpcode::Send, WcOpcode::Send, 0),
        (WrOpcode::SendWithImm, WcOpcode::Send, wc_flags::WITH_IMM),
        (WrOpcode::SendWithInv, WcOpcode::Send, 0),
        (WrOpcode::RdmaRead, WcOpcode::RdmaRead, 0),
        (WrOpcode::AtomicCmpAndSwp, WcOpcode::CompSwap, 0),
        (WrOpcode::AtomicFetchAndAdd, WcOpcode::FetchAdd, 0),
        (WrOpcode::LocalInv, WcOpcode::LocalInv, 0),
        (WrOpcode::BindMw, WcOpcode::BindMw, 0),
        (WrOpcode::RegMr, WcOpcode::RegMr, 0),
        (WrOpcode::Flush, WcOpcode::Flush, 0),
        (WrOpcode::AtomicWrite, WcOpcode::AtomicWrite, 0),
    ];
    for (wr, op, flags) in all {
        let info = WqeInfo::new(wr, qp::Type::Rc, SendFlags(0), 1234, 0);
        assert_eq!(
            send_cqe(&info, WcStatus::Success),
            SendCqe {
                opcode: op,
                wc_flags: flags,
                byte_len: 1234
            }
        );
        assert_eq!(
            send_cqe(&info, FLUSH_STATUS),
            SendCqe {
                opcode: WcOpcode::Send,
                wc_flags: 0,
                byte_len: 0
            }
        );
    }
    let sig = SendFlags(SendFlags::SIGNALED);
    assert!(must_post(true, SendFlags(0), WcStatus::Success));
    assert!(must_post(false, sig, WcStatus::Success));
    assert!(!must_post(
        false,
        SendFlags(SendFlags::FENCE),
        WcStatus::Success
    ));
    assert!(must_post(false, SendFlags(0), WcStatus::RetryExcErr));
    assert!(must_post(false, SendFlags(0), FLUSH_STATUS));
}

#[test]
fn fuzz_never_panics_and_keeps_invariants() {
    let mut rng = Rng::new(0xc0ffee);
    let wrs = [
        WrOpcode::Send,
        WrOpcode::SendWithImm,
        WrOpcode::RdmaWrite,
        WrOpcode::RdmaRead,
        WrOpcode::AtomicCmpAndSwp,
        WrOpcode::AtomicFetchAndAdd,
        WrOpcode::AtomicWrite,
        WrOpcode::Flush,
        WrOpcode::LocalInv,
    ];
    let states = [
        WqeState::Posted,
        WqeState::Processing,
        WqeState::Pending,
        WqeState::Done,
        WqeState::Error,
    ];
    let acks: Vec<Opcode> = ALL.iter().copied().filter(|o| o.has(Mask::ACK)).collect();
    let mut errors = 0;
    for _ in 0..100_000 {
        let base = rng.u32() & PSN_MASK;
        let mut f = Fixture::new(base, psn_add(base, rng.below(300)));
        f.comp.opcode = rng.pick(&[
            None,
            Some(Opcode::RcReadResponseFirst),
            Some(Opcode::RcReadResponseMiddle),
        ]);
        f.comp.retry_cnt = rng.below(8) as u8;
        f.comp.rnr_retry = rng.below(8) as u8;
        f.comp.started_retry = rng.bool();
        f.comp.timeout = rng.bool();
        f.req.need_retry = rng.chance(10);
        f.req.need_rd_atomic = rng.bool();
        f.sq.fault = rng.chance(5);
        let mut psn = psn_sub(base, rng.below(3));
        for _ in 0..rng.below(5) {
            let len = rng.below(5000);
            let n = rng.below(6);
            let mut h = head(rng.pick(&wrs), len, psn, psn_add(psn, n), rng.pick(&states));
            h.progress.resid = rng.below(len + 1);
            h.progress.status = WcStatus::LocQpOpErr;
            f.wqe(h);
            psn = psn_add(psn, n + 1);
        }
        for _ in 0..rng.below(4) {
            let r = Response {
                opcode: rng.pick(&acks),
                psn: psn_add(base, rng.below(40)).wrapping_sub(20) & PSN_MASK,
                syndrome: rng.u32() as u8,
            };
            f.resp(r, rng.below(2000));
        }
        let total = f.sq.wqes.len();
        let credits = f.req.rd_atomic;
        let mut runs = 0;
        loop {
            let o = f.run();
            runs += 1;
            assert!(f.comp.psn <= PSN_MASK);
            if o.qp_error {
                errors += 1;
                let last = f.sq.retired.last().expect("an error retires a WQE");
                assert_ne!(last.1, WcStatus::Success);
                break;
            }
            if let Some(t) = o.rnr_timer {
                assert!(t < 32 && f.req.wait_for_rnr_timer);
            }
            if !o.progress || runs > 20 {
                break;
            }
            f.req.need_retry = false;
        }
        assert!(f.sq.retired.len() <= total);
        // Credits only come back for WQEs that held one.
        let held = f.sq.retired.len() as u32;
        assert!(f.req.rd_atomic <= credits + held);
    }
    assert!(errors > 1000, "{errors}");
}
