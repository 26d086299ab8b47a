// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! End-to-end check of the three state machines: an RC requester and
//! completer (`requester`, `completer`) talk to a responder (`responder::rules`,
//! `responder::machine`) over a network that drops, duplicates and delays packets.
//! Every message must complete once, in order, with the right data, and
//! every atomic must execute exactly once.

use super::completer::{self, CopyFault, Head, Response, Sq};
use super::headers::{AtmEth, Reth};
use super::mr::Access;
use super::opcode::Mask;
use super::psn::{psn_add, psn_before, PSN_MASK};
use super::qp;
use super::requester::{
    self, begin_retry, commit, finish_local, plan, retry_wqe, Gates, Progress, ReqQp, Step, WqeInfo,
};
use super::responder::machine;
use super::responder::rules::{self, Request, RespQp};
use super::testing::model::{Out, RespModel};
use super::testing::rng::Rng;
use super::testing::sq::{SentWqe, SqModel};
use super::uapi::{access, SendFlags, WcOpcode, WcStatus, WrOpcode};
use crate::proto::responder;
use std::collections::VecDeque;
use std::vec;
use std::vec::Vec;

mod uc;

const MTU: u32 = 1024;
const KEY_W: u32 = 0x100; // written by RDMA writes
const KEY_R: u32 = 0x200; // read by RDMA reads
const KEY_A: u32 = 0x300; // atomics
const BASE_W: u64 = 0x1000_0000;
const BASE_R: u64 = 0x2000_0000;
const BASE_A: u64 = 0x3000_0000;

struct Sender {
    qp: ReqQp,
    req: requester::State,
    comp: completer::State,
    sq: SqModel,
    wqe_index: usize,
    /// The END packet held back in `wire` (as the engine holds it), until
    /// the next packet of the step or the step's end.
    held: Option<usize>,
    /// The engine would run the requester: it has not yet found nothing
    /// to do since it was last kicked (by the completer's `again`, the RNR
    /// timer, or the WQEs posted at the start). A wake-up the engine would
    /// miss leaves the RC simulation waiting for a timeout.
    woken: bool,
    /// Packets an ACK acknowledged while a retry was to resend them are
    /// not sent ([`requester::acked_resend`]), as the driver does.
    skip_acked: bool,
    /// Packets so skipped.
    skipped: usize,
}

impl Sender {
    /// A sender of `qp_type` with `wqes` posted, its PSNs from `start_psn`.
    fn new(qp_type: qp::Type, max_rd_atomic: u32, start_psn: u32, wqes: Vec<SentWqe>) -> Sender {
        Sender {
            qp: ReqQp {
                qp_type,
                path_mtu: MTU,
                port_mtu: 4096,
                max_rd_atomic,
            },
            req: requester::State::new(start_psn, max_rd_atomic),
            comp: completer::State::new(start_psn, 7, 7),
            sq: SqModel {
                wqes,
                trace: trace(),
                ..SqModel::default()
            },
            wqe_index: 0,
            held: None,
            woken: true,
            skip_acked: true,
            skipped: 0,
        }
    }

