// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Tests of header prediction: what [`predict`] takes and refuses, and that
//! `responder::machine::run` with prediction gives exactly what the state machine
//! alone gives, for in-order messages and for every kind of deviation.

use super::*;
use crate::proto::headers::Reth;
use crate::proto::mr::Access;
use crate::proto::opcode::Mask;
use crate::proto::responder::machine::tests::rq;
use crate::proto::responder::machine::{run, run_slow, Io, Outcome};
use crate::proto::testing::model::RespModel;
use crate::proto::testing::rng::Rng;
use std::vec::Vec;
use std::{format, vec};

const MTU: u32 = 1024;
const RKEY: u32 = 0x77;
const BASE: u64 = 0x4000;
const MR_LEN: usize = 16 * 1024;

fn rc_qp() -> RespQp {
    RespQp {
        qp_type: qp::Type::Rc,
        mtu: MTU,
        access: access::REMOTE_WRITE | access::REMOTE_READ,
        srq: false,
        min_rnr_timer: 3,
    }
}

/// The responder state right after the FIRST packet (PSN 10) of a message.
fn after_first(first: Opcode, write_len: u32) -> State {
    let mut st = State::new(11, 4);
    st.msn = 5;
    st.opcode = Some(first);
    if first == Opcode::RcWriteFirst {
        st.va = BASE + u64::from(MTU);
        st.rkey = RKEY;
        st.length = write_len;
        st.resid = write_len - MTU;
    }
    st
}

const HELD: Ctx = Ctx {
    wqe_held: true,
    status_moved: false,
};

#[test]
fn predicts_in_order_middle_and_last() {
    let qp = rc_qp();
    let st = after_first(Opcode::RcSendFirst, 0);
    assert_eq!(
        predict(&st, &qp, &rq(Opcode::RcSendMiddle, 11, MTU), HELD),
        Some(Fast::Send)
    );
    for len in [1, 3, 500, MTU] {
        assert_eq!(
            predict(&st, &qp, &rq(Opcode::RcSendLast, 11, len), HELD),
            Some(Fast::Send)
        );
    }
    let mut st = after_first(Opcode::RcSendMiddle, 0);
    st.psn = 0xff_ffff;
    assert_eq!(
        predict(&st, &qp, &rq(Opcode::RcSendMiddle, 0xff_ffff, MTU), HELD),
        Some(Fast::Send)
    );
    // A SEND ONLY between messages, whatever came before.
    for prev in [
        None,
        Some(Opcode::RcSendLast),
        Some(Opcode::RcWriteOnly),
        Some(Opcode::RcReadRequest),
        Some(Opcode::RcSendOnlyImm),
    ] {
        let mut st = State::new(11, 4);
        st.opcode = prev;
        for len in [0, 1, MTU] {
            assert_eq!(
                predict(&st, &qp, &rq(Opcode::RcSendOnly, 11, len), Ctx::default()),
                Some(Fast::SendOnly),
                "after {prev:?}"
            );
        }
    }
    // A write of 3 MTUs and 100 bytes, the first MTU done.
    let st = after_first(Opcode::RcWriteFirst, 3 * MTU + 100);
    let no_wqe = Ctx::default();
    assert_eq!(
        predict(&st, &qp, &rq(Opcode::RcWriteMiddle, 11, MTU), no_wqe),
        Some(Fast::Write)
    );
    let mut st = st;
    st.opcode = Some(Opcode::RcWriteMiddle);
    st.resid = 100;
    assert_eq!(
        predict(&st, &qp, &rq(Opcode::RcWriteLast, 11, 100), no_wqe),
        Some(Fast::Write)
    );
}

