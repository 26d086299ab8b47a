// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Tests of the responder's request checks against transliterations of rxe_resp.c.

use super::*;
use crate::proto::headers::{self, Bth, Deth, ExtHeader, Ieth, ImmDt};
use crate::proto::opcode::ALL;
use crate::proto::packet;
use crate::proto::psn::{psn_sub, PSN_MASK};
use crate::proto::testing::rng::Rng;
use std::vec;
use std::vec::Vec;

pub(crate) fn req(opcode: Opcode, psn: u32, payload: u32) -> Request {
    Request {
        opcode,
        psn,
        ack_req: false,
        se: false,
        pad: pad_of(payload),
        payload,
        reth: None,
        atmeth: None,
        feth: None,
        imm: None,
        invalidate: None,
        src_qp: None,
    }
}

fn pad_of(n: u32) -> u8 {
    (n.wrapping_neg() & 3) as u8
}

fn qp(qp_type: qp::Type) -> RespQp {
    RespQp {
        qp_type,
        mtu: 1024,
        access: access::REMOTE_READ | access::REMOTE_WRITE | access::REMOTE_ATOMIC,
        srq: false,
        min_rnr_timer: 12,
    }
}

#[derive(Debug, PartialEq, Eq)]
enum CSeq {
    Ok,
    MissingFirst,
    LastC,
    LastD1e,
    /// UC: `drop_msg = 1`, cleanup.
    Drop,
}

/// `check_op_seq()` with C's numbers.
fn c_op_seq(qp_type: qp::Type, prev: i32, op: u8) -> CSeq {
    match qp_type {
        qp::Type::Rc => match prev {
            0 | 1 => {
                if [1, 2, 3, 0x16].contains(&op) {
                    CSeq::Ok
                } else {
                    CSeq::LastC
                }
            }
            6 | 7 => {
                if [7, 8, 9].contains(&op) {
                    CSeq::Ok
                } else {
                    CSeq::LastC
                }
            }
            _ => {
                if [1, 2, 3, 0x16, 7, 8, 9].contains(&op) {
                    CSeq::MissingFirst
                } else {
                    CSeq::Ok
                }
            }
        },
        qp::Type::Uc => match prev {
            0x20 | 0x21 => {
                if [0x21, 0x22, 0x23].contains(&op) {
                    CSeq::Ok
                } else {
                    CSeq::LastD1e
                }
            }
            0x26 | 0x27 => {
                if [0x27, 0x28, 0x29].contains(&op) {
                    CSeq::Ok
                } else {
                    CSeq::LastD1e
                }
            }
            _ => {
                if [0x21, 0x22, 0x23, 0x27, 0x28, 0x29].contains(&op) {
                    CSeq::Drop
                } else {
                    CSeq::Ok
                }
            }
        },
        _ => CSeq::Ok,
    }
}

#[test]
fn op_sequence_matches_c_for_every_pair() {
    let prevs: Vec<Option<Opcode>> = core::iter::once(None)
        .chain(ALL.iter().copied().map(Some))
        .collect();
    for qp_type in [qp::Type::Rc, qp::Type::Uc, qp::Type::Ud, qp::Type::Gsi] {
        for &prev in &prevs {
            for &op in ALL {
                let mut st = State::new(0, 4);
                st.opcode = prev;
                let want = c_op_seq(qp_type, prev.map_or(-1, |o| i32::from(o.bits())), op.bits());
                let got = match check_op_seq(&mut st, &qp(qp_type), &req(op, 0, 0)) {
                    Ok(()) => CSeq::Ok,
                    Err(Check::Error(RespError::MissingOpcodeFirst)) => CSeq::MissingFirst,
                    Err(Check::Error(RespError::MissingOpcodeLastC)) => CSeq::LastC,
                    Err(Check::Error(RespError::MissingOpcodeLastD1e)) => CSeq::LastD1e,
                    Err(Check::Drop) => {
                        assert!(st.drop_msg);
                        CSeq::Drop
                    }
                    Err(other) => panic!("{other:?}"),
                };
                assert_eq!(got, want, "{qp_type:?} {prev:?} {op:?}");
            }
        }
    }
}

