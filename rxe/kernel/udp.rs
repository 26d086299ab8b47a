//! The kernel UDP tunnel sockets RoCEv2 packets arrive on (port 4791).

use core::ptr::NonNull;

use kernel::{error::to_result, prelude::*};

use super::skb::Skb;
use crate::rxe::sys as b;

/// The RoCEv2 destination port.
pub(crate) const ROCE_V2_PORT: u16 = 4791;

/// A UDP socket in the initial network namespace, bound to port 4791, whose
/// datagrams go to `crate::rxe::net::receive` instead of a socket queue.
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

unsafe extern "C" fn encap_rcv(_sk: *mut b::sock, skb: *mut b::sk_buff) -> kernel::ffi::c_int {
    // SAFETY: The UDP stack hands us the skb; returning 0 tells it we consumed it.
    if let Some(skb) = unsafe { Skb::from_raw(skb) } {
        crate::rxe::net::receive(skb);
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
