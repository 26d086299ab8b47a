// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Entry points of the device itself: queries, port, contexts, mmap, PDs.

use kernel::{error::from_result, ffi::c_int, prelude::*};

use crate::rxe::device::Device;
use crate::rxe::kapi::alloc;
use crate::rxe::kapi::errno;
use crate::rxe::kapi::object::CoreObj;
use crate::rxe::kapi::udata::Udata;
use crate::rxe::pd::Pd;
use crate::rxe::sys;
use crate::rxe::ucontext::Ucontext;

/// Device-level entry points: queries, port, user contexts, mmap, PDs.
pub(super) fn fill(ops: &mut sys::ib_device_ops) {
    ops.owner = this_module().cast();
    ops.driver_id = sys::rdma_driver_id_RDMA_DRIVER_RXE;
    ops.uverbs_abi_ver = crate::rxe::proto::params::UVERBS_ABI_VERSION;
    ops.device_group = unsafe_device_group();

    ops.query_device = Some(query_device);
    ops.query_port = Some(query_port);
    ops.query_pkey = Some(query_pkey);
    ops.modify_device = Some(modify_device);
    ops.modify_port = Some(modify_port);
    ops.get_link_layer = Some(get_link_layer);
    ops.add_gid = Some(add_gid);
    ops.del_gid = Some(del_gid);
    ops.get_port_immutable = Some(get_port_immutable);
    ops.enable_driver = Some(enable_driver);
    ops.dealloc_driver = Some(dealloc_driver);

    ops.alloc_ucontext = Some(alloc_ucontext);
    ops.dealloc_ucontext = Some(dealloc_ucontext);
    ops.disassociate_ucontext = Some(disassociate_ucontext);
    ops.mmap = Some(mmap);
    ops.alloc_pd = Some(alloc_pd);
    ops.dealloc_pd = Some(dealloc_pd);

    ops.size_ib_ucontext = CoreObj::<sys::ib_ucontext, Ucontext>::SIZE;
    ops.size_ib_pd = CoreObj::<sys::ib_pd, Pd>::SIZE;
}

fn unsafe_device_group() -> *const sys::attribute_group {
    // SAFETY: Returns a pointer to static data in helpers_core.c.
    unsafe { sys::rxe_rs_device_group() }
}

/// # Safety
///
/// `ib` is the `ib_device` of a live rxe_rs device.
pub(super) unsafe fn dev<'a>(ib: *mut sys::ib_device) -> &'a Device {
    // SAFETY: `ib` is the `ib_device` of a live rxe_rs device (the caller's
    // contract), made by `Device::register`: its state is initialised
    // while the core can call into it (the type invariant of `Device`).
    unsafe { Device::from_ib(ib) }
}

/// # Safety
///
/// Only the kernel calls this, through the table or socket it was
/// registered with, with arguments valid for the duration of the call.
unsafe extern "C" fn query_device(
    ib: *mut sys::ib_device,
    attr: *mut sys::ib_device_attr,
    udata: *mut sys::ib_udata,
) -> c_int {
    from_result(|| {
        // SAFETY: The core calls our ops only on live devices we registered.
        let dev = unsafe { dev(ib) };
        // SAFETY: The core's output structure, valid and ours to write for
        // the call.
        let attr = unsafe { &mut *attr };
        // SAFETY: `udata` is null or a valid `ib_udata` for the call.
        let udata = unsafe { Udata::from_raw(udata) };
        *attr = (&dev.state().query_device(udata.as_ref())?).into();
        Ok(0)
    })
}

/// # Safety
///
/// Only the kernel calls this, through the table or socket it was
/// registered with, with arguments valid for the duration of the call.
unsafe extern "C" fn query_port(
    ib: *mut sys::ib_device,
    port: u32,
    attr: *mut sys::ib_port_attr,
) -> c_int {
    from_result(|| {
        // SAFETY: The core calls our ops only on live devices we registered.
        let dev = unsafe { dev(ib) };
        // SAFETY: The core's output structure, valid and ours to write for
        // the call.
        let attr = unsafe { &mut *attr };
        *attr = (&dev.state().query_port(dev, port)?).into();
        Ok(0)
    })
}