#[test]
fn rc_psn_checks() {
    let q = qp(qp::Type::Rc);
    let mut st = State::new(PSN_MASK, 4);
    // Ahead: one NAK, then silence until the expected PSN shows up.
    assert_eq!(
        check_request(&mut st, &q, &req(Opcode::RcSendOnly, 1, 0)),
        Check::Error(RespError::PsnOutOfSeq)
    );
    assert!(st.sent_psn_nak);
    assert_eq!(
        check_request(&mut st, &q, &req(Opcode::RcSendOnly, 2, 0)),
        Check::Drop
    );
    // Behind (across the wrap): a duplicate, which does not clear the NAK state.
    assert_eq!(
        check_request(&mut st, &q, &req(Opcode::RcSendOnly, PSN_MASK - 3, 0)),
        Check::Duplicate
    );
    assert!(st.sent_psn_nak);
    assert_eq!(
        check_request(&mut st, &q, &req(Opcode::RcSendOnly, PSN_MASK, 0)),
        Check::Valid
    );
    assert!(!st.sent_psn_nak);
    // Half the space away counts as behind.
    assert_eq!(
        check_request(
            &mut st,
            &q,
            &req(Opcode::RcSendOnly, psn_add(PSN_MASK, 1 << 23), 0)
        ),
        Check::Duplicate
    );
}

#[test]
fn uc_resynchronises_on_first_packets() {
    let q = qp(qp::Type::Uc);
    let mut st = State::new(10, 0);
    // A gap in the middle of a message drops until the next first packet.
    assert_eq!(
        check_request(&mut st, &q, &req(Opcode::UcSendMiddle, 12, 1024)),
        Check::Drop
    );
    assert!(st.drop_msg);
    assert_eq!(
        check_request(&mut st, &q, &req(Opcode::UcSendLast, 10, 5)),
        Check::Drop
    );
    assert_eq!(
        check_request(&mut st, &q, &req(Opcode::UcSendFirst, 20, 1024)),
        Check::Valid
    );
    assert!(!st.drop_msg);
    // UC has no duplicates: an old first packet starts over.
    assert_eq!(
        check_request(&mut st, &q, &req(Opcode::UcWriteOnly, 5, 0)),
        Check::Valid
    );
    // A write without remote write rights is dropped with its message.
    let ro = RespQp {
        access: access::REMOTE_READ,
        ..q
    };
    st.psn = 30;
    assert_eq!(
        check_request(&mut st, &ro, &req(Opcode::UcWriteFirst, 30, 1024)),
        Check::Drop
    );
    assert!(st.drop_msg);
    // UD never checks the sequence.
    let mut st = State::new(0, 0);
    assert_eq!(
        check_request(&mut st, &qp(qp::Type::Ud), &req(Opcode::UdSendOnly, 77, 5)),
        Check::Valid
    );
}

