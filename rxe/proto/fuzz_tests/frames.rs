// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The fuzzer's packets: the structured `Pkt` with its encoding, the IPv4
//! and IPv6 framing and ICRC repair, and the generators and mutators that
//! make valid requests and then damage them field by field and byte by byte.

use super::*;

// ---------------------------------------------------------------------------
// Packets: structured fields, encoding, framing.

/// Every field a packet can carry; `layout` decides which are encoded.
#[derive(Clone, Debug)]
pub(super) struct Pkt {
    pub(super) layout: Opcode,
    pub(super) bth: Bth,
    pub(super) reth: Reth,
    pub(super) atmeth: AtmEth,
    aeth: Aeth,
    pub(super) atmack: AtmAck,
    imm: [u8; 4],
    ieth: u32,
    deth: Deth,
    feth: Feth,
    pub(super) payload: Vec<u8>,
}

impl Pkt {
    pub(super) fn new(op: Opcode, qpn: u32, psn: u32, payload_len: usize) -> Pkt {
        let mut bth = Bth::new(op, DEFAULT_PKEY, qpn, psn);
        bth.pad = packet::pad_for(payload_len);
        Pkt {
            layout: op,
            bth,
            reth: Reth::default(),
            atmeth: AtmEth::default(),
            aeth: Aeth {
                syndrome: 0x1f,
                msn: 0,
            },
            atmack: AtmAck::default(),
            imm: [1, 2, 3, 4],
            ieth: 0,
            deth: Deth {
                qkey: QKEY,
                src_qpn: 0x77,
            },
            feth: Feth::default(),
            payload: (0..payload_len).map(|i| (i as u8) ^ 0x5a).collect(),
        }
    }

    fn set_payload_len(&mut self, n: usize) {
        self.payload.resize(n, 0xa5);
        self.bth.pad = packet::pad_for(n);
    }

    /// The transport packet: BTH through the (not yet computed) ICRC.
    pub(super) fn encode(&self) -> Vec<u8> {
        let op = self.layout;
        let len = op.header_len() + self.payload.len() + usize::from(self.bth.pad & 3) + ICRC_LEN;
        let mut b = vec![0u8; len];
        self.bth.write(&mut b).unwrap();
        // Each returns NotCarried for a header the layout lacks.
        let _ = write_ext(op, &mut b, &self.reth);
        let _ = write_ext(op, &mut b, &self.atmeth);
        let _ = write_ext(op, &mut b, &self.aeth);
        let _ = write_ext(op, &mut b, &self.atmack);
        let _ = write_ext(op, &mut b, &ImmDt(self.imm));
        let _ = write_ext(op, &mut b, &Ieth { rkey: self.ieth });
        let _ = write_ext(op, &mut b, &self.deth);
        let _ = write_ext(op, &mut b, &Rdeth { een: 5 });
        let _ = write_ext(op, &mut b, &self.feth);
        let off = op.header_len();
        b[off..off + self.payload.len()].copy_from_slice(&self.payload);
        b
    }
}

/// IPv4 + UDP around a transport packet, lengths matching it.
pub(super) fn frame(transport: &[u8], icrc_ok: bool) -> Vec<u8> {
    let udp_len = ip::UDP_HLEN + transport.len();
    let mut f = vec![0u8; ip::IPV4_HLEN + udp_len];
    let h = Ipv4Out {
        src: PEER,
        dst: LOCAL,
        tos: 0,
        ttl: 64,
        total_len: (ip::IPV4_HLEN + udp_len) as u16,
        id: 0,
    };
    ip::write_ipv4(&mut f, &h).unwrap();
    ip::write_udp(&mut f[ip::IPV4_HLEN..], 0xc000, ROCE_PORT, udp_len as u16).unwrap();
    f[ip::IPV4_HLEN + ip::UDP_HLEN..].copy_from_slice(transport);
    if icrc_ok {
        regen_icrc(&mut f);
    }
    f
}

