// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Packet transmit: building RoCEv2 packets, routing them, and sending them
//! to the IP layer or, for our own addresses, straight to our receive path.
//!
//! # How the requester, responder and completer send a packet
//!
//! The responder's `send_reply` (`rxe/responder/io.rs`) is the whole
//! sequence in compiled code: [`alloc_packet_with`] for the opcode and
//! payload length (payload pages or none), [`TxPacket::write_bth`] (pad and
//! opcode are set from the packet), [`TxPacket::write_ext`] for each of the
//! opcode's extension headers, the payload written through
//! [`TxPacket::payload_mut`] unless it travels in page fragments, then
//! [`TxBatch::send`], which adds the headers and the ICRC; the step's end
//! flushes the batch ([`TxBatch::flush`]) to the device.
//!
//! A sender's step gathers its packets in a [`TxBatch`] (made with
//! `TxBatch::new(&qp_flow)`), which hands them to the IP layer together at
//! [`TxBatch::flush`] or when dropped; the device is then notified once.
//!
//! An RC packet whose payload comes from registered memory may carry it
//! without a copy, from a size chosen at load ([`select_zcopy`]):
//! [`alloc_packet_with`] takes the payload as referenced
//! page pieces ([`PayloadPages`], from `mr::MrShared::ref_pages`), which become
//! the skb's fragments; pad and ICRC then go in a small trailer fragment,
//! and the ICRC is computed over the mapped fragments. The receiving side
//! copies once in any case. Packets to one of our own MAC addresses are
//! built linear: loopback delivery would have to linearize them.
//!
//! Each sending QP owns a [`TxFlow`]: the socket its skbs belong to while in
//! flight, and the count of them (as `rdma_rxe`, the requester pauses
//! above `pacing::INFLIGHT_SKBS_PER_QP_HIGH`, a check of `proto::requester`, and
//! the flow wakes it below [`INFLIGHT_LOW`]; see [`TxFlow::pause`]).
//!
//! # The address vector
//!
//! [`Av`] is a plain copy of everything a packet's IP and UDP headers need.
//! From an `rdma_ah_attr` with a GRH, the QP/AH code fills it as rdma_rxe's
//! `rxe_init_av` does:
//! - `src`: `IpAddr::from_gid(sgid_attr->gid)`, `dst`: `IpAddr::from_gid(grh.dgid)`
//!   (both IPv4 for an IPv4-mapped source GID, else IPv6);
//! - `sgid_index`: `grh.sgid_index` (picks the netdev, a VLAN one for VLAN GIDs);
//! - `dmac`: `roce.dmac`; `traffic_class`, `hop_limit`, `flow_label`: from the GRH;
//! - `sport`: the QP's UDP source port ([`crate::rxe::proto::ip::qp_udp_sport`]
//!   at create, [`crate::rxe::proto::ip::udp_sport`] once a path is set).

use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};

use kernel::{prelude::*, sync::Arc};

use crate::rxe::counters::{self, Counter};
use crate::rxe::device::Device;
use crate::rxe::kapi::crc32;
use crate::rxe::kapi::errno;
use crate::rxe::kapi::netdev::NetDevice;
use crate::rxe::kapi::page::PayloadPages;
use crate::rxe::kapi::route::{self, Dst, RouteCache, RouteScope};
use crate::rxe::kapi::skb::{TxSkb, Xmit, GSO_BATCH_MAX, PROTO_IPV4, PROTO_IPV6};
use crate::rxe::kapi::trace;
use crate::rxe::kapi::udp::{SkbOwner, TxSocket};
use crate::rxe::proto::headers::{self, Bth, ExtHeader, ICRC_LEN};
use crate::rxe::proto::icrc::{self, Frame};
use crate::rxe::proto::ip::{self, IpAddr, Ipv4Ids, NetworkType};
use crate::rxe::proto::opcode::Opcode;
use crate::rxe::proto::packet::{packet_len, pad_for};
use crate::rxe::proto::params::{pacing, ROCE_V2_UDP_DPORT};
use crate::rxe::proto::{qp, tx_frags};
use crate::rxe::recv;
use crate::rxe::sys;

