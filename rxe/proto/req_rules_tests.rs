// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Tests of the requester decisions against a transliteration of rxe_req.c.

use super::*;
use crate::proto::opcode::ALL;
use crate::proto::params::pacing::MAX_DEFERRED_ACK_PKTS;
use crate::proto::psn::{psn_sub, PSN_MASK};
use crate::proto::test_rng::Rng;
use std::vec;
use std::vec::Vec;

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
fn message_walks() {
    use Opcode::*;
    let cases: &[(qp::Type, WrOpcode, u32, u32, &[Opcode])] = &[
        (qp::Type::Rc, WrOpcode::Send, 0, 256, &[RcSendOnly]),
        (qp::Type::Rc, WrOpcode::Send, 256, 256, &[RcSendOnly]),
        (
            qp::Type::Rc,
            WrOpcode::Send,
            257,
            256,
            &[RcSendFirst, RcSendLast],
        ),
        (
            qp::Type::Rc,
            WrOpcode::SendWithImm,
            1000,
            256,
            &[RcSendFirst, RcSendMiddle, RcSendMiddle, RcSendLastImm],
        ),
        (
            qp::Type::Rc,
            WrOpcode::SendWithInv,
            512,
            256,
            &[RcSendFirst, RcSendLastInv],
        ),
        (
            qp::Type::Rc,
            WrOpcode::SendWithInv,
            5,
            256,
            &[RcSendOnlyInv],
        ),
        (
            qp::Type::Rc,
            WrOpcode::RdmaWrite,
            2048,
            1024,
            &[RcWriteFirst, RcWriteLast],
        ),
        (
            qp::Type::Rc,
            WrOpcode::RdmaWriteWithImm,
            0,
            1024,
            &[RcWriteOnlyImm],
        ),
        (
            qp::Type::Rc,
            WrOpcode::RdmaWriteWithImm,
            3000,
            1024,
            &[RcWriteFirst, RcWriteMiddle, RcWriteLastImm],
        ),
        (
            qp::Type::Rc,
            WrOpcode::RdmaRead,
            10_000,
            1024,
            &[RcReadRequest],
        ),
        (
            qp::Type::Rc,
            WrOpcode::AtomicCmpAndSwp,
            8,
            1024,
            &[RcCompareSwap],
        ),
        (
            qp::Type::Rc,
            WrOpcode::AtomicFetchAndAdd,
            8,
            1024,
            &[RcFetchAdd],
        ),
        (
            qp::Type::Rc,
            WrOpcode::AtomicWrite,
            8,
            1024,
            &[RcAtomicWrite],
        ),
        (qp::Type::Rc, WrOpcode::Flush, 4096, 1024, &[RcFlush]),
        (
            qp::Type::Uc,
            WrOpcode::Send,
            700,
            256,
            &[UcSendFirst, UcSendMiddle, UcSendLast],
        ),
        (
            qp::Type::Uc,
            WrOpcode::SendWithImm,
            10,
            256,
            &[UcSendOnlyImm],
        ),
        (
            qp::Type::Uc,
            WrOpcode::RdmaWrite,
            512,
            256,
            &[UcWriteFirst, UcWriteLast],
        ),
        (
            qp::Type::Uc,
            WrOpcode::RdmaWriteWithImm,
            513,
            256,
            &[UcWriteFirst, UcWriteMiddle, UcWriteLastImm],
        ),
        (qp::Type::Ud, WrOpcode::Send, 4096, 256, &[UdSendOnly]),
        (
            qp::Type::Gsi,
            WrOpcode::SendWithImm,
            256,
            256,
            &[UdSendOnlyImm],
        ),
    ];
    for &(qp_type, wr, len, mtu, want) in cases {
        let qp = ReqQp {
            qp_type,
            path_mtu: mtu,
            port_mtu: 4096,
            max_rd_atomic: 4,
        };
        let i = info(qp_type, wr, 0, len);
        let start = PSN_MASK - 1;
        let mut req = State::new(start, 4);
        let mut p = Progress::posted(len, 0x1000);
        let pkts = send_all(&mut req, &qp, &i, &mut p);
        let ops: Vec<Opcode> = pkts.iter().map(|k| k.opcode).collect();
        assert_eq!(ops, want, "{qp_type:?} {wr:?} {len}");
        // PSNs are consecutive across the 2^24 wrap.
        for (n, k) in pkts.iter().enumerate() {
            assert_eq!(k.psn, psn_add(start, n as u32));
        }
        assert_eq!(p.first_psn, start);
        let psns = if wr == WrOpcode::RdmaRead {
            wqe_packets(len, mtu)
        } else {
            pkts.len() as u32
        };
        assert_eq!(req.psn, psn_add(start, psns), "{wr:?}");
        if qp_type != qp::Type::Ud && qp_type != qp::Type::Gsi {
            assert_eq!(p.last_psn, psn_add(start, psns - 1));
        }
        let payload: u32 = pkts.iter().map(|k| k.payload).sum();
        let sent = match wr {
            WrOpcode::RdmaRead
            | WrOpcode::Flush
            | WrOpcode::AtomicCmpAndSwp
            | WrOpcode::AtomicFetchAndAdd => 0,
            _ if qp_type == qp::Type::Gsi || qp_type == qp::Type::Ud => len.min(4096),
            _ => len,
        };
        assert_eq!(payload, sent);
        for k in &pkts {
            assert_eq!(usize::from(k.pad), (4 - (k.payload as usize % 4)) % 4);
            assert!(k.payload <= qp.mtu());
        }
        assert_eq!(
            p.state,
            if qp_type == qp::Type::Rc {
                WqeState::Pending
            } else {
                WqeState::Done
            }
        );
        assert_eq!(req.opcode, want.last().copied());
        // The RETH of the first packet describes the whole transfer.
        assert_eq!(pkts[0].reth_len, len);
        assert_eq!(pkts[0].reth_va, 0x1000);
    }
}

