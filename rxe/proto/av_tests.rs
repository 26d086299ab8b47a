// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Tests of the address vector rules.

use super::*;

pub(crate) fn sgid_v4() -> SgidAttr {
    let mut gid = [0u8; 16];
    gid[10] = 0xff;
    gid[11] = 0xff;
    gid[12..].copy_from_slice(&[10, 77, 0, 1]);
    SgidAttr {
        gid,
        gid_type: gid_type::ROCE_UDP_ENCAP,
    }
}

pub(crate) fn sgid_v6() -> SgidAttr {
    let mut gid = [0u8; 16];
    gid[0] = 0xfd;
    gid[1] = 0x77;
    gid[15] = 1;
    SgidAttr {
        gid,
        gid_type: gid_type::ROCE_UDP_ENCAP,
    }
}

pub(crate) fn ah(sgid: SgidAttr, dgid: [u8; 16]) -> AhAttr {
    AhAttr {
        port_num: 1,
        ah_flags: AH_GRH,
        sl: 3,
        static_rate: 2,
        grh: GlobalRoute {
            dgid,
            flow_label: 0x12345,
            sgid_index: 1,
            hop_limit: 64,
            traffic_class: 7,
        },
        sgid: Some(sgid),
        dmac: [2, 0, 0, 0, 0, 9],
    }
}

#[test]
fn network_types() {
    assert_eq!(sgid_v4().network(), RdmaNetwork::Ipv4);
    assert_eq!(sgid_v6().network(), RdmaNetwork::Ipv6);
    assert_eq!(
        SgidAttr {
            gid_type: gid_type::IB,
            ..sgid_v4()
        }
        .network(),
        RdmaNetwork::Ib
    );
    assert_eq!(
        SgidAttr {
            gid_type: gid_type::ROCE,
            ..sgid_v6()
        }
        .network(),
        RdmaNetwork::RoceV1
    );
    assert_eq!(check_ah_attr(&ah(sgid_v6(), [0; 16])), Ok(()));
    let v1 = ah(
        SgidAttr {
            gid_type: gid_type::ROCE,
            ..sgid_v6()
        },
        [0; 16],
    );
    assert_eq!(check_ah_attr(&v1), Err(AttrError::Invalid));
    assert_eq!(
        check_ah_attr(&AhAttr {
            sgid: None,
            ..ah(sgid_v6(), [0; 16])
        }),
        Err(AttrError::Invalid)
    );
    // Without a GRH nothing is checked.
    assert_eq!(check_ah_attr(&AhAttr { ah_flags: 0, ..v1 }), Ok(()));
}

#[test]
fn av_from_v4_and_v6() {
    let mut dgid = sgid_v4().gid;
    dgid[15] = 2;
    let av = av_from_ah_attr(&ah(sgid_v4(), dgid)).unwrap();
    assert_eq!(av.network_type, NetworkType::Ipv4);
    assert_eq!(av.port_num, 1);
    assert_eq!(av.dmac, [2, 0, 0, 0, 0, 9]);
    assert_eq!(av.src_ipv4(), [10, 77, 0, 1]);
    assert_eq!(av.dst_ipv4(), [10, 77, 0, 2]);
    assert_eq!(&av.sgid_addr[..2], &2u16.to_ne_bytes());
    assert!(av.sgid_addr[8..].iter().all(|&b| b == 0));
    assert_eq!(av.grh.flow_label, 0x12345);

    let dgid6 = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8];
    let av = av_from_ah_attr(&ah(sgid_v6(), dgid6)).unwrap();
    assert_eq!(av.network_type, NetworkType::Ipv6);
    assert_eq!(av.src_ipv6(), sgid_v6().gid);
    assert_eq!(av.dst_ipv6(), dgid6);
    assert_eq!(&av.dgid_addr[..2], &10u16.to_ne_bytes());
    // Port, flowinfo and scope stay zero.
    assert!(av.dgid_addr[2..8].iter().all(|&b| b == 0));
    assert!(av.dgid_addr[24..].iter().all(|&b| b == 0));

    assert_eq!(
        av_from_ah_attr(&AhAttr {
            sgid: None,
            ..ah(sgid_v6(), dgid6)
        }),
        Err(AttrError::Invalid)
    );
}

#[test]
fn query_returns_grh_and_port_only() {
    let a = ah(sgid_v6(), [9; 16]);
    let back = ah_attr_from_av(Some(&av_from_ah_attr(&a).unwrap()));
    assert_eq!(back.grh, a.grh);
    assert_eq!(back.port_num, 1);
    assert_eq!(back.ah_flags, AH_GRH);
    assert_eq!(
        (back.sl, back.static_rate, back.dmac, back.sgid),
        (0, 0, [0; 6], None)
    );
    let unset = ah_attr_from_av(None);
    assert_eq!(unset.ah_flags, AH_GRH);
    assert_eq!(unset.port_num, 0);
    assert_eq!(unset.grh.dgid, [0; 16]);
}

#[test]
fn ports_and_macs() {
    // hash_32(1, 14) = (0x61c88647 >> 18).
    assert_eq!(src_port_for_qpn(1), 0xc000 + (0x61c8_8647u32 >> 18) as u16);
    assert_eq!(src_port_for_qpn(0x11) & 0xc000, 0xc000);
    // Flow label given: folded to 14 bits.
    assert_eq!(
        udp_sport(0x12345, 1, 2),
        ((0x12345 & 0x3fff) ^ (0x12345 >> 14)) as u16 | 0xc000
    );
    // No flow label: from the QPN product.
    let v = 0x11u64 * 0x22;
    let fl = ((v ^ (v >> 20) ^ ((v ^ (v >> 20)) >> 40)) & 0xfffff) as u32;
    assert_eq!(udp_sport(0, 0x11, 0x22), udp_sport(fl, 0, 0));
    let mut mgid = [0u8; 16];
    mgid[0] = 0xff;
    mgid[12..].copy_from_slice(&[1, 2, 3, 4]);
    assert_eq!(mcast_mac(&mgid), [0x33, 0x33, 1, 2, 3, 4]);
    assert!(gid_is_multicast(&mgid));
    assert!(!gid_is_multicast(&sgid_v4().gid));
}