/// A requester paused on its skbs in flight (above
/// `pacing::INFLIGHT_SKBS_PER_QP_HIGH`) resumes when fewer than this remain.
pub(crate) const INFLIGHT_LOW: u32 = pacing::INFLIGHT_SKBS_PER_QP_LOW;

/// A RoCE v2 address vector: where a packet goes and how its IP header looks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Av {
    /// Our address (from the source GID); the same family as `dst`.
    pub(crate) src: IpAddr,
    pub(crate) dst: IpAddr,
    /// GID table index of the source GID; its netdev sends the packet.
    pub(crate) sgid_index: u8,
    /// Destination MAC; our own means the packet is looped back.
    pub(crate) dmac: [u8; 6],
    /// IPv4 TOS or IPv6 traffic class.
    pub(crate) traffic_class: u8,
    /// IPv4 TTL or IPv6 hop limit.
    pub(crate) hop_limit: u8,
    /// Kept for queries; not on the wire (rdma_rxe sends flow label 0).
    pub(crate) flow_label: u32,
    /// UDP source port: the sending QP's.
    pub(crate) sport: u16,
}

impl Av {
    pub(crate) fn network_type(&self) -> NetworkType {
        self.src.network_type()
    }

    fn ip_hdr_len(&self) -> usize {
        match self.network_type() {
            NetworkType::Ipv4 => ip::IPV4_HLEN,
            NetworkType::Ipv6 => ip::IPV6_HLEN,
        }
    }
}

/// A packet being built: its transport headers, payload, pad and ICRC slot,
/// zeroed, with room in front for the UDP, IP and link headers.
pub(crate) struct TxPacket<'a> {
    dev: &'a Device,
    skb: TxSkb,
    /// Keeps `skb->dev` alive until the IP layer holds the route's device.
    ndev: NetDevice,
    av: Av,
    opcode: Opcode,
    payload_len: usize,
    /// The payload is in this many page fragments, followed by the trailer
    /// fragment with pad and ICRC; 0: all of the packet is linear.
    payload_frags: usize,
}

/// Allocates a packet for `opcode` carrying `payload_len` bytes, to be sent
/// along `av` from `dev`. Atomic: may be called under spinlocks.
///
/// Fails with `EINVAL` when the source GID has no netdev (any more) or the
/// packet would not fit a UDP datagram, `ENOMEM` when out of memory.
/// With `pages` (exactly `payload_len` bytes), those pieces become the
/// skb's fragments. Without them, or when they cannot be used (a packet to
/// our own MAC address), the payload is linear and the caller copies it in
/// ([`TxPacket::payload_in_frags`] tells).
pub(crate) fn alloc_packet_with<'a>(
    dev: &'a Device,
    ndevs: &mut NdevCache,
    av: &Av,
    opcode: Opcode,
    payload_len: usize,
    pages: Option<&mut PayloadPages>,
) -> Result<TxPacket<'a>> {
    alloc_packet(dev, ndevs, av, opcode, payload_len, pages, false)
}

/// Why [`alloc_packet_filled`] gave no packet.
pub(crate) enum FillError<E> {
    /// The packet could not be allocated (where [`alloc_packet_with`]
    /// fails).
    Alloc,
    /// The fill failed with this.
    Fill(E),
}

/// As [`alloc_packet_with`], and a linear payload is filled by `fill`,
/// not zeroed first unless it is short ([`HOLE_MIN`]): `fill` gets the
/// `payload_len` bytes and must write every one of them when it returns
/// `Ok` (they may hold whatever the allocator left there). When it fails
/// the packet is freed unsent. Not called when the payload went into
/// fragments.
pub(crate) fn alloc_packet_filled<'a, E>(
    dev: &'a Device,
    ndevs: &mut NdevCache,
    av: &Av,
    opcode: Opcode,
    payload_len: usize,
    pages: Option<&mut PayloadPages>,
    fill: impl FnOnce(&mut [u8]) -> core::result::Result<(), E>,
) -> core::result::Result<TxPacket<'a>, FillError<E>> {
    let mut tx = alloc_packet(dev, ndevs, av, opcode, payload_len, pages, true)
        .map_err(|_| FillError::Alloc)?;
    if !tx.payload_in_frags() {
        fill(tx.payload_mut()).map_err(FillError::Fill)?;
    }
    Ok(tx)
}

