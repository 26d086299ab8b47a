// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Responder tests away from the plain RC path: duplicates and sequence
//! errors, UC and UD, failed invalidations, errors while requests are
//! queued, the PSN wrap, ODP faults and the random run.

use super::*;
use crate::proto::responder;

/// A message resent after a timeout: each duplicate is answered with its
/// own PSN, so only the resent last packet acknowledges the whole message.
#[test]
fn resent_message_acks_own_psns() {
    let mut t = T::new(qp::Type::Rc);
    t.io.rq.extend([4096]);
    t.send(rq(Opcode::RcSendFirst, 100, 1024), bytes(1024, 1));
    t.send(rq(Opcode::RcSendMiddle, 101, 1024), bytes(1024, 2));
    t.send(rq(Opcode::RcSendLast, 102, 1024), bytes(1024, 3));
    assert_eq!(t.io.acks(), [ack(102, 1)]);
    t.io.out.clear();
    t.send(rq(Opcode::RcSendFirst, 100, 1024), bytes(1024, 1));
    t.send(rq(Opcode::RcSendMiddle, 101, 1024), bytes(1024, 2));
    t.send(rq(Opcode::RcSendLast, 102, 1024), bytes(1024, 3));
    assert_eq!(t.io.acks(), [ack(100, 1), ack(101, 1), ack(102, 1)]);
    assert_eq!((t.io.cqes.len(), t.st.psn), (1, 103));
}

/// A duplicate behind a held ACK for a later PSN is answered by that ACK.
#[test]
fn duplicate_behind_held_ack() {
    let mut t = T::new(qp::Type::Rc);
    t.io.coalesce = true;
    t.io.rq.extend([64, 64]);
    t.send(rq(Opcode::RcSendOnly, 100, 8), bytes(8, 0));
    t.io.out.clear();
    t.io.push(rq(Opcode::RcSendOnly, 101, 8), bytes(8, 0));
    t.io.push(rq(Opcode::RcSendOnly, 100, 8), bytes(8, 0));
    t.drain();
    assert_eq!(t.io.acks(), [ack(101, 2)]);
}

#[test]
fn duplicates_and_sequence_errors() {
    let mut t = T::new(qp::Type::Rc);
    t.io.rq.extend([64, 64]);
    t.send(rq(Opcode::RcSendOnly, 100, 8), bytes(8, 0));
    t.send(rq(Opcode::RcSendOnly, 101, 8), bytes(8, 0));
    // Duplicate send/write: ACK with its own PSN, whatever AckReq says.
    let mut dup = rq(Opcode::RcSendOnly, 100, 8);
    dup.ack_req = false;
    t.send(dup, bytes(8, 0));
    assert_eq!(t.last_ack(), ack(100, 2));
    let dup = rq(Opcode::RcSendOnly, 101, 8);
    t.send(dup, bytes(8, 0));
    assert_eq!(t.last_ack(), ack(101, 2));
    assert_eq!(t.io.cqes.len(), 2);
    // Ahead: NAK with the expected PSN, once.
    t.io.out.clear();
    t.send(rq(Opcode::RcSendOnly, 105, 8), bytes(8, 0));
    t.send(rq(Opcode::RcSendOnly, 106, 8), bytes(8, 0));
    assert_eq!(
        t.io.acks(),
        [Ack {
            opcode: Opcode::RcAck,
            psn: 102,
            syndrome: 0x60,
            msn: 2,
            orig: 0
        }]
    );
    use Event::*;
    assert_eq!(
        t.io.events,
        [
            RecvCompleted,
            RecvCompleted,
            DuplicateRequest,
            DuplicateRequest,
            OutOfSeqRequest
        ]
    );
    // Missing first / last: class C.
    let mut t = T::new(qp::Type::Rc);
    assert!(
        t.send(rq(Opcode::RcSendMiddle, 100, 1024), bytes(1024, 0))
            .qp_error
    );
    assert_eq!(t.last_ack().syndrome, 0x61);
    let mut t = T::new(qp::Type::Rc);
    t.io.rq.push_back(4096);
    t.send(rq(Opcode::RcSendFirst, 100, 1024), bytes(1024, 0));
    assert!(t.send(rq(Opcode::RcWriteOnly, 101, 0), vec![]).qp_error);
    // The broken message's WQE completes in error.
    assert_eq!(t.io.cqes[0].0.status, WcStatus::RemInvReqErr);
}