#[test]
fn refuses_every_deviation() {
    let qp = rc_qp();
    let send = after_first(Opcode::RcSendFirst, 0);
    let write = after_first(Opcode::RcWriteFirst, 3 * MTU + 100);
    let mid = rq(Opcode::RcSendMiddle, 11, MTU);
    let wmid = rq(Opcode::RcWriteMiddle, 11, MTU);
    assert!(predict(&send, &qp, &mid, HELD).is_some());
    assert!(predict(&write, &qp, &wmid, HELD).is_some());

    type Case = (
        &'static str,
        fn(&mut State, &mut RespQp, &mut Request, &mut Ctx),
    );
    let cases: &[Case] = &[
        ("PSN ahead", |_, _, p, _| p.psn = 12),
        ("duplicate", |_, _, p, _| p.psn = 10),
        ("far duplicate", |_, _, p, _| p.psn = 0xff_fff0),
        ("no message under way", |s, _, _, _| s.opcode = None),
        ("after a LAST", |s, _, _, _| {
            s.opcode = Some(Opcode::RcSendLast)
        }),
        ("after an ONLY", |s, _, _, _| {
            s.opcode = Some(Opcode::RcWriteOnly)
        }),
        ("FIRST again", |_, _, p, _| {
            *p = rq(Opcode::RcSendFirst, 11, MTU)
        }),
        ("ONLY inside a send", |_, _, p, _| {
            *p = rq(Opcode::RcSendOnly, 11, 8)
        }),
        ("ONLY inside a write", |s, _, p, _| {
            s.opcode = Some(Opcode::RcWriteMiddle);
            *p = rq(Opcode::RcSendOnly, 11, 8);
        }),
        ("too long ONLY", |s, _, p, _| {
            s.opcode = None;
            *p = rq(Opcode::RcSendOnly, 11, MTU + 1);
        }),
        ("ONLY with immediate", |s, _, p, _| {
            s.opcode = None;
            *p = rq(Opcode::RcSendOnlyImm, 11, 8);
            p.imm = Some(1);
        }),
        ("ONLY out of sequence", |s, _, p, _| {
            s.opcode = None;
            *p = rq(Opcode::RcSendOnly, 12, 8);
        }),
        ("ONLY on a UC QP", |s, q, p, _| {
            s.opcode = None;
            q.qp_type = qp::Type::Uc;
            *p = rq(Opcode::UcSendOnly, 11, 8);
        }),
        ("send in a write", |s, _, _, _| {
            s.opcode = Some(Opcode::RcWriteFirst)
        }),
        ("LAST with immediate", |_, _, p, _| {
            *p = rq(Opcode::RcSendLastImm, 11, 8);
            p.imm = Some(1);
        }),
        ("LAST with invalidate", |_, _, p, _| {
            *p = rq(Opcode::RcSendLastInv, 11, 8);
            p.invalidate = Some(RKEY);
        }),
        ("read request", |_, _, p, _| {
            *p = rq(Opcode::RcReadRequest, 11, 0);
            p.reth = Some(Reth {
                va: BASE,
                rkey: RKEY,
                len: 8,
            });
        }),
        ("UC opcode", |_, _, p, _| {
            *p = rq(Opcode::UcSendMiddle, 11, MTU)
        }),
        ("stray extension header", |_, _, p, _| {
            p.reth = Some(Reth::default())
        }),
        ("short MIDDLE", |_, _, p, _| p.payload = MTU - 4),
        ("long MIDDLE", |_, _, p, _| p.payload = MTU + 4),
        ("empty MIDDLE", |_, _, p, _| p.payload = 0),
        ("too long LAST", |_, _, p, _| {
            *p = rq(Opcode::RcSendLast, 11, MTU + 1)
        }),
        ("empty LAST", |_, _, p, _| {
            *p = rq(Opcode::RcSendLast, 11, 0)
        }),
        ("no receive WQE", |_, _, _, c| c.wqe_held = false),
        ("status changed", |_, _, _, c| c.status_moved = true),
        ("sequence NAK out", |s, _, _, _| s.sent_psn_nak = true),
        ("dropping", |s, _, _, _| s.drop_msg = true),
        ("reply under way", |s, _, _, _| s.cur = Some(0)),
        ("UC QP", |_, q, _, _| q.qp_type = qp::Type::Uc),
        ("UD QP", |_, q, _, _| q.qp_type = qp::Type::Ud),
    ];
    for (name, f) in cases {
        let (mut s, mut q, mut p, mut c) = (send.clone(), qp, mid, HELD);
        f(&mut s, &mut q, &mut p, &mut c);
        assert_eq!(predict(&s, &q, &p, c), None, "send: {name}");
    }

    let wcases: &[Case] = &[
        ("PSN ahead", |_, _, p, _| p.psn = 12),
        ("duplicate", |_, _, p, _| p.psn = 10),
        ("write in a send", |s, _, _, _| {
            s.opcode = Some(Opcode::RcSendMiddle)
        }),
        ("LAST with immediate", |s, _, p, _| {
            s.resid = 8;
            *p = rq(Opcode::RcWriteLastImm, 11, 8);
            p.imm = Some(1);
        }),
        ("short MIDDLE", |_, _, p, _| p.payload = 512),
        ("MIDDLE past the RETH length", |s, _, _, _| s.resid = 512),
        ("LAST shorter than what is left", |s, _, p, _| {
            s.resid = 600;
            *p = rq(Opcode::RcWriteLast, 11, 500);
        }),
        ("LAST longer than what is left", |s, _, p, _| {
            s.resid = 400;
            *p = rq(Opcode::RcWriteLast, 11, 500);
        }),
        ("LAST with the wrong pad", |s, _, p, _| {
            s.resid = 501;
            *p = rq(Opcode::RcWriteLast, 11, 501);
            p.pad = 0;
        }),
        ("MIDDLE with a pad", |_, _, p, _| p.pad = 1),
        ("no remote write right", |_, q, _, _| {
            q.access = access::REMOTE_READ
        }),
        ("status changed", |_, _, _, c| c.status_moved = true),
        ("reply under way", |s, _, _, _| s.cur = Some(1)),
    ];
    for (name, f) in wcases {
        let (mut s, mut q, mut p, mut c) = (write.clone(), qp, wmid, HELD);
        f(&mut s, &mut q, &mut p, &mut c);
        assert_eq!(predict(&s, &q, &p, c), None, "write: {name}");
    }
}