#[test]
fn commit_resid_and_last_psn_quirks() {
    let qp = rc(1024);
    // A flush sends no payload and empties resid.
    let mut req = State::new(10, 4);
    let mut p = Progress::posted(5000, 0);
    send_all(
        &mut req,
        &qp,
        &info(qp::Type::Rc, WrOpcode::Flush, 0, 5000),
        &mut p,
    );
    assert_eq!((p.resid, p.first_psn, p.last_psn, req.psn), (0, 10, 10, 11));
    // An atomic with a large local buffer: last_psn counts its length (C
    // quirk), the requester still consumes one PSN.
    let mut p = Progress::posted(3000, 0);
    send_all(
        &mut req,
        &qp,
        &info(qp::Type::Rc, WrOpcode::AtomicFetchAndAdd, 0, 3000),
        &mut p,
    );
    assert_eq!(
        (p.first_psn, p.last_psn, req.psn, p.resid),
        (11, 13, 12, 3000)
    );
    // A zero-length read still expects one response.
    let mut p = Progress::posted(0, 0);
    send_all(
        &mut req,
        &qp,
        &info(qp::Type::Rc, WrOpcode::RdmaRead, 0, 0),
        &mut p,
    );
    assert_eq!((p.first_psn, p.last_psn, req.psn), (12, 12, 13));
    // An atomic write moves its 8 bytes.
    let mut p = Progress::posted(8, 0);
    let pkts = send_all(
        &mut req,
        &qp,
        &info(qp::Type::Rc, WrOpcode::AtomicWrite, 0, 8),
        &mut p,
    );
    assert_eq!(
        (pkts[0].payload, p.resid, p.last_psn, req.psn),
        (8, 0, 13, 14)
    );
}

#[test]
fn ack_request_rules() {
    // RC: every END packet, and the 66th consecutive packet without one.
    let qp = rc(256);
    let mut req = State::new(0, 4);
    let len = 256 * 200;
    let mut p = Progress::posted(len, 0);
    let pkts = send_all(
        &mut req,
        &qp,
        &info(qp::Type::Rc, WrOpcode::RdmaWrite, 0, len),
        &mut p,
    );
    let acked: Vec<usize> = pkts
        .iter()
        .enumerate()
        .filter(|(_, k)| k.ack_req)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(acked, vec![65, 131, 197, 199]);
    assert_eq!(req.noack_pkts, 0);
    // UC and UD never ask and never count; GSI asks on every END packet.
    for qp_type in [qp::Type::Uc, qp::Type::Ud] {
        let mut req = State::new(0, 0);
        for n in 0..200 {
            assert!(!ack_req(&mut req, qp_type, n % 3 == 0));
        }
        assert_eq!(req.noack_pkts, 0);
    }
    let mut req = State::new(0, 0);
    req.noack_pkts = 7;
    assert!(ack_req(&mut req, qp::Type::Gsi, true));
    assert_eq!(req.noack_pkts, 0);
    let mut req = State::new(0, 0);
    let seen: Vec<bool> = (0..70)
        .map(|_| ack_req(&mut req, qp::Type::Gsi, false))
        .collect();
    assert_eq!(seen.iter().position(|&a| a), Some(65));
}

