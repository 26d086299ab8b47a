// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Address vectors from AH attributes (`rxe_av.c`): the checks of an
//! `rdma_ah_attr`, the `rxe_av` built from it, what a query returns, and
//! the numbers derived from addresses and QPNs (UDP source ports, the
//! Ethernet address of a multicast GID).

use super::device_attr::PORT_ATTR;
use super::params::ROCE_V2_SPORT;
use super::qp_attr::AttrError;
use super::uapi::{av as av_off, sockaddr, Av, GlobalRoute, NetworkType};

/// `IB_AH_GRH` of `rdma_ah_attr.ah_flags`.
pub(crate) const AH_GRH: u8 = 1;

/// `AF_INET` and `AF_INET6` as `sa_family`.
const AF_INET: u16 = 2;
const AF_INET6: u16 = 10;

/// `enum rdma_network_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RdmaNetwork {
    Ib,
    RoceV1,
    Ipv4,
    Ipv6,
}

/// `enum ib_gid_type` values the network type derives from.
pub(crate) mod gid_type {
    pub(crate) const IB: u32 = 0;
    pub(crate) const ROCE: u32 = 1;
    #[allow(dead_code)] // The whole C value set, used or not.
    pub(crate) const ROCE_UDP_ENCAP: u32 = 2;
}

/// `ipv6_addr_v4mapped()`: `::ffff:a.b.c.d`.
pub(crate) fn gid_is_v4mapped(gid: &[u8; 16]) -> bool {
    gid[..10].iter().all(|&b| b == 0) && gid[10] == 0xff && gid[11] == 0xff
}

/// `rdma_is_multicast_addr()` for the IPv6 form of a GID (`ff00::/8`); the
/// v4-mapped multicast range counts too.
#[cfg(test)] // Only the host tests use it.
pub(crate) fn gid_is_multicast(gid: &[u8; 16]) -> bool {
    if gid_is_v4mapped(gid) {
        return gid[12] & 0xf0 == 0xe0;
    }
    gid[0] == 0xff
}

/// The source GID entry an AH attribute refers to (`ib_gid_attr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SgidAttr {
    pub(crate) gid: [u8; 16],
    pub(crate) gid_type: u32,
}

impl SgidAttr {
    /// `rdma_gid_attr_network_type()`.
    pub(crate) fn network(&self) -> RdmaNetwork {
        match self.gid_type {
            gid_type::IB => RdmaNetwork::Ib,
            gid_type::ROCE => RdmaNetwork::RoceV1,
            _ if gid_is_v4mapped(&self.gid) => RdmaNetwork::Ipv4,
            _ => RdmaNetwork::Ipv6,
        }
    }
}

/// The parts of `struct rdma_ah_attr` rxe reads or returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AhAttr {
    pub(crate) port_num: u32,
    pub(crate) ah_flags: u8,
    pub(crate) sl: u8,
    pub(crate) static_rate: u8,
    pub(crate) grh: GlobalRoute,
    /// `grh.sgid_attr`, which the core resolves before calling the driver.
    pub(crate) sgid: Option<SgidAttr>,
    pub(crate) dmac: [u8; 6],
}

impl AhAttr {
    /// An all-zero attribute (what a memset gives in C).
    pub(crate) const fn zeroed() -> AhAttr {
        AhAttr {
            port_num: 0,
            ah_flags: 0,
            sl: 0,
            static_rate: 0,
            grh: GlobalRoute {
                dgid: [0; 16],
                flow_label: 0,
                sgid_index: 0,
                hop_limit: 0,
                traffic_class: 0,
            },
            sgid: None,
            dmac: [0; 6],
        }
    }

    pub(crate) fn has_grh(&self) -> bool {
        self.ah_flags & AH_GRH != 0
    }
}

/// `chk_attr()` of rxe_av.c: a GRH must name a GID of the table whose type
/// gives an IP network.
pub(crate) fn check_ah_attr(attr: &AhAttr) -> Result<(), AttrError> {
    if !attr.has_grh() {
        return Ok(());
    }
    // The GID table length is a port constant (1024), above any u8 index;
    // kept because the C check is.
    if u32::from(attr.grh.sgid_index) > PORT_ATTR.gid_tbl_len as u32 {
        return Err(AttrError::Invalid);
    }
    match attr.sgid.map(|s| s.network()) {
        Some(RdmaNetwork::Ipv4 | RdmaNetwork::Ipv6) => Ok(()),
        _ => Err(AttrError::Invalid),
    }
}

