// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Buffers shared with user space: the rxe queues (`vmalloc_user` memory
//! user space maps with `mmap`).
//!
//! User space can write any byte of such a buffer at any time, so the only
//! accessors are copies and single atomic index loads/stores; nothing hands
//! out a reference into the memory.

use core::{
    ptr::NonNull,
    sync::atomic::{AtomicU32, Ordering},
};

use kernel::prelude::*;

use crate::rxe::sys;

/// A zeroed, page-aligned `vmalloc_user` allocation.
///
/// # Invariants
///
/// `ptr` points to `len` bytes from `vmalloc_user`, owned by this value.
pub(crate) struct VmBuf {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: The memory is plain bytes accessed only through copies and atomics.
unsafe impl Send for VmBuf {}
// SAFETY: `&self` methods only copy bytes and run atomics on the buffer;
// concurrent ones race only on values, which the ABI with user space (which
// maps it) expects anyway.
unsafe impl Sync for VmBuf {}

impl VmBuf {
    pub(crate) fn new(len: usize) -> Result<Self> {
        // SAFETY: FFI call with a size; returns zeroed memory or null.
        let ptr = unsafe { sys::rxe_rs_vmalloc_user(len) }.cast::<u8>();
        // INVARIANT: `len` bytes from `vmalloc_user`, ours alone.
        Ok(Self {
            ptr: NonNull::new(ptr).ok_or(ENOMEM)?,
            len,
        })
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    fn check(&self, off: usize, len: usize) -> Result {
        match off.checked_add(len) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(EINVAL),
        }
    }

    /// Copies `out.len()` bytes at `off` out of the buffer.
    pub(crate) fn read(&self, off: usize, out: &mut [u8]) -> Result {
        self.check(off, out.len())?;
        // SAFETY: `ptr` points to `len` bytes (type invariant) and
        // `off + out.len()` is within them (checked); the source may change
        // under us, which only affects the values copied, never memory
        // safety, and it never overlaps `out`, which is not the buffer's.
        unsafe {
            core::ptr::copy_nonoverlapping(self.ptr.as_ptr().add(off), out.as_mut_ptr(), out.len())
        };
        Ok(())
    }

    /// Copies `data` into the buffer at `off`.
    pub(crate) fn write(&self, off: usize, data: &[u8]) -> Result {
        self.check(off, data.len())?;
        // SAFETY: `ptr` points to `len` bytes (type invariant) and
        // `off + data.len()` is within them (checked); the bytes are plain
        // data, and `data` cannot be a borrow of the buffer (no method
        // lends one).
        unsafe {
            core::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr.as_ptr().add(off), data.len())
        };
        Ok(())
    }

    fn atomic(&self, off: usize) -> Result<&AtomicU32> {
        self.check(off, 4)?;
        if off % 4 != 0 {
            return Err(EINVAL);
        }
        // SAFETY: `ptr` points to `len` bytes (type invariant), 4 of them
        // from `off` on (checked), aligned (vmalloc memory is page aligned
        // and `off` a multiple of 4); the location is only ever accessed
        // atomically by us.
        Ok(unsafe { &*self.ptr.as_ptr().add(off).cast::<AtomicU32>() })
    }

    /// Loads the index at `off`, ordered before reads of what it publishes.
    pub(crate) fn load_acquire(&self, off: usize) -> Result<u32> {
        Ok(self.atomic(off)?.load(Ordering::Acquire))
    }

    /// Stores the index at `off`, ordered after writes it publishes.
    pub(crate) fn store_release(&self, off: usize, v: u32) -> Result {
        self.atomic(off)?.store(v, Ordering::Release);
        Ok(())
    }

    /// Maps the whole buffer into `vma`; the mapping holds its own page
    /// references, so it outlives this value safely.
    ///
    /// # Safety
    ///
    /// `vma` is the area of an `mmap` call in progress.
    pub(crate) unsafe fn map_into(&self, vma: *mut sys::vm_area_struct) -> Result {
        // SAFETY: `vma` is the area of an `mmap` call in progress (the
        // caller's contract); the buffer came from `vmalloc_user` (type
        // invariant), as the call requires, and the mapping takes its own
        // page references.
        kernel::error::to_result(unsafe {
            sys::remap_vmalloc_range(vma, self.ptr.as_ptr().cast(), 0)
        })
    }
}

impl Drop for VmBuf {
    fn drop(&mut self) {
        // SAFETY: We own the allocation (type invariant).
        unsafe { sys::vfree(self.ptr.as_ptr().cast()) };
    }
}