#[test]
fn rc_access_rights() {
    use Opcode::*;
    let flush = |ptype| Request {
        feth: Some(Feth { ptype, level: 0 }),
        ..req(RcFlush, 0, 0)
    };
    let cases: &[(u32, Request, bool)] = &[
        (access::REMOTE_READ, req(RcReadRequest, 0, 0), true),
        (access::REMOTE_WRITE, req(RcReadRequest, 0, 0), false),
        (access::REMOTE_WRITE, req(RcWriteOnly, 0, 0), true),
        (access::REMOTE_READ, req(RcWriteOnly, 0, 0), false),
        (access::REMOTE_WRITE, req(RcAtomicWrite, 0, 8), true),
        (access::REMOTE_ATOMIC, req(RcAtomicWrite, 0, 8), false),
        (access::REMOTE_ATOMIC, req(RcFetchAdd, 0, 0), true),
        (access::REMOTE_WRITE, req(RcCompareSwap, 0, 0), false),
        (0, req(RcSendOnly, 0, 0), true),
        (0, flush(0), true),
        (0, flush(FLUSH_GLOBAL), false),
        (access::FLUSH_GLOBAL, flush(FLUSH_GLOBAL), true),
        (
            access::FLUSH_GLOBAL,
            flush(FLUSH_GLOBAL | FLUSH_PERSISTENT),
            false,
        ),
        (
            access::FLUSH_GLOBAL | access::FLUSH_PERSISTENT,
            flush(FLUSH_GLOBAL | FLUSH_PERSISTENT),
            true,
        ),
    ];
    for (acc, r, ok) in cases {
        let q = RespQp {
            access: *acc,
            ..qp(qp::Type::Rc)
        };
        let mut st = State::new(0, 4);
        let want = if *ok {
            Check::Valid
        } else {
            Check::Error(RespError::UnsupportedOpcode)
        };
        assert_eq!(
            check_request(&mut st, &q, r),
            want,
            "{acc:#x} {:?}",
            r.opcode
        );
    }
}

#[test]
fn payload_lengths() {
    use Opcode::*;
    let q = qp(qp::Type::Rc);
    let cases = [
        (RcSendOnly, 0, true),
        (RcSendOnly, 1024, true),
        (RcSendOnly, 1025, false),
        (RcSendFirst, 1024, true),
        (RcSendFirst, 1000, false),
        (RcSendMiddle, 1024, true),
        (RcSendMiddle, 1023, false),
        (RcSendLast, 1, true),
        (RcSendLast, 1024, true),
        (RcSendLast, 0, false),
        (RcSendLast, 1025, false),
        (RcWriteLastImm, 0, false),
        (RcReadRequest, 0, true),
        (RcAtomicWrite, 8, true),
    ];
    for (op, n, ok) in cases {
        assert_eq!(check_length(&q, &req(op, 0, n)).is_ok(), ok, "{op:?} {n}");
    }
    // UD payloads are not held to the path MTU here.
    assert!(check_length(&qp(qp::Type::Ud), &req(Opcode::UdSendOnly, 0, 4096)).is_ok());
    let big = |len| Request {
        reth: Some(Reth {
            va: 0,
            rkey: 1,
            len,
        }),
        ..req(RcReadRequest, 0, 0)
    };
    assert!(check_length(&q, &big(1 << 31)).is_ok());
    assert_eq!(
        check_length(&q, &big((1 << 31) + 1)),
        Err(RespError::Length)
    );
}