#[test]
fn uc_recovers_from_a_lost_message_tail() {
    // Found by fuzz_tests: after a UC message lost its tail, the next
    // message met the stale first/middle opcode and was refused, and so
    // was every one after it when no receive WQE was held (a write, or
    // any message with an SRQ): the QP never received again.
    for srq in [false, true] {
        // An RDMA write cut short, then sends.
        let mut t = T::new(qp::Type::Uc);
        t.qp.srq = srq;
        t.io.srq = srq;
        t.io.rq.extend([4096, 4096]);
        t.send(
            with_reth(rq(Opcode::UcWriteFirst, 100, 1024), BASE, 3000),
            bytes(1024, 1),
        );
        assert_eq!(t.st.psn, 101);
        // 101 and 102 are lost; this send is dropped with the broken write.
        t.send(rq(Opcode::UcSendOnly, 103, 8), bytes(8, 2));
        t.send(rq(Opcode::UcSendOnly, 104, 8), bytes(8, 3));
        assert_eq!(t.st.psn, 105, "srq {srq}");
        assert_eq!(
            t.io.cqes.last().map(|c| (c.0.status, c.1.clone())),
            Some((WcStatus::Success, bytes(8, 3)))
        );

        // A send cut short, then sends.
        let mut t = T::new(qp::Type::Uc);
        t.qp.srq = srq;
        t.io.srq = srq;
        t.io.rq.extend([4096, 4096]);
        t.send(rq(Opcode::UcSendFirst, 100, 1024), bytes(1024, 1));
        t.send(rq(Opcode::UcSendOnly, 102, 8), bytes(8, 2));
        t.send(rq(Opcode::UcSendOnly, 103, 8), bytes(8, 3));
        assert_eq!(t.st.psn, 104, "srq {srq}");
        assert_eq!(
            t.io.cqes.last().map(|c| (c.0.status, c.1.clone())),
            Some((WcStatus::Success, bytes(8, 3)))
        );
    }
}

#[test]
fn uc_errors() {
    // D1 (no SRQ): a message cut short is forgotten, its WQE kept and rewound.
    let mut t = T::new(qp::Type::Uc);
    t.io.rq.push_back(4096);
    t.send(rq(Opcode::UcSendFirst, 100, 1024), bytes(1024, 0));
    let o = t.send(rq(Opcode::UcSendOnly, 101, 8), bytes(8, 0));
    assert!(!o.qp_error);
    assert_eq!((t.io.recv_received(), t.st.opcode), (0, None));
    assert!(t.io.cqes.is_empty() && t.io.out.is_empty());
    // E (SRQ): the WQE completes with an error and the message is dropped.
    let mut t = T::new(qp::Type::Uc);
    t.qp.srq = true;
    t.io.srq = true;
    t.io.rq.push_back(4096);
    t.send(rq(Opcode::UcSendFirst, 100, 1024), bytes(1024, 0));
    let o = t.send(rq(Opcode::UcSendOnly, 101, 8), bytes(8, 0));
    assert!(!o.qp_error && t.st.drop_msg);
    assert_eq!(t.io.cqes[0].0.status, WcStatus::RemInvReqErr);
    // Bad rkey: dropped (no SRQ) or completed in error (SRQ); never acked.
    for srq in [false, true] {
        let mut t = T::new(qp::Type::Uc);
        t.qp.srq = srq;
        t.io.srq = srq;
        t.io.rq.push_back(64);
        let mut r = rq(Opcode::UcWriteOnlyImm, 100, 8);
        r.reth = Some(Reth {
            va: BASE,
            rkey: 5,
            len: 8,
        });
        let o = t.send(r, bytes(8, 0));
        assert!(!o.qp_error && t.st.drop_msg && t.io.out.is_empty());
        assert_eq!(t.io.cqes.len(), usize::from(srq));
    }
}