/// The smallest RC payload sent as page fragments: set once at load by
/// [`select_zcopy`].
static FRAG_MIN: AtomicUsize = AtomicUsize::new(usize::MAX);

/// Chooses at module load from which payload size on RC payloads from
/// registered memory leave as page fragments instead of a copy: from
/// [`tx_frags::MIN_FRAG_PAYLOAD`] under QEMU's TCG, where a copy costs more
/// host time than the page references, the trailer fragment and the longer
/// scatter list; from [`tx_frags::HW_FRAG_PAYLOAD`] on a real CPU, where
/// instructions are what costs (`make insns`: at 1 KiB payloads the copy
/// runs 8-10% fewer instructions per packet sent, at 4 KiB fragments
/// 11-20% fewer).
pub(crate) fn select_zcopy() {
    // SAFETY: FFI call without arguments, usable in any context.
    let min = if unsafe { sys::rxe_rs_cpu_is_tcg() } {
        tx_frags::MIN_FRAG_PAYLOAD
    } else {
        tx_frags::HW_FRAG_PAYLOAD
    };
    FRAG_MIN.store(min, Ordering::Relaxed);
    pr_info!(
        "RC payloads from {} bytes: page fragments of the registered memory\n",
        min
    );
}

/// Whether a payload of `len` bytes of registered memory on a QP of
/// `qp_type` goes as page fragments ([`select_zcopy`]).
#[inline]
pub(crate) fn wants_frags(qp_type: qp::Type, len: usize) -> bool {
    tx_frags::wants_frags(qp_type, len, FRAG_MIN.load(Ordering::Relaxed))
}

/// The netdev of the GID table entry a sender's packets leave from, looked
/// up once per step of the sender instead of once per packet (the GID
/// table's lock and two references each time). It holds a reference on the
/// netdev: keep it no longer than a step (a netdev being unregistered waits
/// for it).
pub(crate) struct NdevCache(Option<(u8, NetDevice)>);

impl NdevCache {
    pub(crate) const fn new() -> Self {
        Self(None)
    }

    /// The netdev of entry `index` of `dev`'s port 1; a miss is not kept.
    fn get(&mut self, dev: &Device, index: u8) -> Option<&NetDevice> {
        if !matches!(&self.0, Some((i, _)) if *i == index) {
            self.0 = route::gid_netdev(dev, u32::from(index)).map(|n| (index, n));
        }
        self.0.as_ref().map(|(_, n)| n)
    }
}

/// The shortest linear payload [`alloc_packet_filled`] leaves unzeroed.
const HOLE_MIN: usize = 64;

