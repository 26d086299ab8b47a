// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The memory behind MRs, reached one page at a time: pinned user pages,
//! kernel pages a fast-reg mapping describes, and the kernel addresses a DMA
//! MR stands for.
//!
//! The datapath copies bytes in and out and runs 8-byte atomics; no
//! reference into the memory ever leaves this file, except the page
//! references of [`PayloadPages`], which a packet takes to send MR memory as
//! skb fragments. The memory may be written by user space or by the
//! device's own peers at any time, which changes the bytes copied (or sent)
//! but never what is accessed.

use core::{
    ptr::NonNull,
    sync::atomic::{AtomicU64, Ordering},
};

use kernel::{alloc::Flags, page::PAGE_SIZE, prelude::*};

use crate::rxe::proto::conv::len64;
use crate::rxe::proto::mr::{atomic_aligned, AtomicOp};
use crate::rxe::proto::tx_frags::{Added, Frag, FragList};
use crate::rxe::sys;

/// Why a page access failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PageError {
    /// No page there, or the access would leave the page.
    Fault,
    /// An atomic on an address that is not 8-byte aligned.
    Misaligned,
}

/// One block of an MR: a page and where in the page the block starts.
///
/// # Invariants
///
/// `offset < PAGE_SIZE`. The page stays valid for as long as anything can
/// use this value: see [`PageList`] and [`PageRef::from_kernel_addr`].
#[derive(Clone, Copy)]
pub(crate) struct PageRef {
    page: NonNull<sys::page>,
    offset: usize,
}

// SAFETY: A page pointer is an address; all access goes through the
// mapping helpers below, which are safe from any thread.
unsafe impl Send for PageRef {}
// SAFETY: `&PageRef` gives no access to the page but through the mapping
// helpers below, which are safe from any thread.
unsafe impl Sync for PageRef {}

impl PageRef {
    /// The block at kernel (virtual-DMA) address `addr`, or `None` when the
    /// address is not in the kernel's linear map.
    ///
    /// # Safety
    ///
    /// The memory at `addr` belongs to the kernel code that registers it and
    /// stays allocated for as long as the returned value (or a list holding
    /// it) may be used: the contract of fast-reg MRs towards kernel users.
    pub(crate) unsafe fn from_kernel_addr(addr: u64) -> Option<Self> {
        // SAFETY: The helper only does address arithmetic (no access to
        // `addr`), and returns null for an address outside the linear map.
        let page = NonNull::new(unsafe { sys::rxe_rs_virt_to_page(addr) })?;
        // The remainder of a division by PAGE_SIZE fits a usize.
        let offset = (addr % len64(PAGE_SIZE)) as usize;
        // INVARIANT: `offset` is a remainder of a division by `PAGE_SIZE`;
        // the page stays allocated while the value may be used (the
        // caller's contract).
        Some(Self { page, offset })
    }

    /// Runs `f` on the kernel address of bytes `[off, off + len)` of this
    /// block, mapped for the duration of the call.
    fn with_mapped<R>(
        &self,
        off: usize,
        len: usize,
        f: impl FnOnce(*mut u8) -> R,
    ) -> Result<R, PageError> {
        let start = self.offset.checked_add(off).ok_or(PageError::Fault)?;
        match start.checked_add(len) {
            Some(end) if end <= PAGE_SIZE => {}
            _ => return Err(PageError::Fault),
        }
        // SAFETY: The page is valid (type invariant); a local mapping is
        // usable in any context and undone below on the same CPU.
        let va = unsafe { sys::rxe_rs_kmap_local_page(self.page.as_ptr()) }.cast::<u8>();
        // SAFETY: `start + len <= PAGE_SIZE` (checked), inside the mapping.
        let r = f(unsafe { va.add(start) });
        // SAFETY: Undoes the mapping made above, the latest one of this CPU.
        unsafe { sys::rxe_rs_kunmap_local(va.cast()) };
        Ok(r)
    }

    pub(super) fn read(&self, off: usize, out: &mut [u8]) -> Result<(), PageError> {
        self.with_mapped(off, out.len(), |src| {
            // SAFETY: `src` has `out.len()` mapped bytes (checked by
            // `with_mapped`); the ranges are distinct memory.
            unsafe { core::ptr::copy_nonoverlapping(src, out.as_mut_ptr(), out.len()) }
        })
    }