#[test]
fn ud_receive() {
    let mut t = T::new(qp::Type::Ud);
    t.io.rq.extend([48, 40 + 1024, 100]);
    let mut r = rq(Opcode::UdSendOnly, 7, 8);
    r.src_qp = Some(0x33);
    t.send(r, bytes(8, 9));
    let (cqe, data) = &t.io.cqes[0];
    assert_eq!(
        (cqe.byte_len, cqe.src_qp, cqe.wc_flags),
        (48, 0x33, wc_flags::GRH)
    );
    assert_eq!(&data[40..], &bytes(8, 9)[..]);
    // Payloads larger than the path MTU are fine on UD.
    t.send(rq(Opcode::UdSendOnly, 9, 1024), bytes(1024, 1));
    assert_eq!(t.io.cqes[1].0.byte_len, 1064);
    // Too big for the buffer: dropped silently (no SRQ).
    let o = t.send(rq(Opcode::UdSendOnly, 10, 61), bytes(61, 0));
    assert!(!o.qp_error && t.io.out.is_empty());
    assert_eq!(t.io.cqes.len(), 2);
    // Nothing is ever acknowledged on UD.
    assert!(t.io.out.is_empty());
}

#[test]
fn invalidate_of_a_foreign_key_is_class_c() {
    let mut t = T::new(qp::Type::Rc);
    t.io.rq.push_back(64);
    t.io.foreign_keys.push(0x999);
    let mut r = rq(Opcode::RcSendOnlyInv, 100, 8);
    r.invalidate = Some(0x999);
    let o = t.send(r, bytes(8, 0));
    assert!(o.qp_error);
    // Stricter than rdma_rxe: a remote access error NAK, not an ACK.
    assert_eq!(t.last_ack().syndrome, 0x62);
    assert_eq!(t.io.cqes[0].0.status, WcStatus::RemAccessErr);
}

#[test]
fn invalidate_failure_is_class_j() {
    let mut t = T::new(qp::Type::Rc);
    t.io.rq.push_back(64);
    let mut r = rq(Opcode::RcSendOnlyInv, 100, 8);
    r.invalidate = Some(0x999);
    let o = t.send(r, bytes(8, 0));
    assert!(o.qp_error);
    // Still an ACK (C keeps the syndrome), and an error completion.
    assert_eq!(t.last_ack(), ack(100, 0));
    assert_eq!(t.io.cqes[0].0.status, WcStatus::RemInvReqErr);
}

#[test]
fn class_j_behind_queued_requests_is_acknowledged() {
    // A batch: a good SEND, the failing SEND_WITH_INV, another SEND. The
    // good one's ACK may be held, but the failing one's must go before
    // the QP stops, or the requester retries it until RETRY_EXC.
    let mut t = T::new(qp::Type::Rc);
    t.io.coalesce = true;
    for _ in 0..3 {
        t.io.rq.push_back(64);
    }
    t.io.push(rq(Opcode::RcSendOnly, 100, 8), bytes(8, 1));
    let mut bad = rq(Opcode::RcSendOnlyInv, 101, 8);
    bad.invalidate = Some(0x999);
    t.io.push(bad, bytes(8, 2));
    t.io.push(rq(Opcode::RcSendOnly, 102, 8), bytes(8, 3));
    let o = t.drain();
    assert!(o.qp_error);
    let acks = t.io.acks();
    assert_eq!(
        acks.last().map(|a| (a.psn, a.syndrome)),
        Some((101, ACK_SYN))
    );
    assert!(acks.iter().all(|a| a.psn != 102));
    assert_eq!(t.st.ack_owed, None);
    assert_eq!(t.io.cqes[1].0.status, WcStatus::RemInvReqErr);
}

#[test]
fn qp_error_meanwhile_skips_the_ack() {
    let mut t = T::new(qp::Type::Rc);
    t.io.rq.push_back(64);
    t.io.in_error = true;
    t.send(rq(Opcode::RcSendOnly, 100, 8), bytes(8, 0));
    assert_eq!(t.io.cqes.len(), 1);
    assert!(t.io.out.is_empty() && t.io.reqs.is_empty());
}

