// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! On-demand paging memory (`struct ib_umem_odp`) behind ODP user MRs.
//!
//! # Locking
//!
//! The datapath runs under spinlocks (and in softirq), so it never takes the
//! core's `umem_mutex` and never faults. [`Odp`] keeps a table of the pages
//! that are present, guarded by a spinlock of its own:
//!
//! - a datapath access takes only that spinlock, and touches memory only
//!   when every page it needs is present (with write permission for a
//!   write); otherwise it fails with [`OdpError::Absent`] and copies nothing;
//! - the MMU-notifier invalidation (process context, may sleep) takes
//!   `umem_mutex`, then the spinlock, and clears the entries of the range
//!   before the core unmaps the pages, so no access can still be using a
//!   page once its invalidation returns;
//! - [`Odp::map`] (process context, no datapath lock held) faults the
//!   range in through the core, which returns with `umem_mutex` held, then
//!   fills the entries under the spinlock.
//!
//! A fault may never end (a FUSE daemon that does not answer), so nothing
//! waits for one: the release mutex is held only to count the faults in
//! progress, never across one, and a release that finds faults in progress
//! leaves the umem to the last of them, which releases it on its way out
//! (the umem must outlive the core's fault on it). Deregistration, and with
//! it process exit, therefore never waits for a fault.
//!
//! Only pages the kernel can copy to and from enter the table: the check is
//! made once per page, as [`Odp::map`] records it, so the datapath (which
//! maps pages with `kmap_local_page` under its spinlocks) never meets secret
//! memory (`memfd_secret`, absent from the direct map) or device memory. A
//! refused page stays absent, and a fault over it fails. Whether a page is
//! persistent memory is recorded then too: the datapath's FLUSH cannot ask
//! the resource tree, whose lock is not safe in softirq.
//!
//! Lock order: `umem_mutex`, table spinlock; the release mutex alone.

use core::mem::size_of;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, Ordering};

use kernel::{
    alloc::flags::__GFP_ZERO,
    error::{from_err_ptr, to_result},
    ffi::{c_int, c_ulong, c_void},
    new_mutex,
    page::PAGE_SHIFT,
    prelude::*,
    sync::{Arc, Mutex},
};

use super::alloc::{caller_sized, vec_set_len};
use super::ibdev::Device;
use super::lock::{new_spinlock_bh, SpinLockBh};
use super::page::{PageError, PageList, PageRef};
use super::task::cond_resched;
use crate::rxe::proto::conv::len64;
use crate::rxe::proto::mr::{AtomicOp, Layout};
use crate::rxe::proto::odp;
use crate::rxe::proto::uapi::access as uapi_access;
use crate::rxe::sys;

/// Why an ODP access did not happen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OdpError {
    /// A page of the range is not present (or not writable for a write):
    /// fault it in with [`Odp::map`] and try again.
    Absent,
    /// The access itself is invalid (outside the range, misaligned).
    Page(PageError),
}

impl From<PageError> for OdpError {
    fn from(e: PageError) -> Self {
        Self::Page(e)
    }
}

/// A table entry: the page's address with [`WRITABLE`] in bit 0 and [`PMEM`]
/// in bit 1, or 0 when the page is absent. Pages are at least 4-byte aligned
/// objects.
type Entry = usize;
const WRITABLE: usize = 1;
/// The page is persistent memory (recorded when it is mapped, in process
/// context: the datapath cannot ask the resource tree).
const PMEM: usize = 2;
const FLAGS: usize = WRITABLE | PMEM;

/// Table entries read under one hold of the table lock.
const MAP_BATCH: usize = 1024;
/// Table entries worked out before one hold of the table lock (on the
/// stack).
const MAP_STAGE: usize = 64;

/// An `ib_umem_odp` pointer, owned by [`Odp`].
struct UmemPtr(NonNull<sys::ib_umem_odp>);

/// The umem and the faults that use it, under the release mutex.
struct Umem {
    /// `None` once released.
    ptr: Option<UmemPtr>,
    /// Calls of [`Odp::map`] in progress with the umem.
    maps: u32,
}