/// One responder and its engine model, run with or without prediction.
struct Side {
    st: State,
    qp: RespQp,
    io: RespModel,
    fast: bool,
    outcomes: Vec<Outcome>,
    /// Requests the predictor took.
    predicted: u32,
}

impl Side {
    fn new(fast: bool, coalesce: bool, rq: &[usize]) -> Side {
        Side::with_srq(fast, coalesce, rq, false)
    }

    fn with_srq(fast: bool, coalesce: bool, rq: &[usize], srq: bool) -> Side {
        let mut io = RespModel::default();
        io.mr(RKEY, BASE, MR_LEN, Access::REMOTE);
        io.rq.extend(rq.iter().copied());
        io.coalesce = coalesce;
        io.srq = srq;
        Side {
            st: State::new(100, 4),
            qp: RespQp { srq, ..rc_qp() },
            io,
            fast,
            outcomes: Vec::new(),
            predicted: 0,
        }
    }

    fn drain(&mut self) {
        for _ in 0..10_000 {
            let o = if self.fast {
                let ctx = Ctx {
                    wqe_held: self.io.has_recv(),
                    status_moved: self.io.status_moved,
                };
                if let Some(p) = self.io.reqs.front().map(|r| r.0) {
                    if predict(&self.st, &self.qp, &p, ctx).is_some() {
                        self.predicted += 1;
                    }
                }
                run(&mut self.st, &self.qp, &mut self.io)
            } else {
                run_slow(&mut self.st, &self.qp, &mut self.io)
            };
            self.outcomes.push(o);
            if o.qp_error || !o.progress {
                return;
            }
        }
        panic!("responder never settles");
    }

    /// Everything either side can be told apart by.
    fn observed(&self) -> std::string::String {
        let io = &self.io;
        let mrs: Vec<_> = io.mrs.iter().map(|(k, m)| (*k, m.data.clone())).collect();
        format!(
            "{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}",
            self.st,
            self.outcomes,
            io.out,
            io.cqes,
            io.events,
            io.rq,
            io.held.as_ref().map(|h| (h.cap, h.data.clone())),
            io.reqs.len(),
            io.lookups,
            io.held_mr,
            mrs,
        )
    }
}

/// What a test feeds both sides.
#[derive(Clone, Debug)]
enum Step {
    Pkt(Request, Vec<u8>),
    Drain,
    /// The region goes away (deregistered or invalidated).
    DropMr,
    CqFull(bool),
    InError,
    StatusMoved(bool),
    /// The next accesses find an ODP page absent.
    Absent(u32),
}