#[test]
fn solicited_rules() {
    use Opcode::*;
    let se = SendFlags(SendFlags::SOLICITED);
    for op in ALL.iter().copied() {
        let want = op.has(Mask::END)
            && (op.has(Mask::SEND) || (op.has(Mask::WRITE) && op.has(Mask::IMMDT)));
        assert_eq!(solicited(se, op.mask()), want, "{op:?}");
        assert!(!solicited(SendFlags(0), op.mask()));
    }
    assert!(solicited(se, RcWriteLastImm.mask()));
    assert!(!solicited(se, RcWriteLast.mask()));
    assert!(!solicited(se, RcSendFirst.mask()));
    assert!(solicited(se, UdSendOnly.mask()));
}

#[test]
fn fence_rules() {
    let qp = rc(1024);
    let mut req = State::new(0, 4);
    let fenced = info(qp::Type::Rc, WrOpcode::Send, SendFlags::FENCE, 8);
    let plain = info(qp::Type::Rc, WrOpcode::Send, 0, 8);
    let inv = info(qp::Type::Rc, WrOpcode::LocalInv, 0, 0);
    assert!(!is_fenced(&req, &qp, &fenced, false));
    req.rd_atomic = 3;
    assert!(is_fenced(&req, &qp, &fenced, true));
    assert!(!is_fenced(&req, &qp, &plain, false));
    // LOCAL_INV waits for every earlier WQE, whatever the credits.
    assert!(is_fenced(&req, &qp, &inv, false));
    assert!(!is_fenced(&req, &qp, &inv, true));
    req.rd_atomic = 4;
    assert!(is_fenced(&req, &qp, &inv, false));
    // plan() reports it and sets the flag.
    req.rd_atomic = 2;
    let mut p = Progress::posted(8, 0);
    assert_eq!(
        plan(&mut req, &qp, &fenced, &mut p, &gates(0)),
        Step::Wait(Wait::Fence)
    );
    assert!(req.wait_fence);
}

#[test]
fn local_ops() {
    let qp = rc(1024);
    let mut req = State::new(0, 4);
    for wr in [WrOpcode::LocalInv, WrOpcode::BindMw, WrOpcode::RegMr] {
        let mut p = Progress::posted(0, 0);
        let i = info(qp::Type::Rc, wr, 0, 0);
        assert_eq!(plan(&mut req, &qp, &i, &mut p, &gates(0)), Step::Local);
        finish_local(&mut p);
        assert_eq!((p.state, p.status), (WqeState::Done, WcStatus::Success));
    }
    assert_eq!(req.psn, 0);
    assert_eq!(local_op_error(WrOpcode::BindMw), WcStatus::MwBindErr);
    assert_eq!(local_op_error(WrOpcode::LocalInv), WcStatus::LocQpOpErr);
    assert_eq!(local_op_error(WrOpcode::RegMr), WcStatus::LocQpOpErr);
    // BIND_MW is local on UC too; LOCAL_INV is not supported there.
    let uc = ReqQp {
        qp_type: qp::Type::Uc,
        ..qp
    };
    let mut p = Progress::posted(0, 0);
    assert_eq!(
        plan(
            &mut req,
            &uc,
            &info(qp::Type::Uc, WrOpcode::BindMw, 0, 0),
            &mut p,
            &gates(0)
        ),
        Step::Local
    );
    assert_eq!(
        plan(
            &mut req,
            &uc,
            &info(qp::Type::Uc, WrOpcode::LocalInv, 0, 0),
            &mut p,
            &gates(0)
        ),
        Step::Fail(WcStatus::LocQpOpErr)
    );
    let mut p = Progress::posted(0, 0);
    fail(&mut p, WcStatus::LocQpOpErr);
    assert_eq!((p.state, p.status), (WqeState::Error, WcStatus::LocQpOpErr));
}

#[test]
fn unsupported_opcodes_fail() {
    for (qp_type, wr) in [
        (qp::Type::Rc, WrOpcode::RdmaReadWithInv),
        (qp::Type::Uc, WrOpcode::SendWithInv),
        (qp::Type::Ud, WrOpcode::SendWithInv),
        (qp::Type::Ud, WrOpcode::RdmaWrite),
        (qp::Type::Uc, WrOpcode::RdmaRead),
    ] {
        let qp = ReqQp {
            qp_type,
            path_mtu: 1024,
            port_mtu: 1024,
            max_rd_atomic: 4,
        };
        let mut req = State::new(0, 4);
        let mut p = Progress::posted(8, 0);
        let step = plan(&mut req, &qp, &info(qp_type, wr, 0, 8), &mut p, &gates(0));
        assert_eq!(step, Step::Fail(WcStatus::LocQpOpErr), "{qp_type:?} {wr:?}");
        assert_eq!(req.rd_atomic, 4);
    }
}

