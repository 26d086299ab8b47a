// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Host tests of [`super`] (`ip.rs`).

use super::*;
use std::vec::Vec;

#[test]
fn gid_mapping() {
    let v4 = IpAddr::V4([10, 77, 0, 2]);
    let gid = v4.to_gid();
    assert_eq!(
        gid,
        [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 77, 0, 2]
    );
    assert_eq!(IpAddr::from_gid(gid), v4);
    assert_eq!(v4.network_type(), NetworkType::Ipv4);
    let mut g6 = [0u8; 16];
    g6[0] = 0xfd;
    g6[1] = 0x77;
    g6[15] = 2;
    assert_eq!(IpAddr::from_gid(g6), IpAddr::V6(g6));
    assert_eq!(IpAddr::V6(g6).to_gid(), g6);
    assert_eq!(IpAddr::V6(g6).network_type(), NetworkType::Ipv6);
    // Almost-mapped prefixes stay IPv6.
    let mut g = gid;
    g[10] = 0xfe;
    assert!(matches!(IpAddr::from_gid(g), IpAddr::V6(_)));
}

#[test]
fn multicast() {
    assert!(IpAddr::V4([224, 0, 0, 1]).is_multicast());
    assert!(IpAddr::V4([239, 255, 255, 255]).is_multicast());
    assert!(!IpAddr::V4([240, 0, 0, 1]).is_multicast());
    assert!(!IpAddr::V4([10, 0, 0, 1]).is_multicast());
    let mut g = [0u8; 16];
    g[0] = 0xff;
    assert!(IpAddr::V6(g).is_multicast());
    g[0] = 0xfe;
    assert!(!IpAddr::V6(g).is_multicast());
    assert!(IpAddr::from_gid(IpAddr::V4([224, 1, 2, 3]).to_gid()).is_multicast());
}

#[test]
fn sports() {
    // hash_32(x, 14) = (x * 0x61c88647) >> 18, worked by hand.
    assert_eq!(qp_udp_sport(0), 0xc000);
    assert_eq!(qp_udp_sport(1), 0xc000 | (0x61c8_8647u32 >> 18) as u16);
    assert_eq!(
        qp_udp_sport(17),
        0xc000 | (17u32.wrapping_mul(0x61c8_8647) >> 18) as u16
    );
    for q in [0u32, 1, 16, 17, 0xff_ffff, 12345] {
        assert!(qp_udp_sport(q) >= 0xc000);
    }
    assert_eq!(flow_label_to_udp_sport(0), 0xc000);
    assert_eq!(flow_label_to_udp_sport(0x3fff), 0xffff);
    assert_eq!(flow_label_to_udp_sport(0x4000), 0xc001);
    assert_eq!(flow_label_to_udp_sport(0xfffff), 0xc000 | (0x3fff ^ 0x3f));
    assert_eq!(calc_flow_label(0, 5), 0);
    assert_eq!(calc_flow_label(3, 5), 15);
    assert_eq!(calc_flow_label(5, 3), calc_flow_label(3, 5));
    let big = calc_flow_label(0xff_ffff, 0xff_fffe);
    assert!(big <= 0xfffff);
    let v = 0xff_ffffu64 * 0xff_fffe;
    let v = v ^ (v >> 20);
    let v = v ^ (v >> 40);
    assert_eq!(u64::from(big), v & 0xfffff);
    assert_eq!(udp_sport(0, 3, 5), flow_label_to_udp_sport(15));
    assert_eq!(udp_sport(0x4000, 3, 5), 0xc001);
}

#[test]
fn ipv4_header() {
    let mut b = [0xaau8; 24];
    let h = Ipv4Out {
        src: [10, 0, 0, 1],
        dst: [10, 0, 0, 2],
        tos: 0x02,
        ttl: 64,
        total_len: 0x0123,
        id: 0xbeef,
    };
    write_ipv4(&mut b, &h).unwrap();
    assert_eq!(
        &b[..20],
        &[0x45, 2, 1, 0x23, 0xbe, 0xef, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]
    );
    assert_eq!(b[20], 0xaa);
    let info = parse_ip(&b).unwrap();
    assert_eq!(info.src, IpAddr::V4([10, 0, 0, 1]));
    assert_eq!(info.dst, IpAddr::V4([10, 0, 0, 2]));
    assert_eq!(info.hdr_len, 20);
    assert_eq!(write_ipv4(&mut b[..19], &h), Err(TooShort));
    // Options are skipped by length, and a short IHL is refused.
    let mut opt = [0u8; 24];
    opt[..20].copy_from_slice(&b[..20]);
    opt[0] = 0x46;
    assert_eq!(parse_ip(&opt).unwrap().hdr_len, 24);
    assert_eq!(parse_ip(&opt[..23]), None);
    opt[0] = 0x44;
    assert_eq!(parse_ip(&opt), None);
    let nh = network_hdr(&b).unwrap();
    assert_eq!(&nh[..20], &[0; 20]);
    assert_eq!(&nh[20..], &b[..20]);
}