// SAFETY: The umem is used only through the core's calls, which may run on
// any thread in process context.
unsafe impl Send for UmemPtr {}

/// The ODP state of one MR.
///
/// # Invariants
///
/// While `umem` holds a umem, the umem's `private` points at this value and
/// its notifier may call [`invalidate`] with it. Every non-zero entry of
/// `table` names a page the core has mapped for this umem and not yet
/// invalidated and that the CPU may access through the kernel's direct map
/// (`rxe_rs_odp_page` checked it), with [`PMEM`] set only when the page is
/// persistent memory (and `pmem` asked for it): the invalidation clears the
/// entry, under the table lock, before it unmaps the page.
#[pin_data(PinnedDrop)]
pub(crate) struct Odp {
    /// The user address of the first page of the table (page aligned).
    base: u64,
    #[pin]
    umem: Mutex<Umem>,
    #[pin]
    table: SpinLockBh<KVVec<Entry>>,
    /// Set by [`Odp::release`]: the drop then has nothing to do (and takes
    /// no mutex, as the last reference may go in atomic context), and the
    /// last map in progress releases the umem.
    released: AtomicBool,
    /// Whether maps record which pages are persistent memory ([`PMEM`]):
    /// only an MR registered for persistent flushes needs it, and the
    /// question costs a walk of the resource tree per page.
    pmem: bool,
}

fn layout(base: u64) -> Layout {
    // PAGE_SHIFT is a small constant (12 on x86).
    Layout::new(base, PAGE_SHIFT as u32, PAGE_SHIFT as u32)
}

impl Odp {
    /// Registers `[addr, addr + len)` of the calling process for on-demand
    /// paging with rights `access`, and records the pages already present
    /// (nothing is faulted in).
    ///
    /// A range whose per-page arrays could not fit ([`odp::table_fits`])
    /// is refused with `ENOMEM` before the core allocates its own. The
    /// table is allocated only once the core has accepted the range, with
    /// one entry per page of its umem, zeroed by the allocator, as other
    /// caller-sized arrays are: a size the allocator cannot give fails with
    /// `ENOMEM`, quietly.
    /// With `IB_ACCESS_FLUSH_PERSISTENT` in `access`, maps record which
    /// pages are persistent memory.
    pub(crate) fn get<S>(dev: &Device<S>, addr: u64, len: u64, access: u32) -> Result<Arc<Self>> {
        let addr_c = c_ulong::try_from(addr).map_err(|_| EINVAL)?;
        let len_c = usize::try_from(len).map_err(|_| EINVAL)?;
        let first = addr & !((1u64 << PAGE_SHIFT) - 1);
        let pages = odp::pages(first, PAGE_SHIFT as u32, addr, len).ok_or(EINVAL)?;
        // SAFETY: FFI call without arguments that reads a counter, usable in
        // any context.
        let ram = unsafe { sys::rxe_rs_totalram_bytes() };
        if !odp::table_fits(len64(pages.end), len64(size_of::<Entry>()), ram) {
            return Err(ENOMEM);
        }
        // INVARIANT: No umem yet, and the table is empty.
        let odp = Arc::pin_init(
            pin_init!(Self {
                base: first,
                umem <- new_mutex!(Umem { ptr: None, maps: 0 }, "rxe_odp_umem"),
                // Empty until the umem exists: an invalidation before then
                // has nothing to clear.
                table <- new_spinlock_bh!(KVVec::new(), "rxe_odp_table"),
                released: AtomicBool::new(false),
                pmem: access & uapi_access::FLUSH_PERSISTENT != 0,
            }),
            GFP_KERNEL,
        )?;
        let private = core::ptr::from_ref::<Self>(&*odp)
            .cast_mut()
            .cast::<c_void>();
        // The access bits are a C `int` bit set; the same bits either way.
        // SAFETY: The device is alive; `OPS` is static; `private` stays
        // valid until the umem is released, which `release` (or the drop of
        // `odp`) does before the memory goes.
        let ptr = from_err_ptr(unsafe {
            sys::rxe_rs_odp_get(dev.as_ib(), addr_c, len_c, access as c_int, &OPS, private)
        })?;
        let ptr = NonNull::new(ptr).ok_or(ENOMEM)?;
        // SAFETY: `ptr` is the umem just created.
        let (start, npages, shift) = unsafe {
            (
                sys::rxe_rs_odp_start(ptr.as_ptr()),
                sys::rxe_rs_odp_num_pages(ptr.as_ptr()),
                sys::rxe_rs_odp_page_shift(ptr.as_ptr()),
            )
        };
        // INVARIANT: The umem was made with `private`, the address of `odp`,
        // which the `Arc` keeps in place.
        odp.umem.lock().ptr = Some(UmemPtr(ptr));
        // HUGETLB is refused before here, so the core uses system pages.
        // PAGE_SHIFT is a small constant (12 on x86).
        if u64::try_from(start).ok() != Some(first)
            || shift != PAGE_SHIFT as u32
            || pages.end != npages
        {
            odp.release();
            return Err(EINVAL);
        }
        let mut table = match KVVec::with_capacity(npages, caller_sized() | __GFP_ZERO) {
            Ok(t) => t,
            Err(e) => {
                odp.release();
                return Err(e.into());
            }
        };
        // SAFETY: The allocation holds `npages` entries, zeroed by the
        // allocator (`__GFP_ZERO`), and zero is a valid (absent) entry.
        unsafe { vec_set_len(&mut table, npages) };
        // The empty table it replaces is dropped after the lock (no free).
        // INVARIANT: Every entry of the new table is zero.
        let _empty = core::mem::replace(&mut *odp.table.lock(), table);
        if let Err(e) = odp.map(addr, len, false, false) {
            odp.release();
            return Err(e);
        }
        Ok(odp)
    }