#[test]
fn psn_window_across_wrap() {
    for comp in [0, 100, PSN_MASK - 50, PSN_MASK] {
        assert!(!window_full(qp::Type::Rc, comp, comp));
        assert!(!window_full(qp::Type::Rc, psn_add(comp, 128), comp));
        assert!(window_full(qp::Type::Rc, psn_add(comp, 129), comp));
        assert!(!window_full(qp::Type::Uc, psn_add(comp, 129), comp));
        assert!(!window_full(qp::Type::Rc, psn_sub(comp, 5), comp));
    }
    let qp = rc(256);
    let mut req = State::new(psn_add(PSN_MASK, 129), 4);
    let mut p = Progress::posted(8, 0);
    let step = plan(
        &mut req,
        &qp,
        &info(qp::Type::Rc, WrOpcode::Send, 0, 8),
        &mut p,
        &gates(PSN_MASK),
    );
    assert_eq!(step, Step::Wait(Wait::Psn));
    assert!(req.wait_psn);
    let step = plan(
        &mut req,
        &qp,
        &info(qp::Type::Rc, WrOpcode::Send, 0, 8),
        &mut p,
        &gates(0),
    );
    assert!(matches!(step, Step::Send(_)));
}

#[test]
fn skb_limit() {
    let qp = rc(256);
    let mut req = State::new(0, 4);
    let mut p = Progress::posted(8, 0);
    let i = info(qp::Type::Rc, WrOpcode::Send, 0, 8);
    let g = Gates {
        prior_done: true,
        comp_psn: 0,
        inflight: INFLIGHT_SKBS_PER_QP_HIGH + 1,
    };
    assert_eq!(plan(&mut req, &qp, &i, &mut p, &g), Step::Wait(Wait::Skb));
    let g = Gates {
        inflight: INFLIGHT_SKBS_PER_QP_HIGH,
        ..g
    };
    assert!(matches!(plan(&mut req, &qp, &i, &mut p, &g), Step::Send(_)));
}

#[test]
fn rd_atomic_credits() {
    let qp = ReqQp {
        max_rd_atomic: 2,
        ..rc(256)
    };
    let mut req = State::new(0, 2);
    let read = info(qp::Type::Rc, WrOpcode::RdmaRead, 0, 1000);
    let mut ps = [Progress::posted(1000, 0); 3];
    for p in ps.iter_mut().take(2) {
        assert!(matches!(
            plan(&mut req, &qp, &read, p, &gates(0)),
            Step::Send(_)
        ));
        assert!(p.has_rd_atomic);
    }
    assert_eq!(req.rd_atomic, 0);
    assert_eq!(
        plan(&mut req, &qp, &read, &mut ps[2], &gates(0)),
        Step::Wait(Wait::RdAtomic)
    );
    assert!(req.need_rd_atomic && !ps[2].has_rd_atomic);
    // A WQE holding a credit is not charged again (retries).
    assert!(matches!(
        plan(&mut req, &qp, &read, &mut ps[0], &gates(0)),
        Step::Send(_)
    ));
    req.rd_atomic = 1;
    assert!(matches!(
        plan(&mut req, &qp, &read, &mut ps[2], &gates(0)),
        Step::Send(_)
    ));
    assert!(!req.need_rd_atomic);
    // Writes and sends do not use credits.
    let mut p = Progress::posted(8, 0);
    assert!(matches!(
        plan(
            &mut req,
            &qp,
            &info(qp::Type::Rc, WrOpcode::Send, 0, 8),
            &mut p,
            &gates(0)
        ),
        Step::Send(_)
    ));
    assert!(!p.has_rd_atomic);
    for wr in [WrOpcode::AtomicCmpAndSwp, WrOpcode::AtomicWrite] {
        let mut p = Progress::posted(8, 0);
        assert_eq!(
            plan(
                &mut req,
                &qp,
                &info(qp::Type::Rc, wr, 0, 8),
                &mut p,
                &gates(0)
            ),
            Step::Wait(Wait::RdAtomic)
        );
    }
}

