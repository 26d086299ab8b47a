// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Packet receive: from a UDP datagram on port 4791 (or a looped-back packet
//! of our own) to the QP or multicast group it is for.
//!
//! Every datagram is validated once here, in rdma_rxe's order: device, UDP
//! length, destination address, transport headers (`proto::packet::parse`),
//! QP lookup and the QP's type/state/address/key checks
//! (`proto::accept`), then the ICRC. What passes is counted in `rcvd_pkts`
//! and handed over as an [`RxPacket`]:
//! - unicast: `qp::QpShared::receive` of the QP (QPN 1 finds the GSI QP);
//! - QPN 0xffffff: `mcast::receive`, which finds the group and calls
//!   [`deliver_to_members`].
//!
//! Both hooks run in softirq context, or in a sender's context for loopback
//! packets: they must not sleep. A network packet may be processed inline
//! there when its QP's engine is idle; a loopback one is always queued for
//! the QP's work (a reply would otherwise recurse through the sender).

use kernel::sync::Arc;

use crate::rxe::counters::{self, Counter};
use crate::rxe::device::{Device, DeviceRef};
use crate::rxe::kapi::crc32;
use crate::rxe::kapi::netdev::NetDevice;
use crate::rxe::kapi::route;
use crate::rxe::kapi::skb::{DropReason, Skb};
use crate::rxe::kapi::trace;
use crate::rxe::proto::accept::{self, PacketFacts, Reject};
use crate::rxe::proto::conv::to_usize;
use crate::rxe::proto::gid_set::Found;
use crate::rxe::proto::headers::{Aeth, AtmAck, Deth, ExtHeader, BTH_LEN, MULTICAST_QPN};
use crate::rxe::proto::icrc::{self, Frame};
use crate::rxe::proto::ip::{self, IpAddr, NetworkType, UdpHdr, NETWORK_HDR_LEN};
use crate::rxe::proto::opcode::{Mask, Opcode};
use crate::rxe::proto::packet::{self, PacketInfo};
use crate::rxe::proto::params::DEFAULT_PKEY_FULL;
use crate::rxe::{mcast, qp};

/// A received RoCEv2 packet that passed the header and ICRC checks.
///
/// Owns the skb (dropping the packet frees it as a drop; [`RxPacket::consume`]
/// frees it as delivered) and a reference on the device, like rdma_rxe's
/// packets do: queue them on QPs freely, but flush those queues when the QP
/// goes, or the device cannot unregister.
///
/// Everything here was copied out of the packet and checked once: the
/// parsed [`PacketInfo`] (opcode, BTH, lengths), the IP addresses, the UDP
/// source port (the network header a UD receive buffer starts with is
/// built from the IP header, still in the skb, when one asks).
/// [`RxPacket::bytes`] is the transport packet (BTH to ICRC), and the
/// accessors for extension headers and payload read from it.
pub(crate) struct RxPacket {
    dev: DeviceRef,
    /// Data starts at the BTH; `info.paylen` bytes from there are the packet.
    skb: Skb,
    info: PacketInfo,
    src: IpAddr,
    dst: IpAddr,
    sport: u16,
    vlan_id: Option<u16>,
    loopback: bool,
    /// Bytes from the IP header to the end of the UDP payload.
    ip_len: u32,
}

impl RxPacket {
    /// Sent by this host to itself, not received from the network.
    pub(crate) fn is_loopback(&self) -> bool {
        self.loopback
    }

    /// The device it arrived on.
    pub(crate) fn device(&self) -> &Device {
        &self.dev
    }

    pub(crate) fn info(&self) -> &PacketInfo {
        &self.info
    }

    pub(crate) fn opcode(&self) -> Opcode {
        self.info.opcode
    }

    /// The opcode's properties plus [`Mask::GRH`] (RoCE packets always have one).
    pub(crate) fn mask(&self) -> Mask {
        self.info.mask
    }

    pub(crate) fn psn(&self) -> u32 {
        self.info.psn()
    }

    pub(crate) fn qpn(&self) -> u32 {
        self.info.qpn()
    }

    /// The transport packet: BTH, extension headers, payload, pad, ICRC.
    pub(crate) fn bytes(&self) -> &[u8] {
        self.skb.data().get(..self.info.paylen).unwrap_or(&[])
    }

    /// The payload: `info().payload_len` bytes between headers and pad.
    pub(crate) fn payload(&self) -> &[u8] {
        self.info.payload(self.bytes()).unwrap_or(&[])
    }