    /// Faults `[va, va + len)` (user addresses) in, writable when `write`,
    /// and records the pages; with `fault` false only records the pages
    /// already present. Fails with `EFAULT` when faulting a range with a
    /// page the datapath must not touch (which is never recorded). Process
    /// context only; no spinlock held. A fault may sleep for good (see the
    /// module doc): whoever must not wait for it calls this from a job of
    /// its own (`super::fault`), and holds a reference on the device
    /// meanwhile, which the umem uses.
    pub(crate) fn map(&self, va: u64, len: u64, write: bool, fault: bool) -> Result {
        if len == 0 {
            return Ok(());
        }
        let span = odp::pages(self.base, PAGE_SHIFT as u32, va, len).ok_or(EFAULT)?;
        let ptr = {
            let mut umem = self.umem.lock();
            let Some(UmemPtr(ptr)) = umem.ptr.as_ref() else {
                return Err(EFAULT);
            };
            let ptr = ptr.as_ptr();
            umem.maps += 1;
            ptr
        };
        let res = self.map_umem(ptr, span, va, len, write, fault);
        let last = {
            let mut umem = self.umem.lock();
            umem.maps -= 1;
            if umem.maps == 0 && self.released.load(Ordering::Acquire) {
                umem.ptr.take()
            } else {
                None
            }
        };
        // Released while we faulted: ours is the last use of the umem.
        if let Some(UmemPtr(ptr)) = last {
            self.release_umem(ptr);
        }
        res
    }