/// # Safety
///
/// Only the kernel calls this, through the table or socket it was
/// registered with, with arguments valid for the duration of the call.
unsafe extern "C" fn query_pkey(
    ib: *mut sys::ib_device,
    port: u32,
    index: u16,
    pkey: *mut u16,
) -> c_int {
    from_result(|| {
        // SAFETY: The core calls our ops only on live devices we registered.
        let dev = unsafe { dev(ib) };
        // SAFETY: The core's output structure, valid and ours to write for
        // the call.
        let pkey = unsafe { &mut *pkey };
        *pkey = dev.state().query_pkey(port, index)?;
        Ok(0)
    })
}

/// # Safety
///
/// Only the kernel calls this, through the table or socket it was
/// registered with, with arguments valid for the duration of the call.
unsafe extern "C" fn modify_device(
    ib: *mut sys::ib_device,
    mask: c_int,
    attr: *mut sys::ib_device_modify,
) -> c_int {
    from_result(|| {
        // SAFETY: The core calls our ops only on live devices we registered.
        let dev = unsafe { dev(ib) };
        // SAFETY: The caller's attribute, valid for the call.
        let attr = unsafe { &*attr };
        let supported = (sys::ib_device_modify_flags_IB_DEVICE_MODIFY_SYS_IMAGE_GUID
            | sys::ib_device_modify_flags_IB_DEVICE_MODIFY_NODE_DESC)
            as c_int;
        if mask & !supported != 0 {
            return Err(errno::eopnotsupp());
        }
        if mask & sys::ib_device_modify_flags_IB_DEVICE_MODIFY_SYS_IMAGE_GUID as c_int != 0 {
            // The core hands it in CPU order; the attribute keeps wire order.
            dev.state().set_sys_image_guid(attr.sys_image_guid.to_be());
        }
        if mask & sys::ib_device_modify_flags_IB_DEVICE_MODIFY_NODE_DESC as c_int != 0 {
            // SAFETY: node_desc is plain bytes owned by the device; the core
            // serialises modify_device against other writers.
            unsafe { (*dev.as_ib()).node_desc = attr.node_desc };
        }
        Ok(0)
    })
}

/// # Safety
///
/// Only the kernel calls this, through the table or socket it was
/// registered with, with arguments valid for the duration of the call.
unsafe extern "C" fn modify_port(
    ib: *mut sys::ib_device,
    port: u32,
    mask: c_int,
    attr: *mut sys::ib_port_modify,
) -> c_int {
    from_result(|| {
        // SAFETY: The core calls our ops only on live devices we registered.
        let dev = unsafe { dev(ib) };
        // SAFETY: The caller's attribute, valid for the call.
        let attr = unsafe { &*attr };
        let reset_qkey = sys::ib_port_modify_flags_IB_PORT_RESET_QKEY_CNTR as c_int;
        if port != 1 {
            return Err(EINVAL);
        }
        if mask & !reset_qkey != 0 {
            return Err(errno::eopnotsupp());
        }
        dev.state().modify_port(
            attr.set_port_cap_mask,
            attr.clr_port_cap_mask,
            mask & reset_qkey != 0,
        );
        Ok(0)
    })
}

/// The RoCEv2 entry of `attr`, if it is one: its GID and the identity of
/// its network device.
///
/// # Safety
///
/// `attr` is a GID attribute of one of our devices, live for the call.
unsafe fn roce_v2_entry<'a>(
    attr: *const sys::ib_gid_attr,
) -> Option<(&'a Device, [u8; 16], usize)> {
    // SAFETY: Live for the call (the caller's contract).
    let attr = unsafe { &*attr };
    if attr.gid_type != sys::ib_gid_type_IB_GID_TYPE_ROCE_UDP_ENCAP {
        return None;
    }
    // SAFETY: Every bit pattern is a valid `raw` GID.
    let gid = unsafe { attr.gid.raw };
    // SAFETY: `attr.device` is the `ib_device` of a live rxe_rs device
    // (the caller's contract): the core adds and removes GID entries
    // between registration and unregistration.
    let dev = unsafe { dev(attr.device) };
    // Only compared, never dereferenced.
    Some((dev, gid, attr.ndev as usize))
}

