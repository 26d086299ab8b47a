// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Host tests of [`super`] (`packet.rs`).

use super::super::headers::{write_ext, WriteError, DEFAULT_PKEY};
use super::*;

fn build(op: Opcode, payload: &[u8]) -> ([u8; 128], usize) {
    let mut pkt = [0u8; 128];
    let len = packet_len(op, payload.len()).unwrap();
    let mut bth = Bth::new(op, DEFAULT_PKEY, 17, 100);
    bth.pad = pad_for(payload.len());
    bth.write(&mut pkt).unwrap();
    let off = op.header_len();
    pkt[off..off + payload.len()].copy_from_slice(payload);
    (pkt, len)
}

#[test]
fn parse_valid_packets() {
    let (mut pkt, len) = build(Opcode::RcWriteOnlyImm, b"hello");
    let reth = Reth {
        va: 0x1000,
        rkey: 7,
        len: 5,
    };
    write_ext(Opcode::RcWriteOnlyImm, &mut pkt, &reth).unwrap();
    write_ext(Opcode::RcWriteOnlyImm, &mut pkt, &ImmDt([1, 2, 3, 4])).unwrap();
    assert_eq!(
        write_ext(Opcode::RcWriteOnlyImm, &mut pkt, &Aeth::default()),
        Err(WriteError::NotCarried)
    );
    let pkt = &pkt[..len];
    assert_eq!(len, 32 + 5 + 3 + 4);
    let pi = parse(pkt).unwrap();
    assert_eq!(pi.opcode, Opcode::RcWriteOnlyImm);
    assert_eq!(pi.pad, 3);
    assert_eq!(pi.payload_len, 5);
    assert_eq!(pi.payload(pkt), Some(&b"hello"[..]));
    assert_eq!(pi.reth(pkt), Some(reth));
    assert_eq!(pi.immdt(pkt), Some(ImmDt([1, 2, 3, 4])));
    assert_eq!(pi.aeth(pkt), None);
    assert_eq!(pi.psn(), 100);
    assert_eq!(pi.qpn(), 17);
    assert_eq!(pi.icrc_offset(), len - 4);

    let (pkt, len) = build(Opcode::RcAck, b"");
    let pi = parse(&pkt[..len]).unwrap();
    assert_eq!((pi.payload_len, pi.header_len()), (0, 16));
}

#[test]
fn parse_errors() {
    assert_eq!(parse(&[0u8; 11]), Err(ParseError::NoBth));
    let (mut pkt, len) = build(Opcode::RcSendOnly, b"abcd");
    pkt[0] = 0x15;
    assert_eq!(parse(&pkt[..len]), Err(ParseError::UnknownOpcode(0x15)));
    pkt[0] = 0x04;
    pkt[1] |= 0x01;
    assert_eq!(parse(&pkt[..len]), Err(ParseError::BadTver(1)));
    pkt[1] &= 0xf0;
    assert_eq!(parse(&pkt[..16]).map(|p| p.payload_len), Ok(0));
    assert_eq!(
        parse(&pkt[..15]),
        Err(ParseError::Truncated { need: 16, have: 15 })
    );
    // Pad counts against the length too.
    pkt[1] |= 0x20;
    assert_eq!(
        parse(&pkt[..17]),
        Err(ParseError::Truncated { need: 18, have: 17 })
    );

    let (mut ack, len) = build(Opcode::RcAck, b"");
    ack[1] |= 0x10;
    assert_eq!(parse(&ack[..len]), Err(ParseError::BadPad(1)));
}

#[test]
fn pad_and_len() {
    assert_eq!([0, 1, 2, 3, 4, 5].map(pad_for), [0, 3, 2, 1, 0, 3]);
    assert_eq!(packet_len(Opcode::UdSendOnly, 256), Some(20 + 256 + 4));
    assert_eq!(packet_len(Opcode::RcFlush, 0), Some(36));
    assert_eq!(packet_len(Opcode::RcSendOnly, usize::MAX), None);
}