fn apply(s: &mut Side, step: &Step) {
    match step {
        Step::Pkt(r, p) => s.io.push(*r, p.clone()),
        Step::Drain => s.drain(),
        Step::DropMr => {
            s.io.mrs.remove(&RKEY);
        }
        Step::CqFull(b) => s.io.cq_full = *b,
        Step::InError => s.io.in_error = true,
        Step::StatusMoved(b) => s.io.status_moved = *b,
        Step::Absent(n) => s.io.absent = *n,
    }
}

/// The packets of one SEND or WRITE message of `len` bytes from `psn`,
/// written at `va` for a WRITE; AckReq on the last, and on every
/// `ack_every`-th packet when not 0.
fn message(write: bool, len: u32, psn: u32, va: u64, ack_every: u32, seed: u8) -> Vec<Step> {
    use Opcode::*;
    let n = len.div_ceil(MTU).max(1);
    let mut out = Vec::new();
    for i in 0..n {
        let first = i == 0;
        let last = i + 1 == n;
        let size = if last { len - i * MTU } else { MTU };
        let op = match (write, first, last) {
            (false, true, true) => RcSendOnly,
            (false, true, false) => RcSendFirst,
            (false, false, false) => RcSendMiddle,
            (false, false, true) => RcSendLast,
            (true, true, true) => RcWriteOnly,
            (true, true, false) => RcWriteFirst,
            (true, false, false) => RcWriteMiddle,
            (true, false, true) => RcWriteLast,
        };
        let mut r = rq(op, psn_add(psn, i), size);
        r.ack_req |= ack_every != 0 && (i + 1) % ack_every == 0;
        if write && first {
            r.reth = Some(Reth {
                va,
                rkey: RKEY,
                len,
            });
        }
        let data = (0..size)
            .map(|b| (b as u8).wrapping_add(seed).wrapping_add(i as u8))
            .collect();
        out.push(Step::Pkt(r, data));
    }
    out
}

use crate::proto::psn::psn_add;

/// Runs `steps` on a side with prediction and one without; they must
/// agree after every step. Returns the requests predicted.
fn check_same(steps: &[Step], coalesce: bool, rq: &[usize]) -> u32 {
    check_same_srq(steps, coalesce, rq, false)
}

/// [`check_same`], the receive WQEs from an SRQ when `srq`.
fn check_same_srq(steps: &[Step], coalesce: bool, rq: &[usize], srq: bool) -> u32 {
    let mut fast = Side::with_srq(true, coalesce, rq, srq);
    let mut slow = Side::with_srq(false, coalesce, rq, srq);
    for (i, step) in steps.iter().enumerate() {
        apply(&mut fast, step);
        apply(&mut slow, step);
        assert_eq!(
            fast.observed(),
            slow.observed(),
            "after step {i} ({step:?}) of {steps:?}"
        );
    }
    fast.drain();
    slow.drain();
    assert_eq!(fast.observed(), slow.observed(), "at the end of {steps:?}");
    fast.predicted
}

/// Random in-order messages: every MIDDLE, LAST and SEND ONLY is
/// predicted, and the results equal the state machine's.
#[test]
fn in_order_messages_match_the_state_machine() {
    for seed in 0..300u64 {
        let mut rng = Rng::new(seed);
        let coalesce = rng.bool();
        let mut steps = Vec::new();
        let mut psn = 100u32;
        let mut va = BASE;
        let mut continuing = 0u32;
        let mut rq = Vec::new();
        for m in 0..1 + rng.below(5) {
            let write = rng.bool();
            let len = if rng.chance(20) {
                rng.below(MTU + 1)
            } else {
                1 + rng.below(6 * MTU)
            };
            let ack_every = rng.pick(&[0, 0, 2, 3]);
            if !write {
                rq.push(len as usize + rng.below(100) as usize);
            }
            if write && u64::from(len) + va > BASE + MR_LEN as u64 {
                va = BASE;
            }
            let pkts = message(write, len, psn, va, ack_every, m as u8);
            // Every packet but a FIRST, and a WRITE ONLY, is predicted.
            continuing += pkts.len() as u32 - u32::from(write || pkts.len() > 1);
            psn = psn_add(psn, pkts.len() as u32);
            va += u64::from(len);
            for p in pkts {
                steps.push(p);
                if rng.chance(40) {
                    steps.push(Step::Drain);
                }
            }
        }
        let predicted = check_same_srq(&steps, coalesce, &rq, seed % 3 == 0);
        assert_eq!(predicted, continuing, "seed {seed}");
    }
}

