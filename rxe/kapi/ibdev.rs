// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The `ib_device` of an rxe link: allocation, registration and lookups.

use core::{cell::UnsafeCell, mem::size_of, ptr::NonNull};

use kernel::{
    error::to_result,
    prelude::*,
    str::CStr,
    types::{Opaque, ScopeGuard},
};

use super::netdev::NetDevice;
use super::netns::Net;
use crate::rxe::sys;

/// The driver's state of a device, kept behind the core's `ib_device`, and
/// the ops table the core calls the device through.
///
/// # Safety
///
/// One type of the module implements this trait, and it is the state of
/// every device the module registers: lookups that start from a core
/// pointer (a device found by its netdev, the device of a core object)
/// rely on it to name the type behind the `ib_device`.
pub(crate) unsafe trait DeviceData: Send + Sync + Sized + 'static {
    /// The ops table; the core copies it into each device.
    fn ops() -> sys::ib_device_ops;
}

/// The device as the RDMA core allocates it.
///
/// The core's `ib_device` comes first, so a `*mut ib_device` of ours and a
/// `*mut Device` are the same address; the driver's state `S` follows. The
/// `ib_device` is the core's, changed by it at any time: Rust only passes
/// its address to the core's functions.
///
/// # Invariants
///
/// `state` is initialised from the moment the core can call into the device
/// (its ops are set) until `dealloc_driver` drops it.
#[repr(C)]
pub(crate) struct Device<S> {
    ib: Opaque<sys::ib_device>,
    state: S,
}

/// The port events rxe reports to the RDMA core.
#[derive(Clone, Copy)]
pub(crate) enum PortEvent {
    Active,
    Error,
}

/// Identity the driver gives a new device.
pub(crate) struct Identity {
    pub(crate) node_guid: [u8; 8],
    pub(crate) node_desc: &'static [u8],
}

impl<S: DeviceData> Device<S> {
    /// Returns the device of an `ib_device` created by this driver.
    ///
    /// # Safety
    ///
    /// `ib` is the `ib_device` of a live `Device` whose state is initialised.
    pub(crate) unsafe fn from_ib<'a>(ib: *mut sys::ib_device) -> &'a Self {
        // SAFETY: `ib` is the `ib_device` of a live `Device` whose state is
        // initialised (the caller's contract), and the first field of that
        // `#[repr(C)]` `Device`, so the cast gives its address; the state is
        // an `S` (the contract of `DeviceData`).
        unsafe { &*ib.cast::<Self>() }
    }

    /// Allocates, initialises and registers a device named `name` on `ndev`,
    /// whose namespace is `net`.
    ///
    /// With the RDMA core in exclusive netns mode the device belongs to
    /// `net` (it is seen and used from there only, as 7.x does it); in the
    /// default shared mode it is in the initial namespace and seen from
    /// every one.
    ///
    /// On success the RDMA core owns the device: it lives until it is
    /// unregistered, and `dealloc_driver` drops the state.
    pub(crate) fn register(
        name: &CStr,
        ndev: &NetDevice,
        net: &Net,
        identity: Identity,
        state: impl PinInit<S, Error>,
    ) -> Result {
        // SAFETY: FFI call; the size covers `ib_device` at offset 0. The
        // core keeps `net` without a reference: we hold it until the
        // registration is done, and the core moves its devices back to
        // init_net when a namespace exits.
        let raw = unsafe { sys::rxe_rs_alloc_ib_device(size_of::<Self>(), net.as_ptr()) };
        let raw = raw.cast::<Self>();
        if raw.is_null() {
            return Err(ENOMEM);
        }
        // INVARIANT: The state is initialised here, before the ops are set
        // below, so before the core can call into the device.
        // SAFETY: `raw` is zeroed memory of the right size that we own, and
        // `state` is not yet initialised. The ops are set only after the state
        // is, so a failed init frees the device without dropping anything.
        unsafe { super::alloc::init_at(state, core::ptr::addr_of_mut!((*raw).state)) }
            .inspect_err(|_| {
                // SAFETY: The device was allocated above and has no ops yet.
                unsafe { sys::ib_dealloc_device(raw.cast()) }
            })?;
        // From here on `dealloc_driver` drops the state when the device goes.
        let guard = ScopeGuard::new_with_data(raw, |raw| {
            // SAFETY: The device is ours and not registered.
            unsafe { sys::ib_dealloc_device(raw.cast()) }
        });
        // SAFETY: The device is ours until registered: nothing else reaches
        // it yet, so this is the only reference; its fields are plain data.
        let ib = unsafe { &mut *(*raw).ib.get() };
        ib.name_assign_type = sys::rdma_nl_name_assign_type_RDMA_NAME_ASSIGN_TYPE_USER;
        for (dst, &src) in ib.node_desc.iter_mut().zip(identity.node_desc) {
            *dst = src as kernel::ffi::c_char;
        }
        ib.node_type = sys::RDMA_NODE_IB_CA as u8;
        ib.phys_port_cnt = 1;
        // SAFETY: FFI call without arguments, usable in any context.
        ib.num_comp_vectors = unsafe { sys::rxe_rs_num_possible_cpus() } as i32;
        ib.local_dma_lkey = 0;
        ib.node_guid = u64::from_ne_bytes(identity.node_guid);
        ib.uverbs_cmd_mask |= (1u64 << sys::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_POST_SEND)
            | (1u64 << sys::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_REQ_NOTIFY_CQ);
        let ops = S::ops();
        // SAFETY: `ib` is our device, not registered yet; the core copies
        // the ops out of `ops`, which lives for the call.
        unsafe { sys::ib_set_device_ops(ib, &ops) };
        // From here on a failure ends in `dealloc_driver` too, which
        // takes the device off the list.
        Registry::lock().add(raw.cast())?;
        // SAFETY: `ib` is our device, not registered yet; `ndev` is a live
        // netdev (we hold a reference), on which the core takes its own.
        to_result(unsafe { sys::ib_device_set_netdev(ib, ndev.as_ptr(), 1) })?;
        // SAFETY: `ib` is our set-up device with its ops and netdev; `name`
        // is a NUL-terminated string the core copies; no DMA device (null).
        to_result(unsafe {
            sys::ib_register_device(ib, name.as_char_ptr(), core::ptr::null_mut())
        })?;
        guard.dismiss();
        Ok(())
    }