#[test]
fn rdma_targets() {
    use Opcode::*;
    let mut st = State::new(0, 4);
    let reth = |op, len| Request {
        reth: Some(Reth {
            va: 0x1000,
            rkey: 0x55,
            len,
        }),
        ..req(op, 0, 0)
    };
    let t = rdma_target(&mut st, &reth(RcWriteFirst, 4096)).unwrap();
    assert_eq!(
        t,
        Target {
            rkey: 0x55,
            access: Access::REMOTE_WRITE,
            va: 0x1000,
            len: 4096,
            check_range: true
        }
    );
    assert_eq!((st.length, st.resid), (4096, 4096));
    // A middle packet uses what the first one stored.
    st.va = 0x1400;
    st.resid = 3072;
    let t = rdma_target(&mut st, &req(RcWriteMiddle, 1, 1024)).unwrap();
    assert_eq!((t.va, t.len, t.rkey), (0x1400, 3072, 0x55));
    // Zero-length reads and writes name no memory, and forget the rkey.
    assert_eq!(rdma_target(&mut st, &reth(RcReadRequest, 0)), None);
    assert_eq!(st.rkey, 0);
    assert_eq!(rdma_target(&mut st, &reth(RcWriteOnly, 0)), None);
    let t = rdma_target(&mut st, &reth(RcReadRequest, 10)).unwrap();
    assert_eq!(t.access, Access::REMOTE_READ);
    let aw = Request {
        reth: Some(Reth {
            va: 8,
            rkey: 9,
            len: 8,
        }),
        ..req(RcAtomicWrite, 0, 8)
    };
    assert_eq!(
        rdma_target(&mut st, &aw).unwrap().access,
        Access::REMOTE_WRITE
    );
    let at = Request {
        atmeth: Some(AtmEth {
            va: 0x40,
            rkey: 7,
            swap_add: 1,
            compare: 2,
        }),
        ..req(RcFetchAdd, 0, 0)
    };
    let t = rdma_target(&mut st, &at).unwrap();
    assert_eq!(
        t,
        Target {
            rkey: 7,
            access: Access::REMOTE_ATOMIC,
            va: 0x40,
            len: 8,
            check_range: true
        }
    );
    // A whole-MR flush is not range checked; a zero-length flush still names an MR.
    let fl = |level, ptype| Request {
        reth: Some(Reth {
            va: 0,
            rkey: 3,
            len: 0,
        }),
        feth: Some(Feth { ptype, level }),
        ..req(RcFlush, 0, 0)
    };
    let t = rdma_target(&mut st, &fl(1, FLUSH_PERSISTENT)).unwrap();
    assert_eq!(
        (t.check_range, t.access, t.rkey),
        (false, Access::FLUSH_PERSISTENT, 3)
    );
    let t = rdma_target(&mut st, &fl(0, FLUSH_GLOBAL | FLUSH_PERSISTENT)).unwrap();
    assert!(t.check_range);
    assert_eq!(
        t.access,
        Access::FLUSH_GLOBAL.union(Access::FLUSH_PERSISTENT)
    );
}

#[test]
fn write_length_rules() {
    use Opcode::*;
    let q = qp(qp::Type::Rc);
    let mut st = State::new(0, 4);
    // (resid, opcode, payload, pad, ok)
    let cases = [
        (4096, RcWriteFirst, 1024, 0, true),
        (4096, RcWriteFirst, 1024, 1, false),
        (2000, RcWriteMiddle, 1000, 0, false),
        (1000, RcWriteLast, 1000, 0, true),
        (1000, RcWriteLast, 999, 1, false),
        (1001, RcWriteOnly, 1001, 3, true),
        (1001, RcWriteOnly, 1001, 0, false),
        (8, RcAtomicWrite, 8, 0, true),
        (16, RcAtomicWrite, 8, 0, false),
        (8, RcAtomicWrite, 4, 0, false),
        (8, RcAtomicWrite, 8, 1, false),
        (100, RcReadRequest, 0, 0, true),
    ];
    for (resid, op, payload, pad, ok) in cases {
        st.resid = resid;
        let r = Request {
            pad,
            ..req(op, 0, payload)
        };
        assert_eq!(
            check_rdma_len(&st, &q, &r).is_ok(),
            ok,
            "{resid} {op:?} {payload} {pad}"
        );
    }
}

#[test]
fn resources_ring() {
    let mut st = State::new(0, 2);
    let r = |psn, len| Request {
        reth: Some(Reth {
            va: 0,
            rkey: 1,
            len,
        }),
        ..req(Opcode::RcReadRequest, psn, 0)
    };
    st.resid = 3000;
    let a = st
        .prepare_res(ResKind::Read, &r(PSN_MASK - 1, 3000), 1024)
        .unwrap();
    assert_eq!((st.res[a].first_psn, st.res[a].last_psn), (PSN_MASK - 1, 0));
    assert_eq!(st.find_res(PSN_MASK), Some(a));
    assert_eq!(st.find_res(0), Some(a));
    assert_eq!(st.find_res(1), None);
    let b = st
        .prepare_res(ResKind::Atomic, &req(Opcode::RcFetchAdd, 1, 0), 1024)
        .unwrap();
    assert_eq!(st.cur, Some(b));
    // The third recycles the oldest.
    let c = st
        .prepare_res(ResKind::Atomic, &req(Opcode::RcFetchAdd, 2, 0), 1024)
        .unwrap();
    assert_eq!(c, a);
    assert_eq!(st.find_res(PSN_MASK), None);
    assert_eq!(st.find_res(2), Some(c));
    // Zero-length reads still span one PSN.
    st.resid = 0;
    let d = st.prepare_res(ResKind::Read, &r(10, 0), 1024).unwrap();
    assert_eq!(st.res[d].last_psn, 10);
    // No resources at all.
    let mut none = State::new(0, 0);
    assert_eq!(
        none.prepare_res(ResKind::Flush, &req(Opcode::RcFlush, 0, 0), 1024),
        None
    );
    assert_eq!(none.find_res(0), None);
    // Reset frees them; resizing empties them; the count is capped.
    st.reset();
    assert_eq!((st.find_res(2), st.cur), (None, None));
    st.set_max_dest_rd_atomic(1000);
    assert_eq!(st.res_count, MAX_RESOURCES);
    st.set_rq_psn(PSN_MASK + 2);
    assert_eq!(st.psn, 1);
}

