// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Network devices: counted references and the netdev event notifier.

use core::ptr::NonNull;

use kernel::{error::to_result, prelude::*, types::Opaque};

use crate::rxe::sys;

/// A counted reference to a `struct net_device`.
///
/// # Invariants
///
/// `self.0` points to a live `net_device` on which this value owns one
/// reference (taken with `dev_hold` or handed over by a C getter).
pub(crate) struct NetDevice(NonNull<sys::net_device>);

// SAFETY: A held net_device reference can be used and dropped from any thread.
unsafe impl Send for NetDevice {}
// SAFETY: Only reads through `&self`; the C side serialises its own updates.
unsafe impl Sync for NetDevice {}

impl NetDevice {
    /// Takes over a reference the caller owns.
    ///
    /// # Safety
    ///
    /// `ptr` is null or points to a `net_device` on which the caller owns a
    /// reference, which is transferred to the returned value.
    pub(crate) unsafe fn from_owned(ptr: *mut sys::net_device) -> Option<Self> {
        // INVARIANT: A non-null `ptr` names a device on which the caller
        // hands us its reference (the caller's contract).
        NonNull::new(ptr).map(Self)
    }

    /// Takes a new reference on a device the caller can borrow.
    ///
    /// # Safety
    ///
    /// `ptr` points to a `net_device` that stays alive for the call.
    pub(crate) unsafe fn get(ptr: *mut sys::net_device) -> Option<Self> {
        let ptr = NonNull::new(ptr)?;
        // SAFETY: The caller guarantees the device is alive now.
        unsafe { sys::rxe_rs_dev_hold(ptr.as_ptr()) };
        // INVARIANT: The reference just taken is this value's.
        Some(Self(ptr))
    }

    pub(crate) fn as_ptr(&self) -> *mut sys::net_device {
        self.0.as_ptr()
    }

    fn raw(&self) -> &sys::net_device {
        // SAFETY: By the type invariant the device is alive while we hold it.
        unsafe { self.0.as_ref() }
    }

    /// Room the link layer wants in front of a packet it transmits (C:
    /// `LL_RESERVED_SPACE`): the hardware header plus the device's own
    /// headroom (virtio-net's header, a VLAN tag...), rounded up. A sender
    /// that leaves less makes the IP layer reallocate the head of every skb.
    pub(crate) fn ll_reserved_space(&self) -> u32 {
        // SAFETY: By the type invariant the device is alive while we hold it.
        unsafe { sys::rxe_rs_ll_reserved_space(self.as_ptr()) }
    }

    /// Whether a UDP fraglist GSO skb sent through this device is split
    /// back into its packets by its own software GSO (see
    /// [`crate::rxe::kapi::skb::TxSkb::gso_chain`]); read at the moment,
    /// the features may change later.
    pub(crate) fn splits_gso_batch(&self) -> bool {
        // SAFETY: By the type invariant the device is alive while we hold it.
        unsafe { sys::rxe_rs_netdev_splits_gso_batch(self.as_ptr()) }
    }

    /// The interface name, without the trailing NULs.
    pub(crate) fn name(&self) -> &[u8] {
        // `name` is a fixed char array; the kernel keeps it NUL terminated.
        let bytes: &[kernel::ffi::c_char] = &self.raw().name;
        let len = bytes.iter().position(|&c| c == 0).unwrap_or(bytes.len());
        &bytes[..len]
    }

    /// Length of the hardware address: 6 for Ethernet, 0 for a device
    /// without one.
    pub(crate) fn addr_len(&self) -> usize {
        self.raw().addr_len.into()
    }

    pub(crate) fn mtu(&self) -> u32 {
        self.raw().mtu
    }

    pub(crate) fn ifindex(&self) -> i32 {
        self.raw().ifindex
    }

    /// The first six bytes of the hardware address (the MAC of an Ethernet
    /// device; what follows a shorter address, see [`Self::addr_len`]).
    pub(crate) fn mac(&self) -> [u8; 6] {
        let mut mac = [0u8; 6];
        let addr = self.raw().dev_addr;
        if !addr.is_null() {
            // SAFETY: `dev_addr` of a registered device points to the
            // `MAX_ADDR_LEN` (32) bytes of a `netdev_hw_addr` (`dev_addr_init`),
            // whatever `addr_len` is.
            let src = unsafe { core::slice::from_raw_parts(addr, 6) };
            mac.copy_from_slice(src);
        }
        mac
    }

