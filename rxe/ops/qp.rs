// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Entry points for the QP verbs: create, modify, query, destroy, post and
//! multicast attach/detach.

use kernel::{
    error::{from_result, Result},
    ffi::c_int,
    sync::Arc,
};

use super::device::dev;
use crate::rxe::cq::Cq;
use crate::rxe::kapi::alloc;
use crate::rxe::kapi::attr::{modify_attr_from_raw, write_caps};
use crate::rxe::kapi::cq_srq::ucontext;
use crate::rxe::kapi::object::CoreObj;
use crate::rxe::kapi::restrack::EntryMsg;
use crate::rxe::kapi::udata::Udata;
use crate::rxe::kapi::wr::{RecvWrs, SendWrs};
use crate::rxe::proto::qp::AttrMask;
use crate::rxe::proto::qp_attr::{Caps, InitAttr};
use crate::rxe::qp::{CreateArgs, Qp};
use crate::rxe::srq::Srq;
use crate::rxe::sys;
use crate::rxe::{cq, srq};

pub(super) fn fill(ops: &mut sys::ib_device_ops) {
    ops.create_qp = Some(create_qp);
    ops.modify_qp = Some(modify_qp);
    ops.query_qp = Some(query_qp);
    ops.fill_res_qp_entry = Some(fill_res_qp_entry);
    ops.fill_res_qp_entry_raw = Some(fill_res_qp_entry_raw);
    ops.destroy_qp = Some(destroy_qp);
    ops.post_send = Some(post_send);
    ops.post_recv = Some(post_recv);
    ops.attach_mcast = Some(attach_mcast);
    ops.detach_mcast = Some(detach_mcast);
    ops.size_ib_qp = CoreObj::<sys::ib_qp, Qp>::SIZE;
}

/// # Safety
///
/// `raw` is null or a live CQ of this driver.
unsafe fn cq_shared(raw: *mut sys::ib_cq) -> Option<Arc<cq::CqShared>> {
    if raw.is_null() {
        return None;
    }
    // SAFETY: `raw` is non-null (checked), so a live CQ of this driver (the
    // caller's contract), made by `create_cq`; the borrow ends with the
    // clone of its `Arc`.
    let cq = unsafe { CoreObj::<sys::ib_cq, Cq>::from_raw(raw) };
    Some(cq.shared.clone())
}

/// # Safety
///
/// `raw` is null or a live SRQ of this driver.
unsafe fn srq_shared(raw: *mut sys::ib_srq) -> Option<Arc<srq::SrqShared>> {
    if raw.is_null() {
        return None;
    }
    // SAFETY: `raw` is non-null (checked), so a live SRQ of this driver
    // (the caller's contract), made by `create_srq`; the borrow ends with
    // the clone of its `Arc`.
    let srq = unsafe { CoreObj::<sys::ib_srq, Srq>::from_raw(raw) };
    Some(srq.shared.clone())
}

