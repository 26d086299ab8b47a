// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Tests of the responder state machine with the in-memory engine model.
//!
//! Here: the request builders and the `T` harness, and the tests of the
//! plain RC path (sends, writes, reads, atomics, flushes, ACK coalescing).
//! Everything else is in `edges.rs`.

use super::*;
use crate::proto::headers::{AtmEth, Feth, Reth};
use crate::proto::mr::Access;
use crate::proto::opcode::ALL;
use crate::proto::psn::{psn_sub, PSN_MASK};
use crate::proto::responder;
use crate::proto::testing::model::{Out, RespModel};
use crate::proto::testing::rng::Rng;
use crate::proto::uapi::{access, wc_flags, WcOpcode};
use std::vec;
use std::vec::Vec;

#[path = "machine_tests/edges.rs"]
mod edges;

const ACK_SYN: u8 = 0x1f;
const RKEY: u32 = 0x1234;
const BASE: u64 = 0x10_0000;

pub(crate) fn rq(opcode: Opcode, psn: u32, payload: u32) -> Request {
    Request {
        opcode,
        psn,
        ack_req: opcode.has(Mask::END),
        se: false,
        pad: (payload.wrapping_neg() & 3) as u8,
        payload,
        reth: None,
        atmeth: None,
        feth: None,
        imm: None,
        invalidate: None,
        src_qp: None,
    }
}

fn with_reth(mut r: Request, va: u64, len: u32) -> Request {
    r.reth = Some(Reth {
        va,
        rkey: RKEY,
        len,
    });
    r
}

fn bytes(n: u32, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8) ^ seed).collect()
}

struct T {
    st: responder::rules::State,
    qp: RespQp,
    io: RespModel,
}

impl T {
    fn new(qp_type: qp::Type) -> T {
        T::with_mr(qp_type, 64 * 1024)
    }

    fn with_mr(qp_type: qp::Type, mr_len: usize) -> T {
        let qp = RespQp {
            qp_type,
            mtu: 1024,
            access: access::REMOTE_READ
                | access::REMOTE_WRITE
                | access::REMOTE_ATOMIC
                | access::FLUSH_GLOBAL,
            srq: false,
            min_rnr_timer: 14,
        };
        let mut io = RespModel::default();
        io.mr(
            RKEY,
            BASE,
            mr_len,
            Access::REMOTE.union(Access::FLUSH_GLOBAL),
        );
        T {
            st: responder::rules::State::new(100, 4),
            qp,
            io,
        }
    }

    fn send(&mut self, r: Request, payload: Vec<u8>) -> Outcome {
        self.io.push(r, payload);
        self.drain()
    }

    /// Runs until the request queue is empty or the responder stops.
    fn drain(&mut self) -> Outcome {
        let mut last = Outcome::default();
        for _ in 0..10_000 {
            let o = run(&mut self.st, &self.qp, &mut self.io);
            if o.qp_error {
                return o;
            }
            if !o.progress {
                return last;
            }
            last = o;
        }
        panic!("responder never settles");
    }

    fn last_ack(&self) -> Ack {
        *self.io.acks().last().expect("no ack")
    }
}

fn ack(psn: u32, msn: u32) -> Ack {
    Ack {
        opcode: Opcode::RcAck,
        psn,
        syndrome: ACK_SYN,
        msn,
        orig: 0,
    }
}