    /// Administratively up (IFF_UP).
    pub(crate) fn is_up(&self) -> bool {
        // SAFETY: The device is alive (type invariant).
        let flags = unsafe { sys::rxe_rs_dev_get_flags(self.as_ptr()) };
        flags & sys::net_device_flags_IFF_UP != 0
    }

    /// Running with carrier: the port can move packets.
    pub(crate) fn is_running_with_carrier(&self) -> bool {
        // SAFETY: The device is alive (type invariant).
        unsafe {
            sys::rxe_rs_netif_running(self.as_ptr()) && sys::rxe_rs_netif_carrier_ok(self.as_ptr())
        }
    }

    pub(crate) fn is_vlan(&self) -> bool {
        // SAFETY: The device is alive (type invariant).
        unsafe { sys::rxe_rs_is_vlan_dev(self.as_ptr()) }
    }
}

impl Clone for NetDevice {
    fn clone(&self) -> Self {
        // SAFETY: We hold a reference (type invariant), so the device is
        // alive.
        unsafe { sys::rxe_rs_dev_hold(self.as_ptr()) };
        // INVARIANT: The reference just taken is the clone's.
        Self(self.0)
    }
}

impl Drop for NetDevice {
    fn drop(&mut self) {
        // SAFETY: We own one reference (type invariant) and give it back.
        unsafe { sys::rxe_rs_dev_put(self.as_ptr()) };
    }
}

/// The netdev events rxe follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NetEvent {
    Up,
    Down,
    Change,
    ChangeMtu,
    Unregister,
    Other,
}

impl NetEvent {
    fn from_raw(event: usize) -> Self {
        match event as u32 {
            sys::netdev_cmd_NETDEV_UP => Self::Up,
            sys::netdev_cmd_NETDEV_DOWN => Self::Down,
            sys::netdev_cmd_NETDEV_CHANGE => Self::Change,
            sys::netdev_cmd_NETDEV_CHANGEMTU => Self::ChangeMtu,
            sys::netdev_cmd_NETDEV_UNREGISTER => Self::Unregister,
            _ => Self::Other,
        }
    }
}

/// Told of the events of every network device (process context, RTNL
/// held): the driver, which follows the devices its links sit on.
pub(crate) trait NotifierOwner: 'static {
    fn net_event(ndev: &NetDevice, event: NetEvent);
}

/// A registered netdevice notifier that hands every event to its
/// [`NotifierOwner`].
///
/// The block lives in its own allocation: the notifier chain links it.
pub(crate) struct Notifier(KBox<Opaque<sys::notifier_block>>);

// SAFETY: After registration only the notifier chain touches the block, under
// its own lock; this value only hands its address back to unregister.
unsafe impl Send for Notifier {}
// SAFETY: `&Notifier` allows no access at all: the block is reached only
// by the notifier chain, under its own lock.
unsafe impl Sync for Notifier {}

/// # Safety
///
/// Only the kernel calls this, through the table or socket it was
/// registered with, with arguments valid for the duration of the call.
unsafe extern "C" fn notifier_call<O: NotifierOwner>(
    _nb: *mut sys::notifier_block,
    event: kernel::ffi::c_ulong,
    info: *mut kernel::ffi::c_void,
) -> kernel::ffi::c_int {
    // SAFETY: The notifier chain passes a netdev_notifier_info whose device is
    // alive for the duration of the call.
    if let Some(ndev) = unsafe { NetDevice::get(sys::rxe_rs_netdev_notifier_info_to_dev(info)) } {
        O::net_event(&ndev, NetEvent::from_raw(event));
    }
    sys::NOTIFY_OK as kernel::ffi::c_int
}

impl Notifier {
    /// Registers `O` for netdevice events.
    pub(crate) fn register<O: NotifierOwner>() -> Result<Self> {
        let nb = sys::notifier_block {
            notifier_call: Some(notifier_call::<O>),
            ..Default::default()
        };
        let block = KBox::new(Opaque::new(nb), GFP_KERNEL)?;
        // SAFETY: The block is initialised and stays at this address until
        // `drop` unregisters it.
        to_result(unsafe { sys::register_netdevice_notifier(block.get()) })?;
        Ok(Self(block))
    }
}

impl Drop for Notifier {
    fn drop(&mut self) {
        // SAFETY: The block was registered in `register` (a `Notifier`
        // exists only then) and is unregistered once, here; it is freed
        // only after this call returns.
        unsafe { sys::unregister_netdevice_notifier(self.0.get()) };
    }
}