/// [`alloc_packet_with`]; `hole`: a linear payload is left for the caller
/// to write, not zeroed.
#[inline]
fn alloc_packet<'a>(
    dev: &'a Device,
    ndevs: &mut NdevCache,
    av: &Av,
    opcode: Opcode,
    payload_len: usize,
    pages: Option<&mut PayloadPages>,
    hole: bool,
) -> Result<TxPacket<'a>> {
    if av.src.network_type() != av.dst.network_type() {
        return Err(EINVAL);
    }
    let ndev = ndevs.get(dev, av.sgid_index).ok_or(EINVAL)?.clone();
    let paylen = packet_len(opcode, payload_len).ok_or(EINVAL)?;
    // The UDP length field and the IPv4/IPv6 length fields are 16 bits wide.
    if paylen + ip::UDP_HLEN + ip::IPV6_HLEN > usize::from(u16::MAX) {
        return Err(errno::emsgsize());
    }
    // The link layer's reserve, then the IP and UDP headers: enough for
    // every layer below to push its header in place (UDP and IP headers:
    // at most 48 bytes).
    let headroom = ndev
        .ll_reserved_space()
        .saturating_add((ip::UDP_HLEN + av.ip_hdr_len()) as u32);
    let pages =
        pages.filter(|p| p.total() == payload_len && payload_len > 0 && av.dmac != ndev.mac());
    let linear = if pages.is_some() {
        opcode.header_len()
    } else {
        paylen
    };
    let proto = match av.network_type() {
        NetworkType::Ipv4 => PROTO_IPV4,
        NetworkType::Ipv6 => PROTO_IPV6,
    };
    // A payload in fragments is not in the linear part; a short one is
    // zeroed with the rest (one memset costs less than two around it).
    let hole = if hole && pages.is_none() && payload_len >= HOLE_MIN {
        (opcode.header_len() as u32, payload_len as u32)
    } else {
        (0, 0)
    };
    // Fits in u32: bounded by 64 KiB above.
    let mut skb = TxSkb::alloc(&ndev, headroom, linear as u32, proto, hole)?;
    let mut payload_frags = 0;
    if let Some(pages) = pages {
        payload_frags = pages.count();
        skb.attach_pages(pages)?;
        // Pad and ICRC: at most 7 bytes.
        skb.add_trailer((paylen - linear - payload_len) as u32)?;
    }
    Ok(TxPacket {
        dev,
        skb,
        ndev,
        av: *av,
        opcode,
        payload_len,
        payload_frags,
    })
}

impl TxPacket<'_> {
    /// BTH through ICRC: the UDP payload length.
    pub(crate) fn len(&self) -> usize {
        self.skb.len()
    }

    /// The payload is in fragments already: nothing to copy.
    pub(crate) fn payload_in_frags(&self) -> bool {
        self.payload_frags > 0
    }

    /// The `payload_len` payload bytes after the headers (empty when they
    /// are in fragments).
    pub(crate) fn payload_mut(&mut self) -> &mut [u8] {
        if self.payload_in_frags() {
            return &mut [];
        }
        let start = self.opcode.header_len();
        let end = start + self.payload_len;
        self.skb.data_mut().get_mut(start..end).unwrap_or(&mut [])
    }

    /// Writes the BTH, with the packet's opcode and pad count whatever `bth` says.
    pub(crate) fn write_bth(&mut self, mut bth: Bth) -> Result {
        bth.opcode = self.opcode.bits();
        bth.pad = pad_for(self.payload_len);
        bth.write(self.skb.data_mut()).map_err(|_| EINVAL)
    }

    /// Sets or clears AckReq in the BTH written before (the ICRC is only
    /// computed by [`send`]).
    pub(crate) fn set_ack_req(&mut self, on: bool) -> Result {
        headers::set_ack_req(self.skb.data_mut(), on).map_err(|_| EINVAL)
    }

    /// The `pkt_send` trace event, from the BTH written before.
    #[cold]
    fn trace_send(&mut self) {
        // Read only (`TxSkb` gives the packet's bytes as one slice).
        if let Some(bth) = Bth::parse(self.skb.data_mut()) {
            // At most 64 KiB (`alloc_packet`).
            trace::pkt_send(bth.qpn, bth.opcode, bth.psn, self.payload_len as u32);
        }
    }

    /// Writes extension header `H` where the opcode puts it; `EINVAL` if the
    /// opcode carries none.
    pub(crate) fn write_ext<H: ExtHeader>(&mut self, hdr: &H) -> Result {
        headers::write_ext(self.opcode, self.skb.data_mut(), hdr).map_err(|_| EINVAL)
    }
}

/// Wakes a sender paused by [`TxFlow::pause`].
pub(crate) trait TxWake: Send + Sync + 'static {
    /// Runs in the context that frees an skb (up to softirq): schedule, do
    /// not send from here.
    fn wake(&self);
}

