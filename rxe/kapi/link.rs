// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The `rxe` link type: `rdma link add NAME type rxe netdev DEV`.

use kernel::{error::from_result, ffi::c_char, prelude::*, str::CStr, types::Opaque};

use super::netdev::NetDevice;
use crate::rxe::sys;

/// Creates the links of the type: the driver, which makes an RDMA device on
/// the network device (process context; 6.12's RDMA netlink holds no RTNL
/// here). `ndev` is in the namespace of the caller of `rdma link add`.
pub(crate) trait LinkOwner: 'static {
    fn newlink(name: &CStr, ndev: &NetDevice) -> Result;
}

/// The registered link type, whose links its [`LinkOwner`] creates.
/// Dropping it unregisters.
///
/// The ops live in their own allocation: the core links them into a list.
pub(crate) struct LinkType(KBox<Opaque<sys::rdma_link_ops>>);

// SAFETY: After registration only the RDMA core touches the ops, under its
// own lock; this value only hands their address back to unregister.
unsafe impl Send for LinkType {}
// SAFETY: `&LinkType` allows no access at all: the ops are reached only by
// the RDMA core, under its own lock.
unsafe impl Sync for LinkType {}

/// # Safety
///
/// Only the kernel calls this, through the table or socket it was
/// registered with, with arguments valid for the duration of the call.
unsafe extern "C" fn newlink<O: LinkOwner>(
    name: *const c_char,
    ndev: *mut sys::net_device,
) -> kernel::ffi::c_int {
    from_result(|| {
        // SAFETY: The core passes a NUL-terminated name that lives for the
        // call, which outlasts the borrow.
        let name = unsafe { CStr::from_char_ptr(name) };
        // SAFETY: The core passes a netdev it holds for the call.
        let ndev = unsafe { NetDevice::get(ndev) }.ok_or(ENODEV)?;
        O::newlink(name, &ndev)?;
        Ok(0)
    })
}

impl LinkType {
    /// Registers the "rxe" link type, with `O` creating its links.
    pub(crate) fn register<O: LinkOwner>() -> Result<Self> {
        let ops = sys::rdma_link_ops {
            type_: c"rxe".to_bytes_with_nul().as_ptr().cast(),
            newlink: Some(newlink::<O>),
            ..Default::default()
        };
        let ops = KBox::new(Opaque::new(ops), GFP_KERNEL)?;
        // SAFETY: The ops stay at this address until `drop` unregisters them.
        unsafe { sys::rdma_link_register(ops.get()) };
        Ok(Self(ops))
    }
}

impl Drop for LinkType {
    fn drop(&mut self) {
        // SAFETY: The ops were registered in `register` (a `LinkType`
        // exists only then) and are unregistered once, here; they are freed
        // only after this call returns.
        unsafe { sys::rdma_link_unregister(self.0.get()) };
    }
}