/// create_qp of `ib_device_ops`.
///
/// # Safety
///
/// Called by the RDMA core with the zeroed QP allocation it made for this
/// device, the caller's init attribute and a null or valid udata.
unsafe extern "C" fn create_qp(
    ibqp: *mut sys::ib_qp,
    init: *mut sys::ib_qp_init_attr,
    udata: *mut sys::ib_udata,
) -> c_int {
    from_result(|| {
        // SAFETY: The caller's init attribute, valid and ours to update for
        // the call (the core's contract).
        let init = unsafe { &mut *init };
        // SAFETY: The init attribute's CQs and SRQ are null or live objects
        // of this device, which the core holds for the call.
        let (scq, rcq, srq) = unsafe {
            (
                cq_shared(init.send_cq),
                cq_shared(init.recv_cq),
                srq_shared(init.srq),
            )
        };
        // SAFETY: The core hands a zeroed object of `size_ib_qp` bytes with
        // `device` set to one of our devices, which outlives its QPs.
        let dev = unsafe { dev((*ibqp).device) };
        // SAFETY: `udata` is null or the call's driver udata, on a context
        // of ours.
        let uc = unsafe { ucontext(udata) };
        // SAFETY: `udata` is null or a valid `ib_udata` for the call.
        let u = unsafe { Udata::from_raw(udata) };
        let args = CreateArgs {
            init: InitAttr {
                qp_type: init.qp_type,
                create_flags: init.create_flags,
                has_send_cq: scq.is_some(),
                has_recv_cq: rcq.is_some(),
                has_srq: srq.is_some(),
                cap: Caps::from(&init.cap),
                port_num: init.port_num,
            },
            sig_all: init.sq_sig_type == sys::ib_sig_type_IB_SIGNAL_ALL_WR,
            // SAFETY: The core set `pd` in its fresh object before the
            // create op and does not change it; the address names the PD
            // while it lives.
            pd: unsafe { (*ibqp).pd } as usize,
            send_cq: scq,
            recv_cq: rcq,
            srq,
            udata: u.as_ref(),
            ucontext: uc,
        };
        let (obj, caps) = Qp::new(dev, args)?;
        let qpn = obj.shared.qpn;
        // SAFETY: `ibqp` is the core's zeroed allocation of `size_ib_qp`
        // (`SIZE`) bytes, its driver part not initialised yet.
        unsafe { CoreObj::<sys::ib_qp, Qp>::init(ibqp, alloc::value(obj)) }?;
        // SAFETY: Initialised just above; the core frees the QP only after
        // `destroy_qp`, which this call precedes.
        let obj = unsafe { CoreObj::<sys::ib_qp, Qp>::from_raw(ibqp) };
        // SAFETY: `destroy_qp` revokes the event link before the core frees
        // the object.
        unsafe { obj.shared.link.attach(obj) };
        // SAFETY: The core's object, ours to fill in during the create op:
        // it reads `qp_num` only after it.
        unsafe { (*ibqp).qp_num = qpn };
        write_caps(&caps, &mut init.cap);
        Ok(0)
    })
}

/// modify_qp of `ib_device_ops`.
///
/// # Safety
///
/// Called by the RDMA core on a live QP of this driver with the caller's
/// attribute, whose AH attributes it resolved where the mask sets them.
unsafe extern "C" fn modify_qp(
    ibqp: *mut sys::ib_qp,
    attr: *mut sys::ib_qp_attr,
    mask: c_int,
    _udata: *mut sys::ib_udata,
) -> c_int {
    from_result(|| {
        // The mask is a bit set; a negative int has bits rxe rejects.
        let mask = AttrMask(mask as u32);
        // SAFETY: The caller's attribute, valid for the call, whose AH
        // attributes the core resolved where the mask sets them.
        let m = unsafe { modify_attr_from_raw(&*attr, mask) };
        // SAFETY: A live QP made by `create_qp`, for the call.
        let qp = unsafe { CoreObj::<sys::ib_qp, Qp>::from_raw(ibqp) };
        qp.modify(mask, &m)?;
        Ok(0)
    })
}

/// query_qp of `ib_device_ops`.
///
/// # Safety
///
/// Called by the RDMA core on a live QP of this driver with writable
/// output structures.
unsafe extern "C" fn query_qp(
    ibqp: *mut sys::ib_qp,
    attr: *mut sys::ib_qp_attr,
    _mask: c_int,
    init: *mut sys::ib_qp_init_attr,
) -> c_int {
    // SAFETY: A live QP made by `create_qp`, for the call.
    let obj = unsafe { CoreObj::<sys::ib_qp, Qp>::from_raw(ibqp) };
    // SAFETY: The caller's output structures, distinct, valid and ours to
    // write for the call.
    let (out, init) = unsafe { (&mut *attr, &mut *init) };
    let q = obj.query();
    *out = (&q.attrs, &q.cap).into();

    let ib = obj.as_ib();
    // SAFETY: The QP is live; the core set these fields when it created it
    // and does not change them afterwards.
    unsafe {
        init.event_handler = (*ib).event_handler;
        init.qp_context = (*ib).qp_context;
        init.send_cq = (*ib).send_cq;
        init.recv_cq = (*ib).recv_cq;
        init.srq = (*ib).srq;
    }
    write_caps(&q.cap, &mut init.cap);
    if !init.srq.is_null() {
        // With an SRQ the receive caps of the init attribute are left alone.
        init.cap.max_recv_wr = 0;
        init.cap.max_recv_sge = 0;
    }
    init.sq_sig_type = if q.sig_all {
        sys::ib_sig_type_IB_SIGNAL_ALL_WR
    } else {
        sys::ib_sig_type_IB_SIGNAL_REQ_WR
    };
    init.qp_type = q.qp_type.as_raw();
    init.port_num = 1;
    0
}

