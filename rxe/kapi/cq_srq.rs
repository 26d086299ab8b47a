// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! What CQs and SRQs need from the RDMA core beyond their ops table: the
//! callbacks the core installs in its objects (completion handler, async
//! events), kernel work completions (`struct ib_wc`), kernel receive work
//! request lists, and the user context a verb runs in.

use core::mem::{offset_of, size_of};

use kernel::{prelude::*, sync::lock::Guard};

use super::lock::{new_spinlock_bh, SpinLockBh, SpinLockBhBackend};
use super::object::{CoreObj, Handle, QpHandle};
use super::udata::Udata;
use crate::rxe::proto::cq_srq::RecvNet;
use crate::rxe::proto::uapi::{wc_flags, Cqe, Sge, CQE_LEN};
use crate::rxe::sys;

/// A core object seen from driver state that may outlive it (an `Arc` that
/// QPs or the datapath hold), for calling the callbacks the core installed
/// in it. The object's destroy op severs the link before the core frees the
/// object; callbacks run under the link's lock, so none is still running
/// when the destroy op returns.
///
/// # Invariants
///
/// While the lock holds `Some(h)`, `h` names a live core object.
#[pin_data]
pub(crate) struct CoreLink<I> {
    #[pin]
    h: SpinLockBh<Option<Handle<I>>>,
}

/// The link of a CQ to its `ib_cq`.
pub(crate) type CqLink = CoreLink<sys::ib_cq>;
/// The link of an SRQ to its `ib_srq`.
pub(crate) type SrqLink = CoreLink<sys::ib_srq>;

// One constructor per object type, so each kind of link is a lock class
// of its own for lockdep.
impl CoreLink<sys::ib_cq> {
    /// A link to nothing yet; `attach` connects it.
    pub(crate) fn new() -> impl PinInit<Self> {
        // INVARIANT: The lock holds `None`, which names nothing.
        pin_init!(Self {
            h <- new_spinlock_bh!(None, "rxe_cq_link"),
        })
    }
}

impl CoreLink<sys::ib_srq> {
    /// A link to nothing yet; `attach` connects it.
    pub(crate) fn new() -> impl PinInit<Self> {
        // INVARIANT: The lock holds `None`, which names nothing.
        pin_init!(Self {
            h <- new_spinlock_bh!(None, "rxe_srq_link"),
        })
    }
}

impl<I> CoreLink<I> {
    /// Connects the link to the core object `h`.
    ///
    /// # Safety
    ///
    /// `h` names a live core object, and `sever` is called before the core
    /// frees it.
    pub(crate) unsafe fn attach(&self, h: Handle<I>) {
        // INVARIANT: `h` names a live core object and the link is severed
        // before the core frees it (the caller's contract).
        *self.h.lock() = Some(h);
    }

    /// Disconnects the link; waits for callbacks in flight through it.
    pub(crate) fn sever(&self) {
        // INVARIANT: `None` names nothing.
        *self.h.lock() = None;
    }

    /// Holds the link connected (or not) while the guard lives.
    pub(crate) fn lock(&self) -> LinkGuard<'_, I> {
        LinkGuard(self.h.lock())
    }
}

/// A locked [`CoreLink`]: the object it names stays alive meanwhile.
pub(crate) struct LinkGuard<'a, I>(Guard<'a, Option<Handle<I>>, SpinLockBhBackend>);

