// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The IP and UDP framing around RoCEv2 transport packets: addresses as GIDs
//! name them, the UDP source port a QP uses, and the IPv4/IPv6/UDP headers.
//!
//! Header writers produce exactly what rdma_rxe puts on the wire (IPv4 with
//! DF and no options, IPv6 with flow label 0, UDP with checksum 0); the IPv4
//! checksum is left zero for the kernel to fill on output, and the IPv4
//! identification comes from [`Ipv4Ids`], a block of the kernel's own.

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

#[cfg(test)]
use super::params::ROCE_V2_SPORT;

pub(crate) const IPV4_HLEN: usize = 20;
pub(crate) const IPV6_HLEN: usize = 40;
pub(crate) const UDP_HLEN: usize = 8;
pub(crate) const IPPROTO_UDP: u8 = 17;
/// Size of `union rdma_network_hdr`, the "GRH" slot UD receive buffers start with.
pub(crate) const NETWORK_HDR_LEN: usize = 40;

pub(crate) use super::uapi::NetworkType;

/// An IP address in network byte order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IpAddr {
    V4([u8; 4]),
    V6([u8; 16]),
}

const V4_MAPPED_PREFIX: [u8; 12] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];

impl IpAddr {
    /// The address a RoCE v2 GID stands for: an IPv4-mapped GID
    /// (`::ffff:a.b.c.d`) is IPv4, anything else IPv6 (`rdma_gid2ip`).
    pub(crate) fn from_gid(gid: [u8; 16]) -> IpAddr {
        match gid.split_first_chunk::<12>() {
            Some((prefix, rest)) if *prefix == V4_MAPPED_PREFIX => {
                // `rest` is the last 4 of 16 bytes.
                let mut v4 = [0u8; 4];
                v4.copy_from_slice(rest);
                IpAddr::V4(v4)
            }
            _ => IpAddr::V6(gid),
        }
    }

    /// The GID naming this address; IPv4 becomes IPv4-mapped.
    pub(crate) fn to_gid(self) -> [u8; 16] {
        match self {
            IpAddr::V4(a) => {
                let mut gid = [0u8; 16];
                let (prefix, rest) = gid.split_at_mut(12);
                prefix.copy_from_slice(&V4_MAPPED_PREFIX);
                rest.copy_from_slice(&a);
                gid
            }
            IpAddr::V6(a) => a,
        }
    }

    pub(crate) fn network_type(self) -> NetworkType {
        match self {
            IpAddr::V4(_) => NetworkType::Ipv4,
            IpAddr::V6(_) => NetworkType::Ipv6,
        }
    }

    /// Multicast as `rdma_is_multicast_addr` decides it: 224.0.0.0/4 or ff00::/8.
    pub(crate) fn is_multicast(self) -> bool {
        match self {
            IpAddr::V4([a, ..]) => a & 0xf0 == 0xe0,
            IpAddr::V6([a, ..]) => a == 0xff,
        }
    }
}

/// The kernel's `hash_32()` (generic version, which x86 uses).
#[cfg(test)] // Only the host tests use it.
fn hash_32(val: u32, bits: u32) -> u32 {
    const GOLDEN_RATIO_32: u32 = 0x61c8_8647;
    val.wrapping_mul(GOLDEN_RATIO_32) >> (32 - bits)
}

/// UDP source port a new QP starts with: 0xc000 plus 14 bits of hashed QPN.
#[cfg(test)] // Only the host tests use it.
pub(crate) fn qp_udp_sport(qpn: u32) -> u16 {
    // 14 bits of hash fit beside the 0xc000 base.
    ROCE_V2_SPORT | (hash_32(qpn, 14) & 0x3fff) as u16
}

/// `rdma_flow_label_to_udp_sport`: fold a 20-bit flow label into 14 bits.
#[cfg(test)] // Only the host tests use it.
pub(crate) fn flow_label_to_udp_sport(fl: u32) -> u16 {
    let low = fl & 0x03fff;
    let high = fl & 0xfc000;
    // The fold keeps 14 bits, which fit beside the 0xc000 base.
    ROCE_V2_SPORT | ((low ^ (high >> 14)) & 0x3fff) as u16
}

/// `rdma_calc_flow_label`: a flow label both ends of a connection compute alike.
#[cfg(test)] // Only the host tests use it.
pub(crate) fn calc_flow_label(lqpn: u32, rqpn: u32) -> u32 {
    let mut v = u64::from(lqpn) * u64::from(rqpn);
    v ^= v >> 20;
    v ^= v >> 40;
    // Masked to the 20 flow label bits.
    (v & 0xfffff) as u32
}