    /// One `rxe_requester()` call; returns whether it did anything.
    fn step(&mut self, wire: &mut Vec<(Request, Vec<u8>)>) -> bool {
        if self.req.need_retry && !self.req.wait_for_rnr_timer {
            begin_retry(&mut self.req, self.comp.psn);
            self.wqe_index = self.sq.consumer;
            let mut first = true;
            for w in self.sq.wqes.iter_mut().skip(self.sq.consumer) {
                if !retry_wqe(
                    &mut self.req,
                    &self.qp,
                    &w.info,
                    &mut w.progress,
                    &mut first,
                    self.comp.psn,
                ) {
                    break;
                }
            }
            self.req.need_retry = false;
        }
        let prior_done = self.wqe_index == self.sq.consumer;
        let Some(w) = self.sq.wqes.get_mut(self.wqe_index) else {
            return false;
        };
        let gates = Gates {
            prior_done,
            comp_psn: self.comp.psn,
            inflight: 0,
        };
        match plan(&mut self.req, &self.qp, &w.info, &mut w.progress, &gates) {
            Step::Send(p)
                if self.skip_acked && requester::acked_resend(&self.qp, &p, self.comp.psn) =>
            {
                self.skipped += 1;
                if commit(&mut self.req, &self.qp, &mut w.progress, &p) {
                    self.wqe_index += 1;
                }
                true
            }
            Step::Send(p) => {
                let off = (w.info.length - w.progress.resid) as usize;
                let payload = if p.opcode.has(Mask::WRITE_OR_SEND.union(Mask::ATOMIC_WRITE)) {
                    w.data[off..off + p.payload as usize].to_vec()
                } else {
                    Vec::new()
                };
                let r = Request {
                    opcode: p.opcode,
                    psn: p.psn,
                    ack_req: p.ack_req,
                    se: p.solicited,
                    pad: p.pad,
                    payload: p.payload,
                    reth: p.opcode.has(Mask::RETH).then_some(Reth {
                        va: p.reth_va,
                        rkey: w.rkey,
                        len: p.reth_len,
                    }),
                    atmeth: p.opcode.has(Mask::ATMETH).then_some(AtmEth {
                        va: w.progress.iova,
                        rkey: w.rkey,
                        swap_add: w.add,
                        compare: 0,
                    }),
                    feth: None,
                    imm: if p.opcode.has(Mask::IMMDT) {
                        w.imm
                    } else {
                        None
                    },
                    invalidate: None,
                    src_qp: None,
                };
                wire.push((r, payload));
                if commit(&mut self.req, &self.qp, &mut w.progress, &p) {
                    self.wqe_index += 1;
                }
                let held = self.held.take();
                if requester::next_built(&mut self.req, held.is_some(), &p) {
                    if let Some((h, _)) = held.and_then(|i| wire.get_mut(i)) {
                        h.ack_req = false;
                    }
                }
                if requester::may_hold(self.qp.qp_type, &p) {
                    requester::hold(&mut self.req, &p);
                    self.held = Some(wire.len() - 1);
                }
                true
            }
            Step::Local => {
                finish_local(&mut w.progress);
                self.wqe_index += 1;
                true
            }
            Step::Skip => {
                self.wqe_index += 1;
                true
            }
            Step::Wait(_) => false,
            other => panic!("requester: {other:?}"),
        }
    }
}

struct Receiver {
    st: responder::rules::State,
    qp: RespQp,
    io: RespModel,
}

struct Net {
    rng: Rng,
    drop_pct: u32,
    dup_pct: u32,
    swap_pct: u32,
}

impl Net {
    fn carry<T: Clone>(&mut self, from: Vec<T>, to: &mut VecDeque<T>) -> bool {
        let moved = !from.is_empty();
        for p in from {
            if self.rng.chance(self.drop_pct) {
                continue;
            }
            if self.rng.chance(self.dup_pct) {
                to.push_back(p.clone());
            }
            to.push_back(p);
            // Occasionally two packets pass each other.
            let n = to.len();
            if n >= 2 && self.rng.chance(self.swap_pct) {
                to.swap(n - 1, n - 2);
            }
        }
        moved
    }
}

struct Expect {
    recvs: Vec<(Vec<u8>, Option<u32>, bool)>,
    writes: Vec<(u64, Vec<u8>)>,
    counter0: u64,
}