/// IPv6 + UDP around a transport packet, lengths matching it.
pub(super) fn frame6(transport: &[u8], icrc_ok: bool) -> Vec<u8> {
    let udp_len = ip::UDP_HLEN + transport.len();
    let mut f = vec![0u8; ip::IPV6_HLEN + udp_len];
    let h = Ipv6Out {
        src: IpAddr::V4(PEER).to_gid(),
        dst: IpAddr::V4(LOCAL).to_gid(),
        traffic_class: 0,
        hop_limit: 64,
        payload_len: udp_len as u16,
    };
    // Distinct IPv6 addresses, not the v4-mapped ones.
    let (mut h6, mut d6) = (h.src, h.dst);
    h6[..2].copy_from_slice(&[0xfd, 0x00]);
    d6[..2].copy_from_slice(&[0xfd, 0x00]);
    let h = Ipv6Out {
        src: h6,
        dst: d6,
        ..h
    };
    ip::write_ipv6(&mut f, &h).unwrap();
    ip::write_udp(&mut f[ip::IPV6_HLEN..], 0xc000, ROCE_PORT, udp_len as u16).unwrap();
    f[ip::IPV6_HLEN + ip::UDP_HLEN..].copy_from_slice(transport);
    if icrc_ok {
        regen_icrc(&mut f);
    }
    f
}

/// Length of the frame's IP header, by its version nibble.
fn ip_len(f: &[u8]) -> usize {
    if f.first().is_some_and(|b| b >> 4 == 6) {
        ip::IPV6_HLEN
    } else {
        ip::IPV4_HLEN
    }
}

/// Recomputes the ICRC over the frame's current bytes (when it can be).
fn regen_icrc(f: &mut [u8]) {
    let n = ip_len(f);
    if f.len() < n + ip::UDP_HLEN {
        return;
    }
    let v6 = n == ip::IPV6_HLEN;
    let (iph, rest) = f.split_at_mut(n);
    let iph = if v6 { IpHdr::V6(iph) } else { IpHdr::V4(iph) };
    let (udp, pkt) = rest.split_at_mut(ip::UDP_HLEN);
    let _ = icrc::generate(&mut TableCrc32, iph, udp, pkt);
}

/// Sets the IP and UDP lengths to the frame's real length.
fn fix_lengths(f: &mut [u8]) {
    let total = f.len() as u16;
    let n = ip_len(f);
    if f.len() >= n {
        let (at, v) = if n == ip::IPV6_HLEN {
            (4, total - n as u16)
        } else {
            (2, total)
        };
        f[at..at + 2].copy_from_slice(&v.to_be_bytes());
    }
    if f.len() >= n + ip::UDP_HLEN {
        let udp = total - n as u16;
        f[n + 4..n + 6].copy_from_slice(&udp.to_be_bytes());
    }
}

// ---------------------------------------------------------------------------
// Generators and mutators.

fn is_send_open(op: Opcode) -> bool {
    matches!(
        op,
        Opcode::RcSendFirst | Opcode::RcSendMiddle | Opcode::UcSendFirst | Opcode::UcSendMiddle
    )
}

fn is_write_open(op: Opcode) -> bool {
    matches!(
        op,
        Opcode::RcWriteFirst | Opcode::RcWriteMiddle | Opcode::UcWriteFirst | Opcode::UcWriteMiddle
    )
}