#[test]
fn rc_send_only_and_multi_packet() {
    let mut t = T::new(qp::Type::Rc);
    t.io.rq.extend([100, 4096]);
    let mut r = rq(Opcode::RcSendOnlyImm, 100, 10);
    r.imm = Some(0xdead_beef);
    r.se = true;
    t.send(r, bytes(10, 1));
    assert_eq!(t.io.acks(), [ack(100, 1)]);
    let (cqe, data) = &t.io.cqes[0];
    assert_eq!(data, &bytes(10, 1));
    assert_eq!(
        *cqe,
        RecvCqe {
            status: WcStatus::Success,
            opcode: WcOpcode::Recv,
            byte_len: 10,
            wc_flags: wc_flags::GRH | wc_flags::WITH_IMM,
            ex: 0xdead_beef,
            src_qp: 0,
            solicited: true,
        }
    );
    assert_eq!(
        (t.st.psn, t.st.msn, t.st.opcode),
        (101, 1, Some(Opcode::RcSendOnlyImm))
    );
    // A 2.5 KiB send: the WQE is taken by FIRST and completed by LAST.
    t.send(rq(Opcode::RcSendFirst, 101, 1024), bytes(1024, 2));
    assert!(t.io.has_recv() && t.io.cqes.len() == 1);
    t.send(rq(Opcode::RcSendMiddle, 102, 1024), bytes(1024, 3));
    let mut last = rq(Opcode::RcSendLastInv, 103, 452);
    last.invalidate = Some(RKEY);
    t.send(last, bytes(452, 4));
    let (cqe, data) = &t.io.cqes[1];
    assert_eq!(
        (cqe.byte_len, cqe.wc_flags, cqe.ex),
        (2500, wc_flags::GRH | wc_flags::WITH_INVALIDATE, RKEY)
    );
    assert_eq!(data.len(), 2500);
    assert!(!t.io.mrs.contains_key(&RKEY));
    // MSN counts messages; only packets with AckReq are acknowledged.
    assert_eq!(t.io.acks(), [ack(100, 1), ack(103, 2)]);
    assert_eq!(t.st.psn, 104);
    assert!(t.io.rq.is_empty());
}

#[test]
fn rnr_and_receive_errors() {
    // RC: no receive WQE -> RNR NAK carrying min_rnr_timer and the request's PSN.
    let mut t = T::new(qp::Type::Rc);
    let o = t.send(rq(Opcode::RcSendOnly, 100, 8), bytes(8, 0));
    assert!(!o.qp_error);
    assert_eq!(
        t.last_ack(),
        Ack {
            opcode: Opcode::RcAck,
            psn: 100,
            syndrome: 0x20 | 14,
            msn: 0,
            orig: 0
        }
    );
    assert_eq!(t.io.events, [Event::SentRnrNak]);
    assert_eq!(t.st.psn, 100);
    assert!(t.io.reqs.is_empty());
    // UC: dropped, and the rest of the message with it.
    let mut t = T::new(qp::Type::Uc);
    t.send(rq(Opcode::UcSendFirst, 100, 1024), bytes(1024, 0));
    assert!(t.st.drop_msg && t.io.out.is_empty());
    // A receive WQE with too many SGEs: class A, the QP fails, NAK remote operational error.
    let mut t = T::new(qp::Type::Rc);
    t.io.rq_malformed = true;
    let o = t.send(rq(Opcode::RcSendOnly, 100, 8), bytes(8, 0));
    assert!(o.qp_error);
    assert_eq!(t.last_ack().syndrome, 0x63);
    assert!(t.io.cqes.is_empty());
    // A message longer than the buffer: C reports a malformed WQE (-EINVAL).
    let mut t = T::new(qp::Type::Rc);
    t.io.rq.push_back(100);
    let o = t.send(rq(Opcode::RcSendOnly, 100, 200), bytes(200, 0));
    assert!(o.qp_error);
    assert_eq!(t.io.cqes[0].0.status, WcStatus::LocQpOpErr);
    assert_eq!(t.last_ack().syndrome, 0x63);
    // CQ overflow errors the QP without an ACK.
    let mut t = T::new(qp::Type::Rc);
    t.io.rq.push_back(100);
    t.io.cq_full = true;
    let o = t.send(rq(Opcode::RcSendOnly, 100, 10), bytes(10, 0));
    assert!(o.qp_error && t.io.out.is_empty());
}