#[test]
fn request_from_packet() {
    let mut buf = vec![0u8; 64];
    let op = Opcode::RcSendOnlyInv;
    let mut bth = Bth::new(op, 0xffff, 17, 0x12_3456);
    bth.ack_req = true;
    bth.se = true;
    bth.pad = 3;
    bth.write(&mut buf).unwrap();
    headers::write_ext(op, &mut buf, &Ieth { rkey: 0xabcd }).unwrap();
    // 16 bytes of headers, 5 of payload, 3 pad, 4 ICRC.
    buf.truncate(16 + 5 + 3 + 4);
    let info = packet::parse(&buf).unwrap();
    let r = Request::from_packet(&info, &buf).unwrap();
    assert_eq!(
        (r.psn, r.ack_req, r.se, r.pad, r.payload),
        (0x12_3456, true, true, 3, 5)
    );
    assert_eq!(
        (r.invalidate, r.imm, r.reth, r.src_qp),
        (Some(0xabcd), None, None, None)
    );

    let op = Opcode::UdSendOnlyImm;
    let mut buf = vec![0u8; 12 + 8 + 4 + 4];
    Bth::new(op, 0xffff, 1, 5).write(&mut buf).unwrap();
    headers::write_ext(
        op,
        &mut buf,
        &Deth {
            qkey: 1,
            src_qpn: 0x42,
        },
    )
    .unwrap();
    headers::write_ext(op, &mut buf, &ImmDt([1, 2, 3, 4])).unwrap();
    let info = packet::parse(&buf).unwrap();
    let r = Request::from_packet(&info, &buf).unwrap();
    assert_eq!(
        (r.src_qp, r.imm, r.payload),
        (Some(0x42), Some(u32::from_ne_bytes([1, 2, 3, 4])), 0)
    );
    let _ = Deth::parse(&buf[12..]);

    // A MIDDLE packet: no extension header, the BTH fields and the length.
    let op = Opcode::RcWriteMiddle;
    let mut buf = vec![0u8; 12 + 256 + 4];
    let mut bth = Bth::new(op, 0xffff, 9, 77);
    bth.ack_req = true;
    bth.write(&mut buf).unwrap();
    let info = packet::parse(&buf).unwrap();
    let r = Request::from_packet(&info, &buf).unwrap();
    assert_eq!(
        (r.opcode, r.psn, r.ack_req, r.se, r.pad, r.payload),
        (op, 77, true, false, 0, 256)
    );
    assert_eq!(
        (r.reth, r.atmeth, r.feth, r.imm, r.invalidate, r.src_qp),
        (None, None, None, None, None, None)
    );
}