/// `rdma_gid2ip()`: a GID as the `sockaddr_in`/`sockaddr_in6` bytes of an AV.
fn gid_to_sockaddr(gid: &[u8; 16]) -> [u8; av_off::SOCKADDR_LEN] {
    let mut sa = [0u8; av_off::SOCKADDR_LEN];
    if gid_is_v4mapped(gid) {
        sa[sockaddr::FAMILY..sockaddr::FAMILY + 2].copy_from_slice(&AF_INET.to_ne_bytes());
        sa[sockaddr::IN_ADDR..sockaddr::IN_ADDR + 4].copy_from_slice(&gid[12..]);
    } else {
        sa[sockaddr::FAMILY..sockaddr::FAMILY + 2].copy_from_slice(&AF_INET6.to_ne_bytes());
        sa[sockaddr::IN6_ADDR..sockaddr::IN6_ADDR + 16].copy_from_slice(gid);
    }
    sa
}

/// `rxe_init_av()`: the address vector of a checked AH attribute. The
/// source GID must be known and of an IP network, as [`check_ah_attr`]
/// makes sure for attributes with a GRH; RoCE attributes always have one.
pub(crate) fn av_from_ah_attr(attr: &AhAttr) -> Result<Av, AttrError> {
    let sgid = attr.sgid.ok_or(AttrError::Invalid)?;
    let network_type = match sgid.network() {
        RdmaNetwork::Ipv4 => NetworkType::Ipv4,
        RdmaNetwork::Ipv6 => NetworkType::Ipv6,
        _ => return Err(AttrError::Invalid),
    };
    Ok(Av {
        // `rxe_av.port_num` is a u8; the port was checked to be 1 by the core.
        port_num: attr.port_num as u8,
        network_type,
        dmac: attr.dmac,
        grh: attr.grh,
        sgid_addr: gid_to_sockaddr(&sgid.gid),
        dgid_addr: gid_to_sockaddr(&attr.grh.dgid),
    })
}

/// `rxe_av_to_attr()` on a zeroed attribute: what query_qp and query_ah
/// return. Only the GRH and port come back; SL, rate and DMAC read as zero,
/// as in C. A QP path never set reads as an all-zero GRH on port 0.
pub(crate) fn ah_attr_from_av(av: Option<&Av>) -> AhAttr {
    let mut attr = AhAttr::zeroed();
    attr.ah_flags = AH_GRH;
    if let Some(av) = av {
        attr.grh = av.grh;
        attr.port_num = u32::from(av.port_num);
    }
    attr
}

/// `hash_32(val, bits)` of linux/hash.h.
const fn hash_32(val: u32, bits: u32) -> u32 {
    val.wrapping_mul(0x61c8_8647) >> (32 - bits)
}

/// The UDP source port a new QP sends from: spread over the dynamic range
/// by QPN so that different QPs land on different receive queues.
pub(crate) const fn src_port_for_qpn(qpn: u32) -> u16 {
    // 14 bits of hash above 0xc000: always a u16.
    (ROCE_V2_SPORT as u32 + (hash_32(qpn, 14) & 0x3fff)) as u16
}

/// `rdma_get_udp_sport()`: the source port once a path is known, from its
/// flow label or, lacking one, from both QPNs.
pub(crate) const fn udp_sport(flow_label: u32, lqpn: u32, rqpn: u32) -> u16 {
    let fl = if flow_label == 0 {
        let mut v = lqpn as u64 * rqpn as u64;
        v ^= v >> 20;
        v ^= v >> 40;
        (v & 0xfffff) as u32
    } else {
        flow_label
    };
    let low = (fl & 0x3fff) ^ ((fl & 0xfc000) >> 14);
    // At most 14 bits ORed into 0xc000.
    (low | 0xc000) as u16
}

/// The Ethernet address of a multicast GID, mapped the IPv6 way
/// (`33:33` and the last four bytes) for every GID, as `rxe_mcast_add()` does.
pub(crate) fn mcast_mac(mgid: &[u8; 16]) -> [u8; 6] {
    [0x33, 0x33, mgid[12], mgid[13], mgid[14], mgid[15]]
}

#[cfg(test)]
#[path = "av_tests.rs"]
pub(crate) mod tests;