    /// Drops the driver state; called once by `dealloc_driver`.
    ///
    /// # Safety
    ///
    /// `ib` belongs to a `Device` whose state is initialised and is never
    /// used again after this call.
    pub(crate) unsafe fn drop_state(ib: *mut sys::ib_device) {
        // No walk of the list reaches the device once this returns.
        Registry::lock().remove(ib);
        let dev = ib.cast::<Self>();
        // INVARIANT: `dealloc_driver` is the last call the core makes into
        // the device, and the state is never used after it.
        // SAFETY: `ib` belongs to a `Device` whose state is initialised and
        // never used again (the caller's contract), so it is dropped once.
        unsafe { core::ptr::drop_in_place(core::ptr::addr_of_mut!((*dev).state)) };
    }
}

impl<S: DeviceData> Device<S> {
    /// Calls `f` on every device of the driver whose state is alive
    /// (process context, sleeps). The list stays locked meanwhile: `f`
    /// must not make a device, nor drop the last reference to one.
    pub(crate) fn for_each(mut f: impl FnMut(&Self)) {
        let list = Registry::lock();
        for &ib in list.devices().iter().filter(|&&d| d != 0) {
            // SAFETY: A device on the list is one of ours (the contract of
            // `DeviceData`: every device of the module has state `S`) whose
            // state is initialised: `drop_state` takes it off (under the
            // lock we hold) before dropping its state.
            f(unsafe { Self::from_ib(ib as *mut sys::ib_device) });
        }
    }
}

impl<S> Device<S> {
    pub(crate) fn state(&self) -> &S {
        &self.state
    }

    pub(crate) fn as_ib(&self) -> *mut sys::ib_device {
        self.ib.get()
    }

    /// The network device of port 1, if it still has one.
    pub(crate) fn netdev(&self) -> Option<NetDevice> {
        // SAFETY: The device is alive while borrowed, and port 1 is its one
        // port; the getter returns null or a netdev with a reference taken,
        // which `from_owned` takes over.
        unsafe { NetDevice::from_owned(sys::ib_device_get_netdev(self.as_ib(), 1)) }
    }

    /// Tells the RDMA core (and so its users) that the port changed state.
    pub(crate) fn dispatch_port_event(&self, event: PortEvent) {
        let mut ev = sys::ib_event {
            device: self.as_ib(),
            event: match event {
                PortEvent::Active => sys::ib_event_type_IB_EVENT_PORT_ACTIVE,
                PortEvent::Error => sys::ib_event_type_IB_EVENT_PORT_ERR,
            },
            ..Default::default()
        };
        ev.element.port_num = 1;
        // SAFETY: The event is fully initialised and the device is alive.
        unsafe { sys::ib_dispatch_event(&ev) };
    }

    /// The Ethernet speed and width the core derives from the netdev's link.
    pub(crate) fn eth_speed(&self) -> Result<(u16, u8)> {
        let (mut speed, mut width) = (0u16, 0u8);
        // SAFETY: The device is alive and the out pointers are valid.
        to_result(unsafe { sys::ib_get_eth_speed(self.as_ib(), 1, &mut speed, &mut width) })?;
        Ok((speed, width))
    }

    /// Schedules unregistration; safe from netdev notifiers (RTNL held).
    pub(crate) fn unregister_queued(&self) {
        // SAFETY: The device is registered and alive.
        unsafe { sys::ib_unregister_device_queued(self.as_ib()) };
    }
}

/// A counted reference on a registered device of this driver.
pub(crate) struct DeviceRef<S: DeviceData>(NonNull<Device<S>>);

