// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Host tests of the ICRC: known answers, masked fields, framing, the
//! fold against the tables.

use super::super::packet::parse;
use super::*;

use super::super::crc32::tests::bitwise as crc_bitwise;

/// The driver's method on the host: the PCLMULQDQ fold with its mask
/// for buffers of 16 bytes and more, the tables below.
#[cfg(target_arch = "x86_64")]
pub(super) struct FoldCrc32;

#[cfg(target_arch = "x86_64")]
impl Crc32 for FoldCrc32 {
    fn update(&mut self, crc: u32, data: &[u8]) -> u32 {
        self.update_masked(crc, data, &Mask::NONE)
    }

    fn update_masked(&mut self, crc: u32, data: &[u8], mask: &Mask) -> u32 {
        // SAFETY: the caller checked the CPU (`fold_available`), and the
        // 256-bit loop runs where the CPU has it; the host owns its
        // vector registers.
        unsafe { crate::clmul::crc32(crc, data, mask, wide_available()) }
            .unwrap_or_else(|| super::super::crc32::crc32_masked(crc, data, mask))
    }
}

#[cfg(target_arch = "x86_64")]
fn wide_available() -> bool {
    std::is_x86_feature_detected!("vpclmulqdq") && std::is_x86_feature_detected!("avx2")
}

#[cfg(target_arch = "x86_64")]
pub(super) fn fold_available() -> bool {
    std::is_x86_feature_detected!("pclmulqdq") && std::is_x86_feature_detected!("ssse3")
}

/// `ip`, `udp` and `pkt` in one buffer.
pub(super) fn joined(ip: &[u8], udp: &[u8], pkt: &[u8]) -> std::vec::Vec<u8> {
    [ip, udp, pkt].concat()
}

/// The [`Frame`] forms agree with the split ones, with the table CRC
/// and (where the CPU has it) with the fold, and `begin_frame` with
/// the pieces after it equals the whole.
pub(super) fn check_frame(ip: IpHdr<'_>, udp: &[u8], pkt: &[u8], hdr_len: Option<usize>) {
    let (v6, iph) = match ip {
        IpHdr::V4(h) => (false, h),
        IpHdr::V6(h) => (true, h),
    };
    let buf = joined(iph, udp, pkt);
    let f = Frame {
        buf: &buf,
        v6,
        udp_at: iph.len(),
    };
    let want = compute(&mut TableCrc32, ip, udp, pkt);
    let ok = icrc_ok(&mut TableCrc32, ip, udp, pkt);
    assert_eq!(compute_frame(&mut TableCrc32, f).ok(), want.ok());
    assert_eq!(icrc_ok_frame(&mut TableCrc32, f), ok);
    #[cfg(target_arch = "x86_64")]
    if fold_available() {
        assert_eq!(compute_frame(&mut FoldCrc32, f).ok(), want.ok());
        assert_eq!(icrc_ok_frame(&mut FoldCrc32, f), ok);
        assert_eq!(compute(&mut FoldCrc32, ip, udp, pkt).ok(), want.ok());
    }
    let (Ok(want), Some(hdr_len)) = (want, hdr_len) else {
        return;
    };
    if rxe_rescanned_header(pkt).is_some() {
        return;
    }
    let body = &pkt[hdr_len..pkt.len() - ICRC_LEN];
    let hf = Frame {
        buf: &buf[..iph.len() + UDP_LEN + hdr_len],
        ..f
    };
    let cut = body.len() / 3;
    let mut r = begin_frame(&mut TableCrc32, hf).unwrap();
    r.update(&mut TableCrc32, &body[..cut]);
    r.update(&mut TableCrc32, &body[cut..]);
    assert_eq!(r.finish(), want);
    #[cfg(target_arch = "x86_64")]
    if fold_available() {
        let mut r = begin_frame(&mut FoldCrc32, hf).unwrap();
        r.update(&mut FoldCrc32, &body[..cut]);
        r.update(&mut FoldCrc32, &body[cut..]);
        assert_eq!(r.finish(), want);
    }
}

