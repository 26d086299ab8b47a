// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Link-layer multicast addresses of the netdev under an rxe device.

use kernel::{error::to_result, prelude::*};

use super::netdev::NetDevice;
use crate::rxe::sys;

impl NetDevice {
    /// Adds `addr` to the device's multicast filter (counted: each add
    /// needs its own delete). May sleep.
    pub(crate) fn mc_add(&self, addr: &[u8; 6]) -> Result {
        // SAFETY: The device is alive while we hold it; `addr` is 6 readable
        // bytes, the length of an Ethernet address.
        to_result(unsafe { sys::dev_mc_add(self.as_ptr(), addr.as_ptr()) })
    }

    /// Drops one reference to `addr` in the multicast filter.
    pub(crate) fn mc_del(&self, addr: &[u8; 6]) -> Result {
        // SAFETY: The device is alive while we hold it; `addr` is 6 readable
        // bytes, the length of an Ethernet address.
        to_result(unsafe { sys::dev_mc_del(self.as_ptr(), addr.as_ptr()) })
    }
}