// SAFETY: The RDMA core serialises its own updates of the `ib_device`, and
// the driver reaches it only through the core's functions (it is `Opaque`);
// the state is `Sync` (a `DeviceData` bound).
unsafe impl<S: Sync> Sync for Device<S> {}
// SAFETY: The core's part is used only through the core's functions, which
// work from any thread; the state is `Send`.
unsafe impl<S: Send> Send for Device<S> {}
// SAFETY: The reference count may be dropped from any context.
unsafe impl<S: DeviceData> Send for DeviceRef<S> {}
// SAFETY: `&DeviceRef` only gives `&Device`, which is `Sync`.
unsafe impl<S: DeviceData> Sync for DeviceRef<S> {}

impl<S: DeviceData> DeviceRef<S> {
    /// The rxe device bound to `ndev`, if there is one.
    pub(crate) fn by_netdev(ndev: &NetDevice) -> Option<Self> {
        // SAFETY: `ndev` is a live netdev (we hold a reference). The core
        // returns null or a device of this driver with a reference taken,
        // which `Self` owns; a registered device's state is initialised (the
        // type invariant of `Device`).
        let ib = unsafe {
            sys::ib_device_get_by_netdev(ndev.as_ptr(), sys::rdma_driver_id_RDMA_DRIVER_RXE)
        };
        NonNull::new(ib.cast::<Device<S>>()).map(Self)
    }

    /// A new reference on `dev`, unless it is already being unregistered.
    pub(crate) fn try_get(dev: &Device<S>) -> Option<Self> {
        // SAFETY: The device is alive while borrowed.
        unsafe { sys::rxe_rs_ib_device_try_get(dev.as_ib()) }.then(|| Self(NonNull::from(dev)))
    }
}

impl<S: DeviceData> core::ops::Deref for DeviceRef<S> {
    type Target = Device<S>;
    fn deref(&self) -> &Device<S> {
        // SAFETY: Our reference keeps the registered device, and so its
        // initialised state, alive.
        unsafe { self.0.as_ref() }
    }
}

impl<S: DeviceData> Drop for DeviceRef<S> {
    fn drop(&mut self) {
        // SAFETY: We own one reference, taken by `by_netdev` or `try_get`,
        // and give it back once.
        unsafe { sys::ib_device_put(self.0.as_ptr().cast()) };
    }
}

/// The devices of the driver, from the moment their ops are set (and
/// `dealloc_driver` will run) until `dealloc_driver` drops their state: for
/// the events that concern all of them, whatever netdev they are on (a
/// namespace's exit, any netdev's unregistration). The addresses of their
/// `ib_device`s, as numbers; 0 is a free slot.
struct Registry(UnsafeCell<KVec<usize>>);

// SAFETY: The vector is only reached through a `RegistryGuard`, which holds
// the C mutex `rxe_rs_devices_lock` takes.
unsafe impl Sync for Registry {}

static REGISTRY: Registry = Registry(UnsafeCell::new(KVec::new()));

/// The registry's mutex, held.
struct RegistryGuard(());

impl Registry {
    fn lock() -> RegistryGuard {
        // SAFETY: The helper takes a static C mutex; callers are in process
        // context, and the guard's drop releases it.
        unsafe { sys::rxe_rs_devices_lock() };
        RegistryGuard(())
    }
}

impl RegistryGuard {
    fn devices(&self) -> &KVec<usize> {
        // SAFETY: A guard exists only while the mutex is held, so no other
        // guard, and nothing else, reaches the vector; a `&mut` from
        // `devices_mut` would need this guard borrowed mutably.
        unsafe { &*REGISTRY.0.get() }
    }

    fn devices_mut(&mut self) -> &mut KVec<usize> {
        // SAFETY: A guard exists only while the mutex is held, so no other
        // guard, and nothing else, reaches the vector; `&mut self` makes
        // this the only reference through this guard.
        unsafe { &mut *REGISTRY.0.get() }
    }

    /// Puts `ib` in a free slot (0), or a new one.
    fn add(&mut self, ib: *mut sys::ib_device) -> Result {
        let list = self.devices_mut();
        match list.iter_mut().find(|d| **d == 0) {
            Some(d) => *d = ib as usize,
            None => list.push(ib as usize, GFP_KERNEL)?,
        }
        Ok(())
    }

    /// Frees the slot of `ib`, if it has one.
    fn remove(&mut self, ib: *mut sys::ib_device) {
        let list = self.devices_mut();
        if let Some(d) = list.iter_mut().find(|d| **d == ib as usize) {
            *d = 0;
        }
        // The last device gives the memory back (nothing is left behind at
        // module unload).
        if list.iter().all(|&d| d == 0) {
            *list = KVec::new();
        }
    }
}

impl Drop for RegistryGuard {
    fn drop(&mut self) {
        // SAFETY: A guard exists only once `Registry::lock` took the mutex,
        // and is dropped once.
        unsafe { sys::rxe_rs_devices_unlock() };
    }
}

/// Unregisters every device of this driver; used at module unload.
pub(crate) fn unregister_all() {
    // SAFETY: FFI; waits for all rxe devices to be gone.
    unsafe { sys::ib_unregister_driver(sys::rdma_driver_id_RDMA_DRIVER_RXE) };
}