/// # Safety
///
/// Only the kernel calls this, through the table or socket it was
/// registered with, with arguments valid for the duration of the call.
unsafe extern "C" fn add_gid(
    attr: *const sys::ib_gid_attr,
    _context: *mut *mut kernel::ffi::c_void,
) -> c_int {
    // SAFETY: The core passes the attribute of an entry of one of our
    // devices, under the port's GID table lock, which serialises the
    // writers of the set.
    if let Some((dev, gid, ndev)) = unsafe { roce_v2_entry(attr) } {
        dev.state().gids.add(&gid, ndev);
    }
    0
}

/// # Safety
///
/// Only the kernel calls this, through the table or socket it was
/// registered with, with arguments valid for the duration of the call.
unsafe extern "C" fn del_gid(
    attr: *const sys::ib_gid_attr,
    _context: *mut *mut kernel::ffi::c_void,
) -> c_int {
    // SAFETY: As in `add_gid`, for an entry `add_gid` was given.
    if let Some((dev, gid, ndev)) = unsafe { roce_v2_entry(attr) } {
        dev.state().gids.remove(&gid, ndev);
    }
    0
}

/// # Safety
///
/// Only the kernel calls this, through the table or socket it was
/// registered with, with arguments valid for the duration of the call.
unsafe extern "C" fn get_link_layer(_ib: *mut sys::ib_device, _port: u32) -> sys::rdma_link_layer {
    sys::rdma_link_layer_IB_LINK_LAYER_ETHERNET
}

/// # Safety
///
/// Only the kernel calls this, through the table or socket it was
/// registered with, with arguments valid for the duration of the call.
unsafe extern "C" fn get_port_immutable(
    ib: *mut sys::ib_device,
    port: u32,
    immutable: *mut sys::ib_port_immutable,
) -> c_int {
    from_result(|| {
        // SAFETY: The core calls our ops only on live devices we registered.
        let dev = unsafe { dev(ib) };
        // SAFETY: The core's output structure, valid and ours to write for
        // the call.
        let immutable = unsafe { &mut *immutable };
        *immutable = (&dev.state().port_immutable(dev, port)?).into();
        Ok(0)
    })
}

/// # Safety
///
/// Only the kernel calls this, through the table or socket it was
/// registered with, with arguments valid for the duration of the call.
unsafe extern "C" fn enable_driver(ib: *mut sys::ib_device) -> c_int {
    from_result(|| {
        // SAFETY: The core calls our ops only on live devices we registered.
        let dev = unsafe { dev(ib) };
        dev.state().enable(dev)?;
        Ok(0)
    })
}

/// # Safety
///
/// Only the kernel calls this, through the table or socket it was
/// registered with, with arguments valid for the duration of the call.
unsafe extern "C" fn dealloc_driver(ib: *mut sys::ib_device) {
    // SAFETY: The core calls this once, on a device we registered (so its
    // state is initialised), when the device is being freed and no other op
    // can run any more: the state is not used again.
    unsafe { Device::drop_state(ib) };
}

/// # Safety
///
/// Only the kernel calls this, through the table or socket it was
/// registered with, with arguments valid for the duration of the call.
unsafe extern "C" fn alloc_ucontext(uc: *mut sys::ib_ucontext, udata: *mut sys::ib_udata) -> c_int {
    from_result(|| {
        // SAFETY: The core hands a zeroed object of `size_ib_ucontext` bytes
        // with `device` set to one of our devices, which outlives it.
        let dev = unsafe { dev((*uc).device) };
        // SAFETY: `udata` is null or a valid `ib_udata` for the call.
        let udata = unsafe { Udata::from_raw(udata) };
        let ctx = Ucontext::new(dev, udata.as_ref())?;
        // SAFETY: `uc` is the core's zeroed allocation of `size_ib_ucontext`
        // (`SIZE`) bytes, its driver part not initialised yet.
        unsafe { CoreObj::<sys::ib_ucontext, Ucontext>::init(uc, ctx) }?;
        Ok(0)
    })
}