#[test]
fn oversized_datagrams() {
    // UD: skipped, one PSN, success.
    let qp = ReqQp {
        qp_type: qp::Type::Ud,
        path_mtu: 256,
        port_mtu: 1024,
        max_rd_atomic: 0,
    };
    let mut req = State::new(PSN_MASK, 0);
    let i = info(qp::Type::Ud, WrOpcode::Send, 0, 1025);
    let mut p = Progress::posted(1025, 0);
    assert_eq!(plan(&mut req, &qp, &i, &mut p, &gates(0)), Step::SkipUd);
    skip_oversized_ud(&mut req, &mut p);
    assert_eq!(
        (p.first_psn, p.last_psn, req.psn, p.state),
        (PSN_MASK, PSN_MASK, 0, WqeState::Done)
    );
    assert_eq!(req.opcode, Some(Opcode::UdSendOnly));
    // Exactly the port MTU goes out.
    let mut p = Progress::posted(1024, 0);
    let pkts = send_all(
        &mut req,
        &qp,
        &info(qp::Type::Ud, WrOpcode::Send, 0, 1024),
        &mut p,
    );
    assert_eq!(pkts[0].payload, 1024);
    // GSI: truncated to one MTU, as C does.
    let gsi = ReqQp {
        qp_type: qp::Type::Gsi,
        ..qp
    };
    let mut p = Progress::posted(3000, 0);
    let pkts = send_all(
        &mut req,
        &gsi,
        &info(qp::Type::Gsi, WrOpcode::Send, 0, 3000),
        &mut p,
    );
    assert_eq!(
        (pkts.len(), pkts[0].payload, p.resid, p.state),
        (1, 1024, 1976, WqeState::Done)
    );
    assert!(pkts[0].ack_req);
}

#[test]
fn state_helpers() {
    let mut req = State::new(0x1ff_ffff, 8);
    assert_eq!(req.psn, PSN_MASK);
    req.opcode = Some(Opcode::RcSendFirst);
    req.noack_pkts = 5;
    req.need_retry = true;
    req.wait_psn = true;
    req.wait_for_rnr_timer = true;
    req.need_rd_atomic = true;
    req.rd_atomic = 3;
    req.reset();
    assert_eq!(
        req,
        State {
            psn: PSN_MASK,
            rd_atomic: 3,
            ..State::new(0, 0)
        }
    );
    req.set_sq_psn(0x0100_0005);
    assert_eq!(req.psn, 5);
    req.set_max_rd_atomic(16);
    assert_eq!(req.rd_atomic, 16);
    req.wait_for_rnr_timer = true;
    req.rnr_timer_fired();
    assert!(req.need_retry && !req.wait_for_rnr_timer);
    req.again = true;
    assert!(req.take_again());
    assert!(!req.take_again());
}

/// `retry_first_write_send()` as C runs it, one packet at a time.
fn c_rewind(qp_type: qp::Type, wr: WrOpcode, length: u32, mtu: u32, n: u32) -> (u32, i32) {
    let mut resid = length;
    let mut opcode = -1;
    for _ in 0..n {
        let to_send = resid.min(mtu);
        opcode = c_next_opcode(qp_type, wr.as_raw(), opcode, resid, mtu);
        resid -= to_send;
    }
    (resid, opcode)
}

#[test]
fn rewind_matches_c_loop() {
    let wrs = [
        WrOpcode::Send,
        WrOpcode::SendWithImm,
        WrOpcode::SendWithInv,
        WrOpcode::RdmaWrite,
        WrOpcode::RdmaWriteWithImm,
    ];
    for qp_type in [qp::Type::Rc, qp::Type::Uc] {
        for wr in wrs {
            for length in [0, 1, 255, 256, 257, 512, 1000, 4096] {
                for mtu in [256, 1024] {
                    for n in 0..(wqe_packets(length, mtu) + 4) {
                        let (resid, op) = c_rewind(qp_type, wr, length, mtu, n);
                        let r = rewind(qp_type, wr, length, mtu, n);
                        assert_eq!(r.resid, resid, "{qp_type:?} {wr:?} {length} {mtu} {n}");
                        let want = if op < 0 { -1 } else { op };
                        assert_eq!(raw(r.opcode), want, "{qp_type:?} {wr:?} {length} {mtu} {n}");
                    }
                }
            }
        }
    }
    // Large messages in closed form, no loop.
    let r = rewind(qp::Type::Rc, WrOpcode::RdmaWrite, 1 << 31, 256, 1 << 23);
    assert_eq!((r.resid, r.opcode), (0, Some(Opcode::RcWriteLast)));
    let r = rewind(qp::Type::Rc, WrOpcode::RdmaWrite, u32::MAX, 256, PSN_MASK);
    assert_eq!(r.resid, u32::MAX - PSN_MASK * 256);
    assert_eq!(r.opcode, Some(Opcode::RcWriteMiddle));
}

