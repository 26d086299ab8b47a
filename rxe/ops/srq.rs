// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Entry points for the srq verbs.

use kernel::{error::from_result, ffi::c_int};

use super::device::dev;
use crate::rxe::kapi::alloc;
use crate::rxe::kapi::cq_srq::{ucontext, RecvWrList, UserCall};
use crate::rxe::kapi::object::CoreObj;
use crate::rxe::srq::{Attr, Srq};
use crate::rxe::sys;

type Obj = CoreObj<sys::ib_srq, Srq>;

pub(super) fn fill(ops: &mut sys::ib_device_ops) {
    ops.create_srq = Some(create_srq);
    ops.modify_srq = Some(modify_srq);
    ops.query_srq = Some(query_srq);
    ops.destroy_srq = Some(destroy_srq);
    ops.post_srq_recv = Some(post_srq_recv);
    ops.size_ib_srq = Obj::SIZE;
}

/// `create_srq` op.
///
/// # Safety
///
/// Called by the RDMA core with a fresh `ib_srq` of `size_ib_srq` bytes, its
/// init attributes and the call's udata.
unsafe extern "C" fn create_srq(
    ibsrq: *mut sys::ib_srq,
    init: *mut sys::ib_srq_init_attr,
    udata: *mut sys::ib_udata,
) -> c_int {
    from_result(|| {
        // SAFETY: The core hands a zeroed object of `size_ib_srq` bytes with
        // `device` set to one of our devices, which outlives its SRQs.
        let dev = unsafe { dev((*ibsrq).device) };
        // SAFETY: The caller's init attribute, valid and ours to update for
        // the call (the core's contract).
        let init = unsafe { &mut *init };
        // SAFETY: `udata` is null (kernel callers) or the call's driver
        // udata, on a context of ours.
        let user = unsafe { UserCall::from_raw(udata) }?;
        let mut attr = Attr::from(&init.attr);
        let basic = init.srq_type == sys::ib_srq_type_IB_SRQT_BASIC;
        // SAFETY: The core set the event handler in its fresh object before
        // the create op and does not change it.
        let has_handler = unsafe { (*ibsrq).event_handler }.is_some();
        let srq = Srq::new(dev, &mut attr, basic, has_handler, user.as_ref())?;
        init.attr.max_wr = attr.max_wr;
        init.attr.max_sge = attr.max_sge;
        // SAFETY: `ibsrq` is the core's zeroed allocation of `size_ib_srq`
        // (`Obj::SIZE`) bytes, its driver part not initialised yet.
        unsafe { Obj::init(ibsrq, alloc::value(srq)) }?;
        // SAFETY: Initialised just above; the core frees the SRQ only after
        // `destroy_srq`, which this call precedes.
        let obj = unsafe { Obj::from_raw(ibsrq) };
        // SAFETY: `destroy_srq` severs the link before the core frees the
        // SRQ, which is live now.
        unsafe { obj.shared.link().attach(obj.handle()) };
        Ok(0)
    })
}

/// `modify_srq` op.
///
/// # Safety
///
/// Called by the RDMA core on a live SRQ made by `create_srq`.
unsafe extern "C" fn modify_srq(
    ibsrq: *mut sys::ib_srq,
    attr: *mut sys::ib_srq_attr,
    mask: sys::ib_srq_attr_mask,
    udata: *mut sys::ib_udata,
) -> c_int {
    from_result(|| {
        // SAFETY: A live SRQ made by `create_srq`, for the call.
        let srq = unsafe { Obj::from_raw(ibsrq) };
        // SAFETY: The caller's attribute, valid and ours to update for the
        // call.
        let attr = unsafe { &mut *attr };
        // SAFETY: `udata` is null (kernel callers) or the call's driver
        // udata, on a context of ours.
        let user = unsafe { UserCall::from_raw(udata) }?;
        let mut a = Attr::from(&*attr);
        srq.modify(mask, &mut a, user.as_ref())?;
        attr.max_wr = a.max_wr;
        Ok(0)
    })
}

/// `query_srq` op.
///
/// # Safety
///
/// Called by the RDMA core on a live SRQ made by `create_srq`.
unsafe extern "C" fn query_srq(ibsrq: *mut sys::ib_srq, attr: *mut sys::ib_srq_attr) -> c_int {
    // SAFETY: A live SRQ made by `create_srq`, for the call.
    let srq = unsafe { Obj::from_raw(ibsrq) };
    // SAFETY: The caller's output attribute, valid and ours to write for the
    // call.
    let attr = unsafe { &mut *attr };
    *attr = (&srq.query()).into();
    0
}

/// `destroy_srq` op.
///
/// # Safety
///
/// Called by the RDMA core on an SRQ made by `create_srq`, once, with no
/// other op on it running.
unsafe extern "C" fn destroy_srq(ibsrq: *mut sys::ib_srq, udata: *mut sys::ib_udata) -> c_int {
    // SAFETY: Initialised by `create_srq`, alive until the core frees it
    // after this call.
    let srq = unsafe { Obj::from_raw(ibsrq) };
    // SAFETY: `udata` is null or the call's driver udata, on a context of
    // ours.
    let ctx = unsafe { ucontext(udata) };
    srq.destroy(srq.device(), ctx);
    // SAFETY: Initialised by `create_srq`; the core frees the memory after
    // we return, so the driver part is dropped here, and `srq` is not used
    // again.
    unsafe { Obj::destroy(ibsrq) };
    0
}

/// `post_srq_recv` op (kernel users).
///
/// # Safety
///
/// Called on a live SRQ made by `create_srq` with a valid chain of work
/// requests and a place for the failed one.
unsafe extern "C" fn post_srq_recv(
    ibsrq: *mut sys::ib_srq,
    wr: *const sys::ib_recv_wr,
    bad_wr: *mut *const sys::ib_recv_wr,
) -> c_int {
    // SAFETY: A live SRQ made by `create_srq`, for the call.
    let srq = unsafe { Obj::from_raw(ibsrq) };
    // SAFETY: The kernel caller's chain of work requests is valid for the
    // call, each with `num_sge` entries in its `sg_list`.
    let wrs = unsafe { RecvWrList::from_raw(wr) };
    match srq.shared.post_recv(wrs) {
        Ok(()) => 0,
        Err((e, failed)) => {
            // SAFETY: The core passes a valid, writable place for the
            // failed request.
            unsafe { *bad_wr = failed.as_ptr() };
            e.to_errno()
        }
    }
}