    /// The body of [`Odp::map`], with the umem kept alive by the count of
    /// maps in progress.
    fn map_umem(
        &self,
        ptr: *mut sys::ib_umem_odp,
        span: core::ops::Range<usize>,
        va: u64,
        len: u64,
        write: bool,
        fault: bool,
    ) -> Result {
        // SAFETY: The umem is alive: `release` leaves it to the last map in
        // progress. On success the call returns with `umem_mutex` held.
        to_result(unsafe { sys::rxe_rs_odp_map_and_lock(ptr, va, len, write, fault) })?;
        // The entries of a stage are worked out with only the mutexes held
        // (whether a page is persistent memory is asked of the resource
        // tree, whose lock must not nest in the table lock: the table lock
        // is taken in softirq), then stored under one hold of the table
        // lock. `umem_mutex` keeps invalidations out meanwhile.
        // A page the datapath must not touch (secret memory, device memory:
        // see `rxe_rs_odp_page`) stays absent, so every access to it comes
        // here, and a fault over it fails: the access ends in an access
        // error. A snapshot (`fault` false) only leaves it out.
        let mut refused = false;
        let mut stage = [0 as Entry; MAP_STAGE];
        let mut idx = span.start;
        while idx < span.end {
            let n = (span.end - idx).min(MAP_STAGE);
            for (k, slot) in stage.iter_mut().take(n).enumerate() {
                let mut page: *mut sys::page = core::ptr::null_mut();
                let mut writable = false;
                // SAFETY: `umem_mutex` is held; `idx + k` is below the
                // umem's page count (the table has one entry per page, and
                // `span` lies within it); the outputs are locals.
                let r = unsafe { sys::rxe_rs_odp_page(ptr, idx + k, &mut page, &mut writable) };
                refused |= r != 0;
                *slot = match NonNull::new(page) {
                    None => 0,
                    Some(p) => {
                        // SAFETY: The core has the page mapped and
                        // `umem_mutex` keeps its invalidation out; the
                        // reference ends with this statement.
                        let pmem = self.pmem && unsafe { PageList::page_ref(p) }.is_pmem();
                        // Page addresses are aligned: the flag bits are free.
                        (p.as_ptr() as usize)
                            | if writable { WRITABLE } else { 0 }
                            | if pmem { PMEM } else { 0 }
                    }
                };
            }
            {
                let mut table = self.table.lock();
                let Some(dst) = table.get_mut(idx..idx + n) else {
                    break;
                };
                // INVARIANT: Each entry is null or a page the core has
                // mapped at its index that `rxe_rs_odp_page` found usable
                // through the direct map; `umem_mutex` keeps invalidations
                // of them out until after the table lock is dropped.
                dst.copy_from_slice(&stage[..n]);
            }
            idx += n;
            // Only mutexes are held here: a large range gives the CPU up
            // between stages.
            cond_resched();
        }
        // SAFETY: Drops the `umem_mutex` the map call took.
        unsafe { sys::rxe_rs_odp_unlock(ptr) };
        if refused && fault {
            return Err(EFAULT);
        }
        Ok(())
    }

    /// Ends the registration: the notifier is removed and the pages are
    /// unmapped. Later accesses find every page absent and later faults
    /// fail. Process context. Does not wait for faults in progress: the
    /// last of them releases the umem when it ends.
    pub(crate) fn release(&self) {
        let ptr = {
            let mut umem = self.umem.lock();
            self.released.store(true, Ordering::Release);
            if umem.maps == 0 {
                umem.ptr.take()
            } else {
                None
            }
        };
        // Whatever a fault in progress fills in meanwhile stays valid until
        // its own release of the umem clears the table again.
        self.clear_all();
        if let Some(UmemPtr(ptr)) = ptr {
            self.release_umem(ptr);
        }
    }

    fn clear_all(&self) {
        let mut table = self.table.lock();
        // INVARIANT: Zero entries name no page.
        table.iter_mut().for_each(|e| *e = 0);
    }

    /// Releases the umem, taken out of `umem` with no map in progress.
    fn release_umem(&self, ptr: NonNull<sys::ib_umem_odp>) {
        // INVARIANT: The table names no page of the umem about to be
        // released; `ptr` was taken out of `umem` already.
        self.clear_all();
        // SAFETY: We own the umem (taken out of `umem`) and nothing uses it
        // any more: no map is in progress and none can start, and the
        // release waits for running invalidations.
        unsafe { sys::ib_umem_odp_release(ptr.as_ptr()) };
    }