/// `n` random WQEs; `reads`: RC reads and atomics among them.
fn build(
    rng: &mut Rng,
    n: usize,
    io: &mut RespModel,
    qp_type: qp::Type,
    reads: bool,
) -> (Vec<SentWqe>, Expect) {
    let mut wqes = Vec::new();
    let mut ex = Expect {
        recvs: Vec::new(),
        writes: Vec::new(),
        counter0: 0,
    };
    let mut wr_off = 0u64;
    ex.counter0 = io
        .mrs
        .get(&KEY_A)
        .map_or(0, |m| u64::from_ne_bytes(m.data[..8].try_into().unwrap()));
    for i in 0..n {
        let kind = rng.below(if qp_type == qp::Type::Rc && reads {
            6
        } else {
            4
        });
        let len = if rng.chance(20) {
            rng.below(3)
        } else {
            rng.below(5000)
        };
        let data: Vec<u8> = (0..len)
            .map(|j| (j as u8) ^ (i as u8).wrapping_mul(31))
            .collect();
        let (op, rkey, iova) = match kind {
            0 => (WrOpcode::Send, 0, 0),
            1 => (WrOpcode::SendWithImm, 0, 0),
            2 => (WrOpcode::RdmaWrite, KEY_W, BASE_W + wr_off),
            3 => (WrOpcode::RdmaWriteWithImm, KEY_W, BASE_W + wr_off),
            4 => (
                WrOpcode::RdmaRead,
                KEY_R,
                BASE_R + u64::from(rng.below(1000)),
            ),
            _ => (WrOpcode::AtomicFetchAndAdd, KEY_A, BASE_A),
        };
        let length = if op == WrOpcode::AtomicFetchAndAdd {
            8
        } else {
            len
        };
        let imm = matches!(op, WrOpcode::SendWithImm | WrOpcode::RdmaWriteWithImm)
            .then_some(0x1000 + i as u32);
        match op {
            WrOpcode::Send | WrOpcode::SendWithImm => ex.recvs.push((data.clone(), imm, false)),
            WrOpcode::RdmaWrite | WrOpcode::RdmaWriteWithImm => {
                ex.writes.push((iova, data.clone()));
                wr_off += u64::from(len);
                if imm.is_some() {
                    ex.recvs.push((data.clone(), imm, true));
                }
            }
            _ => {}
        }
        let info = WqeInfo::new(op, qp_type, SendFlags(0), length, iova);
        wqes.push(SentWqe {
            info,
            progress: Progress::posted(length, iova),
            data,
            local: vec![0; length as usize],
            rkey,
            add: u64::from(rng.below(1000)) + 1,
            imm,
            atomic_done: false,
        });
    }
    (wqes, ex)
}

/// Runs one connection to completion; returns the number of ticks used.
fn simulate(seed: u64, n: usize, drop_pct: u32, dup_pct: u32, swap_pct: u32, rnr: bool) -> usize {
    simulate_with(seed, n, drop_pct, dup_pct, swap_pct, rnr, 0, true, 0).ticks
}

/// What [`simulate_with`] measured.
struct Sim {
    ticks: usize,
    /// The events the responder counted.
    events: Vec<super::events::Event>,
    /// Request packets the requester sent.
    sent: usize,
    /// Packets it did not resend, an ACK having passed them.
    skipped: usize,
    /// Read responses the completer held beyond a gap and took later.
    responses_held: usize,
}