fn hex(s: &str) -> std::vec::Vec<u8> {
    let s: std::string::String = s.chars().filter(|c| !c.is_whitespace()).collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn crc_primitive() {
    // zlib/IEEE check value of "123456789", which is the inverted crc32_le.
    assert_eq!(!crc32_le(!0, b"123456789"), 0xcbf4_3926);
    assert_eq!(crc32_le(!0, &[0xff; 8]), SEED);
    let mut x = 7u32;
    let data: std::vec::Vec<u8> = (0..1000)
        .map(|_| {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            (x >> 16) as u8
        })
        .collect();
    assert_eq!(
        crc32_le(0x1234_5678, &data),
        crc_bitwise(0x1234_5678, &data)
    );
    // Splitting the input does not change the result.
    let (a, b) = data.split_at(333);
    assert_eq!(crc32_le(crc32_le(!0, a), b), crc32_le(!0, &data));
}

/// RoCEv2 CNP captured on a ConnectX-4 Lx (IPv4 from the IP header on), as
/// published with scapy's RoCE tests. Checks the masking and byte order
/// against real hardware.
#[test]
fn hardware_captured_cnp() {
    let frame = hex("45c2003c718c4000401191610a0011010a001201000012b700280000\
         8100ffff400001180000000000000000000000000000000000000000\
         82fd002a");
    let (ip, rest) = frame.split_at(20);
    let (udp, pkt) = rest.split_at(8);
    let mut crc = TableCrc32;
    assert_eq!(compute(&mut crc, IpHdr::V4(ip), udp, pkt), Ok(0x2a00_fd82));
    assert!(icrc_ok(&mut crc, IpHdr::V4(ip), udp, pkt));
    assert_eq!(&pkt[pkt.len() - 4..], &[0x82, 0xfd, 0x00, 0x2a]);
    check_frame(IpHdr::V4(ip), udp, pkt, Some(BTH_LEN + 16));
    #[cfg(target_arch = "x86_64")]
    if fold_available() {
        let f = Frame {
            buf: &frame,
            v6: false,
            udp_at: 20,
        };
        assert!(icrc_ok_frame(&mut FoldCrc32, f));
        assert_eq!(compute_frame(&mut FoldCrc32, f), Ok(0x2a00_fd82));
    }
}

// Expected values below come from Python's zlib.crc32 over 8 x 0xff and the
// masked headers, written independently of this file.
const IP4: &str = "4502003c04d240004011beefc0a80101c0a80102";
const UDP: &str = "c0de12b700281234";
const IB: &str = "04b0ffff8000001180123456536f66742d526f4345204b4154000000";
const IP6: &str = "6123456700281140202122232425262728292a2b2c2d2e2f\
                   404142434445464748494a4b4c4d4e4f";

fn packet(ib: &str) -> std::vec::Vec<u8> {
    let mut pkt = hex(ib);
    pkt.extend_from_slice(&[0; ICRC_LEN]);
    pkt
}

#[test]
fn known_answer_ipv4() {
    let (ip, udp) = (hex(IP4), hex(UDP));
    let mut pkt = packet(IB);
    let mut crc = TableCrc32;
    generate(&mut crc, IpHdr::V4(&ip), &udp, &mut pkt).unwrap();
    assert_eq!(wire_icrc(&pkt), Some(0x5963_bbf6));
    assert_eq!(&pkt[pkt.len() - 4..], &[0xf6, 0xbb, 0x63, 0x59]);
    assert!(icrc_ok(&mut crc, IpHdr::V4(&ip), &udp, &pkt));
    // The packet parses and the ICRC sits where the parser says.
    let pi = parse(&pkt).unwrap();
    assert_eq!(pi.icrc_offset(), pkt.len() - 4);
    assert_eq!(pi.payload(&pkt), Some(&b"Soft-RoCE KAT"[..]));
    check_frame(IpHdr::V4(&ip), &udp, &pkt, Some(BTH_LEN));
    let mut buf = joined(&ip, &udp, &pkt);
    let at = buf.len() - ICRC_LEN;
    buf[at..].fill(0);
    generate_frame(&mut TableCrc32, &mut buf, false, 20).unwrap();
    assert_eq!(&buf[at..], &[0xf6, 0xbb, 0x63, 0x59]);
}

/// The piecewise ICRC of a packet split anywhere after its headers
/// equals the one over the whole packet.
#[test]
fn pieces_match_the_whole() {
    let (ip, udp) = (hex(IP4), hex(UDP));
    let pkt = packet(IB);
    let mut crc = TableCrc32;
    let whole = compute(&mut crc, IpHdr::V4(&ip), &udp, &pkt).unwrap();
    let pi = parse(&pkt).unwrap();
    let hdr_len = pi.icrc_offset() - pi.payload(&pkt).unwrap().len() - pi.pad;
    let body = &pkt[hdr_len..pkt.len() - ICRC_LEN];
    for cut in 0..=body.len() {
        let mut r = begin(&mut crc, IpHdr::V4(&ip), &udp, &pkt[..hdr_len]).unwrap();
        r.update(&mut crc, &body[..cut]);
        r.update(&mut crc, &body[cut..]);
        assert_eq!(r.finish(), whole);
    }
    // Too short a header, and the opcodes covered twice, are refused.
    assert!(begin(&mut crc, IpHdr::V4(&ip), &udp, &pkt[..BTH_LEN - 1]).is_err());
    let mut flush = pkt.clone();
    flush[0] = Opcode::RcFlush as u8;
    assert!(begin(&mut crc, IpHdr::V4(&ip), &udp, &flush[..hdr_len]).is_err());
}

#[test]
fn known_answer_ipv6() {
    let (ip, udp) = (hex(IP6), hex(UDP));
    let pkt = packet(IB);
    let mut crc = |c: u32, d: &[u8]| crc_bitwise(c, d);
    assert_eq!(
        compute(&mut crc, IpHdr::V6(&ip), &udp, &pkt),
        Ok(0xf434_60d8)
    );
    let buf = joined(&ip, &udp, &pkt);
    let f = Frame {
        buf: &buf,
        v6: true,
        udp_at: 40,
    };
    assert_eq!(compute_frame(&mut crc, f), Ok(0xf434_60d8));
    #[cfg(target_arch = "x86_64")]
    if fold_available() {
        assert_eq!(compute_frame(&mut FoldCrc32, f), Ok(0xf434_60d8));
    }
    check_frame(IpHdr::V6(&ip), &udp, &pkt, Some(BTH_LEN));
    // An extension header between the IPv6 and UDP headers is not
    // covered.
    let mut ext = ip.clone();
    ext.extend_from_slice(&[17, 0, 1, 4, 0, 0, 0, 0]);
    let buf = joined(&ext, &udp, &pkt);
    let f = Frame {
        buf: &buf,
        v6: true,
        udp_at: 48,
    };
    assert_eq!(compute_frame(&mut crc, f), Ok(0xf434_60d8));
}

#[test]
fn variant_fields_are_masked_and_others_are_not() {
    let (ip, udp) = (hex(IP4), hex(UDP));
    let pkt = packet(IB);
    let mut crc = TableCrc32;
    let base = compute(&mut crc, IpHdr::V4(&ip), &udp, &pkt).unwrap();
    for (i, variant) in [
        (1, true),
        (8, true),
        (10, true),
        (11, true),
        (9, false),
        (15, false),
    ] {
        let mut ip2 = ip.clone();
        ip2[i] ^= 0x5a;
        let got = compute(&mut crc, IpHdr::V4(&ip2), &udp, &pkt).unwrap();
        assert_eq!(got == base, variant, "ipv4 byte {i}");
    }
    for (i, variant) in [(6, true), (7, true), (2, false), (4, false)] {
        let mut udp2 = udp.clone();
        udp2[i] ^= 0x5a;
        let got = compute(&mut crc, IpHdr::V4(&ip), &udp2, &pkt).unwrap();
        assert_eq!(got == base, variant, "udp byte {i}");
    }
    for (i, variant) in [(4, true), (5, false), (8, false), (1, false), (20, false)] {
        let mut pkt2 = pkt.clone();
        pkt2[i] ^= 0x5a;
        let got = compute(&mut crc, IpHdr::V4(&ip), &udp, &pkt2).unwrap();
        assert_eq!(got == base, variant, "ib byte {i}");
    }
    // The ICRC slot itself is not covered.
    let mut pkt2 = pkt.clone();
    let last = pkt2.len() - 1;
    pkt2[last] = 0x77;
    assert_eq!(compute(&mut crc, IpHdr::V4(&ip), &udp, &pkt2), Ok(base));

    let ip6 = hex(IP6);
    let base6 = compute(&mut crc, IpHdr::V6(&ip6), &udp, &pkt).unwrap();
    for (i, mask, variant) in [
        (0, 0x0f, true),
        (0, 0xf0, false),
        (1, 0xff, true),
        (3, 0xff, true),
        (7, 0xff, true),
        (4, 1, false),
        (6, 1, false),
        (8, 1, false),
    ] {
        let mut ip2 = ip6.clone();
        ip2[i] ^= mask;
        let got = compute(&mut crc, IpHdr::V6(&ip2), &udp, &pkt).unwrap();
        assert_eq!(got == base6, variant, "ipv6 byte {i} mask {mask:#x}");
        check_frame(IpHdr::V6(&ip2), &udp, &pkt, Some(BTH_LEN));
    }
    // The same fields are masked in a frame, with either CRC.
    for i in 0..ip.len() + udp.len() + pkt.len() - ICRC_LEN {
        let mut buf = joined(&ip, &udp, &pkt);
        buf[i] ^= 0x5a;
        let (ip2, rest) = buf.split_at(20);
        check_frame(IpHdr::V4(ip2), &rest[..8], &rest[8..], Some(BTH_LEN));
    }
}

#[test]
fn flush_uses_rxe_framing_and_accepts_spec() {
    let ip = hex("4500004000014000401100000a0000010a000002");
    let udp = hex("c0de12b7002c0000");
    let mut pkt = packet("1c00ffff00000011800000070000001300000000000010000000222200000040");
    let mut crc = TableCrc32;
    // rdma_rxe's double coverage of the headers.
    assert_eq!(
        compute(&mut crc, IpHdr::V4(&ip), &udp, &pkt),
        Ok(0x600e_1ad8)
    );
    generate(&mut crc, IpHdr::V4(&ip), &udp, &mut pkt).unwrap();
    assert!(icrc_ok(&mut crc, IpHdr::V4(&ip), &udp, &pkt));
    check_frame(IpHdr::V4(&ip), &udp, &pkt, None);
    let mut buf = joined(&ip, &udp, &pkt);
    generate_frame(&mut crc, &mut buf, false, 20).unwrap();
    assert_eq!(&buf[28..], &pkt[..]);
    // A peer that covers the packet once, as the spec does, is accepted too.
    let at = pkt.len() - 4;
    pkt[at..].copy_from_slice(&0xffe1_b4edu32.to_le_bytes());
    assert!(icrc_ok(&mut crc, IpHdr::V4(&ip), &udp, &pkt));
    check_frame(IpHdr::V4(&ip), &udp, &pkt, None);
    let buf = joined(&ip, &udp, &pkt);
    let f = Frame {
        buf: &buf,
        v6: false,
        udp_at: 20,
    };
    assert!(icrc_ok_frame(&mut crc, f));
    pkt[at] ^= 1;
    assert!(!icrc_ok(&mut crc, IpHdr::V4(&ip), &udp, &pkt));
}

#[test]
fn bad_inputs() {
    let (ip, udp) = (hex(IP4), hex(UDP));
    let pkt = packet(IB);
    let mut crc = TableCrc32;
    assert_eq!(
        compute(&mut crc, IpHdr::V4(&ip[..19]), &udp, &pkt),
        Err(IcrcError::BadIpHeader)
    );
    let mut opts = ip.clone();
    opts[0] = 0x46;
    assert_eq!(
        compute(&mut crc, IpHdr::V4(&opts), &udp, &pkt),
        Err(IcrcError::BadIpHeader)
    );
    opts[0] = 0x44;
    assert_eq!(
        compute(&mut crc, IpHdr::V4(&opts), &udp, &pkt),
        Err(IcrcError::BadIpHeader)
    );
    assert_eq!(
        compute(&mut crc, IpHdr::V6(&ip), &udp, &pkt),
        Err(IcrcError::BadIpHeader)
    );
    assert_eq!(
        compute(&mut crc, IpHdr::V4(&ip), &udp[..7], &pkt),
        Err(IcrcError::BadUdpHeader)
    );
    assert_eq!(
        compute(&mut crc, IpHdr::V4(&ip), &udp, &pkt[..15]),
        Err(IcrcError::TooShort)
    );
    assert!(compute(&mut crc, IpHdr::V4(&ip), &udp, &pkt[..16]).is_ok());
    assert!(!icrc_ok(&mut crc, IpHdr::V4(&ip), &udp, &pkt[..3]));
    // A flush too short for its own headers is rejected, not misread.
    let flush = packet("1c00ffff000000118000000700000013");
    assert_eq!(
        compute(&mut crc, IpHdr::V4(&ip), &udp, &flush),
        Err(IcrcError::TooShort)
    );
    // IPv4 options are covered.
    let mut with_opts = ip.clone();
    with_opts[0] = 0x46;
    with_opts.extend_from_slice(&[1, 1, 1, 0]);
    let a = compute(&mut crc, IpHdr::V4(&with_opts), &udp, &pkt).unwrap();
    with_opts[21] = 2;
    assert_ne!(
        compute(&mut crc, IpHdr::V4(&with_opts), &udp, &pkt).unwrap(),
        a
    );
}