#[test]
fn rc_writes() {
    let mut t = T::new(qp::Type::Rc);
    t.io.rq.push_back(0);
    let va = BASE + 0x100;
    t.send(
        with_reth(rq(Opcode::RcWriteFirst, 100, 1024), va, 2100),
        bytes(1024, 5),
    );
    t.send(rq(Opcode::RcWriteMiddle, 101, 1024), bytes(1024, 6));
    let mut last = rq(Opcode::RcWriteLastImm, 102, 52);
    last.imm = Some(7);
    t.send(last, bytes(52, 7));
    let mem = &t.io.mrs[&RKEY].data;
    assert_eq!(&mem[0x100..0x500], &bytes(1024, 5)[..]);
    assert_eq!(&mem[0x900..0x934], &bytes(52, 7)[..]);
    // Each packet looks the key up again.
    assert_eq!(t.io.lookups, 3);
    let cqe = t.io.cqes[0].0;
    assert_eq!(
        (cqe.opcode, cqe.byte_len, cqe.wc_flags),
        (
            WcOpcode::RecvRdmaWithImm,
            2100,
            wc_flags::GRH | wc_flags::WITH_IMM
        )
    );
    assert_eq!(t.io.acks(), [ack(102, 1)]);
    // Zero-length write: no lookup, just an ACK.
    t.send(with_reth(rq(Opcode::RcWriteOnly, 103, 0), 0, 0), vec![]);
    assert_eq!((t.io.lookups, t.last_ack()), (3, ack(103, 2)));
    // A zero-length RETH with payload is refused (C would dereference NULL).
    let o = t.send(
        with_reth(rq(Opcode::RcWriteOnly, 104, 4), 0, 0),
        bytes(4, 0),
    );
    assert!(o.qp_error);
    assert_eq!(t.last_ack().syndrome, 0x61);
}

/// Requests queued behind one another are acknowledged once, by the ACK
/// of the last; a read, an atomic, a NAK or an empty queue sends a held
/// ACK first, so responses keep PSN order.
#[test]
fn coalesced_acks() {
    let mut t = T::new(qp::Type::Rc);
    t.io.coalesce = true;
    let va = BASE + 0x100;
    // Queues a 64-byte WRITE only at `va`.
    let write64 = |t: &mut T, psn: u32, seed: u8| {
        t.io.push(
            with_reth(rq(Opcode::RcWriteOnly, psn, 64), va, 64),
            bytes(64, seed),
        );
    };
    for i in 0..4u32 {
        write64(&mut t, 100 + i, i as u8);
    }
    t.drain();
    assert_eq!(t.io.acks(), [ack(103, 4)]);
    assert_eq!(t.st.ack_owed, None);

    // Write, read, write: the first write's ACK goes before the read's
    // response, the last write's after it.
    t.io.out.clear();
    write64(&mut t, 104, 9);
    t.io.push(with_reth(rq(Opcode::RcReadRequest, 105, 0), va, 64), vec![]);
    write64(&mut t, 106, 9);
    t.drain();
    let order: Vec<(bool, u32)> =
        t.io.out
            .iter()
            .map(|o| match o {
                Out::Ack(a) => (true, a.psn),
                Out::Read(r, _) => (false, r.psn),
            })
            .collect();
    assert_eq!(order, [(true, 104), (false, 105), (true, 106)]);

    // Write then a PSN gap: the held ACK, then the sequence NAK.
    t.io.out.clear();
    write64(&mut t, 107, 1);
    write64(&mut t, 109, 2);
    t.drain();
    let acks = t.io.acks();
    assert_eq!(acks.len(), 2);
    assert_eq!(acks[0], ack(107, 8));
    assert_eq!((acks[1].psn, acks[1].syndrome), (108, 0x60));

    // A duplicate behind a new write: one ACK for the newest PSN covers both.
    t.io.out.clear();
    write64(&mut t, 108, 3);
    write64(&mut t, 108, 3);
    t.drain();
    assert_eq!(t.io.acks(), [ack(108, 9)]);

    // A long queue: at most MAX_COALESCED_PSNS (16) PSNs held, so the
    // requester's window keeps moving while the queue stays full.
    t.io.out.clear();
    for i in 0..40u32 {
        write64(&mut t, 109 + i, 4);
    }
    t.drain();
    let psns: Vec<u32> = t.io.acks().iter().map(|a| a.psn).collect();
    assert_eq!(psns, [124, 140, 148]);

    // Long messages (an ACK request every 64 PSNs at most): a held ACK goes
    // 16 PSNs into the next message, not at its end, and covers all the
    // requests before it.
    t.io.out.clear();
    write64(&mut t, 149, 5);
    t.io.push(
        with_reth(rq(Opcode::RcWriteFirst, 150, 1024), va, 40 * 1024),
        bytes(1024, 6),
    );
    for i in 1..39u32 {
        t.io.push(rq(Opcode::RcWriteMiddle, 150 + i, 1024), bytes(1024, 6));
    }
    t.io.push(rq(Opcode::RcWriteLast, 189, 1024), bytes(1024, 6));
    t.drain();
    let psns: Vec<u32> = t.io.acks().iter().map(|a| a.psn).collect();
    assert_eq!(psns, [164, 189]);
    assert_eq!(t.st.ack_owed, None);
}