/// [`simulate`] with responses `delay` ticks on their way back, and with
/// reads and atomics among the WQEs or not (`reads`). The requester sends
/// up to 8 packets a tick, so a delay of a few dozen ticks fills the
/// 128-PSN window when no read holds it back for its rd_atomic credit
/// first; then only the completer's wake-ups move the requester on.
/// `reorder`: the reorder buffers of the responder and of the completer
/// (read responses), in PSNs (0: none, as rdma_rxe).
#[allow(clippy::too_many_arguments)]
fn simulate_with(
    seed: u64,
    n: usize,
    drop_pct: u32,
    dup_pct: u32,
    swap_pct: u32,
    rnr: bool,
    delay: usize,
    reads: bool,
    reorder: u32,
) -> Sim {
    let mut rng = Rng::new(seed);
    let start_psn = if rng.bool() {
        PSN_MASK - rng.below(200)
    } else {
        rng.u32() & PSN_MASK
    };
    // rxe_rs's responder (with its reorder buffer) coalesces ACKs;
    // rdma_rxe's (without) does not.
    let mut io = RespModel {
        reorder,
        coalesce: reorder > 0,
        ..RespModel::default()
    };
    io.mr(KEY_W, BASE_W, 1 << 20, Access::REMOTE);
    io.mr(KEY_R, BASE_R, 8192, Access::REMOTE);
    io.mr(KEY_A, BASE_A, 64, Access::REMOTE);
    let (wqes, ex) = build(&mut rng, n, &mut io, qp::Type::Rc, reads);
    let mut rx = Receiver {
        st: responder::rules::State::new(start_psn, 4),
        qp: RespQp {
            qp_type: qp::Type::Rc,
            mtu: MTU,
            access: access::REMOTE_READ | access::REMOTE_WRITE | access::REMOTE_ATOMIC,
            srq: false,
            min_rnr_timer: 1,
        },
        io,
    };
    let mut tx = Sender::new(qp::Type::Rc, 4, start_psn, wqes);
    tx.sq.reorder = reorder;
    let mut net = Net {
        rng: Rng::new(seed ^ 0x9e37),
        drop_pct,
        dup_pct,
        swap_pct,
    };
    let mut posted = 0usize;
    if !rnr {
        rx.io.rq.extend(core::iter::repeat_n(8192, ex.recvs.len()));
        posted = ex.recvs.len();
    }
    let mut rnr_at: Option<usize> = None;
    let mut sent = 0usize;
    let mut probed = false;
    let (mut asked, mut ends, mut timeouts) = (0usize, 0usize, 0usize);
    // Responses on their way back, with the tick they arrive.
    let mut returning = VecDeque::new();
    let lossless = drop_pct == 0 && dup_pct == 0 && swap_pct == 0 && !rnr;
    for tick in 0..200_000 {
        // Done once every WQE completed and the requester is not still
        // resending the tail of one (a retry overtaken by a late ACK).
        if tx.sq.consumer == tx.sq.wqes.len()
            && tx.wqe_index >= tx.sq.wqes.len()
            && rx.io.reqs.is_empty()
        {
            check(&tx, &rx, &ex, start_psn);
            assert!(
                rx.io
                    .held_reqs
                    .values()
                    .all(|(r, _)| psn_before(r.psn, rx.st.psn)),
                "seed {seed}: a request still held at the end"
            );
            if lossless {
                // Coalesced ACK requests never leave the requester waiting
                // for a timeout, and they do coalesce.
                assert_eq!(timeouts, 0, "seed {seed}: a timeout without loss");
                // (With long round trips a full window cuts the steps
                // short: few END packets find a next one to give their
                // request to.)
                assert!(
                    delay > 0 || asked < ends,
                    "seed {seed}: {asked} ACK requests, {ends} ends"
                );
            }
            return Sim {
                ticks: tick,
                events: core::mem::take(&mut rx.io.events),
                sent,
                skipped: tx.skipped,
                responses_held: tx.sq.held_taken,
            };
        }
        if rnr && posted < ex.recvs.len() && tick % 7 == 0 {
            rx.io.rq.push_back(8192);
            posted += 1;
        }
        if rnr_at == Some(tick) {
            tx.req.rnr_timer_fired();
            tx.woken = true;
            rnr_at = None;
        }
        let mut wire = Vec::new();
        for _ in 0..8 {
            if !tx.woken {
                break;
            }
            if !tx.step(&mut wire) {
                tx.woken = false;
            }
        }
        // The step ends: a held packet goes as it is.
        tx.held = None;
        sent += wire.len();
        asked += wire.iter().filter(|(r, _)| r.ack_req).count();
        ends += wire
            .iter()
            .filter(|(r, _)| r.opcode.has(Mask::END) && r.opcode.has(Mask::WRITE_OR_SEND))
            .count();
        if trace() {
            for (r, _) in &wire {
                std::println!(
                    "{tick} REQ {:?} psn={} len={} ack={}",
                    r.opcode,
                    r.psn,
                    r.payload,
                    r.ack_req
                );
            }
        }
        let mut moved = net.carry(wire, &mut rx.io.reqs);
        if trace() {
            for (r, _) in &rx.io.reqs {
                std::println!("{tick} IN {:?} psn={} len={}", r.opcode, r.psn, r.payload);
            }
        }
        let ncqe = rx.io.cqes.len();
        for _ in 0..10_000 {
            let o = responder::machine::run(&mut rx.st, &rx.qp, &mut rx.io);
            assert!(!o.qp_error, "seed {seed}: responder failed");
            if !o.progress {
                break;
            }
        }
        if trace() {
            for (i, (c, _)) in rx.io.cqes.iter().enumerate().skip(ncqe) {
                std::println!(
                    "{tick} CQE#{i} {:?} len={} ex={:#x}",
                    c.opcode,
                    c.byte_len,
                    c.ex
                );
            }
        }
        let out: Vec<(Response, Vec<u8>, u64)> = rx.io.out.drain(..).map(to_response).collect();
        if trace() {
            for (r, d, _) in &out {
                std::println!(
                    "{tick} RSP {:?} psn={} syn={:#x} len={}",
                    r.opcode,
                    r.psn,
                    r.syndrome,
                    d.len()
                );
            }
        }
        returning.push_back((tick + delay, out));
        while returning.front().is_some_and(|(due, _)| *due <= tick) {
            if let Some((_, out)) = returning.pop_front() {
                moved |= net.carry(out, &mut tx.sq.inbox);
            }
        }
        // Responses still on their way keep the retransmit timer quiet.
        let mut idle = !moved && returning.iter().all(|(_, out)| out.is_empty());
        for _ in 0..10_000 {
            let o = completer::run(&mut tx.comp, &mut tx.req, &mut tx.sq);
            if trace() {
                std::println!(
                    "{tick} COMP {o:?} comp.psn={} op={:?} req.psn={} consumer={} retry={}",
                    tx.comp.psn,
                    tx.comp.opcode,
                    tx.req.psn,
                    tx.sq.consumer,
                    tx.req.need_retry
                );
            }
            assert!(
                !o.qp_error,
                "seed {seed}: completer failed: {:?}",
                tx.sq.retired.last()
            );
            if let Some(code) = o.rnr_timer {
                assert_eq!(code, 1);
                rnr_at = Some(tick + 3);
            }
            if o.progress || o.again {
                idle = false;
            }
            tx.woken |= o.again;
            if !o.progress && !o.again {
                break;
            }
        }
        if !idle {
            probed = false;
        }
        if idle && rnr_at.is_none() && tx.sq.inbox.is_empty() && rx.io.reqs.is_empty() {
            // Nothing moves: with the reorder buffers (rxe_rs), the probe
            // timer fires first, once; then the retransmit timer.
            if reorder > 0 && !probed {
                probed = true;
                tx.comp.probe_fired();
                let o = completer::run(&mut tx.comp, &mut tx.req, &mut tx.sq);
                assert!(!o.qp_error, "seed {seed}: probe failed");
                tx.woken |= o.again;
                continue;
            }
            timeouts += 1;
            tx.comp.timer_fired();
            if trace() {
                std::println!("{tick} TIMEOUT");
            }
            let o = completer::run(&mut tx.comp, &mut tx.req, &mut tx.sq);
            assert!(!o.qp_error, "seed {seed}: retries exhausted");
            tx.woken |= o.again;
        }
    }
    panic!(
        "seed {seed}: no completion after 200000 ticks ({} of {} done)",
        tx.sq.consumer,
        tx.sq.wqes.len()
    );
}