/// A request the QP accepts now: the next packet of the message in
/// progress, or a new message of a random kind.
pub(super) fn valid_request(q: &RxQp, rng: &mut Rng) -> Pkt {
    use Opcode::*;
    let psn = q.st.psn;
    let rc = q.qp.qp_type == qp::Type::Rc;
    let pick = |rc_op: Opcode, uc_op: Opcode| if rc { rc_op } else { uc_op };
    match (q.qp.qp_type, q.st.opcode) {
        (qp::Type::Ud, _) => {
            let op = if rng.bool() {
                UdSendOnly
            } else {
                UdSendOnlyImm
            };
            let mut p = Pkt::new(op, q.qpn, psn, rng.below(MTU) as usize);
            if rng.chance(10) {
                p.bth.qpn = 1;
                p.deth.qkey = GSI_QKEY;
            }
            return p;
        }
        // UC drops the rest of a broken message: start a new one.
        (qp::Type::Uc, _) if q.st.drop_msg => {}
        (_, Some(prev)) if is_send_open(prev) => {
            return if rng.bool() {
                Pkt::new(pick(RcSendMiddle, UcSendMiddle), q.qpn, psn, MTU as usize)
            } else {
                let op = rng.pick(&[
                    pick(RcSendLast, UcSendLast),
                    pick(RcSendLastImm, UcSendLastImm),
                ]);
                Pkt::new(op, q.qpn, psn, 1 + rng.below(MTU) as usize)
            };
        }
        (_, Some(prev)) if is_write_open(prev) => {
            let resid = q.st.resid;
            return if resid > MTU {
                Pkt::new(pick(RcWriteMiddle, UcWriteMiddle), q.qpn, psn, MTU as usize)
            } else {
                let op = rng.pick(&[
                    pick(RcWriteLast, UcWriteLast),
                    pick(RcWriteLastImm, UcWriteLastImm),
                ]);
                Pkt::new(op, q.qpn, psn, resid as usize)
            };
        }
        _ => {}
    }
    let kinds: &[Opcode] = if rc {
        &[
            RcSendOnly,
            RcSendOnlyImm,
            RcSendOnlyInv,
            RcSendFirst,
            RcWriteOnly,
            RcWriteOnlyImm,
            RcWriteFirst,
            RcReadRequest,
            RcCompareSwap,
            RcFetchAdd,
            RcAtomicWrite,
            RcFlush,
        ]
    } else {
        &[
            UcSendOnly,
            UcSendOnlyImm,
            UcSendFirst,
            UcWriteOnly,
            UcWriteOnlyImm,
            UcWriteFirst,
        ]
    };
    let op = rng.pick(kinds);
    let mut p = Pkt::new(op, q.qpn, psn, 0);
    let wkey = rng.pick(&[K_RW, K_W, K_TOP]);
    match op {
        RcSendOnly | RcSendOnlyImm | UcSendOnly | UcSendOnlyImm => {
            p.set_payload_len(rng.below(MTU + 1) as usize)
        }
        RcSendOnlyInv => {
            p.ieth = K_INV;
            p.set_payload_len(rng.below(MTU + 1) as usize);
        }
        RcSendFirst | UcSendFirst => p.set_payload_len(MTU as usize),
        RcWriteOnly | RcWriteOnlyImm | UcWriteOnly | UcWriteOnlyImm => {
            let len = rng.below(MTU + 1);
            p.reth = Reth {
                va: mr_base(wkey).wrapping_add(u64::from(rng.below(MR_LEN as u32 - len + 1))),
                rkey: wkey,
                len,
            };
            p.set_payload_len(len as usize);
        }
        RcWriteFirst | UcWriteFirst => {
            let len = MTU + 1 + rng.below(MR_LEN as u32 - MTU);
            p.reth = Reth {
                va: mr_base(wkey).wrapping_add(u64::from(rng.below(MR_LEN as u32 - len + 1))),
                rkey: wkey,
                len,
            };
            p.set_payload_len(MTU as usize);
        }
        RcReadRequest => {
            let key = rng.pick(&[K_RW, K_R, K_TOP]);
            let len = rng.below(MR_LEN as u32 + 1);
            p.reth = Reth {
                va: mr_base(key).wrapping_add(u64::from(rng.below(MR_LEN as u32 - len + 1))),
                rkey: key,
                len,
            };
        }
        RcCompareSwap | RcFetchAdd => {
            let key = rng.pick(&[K_A, K_TOP]);
            p.atmeth = AtmEth {
                va: mr_base(key) + 8 * u64::from(rng.below(MR_LEN as u32 / 8)),
                rkey: key,
                swap_add: rng.next(),
                compare: rng.next() & 0xff,
            };
        }
        RcAtomicWrite => {
            let key = rng.pick(&[K_A, K_W]);
            p.reth = Reth {
                va: mr_base(key) + 8 * u64::from(rng.below(MR_LEN as u32 / 8)),
                rkey: key,
                len: 8,
            };
            p.set_payload_len(8);
        }
        RcFlush => {
            p.feth = Feth {
                ptype: 1 + rng.below(3) as u8,
                level: rng.below(2) as u8,
            };
            p.reth = Reth {
                va: mr_base(K_F) + u64::from(rng.below(MR_LEN as u32)),
                rkey: K_F,
                len: rng.below(16),
            };
            if p.reth.va + u64::from(p.reth.len) > mr_base(K_F) + MR_LEN as u64 {
                p.reth.len = 0;
            }
        }
        _ => {}
    }
    p.bth.ack_req = rng.chance(30);
    p.bth.se = rng.chance(10);
    p
}