#[test]
fn rc_write_errors() {
    // Out of range: remote access error; length mismatch: invalid request.
    let cases: &[(Request, u8)] = &[
        (
            with_reth(rq(Opcode::RcWriteOnly, 100, 16), BASE + 64 * 1024 - 8, 16),
            0x62,
        ),
        (with_reth(rq(Opcode::RcWriteOnly, 100, 16), BASE, 20), 0x61),
        (
            with_reth(rq(Opcode::RcWriteFirst, 100, 1000), BASE, 4000),
            0x61,
        ),
        (
            Request {
                reth: Some(Reth {
                    va: BASE,
                    rkey: 999,
                    len: 8,
                }),
                ..rq(Opcode::RcWriteOnly, 100, 8)
            },
            0x62,
        ),
    ];
    for (r, syn) in cases {
        let mut t = T::new(qp::Type::Rc);
        let o = t.send(*r, bytes(r.payload, 0));
        assert!(o.qp_error, "{r:?}");
        assert_eq!(
            t.last_ack(),
            Ack {
                opcode: Opcode::RcAck,
                psn: 100,
                syndrome: *syn,
                msn: 0,
                orig: 0
            }
        );
        assert_eq!(t.io.held_mr, None);
    }
    // Without remote write rights: invalid request.
    let mut t = T::new(qp::Type::Rc);
    t.qp.access = access::REMOTE_READ;
    assert!(
        t.send(
            with_reth(rq(Opcode::RcWriteOnly, 100, 8), BASE, 8),
            bytes(8, 0)
        )
        .qp_error
    );
    assert_eq!(t.last_ack().syndrome, 0x61);
}

#[test]
fn rc_reads_and_replays() {
    let mut t = T::new(qp::Type::Rc);
    let va = BASE + 0x40;
    t.send(
        with_reth(rq(Opcode::RcReadRequest, 100, 0), va, 2500),
        vec![],
    );
    let reads = t.io.reads();
    let ops: Vec<Opcode> = reads.iter().map(|r| r.opcode).collect();
    assert_eq!(
        ops,
        [
            Opcode::RcReadResponseFirst,
            Opcode::RcReadResponseMiddle,
            Opcode::RcReadResponseLast
        ]
    );
    assert_eq!(
        reads.iter().map(|r| r.psn).collect::<Vec<_>>(),
        [100, 101, 102]
    );
    assert_eq!(
        reads.iter().map(|r| r.len).collect::<Vec<_>>(),
        [1024, 1024, 452]
    );
    assert_eq!(reads[0].source, ReadSource::Held);
    assert_eq!(reads[1].source, ReadSource::Recheck(RKEY));
    assert!(reads.iter().all(|r| r.msn == 1));
    assert_eq!(
        (t.st.psn, t.st.msn, t.st.opcode, t.st.cur),
        (103, 1, None, None)
    );
    // A duplicate of the whole read is replayed from the resource.
    t.io.out.clear();
    t.send(
        with_reth(rq(Opcode::RcReadRequest, 100, 0), va, 2500),
        vec![],
    );
    assert_eq!(t.io.reads().len(), 3);
    assert_eq!(t.io.reads()[0].source, ReadSource::Recheck(RKEY));
    // A retry from the middle: MIDDLE then LAST, same data.
    t.io.out.clear();
    t.send(
        with_reth(rq(Opcode::RcReadRequest, 101, 0), va + 1024, 1476),
        vec![],
    );
    let ops: Vec<Opcode> = t.io.reads().iter().map(|r| r.opcode).collect();
    assert_eq!(
        ops,
        [Opcode::RcReadResponseMiddle, Opcode::RcReadResponseLast]
    );
    assert_eq!(t.st.psn, 103);
    // Not a subset, another rkey, or too old: dropped silently.
    t.io.out.clear();
    t.send(
        with_reth(rq(Opcode::RcReadRequest, 101, 0), va, 4000),
        vec![],
    );
    t.send(
        Request {
            reth: Some(Reth {
                va,
                rkey: 1,
                len: 10,
            }),
            ..rq(Opcode::RcReadRequest, 100, 0)
        },
        vec![],
    );
    t.send(with_reth(rq(Opcode::RcReadRequest, 50, 0), va, 10), vec![]);
    assert!(t.io.out.is_empty());
    // Zero-length read: one empty ONLY response.
    t.send(with_reth(rq(Opcode::RcReadRequest, 103, 0), 0, 0), vec![]);
    assert_eq!(
        t.io.reads().last().map(|r| (r.opcode, r.len)),
        Some((Opcode::RcReadResponseOnly, 0))
    );
    assert_eq!(t.st.psn, 104);
    // No responder resources: invalid request.
    let mut t = T::new(qp::Type::Rc);
    t.st.set_max_dest_rd_atomic(0);
    assert!(
        t.send(with_reth(rq(Opcode::RcReadRequest, 100, 0), va, 10), vec![])
            .qp_error
    );
    assert_eq!(t.last_ack().syndrome, 0x61);
}

