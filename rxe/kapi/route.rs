// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Addressing for packets: IP routes out of a netdev and the GID table
//! entries that name our own addresses.

use core::ptr::NonNull;

use kernel::{error::from_err_ptr, prelude::*};

use super::ibdev::Device;
use super::lock::{new_spinlock_bh, SpinLockBh};
use super::netdev::NetDevice;
use super::netns::NetId;
use crate::rxe::proto::ip::IpAddr;
use crate::rxe::sys;

/// A held reference to a route (`struct dst_entry`).
///
/// # Invariants
///
/// `self.0` is a live `dst_entry` on which we own one reference.
pub(crate) struct Dst(NonNull<sys::dst_entry>);

// SAFETY: A held dst reference can be used and released from any context.
unsafe impl Send for Dst {}
// SAFETY: Only read through `&self`.
unsafe impl Sync for Dst {}

impl Dst {
    /// The route for UDP from `src` to `dst` leaving through `ndev`, in
    /// `ndev`'s namespace. Both addresses must be of one family.
    pub(crate) fn output(ndev: &NetDevice, src: IpAddr, dst: IpAddr) -> Result<Dst> {
        let net = super::netns::raw_net_of(ndev);
        let oif = ndev.ifindex();
        let raw = match (src, dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => {
                // SAFETY: `net` is the namespace of `ndev`, which we hold (a
                // registered netdev keeps its namespace from exiting); the
                // addresses go by value, in network order as the wire has them.
                unsafe {
                    sys::rxe_rs_route4(net, oif, u32::from_ne_bytes(s), u32::from_ne_bytes(d))
                }
            }
            (IpAddr::V6(s), IpAddr::V6(d)) => {
                let s = in6(s);
                let d = in6(d);
                // SAFETY: `net` is the namespace of `ndev`, which we hold (a
                // registered netdev keeps its namespace from exiting); the
                // addresses live on our stack for the call.
                unsafe { sys::rxe_rs_route6(net, oif, &s, &d) }
            }
            _ => return Err(EINVAL),
        };
        let raw = from_err_ptr(raw)?;
        // INVARIANT: The lookup returned a route with a reference taken,
        // which is this value's.
        NonNull::new(raw).map(Dst).ok_or(EINVAL)
    }

    /// Another reference to the same route.
    pub(crate) fn clone_ref(&self) -> Dst {
        // INVARIANT: The new `Dst` owns the reference `dst_clone` takes.
        // SAFETY: We hold the route (type invariant); `dst_clone` takes one
        // more reference and returns the same, non-null, pointer.
        Dst(unsafe { NonNull::new_unchecked(sys::rxe_rs_dst_clone(self.0.as_ptr())) })
    }

    /// The value [`Dst::is_valid`] checks this route against later.
    fn cookie(&self, ipv6: bool) -> u32 {
        // SAFETY: We hold the route (type invariant), which is an IPv6 one
        // when `ipv6` says so: it came from the lookup of that family.
        unsafe { sys::rxe_rs_dst_cookie(self.0.as_ptr(), ipv6) }
    }

    /// Whether the route is still current: no routing change made it
    /// obsolete since `cookie` was taken.
    fn is_valid(&self, cookie: u32) -> bool {
        // SAFETY: We hold the route (type invariant).
        unsafe { sys::rxe_rs_dst_valid(self.0.as_ptr(), cookie) }
    }

    pub(crate) fn as_ptr(&self) -> *mut sys::dst_entry {
        self.0.as_ptr()
    }

    /// The route delivers to this host (one of our own addresses).
    pub(crate) fn is_local(&self) -> bool {
        // SAFETY: We hold the route (type invariant).
        unsafe { sys::rxe_rs_dst_is_local(self.0.as_ptr()) }
    }
}

impl Drop for Dst {
    fn drop(&mut self) {
        // SAFETY: We own one reference (type invariant).
        unsafe { sys::dst_release(self.0.as_ptr()) };
    }
}