    pub(super) fn write(&self, off: usize, data: &[u8]) -> Result<(), PageError> {
        self.with_mapped(off, data.len(), |dst| {
            // SAFETY: `dst` has `data.len()` mapped bytes (checked by
            // `with_mapped`); the ranges are distinct memory.
            unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len()) }
        })
    }

    fn word<R>(&self, off: usize, f: impl FnOnce(&AtomicU64) -> R) -> Result<R, PageError> {
        // Both offsets are below PAGE_SIZE, so the sum cannot overflow.
        if !atomic_aligned(len64(self.offset + off)) {
            return Err(PageError::Misaligned);
        }
        self.with_mapped(off, 8, |p| {
            // SAFETY: 8 mapped bytes, 8-byte aligned (checked); other access
            // to the word is plain data races on memory that holds no Rust
            // object, which only affects the values seen.
            f(unsafe { &*p.cast::<AtomicU64>() })
        })
    }

    pub(super) fn atomic(&self, off: usize, op: AtomicOp) -> Result<u64, PageError> {
        // A hardware atomic on the word: atomic against every other CPU and
        // against user space's own atomics on it, which a lock cannot be.
        self.word(off, |w| match op {
            AtomicOp::CompareSwap { compare, swap } => {
                match w.compare_exchange(compare, swap, Ordering::SeqCst, Ordering::SeqCst) {
                    Ok(old) | Err(old) => old,
                }
            }
            AtomicOp::FetchAdd { add } => w.fetch_add(add, Ordering::SeqCst),
        })
    }

    pub(super) fn store_release(&self, off: usize, value: u64) -> Result<(), PageError> {
        self.word(off, |w| w.store(value, Ordering::Release))
    }

    pub(super) fn flush(&self, off: usize, len: usize) -> Result<(), PageError> {
        self.with_mapped(off, len, |p| {
            // SAFETY: Writes back cache lines of `len` mapped bytes.
            unsafe { sys::rxe_rs_wb_cache_pmem(p.cast(), len) }
        })
    }

    /// Adds bytes `[off, off + len)` of this block to `out` with a page
    /// reference; `Ok(false)` when the page may not be referenced or `out`
    /// is full (the caller then copies).
    fn ref_into(&self, off: usize, len: usize, out: &mut PayloadPages) -> Result<bool, PageError> {
        let start = self.offset.checked_add(off).ok_or(PageError::Fault)?;
        match start.checked_add(len) {
            Some(end) if end <= PAGE_SIZE => {}
            _ => return Err(PageError::Fault),
        }
        // SAFETY: The page is valid (type invariant).
        Ok(unsafe { out.add(self.page, start, len) })
    }

    /// Whether the page is persistent memory. Asks the resource tree,
    /// whose lock is taken with bottom halves on: process context, with no
    /// lock held that softirq takes.
    pub(crate) fn is_pmem(&self) -> bool {
        // SAFETY: The page is valid (type invariant).
        unsafe { sys::rxe_rs_page_is_pmem(self.page.as_ptr()) }
    }
}

/// The blocks of an MR, in iova order.
///
/// # Invariants
///
/// Every entry's page stays valid while the list lives: when `holds_refs`,
/// the list owns one page reference per entry; otherwise each entry was made
/// by [`PageRef::from_kernel_addr`], whose caller vouched for it.
pub(crate) struct PageList {
    /// One entry per page: 8 MiB for a 2 GiB MR, hence kvmalloc'd.
    entries: KVVec<PageRef>,
    holds_refs: bool,
}

impl PageList {
    /// An empty list for a fast-reg mapping, with room for `n` blocks,
    /// allocated with `flags`.
    pub(crate) fn with_capacity(n: usize, flags: Flags) -> Result<Self> {
        // INVARIANT: An empty list.
        Ok(Self {
            entries: KVVec::with_capacity(n, flags)?,
            holds_refs: false,
        })
    }

    /// A list of pages with one reference owned per entry.
    ///
    /// # Safety
    ///
    /// The caller transfers one reference on each page of `entries` to the
    /// list.
    pub(super) unsafe fn from_referenced(entries: KVVec<PageRef>) -> Self {
        // INVARIANT: The caller hands the list one reference per entry.
        Self {
            entries,
            holds_refs: true,
        }
    }

    /// The block of a whole page.
    ///
    /// # Safety
    ///
    /// `page` is a valid page that stays valid for as long as the returned
    /// value (or a copy, or a list holding it) may be used.
    pub(super) unsafe fn page_ref(page: NonNull<sys::page>) -> PageRef {
        // INVARIANT: An offset of 0 is below `PAGE_SIZE`; the page stays
        // valid while the value may be used (the caller's contract).
        PageRef { page, offset: 0 }
    }

    /// Empties a fast-reg list, keeping its room, and makes sure it has room
    /// for `n` blocks.
    pub(crate) fn reset(&mut self, n: usize, flags: Flags) -> Result {
        if self.holds_refs {
            return Err(EINVAL);
        }
        // INVARIANT: An empty list; it holds no references (`holds_refs` is
        // false), so none is given back.
        // SAFETY: `PageRef` is `Copy`: dropping the entries is a no-op.
        unsafe { super::alloc::vec_set_len(&mut self.entries, 0) };
        if self.entries.capacity() < n {
            self.entries.reserve(n, flags)?;
        }
        Ok(())
    }

