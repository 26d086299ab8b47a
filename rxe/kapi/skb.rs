// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Socket buffers owned by the driver: received packets (`Skb`) and packets
//! being built for transmission (`TxSkb`).

use core::mem::MaybeUninit;
use core::ptr::NonNull;

use kernel::{error::to_result, page::PAGE_SIZE, prelude::*};

use super::netdev::NetDevice;
use super::page::PayloadPages;
use super::route::Dst;
use crate::rxe::kapi::errno;
use crate::rxe::proto::conv::to_usize;
use crate::rxe::proto::ip::UDP_HLEN;
use crate::rxe::sys;

/// `ETH_P_IP` / `ETH_P_IPV6` as `skb->protocol` holds them, in CPU order.
pub(crate) const PROTO_IPV4: u16 = 0x0800;
pub(crate) const PROTO_IPV6: u16 = 0x86dd;

/// Packets one UDP fraglist GSO skb carries at most ([`TxSkb::gso_chain`]).
pub(crate) const GSO_BATCH_MAX: usize = 8;

/// An `sk_buff` the driver owns; dropping it frees it as a drop.
///
/// Its data may be shared with clones, so it is only ever read.
///
/// # Invariants
///
/// `self.0` points to an `sk_buff` with exactly one reference, ours.
pub(crate) struct Skb(NonNull<sys::sk_buff>);

// SAFETY: An owned skb may move between contexts freely.
unsafe impl Send for Skb {}
// SAFETY: `&Skb` only reads the skb, which nothing else writes while we own
// it.
unsafe impl Sync for Skb {}

/// Bytes from `ptr` to `end`, or empty when the range is inverted or null.
///
/// # Safety
///
/// When `ptr <= end`, both lie in one allocation that stays readable and
/// unwritten for `'a`.
unsafe fn span<'a>(ptr: *const u8, end: *const u8) -> &'a [u8] {
    if ptr.is_null() || end < ptr {
        return &[];
    }
    // SAFETY: Both pointers lie in one allocation (the caller's contract)
    // and `ptr <= end` (checked), so the distance is defined and not negative.
    let len = unsafe { end.offset_from(ptr) }.unsigned_abs();
    // SAFETY: `[ptr, end)` is readable and unwritten for `'a` (the caller's
    // contract), and `len` is its size.
    unsafe { core::slice::from_raw_parts(ptr, len) }
}

impl Skb {
    /// # Safety
    ///
    /// `ptr` is null or an skb whose only reference the caller hands over.
    pub(crate) unsafe fn from_raw(ptr: *mut sys::sk_buff) -> Option<Self> {
        // INVARIANT: A non-null `ptr` comes with the caller's reference, the
        // only one (the caller's contract).
        NonNull::new(ptr).map(Self)
    }

    /// Drops the route the stack attached. The receive path does not use
    /// it, and a packet may wait in a QP's queue beyond the RCU section a
    /// borrowed route is valid in, or beyond the end of the route's
    /// namespace.
    pub(crate) fn drop_route(&mut self) {
        // SAFETY: We own the skb (type invariant).
        unsafe { sys::rxe_rs_skb_dst_drop(self.0.as_ptr()) };
    }

    fn raw(&self) -> &sys::sk_buff {
        // SAFETY: We own the skb (type invariant).
        unsafe { self.0.as_ref() }
    }

    /// `skb_headlen()`, read in place (it is on every packet's path).
    fn headlen(&self) -> usize {
        let skb = self.raw();
        to_usize(skb.len.saturating_sub(skb.data_len))
    }

    /// The linear part from `data` on; all of the packet once linearized.
    pub(crate) fn data(&self) -> &[u8] {
        let skb = self.raw();
        // SAFETY: We own the skb (type invariant); its head holds
        // `skb_headlen` bytes from `data`, which nobody writes while we hold
        // it (`Skb`s are only read).
        unsafe { core::slice::from_raw_parts(skb.data, self.headlen()) }
    }

