// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Entry points for the MW verbs. The core allocates `ib_mw` with room for
//! the driver's [`Mw`] after it.

use kernel::{error::from_result, ffi::c_int};

use super::device::dev;
use crate::rxe::kernel::alloc;
use crate::rxe::kernel::object::CoreObj;
use crate::rxe::mr::PdId;
use crate::rxe::mw::Mw;
use crate::rxe::sys as b;

pub(super) fn fill(ops: &mut b::ib_device_ops) {
    ops.alloc_mw = Some(alloc_mw);
    ops.dealloc_mw = Some(dealloc_mw);
    ops.size_ib_mw = CoreObj::<b::ib_mw, Mw>::SIZE;
}

/// `ib_device_ops.alloc_mw`.
///
/// # Safety
///
/// Called by the RDMA core only, with pointers to live objects of this
/// driver as the op's contract describes.
unsafe extern "C" fn alloc_mw(mw: *mut b::ib_mw, _udata: *mut b::ib_udata) -> c_int {
    from_result(|| {
        // SAFETY: The core hands a zeroed object of `size_ib_mw` bytes with
        // `device`, `pd` and `type` set, ours until `dealloc_mw`.
        unsafe {
            let dev = dev((*mw).device);
            // The PD's address is its identity (see `PdId`).
            let pd = PdId((*mw).pd as usize);
            let m = Mw::alloc(dev, pd, (*mw).type_)?;
            (*mw).rkey = m.rkey();
            // Moving a ready value in cannot fail.
            CoreObj::<b::ib_mw, Mw>::init(mw, alloc::value(m))?;
        }
        Ok(0)
    })
}

/// `ib_device_ops.dealloc_mw`.
///
/// # Safety
///
/// Called by the RDMA core only, with pointers to live objects of this
/// driver as the op's contract describes.
unsafe extern "C" fn dealloc_mw(mw: *mut b::ib_mw) -> c_int {
    // SAFETY: Initialised by `alloc_mw`; the core frees the memory after.
    unsafe {
        let obj = CoreObj::<b::ib_mw, Mw>::from_raw(mw);
        obj.dealloc(obj.device());
        CoreObj::<b::ib_mw, Mw>::destroy(mw);
    }
    0
}