    /// Appends a block; fails with `ENOMEM`, as the C driver does, once the
    /// room given at creation or by `reset` is used up.
    pub(crate) fn push(&mut self, p: PageRef) -> Result {
        if self.holds_refs || self.entries.len() >= self.entries.capacity() {
            return Err(ENOMEM);
        }
        // Within capacity: no allocation happens, whatever the flags.
        // INVARIANT: `p`'s page stays valid while `p` may be used (the type
        // invariant of `PageRef`); the list holds no references.
        self.entries.push(p, GFP_ATOMIC)?;
        Ok(())
    }

    fn entry(&self, block: usize) -> Result<&PageRef, PageError> {
        self.entries.get(block).ok_or(PageError::Fault)
    }

    /// Copies `out.len()` bytes from `off` in block `block`; the range must
    /// stay inside the block's page.
    pub(crate) fn read(&self, block: usize, off: usize, out: &mut [u8]) -> Result<(), PageError> {
        self.entry(block)?.read(off, out)
    }

    /// Copies `data` to `off` in block `block`.
    pub(crate) fn write(&self, block: usize, off: usize, data: &[u8]) -> Result<(), PageError> {
        self.entry(block)?.write(off, data)
    }

    /// Runs `op` on the 8-byte word at `off` in block `block`; returns the
    /// value it held before.
    pub(crate) fn atomic(&self, block: usize, off: usize, op: AtomicOp) -> Result<u64, PageError> {
        self.entry(block)?.atomic(off, op)
    }

    /// Stores `value` at `off` in block `block`, ordered after all earlier
    /// writes (the IBA atomic write).
    pub(crate) fn store_release(
        &self,
        block: usize,
        off: usize,
        value: u64,
    ) -> Result<(), PageError> {
        self.entry(block)?.store_release(off, value)
    }

    /// Writes back the CPU caches of a range (persistent-memory flush).
    pub(crate) fn flush(&self, block: usize, off: usize, len: usize) -> Result<(), PageError> {
        self.entry(block)?.flush(off, len)
    }

    /// Adds `len` bytes from `off` in block `block` to `out` (see
    /// [`PayloadPages`]); `Ok(false)` when they cannot be referenced.
    pub(crate) fn ref_into(
        &self,
        block: usize,
        off: usize,
        len: usize,
        out: &mut PayloadPages,
    ) -> Result<bool, PageError> {
        self.entry(block)?.ref_into(off, len, out)
    }

    /// Whether every page is persistent memory.
    pub(crate) fn all_pmem(&self) -> bool {
        self.entries.iter().all(PageRef::is_pmem)
    }
}

impl Drop for PageList {
    fn drop(&mut self) {
        if self.holds_refs {
            for p in self.entries.iter() {
                // SAFETY: The list owns one reference per entry (type
                // invariant, `holds_refs`) and gives each back once.
                unsafe { sys::rxe_rs_put_page(p.page.as_ptr()) };
            }
        }
    }
}

/// The kernel's linear map, as a DMA MR exposes it: MR addresses are kernel
/// virtual addresses.
///
/// # Invariants
///
/// Only made for DMA MRs, which only kernel code can create; such code uses
/// the MR's keys with addresses of memory it owns.
pub(crate) struct DmaSpace(());

impl DmaSpace {
    /// # Safety
    ///
    /// Called for a DMA MR (`get_dma_mr`): its users are kernel code that
    /// only names memory it owns through the MR.
    pub(crate) unsafe fn new() -> Self {
        // INVARIANT: Made for a DMA MR (the caller's contract).
        Self(())
    }

    /// Calls `f` on each page-bounded piece of `[addr, addr + len)`: the
    /// block, the piece's offset in the caller's buffer and its length.
    fn for_each_piece(
        addr: u64,
        len: usize,
        mut f: impl FnMut(&PageRef, usize, usize) -> Result<(), PageError>,
    ) -> Result<(), PageError> {
        let mut pos = 0;
        while pos < len {
            let a = addr.checked_add(len64(pos)).ok_or(PageError::Fault)?;
            // SAFETY: The address was given with this DMA MR's key: the
            // kernel user vouches for it (type invariant). The linear-map
            // check rejects anything that has no page.
            let p = unsafe { PageRef::from_kernel_addr(a) }.ok_or(PageError::Fault)?;
            let n = core::cmp::min(len - pos, PAGE_SIZE - p.offset);
            f(&p, pos, n)?;
            pos += n;
        }
        Ok(())
    }

