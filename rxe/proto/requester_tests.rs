// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Tests of the requester decisions against a transliteration of rxe_req.c.
//!
//! Here: the C transliteration of the opcode choice, the shared QP and WQE
//! builders, and the tests of opcodes, packet counts, the random run, ACK
//! request coalescing and window wake-ups. A message's walk and its rules
//! are in `rules.rs`, retries in `retry.rs`.

use super::*;
use crate::proto::opcode::ALL;
use crate::proto::params::pacing::MAX_DEFERRED_ACK_PKTS;
use crate::proto::psn::{psn_sub, PSN_MASK};
use crate::proto::testing::rng::Rng;
use std::vec;
use std::vec::Vec;

#[path = "requester_tests/retry.rs"]
mod retry;
#[path = "requester_tests/rules.rs"]
mod rules;

const EINVAL: i32 = -22;

/// All work request opcodes.
fn all_wr() -> impl Iterator<Item = WrOpcode> {
    (0..=0x20u32).filter_map(|v| WrOpcode::try_from(v).ok())
}

const TYPES: [qp::Type; 4] = [qp::Type::Rc, qp::Type::Uc, qp::Type::Ud, qp::Type::Gsi];

/// `next_opcode_rc()` with the C numbers: `prev` is `req.opcode` (-1 for none).
fn c_rc(wr: u32, prev: i32, fits: bool) -> i32 {
    let pick = |cont: [i32; 2], a: i32, b: i32, c: i32, d: i32| {
        if prev == cont[0] || prev == cont[1] {
            if fits {
                a
            } else {
                b
            }
        } else if fits {
            c
        } else {
            d
        }
    };
    match wr {
        0 => pick([6, 7], 8, 7, 10, 6),
        1 => pick([6, 7], 9, 7, 11, 6),
        2 => pick([0, 1], 2, 1, 4, 0),
        3 => pick([0, 1], 3, 1, 5, 0),
        14 => 0x1c,
        4 => 0x0c,
        5 => 0x13,
        6 => 0x14,
        9 => pick([0, 1], 0x16, 1, 0x17, 0),
        15 => 0x1d,
        0x20 | 7 => wr as i32,
        _ => EINVAL,
    }
}

fn c_uc(wr: u32, prev: i32, fits: bool) -> i32 {
    let pick = |cont: [i32; 2], a: i32, b: i32, c: i32, d: i32| {
        if prev == cont[0] || prev == cont[1] {
            if fits {
                a
            } else {
                b
            }
        } else if fits {
            c
        } else {
            d
        }
    };
    match wr {
        0 => pick([0x26, 0x27], 0x28, 0x27, 0x2a, 0x26),
        1 => pick([0x26, 0x27], 0x29, 0x27, 0x2b, 0x26),
        2 => pick([0x20, 0x21], 0x22, 0x21, 0x24, 0x20),
        3 => pick([0x20, 0x21], 0x23, 0x21, 0x25, 0x20),
        _ => EINVAL,
    }
}

fn c_next_opcode(qp_type: qp::Type, wr: u32, prev: i32, resid: u32, mtu: u32) -> i32 {
    let fits = resid <= mtu;
    match qp_type {
        qp::Type::Rc => c_rc(wr, prev, fits),
        qp::Type::Uc => c_uc(wr, prev, fits),
        qp::Type::Ud | qp::Type::Gsi => match wr {
            2 => 0x64,
            3 => 0x65,
            _ => EINVAL,
        },
        _ => EINVAL,
    }
}

fn raw(op: Option<Opcode>) -> i32 {
    op.map_or(-1, |o| i32::from(o.bits()))
}