#[test]
fn retry_walk() {
    let qp = rc(1024);
    let mut req = State::new(100, 4);
    // WQE 0: a 4-packet write, first 2 packets acked; WQE 1: done local op;
    // WQE 2: a read with 1 response received; WQE 3: pending send; WQE 4: posted.
    let write = WqeInfo::new(
        WrOpcode::RdmaWrite,
        qp::Type::Rc,
        SendFlags(0),
        4000,
        0x10_000,
    );
    let mut pw = Progress {
        state: WqeState::Pending,
        first_psn: 100,
        last_psn: 103,
        resid: 0,
        iova: 0x10_000,
        has_rd_atomic: false,
        status: WcStatus::Success,
    };
    send_all(&mut req, &qp, &write, &mut Progress::posted(4000, 0x10_000));
    let local = WqeInfo::new(WrOpcode::LocalInv, qp::Type::Rc, SendFlags(0), 0, 0);
    let mut pl = Progress {
        state: WqeState::Done,
        ..Progress::posted(0, 0)
    };
    let read = WqeInfo::new(
        WrOpcode::RdmaRead,
        qp::Type::Rc,
        SendFlags(0),
        3000,
        0x20_000,
    );
    let mut pr = Progress {
        state: WqeState::Pending,
        first_psn: 104,
        last_psn: 106,
        resid: 1976,
        iova: 0x20_000,
        has_rd_atomic: true,
        status: WcStatus::Success,
    };
    let send = WqeInfo::new(WrOpcode::Send, qp::Type::Rc, SendFlags(0), 10, 0);
    let mut ps = Progress {
        state: WqeState::Pending,
        first_psn: 107,
        last_psn: 107,
        resid: 0,
        iova: 0,
        has_rd_atomic: false,
        status: WcStatus::Success,
    };
    let mut pp = Progress::posted(10, 0);

    begin_retry(&mut req, 102);
    assert_eq!((req.psn, req.opcode), (102, None));
    let mut first = true;
    assert!(retry_wqe(&mut req, &qp, &write, &mut pw, &mut first, 102));
    assert_eq!(
        (pw.state, pw.resid, pw.iova),
        (WqeState::Posted, 4000 - 2048, 0x10_000)
    );
    assert_eq!(req.opcode, Some(Opcode::RcWriteMiddle));
    assert!(!first);
    assert!(retry_wqe(&mut req, &qp, &local, &mut pl, &mut first, 102));
    assert_eq!(pl.state, WqeState::Done);
    // Not the first: a read restarts from scratch.
    assert!(retry_wqe(&mut req, &qp, &read, &mut pr, &mut first, 102));
    assert_eq!(
        (pr.state, pr.resid, pr.iova, pr.has_rd_atomic),
        (WqeState::Posted, 3000, 0x20_000, true)
    );
    assert!(retry_wqe(&mut req, &qp, &send, &mut ps, &mut first, 102));
    assert_eq!((ps.state, ps.resid), (WqeState::Posted, 10));
    assert!(!retry_wqe(&mut req, &qp, &send, &mut pp, &mut first, 102));

    // The next packet continues the write where the ack left it.
    let Step::Send(pkt) = plan(&mut req, &qp, &write, &mut pw, &gates(102)) else {
        panic!()
    };
    assert_eq!(
        (pkt.opcode, pkt.psn, pkt.payload),
        (Opcode::RcWriteMiddle, 102, 1024)
    );

    // A read at the head resumes after the responses already received.
    let mut req = State::new(0, 4);
    let mut pr = Progress {
        state: WqeState::Pending,
        first_psn: PSN_MASK - 1,
        last_psn: 1,
        resid: 1976,
        iova: 0x20_000,
        has_rd_atomic: true,
        status: WcStatus::Success,
    };
    begin_retry(&mut req, PSN_MASK);
    let mut first = true;
    assert!(retry_wqe(
        &mut req, &qp, &read, &mut pr, &mut first, PSN_MASK
    ));
    assert_eq!(
        (pr.resid, pr.iova, req.opcode),
        (1976, 0x20_000 + 1024, None)
    );
    let Step::Send(pkt) = plan(&mut req, &qp, &read, &mut pr, &gates(PSN_MASK)) else {
        panic!()
    };
    assert_eq!(
        (pkt.opcode, pkt.psn, pkt.reth_va, pkt.reth_len),
        (Opcode::RcReadRequest, PSN_MASK, 0x20_400, 1976)
    );
    commit(&mut req, &qp, &mut pr, &pkt);
    assert_eq!((pr.first_psn, pr.last_psn, req.psn), (PSN_MASK, 0, 1));
}