#[test]
fn psn_wraps() {
    let mut t = T::new(qp::Type::Rc);
    t.st.set_rq_psn(PSN_MASK - 1);
    t.io.rq.extend([4096; 2]);
    t.send(rq(Opcode::RcSendFirst, PSN_MASK - 1, 1024), bytes(1024, 0));
    t.send(rq(Opcode::RcSendMiddle, PSN_MASK, 1024), bytes(1024, 0));
    t.send(rq(Opcode::RcSendLast, 0, 10), bytes(10, 0));
    assert_eq!((t.st.psn, t.io.cqes[0].0.byte_len), (1, 2058));
    t.send(with_reth(rq(Opcode::RcReadRequest, 1, 0), BASE, 1), vec![]);
    t.send(rq(Opcode::RcSendOnly, psn_sub(0, 0), 8), bytes(8, 0));
    assert_eq!(t.last_ack(), ack(0, 2));
}

#[test]
fn recv_cqe_on_error_is_bare() {
    let st = responder::rules::State::new(0, 0);
    let mut r = rq(Opcode::RcSendOnlyImm, 0, 4);
    r.imm = Some(1);
    r.se = true;
    let c = recv_cqe(&st, &r, WcStatus::RemAccessErr, 4);
    assert_eq!(
        c,
        RecvCqe {
            status: WcStatus::RemAccessErr,
            opcode: WcOpcode::Send,
            byte_len: 0,
            wc_flags: 0,
            ex: 0,
            src_qp: 0,
            solicited: true
        }
    );
}

impl T {
    /// Runs like `drain`, faulting absent pages in (the model's counters
    /// run down) and running again; returns the outcome and the faults.
    fn drain_faulting(&mut self) -> (Outcome, u32) {
        let mut faults = 0;
        let mut last = Outcome::default();
        for _ in 0..10_000 {
            let o = run(&mut self.st, &self.qp, &mut self.io);
            if o.fault {
                assert!(!o.progress && !o.qp_error);
                assert!(!self.io.reqs.is_empty(), "a faulted request stays queued");
                faults += 1;
                continue;
            }
            if o.qp_error {
                return (o, faults);
            }
            if !o.progress {
                return (last, faults);
            }
            last = o;
        }
        panic!("responder never settles");
    }
}

#[test]
fn odp_absent_pages_stop_and_resume_requests() {
    // Writes: the faulted packet runs again and lands once.
    let mut t = T::new(qp::Type::Rc);
    let va = BASE + 0x100;
    t.io.absent = 2;
    t.io.push(
        with_reth(rq(Opcode::RcWriteFirst, 100, 1024), va, 1100),
        bytes(1024, 5),
    );
    t.io.push(rq(Opcode::RcWriteLast, 101, 76), bytes(76, 6));
    let (o, faults) = t.drain_faulting();
    assert!(!o.qp_error);
    assert_eq!(faults, 2);
    let mem = &t.io.mrs[&RKEY].data;
    assert_eq!(&mem[0x100..0x500], &bytes(1024, 5)[..]);
    assert_eq!(&mem[0x500..0x54c], &bytes(76, 6)[..]);
    assert_eq!(t.io.acks(), [ack(101, 1)]);
    assert_eq!(t.st.psn, 102);

    // Sends: the receive WQE is kept and filled once.
    t.io.rq.push_back(4096);
    t.io.absent = 1;
    t.io.push(rq(Opcode::RcSendOnly, 102, 300), bytes(300, 9));
    let (o, faults) = t.drain_faulting();
    assert!(!o.qp_error);
    assert_eq!(faults, 1);
    assert_eq!(t.io.cqes.len(), 1);
    assert_eq!(t.io.cqes[0].1, bytes(300, 9));
    assert_eq!(t.last_ack(), ack(102, 2));

    // Reads: a probe before the MSN moves, then a response that races an
    // invalidation; the responses go out once each, in order.
    t.io.probe_absent = 1;
    t.io.absent = 1;
    t.io.push(
        with_reth(rq(Opcode::RcReadRequest, 103, 0), BASE + 0x40, 2500),
        vec![],
    );
    let (o, faults) = t.drain_faulting();
    assert!(!o.qp_error);
    assert_eq!(faults, 2);
    let reads = t.io.reads();
    assert_eq!(
        reads
            .iter()
            .map(|r| (r.psn, r.len, r.msn))
            .collect::<Vec<_>>(),
        [(103, 1024, 3), (104, 1024, 3), (105, 452, 3)]
    );
    assert_eq!((t.st.psn, t.st.msn, t.st.cur), (106, 3, None));

    // Atomics: absent at the probe, then at the operation itself (the
    // resource taken for it is given back); executed once.
    let before = u64::from_ne_bytes(t.io.mrs[&RKEY].data[8..16].try_into().unwrap());
    t.io.probe_absent = 1;
    t.io.absent = 1;
    t.io.push(
        Request {
            atmeth: Some(AtmEth {
                va: BASE + 8,
                rkey: RKEY,
                swap_add: 5,
                compare: 0,
            }),
            ..rq(Opcode::RcFetchAdd, 106, 0)
        },
        vec![],
    );
    let head = t.st.res_head;
    let (o, faults) = t.drain_faulting();
    assert!(!o.qp_error);
    assert_eq!(faults, 2);
    let after = u64::from_ne_bytes(t.io.mrs[&RKEY].data[8..16].try_into().unwrap());
    assert_eq!(after, before.wrapping_add(5));
    assert_eq!(t.last_ack().orig, before);
    assert_eq!(t.st.res_head, (head + 1) % t.st.res_count);
}

