// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Deterministic fuzzing of the receive path: parser, header accessors and ICRC
//! over random and mutated packets. Nothing may panic, and every accepted
//! packet must describe lengths that add up.

use super::super::headers::{
    Aeth, AtmAck, AtmEth, Bth, Deth, Feth, Ieth, ImmDt, Rdeth, Reth, DEFAULT_PKEY,
};
use super::super::opcode::{Hdr, Mask, Opcode, ALL};
use super::super::packet::{packet_len, pad_for, parse, ParseError};
use super::*;
use std::vec::Vec;

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// A well-formed packet for a random opcode, with random header contents.
fn valid_packet(rng: &mut XorShift) -> (Vec<u8>, Opcode, usize) {
    let op = ALL[rng.below(ALL.len())];
    let payload_len = if op.has(Mask::PAYLOAD) {
        rng.below(80)
    } else {
        0
    };
    let len = packet_len(op, payload_len).unwrap();
    let mut pkt = rng.bytes(len);
    let mut bth = Bth::parse(&pkt).unwrap();
    bth.opcode = op.bits();
    bth.tver = 0;
    bth.pad = pad_for(payload_len);
    bth.pkey = DEFAULT_PKEY;
    bth.write(&mut pkt).unwrap();
    (pkt, op, payload_len)
}

fn check_parsed(pkt: &[u8]) {
    let res = parse(pkt);
    match res {
        Ok(pi) => {
            assert_eq!(pi.opcode.bits(), pkt[0]);
            assert_eq!(pi.paylen, pkt.len());
            assert_eq!(
                pi.header_len() + pi.payload_len + pi.pad + ICRC_LEN,
                pkt.len()
            );
            assert!(pi.pad <= 3);
            assert!(pi.pad == 0 || pi.mask.contains(Mask::PAYLOAD));
            assert_eq!(pi.payload(pkt).map(<[u8]>::len), Some(pi.payload_len));
            assert_eq!(pi.icrc_offset() + ICRC_LEN, pkt.len());
            let op = pi.opcode;
            assert_eq!(
                pi.ext::<Reth>(pkt).is_some(),
                op.offset(Hdr::Reth).is_some()
            );
            assert_eq!(
                pi.ext::<Aeth>(pkt).is_some(),
                op.offset(Hdr::Aeth).is_some()
            );
            assert_eq!(
                pi.ext::<AtmEth>(pkt).is_some(),
                op.offset(Hdr::AtmEth).is_some()
            );
            assert_eq!(
                pi.ext::<AtmAck>(pkt).is_some(),
                op.offset(Hdr::AtmAck).is_some()
            );
            assert_eq!(
                pi.ext::<ImmDt>(pkt).is_some(),
                op.offset(Hdr::ImmDt).is_some()
            );
            assert_eq!(
                pi.ext::<Ieth>(pkt).is_some(),
                op.offset(Hdr::Ieth).is_some()
            );
            assert_eq!(
                pi.ext::<Deth>(pkt).is_some(),
                op.offset(Hdr::Deth).is_some()
            );
            assert_eq!(
                pi.ext::<Rdeth>(pkt).is_some(),
                op.offset(Hdr::Rdeth).is_some()
            );
            assert_eq!(
                pi.ext::<Feth>(pkt).is_some(),
                op.offset(Hdr::Feth).is_some()
            );
            let mut out = [0u8; 12];
            pi.bth.write(&mut out).unwrap();
            assert_eq!(&out[..], &pkt[..12]);
        }
        Err(ParseError::NoBth) => assert!(pkt.len() < 12),
        Err(ParseError::UnknownOpcode(b)) => {
            assert_eq!(b, pkt[0]);
            assert!(Opcode::try_from(b).is_err());
        }
        Err(ParseError::BadTver(t)) => assert_eq!(t, pkt[1] & 0x0f),
        Err(ParseError::BadPad(p)) => assert_eq!(p, (pkt[1] >> 4) & 3),
        Err(ParseError::Truncated { need, have }) => {
            assert_eq!(have, pkt.len());
            assert!(need > have);
        }
    }
}

#[test]
fn random_and_mutated_packets() {
    let mut rng = XorShift(0x5eed_1234_abcd_0001);
    let mut crc = TableCrc32;
    let mut accepted = 0;
    for round in 0..100_000 {
        let (ip_v6, ip) = if rng.below(2) == 0 {
            let words = 5 + rng.below(3);
            let mut ip = rng.bytes(4 * words);
            ip[0] = 0x40 | words as u8;
            (false, ip)
        } else {
            (true, rng.bytes(40))
        };
        let ip_hdr = if ip_v6 {
            IpHdr::V6(&ip)
        } else {
            IpHdr::V4(&ip)
        };
        let udp = rng.bytes(8);
        let mut pkt = match round % 4 {
            0 => {
                let n = rng.below(160);
                rng.bytes(n)
            }
            1 => {
                let (mut pkt, op, payload_len) = valid_packet(&mut rng);
                generate(&mut crc, ip_hdr, &udp, &mut pkt).unwrap();
                assert!(icrc_ok(&mut crc, ip_hdr, &udp, &pkt));
                let pi = parse(&pkt).unwrap();
                let hdr_len = pi.icrc_offset() - pi.payload_len - pi.pad;
                super::tests::check_frame(ip_hdr, &udp, &pkt, Some(hdr_len));
                assert_eq!((pi.opcode, pi.payload_len), (op, payload_len));
                pkt
            }
            _ => {
                let (mut pkt, _, _) = valid_packet(&mut rng);
                generate(&mut crc, ip_hdr, &udp, &mut pkt).unwrap();
                // Flip, truncate or extend a little.
                for _ in 0..1 + rng.below(3) {
                    match rng.below(3) {
                        0 => {
                            let i = rng.below(pkt.len());
                            pkt[i] ^= 1 << rng.below(8);
                        }
                        1 => {
                            let cut = rng.below(pkt.len() + 1);
                            pkt.truncate(cut);
                        }
                        _ => {
                            let extra = rng.below(8);
                            pkt.extend(rng.bytes(extra));
                        }
                    }
                    if pkt.is_empty() {
                        break;
                    }
                }
                pkt
            }
        };
        check_parsed(&pkt);
        if parse(&pkt).is_ok() {
            accepted += 1;
        }
        // The ICRC code must cope with anything, accepted or not, and
        // the one-buffer forms agree with the split ones.
        super::tests::check_frame(ip_hdr, &udp, &pkt, None);
        let _ = compute(&mut crc, ip_hdr, &udp, &pkt);
        let _ = icrc_ok(&mut crc, ip_hdr, &udp, &pkt);
        let _ = compute(&mut crc, ip_hdr, &udp[..rng.below(9)], &pkt);
        let short_ip = &ip[..rng.below(ip.len() + 1)];
        let _ = compute(&mut crc, IpHdr::V4(short_ip), &udp, &pkt);
        let _ = compute(&mut crc, IpHdr::V6(short_ip), &udp, &pkt);
        if round % 4 == 1 {
            // A single flipped covered bit must be detected.
            let i = rng.below(pkt.len() - ICRC_LEN);
            if i != 4 {
                pkt[i] ^= 1 << rng.below(8);
                assert!(!icrc_ok(&mut crc, ip_hdr, &udp, &pkt));
                super::tests::check_frame(ip_hdr, &udp, &pkt, None);
            }
        }
    }
    // Both sides of the parser were exercised.
    assert!(accepted > 30_000 && accepted < 90_000, "{accepted}");
}