    /// From the network header to the end of the linear part: the IP header
    /// and what follows. Empty if the skb has no network header before its end.
    pub(crate) fn network_header_bytes(&self) -> &[u8] {
        let skb = self.raw();
        // SAFETY: We own the skb (type invariant); the helper computes the
        // address from the skb's own fields.
        let nh = unsafe { sys::rxe_rs_skb_network_header(skb) };
        // SAFETY: The linear data holds `skb_headlen` bytes from `data`, in
        // one allocation (the head), so its end is in or one past it.
        let end = unsafe { skb.data.add(self.headlen()) };
        if nh < skb.head {
            return &[];
        }
        // SAFETY: The network header offset of a received (or our own
        // built) skb lies in its head, before the end of the linear data, so
        // both are in the head's allocation; `span` checks the order, and
        // nothing writes while we own the skb.
        unsafe { span(nh, end) }
    }

    /// Makes every byte linear, so `data` covers the whole packet.
    pub(crate) fn linearize(&mut self) -> Result {
        // SAFETY: We own the skb (type invariant) and, through `&mut self`,
        // no borrow of its data is alive.
        to_result(unsafe { sys::rxe_rs_skb_linearize(self.0.as_ptr()) })
    }

    /// Drops `n` bytes from the front of the linear part.
    #[inline(always)]
    pub(crate) fn pull(&mut self, n: u32) -> Result {
        if to_usize(n) > self.headlen() {
            return Err(EINVAL);
        }
        // SAFETY: We own the skb (type invariant), no borrow of its data is
        // alive (`&mut self`), and the linear part holds `n` bytes.
        unsafe { sys::skb_pull(self.0.as_ptr(), n) };
        Ok(())
    }

    /// `skb->protocol` in CPU order.
    pub(crate) fn protocol(&self) -> u16 {
        // SAFETY: We own the skb (type invariant).
        u16::from_be(unsafe { sys::rxe_rs_skb_protocol(self.0.as_ptr()) })
    }

    /// The device the packet came in on (or was built for), with a reference.
    pub(crate) fn netdev(&self) -> Option<NetDevice> {
        // SAFETY: `skb->dev` of an skb we own is alive while the skb is in
        // the stack's hands or ours (received: the stack holds the device
        // during delivery; ours: `TxPacket` holds a reference).
        unsafe { NetDevice::get(sys::rxe_rs_skb_dev(self.0.as_ptr())) }
    }

    /// The VLAN id of the device the packet came in on, if that is a VLAN
    /// device. Only while the packet is being received: later `skb->dev`
    /// may be gone.
    #[inline(always)]
    pub(crate) fn rx_vlan_id(&self) -> Option<u16> {
        // SAFETY: We own the skb (type invariant).
        let ndev = unsafe { sys::rxe_rs_skb_dev(self.0.as_ptr()) };
        if ndev.is_null() {
            return None;
        }
        // SAFETY: During receive the stack (or, for loopback, the sender's
        // `TxPacket`) keeps `skb->dev` alive.
        unsafe { sys::rxe_rs_is_vlan_dev(ndev).then(|| sys::rxe_rs_vlan_id(ndev)) }
    }

    /// A clone sharing the data (for multicast fan-out).
    pub(crate) fn try_clone(&self) -> Option<Skb> {
        // SAFETY: We own the skb (type invariant); the clone is a new
        // `sk_buff` whose only reference `from_raw` takes over, or null.
        unsafe {
            Skb::from_raw(sys::skb_clone(
                self.0.as_ptr(),
                kernel::bindings::GFP_ATOMIC,
            ))
        }
    }

    /// Frees the skb as consumed (delivered), not dropped.
    pub(crate) fn consume(self) {
        let ptr = self.0.as_ptr();
        core::mem::forget(self);
        // SAFETY: We owned the only reference (type invariant), and
        // `forget` keeps `drop` from giving it back a second time.
        unsafe { sys::rxe_rs_consume_skb(ptr) };
    }
}

