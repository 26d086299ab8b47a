// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Entry points for the MR verbs.
//!
//! Unlike most verbs objects, the `ib_mr` is allocated by the driver: the
//! create ops return a pointer to the `ib_mr` at the start of an [`MrObj`],
//! and `dereg_mr` frees it.

use kernel::{
    ffi::{c_int, c_uint},
    page::PAGE_SIZE,
    prelude::*,
    types::Opaque,
};

use super::device::dev;
use crate::rxe::device::Device;
use crate::rxe::kapi::{
    object::Handle,
    page::{DmaSpace, PageRef},
};
use crate::rxe::mr::{Mr, PdId};
use crate::rxe::proto::conv::{len64, to_usize};
use crate::rxe::proto::odp::{Advice, ADVISE_FLAG_FLUSH};
use crate::rxe::sys;

pub(super) fn fill(ops: &mut sys::ib_device_ops) {
    ops.get_dma_mr = Some(get_dma_mr);
    #[cfg(not(rxe_kernel_7))]
    {
        ops.reg_user_mr = Some(reg_user_mr);
    }
    #[cfg(rxe_kernel_7)]
    {
        ops.reg_user_mr = Some(reg_user_mr_dmah);
    }
    ops.rereg_user_mr = Some(rereg_user_mr);
    ops.dereg_mr = Some(dereg_mr);
    ops.alloc_mr = Some(alloc_mr);
    ops.map_mr_sg = Some(map_mr_sg);
    ops.advise_mr = Some(advise_mr);
}