/// Runs `put` with the QP `ibqp` and the message of its resource entry.
///
/// # Safety
///
/// As for [`fill_res_qp_entry`].
unsafe fn fill_qp_entry(
    msg: *mut sys::sk_buff,
    ibqp: *mut sys::ib_qp,
    put: impl FnOnce(&mut EntryMsg, &Qp) -> Result,
) -> c_int {
    from_result(|| {
        // SAFETY: A live QP of ours (the caller's contract), for the call.
        let obj = unsafe { CoreObj::<sys::ib_qp, Qp>::from_raw(ibqp) };
        // SAFETY: The core's message of a `fill_res_qp_entry*` op (the
        // caller's contract); `msg` does not outlive this call.
        let mut msg = unsafe { EntryMsg::from_raw(msg) };
        put(&mut msg, obj)?;
        Ok(0)
    })
}

/// fill_res_qp_entry of `ib_device_ops`: the driver details of `rdma
/// resource show qp`.
///
/// # Safety
///
/// Called by the RDMA core on a live QP of this driver with the netlink
/// message of its entry.
unsafe extern "C" fn fill_res_qp_entry(msg: *mut sys::sk_buff, ibqp: *mut sys::ib_qp) -> c_int {
    // SAFETY: The core calls this on a live QP of ours with the message of
    // its entry: the helper's contract.
    unsafe { fill_qp_entry(msg, ibqp, |m, qp| m.put_attrs(&qp.details().attrs())) }
}

/// fill_res_qp_entry_raw of `ib_device_ops`: the same as one record (`-r`).
///
/// # Safety
///
/// As for [`fill_res_qp_entry`].
unsafe extern "C" fn fill_res_qp_entry_raw(msg: *mut sys::sk_buff, ibqp: *mut sys::ib_qp) -> c_int {
    // SAFETY: The core calls this on a live QP of ours with the message of
    // its entry: the helper's contract.
    unsafe { fill_qp_entry(msg, ibqp, |m, qp| m.put_raw(&qp.details().raw())) }
}

/// destroy_qp of `ib_device_ops`.
///
/// # Safety
///
/// Called by the RDMA core on a live QP of this driver, which it frees
/// when this returns 0.
unsafe extern "C" fn destroy_qp(ibqp: *mut sys::ib_qp, udata: *mut sys::ib_udata) -> c_int {
    from_result(|| {
        // SAFETY: A live QP made by `create_qp`, alive until the core frees
        // it after this call.
        let obj = unsafe { CoreObj::<sys::ib_qp, Qp>::from_raw(ibqp) };
        // SAFETY: `udata` is null or the call's driver udata, on a context
        // of ours.
        let uc = unsafe { ucontext(udata) };
        obj.destroy(obj.device(), uc)?;
        obj.shared.link.revoke();
        // SAFETY: Initialised by `create_qp` and unreachable now (the link
        // is revoked, `obj` not used again); the core frees the memory
        // after.
        unsafe { CoreObj::<sys::ib_qp, Qp>::destroy(ibqp) };
        Ok(0)
    })
}