    /// Extension header `H`, if the opcode carries one.
    pub(crate) fn ext<H: ExtHeader>(&self) -> Option<H> {
        self.info.ext(self.bytes())
    }

    pub(crate) fn aeth(&self) -> Option<Aeth> {
        self.ext()
    }

    pub(crate) fn atmack(&self) -> Option<AtmAck> {
        self.ext()
    }

    pub(crate) fn deth(&self) -> Option<Deth> {
        self.ext()
    }

    /// The sender's IP address.
    pub(crate) fn src(&self) -> IpAddr {
        self.src
    }

    /// The sender's UDP source port (test builds answer to it).
    #[cfg(rxe_nettest)]
    pub(crate) fn udp_sport(&self) -> u16 {
        self.sport
    }

    /// The IP address it was sent to (ours, or a multicast group's).
    pub(crate) fn dst(&self) -> IpAddr {
        self.dst
    }

    /// Destination GID: the multicast group's MGID for multicast packets.
    pub(crate) fn dst_gid(&self) -> [u8; 16] {
        self.dst.to_gid()
    }

    pub(crate) fn network_type(&self) -> NetworkType {
        self.src.network_type()
    }

    /// `union rdma_network_hdr` as a UD receive puts it in front of the
    /// data: the IPv6 header, or 20 zero bytes then the IPv4 header.
    pub(crate) fn network_hdr(&self) -> [u8; NETWORK_HDR_LEN] {
        ip::network_hdr(self.skb.network_header_bytes()).unwrap_or([0; NETWORK_HDR_LEN])
    }

    /// The VLAN id, when it came in on a VLAN device (`IB_WC_WITH_VLAN`).
    pub(crate) fn vlan_id(&self) -> Option<u16> {
        self.vlan_id
    }

    /// A second handle on the same packet (shared data), for multicast
    /// fan-out. `None` when out of memory or the device is going away.
    pub(crate) fn try_clone(&self) -> Option<RxPacket> {
        Some(RxPacket {
            dev: DeviceRef::try_get(&self.dev)?,
            skb: self.skb.try_clone()?,
            info: self.info,
            src: self.src,
            dst: self.dst,
            sport: self.sport,
            vlan_id: self.vlan_id,
            loopback: self.loopback,
            ip_len: self.ip_len,
        })
    }

    /// Frees the packet as delivered (dropping it counts as a drop).
    pub(crate) fn consume(self) {
        self.skb.consume();
    }

    fn facts(&self) -> PacketFacts {
        PacketFacts {
            opcode: self.info.opcode,
            bth_qpn: self.info.qpn(),
            pkey: self.info.bth.pkey,
            qkey: self.deth().map(|d| d.qkey),
            src: self.src,
            dst: self.dst,
            port: 1,
        }
    }

    /// Counts a key violation in the port counters.
    fn count(&self, why: Reject) {
        match why {
            Reject::Pkey => {
                self.dev.state().count_bad_pkey();
                self.drop_count(Counter::RcvdBadKey);
            }
            Reject::Qkey => {
                self.dev.state().count_qkey_violation();
                self.drop_count(Counter::RcvdBadKey);
            }
            Reject::Type | Reject::State | Reject::Addr => self.drop_count(Counter::RcvdBadQpState),
        }
    }

    /// Counts the packet as dropped for `why` (the caller drops it).
    fn drop_count(&self, why: Counter) {
        counters::dropped(&self.dev, why, Some(&self.info.bth));
    }

    /// Counts the packet as dropped for `why` and frees it with the
    /// kernel's drop reason closest to `why`.
    pub(crate) fn drop_for(self, why: Counter) {
        self.drop_count(why);
        let reason = match why {
            Counter::RcvdNoQp => DropReason::NoSocket,
            Counter::RcvdNotOurs => DropReason::OtherHost,
            Counter::RcvdQueueFull => DropReason::ReceiveBuffer,
            Counter::RcvdNoMem => DropReason::NoMem,
            _ => DropReason::NotSpecified,
        };
        self.skb.drop_for(reason);
    }