impl LinkGuard<'_, sys::ib_cq> {
    /// Runs the consumer's completion handler (`ib_cq->comp_handler`).
    pub(crate) fn comp_handler(&self) {
        let Some(h) = *self.0 else { return };
        let cq = h.as_ptr();
        // SAFETY: The guard holds the link's lock, so by the type invariant
        // of `CoreLink` the CQ is alive. The core sets the handler and its
        // context before any completion can be queued and does not change
        // them afterwards, so the reads race with no writer.
        let (ctx, handler) = unsafe {
            (
                core::ptr::addr_of!((*cq).cq_context).read(),
                core::ptr::addr_of!((*cq).comp_handler).read(),
            )
        };
        if let Some(f) = handler {
            // SAFETY: `f` is the handler the consumer installed for this
            // CQ; it takes the live CQ and the context installed with it.
            unsafe { f(cq, ctx) };
        }
    }

    /// Reports `IB_EVENT_CQ_ERR` (an overrun) to the CQ's event handler.
    pub(crate) fn overrun_event(&self) {
        let Some(h) = *self.0 else { return };
        let cq = h.as_ptr();
        // SAFETY: The guard holds the link's lock, so by the type invariant
        // of `CoreLink` the CQ is alive. The core sets `device`, the event
        // handler and its context before the create op and does not change
        // them afterwards.
        let (device, ctx, handler) = unsafe {
            (
                core::ptr::addr_of!((*cq).device).read(),
                core::ptr::addr_of!((*cq).cq_context).read(),
                core::ptr::addr_of!((*cq).event_handler).read(),
            )
        };
        let mut ev = sys::ib_event {
            device,
            element: sys::ib_event__bindgen_ty_1 { cq },
            event: sys::ib_event_type_IB_EVENT_CQ_ERR,
        };
        if let Some(f) = handler {
            // SAFETY: `f` is the handler the consumer installed for this
            // CQ; it takes an event that lives for the call (on our stack)
            // and the context installed with it.
            unsafe { f(&mut ev, ctx) };
        }
    }
}

impl LinkGuard<'_, sys::ib_srq> {
    /// Reports `IB_EVENT_SRQ_LIMIT_REACHED` to the SRQ's event handler.
    pub(crate) fn limit_event(&self) {
        let Some(h) = *self.0 else { return };
        let srq = h.as_ptr();
        // SAFETY: The guard holds the link's lock, so by the type invariant
        // of `CoreLink` the SRQ is alive. The core sets `device`, the event
        // handler and its context before the create op and does not change
        // them afterwards.
        let (device, ctx, handler) = unsafe {
            (
                core::ptr::addr_of!((*srq).device).read(),
                core::ptr::addr_of!((*srq).srq_context).read(),
                core::ptr::addr_of!((*srq).event_handler).read(),
            )
        };
        let mut ev = sys::ib_event {
            device,
            element: sys::ib_event__bindgen_ty_1 { srq },
            event: sys::ib_event_type_IB_EVENT_SRQ_LIMIT_REACHED,
        };
        if let Some(f) = handler {
            // SAFETY: `f` is the handler the consumer installed for this
            // SRQ; it takes an event that lives for the call (on our stack)
            // and the context installed with it.
            unsafe { f(&mut ev, ctx) };
        }
    }
}

// A kernel CQ slot holds one `struct ib_wc`, the size `CQE_LEN` describes.
const _: () = assert!(size_of::<sys::ib_wc>() == CQE_LEN);

fn put(buf: &mut [u8; CQE_LEN], off: usize, bytes: &[u8]) {
    // Offsets come from `offset_of!` on `ib_wc`, whose size is `CQE_LEN`.
    if let Some(dst) = buf.get_mut(off..off + bytes.len()) {
        dst.copy_from_slice(bytes);
    }
}

