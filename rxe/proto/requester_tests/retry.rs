// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Requester tests of retries: the rewind against C's loop, the retry walk,
//! REG_MRs and fully acknowledged WQEs passed over, and the addresses a
//! retried or user-laid-out WQE targets.

use super::*;

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