    /// Counts the packet as received (`rcvd_pkts`, `rcvd_bytes`, the
    /// `pkt_recv` trace event).
    #[inline(always)]
    fn count_received(&self) {
        counters::packet(&self.dev, false, to_usize(self.ip_len));
        if trace::pkt_recv_on() {
            // At most 64 KiB: it came in one UDP datagram.
            let len = self.info.payload_len as u32;
            trace::pkt_recv(self.qpn(), self.info.bth.opcode, self.psn(), len);
        }
    }
}

/// Entry point of every UDP datagram arriving on port 4791.
#[inline]
pub(crate) fn receive_udp(mut skb: Skb) {
    let Some(ndev) = skb.netdev() else {
        return;
    };
    // A VLAN device carries the rxe device of the device under it.
    let dev = DeviceRef::by_netdev(&ndev)
        .or_else(|| route::vlan_real_dev(&ndev).and_then(|real| DeviceRef::by_netdev(&real)));
    let Some(dev) = dev else {
        return;
    };
    if skb.linearize().is_err() {
        counters::dropped(&dev, Counter::RcvdNoMem, None);
        skb.drop_for(DropReason::NoMem);
        return;
    }
    // The destination must be one of our GIDs on the device it came in on.
    let Some(pkt) = RxPacket::new(dev, skb, false) else {
        return;
    };
    if !pkt.dst.is_multicast() && !is_our_gid(&pkt.dev, pkt.dst.to_gid(), &ndev) {
        pkt.drop_for(Counter::RcvdNotOurs);
        return;
    }
    drop(ndev);
    dispatch(pkt);
}

/// Whether `gid` is a RoCEv2 GID of `dev` on `ndev`: the driver's copy of
/// the core's entries answers, or the core's table when the copy cannot.
#[inline(always)]
fn is_our_gid(dev: &Device, gid: [u8; 16], ndev: &NetDevice) -> bool {
    match dev.state().gids.lookup(&gid, ndev.as_ptr() as usize) {
        Found::Yes => true,
        Found::No => false,
        Found::Unknown => route::find_gid(dev, gid, Some(ndev)).is_some(),
    }
}

/// Delivers a packet this host sent to one of its own addresses. `skb`
/// looks as UDP would hand it over: data at the UDP header, IP header before.
pub(crate) fn receive_loopback(dev: &Device, skb: Skb) {
    // The sender holds the device; only an unregistering one refuses.
    let Some(dev) = DeviceRef::try_get(dev) else {
        return;
    };
    if let Some(pkt) = RxPacket::new(dev, skb, true) {
        dispatch(pkt);
    }
}

impl RxPacket {
    /// Parses the UDP, IP and transport headers. `None` drops the packet
    /// (counted in `rcvd_drop_bad_hdr`).
    fn new(dev: DeviceRef, skb: Skb, loopback: bool) -> Option<RxPacket> {
        let pkt = Self::parse(dev, skb, loopback);
        if let Err(dev) = &pkt {
            counters::dropped(dev, Counter::RcvdBadHdr, None);
        }
        pkt.ok()
    }

    /// [`RxPacket::new`]'s parse; gives the device back on failure.
    fn parse(dev: DeviceRef, skb: Skb, loopback: bool) -> Result<RxPacket, DeviceRef> {
        match Parsed::from_skb(skb) {
            Some(p) => Ok(RxPacket {
                dev,
                skb: p.skb,
                info: p.info,
                src: p.src,
                dst: p.dst,
                sport: p.sport,
                vlan_id: p.vlan_id,
                loopback,
                ip_len: p.ip_len,
            }),
            None => Err(dev),
        }
    }
}

/// A received datagram's headers, parsed, before it has a device.
struct Parsed {
    skb: Skb,
    info: PacketInfo,
    src: IpAddr,
    dst: IpAddr,
    sport: u16,
    vlan_id: Option<u16>,
    ip_len: u32,
}

impl Parsed {
    /// `None` drops the datagram.
    fn from_skb(mut skb: Skb) -> Option<Parsed> {
        let data = skb.data();
        let udp = UdpHdr::parse(data)?;
        let paylen = udp.payload_len()?;
        // The UDP stack trimmed the skb to the UDP length; never trust it to.
        if paylen < BTH_LEN || data.len() < ip::UDP_HLEN + paylen {
            return None;
        }
        let iph = skb.network_header_bytes();
        // `parse_ip` checks what `network_hdr` reads later.
        let ipinfo = ip::parse_ip(iph)?;
        if ipinfo.src.network_type() != ipinfo.dst.network_type() {
            return None;
        }
        let info = packet::parse(data.get(ip::UDP_HLEN..ip::UDP_HLEN + paylen)?).ok()?;
        let vlan_id = skb.rx_vlan_id();
        let ip_len = u32::try_from(ipinfo.hdr_len + ip::UDP_HLEN + paylen).ok()?;
        let sport = udp.sport;
        skb.pull(ip::UDP_HLEN as u32).ok()?;
        let info = PacketInfo {
            mask: info.mask | Mask::GRH,
            ..info
        };
        Some(Parsed {
            skb,
            info,
            src: ipinfo.src,
            dst: ipinfo.dst,
            sport,
            vlan_id,
            ip_len,
        })
    }
}