/// A retry leaves REG_MRs that already ran alone: between the sends kernel
/// users post (REG_MR, SEND, REG_MR, SEND...) they stay done, so the
/// requester passes over them and never registers an MR twice (the second
/// registration would find the MR valid, not free, and fail the QP; C 6.12
/// rdma_rxe re-runs them, which kills a nvme-rdma host's queue on its first
/// retransmission).
#[test]
fn retry_never_reruns_a_done_reg_mr() {
    let qp = rc(1024);
    let send = WqeInfo::new(WrOpcode::Send, qp::Type::Rc, SendFlags(0), 64, 0);
    let reg = WqeInfo::new(WrOpcode::RegMr, qp::Type::Rc, SendFlags(0), 0, 0);
    assert!(reg.mask.intersects(WrMask::LOCAL_OP));
    let sent = |psn| Progress {
        state: WqeState::Pending,
        first_psn: psn,
        last_psn: psn,
        resid: 0,
        iova: 0,
        has_rd_atomic: false,
        status: WcStatus::Success,
    };
    let mut chain = [
        (send, sent(10)),
        (
            reg,
            Progress {
                state: WqeState::Done,
                ..Progress::posted(0, 0)
            },
        ),
        (send, sent(11)),
    ];
    let mut req = State::new(12, 4);
    begin_retry(&mut req, 10);
    let mut first = true;
    for (info, p) in chain.iter_mut() {
        assert!(retry_wqe(&mut req, &qp, info, p, &mut first, 10));
    }
    assert_eq!(
        chain.map(|(_, p)| p.state),
        [WqeState::Posted, WqeState::Done, WqeState::Posted]
    );
}

#[test]
fn retry_skips_a_fully_acknowledged_first_wqe() {
    let qp = rc(1024);
    let write = WqeInfo::new(
        WrOpcode::RdmaWrite,
        qp::Type::Rc,
        SendFlags(0),
        5000,
        0x10_000,
    );
    let send = WqeInfo::new(WrOpcode::Send, qp::Type::Rc, SendFlags(0), 3000, 0);
    let mut pw = Progress {
        state: WqeState::Pending,
        first_psn: 25,
        last_psn: 29,
        resid: 0,
        iova: 0x10_000,
        has_rd_atomic: false,
        status: WcStatus::Success,
    };
    let mut ps = Progress {
        state: WqeState::Pending,
        first_psn: 30,
        last_psn: 32,
        resid: 0,
        iova: 0,
        has_rd_atomic: false,
        status: WcStatus::Success,
    };
    let mut req = State::new(33, 4);
    begin_retry(&mut req, 30);
    let mut first = true;
    assert!(retry_wqe(&mut req, &qp, &write, &mut pw, &mut first, 30));
    assert_eq!((pw.state, pw.resid, first), (WqeState::Pending, 0, true));
    assert!(retry_wqe(&mut req, &qp, &send, &mut ps, &mut first, 30));
    assert_eq!((ps.state, ps.resid, first), (WqeState::Posted, 3000, false));
    // The requester passes over it and resends the send at its own PSNs.
    assert_eq!(plan(&mut req, &qp, &write, &mut pw, &gates(30)), Step::Skip);
    let Step::Send(pkt) = plan(&mut req, &qp, &send, &mut ps, &gates(30)) else {
        panic!()
    };
    assert_eq!((pkt.opcode, pkt.psn), (Opcode::RcSendFirst, 30));
    // C would resend it as a zero-length WRITE_ONLY at PSN 30 instead.
    let r = rewind(qp::Type::Rc, WrOpcode::RdmaWrite, 5000, 1024, 5);
    assert_eq!((r.resid, r.opcode), (0, Some(Opcode::RcWriteLast)));
    assert_eq!(
        next_opcode(qp::Type::Rc, WrOpcode::RdmaWrite, r.opcode, 0, 1024),
        Ok(Opcode::RcWriteOnly)
    );
}