/// Header boundaries of a layout (after the BTH, after each extension header).
fn boundaries(op: Opcode) -> Vec<usize> {
    let mut v = vec![0, 1, BTH_LEN - 1, BTH_LEN];
    for h in [
        crate::proto::opcode::Hdr::Rdeth,
        crate::proto::opcode::Hdr::Deth,
        crate::proto::opcode::Hdr::Reth,
        crate::proto::opcode::Hdr::AtmEth,
        crate::proto::opcode::Hdr::Aeth,
        crate::proto::opcode::Hdr::AtmAck,
        crate::proto::opcode::Hdr::ImmDt,
        crate::proto::opcode::Hdr::Ieth,
        crate::proto::opcode::Hdr::Feth,
    ] {
        if let Some(o) = op.offset(h) {
            v.push(o);
            v.push(o + h.len());
        }
    }
    v.push(op.header_len());
    v
}

const SYNDROMES: [u8; 16] = [
    0x1f, 0x00, 0x0a, // ACK, credits
    0x20, 0x33, 0x3f, // RNR NAK
    0x40, 0x5f, // reserved kind
    0x60, 0x61, 0x62, 0x63, 0x64, // NAK codes
    0x65, 0x7f, // undefined NAK codes
    0x9f, // reserved bit
];

fn fuzz_psn(rng: &mut Rng, expected: u32) -> u32 {
    match rng.below(6) {
        0 | 1 => psn_add(expected, rng.below(5)),
        2 => psn_sub(expected, 1 + rng.below(4)),
        3 => PSN_MASK - rng.below(4),
        4 => rng.below(4),
        _ => rng.u32() & PSN_MASK,
    }
}

fn fuzz_va(rng: &mut Rng) -> u64 {
    let (_, base, _) = rng.pick(&mrs());
    let len = MR_LEN as u64;
    match rng.below(9) {
        0 => base,
        1 => base.wrapping_add(len - 8),
        2 => base.wrapping_add(len - 1),
        3 => base.wrapping_add(len),
        4 => base.wrapping_sub(1),
        5 => base.wrapping_add(1 + 8 * u64::from(rng.below(8))),
        6 => u64::MAX - u64::from(rng.below(16)),
        7 => 0,
        _ => rng.next(),
    }
}

fn fuzz_len(rng: &mut Rng, payload: usize) -> u32 {
    let p = payload as u32;
    let r = rng.u32();
    rng.pick(&[
        0,
        1,
        7,
        8,
        9,
        MTU - 1,
        MTU,
        MTU + 1,
        MR_LEN as u32,
        MR_LEN as u32 + 1,
        1 << 31,
        (1 << 31) + 1,
        u32::MAX,
        p,
        p.wrapping_add(1),
        p.wrapping_sub(1),
        r,
    ])
}

