// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Network namespaces: held references to them, and the RoCE tunnel
//! sockets (UDP port 4791, IPv4 and IPv6) of each namespace that has rxe
//! devices.
//!
//! A namespace's sockets are created when the first device on one of its
//! netdevs is made ([`TunnelUse::get`], process context) and released when
//! the last of them is freed, or when the namespace exits, whichever comes
//! first. A device can outlive its namespace's exit: the netdev's
//! unregistration only queues the device's, which the core runs later on
//! its workqueue and which frees the device last. So the per-namespace
//! state is a counted object of its own; the namespace's `net_generic`
//! memory only holds a pointer to it, from the namespace's creation to its
//! exit.
//!
//! Lock order: a namespace's `Tunnels` mutex, then whatever socket release
//! takes (RCU grace periods, the socket lock). Nothing nests inside it.

use core::{
    ptr::NonNull,
    sync::atomic::{AtomicU32, Ordering},
};

use kernel::{
    error::to_result,
    new_mutex,
    prelude::*,
    sync::{Arc, ArcBorrow, Mutex},
    types::Opaque,
};

use super::netdev::NetDevice;
use super::udp::{TunnelOwner, TunnelSocket};
use crate::rxe::kapi::errno;
use crate::rxe::sys;

/// A held reference to a network namespace (`struct net`).
///
/// # Invariants
///
/// `self.0` points to a namespace on which this value owns one reference.
pub(crate) struct Net(NonNull<sys::net>);

// SAFETY: A namespace reference can be used and dropped from any thread.
unsafe impl Send for Net {}
// SAFETY: Only the pointer is read through `&self`.
unsafe impl Sync for Net {}

impl Net {
    /// The namespace `ndev` lives in now; `ENODEV` once that namespace is
    /// being dismantled.
    pub(crate) fn of(ndev: &NetDevice) -> Result<Net> {
        // SAFETY: `ndev` is held; the helper takes a reference unless the
        // namespace's count already reached zero.
        let net = unsafe { sys::rxe_rs_dev_net_get(ndev.as_ptr()) };
        // INVARIANT: A non-null `net` comes with the reference the helper
        // took, which is this value's.
        NonNull::new(net).map(Net).ok_or(ENODEV)
    }

    pub(crate) fn as_ptr(&self) -> *mut sys::net {
        self.0.as_ptr()
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        // SAFETY: We own one reference (type invariant).
        unsafe { sys::rxe_rs_put_net(self.as_ptr()) };
    }
}

/// The namespace `ndev` lives in, without a reference: for a lookup made
/// while `ndev` is held (a registered netdev keeps its namespace from
/// exiting).
pub(crate) fn raw_net_of(ndev: &NetDevice) -> *mut sys::net {
    // SAFETY: `ndev` is held, so its `nd_net` is readable.
    unsafe { sys::rxe_rs_dev_net(ndev.as_ptr()) }
}

/// A namespace's identity, without a reference: it tells whether two
/// things are of one namespace, and is never turned back into a pointer.
/// Whoever keeps one past the moment it was taken drops it when that
/// namespace exits (see [`NetsOwner::net_exit`]), so an identity kept is
/// never that of a namespace freed and reallocated since.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct NetId(usize);

impl NetId {
    /// The namespace `ndev` is in now.
    pub(crate) fn of(ndev: &NetDevice) -> Self {
        Self(raw_net_of(ndev) as usize)
    }

    fn from_raw(net: *const sys::net) -> Self {
        Self(net as usize)
    }
}

/// What the driver does when a namespace exits.
pub(crate) trait NetsOwner {
    /// Namespace `net` exits (process context, no RTNL): its devices are
    /// gone; its memory lasts until this call and those of the other
    /// subsystems are over and an RCU grace period has passed. Whatever
    /// still refers to it (routes) must be dropped now.
    fn net_exit(net: NetId);
}

/// One namespace's tunnel sockets and the devices that use them.
#[pin_data]
struct Tunnels {
    #[pin]
    inner: Mutex<TunnelsInner>,
}

struct TunnelsInner {
    /// Devices of the namespace that hold a [`TunnelUse`].
    users: usize,
    sock4: Option<TunnelSocket>,
    /// `None` also when the kernel has no IPv6.
    sock6: Option<TunnelSocket>,
    /// The namespace exited: its sockets are gone for good.
    exited: bool,
}

impl TunnelsInner {
    /// Releases the sockets (sleeps). Called with the mutex held, so that a
    /// device made right after cannot find port 4791 still taken.
    fn release(&mut self) {
        let had = self.sock4.is_some();
        self.sock6 = None;
        self.sock4 = None;
        if had {
            pr_debug!("tunnel sockets of a namespace released\n");
        }
    }
}

/// The `pernet_operations` id: the index of our pointer in every
/// namespace's `net_generic` array. The core writes it once, at
/// registration, before any callback runs; the module registers one
/// [`TunnelNets`].
static PERNET_ID: AtomicU32 = AtomicU32::new(0);

/// The slot of namespace `net` that holds its `Tunnels` (an `Arc` turned
/// into a raw pointer), or null between exit and free.
///
/// # Safety
///
/// `net` is a namespace between our `init` and the end of our `exit` for it,
/// and [`TunnelNets`] is registered.
unsafe fn slot(net: *const sys::net) -> *mut *const Tunnels {
    let id = PERNET_ID.load(Ordering::Acquire);
    // SAFETY: `net` is between our `init` and the end of our `exit` for it
    // and `TunnelNets` is registered (the caller's contract), so the
    // namespace has its memory for our id, one pointer (`size` of the ops),
    // and `PERNET_ID` holds that id.
    unsafe { sys::rxe_rs_net_generic(net, id) }.cast()
}