/// For senders that never pause.
impl TxWake for () {
    fn wake(&self) {}
}

// The socket's `sk_user_data` points here, and the socket layer keeps flags
// in that pointer's low three bits: the address must be 8-aligned even when
// `W` is smaller (the data of an `Arc` starts after a 4-byte refcount).
#[repr(align(8))]
struct Inflight<W: TxWake> {
    count: AtomicU32,
    /// The sender paused and wants `wake`.
    waiting: AtomicBool,
    wake: W,
}

impl<W: TxWake> SkbOwner for Inflight<W> {
    fn skb_released(&self) {
        let left = self.count.fetch_sub(1, Ordering::SeqCst).saturating_sub(1);
        if left < INFLIGHT_LOW && self.waiting.swap(false, Ordering::SeqCst) {
            self.wake.wake();
        }
    }
}

/// The transmit side of one QP: the socket owning its skbs in flight, and
/// their count.
///
/// It may be dropped in any context up to softirq (the socket goes to a
/// work item); skbs still in flight keep what they need, and the last of
/// them drops `W`, maybe in softirq.
pub(crate) struct TxFlow<W: TxWake> {
    inflight: Arc<Inflight<W>>,
    routes: RouteCache,
    ipv4_ids: Ipv4Ids,
    /// Always there, except in test builds' socket-less flows.
    sock: Option<TxSocket<Inflight<W>>>,
}

impl<W: TxWake> TxFlow<W> {
    /// Process context (creates a kernel socket).
    pub(crate) fn new(wake: W) -> Result<Self> {
        let inflight = Arc::new(
            Inflight {
                count: AtomicU32::new(0),
                waiting: AtomicBool::new(false),
                wake,
            },
            GFP_KERNEL,
        )?;
        let sock = Some(TxSocket::new(&inflight)?);
        Ok(Self {
            inflight,
            routes: RouteCache::new(GFP_KERNEL)?,
            ipv4_ids: Ipv4Ids::new(),
            sock,
        })
    }

    /// A flow whose skbs have no owner (nothing counted), usable without a
    /// process context to create it in. Test builds only.
    #[cfg(rxe_nettest)]
    pub(crate) fn unowned(wake: W) -> Result<Self> {
        let inflight = Arc::new(
            Inflight {
                count: AtomicU32::new(0),
                waiting: AtomicBool::new(false),
                wake,
            },
            GFP_ATOMIC,
        )?;
        Ok(Self {
            inflight,
            routes: RouteCache::new(GFP_ATOMIC)?,
            ipv4_ids: Ipv4Ids::new(),
            sock: None,
        })
    }

    /// Drops the cached route if `scope` covers it (see `RouteCache`);
    /// the next packet looks its route up again.
    pub(crate) fn forget_route(&self, scope: RouteScope) {
        self.routes.forget(scope);
    }

    /// Drops the cached route and caches none from now on (each packet
    /// looks its route up).
    pub(crate) fn close_routes(&self) {
        self.routes.close();
    }

    /// Skbs sent and not yet freed.
    pub(crate) fn inflight(&self) -> u32 {
        self.inflight.count.load(Ordering::Acquire)
    }

    /// The waker given to [`TxFlow::new`].
    pub(crate) fn waker(&self) -> &W {
        &self.inflight.wake
    }

    /// The sender stops above [`INFLIGHT_HIGH`]: `true` when a call of the
    /// waker is now promised (the count was still at or above
    /// [`INFLIGHT_LOW`] after the request was registered); `false` when
    /// the skbs drained meanwhile and the sender should look again itself.
    pub(crate) fn pause(&self) -> bool {
        // Pairs with `skb_released`: either that side sees `waiting`, or
        // this side sees the count it left.
        self.inflight.waiting.store(true, Ordering::SeqCst);
        self.inflight.count.load(Ordering::SeqCst) >= INFLIGHT_LOW
    }
}