#[test]
fn from_wqe_reads_the_retry_address() {
    use crate::proto::uapi::{send_wqe, send_wr, SqLimits};
    let mut slot = vec![0u8; send_wqe::LEN + 64];
    let put32 =
        |s: &mut Vec<u8>, off: usize, v: u32| s[off..off + 4].copy_from_slice(&v.to_ne_bytes());
    put32(
        &mut slot,
        send_wr::OPCODE,
        WrOpcode::AtomicFetchAndAdd.as_raw(),
    );
    slot[send_wr::ATOMIC_REMOTE_ADDR..send_wr::ATOMIC_REMOTE_ADDR + 8]
        .copy_from_slice(&0xabcdu64.to_ne_bytes());
    put32(&mut slot, send_wqe::DMA, 8);
    put32(&mut slot, send_wqe::DMA + 12, 1);
    put32(&mut slot, send_wqe::DATA + 8, 8);
    let sq = SqLimits {
        qp_type: qp::Type::Rc,
        max_sge: 4,
        max_inline: 0,
        kernel: false,
    };
    let wqe = SendWqe::from_bytes(&slot, &sq).unwrap();
    let i = WqeInfo::from_wqe(&wqe, qp::Type::Rc);
    assert_eq!(
        (i.retry_iova, i.length, i.mask),
        (0xabcd, 8, WrMask::ATOMIC)
    );
}

/// A user atomic write or flush laid out as rdma-core's `wr_atomic_write`
/// and `wr_flush` write it: the RETH names the remote address, not 0.
#[test]
fn atomic_write_and_flush_target_their_remote_address() {
    use crate::proto::uapi::{dma, send_wqe, send_wr, SqLimits};
    let sq = SqLimits {
        qp_type: qp::Type::Rc,
        max_sge: 4,
        max_inline: 0,
        kernel: false,
    };
    let qp = ReqQp {
        qp_type: qp::Type::Rc,
        path_mtu: 1024,
        port_mtu: 1024,
        max_rd_atomic: 1,
    };
    let put = |s: &mut Vec<u8>, off: usize, v: &[u8]| s[off..off + v.len()].copy_from_slice(v);

    let mut aw = vec![0u8; send_wqe::LEN + 64];
    put(
        &mut aw,
        send_wr::OPCODE,
        &WrOpcode::AtomicWrite.as_raw().to_ne_bytes(),
    );
    put(
        &mut aw,
        send_wr::RDMA_REMOTE_ADDR,
        &0x7f00_1000u64.to_ne_bytes(),
    );
    put(&mut aw, send_wr::RDMA_RKEY, &0x4321u32.to_ne_bytes());
    put(&mut aw, send_wqe::IOVA, &0x7f00_1000u64.to_ne_bytes());
    put(&mut aw, send_wqe::DMA + dma::LENGTH, &8u32.to_ne_bytes());
    put(&mut aw, send_wqe::DATA, b"cccccccc");
    let wqe = SendWqe::from_bytes(&aw, &sq).unwrap();
    assert_eq!(wqe.wr.remote_key(), 0x4321);
    let i = WqeInfo::from_wqe(&wqe, qp::Type::Rc);
    assert_eq!(i.retry_iova, 0x7f00_1000);
    let mut req = State::new(0, 1);
    let mut p = Progress::posted(i.length, i.retry_iova);
    let pkts = send_all(&mut req, &qp, &i, &mut p);
    assert_eq!(pkts.len(), 1);
    let p0 = pkts[0];
    assert_eq!(
        (p0.opcode, p0.reth_va, p0.reth_len, p0.payload),
        (Opcode::RcAtomicWrite, 0x7f00_1000, 8, 8)
    );

    let mut fl = vec![0u8; send_wqe::LEN + 64];
    put(
        &mut fl,
        send_wr::OPCODE,
        &WrOpcode::Flush.as_raw().to_ne_bytes(),
    );
    put(
        &mut fl,
        send_wr::FLUSH_REMOTE_ADDR,
        &0x7f00_2000u64.to_ne_bytes(),
    );
    put(&mut fl, send_wr::FLUSH_RKEY, &0x5678u32.to_ne_bytes());
    put(&mut fl, send_wr::FLUSH_TYPE, &[1]);
    put(&mut fl, send_wr::FLUSH_LEVEL, &[0]);
    put(&mut fl, send_wqe::IOVA, &0x7f00_2000u64.to_ne_bytes());
    put(&mut fl, send_wqe::DMA + dma::LENGTH, &64u32.to_ne_bytes());
    let wqe = SendWqe::from_bytes(&fl, &sq).unwrap();
    assert_eq!(wqe.wr.remote_key(), 0x5678);
    let i = WqeInfo::from_wqe(&wqe, qp::Type::Rc);
    let mut req = State::new(0, 1);
    let mut p = Progress::posted(i.length, i.retry_iova);
    let pkts = send_all(&mut req, &qp, &i, &mut p);
    assert_eq!(
        (pkts[0].opcode, pkts[0].reth_va, pkts[0].reth_len),
        (Opcode::RcFlush, 0x7f00_2000, 64)
    );
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