/// The last route one sender used, kept while its path stays the same and
/// no routing change makes it obsolete: a route lookup per packet is among
/// the largest fixed costs of a small message. C keeps one per RC QP in the
/// QP's socket; this one is keyed by the path, so it serves UD too and an
/// address change never reuses a stale route.
///
/// A route holds its device (until the device's unregistration moves it to
/// a placeholder device) but not its namespace, whose memory an IPv6 route
/// points into (its `dst_ops`). So the owner of every cache drops what it
/// holds when a netdev unregisters ([`RouteScope::Dev`]) and when a
/// namespace exits ([`RouteScope::Net`]), and a lookup that was under way
/// meanwhile does not store its result: each [`RouteCache::forget`] moves a
/// generation on, and a lookup stores only if the generation it started
/// from is still the current one.
pub(crate) struct RouteCache {
    last: Pin<KBox<SpinLockBh<Slot>>>,
}

struct Slot {
    cached: Option<Cached>,
    /// Moved on by every `forget`.
    generation: u64,
    /// Set by `close`: nothing is stored any more.
    closed: bool,
}

struct Cached {
    net: NetId,
    oif: i32,
    src: IpAddr,
    dst: IpAddr,
    route: Dst,
    cookie: u32,
}

/// Which cached routes [`RouteCache::forget`] drops.
#[derive(Clone, Copy)]
pub(crate) enum RouteScope {
    /// Every route.
    All,
    /// The routes of a namespace (it exits).
    Net(NetId),
    /// The routes out of one netdev (it unregisters, or leaves the
    /// namespace).
    Dev(NetId, i32),
}

impl RouteScope {
    fn covers(self, c: &Cached) -> bool {
        match self {
            Self::All => true,
            Self::Net(net) => c.net == net,
            Self::Dev(net, oif) => c.net == net && c.oif == oif,
        }
    }
}

impl RouteCache {
    pub(crate) fn new(flags: kernel::alloc::Flags) -> Result<Self> {
        let slot = Slot {
            cached: None,
            generation: 0,
            closed: false,
        };
        Ok(Self {
            last: KBox::pin_init(new_spinlock_bh!(slot, "rxe_route_cache"), flags)?,
        })
    }

    /// Drops the cached route if `scope` covers it; a lookup under way
    /// keeps its result to itself.
    pub(crate) fn forget(&self, scope: RouteScope) {
        let old = {
            let mut s = self.last.lock();
            s.generation = s.generation.wrapping_add(1);
            if s.cached.as_ref().is_some_and(|c| scope.covers(c)) {
                s.cached.take()
            } else {
                None
            }
        };
        // Released outside the lock.
        drop(old);
    }

    /// Drops the cached route and caches none from now on: for an owner
    /// about to become unreachable to [`RouteCache::forget`]'s callers.
    pub(crate) fn close(&self) {
        let old = {
            let mut s = self.last.lock();
            s.closed = true;
            s.cached.take()
        };
        drop(old);
    }

    /// [`Dst::output`], from the cache when it holds this path's route.
    #[inline(always)]
    pub(crate) fn output(&self, ndev: &NetDevice, src: IpAddr, dst: IpAddr) -> Result<Dst> {
        let net = NetId::of(ndev);
        let oif = ndev.ifindex();
        let generation = {
            let s = self.last.lock();
            if let Some(c) = s.cached.as_ref() {
                // A cached route is of a live namespace (it is dropped when
                // its namespace exits), so checking it is safe.
                if c.net == net
                    && c.oif == oif
                    && c.src == src
                    && c.dst == dst
                    && c.route.is_valid(c.cookie)
                {
                    return Ok(c.route.clone_ref());
                }
            }
            s.generation
        };
        let route = Dst::output(ndev, src, dst)?;
        let cookie = route.cookie(matches!(dst, IpAddr::V6(_)));
        let keep = Cached {
            net,
            oif,
            src,
            dst,
            route: route.clone_ref(),
            cookie,
        };
        let old = {
            let mut s = self.last.lock();
            if s.closed || s.generation != generation {
                // A `forget` ran since the lookup began: what it was
                // called for may concern this route too.
                Some(keep)
            } else {
                s.cached.replace(keep)
            }
        };
        // The replaced route is released outside the lock.
        drop(old);
        Ok(route)
    }
}