/// `rdma_get_udp_sport`: the source port of a QP whose path was set with
/// flow label `fl` (0: derive one from the QPNs).
#[cfg(test)] // Only the host tests use it.
pub(crate) fn udp_sport(fl: u32, lqpn: u32, rqpn: u32) -> u16 {
    let fl = if fl == 0 {
        calc_flow_label(lqpn, rqpn)
    } else {
        fl
    };
    flow_label_to_udp_sport(fl)
}

/// A buffer too short for the header being written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TooShort;

/// Fields of the IPv4 header rxe sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ipv4Out {
    pub(crate) src: [u8; 4],
    pub(crate) dst: [u8; 4],
    pub(crate) tos: u8,
    pub(crate) ttl: u8,
    /// Header plus everything after it.
    pub(crate) total_len: u16,
    /// The identification.
    pub(crate) id: u16,
}

/// Writes a 20-byte IPv4 header with DF set; the checksum stays zero for
/// the stack to fill.
pub(crate) fn write_ipv4(buf: &mut [u8], h: &Ipv4Out) -> Result<(), TooShort> {
    let b = buf.first_chunk_mut::<IPV4_HLEN>().ok_or(TooShort)?;
    let [tl0, tl1] = h.total_len.to_be_bytes();
    let [id0, id1] = h.id.to_be_bytes();
    *b = [
        0x45,
        h.tos,
        tl0,
        tl1,
        id0,
        id1,
        0x40,
        0,
        h.ttl,
        IPPROTO_UDP,
        0,
        0,
        h.src[0],
        h.src[1],
        h.src[2],
        h.src[3],
        h.dst[0],
        h.dst[1],
        h.dst[2],
        h.dst[3],
    ];
    Ok(())
}

/// How many IPv4 identifications [`Ipv4Ids`] takes from the kernel at once.
pub(crate) const IPV4_ID_BLOCK: u16 = 32;

/// The IPv4 identifications of one sender (a QP's requester or responder),
/// handed out from a block the kernel's generator reserved for the pair of
/// addresses (`__ip_select_ident` with a count, as UDP segmentation takes
/// ids for its segments): consecutive within a block, disjoint from every
/// other sender's to the same peer, one hash of the addresses per block
/// instead of per packet. The datagrams carry DF, so an id only has to be
/// unlikely to repeat; a race between two callers may give both the same
/// id, and nothing worse.
pub(crate) struct Ipv4Ids {
    /// `src << 32 | dst` of the block (addresses in network order); 0 for
    /// none.
    peer: AtomicU64,
    /// The next id in the low 16 bits, how many of the block are left in
    /// the high 16.
    block: AtomicU32,
}

impl Ipv4Ids {
    pub(crate) const fn new() -> Self {
        Self {
            peer: AtomicU64::new(0),
            block: AtomicU32::new(0),
        }
    }

    fn peer(src: [u8; 4], dst: [u8; 4]) -> u64 {
        (u64::from(u32::from_be_bytes(src)) << 32) | u64::from(u32::from_be_bytes(dst))
    }

    /// The next id of the block for `src` to `dst`, or `None` when a new
    /// block must be reserved (the block is used up, or was for another
    /// peer): then [`Ipv4Ids::refill`] with the block's first id.
    #[inline]
    pub(crate) fn take(&self, src: [u8; 4], dst: [u8; 4]) -> Option<u16> {
        if self.peer.load(Ordering::Relaxed) != Self::peer(src, dst) {
            return None;
        }
        let b = self.block.load(Ordering::Relaxed);
        let left = b >> 16;
        if left == 0 {
            return None;
        }
        let id = b as u16;
        self.block.store(
            ((left - 1) << 16) | u32::from(id.wrapping_add(1)),
            Ordering::Relaxed,
        );
        Some(id)
    }

    /// Records a block of [`IPV4_ID_BLOCK`] ids for `src` to `dst` whose
    /// first, `first`, the caller used itself.
    pub(crate) fn refill(&self, src: [u8; 4], dst: [u8; 4], first: u16) {
        // The block goes first: a reader that sees the new peer with the
        // old block's count takes an id of the old block, a harmless repeat.
        self.block.store(
            (u32::from(IPV4_ID_BLOCK - 1) << 16) | u32::from(first.wrapping_add(1)),
            Ordering::Relaxed,
        );
        self.peer.store(Self::peer(src, dst), Ordering::Relaxed);
    }
}

