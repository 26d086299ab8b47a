// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Entry points for the AH verbs, and the `rdma_ah_attr` conversions the
//! QP verbs share.

use kernel::{error::from_result, ffi::c_int};

use super::device::dev;
use crate::rxe::ah::{Ah, CreateArgs};
use crate::rxe::kapi::alloc;
use crate::rxe::kapi::attr::ah_attr_from_raw;
use crate::rxe::kapi::object::CoreObj;
use crate::rxe::kapi::udata::Udata;
use crate::rxe::sys;

pub(super) fn fill(ops: &mut sys::ib_device_ops) {
    ops.create_ah = Some(create_ah);
    ops.create_user_ah = Some(create_ah);
    ops.modify_ah = Some(modify_ah);
    ops.query_ah = Some(query_ah);
    ops.destroy_ah = Some(destroy_ah);
    ops.size_ib_ah = CoreObj::<sys::ib_ah, Ah>::SIZE;
}

/// create_ah and create_user_ah of `ib_device_ops`.
///
/// # Safety
///
/// Called by the RDMA core with the zeroed AH allocation it made for this
/// device, a resolved init attribute and a null or valid udata.
unsafe extern "C" fn create_ah(
    ah: *mut sys::ib_ah,
    init: *mut sys::rdma_ah_init_attr,
    udata: *mut sys::ib_udata,
) -> c_int {
    from_result(|| {
        // SAFETY: The core hands a zeroed object of `size_ib_ah` bytes with
        // `device` set to one of our devices, which outlives its AHs.
        let dev = unsafe { dev((*ah).device) };
        // SAFETY: The caller's init attribute, valid for the call.
        let init = unsafe { &*init };
        // SAFETY: `udata` is null or a valid `ib_udata` for the call.
        let udata = unsafe { Udata::from_raw(udata) };
        let args = CreateArgs {
            // SAFETY: The core set `pd` in its fresh object before the create
            // op and does not change it.
            pd: unsafe { (*ah).pd } as usize,
            // SAFETY: `ah_attr` points to the AH attribute the core resolved,
            // valid for the call, with its GID attribute held meanwhile.
            attr: unsafe { ah_attr_from_raw(&*init.ah_attr) },
            sleepable: init.flags & sys::rdma_create_ah_flags_RDMA_CREATE_AH_SLEEPABLE != 0,
            udata: udata.as_ref(),
        };
        let obj = Ah::new(dev, args)?;
        // SAFETY: `ah` is the core's zeroed allocation of `size_ib_ah`
        // (`SIZE`) bytes, its driver part not initialised yet.
        unsafe { CoreObj::<sys::ib_ah, Ah>::init(ah, alloc::value(obj)) }?;
        Ok(0)
    })
}

/// modify_ah of `ib_device_ops`.
///
/// # Safety
///
/// Called by the RDMA core on a live AH of this driver with a resolved
/// attribute.
unsafe extern "C" fn modify_ah(ah: *mut sys::ib_ah, attr: *mut sys::rdma_ah_attr) -> c_int {
    from_result(|| {
        // SAFETY: A live AH made by `create_ah`, for the call.
        let ah = unsafe { CoreObj::<sys::ib_ah, Ah>::from_raw(ah) };
        // SAFETY: The AH attribute the core resolved, valid for the call,
        // with its GID attribute held meanwhile.
        let attr = unsafe { ah_attr_from_raw(&*attr) };
        ah.modify(&attr)?;
        Ok(0)
    })
}

/// query_ah of `ib_device_ops`.
///
/// # Safety
///
/// Called by the RDMA core on a live AH of this driver with a writable
/// attribute.
unsafe extern "C" fn query_ah(ah: *mut sys::ib_ah, attr: *mut sys::rdma_ah_attr) -> c_int {
    // SAFETY: A live AH made by `create_ah`, for the call.
    let ah = unsafe { CoreObj::<sys::ib_ah, Ah>::from_raw(ah) };
    // SAFETY: The caller's output attribute, valid and ours to write for the
    // call.
    let out = unsafe { &mut *attr };
    *out = (&ah.query()).into();
    0
}

/// destroy_ah of `ib_device_ops`.
///
/// # Safety
///
/// Called by the RDMA core on a live AH of this driver, which it frees
/// afterwards.
unsafe extern "C" fn destroy_ah(ah: *mut sys::ib_ah, _flags: u32) -> c_int {
    // SAFETY: Initialised by `create_ah`, alive until the core frees it
    // after this call.
    let obj = unsafe { CoreObj::<sys::ib_ah, Ah>::from_raw(ah) };
    obj.destroy(obj.device());
    // SAFETY: Initialised by `create_ah`; the core frees the memory after
    // we return, so the driver part is dropped here, and `obj` is not used
    // again.
    unsafe { CoreObj::<sys::ib_ah, Ah>::destroy(ah) };
    0
}