#[test]
fn read_reply_failures() {
    // A failed transmit is an RNR NAK; the reply is forgotten, the PSN stays.
    let mut t = T::new(qp::Type::Rc);
    t.io.fail_read = Some(SendFailed::Send);
    t.send(
        with_reth(rq(Opcode::RcReadRequest, 100, 0), BASE, 3000),
        vec![],
    );
    assert_eq!(t.last_ack().syndrome, 0x20 | 14);
    assert_eq!((t.st.cur, t.st.psn), (None, 100));
    // The requester's retry is then a new request.
    t.io.fail_read = None;
    t.send(
        with_reth(rq(Opcode::RcReadRequest, 100, 0), BASE, 3000),
        vec![],
    );
    assert_eq!(t.io.reads().len(), 3);
    // The region went away: remote access error.
    let mut t = T::new(qp::Type::Rc);
    t.io.fail_read = Some(SendFailed::Access);
    assert!(
        t.send(
            with_reth(rq(Opcode::RcReadRequest, 100, 0), BASE, 3000),
            vec![]
        )
        .qp_error
    );
    assert_eq!(t.last_ack().syndrome, 0x62);
}

#[test]
fn atomics_and_replays() {
    let mut t = T::new(qp::Type::Rc);
    let at = |op, psn, swap_add, compare| Request {
        atmeth: Some(AtmEth {
            va: BASE + 8,
            rkey: RKEY,
            swap_add,
            compare,
        }),
        ..rq(op, psn, 0)
    };
    let before = u64::from_ne_bytes(t.io.mrs[&RKEY].data[8..16].try_into().unwrap());
    t.send(at(Opcode::RcFetchAdd, 100, 5, 0), vec![]);
    assert_eq!(
        t.last_ack(),
        Ack {
            opcode: Opcode::RcAtomicAck,
            psn: 100,
            syndrome: ACK_SYN,
            msn: 1,
            orig: before
        }
    );
    assert_eq!(t.st.cur, None);
    // The duplicate is answered from the resource, not executed again.
    t.send(at(Opcode::RcFetchAdd, 100, 5, 0), vec![]);
    assert_eq!(
        t.last_ack(),
        Ack {
            opcode: Opcode::RcAtomicAck,
            psn: 100,
            syndrome: ACK_SYN,
            msn: 1,
            orig: before
        }
    );
    let now = u64::from_ne_bytes(t.io.mrs[&RKEY].data[8..16].try_into().unwrap());
    assert_eq!(now, before.wrapping_add(5));
    t.send(at(Opcode::RcCompareSwap, 101, 77, now), vec![]);
    assert_eq!(t.last_ack().orig, now);
    assert_eq!(t.io.mrs[&RKEY].data[8..16], 77u64.to_ne_bytes());
    // Misaligned: invalid request; no rights: invalid request.
    let mut t = T::new(qp::Type::Rc);
    let mut r = at(Opcode::RcFetchAdd, 100, 1, 0);
    r.atmeth = Some(AtmEth {
        va: BASE + 4,
        ..r.atmeth.unwrap()
    });
    assert!(t.send(r, vec![]).qp_error);
    assert_eq!(t.last_ack().syndrome, 0x61);
    let mut t = T::new(qp::Type::Rc);
    t.qp.access = access::REMOTE_WRITE;
    assert!(t.send(at(Opcode::RcFetchAdd, 100, 1, 0), vec![]).qp_error);
}