#[test]
fn fuzz_run_never_panics() {
    let mut rng = Rng::new(0xdecaf);
    let types = [qp::Type::Rc, qp::Type::Uc, qp::Type::Ud, qp::Type::Gsi];
    let mut outs = 0usize;
    for _ in 0..20_000 {
        let qp_type = rng.pick(&types);
        let mut t = T::with_mr(qp_type, 6000);
        t.qp.srq = rng.bool();
        t.io.srq = t.qp.srq;
        t.qp.access = rng.below(1024);
        t.qp.mtu = rng.pick(&[256, 1024]);
        t.st.set_max_dest_rd_atomic(rng.below(5));
        t.io.cq_full = rng.chance(3);
        t.io.in_error = rng.chance(3);
        if rng.chance(5) {
            t.io.fail_read = Some(rng.pick(&[SendFailed::Send, SendFailed::Access]));
        }
        for _ in 0..rng.below(4) {
            t.io.rq.push_back(rng.below(3000) as usize);
        }
        let ops: Vec<Opcode> = ALL
            .iter()
            .copied()
            .filter(|o| o.has(Mask::REQ) || rng.chance(10))
            .collect();
        for _ in 0..5 {
            let op = rng.pick(&ops);
            let payload = if op.has(Mask::PAYLOAD) {
                rng.below(1100)
            } else {
                0
            };
            let mut r = rq(
                op,
                psn_add(100, rng.below(6)).wrapping_sub(2) & PSN_MASK,
                payload,
            );
            r.ack_req = rng.bool();
            r.pad = rng.below(4) as u8;
            if op.has(Mask::RETH) {
                let va = if rng.bool() {
                    BASE + u64::from(rng.below(7000))
                } else {
                    rng.next()
                };
                let rkey = if rng.chance(80) { RKEY } else { rng.u32() };
                r.reth = Some(Reth {
                    va,
                    rkey,
                    len: if rng.bool() {
                        rng.below(5000)
                    } else {
                        rng.u32()
                    },
                });
            }
            if op.has(Mask::ATMETH) {
                r.atmeth = Some(AtmEth {
                    va: BASE + u64::from(rng.below(100)),
                    rkey: RKEY,
                    swap_add: rng.next(),
                    compare: rng.next(),
                });
            }
            if op.has(Mask::FETH) {
                r.feth = Some(Feth {
                    ptype: rng.below(4) as u8,
                    level: rng.below(3) as u8,
                });
            }
            if op.has(Mask::IETH) {
                r.invalidate = Some(if rng.bool() { RKEY } else { rng.u32() });
            }
            t.io.push(r, bytes(payload, 3));
        }
        let o = t.drain();
        outs += t.io.out.len();
        assert!(t.st.psn <= PSN_MASK && t.st.msn <= PSN_MASK);
        assert!(t.st.cur.is_none_or(|i| i < t.st.res_count));
        if qp_type != qp::Type::Rc {
            assert!(t.io.out.is_empty(), "{qp_type:?} acked");
        }
        if !o.qp_error && !t.io.reqs.is_empty() {
            // Only an RC read reply may stop with requests queued... or none at all.
            assert!(t.st.cur.is_some() || t.io.reqs.is_empty());
        }
    }
    assert!(outs > 1000);
}

