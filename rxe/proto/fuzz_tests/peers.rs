// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The two ends a fuzzed frame reaches: the receive checks of `rxe/recv.rs`,
//! the responder QPs over a guarded `RespModel` that checks every remote
//! access, and the sender whose completer takes the fuzzed responses.

use super::*;
use crate::proto::responder;

// ---------------------------------------------------------------------------
// The receive checks of rxe/recv.rs.

#[derive(Debug)]
pub(super) enum Rx {
    Dropped,
    Request(usize, Request, Vec<u8>),
    Response(Response, Vec<u8>, u64),
}

fn qp_facts(qpn: u32) -> Option<QpFacts> {
    let qp_type = match qpn {
        QPN_RC | QPN_TX => qp::Type::Rc,
        QPN_UC => qp::Type::Uc,
        QPN_UD => qp::Type::Ud,
        // The GSI QP: the UD receiver stands in for it.
        1 => qp::Type::Gsi,
        _ => return None,
    };
    Some(QpFacts {
        qp_type,
        state: qp::State::Rts,
        qkey: QKEY,
        port: 1,
        path: Some((IpAddr::V4(LOCAL), IpAddr::V4(PEER))),
    })
}

pub(super) fn receive(f: &[u8], stats: &mut Stats) -> Rx {
    let Some(ipinfo) = ip::parse_ip(f) else {
        return Rx::Dropped;
    };
    let Some(data) = f.get(ipinfo.hdr_len..) else {
        return Rx::Dropped;
    };
    let Some(udp) = UdpHdr::parse(data) else {
        return Rx::Dropped;
    };
    let Some(paylen) = udp.payload_len() else {
        return Rx::Dropped;
    };
    if paylen < BTH_LEN || data.len() < ip::UDP_HLEN + paylen {
        return Rx::Dropped;
    }
    let pkt = &data[ip::UDP_HLEN..ip::UDP_HLEN + paylen];
    let info = match packet::parse(pkt) {
        Ok(i) => i,
        Err(_) => {
            stats.parse_err += 1;
            return Rx::Dropped;
        }
    };
    check_info(&info, pkt);
    let Some(qp) = qp_facts(info.qpn()) else {
        return Rx::Dropped;
    };
    let facts = PacketFacts {
        opcode: info.opcode,
        bth_qpn: info.qpn(),
        pkey: info.bth.pkey,
        qkey: info.deth(pkt).map(|d| d.qkey),
        src: ipinfo.src,
        dst: ipinfo.dst,
        port: 1,
    };
    if accept::check(&facts, &qp, DEFAULT_PKEY).is_err() {
        stats.rejected += 1;
        return Rx::Dropped;
    }
    if ipinfo.src.network_type() != ipinfo.dst.network_type() {
        return Rx::Dropped;
    }
    let iph = &f[..ipinfo.hdr_len];
    let iph = match ipinfo.src.network_type() {
        NetworkType::Ipv4 => IpHdr::V4(iph),
        NetworkType::Ipv6 => IpHdr::V6(iph),
    };
    if !icrc::icrc_ok(&mut TableCrc32, iph, data, pkt) {
        stats.icrc_err += 1;
        return Rx::Dropped;
    }
    stats.accepted += 1;
    let payload = info.payload(pkt).unwrap().to_vec();
    if info.opcode.has(Mask::REQ) {
        let r = Request::from_packet(&info, pkt).expect("a parsed request has its headers");
        assert_eq!(r.payload as usize, payload.len());
        let qp = match info.qpn() {
            QPN_RC => 0,
            QPN_UC => 1,
            QPN_UD | 1 => 2,
            // The sender takes only responses (accept checked the transport).
            _ => return Rx::Dropped,
        };
        Rx::Request(qp, r, payload)
    } else {
        if info.qpn() != QPN_TX {
            return Rx::Dropped;
        }
        let r = Response {
            opcode: info.opcode,
            psn: info.psn(),
            syndrome: info.aeth(pkt).map_or(0, |a| a.syndrome),
        };
        Rx::Response(r, payload, info.atmack(pkt).map_or(0, |a| a.orig))
    }
}