/// The completion `cqe` as a kernel consumer reads it: the bytes of a
/// `struct ib_wc` naming `qp`. Receive completions carry `net`.
pub(crate) fn kernel_wc(cqe: &Cqe, qp: QpHandle, net: Option<RecvNet>) -> [u8; CQE_LEN] {
    let mut w = [0u8; CQE_LEN];
    let mut flags = cqe.wc_flags;
    let (mut hdr_type, mut vlan) = (0u8, 0u16);
    if let Some(net) = net {
        flags |= wc_flags::WITH_NETWORK_HDR_TYPE;
        hdr_type = net.network_hdr_type();
        if let Some(id) = net.vlan_id {
            flags |= wc_flags::WITH_VLAN;
            vlan = id;
        }
    }
    // The address goes back to the consumer, which owns the QP.
    let qp_addr = qp.as_ptr() as usize;
    put(
        &mut w,
        offset_of!(sys::ib_wc, __bindgen_anon_1),
        &cqe.wr_id.to_ne_bytes(),
    );
    put(
        &mut w,
        offset_of!(sys::ib_wc, status),
        &cqe.status.as_raw().to_ne_bytes(),
    );
    put(
        &mut w,
        offset_of!(sys::ib_wc, opcode),
        &cqe.opcode.as_raw().to_ne_bytes(),
    );
    put(
        &mut w,
        offset_of!(sys::ib_wc, vendor_err),
        &cqe.vendor_err.to_ne_bytes(),
    );
    put(
        &mut w,
        offset_of!(sys::ib_wc, byte_len),
        &cqe.byte_len.to_ne_bytes(),
    );
    put(&mut w, offset_of!(sys::ib_wc, qp), &qp_addr.to_ne_bytes());
    put(&mut w, offset_of!(sys::ib_wc, ex), &cqe.ex.to_ne_bytes());
    put(
        &mut w,
        offset_of!(sys::ib_wc, src_qp),
        &cqe.src_qp.to_ne_bytes(),
    );
    put(
        &mut w,
        offset_of!(sys::ib_wc, slid),
        &u32::from(cqe.slid).to_ne_bytes(),
    );
    put(
        &mut w,
        offset_of!(sys::ib_wc, wc_flags),
        &flags.to_ne_bytes(),
    );
    put(
        &mut w,
        offset_of!(sys::ib_wc, pkey_index),
        &cqe.pkey_index.to_ne_bytes(),
    );
    put(&mut w, offset_of!(sys::ib_wc, sl), &[cqe.sl]);
    put(
        &mut w,
        offset_of!(sys::ib_wc, dlid_path_bits),
        &[cqe.dlid_path_bits],
    );
    put(
        &mut w,
        offset_of!(sys::ib_wc, port_num),
        &u32::from(cqe.port_num).to_ne_bytes(),
    );
    put(&mut w, offset_of!(sys::ib_wc, vlan_id), &vlan.to_ne_bytes());
    put(
        &mut w,
        offset_of!(sys::ib_wc, network_hdr_type),
        &[hdr_type],
    );
    w
}

/// Copies a kernel CQ slot out to the consumer's `ib_wc` array.
///
/// # Safety
///
/// `wc` is valid for writing one `struct ib_wc`.
pub(crate) unsafe fn write_wc(wc: *mut sys::ib_wc, slot: &[u8; CQE_LEN]) {
    // SAFETY: `wc` is valid for writing one `struct ib_wc` (the caller's
    // contract), `CQE_LEN` bytes (checked at compile time above); `slot` is
    // our own array, so the two do not overlap. Every field of `ib_wc` is an
    // integer or a pointer, valid for any bits; these were built by
    // `kernel_wc`.
    unsafe { core::ptr::copy_nonoverlapping(slot.as_ptr(), wc.cast::<u8>(), CQE_LEN) };
}

/// One receive work request of a kernel user (`struct ib_recv_wr`).
///
/// # Invariants
///
/// `wr` points to a work request whose `sg_list` holds `num_sge` entries,
/// valid for as long as this value is used (the post call).
pub(crate) struct RecvWr {
    wr: *const sys::ib_recv_wr,
}

impl RecvWr {
    pub(crate) fn wr_id(&self) -> u64 {
        // SAFETY: `wr` is valid by the type invariant; every member of the
        // union is 64 bits, so reading it as `wr_id` is sound.
        unsafe { (*self.wr).__bindgen_anon_1.wr_id }
    }

    /// The SGE count as the caller gave it (a C `int`, maybe negative).
    pub(crate) fn num_sge(&self) -> i32 {
        // SAFETY: `wr` is valid by the type invariant.
        unsafe { (*self.wr).num_sge }
    }