/// Why the driver drops a received packet, in the kernel's own terms
/// (`enum skb_drop_reason`), for drop monitors (`perf trace -e
/// skb:kfree_skb`, dropwatch). The driver's own reasons are finer: its
/// `rcvd_drop_*` counters and the `rxe_rs:pkt_drop` event.
#[derive(Clone, Copy)]
pub(crate) enum DropReason {
    /// No kernel reason fits (a bad ICRC, a QP in the wrong state, ...).
    NotSpecified,
    /// Out of memory.
    NoMem,
    /// Addressed to another host.
    OtherHost,
    /// No QP of that number: RoCE's "no socket".
    NoSocket,
    /// The QP's packet queue is full: RoCE's full receive buffer.
    ReceiveBuffer,
}

impl DropReason {
    fn raw(self) -> sys::skb_drop_reason {
        match self {
            Self::NotSpecified => sys::skb_drop_reason_SKB_DROP_REASON_NOT_SPECIFIED,
            Self::NoMem => sys::skb_drop_reason_SKB_DROP_REASON_NOMEM,
            Self::OtherHost => sys::skb_drop_reason_SKB_DROP_REASON_OTHERHOST,
            Self::NoSocket => sys::skb_drop_reason_SKB_DROP_REASON_NO_SOCKET,
            Self::ReceiveBuffer => sys::skb_drop_reason_SKB_DROP_REASON_SOCKET_RCVBUFF,
        }
    }
}

impl Skb {
    /// Frees the skb as dropped for `reason` (dropping it says "not
    /// specified").
    pub(crate) fn drop_for(self, reason: DropReason) {
        let ptr = self.0.as_ptr();
        core::mem::forget(self);
        // SAFETY: We owned the only reference (type invariant), and
        // `forget` keeps `drop` from giving it back a second time.
        unsafe { sys::sk_skb_reason_drop(core::ptr::null_mut(), ptr, reason.raw()) };
    }
}

impl Drop for Skb {
    fn drop(&mut self) {
        // SAFETY: We own the only reference (type invariant).
        unsafe {
            sys::sk_skb_reason_drop(
                core::ptr::null_mut(),
                self.0.as_ptr(),
                sys::skb_drop_reason_SKB_DROP_REASON_NOT_SPECIFIED,
            )
        };
    }
}

/// A packet under construction: never cloned, so its bytes may be written.
///
/// `data` starts at the transport headers while they are written; `push`
/// prepends the UDP and IP headers in front. The payload may instead sit in
/// page fragments ([`TxSkb::attach_pages`]), followed by a trailer fragment
/// of the driver's own ([`TxSkb::add_trailer`]).
///
/// # Invariants
///
/// The skb is ours alone and no clone of it exists. `trailer`, when set,
/// points to `trailer_len` bytes of a fragment of this skb that only this
/// value writes.
pub(crate) struct TxSkb {
    skb: Skb,
    trailer: Option<NonNull<u8>>,
    trailer_len: usize,
}

// SAFETY: The trailer pointer is part of the owned skb, which may move
// between contexts.
unsafe impl Send for TxSkb {}

/// What the IP layer did with a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Xmit {
    /// Handed on (maybe with a congestion notice).
    Sent,
    /// Dropped by a qdisc or netfilter; the transport's retries recover.
    Dropped,
}

impl TxSkb {
    /// Allocates an skb with `headroom` bytes in front and `len` bytes of
    /// data, for `ndev`, carrying `proto` (an ethertype, host order). The
    /// data is zeroed but for the `hole.1` bytes from `hole.0` on (none
    /// when `hole.1` is 0), which the caller must write before the skb is
    /// sent: they hold what the allocator left there. Atomic: callers may
    /// hold spinlocks.
    pub(crate) fn alloc(
        ndev: &NetDevice,
        headroom: u32,
        len: u32,
        proto: u16,
        hole: (u32, u32),
    ) -> Result<TxSkb> {
        headroom.checked_add(len).ok_or(EINVAL)?;
        // SAFETY: FFI; returns a fresh skb we own (one reference), or null.
        // `skb->dev` stays valid while the caller's `ndev` reference lives,
        // which outlasts the skb's time in our hands (see `TxPacket`). The
        // helper zeroes all of the data when the hole does not fit in it.
        let raw = unsafe {
            sys::rxe_rs_alloc_tx_skb(ndev.as_ptr(), headroom, len, proto.to_be(), hole.0, hole.1)
        };
        // SAFETY: A fresh skb with one reference, or null.
        let skb = unsafe { Skb::from_raw(raw) }.ok_or(ENOMEM)?;
        // INVARIANT: A fresh skb, never cloned, without a trailer.
        Ok(TxSkb {
            skb,
            trailer: None,
            trailer_len: 0,
        })
    }