/// What `packet::parse` promises about a packet it accepts.
fn check_info(info: &PacketInfo, pkt: &[u8]) {
    assert_eq!(info.paylen, pkt.len());
    assert_eq!(
        info.header_len() + info.payload_len + info.pad + ICRC_LEN,
        pkt.len()
    );
    assert!(info.pad == 0 || info.opcode.has(Mask::PAYLOAD));
    assert_eq!(info.payload(pkt).map(<[u8]>::len), Some(info.payload_len));
    for (carried, present) in [
        (info.mask.contains(Mask::RETH), info.reth(pkt).is_some()),
        (info.mask.contains(Mask::AETH), info.aeth(pkt).is_some()),
        (info.mask.contains(Mask::ATMETH), info.atmeth(pkt).is_some()),
        (info.mask.contains(Mask::ATMACK), info.atmack(pkt).is_some()),
        (info.mask.contains(Mask::IMMDT), info.immdt(pkt).is_some()),
        (info.mask.contains(Mask::IETH), info.ieth(pkt).is_some()),
        (info.mask.contains(Mask::DETH), info.deth(pkt).is_some()),
        (info.mask.contains(Mask::FETH), info.feth(pkt).is_some()),
    ] {
        assert_eq!(carried, present, "{:?}", info.opcode);
    }
}

// ---------------------------------------------------------------------------
// The responder side.

/// `RespModel` with the checks of every remote access the responder makes.
struct Guard<'a> {
    m: &'a mut RespModel,
    /// The last successful lookup, until released.
    target: Option<Target>,
}

fn inside(t: &Target, va: u64, len: u64) -> bool {
    let (va, len) = (u128::from(va), u128::from(len));
    let (tva, tlen) = (u128::from(t.va), u128::from(t.len));
    va >= tva && va + len <= tva + tlen
}

impl Guard<'_> {
    fn held(&self, what: &str, need: Access) -> Target {
        let t = self
            .target
            .unwrap_or_else(|| panic!("{what} without a looked-up region"));
        assert!(t.access.contains(need), "{what} with rights {:?}", t.access);
        let mr = self.m.mrs.get(&t.rkey).expect("held region is gone");
        assert!(
            mr.access.contains(need),
            "{what} on a key without the right"
        );
        t
    }
}

impl Io for Guard<'_> {
    fn peek(&mut self) -> Option<Request> {
        self.m.peek()
    }
    fn pop(&mut self) {
        self.m.pop()
    }
    fn qp_in_error(&mut self) -> bool {
        self.m.qp_in_error()
    }
    fn take_recv(&mut self) -> Result<u32, RecvError> {
        self.m.take_recv()
    }
    fn has_recv(&self) -> bool {
        self.m.has_recv()
    }
    fn recv_data(&mut self, with_grh: bool) -> Result<(), RecvCopyError> {
        self.m.recv_data(with_grh)
    }
    fn recv_received(&self) -> u32 {
        self.m.recv_received()
    }
    fn rewind_recv(&mut self) {
        self.m.rewind_recv()
    }
    fn complete(&mut self, cqe: &RecvCqe) -> Result<(), CqFull> {
        self.m.complete(cqe)
    }
    fn lookup(&mut self, t: &Target) -> Result<(), AccessFault> {
        let r = self.m.lookup(t);
        if r.is_ok() {
            self.target = Some(*t);
        }
        r
    }
    fn release_mr(&mut self) {
        self.target = None;
        self.m.release_mr()
    }
    fn write_data(&mut self, va: u64) -> Result<(), AccessFault> {
        let t = self.held("write", Access::REMOTE_WRITE);
        let n = self.m.reqs.front().map_or(0, |r| r.1.len()) as u64;
        assert!(inside(&t, va, n), "write {va:#x}+{n} outside {t:?}");
        let r = self.m.write_data(va);
        assert!(r.is_ok(), "write {va:#x}+{n} outside the region of {t:?}");
        r
    }
    fn atomic(&mut self, va: u64, op: AtomicOp) -> Result<u64, AtomicError> {
        let t = self.held("atomic", Access::REMOTE_ATOMIC);
        assert!(va == t.va && t.len == 8, "atomic at {va:#x} for {t:?}");
        self.m.atomic(va, op)
    }
    fn atomic_write(&mut self, va: u64) -> Result<(), AtomicError> {
        let t = self.held("atomic write", Access::REMOTE_WRITE);
        assert!(
            va == t.va && t.len == 8,
            "atomic write at {va:#x} for {t:?}"
        );
        self.m.atomic_write(va)
    }
    fn region_bounds(&self) -> Option<(u64, u64)> {
        self.m.region_bounds()
    }
    fn flush(&mut self, va: u64, len: u64) -> Result<(), AccessFault> {
        let t = self.held("flush", Access::FLUSH_PERSISTENT);
        assert!(
            len <= crate::proto::responder::rules::FLUSH_STEP,
            "flush piece of {len} bytes"
        );
        // A piece of a ranged or whole-region flush: inside the region.
        let (base, size) = self.m.region_bounds().expect("held region is gone");
        let (v, n, b, z) = (
            u128::from(va),
            u128::from(len),
            u128::from(base),
            u128::from(size),
        );
        assert!(
            v >= b && v + n <= b + z,
            "flush {va:#x}+{len} outside the region of {t:?}"
        );
        self.m.flush(va, len)
    }
    fn flush_barrier(&mut self) {
        self.m.flush_barrier()
    }
    fn invalidate(&mut self, rkey: u32) -> Result<(), InvalidateError> {
        self.m.invalidate(rkey)
    }
    fn send_read_response(&mut self, r: &ReadResponse) -> Result<(), SendFailed> {
        match r.source {
            ReadSource::Held if r.len > 0 => {
                let t = self.held("read", Access::REMOTE_READ);
                assert!(
                    inside(&t, r.va, u64::from(r.len)),
                    "read {r:?} outside {t:?}"
                );
            }
            ReadSource::Recheck(k) if r.len > 0 => {
                if let Some(mr) = self.m.mrs.get(&k) {
                    assert!(
                        mr.access.contains(Access::REMOTE_READ),
                        "read {r:?} of a key without read"
                    );
                }
            }
            _ => {}
        }
        self.m.send_read_response(r)
    }
    fn send_ack(&mut self, a: &Ack) {
        self.m.send_ack(a)
    }
    fn count(&mut self, ev: Event) {
        self.m.count(ev)
    }
}