    /// Runs `f` on each page piece of `[va, va + len)` with the table locked,
    /// after checking that every page is present (writable when `write`).
    fn with_pages(
        &self,
        va: u64,
        len: usize,
        write: bool,
        mut f: impl FnMut(PageRef, usize, usize, usize) -> Result<(), PageError>,
    ) -> Result<(), OdpError> {
        let span = odp::pages(self.base, PAGE_SHIFT as u32, va, len64(len))
            .ok_or(OdpError::Page(PageError::Fault))?;
        let table = self.table.lock();
        let need = if write { WRITABLE } else { 0 };
        for idx in span {
            let e = *table.get(idx).ok_or(OdpError::Page(PageError::Fault))?;
            if e == 0 || e & need != need {
                return Err(OdpError::Absent);
            }
        }
        for c in layout(self.base).chunks(va, len) {
            let c = c.map_err(|()| OdpError::Page(PageError::Fault))?;
            let e = *table.get(c.block).ok_or(OdpError::Page(PageError::Fault))?;
            let page = NonNull::new((e & !FLAGS) as *mut sys::page).ok_or(OdpError::Absent)?;
            // SAFETY: The entry stays present while we hold the table lock
            // (type invariant), so the page stays valid for `f`, which keeps
            // no copy of the block.
            f(unsafe { PageList::page_ref(page) }, c.offset, c.len, c.pos)?;
        }
        Ok(())
    }

    /// Whether every page of `[va, va + len)` is present (and writable
    /// when `write`), at the moment of the call.
    pub(crate) fn present(&self, va: u64, len: usize, write: bool) -> bool {
        !matches!(
            self.with_pages(va, len, write, |_, _, _, _| Ok(())),
            Err(OdpError::Absent)
        )
    }

    /// Copies `out.len()` bytes at user address `va` into `out`.
    pub(crate) fn read(&self, va: u64, out: &mut [u8]) -> Result<(), OdpError> {
        let len = out.len();
        self.with_pages(va, len, false, |p, off, n, pos| {
            let dst = out.get_mut(pos..pos + n).ok_or(PageError::Fault)?;
            p.read(off, dst)
        })
    }

    /// Copies `data` to user address `va`.
    pub(crate) fn write(&self, va: u64, data: &[u8]) -> Result<(), OdpError> {
        self.with_pages(va, data.len(), true, |p, off, n, pos| {
            let src = data.get(pos..pos + n).ok_or(PageError::Fault)?;
            p.write(off, src)
        })
    }

    /// An 8-byte atomic at user address `va`; returns the value found.
    pub(crate) fn atomic(&self, va: u64, op: AtomicOp) -> Result<u64, OdpError> {
        let mut old = 0;
        self.with_pages(va, 8, true, |p, off, _, _| {
            old = p.atomic(off, op)?;
            Ok(())
        })?;
        Ok(old)
    }

    /// An 8-byte release store at user address `va`.
    pub(crate) fn store_release(&self, va: u64, value: u64) -> Result<(), OdpError> {
        self.with_pages(va, 8, true, |p, off, _, _| p.store_release(off, value))
    }

    /// Writes `[va, va + len)` back from the CPU caches to persistence,
    /// holding the table lock throughout: callers keep `len` small (a
    /// FLUSH goes piece by piece). Absent pages are skipped: their contents
    /// went back to the page cache or swap when they were invalidated. A
    /// present page that is not persistent memory fails the flush: the
    /// memory behind an ODP MR can change after its registration checked it.
    pub(crate) fn flush(&self, va: u64, len: usize) -> Result<(), OdpError> {
        let table = self.table.lock();
        for c in layout(self.base).chunks(va, len) {
            let c = c.map_err(|()| OdpError::Page(PageError::Fault))?;
            let e = *table.get(c.block).ok_or(OdpError::Page(PageError::Fault))?;
            if let Some(page) = NonNull::new((e & !FLAGS) as *mut sys::page) {
                if e & PMEM == 0 {
                    return Err(OdpError::Page(PageError::Fault));
                }
                // SAFETY: Present while the table lock is held (type
                // invariant); the reference does not outlive this iteration.
                unsafe { PageList::page_ref(page) }.flush(c.offset, c.len)?;
            }
        }
        Ok(())
    }