/// The reorder buffer: requests beyond a gap are held, unNAKed while they
/// may be reordering, executed in PSN order once the gap fills; the gap is
/// NAKed when enough are held, and when a held one asks for an ACK.
#[test]
fn requests_beyond_a_gap_are_held_until_it_fills() {
    let mid = |psn| {
        let mut r = rq(Opcode::RcSendMiddle, psn, 1024);
        r.ack_req = false;
        r
    };
    // 100 is late: 101 and 102 are held, nothing is executed.
    let mut t = T::new(qp::Type::Rc);
    t.io.reorder = 64;
    t.io.rq.extend([4096; 4]);
    let first100 = {
        let mut r = rq(Opcode::RcSendFirst, 100, 1024);
        r.ack_req = false;
        r
    };
    t.send(mid(101), bytes(1024, 1));
    t.send(rq(Opcode::RcSendLast, 102, 10), bytes(10, 2));
    // 102 asked for an ACK: the gap is NAKed, once.
    let nak = Syndrome::Nak(NakCode::PsnSeqError).encode();
    assert_eq!(t.io.acks().len(), 1);
    assert_eq!((t.last_ack().psn, t.last_ack().syndrome), (100, nak));
    assert_eq!(t.io.held_reqs.len(), 2);
    assert!(t.io.cqes.is_empty());
    // The gap fills: 100, 101, 102 run in order, one message, one ACK.
    t.send(first100, bytes(1024, 0));
    assert!(t.io.held_reqs.is_empty());
    assert_eq!(t.st.psn, 103);
    assert_eq!(t.io.cqes.len(), 1);
    assert_eq!(t.io.cqes[0].0.byte_len, 2058);
    let mut want = bytes(1024, 0);
    want.extend(bytes(1024, 1));
    want.extend(bytes(10, 2));
    assert_eq!(t.io.cqes[0].1, want);
    assert_eq!(t.last_ack(), ack(102, 1));
    // Resends of what ran are duplicates, acknowledged again.
    t.send(mid(101), bytes(1024, 1));
    assert_eq!(t.io.cqes.len(), 1);
    let events = |t: &T, e| t.io.events.iter().filter(|x| **x == e).count();
    assert_eq!(events(&t, Event::ReorderHeld), 2);
    assert_eq!(events(&t, Event::OutOfSeqRequest), 1);

    // Without ACK requests the gap is NAKed at the eighth held request.
    let mut t = T::new(qp::Type::Rc);
    t.io.reorder = 64;
    t.io.rq.extend([16 * 1024; 2]);
    for psn in 101..108 {
        t.send(mid(psn), bytes(1024, psn as u8));
    }
    assert!(t.io.acks().is_empty(), "{:?}", t.io.acks());
    t.send(mid(108), bytes(1024, 108));
    assert_eq!(t.io.acks().len(), 1);
    assert_eq!(t.last_ack().syndrome, nak);
    // More beyond it are held without another NAK; a second copy of a
    // held one changes nothing.
    t.send(mid(109), bytes(1024, 109));
    t.send(mid(105), bytes(1024, 105));
    assert_eq!((t.io.acks().len(), t.io.held_reqs.len()), (1, 9));
    t.send(rq(Opcode::RcSendFirst, 100, 1024), bytes(1024, 100));
    assert_eq!(t.st.psn, 110);
    assert!(t.io.held_reqs.is_empty());
    assert!(t.io.cqes.is_empty(), "the message is still under way");

    // Beyond the buffer's reach a request is NAKed (once) and dropped,
    // as without the buffer.
    let mut t = T::new(qp::Type::Rc);
    t.io.reorder = 64;
    t.send(mid(164), bytes(1024, 0));
    t.send(mid(165), bytes(1024, 0));
    assert!(t.io.held_reqs.is_empty());
    assert_eq!(t.io.acks().len(), 1);
    assert_eq!(t.last_ack().syndrome, nak);
}