/// Prepends the UDP and IP headers, routes the packet and fills its ICRC.
#[inline]
fn prepare(tx: &mut TxPacket<'_>, dst: &Dst, ids: &Ipv4Ids) -> Result {
    let av = tx.av;
    // All lengths are bounded by `alloc_packet`'s 64 KiB check; the
    // header lengths are at most 40 bytes.
    let udp_len = (tx.len() + ip::UDP_HLEN) as u16;
    let ip_len = av.ip_hdr_len();
    let hdrs = tx.skb.push_ip_udp(ip_len as u32, dst)?;
    let (iph, udp) = hdrs.split_at_mut(ip_len);
    ip::write_udp(udp, av.sport, ROCE_V2_UDP_DPORT, udp_len).map_err(|_| EINVAL)?;
    // The id is covered by the ICRC, so it is chosen before the CRC runs.
    let mut new_ids = None;
    match (av.src, av.dst) {
        (IpAddr::V4(src), IpAddr::V4(dst)) => ip::write_ipv4(
            iph,
            &ip::Ipv4Out {
                src,
                dst,
                tos: av.traffic_class,
                ttl: av.hop_limit,
                total_len: udp_len + ip::IPV4_HLEN as u16,
                id: ids.take(src, dst).unwrap_or_else(|| {
                    new_ids = Some((src, dst));
                    0
                }),
            },
        ),
        (IpAddr::V6(src), IpAddr::V6(dst)) => ip::write_ipv6(
            iph,
            &ip::Ipv6Out {
                src,
                dst,
                traffic_class: av.traffic_class,
                hop_limit: av.hop_limit,
                payload_len: udp_len,
            },
        ),
        _ => return Err(EINVAL),
    }
    .map_err(|_| EINVAL)?;
    if let Some((src, dst)) = new_ids {
        let first = tx.skb.reserve_ipv4_ids(ip::IPV4_ID_BLOCK);
        ids.refill(src, dst, first);
    }
    let v6 = av.network_type() == NetworkType::Ipv6;
    crc32::with(|crc| {
        if tx.payload_frags == 0 {
            // The whole datagram in the linear part, from the IP header.
            return icrc::generate_frame(crc, tx.skb.data_mut(), v6, ip_len).map_err(|_| EINVAL);
        }
        // Headers here, payload in the fragments, then the trailer: pad
        // (zeroed) and the ICRC slot.
        let hdrs = Frame {
            buf: tx.skb.data_mut(),
            v6,
            udp_at: ip_len,
        };
        let mut run = icrc::begin_frame(crc, hdrs).map_err(|_| EINVAL)?;
        tx.skb
            .for_each_frag(tx.payload_frags, |b| run.update(crc, b))?;
        let trailer = tx.skb.trailer_mut();
        let pad = trailer.len().checked_sub(ICRC_LEN).ok_or(EINVAL)?;
        run.update(crc, trailer.get(..pad).unwrap_or(&[]));
        let slot = trailer
            .get_mut(pad..)
            .and_then(|s| s.first_chunk_mut::<ICRC_LEN>())
            .ok_or(EINVAL)?;
        *slot = run.finish().to_le_bytes();
        Ok(())
    })
}

/// Routes `tx` and completes it with its UDP and IP headers and ICRC, in
/// place; `true` when it is for one of our own addresses, to go to our
/// receive path ([`deliver_local`]) instead of the IP layer.
#[inline]
fn ready<W: TxWake>(tx: &mut TxPacket<'_>, flow: &TxFlow<W>) -> Result<bool> {
    let dst = flow
        .routes
        .output(&tx.ndev, tx.av.src, tx.av.dst)
        .map_err(|_| errno::ehostunreach())?;
    let loopback = dst.is_local() || tx.av.dmac == tx.ndev.mac();
    prepare(tx, &dst, &flow.ipv4_ids)?;
    Ok(loopback)
}