fn in6(a: [u8; 16]) -> sys::in6_addr {
    // The byte view of the union covers all 16 bytes.
    let mut v = sys::in6_addr::default();
    v.in6_u.u6_addr8 = a;
    v
}

/// The netdev of GID table entry `index` of port 1 (a VLAN device for a
/// VLAN address), with a reference.
pub(crate) fn gid_netdev<S>(dev: &Device<S>, index: u32) -> Option<NetDevice> {
    // SAFETY: The device is alive; the helper returns a held netdev or null.
    unsafe { NetDevice::from_owned(sys::rxe_rs_gid_ndev(dev.as_ib(), 1, index)) }
}

/// GID table entry `index` of port 1, if the entry is in use.
pub(crate) fn gid_at<S>(dev: &Device<S>, index: u32) -> Option<[u8; 16]> {
    let index = i32::try_from(index).ok()?;
    // SAFETY: Our device is alive while borrowed; the core checks the port
    // and the index, and returns an entry with a reference taken, or an
    // error pointer.
    let attr = unsafe { sys::rdma_get_gid_attr(dev.as_ib(), 1, index) };
    match from_err_ptr(attr.cast_mut()) {
        Ok(attr) if !attr.is_null() => {
            // SAFETY: A found entry, kept alive by the lookup's reference;
            // every bit pattern is a valid `raw` GID.
            let gid = unsafe { (*attr).gid.raw };
            // SAFETY: Gives back the lookup's reference, once; `attr` is not
            // used after.
            unsafe { sys::rdma_put_gid_attr(attr) };
            Some(gid)
        }
        _ => None,
    }
}

/// The GID table index of RoCE v2 GID `gid` of port 1, on `ndev` if given
/// (the netdev a packet came in on), else on any netdev.
pub(crate) fn find_gid<S>(dev: &Device<S>, gid: [u8; 16], ndev: Option<&NetDevice>) -> Option<u32> {
    let gid = sys::ib_gid { raw: gid };
    let ndev = ndev.map_or(core::ptr::null_mut(), NetDevice::as_ptr);
    // SAFETY: Our device is alive while borrowed, `ndev` is a held netdev
    // (or null: any), `gid` lives on our stack for the call; the core
    // returns an entry with a reference taken, or an error pointer.
    let attr = unsafe {
        sys::rdma_find_gid_by_port(
            dev.as_ib(),
            &gid,
            sys::ib_gid_type_IB_GID_TYPE_ROCE_UDP_ENCAP,
            1,
            ndev,
        )
    };
    match from_err_ptr(attr.cast_mut()) {
        Ok(attr) if !attr.is_null() => {
            // SAFETY: A found entry, kept alive by the lookup's reference.
            let index = u32::from(unsafe { (*attr).index });
            // SAFETY: Gives back the lookup's reference, once; `attr` is not
            // used after.
            unsafe { sys::rdma_put_gid_attr(attr) };
            Some(index)
        }
        _ => None,
    }
}

/// The device under a VLAN device; `None` for any other device.
pub(crate) fn vlan_real_dev(ndev: &NetDevice) -> Option<NetDevice> {
    // SAFETY: `ndev` is held; the real device of a VLAN lives at least as
    // long as the VLAN device, and `get` takes our own reference.
    unsafe { NetDevice::get(sys::rxe_rs_vlan_real_dev(ndev.as_ptr())) }
}