/// # Safety
///
/// Only the kernel calls this, through the table or socket it was
/// registered with, with arguments valid for the duration of the call.
unsafe extern "C" fn dealloc_ucontext(uc: *mut sys::ib_ucontext) {
    // SAFETY: Initialised by `alloc_ucontext`; the core calls this once,
    // last, and frees the memory after, so the context is not used again.
    unsafe { CoreObj::<sys::ib_ucontext, Ucontext>::destroy(uc) };
}

/// Present so that the core may tear a context down under its process
/// (device removal, `rdma dev set netns`, module unload) instead of waiting
/// for the process to close it. There is nothing to revoke here: the core
/// has destroyed the context's objects already, and `dealloc_ucontext`
/// follows. What the process keeps, its mappings of our queues, are
/// `vmalloc_user` pages put in place by `remap_vmalloc_range`: each holds
/// its own page reference and the VMA runs uverbs' `vm_ops`, so a mapping
/// left behind reaches neither driver memory nor module code.
///
/// # Safety
///
/// Only the kernel calls this, through the table or socket it was
/// registered with, with arguments valid for the duration of the call.
unsafe extern "C" fn disassociate_ucontext(_uc: *mut sys::ib_ucontext) {}

/// # Safety
///
/// Only the kernel calls this, through the table or socket it was
/// registered with, with arguments valid for the duration of the call.
unsafe extern "C" fn mmap(uc: *mut sys::ib_ucontext, vma: *mut sys::vm_area_struct) -> c_int {
    from_result(|| {
        // SAFETY: The core calls mmap on a live context of ours, made by
        // `alloc_ucontext`, for the call.
        let uc = unsafe { CoreObj::<sys::ib_ucontext, Ucontext>::from_raw(uc) };
        // SAFETY: `vma` is the area of the mmap in progress; the helpers
        // only read its fields.
        let (offset, len) = unsafe { (sys::rxe_rs_vma_offset(vma), sys::rxe_rs_vma_len(vma)) };
        let offset = u64::try_from(offset).map_err(|_| EINVAL)?;
        let len = u64::try_from(len).map_err(|_| EINVAL)?;
        let buf = uc.take_for_mmap(offset, len)?;
        // SAFETY: `vma` is the area of the mmap call in progress.
        unsafe { buf.map_into(vma) }?;
        Ok(0)
    })
}

/// # Safety
///
/// Only the kernel calls this, through the table or socket it was
/// registered with, with arguments valid for the duration of the call.
unsafe extern "C" fn alloc_pd(pd: *mut sys::ib_pd, udata: *mut sys::ib_udata) -> c_int {
    from_result(|| {
        // SAFETY: The core hands a zeroed object of `size_ib_pd` bytes with
        // `device` set to one of our devices, which outlives it.
        let dev = unsafe { dev((*pd).device) };
        // SAFETY: `udata` is null or a valid `ib_udata` for the call.
        let udata = unsafe { Udata::from_raw(udata) };
        let state = Pd::new(dev, udata.as_ref())?;
        // SAFETY: `pd` is the core's zeroed allocation of `size_ib_pd`
        // (`SIZE`) bytes, its driver part not initialised yet.
        unsafe { CoreObj::<sys::ib_pd, Pd>::init(pd, alloc::value(state)) }?;
        Ok(0)
    })
}

/// # Safety
///
/// Only the kernel calls this, through the table or socket it was
/// registered with, with arguments valid for the duration of the call.
unsafe extern "C" fn dealloc_pd(pd: *mut sys::ib_pd, _udata: *mut sys::ib_udata) -> c_int {
    // SAFETY: Initialised by `alloc_pd`; the core calls this once, last,
    // and frees the memory after, so the PD is not used again.
    unsafe { CoreObj::<sys::ib_pd, Pd>::destroy(pd) };
    0
}

/// This module's `struct module`: a crate-root static on 6.12, an associated
/// constant of the module type on 7.x.
#[cfg(not(rxe_kernel_7))]
fn this_module() -> *mut kernel::bindings::module {
    crate::THIS_MODULE.as_ptr()
}

/// This module's `struct module` (see the 6.12 one).
#[cfg(rxe_kernel_7)]
fn this_module() -> *mut kernel::bindings::module {
    <crate::LocalModule as kernel::ModuleMetadata>::THIS_MODULE.as_ptr()
}