/// One deviation somewhere in a stream of messages: both agree, and the
/// deviating request is never predicted.
#[test]
fn deviations_match_the_state_machine() {
    for seed in 0..600u64 {
        let mut rng = Rng::new(seed);
        let coalesce = rng.bool();
        let mut steps = Vec::new();
        let mut psn = 100u32;
        let mut rq = Vec::new();
        for m in 0..2 + rng.below(3) {
            let write = rng.bool();
            let len = 1 + rng.below(5 * MTU);
            if !write {
                // Sometimes a receive buffer too small for the message.
                let cap = if rng.chance(10) {
                    rng.below(len) as usize
                } else {
                    len as usize
                };
                rq.push(cap);
            }
            let pkts = message(write, len, psn, BASE, rng.pick(&[0, 2]), m as u8);
            psn = psn_add(psn, pkts.len() as u32);
            steps.extend(pkts);
        }
        // The deviation.
        let at = rng.below(steps.len() as u32) as usize;
        match rng.below(12) {
            0 => {
                steps.remove(at);
            }
            1 => {
                let s = steps[at].clone();
                steps.insert(at, s);
            }
            2 if at + 1 < steps.len() => steps.swap(at, at + 1),
            3 => {
                if let Step::Pkt(r, d) = &mut steps[at] {
                    r.payload = r.payload.saturating_sub(1 + rng.below(8));
                    d.truncate(r.payload as usize);
                }
            }
            4 => {
                if let Step::Pkt(r, d) = &mut steps[at] {
                    r.payload += 1 + rng.below(8);
                    d.resize(r.payload as usize, 0xee);
                }
            }
            5 => {
                if let Step::Pkt(r, _) = &mut steps[at] {
                    r.psn = psn_add(r.psn, 1 + rng.below(3));
                }
            }
            6 => {
                if let Step::Pkt(r, _) = &mut steps[at] {
                    r.opcode = rng.pick(&[
                        Opcode::RcSendFirst,
                        Opcode::RcSendMiddle,
                        Opcode::RcSendLast,
                        Opcode::RcWriteMiddle,
                        Opcode::RcWriteLast,
                        Opcode::UcSendMiddle,
                    ]);
                }
            }
            7 => steps.insert(at, Step::DropMr),
            8 => steps.insert(at, Step::CqFull(true)),
            9 => steps.insert(at, Step::InError),
            10 => steps.insert(at, Step::Absent(1 + rng.below(2))),
            _ => {
                steps.insert(at, Step::StatusMoved(true));
                steps.insert(at + 1, Step::Drain);
                steps.insert(at + 2, Step::StatusMoved(false));
            }
        }
        // Drains at random points too.
        let mut i = 0;
        while i < steps.len() {
            if rng.chance(30) {
                steps.insert(i, Step::Drain);
                i += 1;
            }
            i += 1;
        }
        check_same_srq(&steps, coalesce, &rq, seed % 4 == 0);
    }
}

/// A region deregistered in the middle of a write: the next MIDDLE is
/// predicted, but its key lookup fails as in the state machine (NAK,
/// QP error), and nothing more is written.
#[test]
fn region_gone_mid_write() {
    let mut steps = Vec::new();
    for (i, p) in message(true, 4 * MTU, 100, BASE, 0, 1)
        .into_iter()
        .enumerate()
    {
        if i == 2 {
            steps.push(Step::DropMr);
        }
        steps.push(p);
        steps.push(Step::Drain);
    }
    let mut fast = Side::new(true, false, &[]);
    for s in &steps {
        apply(&mut fast, s);
    }
    assert!(fast.outcomes.iter().any(|o| o.qp_error));
    let acks = fast.io.acks();
    assert_eq!(acks.first().map(|a| (a.psn, a.syndrome)), Some((102, 0x62)));
    assert_eq!(fast.st.psn, 102);
    assert_eq!(check_same(&steps, false, &[]), 2);
}
