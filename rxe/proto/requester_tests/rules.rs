// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Requester tests of a message's walk and the rules applied along it:
//! residuals and last PSNs, ACK requests, solicited events, fences, local
//! operations, the PSN window, the skb limit, RD-atomic credits and
//! datagram sizes.

use super::*;

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
