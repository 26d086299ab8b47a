// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The module-wide hooks the wrapper layer registers for the driver: the
//! `rxe` link type, netdev events and the datagrams of the tunnel sockets.
//! The `extern "C"` functions are generic ones in `rxe/kapi`; the crate
//! root instantiates them with [`Driver`], so each call below is static.

use kernel::{prelude::*, str::CStr};

use crate::rxe::kapi::{
    link::LinkOwner,
    netdev::{NetDevice, NetEvent, NotifierOwner},
    netns::{Net, NetId, NetsOwner, TunnelUse},
    skb::Skb,
    udp::TunnelOwner,
};
use crate::rxe::{device, recv};

/// The driver, as the owner of the module-wide registrations.
pub(crate) struct Driver;

impl LinkOwner for Driver {
    fn newlink(name: &CStr, ndev: &NetDevice) -> Result {
        // The device receives through the tunnel sockets of its netdev's
        // namespace, made now if it is the namespace's first.
        let net = Net::of(ndev)?;
        let tunnels = TunnelUse::get::<Self>(&net)?;
        device::newlink(name, ndev, &net, tunnels)
    }
}

impl NetsOwner for Driver {
    fn net_exit(net: NetId) {
        device::net_exit(net);
    }
}

impl NotifierOwner for Driver {
    fn net_event(ndev: &NetDevice, event: NetEvent) {
        device::net_event(ndev, event);
    }
}

// The hot path: `encap_rcv::<Driver>` should hold the whole receive entry.
// Code reached from a generic instance is exported, and LLVM keeps an
// exported function of that size out of line unless it is marked
// `#[inline]`, as `recv::receive_udp` is.
impl TunnelOwner for Driver {
    #[inline(always)]
    fn receive(skb: Skb) {
        recv::receive_udp(skb);
    }
}