#[test]
fn ipv6_header() {
    let mut src = [0u8; 16];
    let mut dst = [0u8; 16];
    src[0] = 0xfd;
    src[15] = 1;
    dst[0] = 0xfd;
    dst[15] = 2;
    let h = Ipv6Out {
        src,
        dst,
        traffic_class: 0xab,
        hop_limit: 255,
        payload_len: 300,
    };
    let mut b = [0u8; 40];
    write_ipv6(&mut b, &h).unwrap();
    assert_eq!(&b[..8], &[0x6a, 0xb0, 0, 0, 1, 44, 17, 255]);
    assert_eq!(&b[8..24], &src);
    assert_eq!(&b[24..], &dst);
    let info = parse_ip(&b).unwrap();
    assert_eq!(
        (info.src, info.dst, info.hdr_len),
        (IpAddr::V6(src), IpAddr::V6(dst), 40)
    );
    assert_eq!(parse_ip(&b[..39]), None);
    assert_eq!(network_hdr(&b), Some(b));
    assert_eq!(write_ipv6(&mut b[..39], &h), Err(TooShort));
}

#[test]
fn udp_header() {
    let mut b = [0u8; 8];
    write_udp(&mut b, 0xc123, 4791, 40).unwrap();
    assert_eq!(b, [0xc1, 0x23, 0x12, 0xb7, 0, 40, 0, 0]);
    let u = UdpHdr::parse(&b).unwrap();
    assert_eq!((u.sport, u.dport, u.len), (0xc123, 4791, 40));
    assert_eq!(u.payload_len(), Some(32));
    assert_eq!(UdpHdr { len: 7, ..u }.payload_len(), None);
    assert_eq!(UdpHdr::parse(&b[..7]), None);
    assert_eq!(write_udp(&mut b[..7], 1, 2, 3), Err(TooShort));
}

#[test]
fn parse_garbage() {
    assert_eq!(parse_ip(&[]), None);
    for first in 0..=255u8 {
        let mut b = [0u8; 64];
        b[0] = first;
        let r = parse_ip(&b);
        match first >> 4 {
            4 => assert_eq!(r.is_some(), first & 0x0f >= 5),
            6 => assert!(r.is_some()),
            _ => assert!(r.is_none()),
        }
        let _ = network_hdr(&b[..(first as usize % 64)]);
    }
}

#[test]
fn ipv4_ids_come_in_blocks_per_peer() {
    let ids = Ipv4Ids::new();
    let (a, b, c) = ([10, 0, 0, 1], [10, 0, 0, 2], [10, 0, 0, 3]);
    // Nothing reserved yet.
    assert_eq!(ids.take(a, b), None);
    ids.refill(a, b, 0xfff0);
    // The caller used 0xfff0; the rest of the block follows, wrapping.
    let got: Vec<u16> = (1..IPV4_ID_BLOCK)
        .map(|_| ids.take(a, b).unwrap())
        .collect();
    let want: Vec<u16> = (1..IPV4_ID_BLOCK)
        .map(|i| 0xfff0u16.wrapping_add(i))
        .collect();
    assert_eq!(got, want);
    // Used up.
    assert_eq!(ids.take(a, b), None);
    ids.refill(a, b, 7);
    assert_eq!(ids.take(a, b), Some(8));
    // Another peer (either address) needs a block of its own.
    assert_eq!(ids.take(a, c), None);
    assert_eq!(ids.take(c, b), None);
    ids.refill(a, c, 100);
    assert_eq!(ids.take(a, c), Some(101));
    assert_eq!(ids.take(a, b), None);
}