pub(super) struct RxQp {
    pub(super) qpn: u32,
    pub(super) qp: RespQp,
    pub(super) st: Box<responder::rules::State>,
    pub(super) io: RespModel,
    pub(super) resets: u64,
    pub(super) executed: u64,
    /// Opcodes of the requests executed, by wire value.
    pub(super) ops: [u64; 256],
}

impl RxQp {
    pub(super) fn new(qpn: u32, qp_type: qp::Type, psn: u32) -> RxQp {
        let mut q = RxQp {
            qpn,
            qp: RespQp {
                qp_type,
                mtu: MTU,
                access: FULL_ACCESS,
                srq: false,
                min_rnr_timer: 3,
            },
            st: Box::new(responder::rules::State::new(psn, 16)),
            io: RespModel::default(),
            resets: 0,
            executed: 0,
            ops: [0; 256],
        };
        q.io.foreign_keys.push(K_FOREIGN);
        q.restore_mrs();
        q.refill(8);
        q
    }

    fn restore_mrs(&mut self) {
        for (k, base, acc) in mrs() {
            if !self.io.mrs.contains_key(&k) {
                self.io.mr(k, base, MR_LEN, acc);
            }
        }
    }

    pub(super) fn refill(&mut self, n: usize) {
        while self.io.rq.len() < n {
            self.io.rq.push_back(3 * MTU as usize + 64);
        }
    }

    /// Brings the QP back with other attributes: an SRQ or not, fewer
    /// responder resources (none: reads and atomics are refused), fewer
    /// remote rights.
    fn reconfigure(&mut self, rng: &mut Rng) {
        self.qp.srq = self.qp.qp_type != qp::Type::Rc && rng.chance(30);
        self.io.srq = self.qp.srq;
        self.st.set_max_dest_rd_atomic(rng.pick(&[16, 16, 1, 0]));
        self.qp.access = if rng.chance(20) {
            FULL_ACCESS & rng.u32()
        } else {
            FULL_ACCESS
        };
    }

    /// The engine's error handling: flush, then the user brings the QP
    /// back through RESET to RTR with a new PSN.
    pub(super) fn reset(&mut self, psn: u32) {
        self.io.reqs.clear();
        self.io.held = None;
        self.io.held_mr = None;
        self.io.in_error = false;
        self.st.reset();
        self.st.set_rq_psn(psn);
        self.st.set_max_dest_rd_atomic(16);
        self.restore_mrs();
        self.resets += 1;
    }

