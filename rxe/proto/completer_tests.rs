// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Tests of the completer state machine with a model send queue.
//!
//! Here: the model send queue, the response and WQE builders, and the
//! tests of ACKs, read responses, atomics and NAK statuses. Recovery is in
//! `retry.rs`; state setters, completions and the random run in
//! `completions.rs`.

use super::*;
use crate::proto::opcode::ALL;
use crate::proto::psn::{psn_sub, PSN_MASK};
use crate::proto::qp;
use crate::proto::testing::rng::Rng;
use std::collections::VecDeque;
use std::vec;
use std::vec::Vec;

#[path = "completer_tests/completions.rs"]
mod completions;
#[path = "completer_tests/retry.rs"]
mod retry;

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
    req: requester::State,
    sq: Model,
}

impl Fixture {
    fn new(comp_psn: u32, req_psn: u32) -> Fixture {
        let mut req = requester::State::new(req_psn, 4);
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