/// Hands a packet [`ready`] found to be for one of our own addresses to our
/// receive path (or drops it on the way there).
fn deliver_local<W: TxWake>(tx: TxPacket<'_>, flow: &TxFlow<W>) -> Result {
    let TxPacket { dev, skb, ndev, .. } = tx;
    let mut skb = skb;
    let bytes = skb.len();
    flow.own(&mut skb);
    // Our receive path expects the skb as UDP hands it over: data at the
    // UDP header, network header set.
    let ip_len = match skb.protocol() {
        PROTO_IPV4 => ip::IPV4_HLEN,
        _ => ip::IPV6_HLEN,
    };
    // Fragments are rare here (only a route to a local address that the
    // MAC check of `alloc_packet_with` missed): receive wants the packet
    // linear. `ip_len` is 20 or 40.
    let mut rx = skb.into_rx();
    let res = rx.linearize().and_then(|()| rx.pull(ip_len as u32));
    if res.is_ok() {
        recv::receive_loopback(dev, rx);
    }
    drop(ndev);
    count_sent(dev, res.map(|()| Xmit::Sent), 1, bytes)
}

impl TxPacket<'_> {
    /// Hands the packet, complete ([`ready`]), alone to the IP layer.
    fn out<W: TxWake>(self, flow: &TxFlow<W>) -> Result {
        let TxPacket {
            dev, mut skb, ndev, ..
        } = self;
        // From the IP header on, as `sent_bytes` counts.
        let bytes = skb.len();
        flow.own(&mut skb);
        let res = skb.ip_local_out();
        drop(ndev);
        count_sent(dev, res, 1, bytes)
    }
}

/// Counts what the IP layer did with packets of `lens` bytes each.
fn count_sent(dev: &Device, res: Result<Xmit>, pkts: u64, bytes: usize) -> Result {
    match res {
        Ok(Xmit::Sent) => {
            counters::packets_sent(dev, pkts, bytes);
            Ok(())
        }
        Ok(Xmit::Dropped) => {
            counters::add(dev, Counter::SendErr, pkts);
            Ok(())
        }
        Err(e) => {
            counters::add(dev, Counter::SendErr, pkts);
            Err(e)
        }
    }
}

impl<W: TxWake> TxFlow<W> {
    /// Makes the flow's socket the owner of `skb`, counted in flight until
    /// it is freed.
    fn own(&self, skb: &mut TxSkb) {
        if let Some(sock) = &self.sock {
            self.inflight.count.fetch_add(1, Ordering::AcqRel);
            sock.attach(skb);
        }
    }
}

/// Packets on their way to the IP layer, gathered so that the network
/// device is told of several at once.
///
/// A packet handed to `ip_local_out` alone reaches the NIC driver alone,
/// and the driver then notifies its device: on virtio-net a write to the
/// notify register, an exit to the hypervisor that costs 45,000-80,000
/// host cycles here, once every 2-7 packets of a bandwidth test. Packets
/// of one sender along one route are gathered here instead, up to
/// [`GSO_BATCH_MAX`] and 64 KiB, and go down as one UDP fraglist GSO skb
/// ([`TxSkb::gso_chain`]): the IP layer routes, filters and queues it once,
/// the device's software GSO splits it back into the same packets, byte
/// for byte, and the driver takes them with `xmit_more` and notifies the
/// device once.
///
/// A sender calls [`TxBatch::send`] for each packet and [`TxBatch::flush`]
/// when its step ends (dropping the batch flushes it too). A packet that
/// does not fit the batch flushes it first, so packets leave in the order
/// they were sent. Packets looped back to our own receive path, and packets
/// through devices that would pass the GSO skb on whole (veth, loopback,
/// bridges: see [`NetDevice::splits_gso_batch`]), go out at once, alone.
///
/// Flow control: only a batch's first skb has an owner (the stack wants
/// none on the others), so a batch counts as one skb in flight.
///
/// # Invariants
///
/// `n` is 0 when `first` is `None`, else 1 to `GSO_BATCH_MAX`, and the first
/// `n - 1` slots of `rest` are initialised (the others are not, so that a
/// batch costs no clearing: one is made per step of a task).
pub(crate) struct TxBatch<'a, W: TxWake> {
    flow: &'a TxFlow<W>,
    /// The batch's first packet; the others follow in `rest`.
    first: Option<TxPacket<'a>>,
    rest: [MaybeUninit<TxSkb>; GSO_BATCH_MAX - 1],
    n: usize,
    /// The packets' bytes from the IP header on, for the counters.
    bytes: usize,
}

