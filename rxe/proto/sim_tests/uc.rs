// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The UC run of the end-to-end simulation: the same sender, network and
//! receiver models as the RC runs of `sim_tests.rs`, with nothing
//! acknowledged or resent.

use super::*;
use crate::proto::responder;

/// UC: nothing is acknowledged or resent; lost packets lose messages, but a
/// message that is delivered is whole and in order.
pub(super) fn simulate_uc(
    seed: u64,
    n: usize,
    drop_pct: u32,
    dup_pct: u32,
    swap_pct: u32,
) -> usize {
    let mut rng = Rng::new(seed);
    let start_psn = PSN_MASK - rng.below(100);
    let mut io = RespModel::default();
    io.mr(KEY_W, BASE_W, 1 << 20, Access::REMOTE);
    let (wqes, ex) = build(&mut rng, n, &mut io, qp::Type::Uc, false);
    io.rq.extend(core::iter::repeat_n(8192, ex.recvs.len()));
    let mut rx = Receiver {
        st: responder::rules::State::new(start_psn, 0),
        qp: RespQp {
            qp_type: qp::Type::Uc,
            mtu: MTU,
            access: access::REMOTE_WRITE,
            srq: false,
            min_rnr_timer: 0,
        },
        io,
    };
    let mut tx = Sender::new(qp::Type::Uc, 0, start_psn, wqes);
    let mut net = Net {
        rng: Rng::new(seed ^ 0x5555),
        drop_pct,
        dup_pct,
        swap_pct,
    };
    let mut tick = 0;
    while tx.sq.consumer < tx.sq.wqes.len() || !rx.io.reqs.is_empty() {
        tick += 1;
        assert!(tick < 100_000, "seed {seed}: UC stalled");
        let mut wire = Vec::new();
        for _ in 0..8 {
            if !tx.step(&mut wire) {
                break;
            }
        }
        net.carry(wire, &mut rx.io.reqs);
        if trace() {
            for (r, _) in &rx.io.reqs {
                std::println!(
                    "{tick} IN {:?} psn={} len={} imm={:?}",
                    r.opcode,
                    r.psn,
                    r.payload,
                    r.imm
                );
            }
        }
        let ncqe = rx.io.cqes.len();
        for _ in 0..10_000 {
            let o = responder::machine::run(&mut rx.st, &rx.qp, &mut rx.io);
            assert!(!o.qp_error, "seed {seed}: UC responder failed");
            if !o.progress {
                break;
            }
        }
        assert!(rx.io.out.is_empty(), "UC answered");
        if trace() {
            for (c, _) in rx.io.cqes.iter().skip(ncqe) {
                std::println!(
                    "{tick} CQE {:?} len={} ex={:#x}",
                    c.opcode,
                    c.byte_len,
                    c.ex
                );
            }
        }
        let o = completer::run(&mut tx.comp, &mut tx.req, &mut tx.sq);
        assert!(!o.qp_error && !o.progress);
    }
    assert!(tx
        .sq
        .retired
        .iter()
        .enumerate()
        .all(|(i, r)| *r == (i, WcStatus::Success)));
    // Every completion is one of the messages sent, whole; in order unless
    // the network duplicates or reorders (a UC first packet with an
    // unexpected PSN starts a new message, so it is delivered again, or
    // ahead of the one it passed).
    let mut want = ex.recvs.iter();
    for (cqe, data) in &rx.io.cqes {
        assert_eq!(cqe.status, WcStatus::Success);
        let is = |(w, imm, write): &(Vec<u8>, Option<u32>, bool)| {
            cqe.ex == imm.unwrap_or(0)
                && cqe.byte_len as usize == w.len()
                && if *write {
                    cqe.opcode == WcOpcode::RecvRdmaWithImm
                } else {
                    data == w
                }
        };
        let found = if dup_pct == 0 && swap_pct == 0 {
            want.any(is)
        } else {
            ex.recvs.iter().any(is)
        };
        assert!(
            found,
            "seed {seed}: UC delivered a message that was not sent: {cqe:?}"
        );
    }
    if drop_pct == 0 && dup_pct == 0 && swap_pct == 0 {
        assert_eq!(rx.io.cqes.len(), ex.recvs.len());
    }
    tick
}

#[test]
fn uc_connections() {
    for seed in 400..=420u64 {
        simulate_uc(seed, 40, 0, 0, 0);
    }
    for seed in 430..=480u64 {
        simulate_uc(seed, 40, 10, 0, 0);
    }
    for seed in 490..=520u64 {
        simulate_uc(seed, 40, 5, 10, 5);
    }
}