impl RxPacket {
    /// The ICRC over the IP and UDP headers (still in the skb's head) and
    /// the transport packet.
    #[inline(always)]
    fn icrc_ok(&self) -> bool {
        let nh = self.skb.network_header_bytes();
        let Some(info) = ip::parse_ip(nh) else {
            return false;
        };
        let pkt = self.bytes();
        // The UDP header sits right before the BTH, wherever IPv6
        // extension headers put it.
        let Some(udp_at) = nh
            .len()
            .checked_sub(self.skb.data().len() + ip::UDP_HLEN)
            .filter(|&at| at >= info.hdr_len)
        else {
            return false;
        };
        let Some(buf) = nh.get(..udp_at + ip::UDP_HLEN + pkt.len()) else {
            return false;
        };
        let frame = Frame {
            buf,
            v6: info.src.network_type() == NetworkType::Ipv6,
            udp_at,
        };
        crc32::with(|crc| icrc::icrc_ok_frame(crc, frame))
    }
}

/// Checks a packet against QP `qp` in rdma_rxe's order; counts key failures.
#[inline(always)]
fn qp_takes(pkt: &RxPacket, qp: &qp::QpShared, mcast: bool) -> bool {
    let Some(facts) = qp.rx_facts() else {
        return false;
    };
    let res = if mcast {
        accept::check_mcast(&pkt.facts(), &facts, DEFAULT_PKEY_FULL)
    } else {
        accept::check(&pkt.facts(), &facts, DEFAULT_PKEY_FULL)
    };
    match res {
        Ok(()) => true,
        Err(why) => {
            pkt.count(why);
            false
        }
    }
}

fn dispatch(pkt: RxPacket) {
    let qpn = pkt.qpn();
    if qpn == 0 {
        pkt.drop_for(Counter::RcvdNoQp);
        return;
    }
    if qpn == MULTICAST_QPN {
        if !pkt.icrc_ok() {
            pkt.drop_for(Counter::RcvdBadIcrc);
            return;
        }
        pkt.count_received();
        #[cfg(rxe_nettest)]
        if crate::rxe::nettest::echo(&pkt) {
            return;
        }
        mcast::receive(pkt);
        return;
    }
    let state = pkt.dev.state();
    let index = if qpn == 1 {
        match state.gsi_qp_index() {
            Some(i) => i,
            None => {
                pkt.drop_for(Counter::RcvdNoQp);
                return;
            }
        }
    } else {
        qpn
    };
    let Some(qp) = state.qps.get(index) else {
        pkt.drop_for(Counter::RcvdNoQp);
        return;
    };
    if !qp_takes(&pkt, &qp, false) {
        return;
    }
    if !pkt.icrc_ok() {
        pkt.drop_for(Counter::RcvdBadIcrc);
        return;
    }
    pkt.count_received();
    qp.receive(pkt);
}

/// Hands a multicast packet to every member QP that takes it (type, state
/// and keys checked per QP): clones for all but the last taker. The caller
/// finds the members of the group `pkt.dst_gid()` names; call it without
/// holding locks the QPs' receive hooks take.
pub(crate) fn deliver_to_members(pkt: RxPacket, members: &[Arc<qp::QpShared>]) {
    // Each taker gets a copy once the next taker is known; the last one
    // gets the packet itself.
    let mut pending: Option<&Arc<qp::QpShared>> = None;
    for qp in members {
        if !qp_takes(&pkt, qp, true) {
            continue;
        }
        if let Some(prev) = pending.replace(qp) {
            // Like rdma_rxe: a member that cannot get a copy misses this one.
            if let Some(copy) = pkt.try_clone() {
                prev.receive(copy);
            }
        }
    }
    if let Some(last) = pending {
        last.receive(pkt);
    }
}