/// post_send of `ib_device_ops`.
///
/// # Safety
///
/// Called by the RDMA core on a live QP of this driver with a null or valid
/// WR chain typed for the QP and a writable `bad_wr`.
unsafe extern "C" fn post_send(
    ibqp: *mut sys::ib_qp,
    wr: *const sys::ib_send_wr,
    bad_wr: *mut *const sys::ib_send_wr,
) -> c_int {
    // SAFETY: A live QP made by `create_qp`, for the call.
    let qp = unsafe { CoreObj::<sys::ib_qp, Qp>::from_raw(ibqp) };
    // SAFETY: The chain is the caller's, valid for the call and typed by
    // the QP's type, as the verbs API requires.
    let wrs = unsafe { SendWrs::new(wr, qp.shared.qp_type.is_datagram()) };
    match qp.post_send(wrs) {
        Ok(()) => 0,
        Err((e, n)) => {
            // SAFETY: `wr` is null or the head of the caller's chain, valid
            // for the call; `bad_wr` is the caller's writable out pointer.
            unsafe { *bad_wr = nth(wr, n, |w| w.next) };
            e.to_errno()
        }
    }
}

/// post_recv of `ib_device_ops`.
///
/// # Safety
///
/// Called by the RDMA core on a live QP of this driver with a null or valid
/// WR chain and a writable `bad_wr`.
unsafe extern "C" fn post_recv(
    ibqp: *mut sys::ib_qp,
    wr: *const sys::ib_recv_wr,
    bad_wr: *mut *const sys::ib_recv_wr,
) -> c_int {
    // SAFETY: A live QP made by `create_qp`, for the call.
    let qp = unsafe { CoreObj::<sys::ib_qp, Qp>::from_raw(ibqp) };
    // SAFETY: The chain is the caller's, valid for the call, each WR with
    // `num_sge` entries in its `sg_list`.
    let wrs = unsafe { RecvWrs::new(wr) };
    match qp.post_recv(wrs) {
        Ok(()) => 0,
        Err((e, n)) => {
            // SAFETY: `wr` is null or the head of the caller's chain, valid
            // for the call; `bad_wr` is the caller's writable out pointer.
            unsafe { *bad_wr = nth(wr, n, |w| w.next) };
            e.to_errno()
        }
    }
}

/// The `n`th WR of a chain (null past its end).
///
/// # Safety
///
/// `first` is null or the head of a valid chain linked by `next`.
unsafe fn nth<W>(first: *const W, n: usize, next: impl Fn(&W) -> *mut W) -> *const W {
    let mut w = first;
    for _ in 0..n {
        // SAFETY: `w` is null or a member of a valid chain (the caller's
        // contract): the head, or the `next` of a member.
        match unsafe { w.as_ref() } {
            Some(cur) => w = next(cur),
            None => break,
        }
    }
    w
}

/// attach_mcast of `ib_device_ops`.
///
/// # Safety
///
/// Called by the RDMA core on a live QP of this driver with a valid GID.
unsafe extern "C" fn attach_mcast(
    ibqp: *mut sys::ib_qp,
    gid: *mut sys::ib_gid,
    _lid: u16,
) -> c_int {
    from_result(|| {
        // SAFETY: A live QP made by `create_qp`, for the call.
        let qp = unsafe { CoreObj::<sys::ib_qp, Qp>::from_raw(ibqp) };
        // SAFETY: The caller's GID, valid for the call; every bit pattern
        // is a valid `raw` GID.
        let mgid = unsafe { (*gid).raw };
        qp.attach_mcast(qp.device(), &mgid)?;
        Ok(0)
    })
}

/// detach_mcast of `ib_device_ops`.
///
/// # Safety
///
/// Called by the RDMA core on a live QP of this driver with a valid GID.
unsafe extern "C" fn detach_mcast(
    ibqp: *mut sys::ib_qp,
    gid: *mut sys::ib_gid,
    _lid: u16,
) -> c_int {
    from_result(|| {
        // SAFETY: A live QP made by `create_qp`, for the call.
        let qp = unsafe { CoreObj::<sys::ib_qp, Qp>::from_raw(ibqp) };
        // SAFETY: The caller's GID, valid for the call; every bit pattern
        // is a valid `raw` GID.
        let mgid = unsafe { (*gid).raw };
        qp.detach_mcast(qp.device(), &mgid)?;
        Ok(0)
    })
}