    /// SGE `i`; an all-zero SGE past the end of the list.
    pub(crate) fn sge(&self, i: usize) -> Sge {
        let n = usize::try_from(self.num_sge()).unwrap_or(0);
        if i >= n {
            return Sge::default();
        }
        // SAFETY: `sg_list` holds `num_sge` entries (type invariant) and `i`
        // is below that.
        let s = unsafe { (*self.wr).sg_list.add(i).read() };
        Sge {
            addr: s.addr,
            length: s.length,
            lkey: s.lkey,
        }
    }

    /// The address to hand back as `bad_wr`.
    pub(crate) fn as_ptr(&self) -> *const sys::ib_recv_wr {
        self.wr
    }
}

/// The chain of receive work requests a kernel user posts.
pub(crate) struct RecvWrList {
    next: *const sys::ib_recv_wr,
}

impl RecvWrList {
    /// # Safety
    ///
    /// `head` is null or the first of a `next`-linked chain of valid work
    /// requests, each with `num_sge` entries in its `sg_list`, all valid for
    /// the duration of the post call that uses this list.
    pub(crate) unsafe fn from_raw(head: *const sys::ib_recv_wr) -> Self {
        Self { next: head }
    }
}

impl Iterator for RecvWrList {
    type Item = RecvWr;

    fn next(&mut self) -> Option<RecvWr> {
        if self.next.is_null() {
            return None;
        }
        let wr = self.next;
        // SAFETY: Non-null members of the chain are valid (constructor contract).
        self.next = unsafe { (*wr).next };
        // INVARIANT: `wr` is a non-null member of the chain, valid with its
        // `num_sge` SGEs for the post call (constructor contract).
        Some(RecvWr { wr })
    }
}

/// The driver's part `C` of the user context of a verb called from user
/// space (`None` for kernel callers).
///
/// # Safety
///
/// `udata` is null or the driver udata of a uverbs call in progress on a
/// context of this driver, whose driver part is a `C`.
pub(crate) unsafe fn ucontext<'a, C>(udata: *mut sys::ib_udata) -> Option<&'a C> {
    // SAFETY: `udata` is null or the driver udata of a uverbs call in
    // progress (the caller's contract): the helper returns null for null and
    // otherwise reads the context of the call's attribute bundle.
    let uc = unsafe { sys::rxe_rs_udata_to_ucontext(udata) };
    if uc.is_null() {
        return None;
    }
    // SAFETY: The context is one of this driver's whose driver part is a
    // `C` (the caller's contract), initialised by `alloc_ucontext`; the core
    // keeps it alive for the whole uverbs call, which outlives `'a`.
    Some(unsafe { &**CoreObj::<sys::ib_ucontext, C>::from_raw(uc) })
}

/// A verb called from user space: its udata and the driver's part `C` of
/// the user context.
pub(crate) struct UserCall<'a, C> {
    pub(crate) udata: Udata,
    pub(crate) ctx: &'a C,
}

impl<C> UserCall<'_, C> {
    /// `None` for kernel callers (no udata).
    ///
    /// # Safety
    ///
    /// `udata` is null or the `driver_udata` of the uverbs attribute bundle
    /// of the current call, whose context is one of this driver's with a
    /// `C` as its driver part.
    pub(crate) unsafe fn from_raw(udata: *mut sys::ib_udata) -> Result<Option<Self>> {
        // SAFETY: `udata` is null or the `driver_udata` of the current call
        // (the caller's contract), valid for the call.
        let Some(u) = (unsafe { Udata::from_raw(udata) }) else {
            return Ok(None);
        };
        // SAFETY: `udata` is non-null and inside its bundle (contract).
        let uc = unsafe { sys::rxe_rs_udata_to_ucontext(udata) };
        if uc.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: The context is one of ours with a `C` as its driver part
        // (the caller's contract), initialised by `alloc_ucontext`; the core
        // keeps it alive for the whole uverbs call.
        let ctx = unsafe { CoreObj::<sys::ib_ucontext, C>::from_raw(uc) };
        Ok(Some(Self { udata: u, ctx }))
    }
}