pub(super) fn mutate_fields(p: &mut Pkt, rng: &mut Rng, expected_psn: u32) {
    for _ in 0..1 + rng.below(3) {
        let r = rng.u32();
        match rng.below(16) {
            0 | 1 => p.bth.psn = fuzz_psn(rng, expected_psn),
            2 => {
                // Another opcode: of another transport, or a direction the QP does not take.
                let op = rng.pick(crate::proto::opcode::ALL);
                p.layout = op;
                p.bth.opcode = op.bits();
            }
            3 => {
                // A byte outside the table, with some layout.
                p.bth.opcode = rng.u32() as u8;
            }
            4 => {
                p.reth.rkey = rng.pick(&[
                    K_RW, K_R, K_W, K_A, K_F, K_NONE, K_TOP, K_INV, K_FOREIGN, 0, r,
                ]);
                p.atmeth.rkey = p.reth.rkey;
                p.ieth = rng.pick(&[K_INV, K_FOREIGN, K_RW, r.rotate_left(8)]);
            }
            5 => {
                p.reth.va = fuzz_va(rng);
                p.atmeth.va = p.reth.va;
            }
            6 => p.reth.len = fuzz_len(rng, p.payload.len()),
            7 => {
                let n = rng.pick(&[0, 1, 7, 8, 9, MTU - 1, MTU, MTU + 1, r % (2 * MTU + 4)]);
                p.set_payload_len(n as usize);
            }
            8 => p.bth.pad = rng.below(4) as u8,
            9 => {
                p.aeth.syndrome = if rng.bool() {
                    rng.pick(&SYNDROMES)
                } else {
                    rng.u32() as u8
                }
            }
            10 => {
                p.bth.qpn = rng.pick(&[QPN_RC, QPN_UC, QPN_UD, QPN_TX, 1, 0, r & 0xff_ffff]);
            }
            11 => {
                p.deth.qkey = rng.pick(&[QKEY, GSI_QKEY, 0, r]);
                p.deth.src_qpn = rng.u32();
            }
            12 => {
                p.bth.tver = if rng.chance(70) {
                    0
                } else {
                    rng.below(16) as u8
                };
                p.bth.pkey = rng.pick(&[0xffff, 0x7fff, 0x8000, 0, r as u16]);
            }
            13 => {
                p.feth.ptype = rng.below(16) as u8;
                p.feth.level = rng.below(4) as u8;
            }
            14 => {
                p.atmeth.swap_add = rng.next();
                p.atmeth.compare = rng.next();
                p.atmack.orig = rng.next();
                p.imm = rng.u32().to_ne_bytes();
                p.aeth.msn = rng.u32();
            }
            _ => {
                p.bth.se = rng.bool();
                p.bth.ack_req = rng.bool();
                p.bth.mig = rng.bool();
                p.bth.fecn = rng.bool();
                p.bth.becn = rng.bool();
                p.bth.resv6a = rng.below(64) as u8;
                p.bth.resv7 = rng.below(128) as u8;
            }
        }
    }
}

/// Byte-level damage to a framed packet.
pub(super) fn mutate_frame(f: &mut Vec<u8>, layout: Opcode, rng: &mut Rng) {
    let t0 = ip_len(f) + ip::UDP_HLEN;
    match rng.below(6) {
        0 | 1 => {
            // Truncate the transport packet at a header boundary (the ICRC
            // then sits in its last 4 bytes), lengths kept consistent.
            let b = rng.pick(&boundaries(layout));
            let cut = (t0 + b + if rng.bool() { ICRC_LEN } else { 0 }).min(f.len());
            f.truncate(cut);
            fix_lengths(f);
            if rng.chance(80) {
                regen_icrc(f);
            }
        }
        2 => {
            // Truncate anywhere, lengths fixed or not.
            let cut = rng.below(f.len() as u32 + 1) as usize;
            f.truncate(cut);
            if rng.bool() {
                fix_lengths(f);
                regen_icrc(f);
            }
        }
        3 => {
            // UDP or IP length lies.
            if f.len() >= t0 {
                let r = rng.u32() as u16;
                let v = rng.pick(&[0u16, 7, 8, 19, 20, r]);
                let at = if rng.bool() {
                    ip_len(f) + 4
                } else if ip_len(f) == ip::IPV6_HLEN {
                    4
                } else {
                    2
                };
                f[at..at + 2].copy_from_slice(&v.to_be_bytes());
            }
        }
        4 => {
            // Flip bytes of the transport packet, ICRC made right again or not.
            if f.len() > t0 {
                for _ in 0..1 + rng.below(3) {
                    let i = t0 + rng.below((f.len() - t0) as u32) as usize;
                    f[i] ^= 1 << rng.below(8);
                }
                if rng.chance(80) {
                    regen_icrc(f);
                }
            }
        }
        _ => {
            // IP version or header length.
            let r = rng.u32() as u8;
            f[0] = rng.pick(&[0x44, 0x46, 0x4f, 0x65, 0x00, r]);
        }
    }
}
