// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Kernel UDP sockets: the tunnel sockets RoCEv2 packets arrive on (port
//! 4791), and the per-sender sockets that own transmitted skbs in flight.

use core::{
    ptr::NonNull,
    sync::atomic::{AtomicUsize, Ordering},
};

use kernel::{error::to_result, prelude::*, sync::Arc};

use kernel::workqueue::{impl_has_work, new_work, Work, WorkItem};

use super::netns::Net;
use super::skb::{self, Skb, TxSkb};
use super::task;
use crate::rxe::sys;

/// The RoCEv2 destination port.
pub(crate) const ROCE_V2_PORT: u16 = 4791;

/// Takes the datagrams that arrive on the tunnel sockets: the driver's
/// receive path. A type parameter, not an object, so that `encap_rcv` calls
/// it directly, as the hot path wants.
pub(crate) trait TunnelOwner: 'static {
    /// Called by the UDP stack in softirq context for every datagram to port
    /// 4791 (the UDP header still in front of the payload); must not sleep.
    fn receive(skb: Skb);
}

/// A UDP socket of one network namespace, bound to port 4791, whose
/// datagrams go to its [`TunnelOwner`] instead of a socket queue
/// (`netns::TunnelUse` keeps one pair per namespace with rxe devices).
///
/// Kernel sockets hold no reference on their namespace: drop it before the
/// namespace's exit ends.
///
/// # Invariants
///
/// `self.0` is a socket created and set up by `TunnelSocket::create`, owned
/// by this value.
pub(crate) struct TunnelSocket(NonNull<sys::socket>);

// SAFETY: The socket is only released in `drop`; the stack serialises the rest.
unsafe impl Send for TunnelSocket {}
// SAFETY: No `&self` method mutates the socket.
unsafe impl Sync for TunnelSocket {}

/// # Safety
///
/// Only the kernel calls this, through the table or socket it was
/// registered with, with arguments valid for the duration of the call.
unsafe extern "C" fn encap_rcv<O: TunnelOwner>(
    _sk: *mut sys::sock,
    skb: *mut sys::sk_buff,
) -> kernel::ffi::c_int {
    // SAFETY: The UDP stack hands us the skb; returning 0 tells it we consumed it.
    if let Some(mut skb) = unsafe { Skb::from_raw(skb) } {
        skb.drop_route();
        O::receive(skb);
    }
    0
}

impl TunnelSocket {
    /// Creates the IPv4 (`ipv6 == false`) or IPv6-only socket of namespace
    /// `net`, whose datagrams go to `O`. Process context.
    pub(crate) fn create<O: TunnelOwner>(net: &Net, ipv6: bool) -> Result<Self> {
        let mut cfg = sys::udp_port_cfg {
            family: if ipv6 { sys::AF_INET6 } else { sys::AF_INET } as u8,
            local_udp_port: ROCE_V2_PORT.to_be(),
            ..Default::default()
        };
        if ipv6 {
            cfg.set_ipv6_v6only(1);
        }
        let mut sock: *mut sys::socket = core::ptr::null_mut();
        let net = net.as_ptr();
        to_result(if ipv6 {
            // SAFETY: `net` is a namespace we hold a reference on; the config
            // and the out pointer are locals.
            unsafe { sys::udp_sock_create6(net, &mut cfg, &mut sock) }
        } else {
            // SAFETY: `net` is a namespace we hold a reference on; the config
            // and the out pointer are locals.
            unsafe { sys::udp_sock_create4(net, &mut cfg, &mut sock) }
        })?;
        let sock = NonNull::new(sock).ok_or(ENOMEM)?;
        let mut tnl = sys::udp_tunnel_sock_cfg {
            encap_type: 1,
            encap_rcv: Some(encap_rcv::<O>),
            ..Default::default()
        };
        // SAFETY: `sock` is a fresh UDP socket in `net`; the config is valid.
        unsafe { sys::rxe_rs_setup_udp_tunnel_sock(net, sock.as_ptr(), &mut tnl) };
        // INVARIANT: The socket was just created and set up, and nothing
        // else holds it.
        Ok(Self(sock))
    }
}

impl Drop for TunnelSocket {
    fn drop(&mut self) {
        // SAFETY: We own the socket (type invariant); this detaches encap_rcv
        // and releases it.
        unsafe { sys::rxe_rs_udp_tunnel_sock_release(self.0.as_ptr()) };
    }
}