/// # Safety
///
/// Only the kernel calls this, through the table it was registered with,
/// for a namespace being set up (process context).
unsafe extern "C" fn pernet_init(net: *mut sys::net) -> kernel::ffi::c_int {
    let tunnels = Arc::pin_init(
        pin_init!(Tunnels {
            inner <- new_mutex!(
                TunnelsInner { users: 0, sock4: None, sock6: None, exited: false },
                "rxe_netns_tunnels"
            ),
        }),
        GFP_KERNEL,
    );
    match tunnels {
        Ok(t) => {
            // SAFETY: `init` of this namespace: its slot exists, zeroed,
            // and nothing else reads it before `init` returns.
            unsafe { *slot(net) = Arc::into_raw(t) };
            0
        }
        Err(e) => e.to_errno(),
    }
}

/// # Safety
///
/// Only the kernel calls this, through the table it was registered with,
/// for a namespace being dismantled (process context), once after its
/// successful `init`.
unsafe extern "C" fn pernet_exit<O: NetsOwner>(net: *mut sys::net) {
    O::net_exit(NetId::from_raw(net));
    // SAFETY: `exit` of a namespace whose `init` succeeded; its count is
    // zero, so no `TunnelUse::get` reads the slot any more.
    let raw = unsafe { core::ptr::replace(slot(net), core::ptr::null()) };
    if raw.is_null() {
        return;
    }
    // SAFETY: The reference `init` stored, given back once.
    let tunnels = unsafe { Arc::from_raw(raw) };
    let mut inner = tunnels.inner.lock();
    inner.exited = true;
    // Devices still alive here are being unregistered (their netdev is
    // gone); they can no longer receive, and drop their use later.
    inner.release();
}

/// The registration of the per-namespace tunnel state: every namespace
/// gets an empty one at creation, and releases its sockets at exit, where
/// `O` is told first.
/// Dropping it runs the exit of every namespace, so drop it after the
/// last device is gone.
///
/// The ops live in their own allocation: the core links them into a list.
pub(crate) struct TunnelNets(KBox<Opaque<sys::pernet_operations>>);

// SAFETY: After registration only the namespace core touches the ops, under
// its own lock; this value only hands their address back to unregister.
unsafe impl Send for TunnelNets {}
// SAFETY: `&TunnelNets` allows no access at all: the ops are reached only
// by the namespace core, under its own lock.
unsafe impl Sync for TunnelNets {}

impl TunnelNets {
    /// Registers the per-namespace state; [`TunnelUse::get`] works from here
    /// on, for every namespace.
    pub(crate) fn register<O: NetsOwner>() -> Result<Self> {
        let ops = sys::pernet_operations {
            init: Some(pernet_init),
            exit: Some(pernet_exit::<O>),
            id: PERNET_ID.as_ptr(),
            size: core::mem::size_of::<*const Tunnels>(),
            ..Default::default()
        };
        let ops = KBox::new(Opaque::new(ops), GFP_KERNEL)?;
        // SAFETY: The ops and the id they point to stay valid until `drop`
        // unregisters them.
        to_result(unsafe { sys::register_pernet_subsys(ops.get()) })?;
        Ok(Self(ops))
    }
}

impl Drop for TunnelNets {
    fn drop(&mut self) {
        // SAFETY: The ops were registered in `register` (a `TunnelNets`
        // exists only then) and are unregistered once, here; they are freed
        // only after this call returns.
        unsafe { sys::unregister_pernet_subsys(self.0.get()) };
    }
}

/// A device's claim on the tunnel sockets of its netdev's namespace: they
/// exist while any claim of that namespace does (until it exits).
///
/// Dropping it may release the sockets, which sleeps: drop it in process
/// context (a device's state is dropped by `dealloc_driver`).
pub(crate) struct TunnelUse(Arc<Tunnels>);

impl TunnelUse {
    /// Claims the sockets of namespace `net`, creating them (receiving into
    /// `O`) if this is the namespace's first claim. Process context.
    pub(crate) fn get<O: TunnelOwner>(net: &Net) -> Result<Self> {
        if PERNET_ID.load(Ordering::Acquire) == 0 {
            return Err(ENODEV);
        }
        // SAFETY: We hold `net`, so it is past our `init` (the registration
        // ran it for namespaces that existed before) and before our `exit`.
        let raw = unsafe { *slot(net.as_ptr()) };
        if raw.is_null() {
            return Err(ENODEV);
        }
        // SAFETY: The slot owns a reference until `exit`, which cannot run
        // while we hold the namespace.
        let tunnels: Arc<Tunnels> = unsafe { ArcBorrow::from_raw(raw) }.into();
        {
            let mut inner = tunnels.inner.lock();
            if inner.exited {
                return Err(ENODEV);
            }
            if inner.sock4.is_none() {
                let sock4 = TunnelSocket::create::<O>(net, false)?;
                let sock6 = match TunnelSocket::create::<O>(net, true) {
                    Ok(sock) => Some(sock),
                    Err(e) if e == errno::eafnosupport() => {
                        pr_warn!("IPv6 unavailable, RoCEv2 over IPv4 only\n");
                        None
                    }
                    Err(e) => return Err(e),
                };
                inner.sock4 = Some(sock4);
                inner.sock6 = sock6;
                pr_debug!("tunnel sockets of a namespace created\n");
            }
            inner.users += 1;
        }
        Ok(Self(tunnels))
    }
}

impl Drop for TunnelUse {
    fn drop(&mut self) {
        let mut inner = self.0.inner.lock();
        inner.users = inner.users.saturating_sub(1);
        if inner.users == 0 {
            inner.release();
        }
    }
}