    fn ptr(&self) -> *mut sys::sk_buff {
        self.skb.0.as_ptr()
    }

    /// All bytes from `data` on, fragments included.
    pub(crate) fn len(&self) -> usize {
        // SAFETY: We own the skb (type invariant of `Skb`); `len` is a plain
        // field (read in place: a C call per read costs more than the read
        // on the packet path).
        to_usize(unsafe { (*self.ptr()).len })
    }

    /// Appends the pieces of `pages` as fragments, in order, with their page
    /// references. `EINVAL` when the skb runs out of fragment slots (the
    /// pieces not attached are released).
    pub(crate) fn attach_pages(&mut self, pages: &mut PayloadPages) -> Result {
        let skb = self.ptr();
        let mut all = true;
        pages.drain_frags(|f| {
            if all {
                let page = f.page.as_ptr();
                // SAFETY: We own the skb (type invariant); the piece is inside
                // its page and comes with a reference, which the fragment
                // takes over when the helper returns true.
                all = unsafe { sys::rxe_rs_skb_add_page_frag(skb, page, f.offset, f.len) };
            }
            all
        });
        if all {
            Ok(())
        } else {
            Err(EINVAL)
        }
    }

    /// Appends `len` zeroed bytes as a last fragment of their own, for
    /// bytes that follow fragments (pad and ICRC); see [`TxSkb::trailer_mut`].
    pub(crate) fn add_trailer(&mut self, len: u32) -> Result {
        if self.trailer.is_some() {
            return Err(EINVAL);
        }
        // SAFETY: We own the skb (type invariant); the helper appends a fragment of `len`
        // bytes of fresh memory and returns its address, or null.
        let p = unsafe { sys::rxe_rs_skb_add_trailer(self.ptr(), len) };
        // INVARIANT: `p` is the fragment of `len` bytes just added to our
        // skb; nothing else has its address.
        self.trailer = Some(NonNull::new(p.cast::<u8>()).ok_or(ENOMEM)?);
        self.trailer_len = to_usize(len);
        Ok(())
    }

    /// The trailer's bytes; empty without one.
    pub(crate) fn trailer_mut(&mut self) -> &mut [u8] {
        match self.trailer {
            // SAFETY: `trailer_len` bytes of a fragment of our skb that
            // only we write (type invariant), borrowed exclusively here.
            Some(p) => unsafe { core::slice::from_raw_parts_mut(p.as_ptr(), self.trailer_len) },
            None => &mut [],
        }
    }