#[test]
fn next_opcode_matches_c_for_every_input() {
    let prevs: Vec<Option<Opcode>> = core::iter::once(None)
        .chain(ALL.iter().copied().map(Some))
        .collect();
    let mut checked = 0;
    for qp_type in qp::Type::ALL {
        for wr in all_wr() {
            for &prev in &prevs {
                for (resid, mtu) in [(0, 256), (256, 256), (257, 256), (4096, 1024), (1, 4096)] {
                    let c = c_next_opcode(qp_type, wr.as_raw(), raw(prev), resid, mtu);
                    let ours = next_opcode(qp_type, wr, prev, resid, mtu);
                    match ours {
                        Ok(op) => assert_eq!(
                            i32::from(op.bits()),
                            c,
                            "{qp_type:?} {wr:?} {prev:?} {resid}"
                        ),
                        // C hands REG_MR/LOCAL_INV back as numbers on RC; they never reach it.
                        Err(OpcodeError::Local) => assert!(
                            c == EINVAL || (qp_type == qp::Type::Rc && c == wr.as_raw() as i32),
                            "{qp_type:?} {wr:?}"
                        ),
                        Err(OpcodeError::Unsupported) => {
                            assert_eq!(c, EINVAL, "{qp_type:?} {wr:?} {prev:?}")
                        }
                    }
                    checked += 1;
                }
            }
        }
    }
    assert_eq!(checked, 10 * 17 * 61 * 5);
}

#[test]
fn packet_counts() {
    for (len, mtu, n) in [
        (0, 256, 1),
        (1, 256, 1),
        (256, 256, 1),
        (257, 256, 2),
        (4096, 1024, 4),
        (4097, 1024, 5),
        (1 << 31, 256, 1 << 23),
        (u32::MAX, 4096, 1 << 20),
        (5, 0, 1),
    ] {
        assert_eq!(wqe_packets(len, mtu), n, "{len} {mtu}");
    }
}

#[test]
fn rd_atomic_rounding() {
    for (v, r) in [
        (0, 0),
        (1, 1),
        (2, 2),
        (3, 4),
        (5, 8),
        (100, 128),
        (128, 128),
        (129, 256),
        (u32::MAX, 1 << 31),
    ] {
        assert_eq!(round_rd_atomic(v), r);
    }
}

fn rc(mtu: u32) -> ReqQp {
    ReqQp {
        qp_type: qp::Type::Rc,
        path_mtu: mtu,
        port_mtu: 4096,
        max_rd_atomic: 4,
    }
}

fn info(qp_type: qp::Type, wr: WrOpcode, flags: u32, length: u32) -> WqeInfo {
    WqeInfo::new(wr, qp_type, SendFlags(flags), length, 0x1000)
}

fn gates(comp_psn: u32) -> Gates {
    Gates {
        prior_done: true,
        comp_psn,
        inflight: 0,
    }
}