fn trace() -> bool {
    static TRACE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TRACE.get_or_init(|| std::env::var_os("SIM_TRACE").is_some())
}

fn to_response(o: Out) -> (Response, Vec<u8>, u64) {
    match o {
        Out::Ack(a) => (
            Response {
                opcode: a.opcode,
                psn: a.psn,
                syndrome: a.syndrome,
            },
            Vec::new(),
            a.orig,
        ),
        Out::Read(r, data) => (
            Response {
                opcode: r.opcode,
                psn: r.psn,
                syndrome: 0x1f,
            },
            data,
            0,
        ),
    }
}

fn check(tx: &Sender, rx: &Receiver, ex: &Expect, start_psn: u32) {
    // Every WQE completed once, in order, successfully.
    for (i, (idx, status)) in tx.sq.retired.iter().enumerate() {
        assert_eq!((*idx, *status), (i, WcStatus::Success));
    }
    // Receives arrived in order with their data.
    assert_eq!(rx.io.cqes.len(), ex.recvs.len());
    for ((cqe, data), (want, imm, write)) in rx.io.cqes.iter().zip(&ex.recvs) {
        assert_eq!(cqe.status, WcStatus::Success);
        assert_eq!(cqe.byte_len as usize, want.len());
        assert_eq!(cqe.ex, imm.unwrap_or(0));
        if *write {
            assert_eq!(cqe.opcode, WcOpcode::RecvRdmaWithImm);
            assert!(data.is_empty());
        } else {
            assert_eq!(cqe.opcode, WcOpcode::Recv);
            assert_eq!(data, want);
        }
    }
    let mw = &rx.io.mrs[&KEY_W];
    for (va, data) in &ex.writes {
        let off = (va - BASE_W) as usize;
        assert_eq!(&mw.data[off..off + data.len()], &data[..]);
    }
    // Reads saw the remote memory; fetch-adds ran exactly once, in order.
    let mr = &rx.io.mrs[&KEY_R];
    let mut counter = ex.counter0;
    for w in &tx.sq.wqes {
        match w.info.opcode {
            WrOpcode::RdmaRead => {
                let off = (w.info.retry_iova - BASE_R) as usize;
                assert_eq!(w.local, mr.data[off..off + w.local.len()]);
            }
            WrOpcode::AtomicFetchAndAdd => {
                assert_eq!(
                    u64::from_ne_bytes(w.local[..8].try_into().unwrap()),
                    counter
                );
                counter = counter.wrapping_add(w.add);
            }
            _ => {}
        }
    }
    assert_eq!(rx.io.mrs[&KEY_A].data[..8], counter.to_ne_bytes());
    // Both ends agree on where the PSNs are; every message counted once.
    assert_eq!(rx.st.psn, tx.req.psn);
    assert_eq!(tx.comp.psn, tx.req.psn);
    let msgs = tx.sq.wqes.len() as u32;
    assert_eq!(rx.st.msn, msgs & PSN_MASK);
    assert_eq!(
        tx.req.psn,
        psn_add(start_psn, rx.st.psn.wrapping_sub(start_psn) & PSN_MASK)
    );
    // The responder is between messages.
    assert!(rx.st.opcode.is_none_or(|o| o.has(Mask::END)));
}

