// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Host tests of [`super`] (`headers.rs`).

use super::*;

#[test]
fn bth_round_trip_and_layout() {
    let bth = Bth {
        opcode: 0x0a,
        se: true,
        mig: false,
        pad: 3,
        tver: 0,
        pkey: 0xffff,
        fecn: true,
        becn: false,
        resv6a: 0,
        qpn: 0x12_3456,
        ack_req: true,
        resv7: 0,
        psn: 0xab_cdef,
    };
    let mut b = [0u8; 12];
    bth.write(&mut b).unwrap();
    assert_eq!(
        b,
        [0x0a, 0xb0, 0xff, 0xff, 0x80, 0x12, 0x34, 0x56, 0x80, 0xab, 0xcd, 0xef]
    );
    assert_eq!(Bth::parse(&b), Some(bth));
    assert_eq!(Bth::parse(&b[..11]), None);
    assert_eq!(bth.write(&mut [0u8; 11]), Err(WriteError::TooShort));
}

#[test]
fn bth_every_bit_round_trips() {
    // Any 12 bytes decode and re-encode to themselves: no field is lost.
    let mut x = 0x1234_5678_9abc_def0u64;
    for _ in 0..1000 {
        let mut b = [0u8; 12];
        for byte in b.iter_mut() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *byte = x as u8;
        }
        let bth = Bth::parse(&b).unwrap();
        let mut out = [0u8; 12];
        bth.write(&mut out).unwrap();
        assert_eq!(out, b);
    }
}

#[test]
fn bth_new_masks_and_clears() {
    let bth = Bth::new(Opcode::RcSendOnly, DEFAULT_PKEY, 0xff00_0011, 0x0100_0002);
    assert_eq!(bth.qpn, 0x11);
    assert_eq!(bth.psn, 2);
    assert_eq!(bth.opcode, 0x04);
    assert!(!bth.ack_req && !bth.se && bth.tver == 0 && bth.pad == 0);
}

#[test]
fn ext_headers_round_trip() {
    let mut b = [0u8; 32];
    let reth = Reth {
        va: 0x0102_0304_0506_0708,
        rkey: 0x1122_3344,
        len: 0x5566_7788,
    };
    reth.write(&mut b).unwrap();
    assert_eq!(
        &b[..16],
        &[1, 2, 3, 4, 5, 6, 7, 8, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88]
    );
    assert_eq!(Reth::parse(&b), Some(reth));
    assert_eq!(Reth::parse(&b[..15]), None);

    let atm = AtmEth {
        va: 1,
        rkey: 2,
        swap_add: 3,
        compare: 4,
    };
    atm.write(&mut b).unwrap();
    assert_eq!(b[11], 2);
    assert_eq!(b[19], 3);
    assert_eq!(b[27], 4);
    assert_eq!(AtmEth::parse(&b[..28]), Some(atm));
    assert_eq!(AtmEth::parse(&b[..27]), None);
    assert_eq!(atm.write(&mut [0u8; 27]), Err(WriteError::TooShort));

    let aeth = Aeth {
        syndrome: 0x1f,
        msn: 0x00ab_cdef,
    };
    aeth.write(&mut b).unwrap();
    assert_eq!(&b[..4], &[0x1f, 0xab, 0xcd, 0xef]);
    assert_eq!(Aeth::parse(&b), Some(aeth));

    let deth = Deth {
        qkey: GSI_QKEY,
        src_qpn: 0xff00_0001,
    };
    deth.write(&mut b).unwrap();
    assert_eq!(&b[..8], &[0x80, 0x01, 0, 0, 0, 0, 0, 1]);
    assert_eq!(Deth::parse(&b).unwrap().src_qpn, 1);

    let feth = Feth {
        ptype: FLUSH_GLOBAL | FLUSH_PERSISTENT,
        level: 1,
    };
    feth.write(&mut b).unwrap();
    assert_eq!(&b[..4], &[0, 0, 0, 0x13]);
    let back = Feth::parse(&b).unwrap();
    assert_eq!(back, feth);
    assert_eq!(back.flush_level(), Ok(FlushLevel::Mr));
    assert_eq!(Feth { ptype: 0, level: 2 }.flush_level(), Err(2));

    ImmDt([9, 8, 7, 6]).write(&mut b).unwrap();
    assert_eq!(ImmDt::parse(&b), Some(ImmDt([9, 8, 7, 6])));
    AtmAck { orig: u64::MAX - 1 }.write(&mut b).unwrap();
    assert_eq!(AtmAck::parse(&b).unwrap().orig, u64::MAX - 1);
    Ieth { rkey: 0xdead_beef }.write(&mut b).unwrap();
    assert_eq!(Ieth::parse(&b).unwrap().rkey, 0xdead_beef);
    Rdeth { een: 0x0100_0005 }.write(&mut b).unwrap();
    assert_eq!(Rdeth::parse(&b).unwrap().een, 5);
}