/// Fields of the IPv6 header rxe sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ipv6Out {
    pub(crate) src: [u8; 16],
    pub(crate) dst: [u8; 16],
    pub(crate) traffic_class: u8,
    pub(crate) hop_limit: u8,
    /// Everything after the 40-byte header.
    pub(crate) payload_len: u16,
}

/// Writes a 40-byte IPv6 header. The flow label is 0, as rdma_rxe sends it
/// (the ICRC masks it, so peers accept any).
pub(crate) fn write_ipv6(buf: &mut [u8], h: &Ipv6Out) -> Result<(), TooShort> {
    let b = buf.first_chunk_mut::<IPV6_HLEN>().ok_or(TooShort)?;
    let tc = h.traffic_class;
    let [pl0, pl1] = h.payload_len.to_be_bytes();
    b[0] = 0x60 | (tc >> 4);
    b[1] = tc << 4;
    b[2] = 0;
    b[3] = 0;
    b[4] = pl0;
    b[5] = pl1;
    b[6] = IPPROTO_UDP;
    b[7] = h.hop_limit;
    b[8..24].copy_from_slice(&h.src);
    b[24..40].copy_from_slice(&h.dst);
    Ok(())
}

/// Writes a UDP header with checksum 0 (none), as rdma_rxe does: the ICRC
/// protects the payload.
pub(crate) fn write_udp(buf: &mut [u8], sport: u16, dport: u16, len: u16) -> Result<(), TooShort> {
    let b = buf.first_chunk_mut::<UDP_HLEN>().ok_or(TooShort)?;
    let [s0, s1] = sport.to_be_bytes();
    let [d0, d1] = dport.to_be_bytes();
    let [l0, l1] = len.to_be_bytes();
    *b = [s0, s1, d0, d1, l0, l1, 0, 0];
    Ok(())
}

/// A UDP header as received.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct UdpHdr {
    pub(crate) sport: u16,
    pub(crate) dport: u16,
    /// Header plus payload, as the sender claims.
    pub(crate) len: u16,
}

impl UdpHdr {
    pub(crate) fn parse(buf: &[u8]) -> Option<UdpHdr> {
        let b = buf.first_chunk::<UDP_HLEN>()?;
        Some(UdpHdr {
            sport: u16::from_be_bytes([b[0], b[1]]),
            dport: u16::from_be_bytes([b[2], b[3]]),
            len: u16::from_be_bytes([b[4], b[5]]),
        })
    }

    /// Length of the payload the header announces, if it is at least a header.
    pub(crate) fn payload_len(&self) -> Option<usize> {
        usize::from(self.len).checked_sub(UDP_HLEN)
    }
}

/// The addresses of a received IP header, and how long the header is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct IpHdrInfo {
    pub(crate) src: IpAddr,
    pub(crate) dst: IpAddr,
    /// IHL * 4 for IPv4, 40 for IPv6 (extension headers not included).
    pub(crate) hdr_len: usize,
}

/// Reads the addresses of an IPv4 or IPv6 header (by its version nibble).
pub(crate) fn parse_ip(buf: &[u8]) -> Option<IpHdrInfo> {
    let first = *buf.first()?;
    match first >> 4 {
        4 => {
            let hdr_len = usize::from(first & 0x0f) * 4;
            if hdr_len < IPV4_HLEN || buf.len() < hdr_len {
                return None;
            }
            Some(IpHdrInfo {
                src: IpAddr::V4(*buf.get(12..)?.first_chunk::<4>()?),
                dst: IpAddr::V4(*buf.get(16..)?.first_chunk::<4>()?),
                hdr_len,
            })
        }
        6 => Some(IpHdrInfo {
            src: IpAddr::V6(*buf.get(8..)?.first_chunk::<16>()?),
            dst: IpAddr::V6(*buf.get(24..)?.first_chunk::<16>()?),
            hdr_len: IPV6_HLEN,
        }),
        _ => None,
    }
}

/// The 40-byte `union rdma_network_hdr` a UD receive hands to the consumer:
/// the IPv6 header as is, or 20 zero bytes then the IPv4 header.
pub(crate) fn network_hdr(ip: &[u8]) -> Option<[u8; NETWORK_HDR_LEN]> {
    let mut out = [0u8; NETWORK_HDR_LEN];
    match ip.first()? >> 4 {
        4 => out[20..].copy_from_slice(ip.first_chunk::<IPV4_HLEN>()?),
        6 => out.copy_from_slice(ip.first_chunk::<IPV6_HLEN>()?),
        _ => return None,
    }
    Some(out)
}

#[cfg(test)]
#[path = "ip_tests.rs"]
mod tests;