#[test]
fn fuzz_checks() {
    let mut rng = Rng::new(0xfeed);
    let types = [qp::Type::Rc, qp::Type::Uc, qp::Type::Ud, qp::Type::Gsi];
    for _ in 0..100_000 {
        let qp_type = rng.pick(&types);
        let q = RespQp {
            qp_type,
            mtu: rng.pick(&[256, 1024, 4096]),
            access: rng.below(1024),
            srq: rng.bool(),
            min_rnr_timer: rng.below(32) as u8,
        };
        let mut st = State::new(rng.u32(), rng.below(9));
        st.opcode = if rng.bool() {
            None
        } else {
            Some(rng.pick(ALL))
        };
        st.drop_msg = rng.bool();
        st.sent_psn_nak = rng.bool();
        st.resid = rng.u32();
        let op = rng.pick(ALL);
        let mut r = req(
            op,
            psn_sub(st.psn, rng.below(5)).wrapping_add(rng.below(5)) & PSN_MASK,
            rng.below(5000),
        );
        r.pad = rng.below(4) as u8;
        if op.has(Mask::RETH) {
            r.reth = Some(Reth {
                va: rng.next(),
                rkey: rng.u32(),
                len: rng.u32(),
            });
        }
        if op.has(Mask::ATMETH) {
            r.atmeth = Some(AtmEth {
                va: rng.next(),
                rkey: rng.u32(),
                swap_add: rng.next(),
                compare: rng.next(),
            });
        }
        if op.has(Mask::FETH) {
            r.feth = Some(Feth {
                ptype: rng.below(16) as u8,
                level: rng.below(4) as u8,
            });
        }
        let before = st.clone();
        let c = check_request(&mut st, &q, &r);
        assert_eq!(st.psn, before.psn);
        match c {
            Check::Duplicate => assert_eq!(qp_type, qp::Type::Rc),
            Check::Error(RespError::PsnOutOfSeq) => {
                assert!(qp_type == qp::Type::Rc && st.sent_psn_nak)
            }
            _ => {}
        }
        let _ = check_length(&q, &r);
        if let Some(t) = rdma_target(&mut st, &r) {
            assert_eq!(t.len, st.resid);
        }
        let _ = check_rdma_len(&st, &q, &r);
        if let Some(i) = st.prepare_res(ResKind::Read, &r, q.mtu) {
            assert!(i < st.res_count);
            assert!(st.res[i].last_psn <= PSN_MASK);
            // Lengths past 2^31 (refused by check_length) can wrap the range.
            if r.reth.is_none_or(|h| h.len <= 1 << 31) {
                assert!(st.find_res(r.psn).is_some());
            }
        }
    }
}

#[test]
fn flush_pieces_end_on_step_boundaries() {
    const S: u64 = FLUSH_STEP;
    assert_eq!(flush_piece_end(0, 3 * S), S);
    assert_eq!(flush_piece_end(5, 3 * S), S);
    assert_eq!(flush_piece_end(S, 3 * S), 2 * S);
    assert_eq!(flush_piece_end(S - 1, 3 * S), S);
    assert_eq!(flush_piece_end(2 * S + 7, 2 * S + 9), 2 * S + 9);
    assert_eq!(flush_piece_end(9, 9), 9);
    // At the top of the address space: no overflow.
    assert_eq!(flush_piece_end(u64::MAX - 5, u64::MAX), u64::MAX);
    assert_eq!(
        flush_piece_end(u64::MAX - S - 5, u64::MAX),
        u64::MAX - S + 1
    );
    // Every piece of a walk is at most one step, and the walk ends.
    let (mut next, end, mut n) = (12_345u64, 10 * S + 77, 0);
    while next < end {
        let e = flush_piece_end(next, end);
        assert!(e > next && e - next <= S);
        next = e;
        n += 1;
    }
    assert_eq!((next, n), (end, 11));
}

#[test]
fn flush_rights_follow_the_placement_type() {
    assert_eq!(flush_rights(0), Access::NONE);
    assert_eq!(flush_rights(FLUSH_GLOBAL), Access::FLUSH_GLOBAL);
    assert_eq!(flush_rights(FLUSH_PERSISTENT), Access::FLUSH_PERSISTENT);
    assert_eq!(
        flush_rights(FLUSH_GLOBAL | FLUSH_PERSISTENT),
        Access::FLUSH_GLOBAL.union(Access::FLUSH_PERSISTENT)
    );
}