/// Sends a whole WQE, returning its packets; the completer side is ideal
/// (comp_psn follows req_psn) so the window never closes.
fn send_all(req: &mut State, qp: &ReqQp, info: &WqeInfo, p: &mut Progress) -> Vec<Packet> {
    let mut out = Vec::new();
    loop {
        let g = gates(req.psn);
        match plan(req, qp, info, p, &g) {
            Step::Send(pkt) => {
                out.push(pkt);
                if commit(req, qp, p, &pkt) {
                    return out;
                }
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(out.len() < 100_000);
    }
}

#[test]
fn fuzz_plan_commit() {
    let mut rng = Rng::new(0x5eed_0001);
    let wrs: Vec<WrOpcode> = all_wr().collect();
    let mut sends = 0u32;
    for _ in 0..100_000 {
        let qp_type = rng.pick(&TYPES);
        let mtu = rng.pick(&[256u32, 512, 1024, 2048, 4096]);
        let qp = ReqQp {
            qp_type,
            path_mtu: mtu,
            port_mtu: rng.pick(&[256u32, 1024, 4096]),
            max_rd_atomic: rng.below(5),
        };
        let wr = rng.pick(&wrs);
        let length = if rng.bool() {
            rng.below(10_000)
        } else {
            rng.u32()
        };
        let i = WqeInfo::new(wr, qp_type, SendFlags(rng.below(32)), length, rng.next());
        let mut req = State::new(rng.u32(), rng.below(5));
        req.opcode = if rng.bool() {
            None
        } else {
            Some(rng.pick(ALL))
        };
        req.noack_pkts = rng.below(80);
        let mut p = Progress::posted(if rng.bool() { length } else { rng.u32() }, rng.next());
        p.has_rd_atomic = rng.bool();
        let g = Gates {
            prior_done: rng.bool(),
            comp_psn: psn_sub(req.psn, rng.below(200)),
            inflight: rng.below(70),
        };
        let before = req;
        match plan(&mut req, &qp, &i, &mut p, &g) {
            Step::Send(pkt) => {
                sends += 1;
                assert!(pkt.payload <= qp.mtu());
                assert_eq!(pkt.psn, before.psn);
                assert!(pkt.psn <= PSN_MASK);
                let resid = p.resid;
                let end = commit(&mut req, &qp, &mut p, &pkt);
                assert_eq!(end, pkt.opcode.has(Mask::END));
                assert!(p.resid <= resid);
                assert!(req.psn <= PSN_MASK && p.first_psn <= PSN_MASK && p.last_psn <= PSN_MASK);
                assert_ne!(req.psn, before.psn);
                assert_eq!(req.opcode, Some(pkt.opcode));
            }
            Step::Wait(w) => {
                assert_eq!(req.psn, before.psn);
                match w {
                    Wait::Fence => assert!(req.wait_fence),
                    Wait::Psn => assert!(req.wait_psn && qp_type == qp::Type::Rc),
                    Wait::RdAtomic => assert!(req.need_rd_atomic && req.rd_atomic == 0),
                    Wait::Skb => assert!(g.inflight > INFLIGHT_SKBS_PER_QP_HIGH),
                }
            }
            Step::Local => assert!(i.mask.intersects(WrMask::LOCAL_OP)),
            Step::SkipUd => assert_eq!(qp_type, qp::Type::Ud),
            Step::Skip => assert!(matches!(p.state, WqeState::Pending | WqeState::Done)),
            Step::Fail(s) => assert_eq!(s, WcStatus::LocQpOpErr),
        }
        // Retry arithmetic never panics either.
        let mut first = rng.bool();
        p.state = rng.pick(&[
            WqeState::Posted,
            WqeState::Processing,
            WqeState::Pending,
            WqeState::Done,
        ]);
        let cp = rng.u32() & PSN_MASK;
        retry_wqe(&mut req, &qp, &i, &mut p, &mut first, cp);
        assert!(p.resid <= i.length.max(p.resid));
    }
    assert!(sends > 10_000, "{sends}");
}

fn pkt(opcode: Opcode, psn: u32, ack_req: bool) -> Packet {
    Packet {
        opcode,
        psn,
        payload: 0,
        pad: 0,
        ack_req,
        solicited: false,
        reth_va: 0,
        reth_len: 0,
    }
}

#[test]
fn coalesced_ack_requests() {
    use Opcode::*;
    // Only the END packet of an RC send or write that asks may be held.
    for (op, held) in [
        (RcSendOnly, true),
        (RcSendLast, true),
        (RcWriteOnly, true),
        (RcWriteLastImm, true),
        (RcSendFirst, false),
        (RcReadRequest, false),
        (RcFetchAdd, false),
        (RcFlush, false),
        (RcAtomicWrite, false),
    ] {
        assert_eq!(may_hold(qp::Type::Rc, &pkt(op, 5, true)), held, "{op:?}");
    }
    assert!(!may_hold(qp::Type::Rc, &pkt(RcSendOnly, 5, false)));
    assert!(!may_hold(qp::Type::Uc, &pkt(UcSendOnly, 5, true)));
    assert!(!may_hold(qp::Type::Gsi, &pkt(UdSendOnly, 5, true)));

    // Single-packet writes back to back: each gives its request to the next
    // until the run would reach MAX_DEFERRED_ACK_PKTS.
    let mut req = State::new(PSN_MASK - 3, 0);
    let mut cleared = 0;
    let mut holding = false;
    for i in 0..40u32 {
        let psn = psn_add(PSN_MASK - 3, i);
        assert!(ack_req(&mut req, qp::Type::Rc, true));
        let p = pkt(RcWriteOnly, psn, true);
        if next_built(&mut req, holding, &p) {
            cleared += 1;
        } else if holding {
            // The held one kept its request: the run starts again.
            assert_eq!(i % MAX_DEFERRED_ACK_PKTS, 0, "packet {i}");
        }
        hold(&mut req, &p);
        holding = true;
    }
    assert_eq!(cleared, 39 - 39 / MAX_DEFERRED_ACK_PKTS);

    // The next packet must start a message at the next PSN, and the record
    // counts only while the engine still holds the packet.
    let mut req = State::new(100, 0);
    assert!(ack_req(&mut req, qp::Type::Rc, true));
    hold(&mut req, &pkt(RcSendLast, 100, true));
    assert!(!next_built(&mut req, true, &pkt(RcSendMiddle, 101, false)));
    assert_eq!(req.held, None);
    hold(&mut req, &pkt(RcSendLast, 100, true));
    assert!(!next_built(&mut req, true, &pkt(RcSendFirst, 102, false)));
    hold(&mut req, &pkt(RcSendLast, 100, true));
    assert!(!next_built(&mut req, false, &pkt(RcSendFirst, 101, false)));
    assert_eq!(req.held, None);

    // A cleared request's packets count towards the long-message rule.
    let mut req = State::new(0, 0);
    for _ in 0..5 {
        assert!(!ack_req(&mut req, qp::Type::Rc, false));
    }
    assert!(ack_req(&mut req, qp::Type::Rc, true));
    hold(&mut req, &pkt(RcSendLast, 5, true));
    assert!(!ack_req(&mut req, qp::Type::Rc, false));
    assert!(next_built(&mut req, true, &pkt(RcSendFirst, 6, false)));
    assert_eq!(req.noack_pkts, 7);
}

/// A requester stopped on a full window is woken when its next packet
/// fits, not on every response before that; across the PSN wrap too.
#[test]
fn window_wakes_when_room() {
    for comp0 in [0, 1000, PSN_MASK - 2] {
        let mut req = State::new(0, 4);
        // A 4-PSN read went out at the window's edge.
        req.psn = psn_add(comp0, MAX_UNACKED_PSNS + 4);
        req.wait_psn = true;
        for k in 1..4 {
            window_moved(&mut req, psn_add(comp0, k));
            assert!(
                req.wait_psn && !req.again,
                "comp0 {comp0}: woken {k} PSNs on"
            );
        }
        window_moved(&mut req, psn_add(comp0, 4));
        assert!(!req.wait_psn && req.take_again(), "comp0 {comp0}");
        // Not waiting: nothing to wake.
        window_moved(&mut req, psn_add(comp0, 10));
        assert!(!req.take_again());
    }
}

/// A retry does not send again the SEND and WRITE packets an ACK already
/// acknowledged; reads and atomics, and every packet at or after the
/// acknowledged PSN, go out.
#[test]
fn acked_resends_are_skipped() {
    let pkt = |opcode, psn| Packet {
        opcode,
        psn,
        payload: 0,
        pad: 0,
        ack_req: false,
        solicited: false,
        reth_va: 0,
        reth_len: 0,
    };
    let q = rc(1024);
    assert!(acked_resend(&q, &pkt(Opcode::RcSendMiddle, 9), 10));
    assert!(acked_resend(&q, &pkt(Opcode::RcWriteFirst, PSN_MASK), 2));
    assert!(!acked_resend(&q, &pkt(Opcode::RcSendMiddle, 10), 10));
    assert!(!acked_resend(&q, &pkt(Opcode::RcSendLast, 11), 10));
    assert!(!acked_resend(&q, &pkt(Opcode::RcReadRequest, 5), 10));
    assert!(!acked_resend(&q, &pkt(Opcode::RcCompareSwap, 5), 10));
    let uc = ReqQp {
        qp_type: qp::Type::Uc,
        ..q
    };
    assert!(!acked_resend(&uc, &pkt(Opcode::UcSendMiddle, 9), 10));
}
