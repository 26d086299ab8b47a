// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Pinned user memory (`struct ib_umem`) behind user MRs.

use core::ptr::NonNull;

use kernel::{
    error::{from_err_ptr, to_result},
    ffi::{c_int, c_ulong},
    prelude::*,
};

use super::alloc::caller_sized;
use super::ibdev::Device;
use super::page::PageList;
use crate::rxe::sys;

/// User pages pinned by `ib_umem_get`, unpinned on drop.
///
/// # Invariants
///
/// `ptr` is a umem from `ib_umem_get`, owned by this value.
pub(crate) struct Umem {
    ptr: NonNull<sys::ib_umem>,
}

// SAFETY: The umem is only read after creation; release may run on any
// thread in process context, which is where MRs are destroyed.
unsafe impl Send for Umem {}
// SAFETY: Shared access only reads the umem, which nothing changes after
// creation.
unsafe impl Sync for Umem {}

impl Umem {
    /// Pins `[addr, addr + len)` of the calling process for `access` (the
    /// `ib_access_flags`, which decide whether the pages are pinned
    /// writable).
    pub(crate) fn get<S>(dev: &Device<S>, addr: u64, len: u64, access: u32) -> Result<Self> {
        let addr = c_ulong::try_from(addr).map_err(|_| EINVAL)?;
        let len = usize::try_from(len).map_err(|_| EINVAL)?;
        // The access bits are a C `int` bit set; the same bits either way.
        let access = access as c_int;
        // SAFETY: The device is alive; the call pins pages of `current`.
        let ptr = from_err_ptr(unsafe { sys::rxe_rs_umem_get(dev.as_ib(), addr, len, access) })?;
        // INVARIANT: A umem from `ib_umem_get` that no one else holds.
        Ok(Self {
            ptr: NonNull::new(ptr).ok_or(ENOMEM)?,
        })
    }

    /// The number of pages pinned.
    pub(crate) fn num_pages(&self) -> usize {
        // SAFETY: The umem is alive (type invariant).
        unsafe { sys::rxe_rs_umem_num_pages(self.ptr.as_ptr()) }
    }

    /// The pinned pages, in address order, each with a reference of its own
    /// so the list stays valid after the umem is released.
    pub(crate) fn pages(&self) -> Result<PageList> {
        let n = self.num_pages();
        // Arrays of one entry per page: large MRs need vmalloc'd ones.
        let mut raw: KVVec<*mut sys::page> = KVVec::with_capacity(n, caller_sized())?;
        // SAFETY: `raw` has room for `n` pointers; the helper writes at most
        // `n` and returns how many, each with a reference taken.
        let got = unsafe { sys::rxe_rs_umem_get_pages(self.ptr.as_ptr(), raw.as_mut_ptr(), n) };
        // SAFETY: The helper initialised the first `got <= n` entries.
        unsafe { super::alloc::vec_set_len(&mut raw, got.min(n)) };
        let mut entries =
            KVVec::with_capacity(raw.len(), caller_sized()).inspect_err(|_| put_all(&raw))?;
        for &p in raw.iter() {
            if let Some(page) = NonNull::new(p) {
                // SAFETY: The helper took a reference on `page`, which the
                // list made below owns (on both paths), so the page stays
                // valid while the block may be used.
                let block = unsafe { PageList::page_ref(page) };
                // Within capacity: cannot fail.
                let _ = entries.push(block, GFP_KERNEL);
            }
        }
        if entries.len() != n {
            // SAFETY: The references taken above are now the list's, and the
            // list drops them again.
            drop(unsafe { PageList::from_referenced(entries) });
            return Err(EFAULT);
        }
        // SAFETY: One reference per entry, taken by the helper, moves here.
        Ok(unsafe { PageList::from_referenced(entries) })
    }

    /// Whether every pinned page is persistent memory. Process context.
    pub(crate) fn all_pmem(&self) -> bool {
        // SAFETY: The umem is alive (type invariant).
        unsafe { sys::rxe_rs_umem_all_pmem(self.ptr.as_ptr()) }
    }

    /// The core's rule for changing the rights of a pinned range in place.
    pub(crate) fn check_rereg(&self, flags: u32, access: u32) -> Result {
        // Flag and access bit sets are C `int`s; the bits carry over.
        // SAFETY: The umem is alive (type invariant).
        to_result(unsafe {
            sys::ib_umem_check_rereg(self.ptr.as_ptr(), flags as c_int, access as c_int)
        })
    }
}

/// Drops the references the page helper took, for an error path.
fn put_all(pages: &[*mut sys::page]) {
    for &p in pages {
        if !p.is_null() {
            // SAFETY: Each non-null entry carries a reference we own.
            unsafe { sys::rxe_rs_put_page(p) };
        }
    }
}

impl Drop for Umem {
    fn drop(&mut self) {
        // SAFETY: We own the umem (type invariant).
        unsafe { sys::ib_umem_release(self.ptr.as_ptr()) };
    }
}