#[test]
#[ignore]
fn one() {
    let seed: u64 = std::env::var("SIM_SEED").unwrap().parse().unwrap();
    let p: Vec<u32> = std::env::var("SIM_P")
        .unwrap()
        .split(',')
        .map(|v| v.parse().unwrap())
        .collect();
    if p.get(5) == Some(&1) {
        uc::simulate_uc(seed, p[0] as usize, p[1], p[2], p[3]);
    } else if let (Some(&reorder), Some(&reads)) = (p.get(6), p.get(7)) {
        let (delay, rnr) = (p.get(8).copied().unwrap_or(0) as usize, p[4] != 0);
        simulate_with(
            seed,
            p[0] as usize,
            p[1],
            p[2],
            p[3],
            rnr,
            delay,
            reads != 0,
            reorder,
        );
    } else {
        simulate(seed, p[0] as usize, p[1], p[2], p[3], p[4] != 0);
    }
}

#[test]
fn lossless_connections() {
    for seed in 1..=40u64 {
        simulate(seed, 60, 0, 0, 0, false);
    }
}

#[test]
fn lossy_connections() {
    for seed in 100..=160u64 {
        simulate(seed, 40, 10, 3, 0, false);
    }
}

#[test]
fn duplicating_reordering_connections() {
    for seed in 200..=240u64 {
        simulate(seed, 40, 2, 10, 5, false);
    }
}