/// A held request that does not continue the message the requests before
/// it left (the peer resent those with other contents: rdma_rxe's empty
/// resend of a WQE acknowledged but not retired moves every later PSN by
/// one): everything held goes, the gap is NAKed, and the QP lives on.
#[test]
fn held_requests_of_another_sending_are_dropped() {
    let mut t = T::new(qp::Type::Rc);
    t.io.reorder = 64;
    t.io.rq.extend([4096; 4]);
    let mut mid = rq(Opcode::RcSendMiddle, 101, 1024);
    mid.ack_req = false;
    // First sending: 100 SEND FIRST (lost), 101 MIDDLE, 102 LAST, held.
    t.send(mid, bytes(1024, 1));
    t.send(rq(Opcode::RcSendLast, 102, 10), bytes(10, 2));
    assert_eq!(t.io.held_reqs.len(), 2);
    t.io.out.clear();
    // The resend puts an empty SEND ONLY at 100: 101 no longer fits.
    let o = t.send(rq(Opcode::RcSendOnly, 100, 0), vec![]);
    assert!(!o.qp_error);
    assert!(t.io.held_reqs.is_empty() && t.io.reqs.is_empty());
    assert_eq!(t.st.psn, 101);
    let nak = Syndrome::Nak(NakCode::PsnSeqError).encode();
    assert_eq!((t.last_ack().psn, t.last_ack().syndrome), (101, nak));
    // The resend goes on from 101 and is taken as it comes.
    t.send(rq(Opcode::RcSendFirst, 101, 1024), bytes(1024, 3));
    t.send(rq(Opcode::RcSendLast, 102, 10), bytes(10, 4));
    assert_eq!(t.st.psn, 103);
    assert_eq!(t.io.cqes.len(), 2);
    assert_eq!(t.io.cqes[1].0.byte_len, 1034);
}

/// What answers a resend that fills a NAKed gap: the held requests run
/// behind it under one ACK, or, where another gap holds requests back, a
/// NAK of that gap; and a held request that asks for an ACK gets the NAK
/// again while the gap stays open (its resend, or the NAK, may be lost).
#[test]
fn a_filled_gap_is_answered_once() {
    let mid = |psn| {
        let mut r = rq(Opcode::RcWriteMiddle, psn, 1024);
        r.ack_req = false;
        r
    };
    let answers =
        |t: &T| -> Vec<(u32, u8)> { t.io.acks().iter().map(|a| (a.psn, a.syndrome)).collect() };
    let nak = Syndrome::Nak(NakCode::PsnSeqError).encode();
    let mut t = T::new(qp::Type::Rc);
    t.io.reorder = 1024;
    t.io.coalesce = true;
    // 100 (WRITE FIRST) is lost: 101..=103 held, the 104 LAST asks for an
    // ACK and gets the NAK.
    for psn in 101..104 {
        t.send(mid(psn), bytes(1024, psn as u8));
    }
    t.send(rq(Opcode::RcWriteLast, 104, 1024), bytes(1024, 104));
    assert_eq!(answers(&t), [(100, nak)]);
    // 105 is lost too; 106, a WRITE ONLY asking for an ACK, is held and
    // NAKs the gap at 100 again.
    t.send(
        with_reth(rq(Opcode::RcWriteOnly, 106, 8), BASE, 8),
        bytes(8, 106),
    );
    assert_eq!(answers(&t), [(100, nak), (100, nak)]);
    t.io.out.clear();
    // The resend of 100 runs 100..=104; 106 stays held beyond 105: one
    // answer, the NAK of 105 (which acknowledges 100..=104).
    t.send(
        with_reth(rq(Opcode::RcWriteFirst, 100, 1024), BASE, 5 * 1024),
        bytes(1024, 100),
    );
    assert_eq!(t.st.psn, 105);
    assert_eq!(answers(&t), [(105, nak)]);
    t.io.out.clear();
    // The resend of 105 runs 105 and 106: one ACK, of 106.
    t.send(
        with_reth(rq(Opcode::RcWriteOnly, 105, 8), BASE, 8),
        bytes(8, 105),
    );
    assert_eq!(t.st.psn, 107);
    assert_eq!(answers(&t), [(106, ack(0, 0).syndrome)]);
    assert!(t.io.held_reqs.is_empty());
}