    /// Delivers one request and runs the responder as the engine does.
    pub(super) fn deliver(&mut self, r: Request, payload: Vec<u8>, rng: &mut Rng) {
        self.io.push(r, payload);
        self.io.rq_malformed = rng.chance(1);
        self.io.cq_full = rng.chance(1);
        self.io.fail_read = match rng.below(200) {
            0 => Some(SendFailed::Send),
            1 => Some(SendFailed::Access),
            _ => None,
        };
        if rng.chance(3) {
            self.io.rq.clear();
        } else {
            self.refill(4);
        }
        let mut guard = 0;
        loop {
            guard += 1;
            assert!(guard < 64, "responder does not settle");
            let before = self.st.psn;
            let head = self.io.peek();
            let reading = self.st.cur;
            let out = {
                let mut g = Guard {
                    m: &mut self.io,
                    target: None,
                };
                responder::machine::run(&mut self.st, &self.qp, &mut g)
            };
            // The engine's Io lives for one run: a region still held goes with it.
            self.io.held_mr = None;
            self.check_psn(before, head, reading, &out);
            if out.qp_error {
                let psn = rng.u32() & PSN_MASK;
                self.reset(psn);
                if rng.chance(50) {
                    self.reconfigure(rng);
                }
                break;
            }
            if !out.progress {
                break;
            }
        }
        self.io.rq_malformed = false;
        self.io.cq_full = false;
        self.io.fail_read = None;
        // Keep the logs small.
        self.io.out.clear();
        self.io.cqes.clear();
        self.io.flushes.clear();
        self.io.events.clear();
    }

    /// The expected PSN moves only by a request the run executed.
    fn check_psn(
        &mut self,
        before: u32,
        head: Option<Request>,
        reading: Option<usize>,
        out: &responder::machine::Outcome,
    ) {
        let after = self.st.psn;
        if after == before {
            return;
        }
        assert!(out.progress || out.qp_error, "PSN moved without progress");
        let head = head.expect("PSN moved without a request");
        self.executed += 1;
        self.ops[usize::from(head.opcode.bits())] += 1;
        if reading.is_some() || head.opcode.has(Mask::READ) {
            // The end of a read reply: past its last response PSN.
            let d = psn_diff(after, before);
            assert!(
                d > 0 && d <= (MR_LEN as i32 / MTU as i32) + 1 || self.qp.qp_type != qp::Type::Rc,
                "read moved the PSN {before:#x} -> {after:#x}"
            );
            return;
        }
        assert_eq!(
            after,
            psn_add(head.psn, 1),
            "PSN {before:#x} -> {after:#x} by {head:?}"
        );
        if self.qp.qp_type == qp::Type::Rc {
            assert_eq!(head.psn, before, "RC executed {head:?} out of sequence");
        }
    }
}

// ---------------------------------------------------------------------------
// The completer side.

pub(super) struct Tx {
    pub(super) comp: completer::State,
    pub(super) req: requester::State,
    pub(super) sq: SqModel,
    pub(super) resets: u64,
}

pub(super) const TX_OPS: [WrOpcode; 7] = [
    WrOpcode::Send,
    WrOpcode::RdmaWrite,
    WrOpcode::RdmaRead,
    WrOpcode::AtomicFetchAndAdd,
    WrOpcode::AtomicCmpAndSwp,
    WrOpcode::Flush,
    WrOpcode::AtomicWrite,
];

impl Tx {
    pub(super) fn new(rng: &mut Rng, psn: u32) -> Tx {
        let mut t = Tx {
            comp: completer::State::new(psn, 3, 3),
            req: requester::State::new(psn, 16),
            sq: SqModel::default(),
            resets: 0,
        };
        let n = 1 + rng.below(6) as usize;
        t.post(rng, n);
        t
    }