/// Long round trips: the window fills (sends and writes only) or the
/// rd_atomic credits run out (with reads and atomics), and the requester
/// goes on only when the completer wakes it.
#[test]
fn long_round_trips() {
    for seed in 400..=420u64 {
        simulate_with(seed, 200, 0, 0, 0, false, 40, seed % 2 == 0, 0);
    }
    for seed in 430..=440u64 {
        simulate_with(seed, 40, 5, 2, 3, false, 25, seed % 2 == 0, 0);
    }
}

/// The responder with its reorder buffer: requests beyond a gap are held
/// and executed once it fills; everything completes once, in order, with
/// the right data, over loss, duplicates, reordering and long round trips.
#[test]
fn reorder_buffer_connections() {
    let (mut held, mut skipped, mut responses) = (0, 0, 0);
    for seed in 500..=560u64 {
        let (drop_pct, dup_pct, swap_pct, delay) = match seed % 4 {
            0 => (10, 3, 0, 0),
            1 => (2, 10, 5, 0),
            2 => (0, 0, 20, 0),
            _ => (5, 2, 3, 25),
        };
        let sim = simulate_with(
            seed,
            40,
            drop_pct,
            dup_pct,
            swap_pct,
            false,
            delay,
            seed % 3 != 0,
            1024,
        );
        held += sim
            .events
            .iter()
            .filter(|e| **e == super::events::Event::ReorderHeld)
            .count();
        skipped += sim.skipped;
        responses += sim.responses_held;
    }
    assert!(responses > 20, "only {responses} read responses held");
    assert!(held > 100, "only {held} requests held");
    assert!(skipped > 10, "only {skipped} resends skipped");
}

/// Loss and reordering: with the reorder buffer the requester sends fewer
/// packets than with go-back-N alone, and reordering alone is rarely
/// NAKed.
#[test]
fn reorder_buffer_saves_resends() {
    let run = |reorder, drop_pct, swap_pct| {
        let (mut naks, mut sent) = (0, 0);
        for seed in 600..=630u64 {
            let sim = simulate_with(seed, 40, drop_pct, 0, swap_pct, false, 0, false, reorder);
            naks += sim
                .events
                .iter()
                .filter(|e| **e == super::events::Event::OutOfSeqRequest)
                .count();
            sent += sim.sent;
        }
        (naks, sent)
    };
    for (drop_pct, swap_pct) in [(0, 20), (5, 0), (5, 5)] {
        let (with, without) = (run(1024, drop_pct, swap_pct), run(0, drop_pct, swap_pct));
        // A loss needs its NAK either way; reordering alone needs few.
        let fewer_naks = drop_pct > 0 || with.0 * 4 < without.0;
        assert!(
            fewer_naks && with.1 < without.1,
            "loss {drop_pct}% swaps {swap_pct}%: (NAKs, packets) {with:?} with the buffer, {without:?} without"
        );
    }
}

#[test]
fn receiver_not_ready() {
    for seed in 300..=320u64 {
        simulate(seed, 30, 0, 0, 0, true);
    }
    for seed in 330..=345u64 {
        simulate(seed, 30, 5, 2, 0, true);
    }
}
