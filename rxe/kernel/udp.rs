// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Kernel UDP sockets: the tunnel sockets RoCEv2 packets arrive on (port
//! 4791), and the per-sender sockets that own transmitted skbs in flight.

use core::{marker::PhantomData, ptr::NonNull};

use kernel::{
    error::to_result,
    prelude::*,
    sync::{Arc, ArcBorrow},
};

use super::skb::{self, Skb, TxSkb};
use crate::rxe::sys as b;

/// The RoCEv2 destination port.
pub(crate) const ROCE_V2_PORT: u16 = 4791;

/// A UDP socket in the initial network namespace, bound to port 4791, whose
/// datagrams go to `crate::rxe::recv::receive_udp` instead of a socket queue.
///
/// # Invariants
///
/// `self.0` is a socket created and set up by `TunnelSocket::create`, owned
/// by this value.
pub(crate) struct TunnelSocket(NonNull<b::socket>);

// SAFETY: The socket is only released in `drop`; the stack serialises the rest.
unsafe impl Send for TunnelSocket {}
// SAFETY: No `&self` method mutates the socket.
unsafe impl Sync for TunnelSocket {}

/// # Safety
///
/// Only the kernel calls this, through the table or socket it was
/// registered with, with arguments valid for the duration of the call.
unsafe extern "C" fn encap_rcv(_sk: *mut b::sock, skb: *mut b::sk_buff) -> kernel::ffi::c_int {
    // SAFETY: The UDP stack hands us the skb; returning 0 tells it we consumed it.
    if let Some(skb) = unsafe { Skb::from_raw(skb) } {
        crate::rxe::recv::receive_udp(skb);
    }
    0
}

impl TunnelSocket {
    /// Creates the IPv4 (`ipv6 == false`) or IPv6-only socket.
    pub(crate) fn create(ipv6: bool) -> Result<Self> {
        let mut cfg = b::udp_port_cfg {
            family: if ipv6 { b::AF_INET6 } else { b::AF_INET } as u8,
            local_udp_port: ROCE_V2_PORT.to_be(),
            ..Default::default()
        };
        if ipv6 {
            cfg.set_ipv6_v6only(1);
        }
        let mut sock: *mut b::socket = core::ptr::null_mut();
        let net = core::ptr::addr_of_mut!(b::init_net);
        // SAFETY: FFI with a valid config and out pointer.
        to_result(unsafe {
            if ipv6 {
                b::udp_sock_create6(net, &mut cfg, &mut sock)
            } else {
                b::udp_sock_create4(net, &mut cfg, &mut sock)
            }
        })?;
        let sock = NonNull::new(sock).ok_or(ENOMEM)?;
        let mut tnl = b::udp_tunnel_sock_cfg {
            encap_type: 1,
            encap_rcv: Some(encap_rcv),
            ..Default::default()
        };
        // SAFETY: `sock` is a fresh UDP socket in `net`; the config is valid.
        unsafe { b::setup_udp_tunnel_sock(net, sock.as_ptr(), &mut tnl) };
        Ok(Self(sock))
    }
}

impl Drop for TunnelSocket {
    fn drop(&mut self) {
        // SAFETY: We own the socket (type invariant); this detaches encap_rcv
        // and releases it.
        unsafe { b::udp_tunnel_sock_release(self.0.as_ptr()) };
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
/// # Invariants
///
/// `sock` was created by `new`; its `sk_user_data` holds a pointer from
/// `Arc::<O>::into_raw` whose reference this value owns.
pub(crate) struct TxSocket<O: SkbOwner> {
    sock: NonNull<b::socket>,
    _owner: PhantomData<Arc<O>>,
}

// SAFETY: The socket is only released in `drop`; `attach` only reads it.
unsafe impl<O: SkbOwner> Send for TxSocket<O> {}
// SAFETY: As above.
unsafe impl<O: SkbOwner> Sync for TxSocket<O> {}

/// # Safety
///
/// Only the kernel calls this, through the table or socket it was
/// registered with, with arguments valid for the duration of the call.
unsafe extern "C" fn tx_destructor<O: SkbOwner>(skb: *mut b::sk_buff) {
    // SAFETY: This destructor is only installed by `TxSocket::<O>::attach`,
    // which took one reference on the socket and one on the `O` its
    // `sk_user_data` names; both are given back here, once.
    unsafe {
        let sk = skb::owner_sock(skb);
        let owner = Arc::<O>::from_raw(b::rxe_rs_sk_user_data(sk).cast::<O>());
        owner.skb_released();
        drop(owner);
        skb::release_owner(sk);
    }
}

impl<O: SkbOwner> TxSocket<O> {
    /// Creates the socket; every skb attached later reports to `owner`.
    pub(crate) fn new(owner: &Arc<O>) -> Result<Self> {
        let mut sock: *mut b::socket = core::ptr::null_mut();
        // SAFETY: FFI with a valid out pointer.
        to_result(unsafe {
            b::sock_create_kern(
                core::ptr::addr_of_mut!(b::init_net),
                b::AF_INET as i32,
                b::sock_type_SOCK_DGRAM as i32,
                0,
                &mut sock,
            )
        })?;
        let sock = NonNull::new(sock).ok_or(ENOMEM)?;
        let ptr = Arc::into_raw(owner.clone());
        // SAFETY: A fresh socket of ours; the pointer stays valid while any
        // reference to the `O` lives, and this value owns one until `drop`.
        unsafe { b::rxe_rs_sk_set_user_data(b::rxe_rs_socket_sk(sock.as_ptr()), ptr.cast_mut().cast()) };
        Ok(Self {
            sock,
            _owner: PhantomData,
        })
    }

    fn sk(&self) -> *mut b::sock {
        // SAFETY: The socket is ours and alive (type invariant).
        unsafe { b::rxe_rs_socket_sk(self.sock.as_ptr()) }
    }

    /// Makes this socket (and so its owner) the owner of `skb` until it is freed.
    pub(crate) fn attach(&self, skb: &mut TxSkb) {
        let sk = self.sk();
        // SAFETY: `sk_user_data` came from `Arc::into_raw` and our own
        // reference keeps it alive for this borrow (type invariant).
        let owner: Arc<O> = unsafe { ArcBorrow::from_raw(b::rxe_rs_sk_user_data(sk).cast::<O>()) }.into();
        // The skb's reference, given back by `tx_destructor`.
        let _ = Arc::into_raw(owner);
        // SAFETY: `sk` is live; the destructor releases the socket reference
        // taken here and the owner reference leaked above.
        unsafe { skb.set_owner(sk, tx_destructor::<O>) };
    }
}

impl<O: SkbOwner> Drop for TxSocket<O> {
    fn drop(&mut self) {
        let sk = self.sk();
        // SAFETY: Read before release, while the socket is surely alive.
        let owner = unsafe { b::rxe_rs_sk_user_data(sk) }.cast::<O>();
        // SAFETY: We own the socket. Skbs still in flight hold their own
        // references on the `sock` and on the `O`, so their destructors keep
        // working after this.
        unsafe { b::sock_release(self.sock.as_ptr()) };
        // SAFETY: The reference `new` took for this value (type invariant).
        drop(unsafe { Arc::<O>::from_raw(owner) });
    }
}