/// `ib_device_ops.advise_mr` (`ibv_advise_mr`): prefetch of ODP MRs.
/// Asynchronous requests are carried out before returning too; their
/// errors other than a bad key are ignored, as a best-effort prefetch's.
///
/// # Safety
///
/// Called by the RDMA core only, with a live PD of this driver and
/// `num_sge` SGEs at `sg_list`.
unsafe extern "C" fn advise_mr(
    pd: *mut sys::ib_pd,
    advice: sys::ib_uverbs_advise_mr_advice,
    flags: u32,
    sg_list: *mut sys::ib_sge,
    num_sge: u32,
    _attrs: *mut sys::uverbs_attr_bundle,
) -> c_int {
    let Some(advice) = Advice::from_raw(advice) else {
        return crate::rxe::kapi::errno::eopnotsupp().to_errno();
    };
    let sges: &[sys::ib_sge] = if num_sge == 0 || sg_list.is_null() {
        &[]
    } else {
        // SAFETY: The core passes `num_sge` SGEs at `sg_list`, alive for the
        // call.
        unsafe { core::slice::from_raw_parts(sg_list, to_usize(num_sge)) }
    };
    // SAFETY: The PD is live and of this driver, so is its device.
    let dev = unsafe { dev((*pd).device) };
    let sync = flags & ADVISE_FLAG_FLUSH != 0;
    let it = sges.iter().map(|s| (s.lkey, s.addr, s.length));
    match crate::rxe::mr::advise(dev.state(), pd_id(pd), advice, sync, it) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// The driver's allocation behind an `ib_mr`. The core changes its
/// `ib_mr` (`ib_map_mr_sg` sets the range, rereg the PD) while the driver
/// holds references: Rust sees it only as [`Opaque`].
#[repr(C)]
struct MrObj {
    ib: Opaque<sys::ib_mr>,
    mr: Mr,
}

impl From<Handle<sys::ib_pd>> for PdId {
    fn from(h: Handle<sys::ib_pd>) -> Self {
        PdId(h.id())
    }
}

/// The identity of the PD at `pd`, the same number `Handle::id` gives.
fn pd_id(pd: *mut sys::ib_pd) -> PdId {
    // The address is the identity, as in `Handle::id`.
    PdId(pd as usize)
}

/// # Safety
///
/// `ib` is the `ib_mr` of a live [`MrObj`] and stays alive for `'a`.
unsafe fn obj<'a>(ib: *mut sys::ib_mr) -> &'a MrObj {
    // SAFETY: `ib` is the `ib_mr` of a live `MrObj`, alive for `'a` (the
    // caller's contract), and the first field of that `#[repr(C)]` struct,
    // so the cast gives the object's address.
    unsafe { &*ib.cast::<MrObj>() }
}

/// Allocates room for an MR object before the MR exists, so that a failed
/// allocation leaves nothing to undo.
fn reserve() -> Result<KBox<core::mem::MaybeUninit<MrObj>>> {
    Ok(KBox::new_uninit(GFP_KERNEL)?)
}

/// Fills in the `ib_mr` of a new MR and hands it to the core.
fn finish(
    room: KBox<core::mem::MaybeUninit<MrObj>>,
    dev: &Device,
    pd: *mut sys::ib_pd,
    mr: Mr,
) -> *mut sys::ib_mr {
    let keys = mr.keys();
    let ib = sys::ib_mr {
        device: dev.as_ib(),
        pd,
        lkey: keys.lkey,
        rkey: keys.rkey,
        // PAGE_SIZE (4096 on x86) fits the C `unsigned int`.
        page_size: PAGE_SIZE as c_uint,
        ..Default::default()
    };
    KBox::into_raw(room.write(MrObj {
        ib: Opaque::new(ib),
        mr,
    }))
    .cast()
}

fn to_ptr(r: Result<*mut sys::ib_mr>) -> *mut sys::ib_mr {
    r.unwrap_or_else(|e| e.to_ptr())
}

/// `ib_device_ops.get_dma_mr`.
///
/// # Safety
///
/// Called by the RDMA core only, with pointers to live objects of this
/// driver as the op's contract describes.
unsafe extern "C" fn get_dma_mr(pd: *mut sys::ib_pd, access: c_int) -> *mut sys::ib_mr {
    to_ptr((|| {
        // SAFETY: The core passes a live PD of one of our devices.
        let dev = unsafe { dev((*pd).device) };
        let room = reserve()?;
        // SAFETY: This op is reachable only from kernel code (ib_alloc_pd and
        // ib_get_dma_mr), which addresses only its own memory through it.
        let space = unsafe { DmaSpace::new() };
        // The access bits are a C `int` bit set; the same bits as `u32`.
        let mr = Mr::dma(dev, pd_id(pd), access as u32, space)?;
        Ok(finish(room, dev, pd, mr))
    })())
}

/// `ib_device_ops.reg_user_mr` of 7.x, which adds a DMA handle: none is
/// supported.
///
/// # Safety
///
/// As for `reg_user_mr`.
#[cfg(rxe_kernel_7)]
unsafe extern "C" fn reg_user_mr_dmah(
    pd: *mut sys::ib_pd,
    start: u64,
    length: u64,
    iova: u64,
    access: c_int,
    dmah: *mut sys::ib_dmah,
    udata: *mut sys::ib_udata,
) -> *mut sys::ib_mr {
    if !dmah.is_null() {
        return to_ptr(Err(EOPNOTSUPP));
    }
    // SAFETY: The core calls this as it calls `reg_user_mr`, with a live PD
    // of one of our devices: `reg_user_mr`'s contract.
    unsafe { reg_user_mr(pd, start, length, iova, access, udata) }
}

/// `ib_device_ops.reg_user_mr`.
///
/// # Safety
///
/// Called by the RDMA core only, with pointers to live objects of this
/// driver as the op's contract describes.
unsafe extern "C" fn reg_user_mr(
    pd: *mut sys::ib_pd,
    start: u64,
    length: u64,
    iova: u64,
    access: c_int,
    _udata: *mut sys::ib_udata,
) -> *mut sys::ib_mr {
    to_ptr((|| {
        // SAFETY: The core passes a live PD of one of our devices.
        let dev = unsafe { dev((*pd).device) };
        let room = reserve()?;
        // The access bits are a C `int` bit set; the same bits as `u32`.
        let mr = Mr::user(dev, pd_id(pd), start, length, iova, access as u32)?;
        Ok(finish(room, dev, pd, mr))
    })())
}

/// `ib_device_ops.rereg_user_mr`: only in-place changes (PD, rights).
///
/// # Safety
///
/// Called by the RDMA core only, with pointers to live objects of this
/// driver as the op's contract describes.
#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn rereg_user_mr(
    ib: *mut sys::ib_mr,
    flags: c_int,
    _start: u64,
    _length: u64,
    _iova: u64,
    access: c_int,
    pd: *mut sys::ib_pd,
    _udata: *mut sys::ib_udata,
) -> *mut sys::ib_mr {
    to_ptr((|| {
        // SAFETY: The core passes one of our live MRs, with the uobject lock
        // held, so nothing else changes its `ib_mr` meanwhile.
        let o = unsafe { obj(ib) };
        // Flags and access are C `int` bit sets; the same bits as `u32`.
        o.mr.rereg(flags as u32, access as u32, pd_id(pd))?;
        // The core updates `ib_mr.pd` itself when the MR stays in place.
        Ok(core::ptr::null_mut())
    })())
}