    /// Runs `f` on the bytes of fragments `0..n`, in order, each mapped for
    /// the call. `EINVAL` if there are fewer, or one leaves its page (the
    /// driver attaches none such).
    pub(crate) fn for_each_frag(&self, n: usize, mut f: impl FnMut(&[u8])) -> Result {
        for i in 0..n {
            let (mut off, mut len) = (0u32, 0u32);
            let i = u32::try_from(i).map_err(|_| EINVAL)?;
            // SAFETY: We own the skb (type invariant); the helper reads fragment `i`, or
            // returns null when there is none.
            let page = unsafe { sys::rxe_rs_skb_frag(self.ptr(), i, &mut off, &mut len) };
            if page.is_null() {
                return Err(EINVAL);
            }
            let (off, len) = (to_usize(off), to_usize(len));
            if !matches!(off.checked_add(len), Some(end) if end <= PAGE_SIZE) {
                return Err(EINVAL);
            }
            // SAFETY: The fragment holds a reference on its page while the
            // skb lives; a local mapping is undone below on the same CPU.
            let va = unsafe { sys::rxe_rs_kmap_local_page(page) }.cast::<u8>();
            // SAFETY: `off + len <= PAGE_SIZE` (checked), inside the
            // mapping. The bytes may be user memory that user space writes
            // meanwhile: that changes the values read, not what is read.
            f(unsafe { core::slice::from_raw_parts(va.add(off), len) });
            // SAFETY: Undoes the mapping made above, the latest of this CPU.
            unsafe { sys::rxe_rs_kunmap_local(va.cast()) };
        }
        Ok(())
    }

    pub(crate) fn data_mut(&mut self) -> &mut [u8] {
        let len = self.skb.headlen();
        // SAFETY: The skb is ours alone and not cloned (type invariant), so
        // its linear data may be written through this exclusive borrow.
        unsafe { core::slice::from_raw_parts_mut((*self.ptr()).data, len) }
    }

    /// Prepends room for an IP header of `ip_len` bytes and a UDP header,
    /// marks both, routes the packet along `dst` (the skb takes a reference
    /// of its own) and returns the `ip_len + 8` bytes, to be written.
    pub(crate) fn push_ip_udp(&mut self, ip_len: u32, dst: &Dst) -> Result<&mut [u8]> {
        // SAFETY: We own the skb (type invariant); `dst` is a live route we hold.
        let p = unsafe { sys::rxe_rs_skb_push_ip_udp(self.ptr(), ip_len, dst.as_ptr()) };
        if p.is_null() {
            return Err(errno::enobufs());
        }
        let n = to_usize(ip_len) + UDP_HLEN;
        self.data_mut().get_mut(..n).ok_or(EINVAL)
    }

    pub(crate) fn protocol(&self) -> u16 {
        self.skb.protocol()
    }

    /// Reserves `n` consecutive IPv4 ids from the stack's generator for the
    /// addresses of the IPv4 header at the network header (in the namespace
    /// of the route, which must be set), writes the first in the header and
    /// returns it.
    pub(crate) fn reserve_ipv4_ids(&mut self, n: u16) -> u16 {
        // SAFETY: The network header was set on a complete IPv4 header we
        // wrote, and the route; the id is written in place.
        unsafe { sys::rxe_rs_skb_reserve_ipv4_ids(self.ptr(), n.into()) }
    }

    /// Makes this packet the first of a UDP fraglist GSO skb that carries
    /// the packets of `rest` after it, taking them in order (at most
    /// [`GSO_BATCH_MAX`] - 1; any more are freed). Software GSO splits it back into the
    /// same packets right before the driver, which gets them in one go and
    /// notifies its device once (see `rxe_rs_skb_gso_chain`).
    ///
    /// Every packet is complete: headers pushed and written, route attached,
    /// ICRC filled. `rest` have no owner and go along this packet's route
    /// from and to the same addresses and ports; the device of the route
    /// splits such skbs itself ([`NetDevice::splits_gso_batch`]).
    pub(crate) fn gso_chain(&mut self, rest: impl Iterator<Item = TxSkb>) {
        let mut raw = [const { MaybeUninit::<*mut sys::sk_buff>::uninit() }; GSO_BATCH_MAX];
        let mut n = 0usize;
        for skb in rest {
            // More than a batch holds (a caller's bug): freed, not sent.
            if let Some(slot) = raw.get_mut(n) {
                slot.write(skb.into_raw());
                n += 1;
            }
        }
        if n == 0 {
            return;
        }
        // SAFETY: We own this skb and the `n` skbs in the first `n` slots of
        // `raw`, all written above, whose references go to it; all are
        // complete packets as the contract says. `n` is at most
        // `GSO_BATCH_MAX`.
        unsafe { sys::rxe_rs_skb_gso_chain(self.ptr(), raw.as_mut_ptr().cast(), n as u32) };
    }

