// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Entry points for the cq verbs.

use kernel::{
    error::{from_result, Result},
    ffi::c_int,
};

use super::device::dev;
use crate::rxe::cq::Cq;
use crate::rxe::kapi::alloc;
use crate::rxe::kapi::cq_srq::{ucontext, write_wc, UserCall};
use crate::rxe::kapi::object::CoreObj;
use crate::rxe::kapi::restrack::EntryMsg;
use crate::rxe::sys;

type Obj = CoreObj<sys::ib_cq, Cq>;

pub(super) fn fill(ops: &mut sys::ib_device_ops) {
    ops.create_cq = Some(create_cq);
    ops.destroy_cq = Some(destroy_cq);
    #[cfg(not(rxe_kernel_7))]
    {
        ops.resize_cq = Some(resize_cq);
    }
    // 7.x: the op is for user CQs only, with an unsigned size.
    #[cfg(rxe_kernel_7)]
    {
        ops.resize_user_cq = Some(resize_user_cq);
    }
    ops.poll_cq = Some(poll_cq);
    ops.peek_cq = Some(peek_cq);
    ops.req_notify_cq = Some(req_notify_cq);
    ops.fill_res_cq_entry = Some(fill_res_cq_entry);
    ops.fill_res_cq_entry_raw = Some(fill_res_cq_entry_raw);
    ops.size_ib_cq = Obj::SIZE;
}

/// Tells the core (and through it the verbs caller) the CQ's real size.
///
/// # Safety
///
/// `ibcq` is a live CQ of ours; the core reads `cqe` only after the verb.
unsafe fn set_cqe(ibcq: *mut sys::ib_cq, capacity: u32) {
    // At most `max_cqe` (32767): a CQ ring never exceeds it.
    let cqe = c_int::try_from(capacity).unwrap_or(c_int::MAX);
    // SAFETY: `ibcq` is a live CQ of ours (the caller's contract); the core
    // reads `cqe` only after the verb, so the write races with nothing.
    unsafe { (*ibcq).cqe = cqe };
}

/// `create_cq` op.
///
/// # Safety
///
/// Called by the RDMA core with a fresh `ib_cq` of `size_ib_cq` bytes and
/// the call's attributes.
unsafe extern "C" fn create_cq(
    ibcq: *mut sys::ib_cq,
    attr: *const sys::ib_cq_init_attr,
    attrs: *mut sys::uverbs_attr_bundle,
) -> c_int {
    from_result(|| {
        // SAFETY: The core hands a zeroed object of `size_ib_cq` bytes with
        // `device` set to one of our devices, which outlives its CQs.
        let dev = unsafe { dev((*ibcq).device) };
        // SAFETY: `attr` is valid for the call (the core's contract).
        let attr = unsafe { &*attr };
        // SAFETY: `attrs` is null for kernel callers or the bundle of this
        // uverbs call (the core's contract).
        let udata = unsafe { sys::rxe_rs_attrs_udata(attrs) };
        // SAFETY: `udata` is null or the driver udata of this call, whose
        // context is one of ours with its driver part.
        let user = unsafe { UserCall::from_raw(udata) }?;
        // The C driver takes `cqe` as an `int`: larger values turn
        // negative and are refused as such.
        let cq = Cq::new(dev, attr.cqe as i32, attr.flags, user.as_ref())?;
        let capacity = cq.capacity();
        // SAFETY: `ibcq` is the core's zeroed allocation of `size_ib_cq`
        // (`Obj::SIZE`) bytes, its driver part not initialised yet.
        unsafe { Obj::init(ibcq, alloc::value(cq)) }?;
        // SAFETY: Initialised just above; the core frees the CQ only after
        // `destroy_cq`, which this call precedes.
        let obj = unsafe { Obj::from_raw(ibcq) };
        // SAFETY: `destroy_cq` severs the link before the core frees the
        // CQ, which is live now.
        unsafe { obj.shared.link().attach(obj.handle()) };
        // SAFETY: A live CQ of ours, inside its create verb.
        unsafe { set_cqe(ibcq, capacity) };
        Ok(0)
    })
}

/// `destroy_cq` op.
///
/// # Safety
///
/// Called by the RDMA core on a CQ made by `create_cq`, once, with no other
/// op on it running.
unsafe extern "C" fn destroy_cq(ibcq: *mut sys::ib_cq, udata: *mut sys::ib_udata) -> c_int {
    from_result(|| {
        // SAFETY: Initialised by `create_cq`, alive until the core frees it
        // after this call.
        let cq = unsafe { Obj::from_raw(ibcq) };
        // SAFETY: `udata` is null or the call's driver udata, on a context
        // of ours.
        let ctx = unsafe { ucontext(udata) };
        cq.destroy(ctx)?;
        // SAFETY: Initialised by `create_cq`. The destroy goes ahead: the
        // core frees the memory after we return, so the driver part is
        // dropped here, and `cq` is not used again.
        unsafe { Obj::destroy(ibcq) };
        Ok(0)
    })
}