/// `ib_device_ops.alloc_mr`: fast-reg MRs only.
///
/// # Safety
///
/// Called by the RDMA core only, with pointers to live objects of this
/// driver as the op's contract describes.
unsafe extern "C" fn alloc_mr(
    pd: *mut sys::ib_pd,
    mr_type: sys::ib_mr_type,
    max_num_sg: u32,
) -> *mut sys::ib_mr {
    to_ptr((|| {
        if mr_type != sys::ib_mr_type_IB_MR_TYPE_MEM_REG {
            return Err(EINVAL);
        }
        // SAFETY: The core passes a live PD of one of our devices.
        let dev = unsafe { dev((*pd).device) };
        let room = reserve()?;
        let mr = Mr::fast(dev, pd_id(pd), max_num_sg)?;
        Ok(finish(room, dev, pd, mr))
    })())
}

/// `ib_device_ops.dereg_mr`.
///
/// # Safety
///
/// Called by the RDMA core only, with pointers to live objects of this
/// driver as the op's contract describes.
unsafe extern "C" fn dereg_mr(ib: *mut sys::ib_mr, _udata: *mut sys::ib_udata) -> c_int {
    // SAFETY: The core passes one of our live MRs; after a successful
    // return it never uses the pointer again.
    let o = unsafe { obj(ib) };
    let dev = o.device();
    if let Err(e) = o.mr.dereg(dev) {
        return e.to_errno();
    }
    // SAFETY: The object came from `KBox::into_raw` in `finish`, and the
    // core is done with it.
    drop(unsafe { KBox::from_raw(ib.cast::<MrObj>()) });
    0
}

impl MrObj {
    fn device(&self) -> &Device {
        // SAFETY: `device` was set at creation and the core does not change
        // it; a device outlives its MRs.
        unsafe { Device::from_ib(core::ptr::addr_of!((*self.ib.get()).device).read()) }
    }
}

/// `set_page` of `ib_sg_to_pages`: one MR page at the virtual-DMA address
/// `addr`, stored as blocks of at most a system page.
///
/// # Safety
///
/// Called by the RDMA core only, with pointers to live objects of this
/// driver as the op's contract describes.
unsafe extern "C" fn set_page(ib: *mut sys::ib_mr, addr: u64) -> c_int {
    // SAFETY: Called by `ib_sg_to_pages` from our `map_mr_sg` on a live MR.
    let o = unsafe { obj(ib) };
    let page_size = o.mr.map_page_size();
    let sys = len64(PAGE_SIZE);
    let pieces = if page_size > sys { page_size / sys } else { 1 };
    for n in 0..pieces {
        let Some(a) = addr.checked_add(n * sys) else {
            return EINVAL.to_errno();
        };
        // SAFETY: The scatterlist belongs to the kernel user mapping it,
        // which keeps the memory for as long as the MR is registered over it.
        let Some(block) = (unsafe { PageRef::from_kernel_addr(a) }) else {
            return EFAULT.to_errno();
        };
        if let Err(e) = o.mr.map_block(block) {
            return e.to_errno();
        }
    }
    0
}

/// `ib_device_ops.map_mr_sg`: the block list of a fast-reg MR.
///
/// # Safety
///
/// Called by the RDMA core only, with pointers to live objects of this
/// driver as the op's contract describes.
unsafe extern "C" fn map_mr_sg(
    ib: *mut sys::ib_mr,
    sg: *mut sys::scatterlist,
    sg_nents: c_int,
    sg_offset: *mut c_uint,
) -> c_int {
    // SAFETY: The core passes one of our live MRs, alive for the call.
    let o = unsafe { obj(ib) };
    // SAFETY: `ib` is live; `ib_map_mr_sg` has set `page_size` just before
    // calling us and nothing writes it during the call.
    let page_size = unsafe { (*ib).page_size };
    if let Err(e) = o.mr.begin_map(page_size) {
        return e.to_errno();
    }
    // SAFETY: Core-provided scatterlist and MR, valid for the call; our
    // callback only appends to the MR's staging list.
    let n = unsafe { sys::ib_sg_to_pages(ib, sg, sg_nents, sg_offset, Some(set_page)) };
    o.mr.end_map();
    n
}