/// Told when an skb it owned has left the host (or was dropped): the skb's
/// memory is free again.
pub(crate) trait SkbOwner: Send + Sync + 'static {
    /// Runs in whatever context frees the skb, up to softirq; must not sleep.
    fn skb_released(&self);
}

/// A kernel UDP socket (never bound) that owns a sender's skbs while they are
/// in flight, as rdma_rxe's per-QP socket does: each skb holds a reference on
/// the socket and on its `O`, and hands both back from its destructor.
///
/// It may be dropped in any context up to softirq, under spinlocks (the
/// last reference to a QP can go there): `sock_release` sleeps, so the drop
/// hands the socket to a work item allocated up front.
///
/// # Invariants
///
/// `sock` was created by `new` and is owned by this value; its
/// `sk_user_data` holds the address of `owner`'s `O` (what
/// `Arc::<O>::into_raw` gives), which `owner` keeps alive. `release` is
/// `Some` until `drop`.
pub(crate) struct TxSocket<O: SkbOwner> {
    sock: NonNull<sys::socket>,
    release: Option<Pin<KBox<Release>>>,
    /// The reference behind `sk_user_data`; each skb in flight takes one
    /// more (cloned from here: no pointer-to-`Arc` conversion per packet).
    owner: Arc<O>,
}

/// Releases a dropped `TxSocket`'s socket in process context.
#[pin_data]
struct Release {
    #[pin]
    work: Work<Release>,
    /// Set by `TxSocket::drop`, which gives up the socket to this item.
    sock: Option<NonNull<sys::socket>>,
}

// SAFETY: The socket pointer is only used by the work function, once.
unsafe impl Send for Release {}
// SAFETY: No `&self` access touches the socket.
unsafe impl Sync for Release {}

impl_has_work! {
    impl HasWork<Self> for Release { self.work }
}

impl WorkItem for Release {
    type Pointer = Pin<KBox<Self>>;

    fn run(this: Pin<KBox<Self>>) {
        if let Some(sock) = this.sock {
            // SAFETY: `TxSocket::drop` handed over its socket, which nothing
            // else uses any more; skbs in flight hold their own references
            // on its `sock`, so their destructors keep working after this.
            unsafe { sys::sock_release(sock.as_ptr()) };
        }
    }
}

// SAFETY: The socket is only released in `drop`; `attach` only reads it.
unsafe impl<O: SkbOwner> Send for TxSocket<O> {}
// SAFETY: `&self` methods only read the socket pointer and its `sk`, which
// never change, and clone the `Arc<O>` (`O: Sync`).
unsafe impl<O: SkbOwner> Sync for TxSocket<O> {}

/// Skbs whose destructor is `tx_destructor`, over the whole module: a qdisc
/// or a neighbour entry waiting for its address may keep one for seconds
/// after its device and QP are gone, and its destructor is module text.
static TX_SKBS: AtomicUsize = AtomicUsize::new(0);

/// # Safety
///
/// Only the kernel calls this, through the table or socket it was
/// registered with, with arguments valid for the duration of the call.
unsafe extern "C" fn tx_destructor<O: SkbOwner>(skb: *mut sys::sk_buff) {
    // This destructor is only installed by `TxSocket::<O>::attach`, which
    // took one reference on the socket and one on the `O` its
    // `sk_user_data` names; both are given back here, once.
    // SAFETY: The skb is being destroyed and `attach` gave it its owner.
    let sk = unsafe { skb::owner_sock(skb) };
    // SAFETY: `sk` is alive: the skb's reference on it is given back only
    // below.
    let user_data = unsafe { sys::rxe_rs_sk_user_data(sk) };
    // SAFETY: By the type invariant of `TxSocket`, `sk_user_data` is the
    // address of an `O` in an `Arc`; `attach` took one reference for this
    // skb (`Arc::into_raw`), which comes back here.
    let owner = unsafe { Arc::<O>::from_raw(user_data.cast::<O>()) };
    owner.skb_released();
    drop(owner);
    // SAFETY: Once per `set_owner` of `attach`, from the skb's destructor.
    unsafe { skb::release_owner(sk) };
    // Last: module exit waits for the count to reach zero.
    TX_SKBS.fetch_sub(1, Ordering::Release);
}