    /// Whether every page of the range is present and persistent memory
    /// now: what `IB_ACCESS_FLUSH_PERSISTENT` needs of an ODP MR at
    /// registration, as every pinned page must be for other user MRs.
    /// Always false for an ODP MR registered without persistent flushes
    /// (its maps do not record persistent memory).
    /// Process context; the table lock is taken a batch at a time.
    pub(crate) fn all_pmem(&self) -> bool {
        let n = self.table.lock().len();
        let mut idx = 0;
        while idx < n {
            let end = n.min(idx.saturating_add(MAP_BATCH));
            {
                let table = self.table.lock();
                let Some(batch) = table.get(idx..end) else {
                    return false;
                };
                if batch.iter().any(|&e| e == 0 || e & PMEM == 0) {
                    return false;
                }
            }
            idx = end;
            cond_resched();
        }
        true
    }

    /// Marks `[start, end)` (user addresses) absent: the first half of an
    /// invalidation, with `umem_mutex` held.
    fn clear(&self, start: u64, end: u64) {
        let Some(len) = end.checked_sub(start) else {
            return;
        };
        let Some(span) = odp::pages(self.base, PAGE_SHIFT as u32, start, len) else {
            return;
        };
        let mut table = self.table.lock();
        for idx in span {
            if let Some(e) = table.get_mut(idx) {
                // INVARIANT: Cleared before the core unmaps the page.
                *e = 0;
            }
        }
    }
}

#[pinned_drop]
impl PinnedDrop for Odp {
    fn drop(self: Pin<&mut Self>) {
        // Normally done by the MR's deregistration already; here for the
        // error paths of registration.
        if !self.released.load(Ordering::Acquire) {
            self.release();
        }
    }
}

/// The notifier callback of every rxe ODP umem.
///
/// # Safety
///
/// Called by the MMU-notifier core for a notifier of a umem made by
/// [`Odp::get`].
unsafe extern "C" fn invalidate(
    mni: *mut sys::mmu_interval_notifier,
    range: *const sys::mmu_notifier_range,
    cur_seq: c_ulong,
) -> bool {
    let mut private: *mut c_void = core::ptr::null_mut();
    let mut start = 0u64;
    let mut end = 0u64;
    // SAFETY: `mni` and `range` are the arguments the core passed for a
    // notifier of one of our umems (the caller's contract); the outputs are
    // locals.
    if !unsafe {
        sys::rxe_rs_odp_invalidate_begin(mni, range, cur_seq, &mut private, &mut start, &mut end)
    } {
        return false;
    }
    if !private.is_null() {
        // SAFETY: By the type invariant of `Odp`, `private` is the `Odp` of
        // this umem, which holds it until its release; the release waits for
        // this callback, so the `Odp` is alive for the call.
        let odp = unsafe { &*private.cast::<Odp>() };
        odp.clear(start, end);
    }
    // SAFETY: Pairs with the begin call above (drops `umem_mutex`).
    unsafe { sys::rxe_rs_odp_invalidate_end(mni, start, end) };
    true
}

/// The notifier operations of rxe ODP umems.
static OPS: sys::mmu_interval_notifier_ops = sys::mmu_interval_notifier_ops {
    invalidate: Some(invalidate),
    #[cfg(rxe_kernel_7)]
    invalidate_start: None,
    #[cfg(rxe_kernel_7)]
    invalidate_finish: None,
};

/// The registration an ODP MR owns: ends it (notifier removed, pages
/// unmapped) when dropped, in process context, even while the datapath
/// still holds the [`Odp`].
pub(crate) struct OdpReg(Arc<Odp>);

impl OdpReg {
    pub(crate) fn new(odp: Arc<Odp>) -> Self {
        Self(odp)
    }

    /// [`Odp::all_pmem`] of the registration.
    pub(crate) fn all_pmem(&self) -> bool {
        self.0.all_pmem()
    }
}

impl Drop for OdpReg {
    fn drop(&mut self) {
        self.0.release();
    }
}