    /// A fresh SQ of sent WQEs from `comp.psn` (the requester's side is not
    /// modelled: every WQE is sent whole).
    fn post(&mut self, rng: &mut Rng, n: usize) {
        let ok = self.sq.ok;
        self.sq = SqModel {
            ok,
            ..SqModel::default()
        };
        let mut psn = self.comp.psn;
        for _ in 0..n {
            let op = rng.pick(&TX_OPS);
            let len = match op {
                WrOpcode::Send | WrOpcode::RdmaWrite | WrOpcode::RdmaRead => rng.below(3 * MTU + 1),
                WrOpcode::AtomicWrite | WrOpcode::AtomicFetchAndAdd | WrOpcode::AtomicCmpAndSwp => {
                    8
                }
                _ => 0,
            };
            let info = WqeInfo::new(op, qp::Type::Rc, SendFlags(SendFlags::SIGNALED), len, 0);
            let pkts = if info.mask.intersects(WrMask::ATOMIC) || op == WrOpcode::Flush {
                1
            } else {
                len.div_ceil(MTU).max(1)
            };
            let mut p = Progress::posted(len, 0);
            p.state = WqeState::Pending;
            p.first_psn = psn;
            p.last_psn = psn_add(psn, pkts - 1);
            p.resid = if op == WrOpcode::RdmaRead { len } else { 0 };
            p.has_rd_atomic = info.mask.intersects(WrMask::ATOMIC_OR_READ);
            self.sq.wqes.push(SentWqe::new(info, p));
            psn = psn_add(psn, pkts);
        }
        self.req.psn = psn;
        self.req.need_retry = false;
        self.req.wait_for_rnr_timer = false;
    }

    pub(super) fn reset(&mut self, rng: &mut Rng) {
        let psn = if rng.bool() {
            PSN_MASK - rng.below(8)
        } else {
            rng.u32() & PSN_MASK
        };
        self.comp.reset();
        self.comp.set_sq_psn(psn);
        self.comp.set_retry_cnt(3);
        self.comp.set_rnr_retry(3);
        self.req = requester::State::new(psn, 16);
        let n = 1 + rng.below(6) as usize;
        self.post(rng, n);
        self.resets += 1;
    }

    pub(super) fn deliver(&mut self, r: Response, payload: Vec<u8>, orig: u64, rng: &mut Rng) {
        self.sq.inbox.push_back((r, payload, orig));
        if rng.chance(2) {
            self.comp.timer_fired();
        }
        let mut guard = 0;
        loop {
            guard += 1;
            assert!(guard < 64, "completer does not settle");
            let before = self.comp.psn;
            let out = completer::run(&mut self.comp, &mut self.req, &mut self.sq);
            assert!(
                psn_diff(self.comp.psn, before) >= 0,
                "comp.psn went back {before:#x} -> {:#x}",
                self.comp.psn
            );
            assert!(
                !psn_after(self.comp.psn, self.req.psn),
                "acknowledged {:#x} past the sent {:#x}",
                self.comp.psn,
                self.req.psn
            );
            // The requester's retry is not modelled: everything stays sent.
            self.req.need_retry = false;
            self.req.wait_for_rnr_timer = false;
            if out.qp_error || self.sq.consumer >= self.sq.wqes.len() {
                self.reset(rng);
                break;
            }
            if !out.progress {
                break;
            }
        }
    }

    /// A response the head WQE expects (possibly one of several).
    pub(super) fn valid_response(&self, rng: &mut Rng) -> Option<Pkt> {
        let w = self.sq.wqes.get(self.sq.consumer)?;
        let p = &w.progress;
        let op = w.info.opcode;
        Some(match op {
            WrOpcode::RdmaRead => {
                let done = w.info.length - p.resid;
                let idx = done / MTU;
                let psn = psn_add(p.first_psn, idx);
                let n = p.resid.min(MTU);
                let single = p.first_psn == p.last_psn;
                let rop = if single {
                    Opcode::RcReadResponseOnly
                } else if idx == 0 {
                    Opcode::RcReadResponseFirst
                } else if psn == p.last_psn {
                    Opcode::RcReadResponseLast
                } else {
                    Opcode::RcReadResponseMiddle
                };
                Pkt::new(rop, QPN_TX, psn, n as usize)
            }
            WrOpcode::AtomicFetchAndAdd | WrOpcode::AtomicCmpAndSwp => {
                let mut k = Pkt::new(Opcode::RcAtomicAck, QPN_TX, p.last_psn, 0);
                k.atmack.orig = rng.next();
                k
            }
            WrOpcode::Flush | WrOpcode::AtomicWrite => {
                Pkt::new(Opcode::RcReadResponseOnly, QPN_TX, p.last_psn, 0)
            }
            _ => Pkt::new(Opcode::RcAck, QPN_TX, p.last_psn, 0),
        })
    }
}