#[test]
fn atomic_write_and_flush() {
    let mut t = T::new(qp::Type::Rc);
    let aw = with_reth(rq(Opcode::RcAtomicWrite, 100, 8), BASE + 16, 8);
    t.send(aw, 0x1122_3344_5566_7788u64.to_ne_bytes().to_vec());
    assert_eq!(
        t.io.mrs[&RKEY].data[16..24],
        0x1122_3344_5566_7788u64.to_ne_bytes()
    );
    let zero_read = Ack {
        opcode: Opcode::RcReadResponseOnly,
        psn: 100,
        syndrome: ACK_SYN,
        msn: 1,
        orig: 0,
    };
    assert_eq!(t.last_ack(), zero_read);
    t.send(aw, 0u64.to_ne_bytes().to_vec());
    assert_eq!(t.last_ack(), zero_read);
    assert_eq!(
        t.io.mrs[&RKEY].data[16..24],
        0x1122_3344_5566_7788u64.to_ne_bytes()
    );
    let fl = Request {
        reth: Some(Reth {
            va: BASE,
            rkey: RKEY,
            len: 4096,
        }),
        feth: Some(Feth {
            ptype: crate::proto::headers::FLUSH_GLOBAL,
            level: 0,
        }),
        ..rq(Opcode::RcFlush, 101, 0)
    };
    t.send(fl, vec![]);
    // Global visibility is the barrier alone: nothing is written back.
    assert!(t.io.flushes.is_empty());
    assert_eq!(t.io.barriers, 1);
    assert_eq!(
        t.last_ack(),
        Ack {
            psn: 101,
            msn: 2,
            ..zero_read
        }
    );
    t.send(fl, vec![]);
    assert_eq!(t.io.barriers, 1);
    assert_eq!(
        t.last_ack(),
        Ack {
            psn: 101,
            msn: 2,
            ..zero_read
        }
    );
    // Atomic write length rules.
    let mut t = T::new(qp::Type::Rc);
    assert!(
        t.send(
            with_reth(rq(Opcode::RcAtomicWrite, 100, 8), BASE, 16),
            bytes(8, 0)
        )
        .qp_error
    );
}

const PRKEY: u32 = 0x5678;
const STEP: u64 = responder::rules::FLUSH_STEP;

/// A responder whose QP allows persistent flushes, with a region of `len`
/// bytes at `BASE` (aligned to the flush step) under `PRKEY` that allows them too.
fn persistent(len: usize) -> T {
    let mut t = T::new(qp::Type::Rc);
    t.qp.access |= access::FLUSH_PERSISTENT;
    t.io.mr(
        PRKEY,
        BASE,
        len,
        Access::REMOTE
            .union(Access::FLUSH_GLOBAL)
            .union(Access::FLUSH_PERSISTENT),
    );
    t
}

fn pflush(psn: u32, va: u64, len: u32, level: u8) -> Request {
    Request {
        reth: Some(Reth {
            va,
            rkey: PRKEY,
            len,
        }),
        feth: Some(Feth {
            ptype: crate::proto::headers::FLUSH_PERSISTENT,
            level,
        }),
        ..rq(Opcode::RcFlush, psn, 0)
    }
}

fn flush_ack(psn: u32, msn: u32) -> Ack {
    Ack {
        opcode: Opcode::RcReadResponseOnly,
        psn,
        syndrome: ACK_SYN,
        msn,
        orig: 0,
    }
}

