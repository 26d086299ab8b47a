// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Verbs objects the RDMA core allocates with room for the driver's state.
//!
//! For PDs, CQs, QPs, SRQs, AHs, MWs and user contexts the core allocates
//! `size_ib_*` zeroed bytes, puts its `ib_*` struct at offset 0, calls the
//! driver's create op, and frees the memory after the destroy op. `CoreObj`
//! is that memory seen from Rust: the core's struct, then the driver's `T`.
//! The core's struct stays the core's: it changes it while the driver holds
//! references to the object, so Rust sees it only as [`Opaque`] and reads
//! the fields the core fixed at creation through raw pointers.

use core::{marker::PhantomData, mem::size_of, ptr::NonNull};

use kernel::{prelude::*, types::Opaque};

use super::ibdev::{Device, DeviceData};
use crate::rxe::sys;

/// A core struct that knows its device.
pub(crate) trait IbObject {
    /// The object's `device`.
    ///
    /// # Safety
    ///
    /// `this` points at a live object whose create op has been called.
    unsafe fn device_ptr(this: *const Self) -> *mut sys::ib_device;
}

macro_rules! ib_object {
    ($($t:ident),*) => {$(
        impl IbObject for sys::$t {
            unsafe fn device_ptr(this: *const Self) -> *mut sys::ib_device {
                // SAFETY: The object is live (contract); the core sets
                // `device` before the create op and never changes it.
                unsafe { core::ptr::addr_of!((*this).device).read() }
            }
        }
    )*};
}
ib_object!(
    ib_pd,
    ib_ucontext,
    ib_cq,
    ib_qp,
    ib_srq,
    ib_ah,
    ib_mw,
    ib_mr
);

/// # Invariants
///
/// `data` is initialised for as long as a reference to the object exists.
#[repr(C)]
pub(crate) struct CoreObj<I, T> {
    ib: Opaque<I>,
    data: T,
    _pin: PhantomData<core::marker::PhantomPinned>,
}

impl<I: IbObject, T> CoreObj<I, T> {
    /// The size to report in the ops table.
    pub(crate) const SIZE: usize = size_of::<Self>();

    /// Initialises the driver part of a core-allocated object.
    ///
    /// # Safety
    ///
    /// `raw` is the core's zeroed allocation of `SIZE` bytes for an object
    /// whose driver part is not initialised yet.
    pub(crate) unsafe fn init(raw: *mut I, data: impl PinInit<T, Error>) -> Result {
        let obj = raw.cast::<Self>();
        // INVARIANT: `data` is initialised here, in the create op, before the
        // core can hand out the object; on error the core frees the memory
        // without calling the destroy op, so nothing refers to it.
        // SAFETY: `raw` is the core's allocation of `SIZE` bytes (the
        // caller's contract) and `Self` is `repr(C)` with the core's struct
        // first, so `data`'s slot lies inside it, uninitialised; the core
        // never moves the object, so the slot is pinned.
        unsafe { super::alloc::init_at(data, core::ptr::addr_of_mut!((*obj).data)) }
    }

    /// Drops the driver part; the core frees the memory afterwards.
    ///
    /// # Safety
    ///
    /// `raw` was initialised by `init` and is not used again.
    pub(crate) unsafe fn destroy(raw: *mut I) {
        let obj = raw.cast::<Self>();
        // INVARIANT: The object is not used again (the caller's contract), so
        // no reference to it outlives the drop.
        // SAFETY: `data` was initialised by `init` and is not used again (the
        // caller's contract), so it is dropped exactly once.
        unsafe { core::ptr::drop_in_place(core::ptr::addr_of_mut!((*obj).data)) };
    }

    /// # Safety
    ///
    /// `raw` was initialised by `init` and stays alive for `'a`.
    pub(crate) unsafe fn from_raw<'a>(raw: *mut I) -> &'a Self {
        // SAFETY: `raw` was initialised by `init` and stays alive for `'a`
        // (the caller's contract), so by the type invariant `data` is
        // initialised for as long as the reference lives. `Self` is
        // `repr(C)` with the core's struct first, at `raw`'s address.
        unsafe { &*raw.cast::<Self>() }
    }

    /// The core's struct, for reading the fields it maintains.
    pub(crate) fn as_ib(&self) -> *mut I {
        self.ib.get()
    }

    pub(crate) fn device<S: DeviceData>(&self) -> &Device<S> {
        // SAFETY: The object is live while borrowed and its create op was
        // called; a device outlives every object created on it, and its
        // state is an `S` (the contract of `DeviceData`).
        unsafe { Device::from_ib(I::device_ptr(self.ib.get())) }
    }
}

impl<I, T> core::ops::Deref for CoreObj<I, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.data
    }
}

/// The address of a core object, carried by the driver where the C API wants
/// it back (the `qp` of a kernel `ib_wc`, the `ib_cq` of a completion
/// handler). Only this layer turns it back into a pointer.
pub(crate) struct Handle<I>(NonNull<I>);

impl<I> Clone for Handle<I> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<I> Copy for Handle<I> {}

// SAFETY: A handle is an address; using it is up to the code that made it,
// in this layer, under the lifetime rules of the object it names.
unsafe impl<I> Send for Handle<I> {}
// SAFETY: A handle is an address and has no interior mutability; code in
// this layer that turns it back into a pointer follows the object's
// lifetime rules whichever thread it runs on.
unsafe impl<I> Sync for Handle<I> {}

impl<I> Handle<I> {
    pub(crate) fn as_ptr(self) -> *mut I {
        self.0.as_ptr()
    }

    /// A number that identifies the object while it lives (PD identity
    /// checks compare these).
    pub(crate) fn id(self) -> usize {
        self.0.as_ptr() as usize
    }
}

impl<I: IbObject, T> CoreObj<I, T> {
    pub(crate) fn handle(&self) -> Handle<I> {
        Handle(NonNull::from(&self.ib).cast())
    }
}

/// The QP a kernel work completion names (`ib_wc.qp`).
pub(crate) type QpHandle = Handle<sys::ib_qp>;
