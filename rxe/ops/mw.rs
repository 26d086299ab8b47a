// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Entry points for the MW verbs. The core allocates `ib_mw` with room for
//! the driver's [`Mw`] after it.

use kernel::{error::from_result, ffi::c_int};

use super::device::dev;
use crate::rxe::kapi::alloc;
use crate::rxe::kapi::object::CoreObj;
use crate::rxe::mr::PdId;
use crate::rxe::mw::Mw;
use crate::rxe::sys;

pub(super) fn fill(ops: &mut sys::ib_device_ops) {
    ops.alloc_mw = Some(alloc_mw);
    ops.dealloc_mw = Some(dealloc_mw);
    ops.size_ib_mw = CoreObj::<sys::ib_mw, Mw>::SIZE;
}

/// `ib_device_ops.alloc_mw`.
///
/// # Safety
///
/// Called by the RDMA core only, with pointers to live objects of this
/// driver as the op's contract describes.
unsafe extern "C" fn alloc_mw(mw: *mut sys::ib_mw, _udata: *mut sys::ib_udata) -> c_int {
    from_result(|| {
        // SAFETY: The core hands a zeroed object of `size_ib_mw` bytes with
        // `device` set to one of our devices, which outlives its MWs.
        let dev = unsafe { dev((*mw).device) };
        // SAFETY: The core set `pd` and `type` in its fresh object before
        // the op and does not change them.
        let (pd, type_) = unsafe { ((*mw).pd, (*mw).type_) };
        // The PD's address is its identity (see `PdId`).
        let m = Mw::alloc(dev, PdId(pd as usize), type_)?;
        // SAFETY: The core's object, ours to fill in during the op: it reads
        // `rkey` only after it.
        unsafe { (*mw).rkey = m.rkey() };
        // Moving a ready value in cannot fail.
        // SAFETY: `mw` is the core's zeroed allocation of `size_ib_mw`
        // (`SIZE`) bytes, its driver part not initialised yet.
        unsafe { CoreObj::<sys::ib_mw, Mw>::init(mw, alloc::value(m)) }?;
        Ok(0)
    })
}

/// `ib_device_ops.dealloc_mw`.
///
/// # Safety
///
/// Called by the RDMA core only, with pointers to live objects of this
/// driver as the op's contract describes.
unsafe extern "C" fn dealloc_mw(mw: *mut sys::ib_mw) -> c_int {
    // SAFETY: Initialised by `alloc_mw`, alive until the core frees it after
    // this call.
    let obj = unsafe { CoreObj::<sys::ib_mw, Mw>::from_raw(mw) };
    obj.dealloc(obj.device());
    // SAFETY: Initialised by `alloc_mw`; the core frees the memory after we
    // return, so the driver part is dropped here, and `obj` is not used
    // again.
    unsafe { CoreObj::<sys::ib_mw, Mw>::destroy(mw) };
    0
}