#[test]
fn persistent_flush_of_a_whole_region_goes_one_piece_per_run() {
    let len = 3 * STEP as usize + 4096;
    let mut t = persistent(len);
    t.io.push(pflush(100, 0, 0, 1), vec![]);
    let want = [
        (BASE, STEP),
        (BASE + STEP, STEP),
        (BASE + 2 * STEP, STEP),
        (BASE + 3 * STEP, 4096),
    ];
    for (n, piece) in want.iter().enumerate() {
        let o = run(&mut t.st, &t.qp, &mut t.io);
        assert!(o.progress && !o.qp_error && !o.fault, "run {n}: {o:?}");
        assert_eq!(t.io.flushes.last(), Some(piece), "run {n}");
        assert_eq!(t.io.flushes.len(), n + 1);
        // No ACK and no barrier before the last piece; the request stays.
        let last = n + 1 == want.len();
        assert_eq!(t.io.acks().is_empty(), !last, "run {n}");
        assert_eq!(t.io.barriers, u32::from(last));
        assert_eq!(t.io.reqs.len(), usize::from(!last));
        // Between runs the region is not held.
        assert_eq!(t.io.held_mr, None);
    }
    assert_eq!(t.io.acks(), [flush_ack(100, 1)]);
    assert_eq!(run(&mut t.st, &t.qp, &mut t.io), Outcome::default());
    // Its duplicate is answered without another write-back.
    t.send(pflush(100, 0, 0, 1), vec![]);
    assert_eq!(t.io.flushes.len(), want.len());
    assert_eq!(t.last_ack(), flush_ack(100, 1));
    // The next request goes on as usual.
    t.send(
        with_reth(rq(Opcode::RcWriteOnly, 101, 8), BASE, 8),
        bytes(8, 1),
    );
    assert_eq!(t.last_ack(), ack(101, 2));
}

#[test]
fn persistent_flush_of_a_range_is_cut_at_step_boundaries() {
    let mut t = persistent(4 * STEP as usize);
    t.send(pflush(100, BASE + 100, 2 * STEP as u32, 0), vec![]);
    assert_eq!(
        t.io.flushes,
        [
            (BASE + 100, STEP - 100),
            (BASE + STEP, STEP),
            (BASE + 2 * STEP, 100)
        ]
    );
    assert_eq!(t.last_ack(), flush_ack(100, 1));
    // A range of one piece, and an empty one (nothing to write back).
    t.send(pflush(101, BASE + 5, 10, 0), vec![]);
    t.send(pflush(102, BASE, 0, 0), vec![]);
    assert_eq!(t.io.flushes.len(), 4);
    assert_eq!(t.io.flushes.last(), Some(&(BASE + 5, 10)));
    assert_eq!(t.io.barriers, 3);
    assert_eq!(t.last_ack(), flush_ack(102, 3));
}

#[test]
fn persistent_flush_stops_when_its_region_goes() {
    let mut t = persistent(3 * STEP as usize);
    t.io.push(pflush(100, 0, 0, 1), vec![]);
    assert!(run(&mut t.st, &t.qp, &mut t.io).progress);
    assert_eq!(t.io.flushes.len(), 1);
    t.io.mrs.remove(&PRKEY);
    let o = run(&mut t.st, &t.qp, &mut t.io);
    assert!(o.qp_error);
    assert_eq!(t.io.flushes.len(), 1);
    assert_eq!(t.io.barriers, 0);
    assert_eq!(t.last_ack().syndrome, 0x62);
    assert!(t.io.reqs.is_empty());
}

#[test]
fn persistent_flush_needs_the_right_on_the_region() {
    // The region of `RKEY` allows global flushes only: a persistent one is
    // a remote access error, and nothing is written back.
    let mut t = persistent(4096);
    let mut r = pflush(100, BASE, 64, 0);
    r.reth = Some(Reth {
        va: BASE,
        rkey: RKEY,
        len: 64,
    });
    assert!(t.send(r, vec![]).qp_error);
    assert!(t.io.flushes.is_empty());
    assert_eq!(t.last_ack().syndrome, 0x62);
}

#[test]
fn owed_ack_goes_before_a_long_flush() {
    let mut t = persistent(2 * STEP as usize);
    t.io.coalesce = true;
    t.io.push(
        with_reth(rq(Opcode::RcWriteOnly, 100, 8), BASE, 8),
        bytes(8, 1),
    );
    t.io.push(pflush(101, 0, 0, 1), vec![]);
    // The write's ACK is held back for the flush behind it, then sent
    // when the flush stops after its first piece.
    assert!(run(&mut t.st, &t.qp, &mut t.io).progress);
    assert!(t.io.acks().is_empty());
    assert!(run(&mut t.st, &t.qp, &mut t.io).progress);
    assert_eq!(t.io.flushes.len(), 1);
    assert_eq!(t.io.acks(), [ack(100, 1)]);
    t.drain();
    assert_eq!(t.io.acks(), [ack(100, 1), flush_ack(101, 2)]);
}