/// `resize_cq` op.
///
/// # Safety
///
/// Called by the RDMA core on a live CQ made by `create_cq`.
unsafe extern "C" fn resize_cq(
    ibcq: *mut sys::ib_cq,
    cqe: c_int,
    udata: *mut sys::ib_udata,
) -> c_int {
    from_result(|| {
        // SAFETY: `udata` is null or the call's driver udata, on a context
        // of ours.
        let user = unsafe { UserCall::from_raw(udata) }?;
        // SAFETY: A live CQ made by `create_cq`, for the call.
        let cq = unsafe { Obj::from_raw(ibcq) };
        let capacity = cq.resize(cqe, user.as_ref())?;
        // SAFETY: A live CQ of ours, inside the resize verb.
        unsafe { set_cqe(ibcq, capacity) };
        Ok(0)
    })
}

/// `resize_user_cq` op (7.x).
///
/// # Safety
///
/// Called by the RDMA core on a live CQ made by `create_cq`.
#[cfg(rxe_kernel_7)]
unsafe extern "C" fn resize_user_cq(
    ibcq: *mut sys::ib_cq,
    cqe: u32,
    udata: *mut sys::ib_udata,
) -> c_int {
    // Above `max_cqe` either way: let the CQ refuse it.
    let cqe = c_int::try_from(cqe).unwrap_or(c_int::MAX);
    // SAFETY: The core calls this on a live CQ made by `create_cq`, with
    // the call's udata: `resize_cq`'s contract.
    unsafe { resize_cq(ibcq, cqe, udata) }
}

/// `poll_cq` op (kernel consumers).
///
/// # Safety
///
/// Called on a live CQ made by `create_cq`, with room for `num_entries`
/// completions at `wc`.
unsafe extern "C" fn poll_cq(
    ibcq: *mut sys::ib_cq,
    num_entries: c_int,
    wc: *mut sys::ib_wc,
) -> c_int {
    // SAFETY: A live CQ made by `create_cq` (the core's contract), for the
    // call.
    let cq = unsafe { Obj::from_raw(ibcq) };
    let max = usize::try_from(num_entries).unwrap_or(0);
    let n = cq.shared.poll(max, |i, slot| {
        // SAFETY: The caller's array has room for `num_entries` entries and
        // `i` is below that.
        unsafe { write_wc(wc.add(i), slot) }
    });
    // At most `num_entries`, a `c_int`.
    n as c_int
}

/// `peek_cq` op.
///
/// # Safety
///
/// Called on a live CQ made by `create_cq`.
unsafe extern "C" fn peek_cq(ibcq: *mut sys::ib_cq, wc_cnt: c_int) -> c_int {
    // SAFETY: A live CQ made by `create_cq` (the core's contract), for the
    // call.
    let cq = unsafe { Obj::from_raw(ibcq) };
    let count = c_int::try_from(cq.shared.count()).unwrap_or(c_int::MAX);
    count.min(wc_cnt)
}

/// `req_notify_cq` op.
///
/// # Safety
///
/// Called on a live CQ made by `create_cq`.
unsafe extern "C" fn req_notify_cq(ibcq: *mut sys::ib_cq, flags: sys::ib_cq_notify_flags) -> c_int {
    // SAFETY: A live CQ made by `create_cq` (the core's contract), for the
    // call.
    let cq = unsafe { Obj::from_raw(ibcq) };
    cq.shared.req_notify(flags)
}

/// Runs `put` with the CQ `ibcq` and the message of its resource entry.
///
/// # Safety
///
/// As for [`fill_res_cq_entry`].
unsafe fn fill_cq_entry(
    msg: *mut sys::sk_buff,
    ibcq: *mut sys::ib_cq,
    put: impl FnOnce(&mut EntryMsg, &Cq) -> Result,
) -> c_int {
    from_result(|| {
        // SAFETY: A live CQ of ours (the caller's contract), for the call.
        let cq = unsafe { Obj::from_raw(ibcq) };
        // SAFETY: The core's message of a `fill_res_cq_entry*` op (the
        // caller's contract); `msg` does not outlive this call.
        let mut msg = unsafe { EntryMsg::from_raw(msg) };
        put(&mut msg, cq)?;
        Ok(0)
    })
}

/// `fill_res_cq_entry` op: the driver details of `rdma resource show cq`.
///
/// # Safety
///
/// Called by the RDMA core on a live CQ of this driver with the netlink
/// message of its entry.
unsafe extern "C" fn fill_res_cq_entry(msg: *mut sys::sk_buff, ibcq: *mut sys::ib_cq) -> c_int {
    // SAFETY: The core calls this on a live CQ of ours with the message of
    // its entry: the helper's contract.
    unsafe { fill_cq_entry(msg, ibcq, |m, cq| m.put_attrs(&cq.details().attrs())) }
}

/// `fill_res_cq_entry_raw` op: the same as one record (`-r`).
///
/// # Safety
///
/// As for [`fill_res_cq_entry`].
unsafe extern "C" fn fill_res_cq_entry_raw(msg: *mut sys::sk_buff, ibcq: *mut sys::ib_cq) -> c_int {
    // SAFETY: The core calls this on a live CQ of ours with the message of
    // its entry: the helper's contract.
    unsafe { fill_cq_entry(msg, ibcq, |m, cq| m.put_raw(&cq.details().raw())) }
}