impl<'a, W: TxWake> TxBatch<'a, W> {
    pub(crate) fn new(flow: &'a TxFlow<W>) -> Self {
        // INVARIANT: No packet, and no slot of `rest` initialised.
        Self {
            flow,
            first: None,
            rest: [const { MaybeUninit::uninit() }; GSO_BATCH_MAX - 1],
            n: 0,
            bytes: 0,
        }
    }

    /// Sends a built packet: routes it along its AV, adds the UDP and IP
    /// headers and the ICRC, and gathers it into the batch, or hands it to
    /// the IP layer at once (see above), or to our own receive path when
    /// the destination is one of our addresses. The skb belongs to the flow
    /// until it is freed.
    ///
    /// `Ok` also when a qdisc or netfilter dropped the packet (counted in
    /// `send_err`), and for every packet gathered: the IP layer's verdict
    /// on a batch is counted, not returned. Reliable QPs recover by
    /// retrying, as after a loss on the wire. Errors: `EHOSTUNREACH`
    /// without a route, or the IP layer's errno for a packet sent alone.
    pub(crate) fn send(&mut self, tx: TxPacket<'a>) -> Result {
        let mut p = tx;
        if trace::pkt_send_on() {
            p.trace_send();
        }
        if ready(&mut p, self.flow)? {
            return deliver_local(p, self.flow);
        }
        if !p.ndev.splits_gso_batch() {
            self.flush();
            return p.out(self.flow);
        }
        let len = p.skb.len();
        let fits = match &self.first {
            None => true,
            Some(f) => {
                self.n < GSO_BATCH_MAX
                    && self.bytes + len <= usize::from(u16::MAX)
                    && f.av == p.av
                    && f.ndev.as_ptr() == p.ndev.as_ptr()
                    && core::ptr::eq(f.dev, p.dev)
            }
        };
        if !fits {
            self.flush();
        }
        if self.first.is_none() {
            // INVARIANT: One packet, none in `rest`.
            self.first = Some(p);
            self.n = 1;
            self.bytes = len;
            return Ok(());
        }
        // `n` is 1..GSO_BATCH_MAX here (a full batch was flushed above).
        match self.rest.get_mut(self.n - 1) {
            Some(slot) => {
                // INVARIANT: The slot after the initialised ones is set as
                // `n` grows past it.
                slot.write(p.skb);
                self.n += 1;
                self.bytes += len;
                Ok(())
            }
            None => p.out(self.flow),
        }
    }

    /// Hands the gathered packets to the IP layer.
    pub(crate) fn flush(&mut self) {
        let Some(mut first) = self.first.take() else {
            return;
        };
        // INVARIANT: From here no slot counts as initialised; the loop
        // below moves each initialised one out once.
        let n = core::mem::take(&mut self.n);
        let bytes = core::mem::take(&mut self.bytes);
        if n > 1 {
            let rest = self.rest.iter_mut().take(n - 1).map(|slot| {
                // SAFETY: The first `n - 1` slots were initialised (type
                // invariant), and each is read once.
                unsafe { slot.assume_init_read() }
            });
            first.skb.gso_chain(rest);
        }
        let TxPacket {
            dev, mut skb, ndev, ..
        } = first;
        self.flow.own(&mut skb);
        let res = skb.ip_local_out();
        drop(ndev);
        let _ = count_sent(dev, res, n as u64, bytes);
    }
}

impl<W: TxWake> Drop for TxBatch<'_, W> {
    fn drop(&mut self) {
        self.flush();
    }
}