/// Waits until no skb with our destructor is left (module exit, after the
/// devices and the tunnel sockets are gone, so no new ones appear).
pub(crate) fn wait_for_tx_skbs() {
    let mut waited_ms = 0u32;
    loop {
        let left = TX_SKBS.load(Ordering::Acquire);
        if left == 0 {
            break;
        }
        if waited_ms % 10_000 == 0 {
            pr_info!(
                "waiting for {} packets still queued in the network stack\n",
                left
            );
        }
        // SAFETY: Plain sleep in process context.
        unsafe { sys::msleep(20) };
        waited_ms = waited_ms.wrapping_add(20);
    }
    // Destructors run with bottom halves off (softirq, qdisc and neighbour
    // code): after a grace period none is still returning through our text.
    // SAFETY: Process context, no locks held.
    unsafe { kernel::bindings::synchronize_rcu() };
}

impl<O: SkbOwner> TxSocket<O> {
    /// Creates the socket; every skb attached later reports to `owner`.
    ///
    /// It lives in the initial namespace whatever namespace the skbs are
    /// sent in: it is never bound or looked up, only an owner for skbs
    /// (the output path takes its namespace from the route), and init_net
    /// never exits, so a QP and its skbs in flight never depend on the
    /// lifetime of another namespace. A socket crossing into another
    /// namespace is orphaned by the stack (`skb_scrub_packet`).
    pub(crate) fn new(owner: &Arc<O>) -> Result<Self> {
        let mut sock: *mut sys::socket = core::ptr::null_mut();
        // SAFETY: `init_net` is a static namespace that never exits; the
        // out pointer is a local.
        to_result(unsafe {
            sys::sock_create_kern(
                core::ptr::addr_of_mut!(sys::init_net),
                sys::AF_INET as i32,
                sys::sock_type_SOCK_DGRAM as i32,
                0,
                &mut sock,
            )
        })?;
        let sock = NonNull::new(sock).ok_or(ENOMEM)?;
        let release = match KBox::pin_init(
            pin_init!(Release { work <- new_work!("rxe_rs_sock_release"), sock: None }),
            GFP_KERNEL,
        ) {
            Ok(r) => r,
            Err(e) => {
                // SAFETY: Our fresh socket, not used anywhere yet.
                unsafe { sys::sock_release(sock.as_ptr()) };
                return Err(e);
            }
        };
        let owner = owner.clone();
        let ptr: *const O = &*owner;
        // SAFETY: A fresh socket of ours; its `sk` is set by the create call.
        let sk = unsafe { sys::rxe_rs_socket_sk(sock.as_ptr()) };
        // SAFETY: `sk` is the live sock of our fresh socket, used by no one
        // else yet; the pointer stays valid while any reference to the `O`
        // lives, and this value owns one until it drops.
        unsafe { sys::rxe_rs_sk_set_user_data(sk, ptr.cast_mut().cast()) };
        // INVARIANT: `sock` is ours; its `sk_user_data` is `owner`'s `O`;
        // `release` is set.
        Ok(Self {
            sock,
            release: Some(release),
            owner,
        })
    }

    fn sk(&self) -> *mut sys::sock {
        // SAFETY: The socket is ours and alive (type invariant); `sk` is a
        // plain field.
        unsafe { (*self.sock.as_ptr()).sk }
    }

    /// Makes this socket (and so its owner) the owner of `skb` until it is freed.
    pub(crate) fn attach(&self, skb: &mut TxSkb) {
        let sk = self.sk();
        // The skb's reference on the `O` of `sk_user_data` (the same
        // object), given back by `tx_destructor`.
        let _ = Arc::into_raw(self.owner.clone());
        TX_SKBS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: `sk` is the sock of our socket (type invariant), live
        // while we own it; `tx_destructor` releases the socket reference
        // the helper takes and the owner reference leaked above.
        unsafe { skb.set_owner(sk, tx_destructor::<O>) };
    }
}

impl<O: SkbOwner> Drop for TxSocket<O> {
    fn drop(&mut self) {
        // `owner` drops after this: skbs in flight hold their own references.
        if let Some(mut release) = self.release.take() {
            // SAFETY: `sock` is not structurally pinned.
            unsafe { release.as_mut().get_unchecked_mut() }.sock = Some(self.sock);
            task::enqueue_once(release);
        }
    }
}