    /// Hands the packet to the IPv4 or IPv6 output path (by `protocol`).
    pub(crate) fn ip_local_out(self) -> Result<Xmit> {
        let skb = self.into_raw();
        // SAFETY: We own the skb (the reference `into_raw` handed over).
        let sk = unsafe { (*skb).sk };
        // The namespace of the route: the netdev's, not the owner
        // socket's (see `TxSocket::new`).
        // SAFETY: We own the skb, whose route `push_ip_udp` attached (every
        // packet sent is built through it); the helper reads the route's
        // device's namespace.
        let net = unsafe { sys::rxe_rs_skb_dst_net(skb) };
        // SAFETY: We own the skb (the reference `into_raw` handed over).
        let proto = u16::from_be(unsafe { sys::rxe_rs_skb_protocol(skb) });
        let ret = if proto == PROTO_IPV4 {
            // SAFETY: We hand our reference to the stack; the skb has its
            // route, IPv4 headers and protocol set, `net` is its route's
            // namespace and `sk` its owner (or null).
            unsafe { sys::ip_local_out(net, sk, skb) }
        } else {
            // SAFETY: We hand our reference to the stack; the skb has its
            // route, IPv6 headers and protocol set, `net` is its route's
            // namespace and `sk` its owner (or null).
            unsafe { sys::ip6_local_out(net, sk, skb) }
        };
        match ret {
            0 => Ok(Xmit::Sent),
            // NET_XMIT_CN: queued, with a congestion notice.
            r if r == sys::NET_XMIT_CN as i32 => Ok(Xmit::Sent),
            r if r > 0 => Ok(Xmit::Dropped),
            r => Err(Error::from_errno(r)),
        }
    }

    /// Attaches an owner: `sk` holds a reference for the skb until
    /// `destructor` runs when the skb is freed.
    ///
    /// # Safety
    ///
    /// `sk` is a live socket; `destructor` releases that reference with
    /// `release_owner` and may run in any context up to softirq.
    pub(crate) unsafe fn set_owner(
        &mut self,
        sk: *mut sys::sock,
        destructor: unsafe extern "C" fn(*mut sys::sk_buff),
    ) {
        // SAFETY: We own the skb (type invariant), which has no owner yet
        // (only `TxSocket` sets one, once per packet); `sk` is a live socket
        // and `destructor` gives back the reference the helper takes (the
        // caller's contract).
        unsafe { sys::rxe_rs_skb_set_owner(self.ptr(), sk, Some(destructor)) }
    }

    /// The skb as a received packet (for loopback delivery). Its bytes are
    /// never written again. Its route goes: a queued packet must not keep
    /// a namespace's route past the namespace's end.
    pub(crate) fn into_rx(self) -> Skb {
        // INVARIANT: The `Skb` keeps the one reference; the trailer pointer
        // is dropped with `self`.
        let mut skb = self.skb;
        skb.drop_route();
        skb
    }

    fn into_raw(self) -> *mut sys::sk_buff {
        let ptr = self.ptr();
        core::mem::forget(self);
        ptr
    }
}

/// The socket an skb owner attached, as seen from its destructor.
///
/// # Safety
///
/// `skb` is being destroyed and was given an owner with `set_owner`.
pub(crate) unsafe fn owner_sock(skb: *mut sys::sk_buff) -> *mut sys::sock {
    // SAFETY: `skb` is being destroyed (the caller's contract): its
    // destructor runs before the memory goes, so the field is readable.
    unsafe { (*skb).sk }
}

/// Gives back the socket reference `set_owner` took.
///
/// # Safety
///
/// Called once per `set_owner`, from its destructor.
pub(crate) unsafe fn release_owner(sk: *mut sys::sock) {
    // SAFETY: Called once per `set_owner` (the caller's contract), whose
    // helper took the reference given back here.
    unsafe { sys::rxe_rs_sock_put(sk) }
}