    pub(crate) fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), PageError> {
        Self::for_each_piece(addr, out.len(), |p, pos, n| {
            p.read(0, out.get_mut(pos..pos + n).ok_or(PageError::Fault)?)
        })
    }

    pub(crate) fn write(&self, addr: u64, data: &[u8]) -> Result<(), PageError> {
        Self::for_each_piece(addr, data.len(), |p, pos, n| {
            p.write(0, data.get(pos..pos + n).ok_or(PageError::Fault)?)
        })
    }

    /// Adds `[addr, addr + len)` to `out`; `Ok(false)` when some page of it
    /// cannot be referenced (slab memory, say) or `out` is full.
    pub(crate) fn ref_into(
        &self,
        addr: u64,
        len: usize,
        out: &mut PayloadPages,
    ) -> Result<bool, PageError> {
        let mut ok = true;
        Self::for_each_piece(addr, len, |p, _, n| {
            if ok {
                ok = p.ref_into(0, n, out)?;
            }
            Ok(())
        })?;
        Ok(ok)
    }

    pub(crate) fn atomic(&self, addr: u64, op: AtomicOp) -> Result<u64, PageError> {
        if !atomic_aligned(addr) {
            return Err(PageError::Misaligned);
        }
        // SAFETY: The address was given with this DMA MR's key: the kernel
        // user vouches for it (type invariant). The linear-map check rejects
        // anything that has no page, and an aligned word never crosses one.
        let p = unsafe { PageRef::from_kernel_addr(addr) }.ok_or(PageError::Fault)?;
        p.atomic(0, op)
    }

    pub(crate) fn store_release(&self, addr: u64, value: u64) -> Result<(), PageError> {
        if !atomic_aligned(addr) {
            return Err(PageError::Misaligned);
        }
        // SAFETY: The address was given with this DMA MR's key: the kernel
        // user vouches for it (type invariant). The linear-map check rejects
        // anything that has no page, and an aligned word never crosses one.
        let p = unsafe { PageRef::from_kernel_addr(addr) }.ok_or(PageError::Fault)?;
        p.store_release(0, value)
    }
}

/// The payload of one packet as pieces of pages, each holding a page
/// reference, on its way to becoming the fragments of an skb.
///
/// # Invariants
///
/// The list owns one reference on the page of each of its entries, and
/// each entry lies inside its page.
pub(crate) struct PayloadPages {
    list: FragList<NonNull<sys::page>>,
}

// SAFETY: Page references may be held and dropped on any thread.
unsafe impl Send for PayloadPages {}

impl PayloadPages {
    pub(crate) const fn new() -> Self {
        // INVARIANT: An empty list.
        Self {
            list: FragList::new(),
        }
    }

    /// Payload bytes held.
    pub(crate) fn total(&self) -> usize {
        self.list.total()
    }

    /// Pieces held.
    pub(crate) fn count(&self) -> usize {
        self.list.len()
    }

    /// Appends `[off, off + len)` of `page`, taking a reference; `false`
    /// when the page may not go into an skb (slab memory, or a page nobody
    /// holds) or the list is full.
    ///
    /// # Safety
    ///
    /// `page` is valid for the call and `off + len <= PAGE_SIZE`.
    unsafe fn add(&mut self, page: NonNull<sys::page>, off: usize, len: usize) -> bool {
        // SAFETY: The page is valid (caller); the helper takes a reference
        // only when it returns true.
        if !unsafe { sys::rxe_rs_get_frag_page(page.as_ptr()) } {
            return false;
        }
        match self.list.add(page, off, len) {
            // INVARIANT: The new entry owns the reference just taken, and
            // lies inside its page (`off + len <= PAGE_SIZE`, the caller's
            // contract).
            Added::New => true,
            other => {
                // SAFETY: Gives back the reference taken above, which no
                // entry owns: the last entry already holds one on this page
                // (merged), or nothing was added (full).
                unsafe { sys::rxe_rs_put_page(page.as_ptr()) };
                other == Added::Merged
            }
        }
    }

    /// Drops every piece (and its page reference): the list is empty and
    /// may be filled again.
    pub(crate) fn clear(&mut self) {
        self.drain_frags(|_| false);
    }

    /// Hands each piece in order to `take`, which returns whether it took
    /// over the piece's page reference; the references not taken are
    /// dropped here. The list is empty afterwards.
    pub(super) fn drain_frags(&mut self, mut take: impl FnMut(Frag<NonNull<sys::page>>) -> bool) {
        // INVARIANT: Each piece leaves the list with its reference, taken
        // over by `take` or given back here.
        self.list.drain(|f| {
            if !take(f) {
                // SAFETY: The list owned this reference (type invariant)
                // and `take` did not take it.
                unsafe { sys::rxe_rs_put_page(f.page.as_ptr()) };
            }
        });
    }
}

impl Drop for PayloadPages {
    fn drop(&mut self) {
        self.list.drain(|f| {
            // SAFETY: The list owns one reference per entry (type
            // invariant), given back once as the entry leaves the list.
            unsafe { sys::rxe_rs_put_page(f.page.as_ptr()) };
        });
    }
}
