// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Memory regions: the registration verbs, rdma_rxe's key and state rules,
//! and the memory-access API of the datapath.
//!
//! # Datapath API
//!
//! - [`lookup`]`(dev, key, kind, pd, access) -> Result<Arc<Shared>, AccessError>`
//!   resolves an lkey ([`KeyKind::Local`]) or an rkey ([`KeyKind::Remote`],
//!   which may name an MR or a bound memory window) after checking the key
//!   byte, the PD, the state and the rights. For a window the result is a
//!   view of the window: the same copy methods, bounded by the window and
//!   translated for zero-based windows.
//! - On the result: [`Shared::copy_in`], [`Shared::copy_out`],
//!   [`Shared::check_range`], [`Shared::atomic_op`] (8-byte compare-swap or
//!   fetch-add, returns the old value), [`Shared::atomic_write`],
//!   [`Shared::flush`], [`Shared::bounds`]. Addresses are iovas of the
//!   region (or window); every access is bounds-checked with overflow-safe
//!   arithmetic and fails on a region that stopped being valid.
//! - Local operations, run by the requester (and by the responder for send
//!   with invalidate): [`fast_reg`] for a REG_MR work request,
//!   [`invalidate_key`] for LOCAL_INV (MR or MW key), [`crate::rxe::mw::bind`]
//!   for BIND_MW. They return `EINVAL`/`EOPNOTSUPP` as the C driver does; the
//!   requester turns any error into the C work-completion status
//!   (LOCAL_INV/REG_MR: `IB_WC_LOC_QP_OP_ERR`, BIND_MW: `IB_WC_MW_BIND_ERR`).
//!   A kernel REG_MR names its MR by the lkey its `ib_mr` had when posted
//!   and carries the `ib_mr`'s iova and length of that moment ([`FastReg`]).
//!
//! Rights are [`Access`] (`ib_access_flags`); atomics are [`AtomicOp`].
//!
//! # Objects
//!
//! An MR is [`Mr`] (owned by its `ib_mr`, which the driver allocates) and a
//! [`Shared`] part that the device's `mrs` pool and the datapath hold. A
//! user MR's pages carry page references of their own, so a datapath copy
//! still running when the MR is deregistered touches pages that stay
//! allocated until its `Arc` goes, while the pin of the user range ends at
//! deregistration as in C.

use core::sync::atomic::{AtomicU32, Ordering};

use kernel::{alloc::flags::__GFP_NOWARN, page::PAGE_SHIFT, prelude::*, sync::Arc};

use crate::rxe::device::{Device, DeviceState, ObjCount, ObjKind};
use crate::rxe::kernel::{
    alloc::caller_sized,
    lock::{new_spinlock_bh, SpinLockBh},
    odp::{Odp, OdpError, OdpReg},
    page::{DmaSpace, PageError, PageList, PageRef, PayloadPages},
    random,
    umem::Umem,
};
use crate::rxe::mw;
use crate::rxe::proto::conv::{len64, to_usize};
use crate::rxe::proto::mr_logic::{
    self as rules, rereg, Chunk, InvalidateError, Layout, MrFacts, MrType, RuleError, State,
};
use crate::rxe::proto::odp_logic::{self, Span};
use crate::rxe::qp;

/// The rights (`ib_access_flags`) and atomics of the API, for its users.
pub(crate) use crate::rxe::proto::mr_logic::{Access, AtomicOp};

/// The identity of a protection domain: the address of its `ib_pd`, stable
/// while the PD lives (PDs outlive the objects created in them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PdId(pub(crate) usize);

/// The identity of a QP for type 2 window checks: the address of its
/// `qp::Shared`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct QpId(usize);

impl QpId {
    pub(crate) fn of(qp: &qp::Shared) -> Self {
        // The address is the identity; it is never turned back into a pointer.
        Self(core::ptr::from_ref(qp) as usize)
    }
}

/// Which key of an object a lookup matches.
#[derive(Clone, Copy, Debug)]
pub(crate) enum KeyKind {
    /// An lkey from a local SGE: MRs only.
    Local,
    /// An rkey from a packet (RETH/ATMETH): an MR, or a window bound to
    /// this QP when it is a type 2 window.
    Remote { qp: QpId },
}

/// Why a memory access was refused. The datapath maps these to its own
/// outcomes (C: a failed lookup is an rkey violation or a local protection
/// error, a misaligned atomic is its own NAK).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AccessError {
    /// No object with that key, or the key byte, PD, state or rights do not
    /// allow the access.
    Key,
    /// The range is outside the region or window.
    Range,
    /// An atomic on an address that is not 8-byte aligned.
    Misaligned,
    /// No memory behind the address (C: `-EFAULT`).
    Fault,
    /// An on-demand-paging MR does not have a page of the range present:
    /// nothing was accessed; [`Shared::fault`] the range in from process
    /// context and retry.
    Absent,
}

impl From<OdpError> for AccessError {
    fn from(e: OdpError) -> Self {
        match e {
            OdpError::Absent => Self::Absent,
            OdpError::Page(p) => p.into(),
        }
    }
}

impl From<PageError> for AccessError {
    fn from(e: PageError) -> Self {
        match e {
            PageError::Fault => Self::Fault,
            PageError::Misaligned => Self::Misaligned,
        }
    }
}

fn rule_errno(e: RuleError) -> Error {
    match e {
        RuleError::Invalid => EINVAL,
        RuleError::NotSupported => crate::rxe::kernel::errno::eopnotsupp(),
    }
}

/// Where the bytes of a region are.
enum Memory {
    /// Nothing yet (a fast-reg MR before its first mapping) or a window.
    None,
    /// Kernel virtual addresses (DMA MR).
    Dma(DmaSpace),
    /// A block list (user and fast-reg MRs).
    Pages(PageList),
    /// On-demand paging user memory at user address `start`.
    Odp { odp: Arc<Odp>, start: u64 },
}

/// What the datapath and the verbs change, under one lock.
struct Inner {
    state: State,
    lkey: u32,
    rkey: u32,
    access: Access,
    pd: PdId,
    iova: u64,
    length: u64,
    page_shift: u32,
    mem: Memory,
    /// Fast-reg MRs: the list `map_mr_sg` fills before it replaces `mem`,
    /// and the page size it is filled for.
    staging: Option<PageList>,
    staging_shift: u32,
}

impl Inner {
    /// Whether `key` (local or remote, as `kind` says) grants `access` to
    /// a QP of `pd` now.
    fn key_grants(
        &self,
        key: u32,
        kind: KeyKind,
        pd: PdId,
        access: Access,
    ) -> Result<(), AccessError> {
        let own = match kind {
            KeyKind::Local => self.lkey,
            KeyKind::Remote { .. } => self.rkey,
        };
        if own != key
            || self.pd != pd
            || !self.access.contains(access)
            || self.state != State::Valid
        {
            return Err(AccessError::Key);
        }
        Ok(())
    }

    fn layout(&self) -> Layout {
        // PAGE_SHIFT is a small constant (12 on x86).
        Layout::new(self.iova, self.page_shift, PAGE_SHIFT as u32)
    }

    fn in_range(&self, iova: u64, len: u64) -> bool {
        rules::range_ok(self.iova, self.length, iova, len)
    }

    fn facts(&self, mr_type: MrType, bound_mws: u32) -> MrFacts {
        MrFacts {
            mr_type,
            state: self.state,
            lkey: self.lkey,
            rkey: self.rkey,
            access: self.access,
            bound_mws,
        }
    }

    /// Runs `f` on each block-bounded piece of `[iova, iova + len)`, after
    /// the state and range checks every access makes.
    fn each_chunk(
        &self,
        iova: u64,
        len: usize,
        mut f: impl FnMut(&PageList, Chunk) -> Result<(), AccessError>,
    ) -> Result<(), AccessError> {
        let Memory::Pages(pages) = &self.mem else {
            return Err(AccessError::Fault);
        };
        if !self.in_range(iova, len64(len)) {
            return Err(AccessError::Range);
        }
        for c in self.layout().chunks(iova, len) {
            f(pages, c.map_err(|()| AccessError::Range)?)?;
        }
        Ok(())
    }

    /// The ODP memory and the user address of `[iova, iova + len)`, for
    /// an ODP MR (`None` for other MRs).
    fn odp(&self, iova: u64, len: u64) -> Option<Result<(&Odp, u64), AccessError>> {
        let Memory::Odp { odp, start } = &self.mem else {
            return None;
        };
        let span = Span {
            iova: self.iova,
            start: *start,
            length: self.length,
        };
        Some(
            span.user_va(iova, len)
                .map(|va| (&**odp, va))
                .ok_or(AccessError::Range),
        )
    }

    fn usable(&self) -> Result<(), AccessError> {
        if self.state == State::Valid {
            Ok(())
        } else {
            Err(AccessError::Key)
        }
    }
}

/// A memory window's view of its MR: what an rkey of a bound window grants.
struct Window {
    mr: Arc<Shared>,
    addr: u64,
    length: u64,
    zero_based: bool,
}

impl Window {
    /// The MR iova of window address `va`, if `[va, va + len)` is inside.
    fn target(&self, va: u64, len: u64) -> Result<u64, AccessError> {
        rules::window_target(self.addr, self.length, self.zero_based, va, len)
            .ok_or(AccessError::Range)
    }
}

/// The part of an MR the device's pool and the datapath hold.
#[pin_data]
pub(crate) struct Shared {
    mr_type: MrType,
    /// Set for the views windows hand out; `inner` is then unused.
    window: Option<Window>,
    #[pin]
    inner: SpinLockBh<Inner>,
    /// Windows bound to this MR; deregistration is refused while non-zero.
    bound_mws: AtomicU32,
}

impl Shared {
    fn new(mr_type: MrType, window: Option<Window>, inner: Inner) -> impl PinInit<Self> {
        pin_init!(Self {
            mr_type,
            window,
            inner <- new_spinlock_bh!(inner, "rxe_mr"),
            bound_mws: AtomicU32::new(0),
        })
    }

    fn blank(pd: PdId, access: Access, iova: u64, length: u64, mem: Memory) -> Inner {
        Inner {
            state: State::Invalid,
            lkey: 0,
            rkey: 0,
            access,
            pd,
            iova,
            length,
            // PAGE_SHIFT is a small constant (12 on x86).
            page_shift: PAGE_SHIFT as u32,
            mem,
            staging: None,
            // PAGE_SHIFT is a small constant (12 on x86).
            staging_shift: PAGE_SHIFT as u32,
        }
    }

    /// A view of `[addr, addr + length)` of `mr` for a bound window.
    /// Allocated atomically: binds run in the requester.
    pub(crate) fn window(
        mr: &Arc<Shared>,
        addr: u64,
        length: u64,
        zero_based: bool,
        pd: PdId,
    ) -> Result<Arc<Self>> {
        let w = Window {
            mr: mr.clone(),
            addr,
            length,
            zero_based,
        };
        let mut inner = Self::blank(pd, Access::NONE, addr, length, Memory::None);
        inner.state = State::Valid;
        Arc::pin_init(Self::new(mr.mr_type, Some(w), inner), GFP_ATOMIC)
    }

    pub(crate) fn lkey(&self) -> u32 {
        self.inner.lock().lkey
    }

    /// The address range a key grants: `(iova, length)` of the region, or of
    /// the window as its users address it (from 0 when zero based). A DMA
    /// MR reports `(0, 0)`, as its `ib_mr` does.
    pub(crate) fn bounds(&self) -> (u64, u64) {
        if let Some(w) = &self.window {
            return (if w.zero_based { 0 } else { w.addr }, w.length);
        }
        let i = self.inner.lock();
        (i.iova, i.length)
    }

    /// Whether `key` still grants `access` to a QP of `pd` (what [`lookup`]
    /// checks), for callers that keep an MR across accesses.
    pub(crate) fn check_key(
        &self,
        key: u32,
        kind: KeyKind,
        pd: PdId,
        access: Access,
    ) -> Result<(), AccessError> {
        self.inner.lock().key_grants(key, kind, pd, access)
    }

    /// [`Shared::check_key`] and, with `range`, [`Shared::check_range`]
    /// under one lock.
    fn check_key_range(
        &self,
        key: u32,
        kind: KeyKind,
        pd: PdId,
        access: Access,
        range: Option<(u64, u64)>,
    ) -> Result<(), AccessError> {
        if self.window.is_some() {
            self.check_key(key, kind, pd, access)?;
            return range.map_or(Ok(()), |(iova, len)| self.check_range(iova, len));
        }
        let i = self.inner.lock();
        i.key_grants(key, kind, pd, access)?;
        match (range, &i.mem) {
            (None, _) | (_, Memory::Dma(_)) => Ok(()),
            (Some((iova, len)), _) if i.in_range(iova, len) => Ok(()),
            _ => Err(AccessError::Range),
        }
    }

    /// Whether `[iova, iova + len)` is inside the region (C's
    /// `mr_check_range`; a DMA MR covers everything).
    pub(crate) fn check_range(&self, iova: u64, len: u64) -> Result<(), AccessError> {
        if let Some(w) = &self.window {
            return w.mr.check_range(w.target(iova, len)?, len);
        }
        let i = self.inner.lock();
        match i.mem {
            Memory::Dma(_) => Ok(()),
            _ if i.in_range(iova, len) => Ok(()),
            _ => Err(AccessError::Range),
        }
    }

    /// Copies `data` into the region at `iova`.
    pub(crate) fn copy_in(&self, iova: u64, data: &[u8]) -> Result<(), AccessError> {
        if data.is_empty() {
            return Ok(());
        }
        if let Some(w) = &self.window {
            return w.mr.copy_in(w.target(iova, len64(data.len()))?, data);
        }
        let i = self.inner.lock();
        i.usable()?;
        if let Memory::Dma(d) = &i.mem {
            return Ok(d.write(iova, data)?);
        }
        if let Some(o) = i.odp(iova, len64(data.len())) {
            let (odp, va) = o?;
            return Ok(odp.write(va, data)?);
        }
        i.each_chunk(iova, data.len(), |pages, c| {
            let src = data.get(c.pos..c.pos + c.len).ok_or(AccessError::Fault)?;
            Ok(pages.write(c.block, c.offset, src)?)
        })
    }

    /// Copies `out.len()` bytes of the region at `iova` into `out`.
    pub(crate) fn copy_out(&self, iova: u64, out: &mut [u8]) -> Result<(), AccessError> {
        if out.is_empty() {
            return Ok(());
        }
        if let Some(w) = &self.window {
            return w.mr.copy_out(w.target(iova, len64(out.len()))?, out);
        }
        let i = self.inner.lock();
        i.usable()?;
        if let Memory::Dma(d) = &i.mem {
            return Ok(d.read(iova, out)?);
        }
        if let Some(o) = i.odp(iova, len64(out.len())) {
            let (odp, va) = o?;
            return Ok(odp.read(va, out)?);
        }
        i.each_chunk(iova, out.len(), |pages, c| {
            let dst = out
                .get_mut(c.pos..c.pos + c.len)
                .ok_or(AccessError::Fault)?;
            Ok(pages.read(c.block, c.offset, dst)?)
        })
    }

    /// Adds `len` bytes of the region at `iova` to `out` as page pieces,
    /// each with a page reference, for sending without a copy. The checks
    /// are those of [`Shared::copy_out`]; `Ok(false)` when the memory
    /// cannot be referenced (kernel slab memory, too many pieces), and the
    /// caller copies instead.
    pub(crate) fn ref_pages(
        &self,
        iova: u64,
        len: usize,
        out: &mut PayloadPages,
    ) -> Result<bool, AccessError> {
        if len == 0 {
            return Ok(true);
        }
        if let Some(w) = &self.window {
            return w.mr.ref_pages(w.target(iova, len64(len))?, len, out);
        }
        let i = self.inner.lock();
        i.usable()?;
        if let Memory::Dma(d) = &i.mem {
            return Ok(d.ref_into(iova, len, out)?);
        }
        if let Memory::Odp { .. } = &i.mem {
            // ODP pages may be invalidated and freed while an skb would
            // still hold them: always copy.
            return Ok(false);
        }
        let mut ok = true;
        i.each_chunk(iova, len, |pages, c| {
            if ok {
                ok = pages.ref_into(c.block, c.offset, c.len, out)?;
            }
            Ok(())
        })?;
        Ok(ok)
    }

    /// Runs an 8-byte atomic at `iova` and returns the value it found.
    pub(crate) fn atomic_op(&self, iova: u64, op: AtomicOp) -> Result<u64, AccessError> {
        if let Some(w) = &self.window {
            return w.mr.atomic_op(w.target(iova, 8)?, op);
        }
        let i = self.inner.lock();
        i.usable()?;
        match &i.mem {
            Memory::Dma(d) => Ok(d.atomic(iova, op)?),
            Memory::Odp { .. } => {
                let (odp, va) = i.odp(iova, 8).ok_or(AccessError::Fault)??;
                Ok(odp.atomic(va, op)?)
            }
            Memory::Pages(pages) => {
                if !i.in_range(iova, 8) {
                    return Err(AccessError::Range);
                }
                let (block, off) = i.layout().locate(iova).ok_or(AccessError::Range)?;
                Ok(pages.atomic(block, off, op)?)
            }
            Memory::None => Err(AccessError::Fault),
        }
    }

    /// Stores 8 bytes at `iova` after everything written before (the
    /// ATOMIC WRITE operation).
    pub(crate) fn atomic_write(&self, iova: u64, value: u64) -> Result<(), AccessError> {
        if let Some(w) = &self.window {
            return w.mr.atomic_write(w.target(iova, 8)?, value);
        }
        let i = self.inner.lock();
        i.usable()?;
        match &i.mem {
            Memory::Dma(d) => Ok(d.store_release(iova, value)?),
            Memory::Odp { .. } => {
                let (odp, va) = i.odp(iova, 8).ok_or(AccessError::Fault)??;
                Ok(odp.store_release(va, value)?)
            }
            Memory::Pages(pages) => {
                if !i.in_range(iova, 8) {
                    return Err(AccessError::Range);
                }
                let (block, off) = i.layout().locate(iova).ok_or(AccessError::Range)?;
                Ok(pages.store_release(block, off, value)?)
            }
            Memory::None => Err(AccessError::Fault),
        }
    }

    /// Writes `[iova, iova + len)` back from the CPU caches (FLUSH). Not
    /// available on DMA MRs, as in C.
    pub(crate) fn flush(&self, iova: u64, len: u64) -> Result<(), AccessError> {
        if len == 0 {
            return Ok(());
        }
        if let Some(w) = &self.window {
            return w.mr.flush(w.target(iova, len)?, len);
        }
        let len = usize::try_from(len).map_err(|_| AccessError::Range)?;
        let i = self.inner.lock();
        if let Memory::Dma(_) = i.mem {
            return Err(AccessError::Fault);
        }
        if let Some(o) = i.odp(iova, len64(len)) {
            let (odp, va) = o?;
            return Ok(odp.flush(va, len)?);
        }
        i.each_chunk(iova, len, |pages, c| {
            Ok(pages.flush(c.block, c.offset, c.len)?)
        })
    }

    /// Makes the pages of `[iova, iova + len)` present (writable when
    /// `write`) for an access that failed with [`AccessError::Absent`].
    /// Sleeps: process context, with no datapath lock held. `Ok` for MRs
    /// that are not ODP MRs (nothing to do).
    pub(crate) fn fault(&self, iova: u64, len: u64, write: bool) -> Result<(), AccessError> {
        self.odp_map(iova, len, write, true)
    }

    /// [`Shared::fault`], or with `fault` false a snapshot of the pages
    /// already present (prefetch without faults).
    fn odp_map(&self, iova: u64, len: u64, write: bool, fault: bool) -> Result<(), AccessError> {
        if let Some(w) = &self.window {
            return w.mr.odp_map(w.target(iova, len)?, len, write, fault);
        }
        let (odp, va) = {
            let i = self.inner.lock();
            let Memory::Odp { odp, .. } = &i.mem else {
                return Ok(());
            };
            let (_, va) = i.odp(iova, len).ok_or(AccessError::Fault)??;
            (odp.clone(), va)
        };
        odp.map(va, len, write, fault)
            .map_err(|_| AccessError::Fault)
    }

    /// Whether `[iova, iova + len)` can be accessed without a fault: always
    /// for MRs that are not ODP MRs (and for ranges the access itself will
    /// refuse).
    pub(crate) fn present(&self, iova: u64, len: u64, write: bool) -> bool {
        if let Some(w) = &self.window {
            return match w.target(iova, len) {
                Ok(t) => w.mr.present(t, len, write),
                Err(_) => true,
            };
        }
        let Ok(n) = usize::try_from(len) else {
            return true;
        };
        let i = self.inner.lock();
        match i.odp(iova, len) {
            Some(Ok((odp, va))) => odp.present(va, n, write),
            _ => true,
        }
    }

    /// Executes a REG_MR work request: a free fast-reg MR of the QP's PD
    /// takes the new key byte, rights and range (`iova`/`length` are the
    /// `ib_mr` fields the kernel user set up through `ib_map_mr_sg`, and
    /// bound every later access through the new key).
    fn fast_reg(&self, qp_pd: PdId, reg: &FastReg) -> Result {
        let mut i = self.inner.lock();
        let facts = i.facts(self.mr_type, self.bound_mws.load(Ordering::Relaxed));
        rules::check_fast_reg(&facts, i.pd == qp_pd, reg.key).map_err(rule_errno)?;
        i.access = reg.access;
        i.lkey = reg.key;
        i.rkey = reg.key;
        i.iova = reg.iova;
        i.length = reg.length;
        i.state = State::Valid;
        Ok(())
    }

    /// Invalidates a fast-reg MR by key (LOCAL_INV, send with invalidate)
    /// for a QP of PD `qp_pd`.
    pub(crate) fn invalidate(&self, key: u32, qp_pd: PdId) -> Result<(), InvalidateError> {
        let mut i = self.inner.lock();
        let facts = i.facts(self.mr_type, self.bound_mws.load(Ordering::Relaxed));
        rules::check_invalidate_mr(&facts, key, i.pd == qp_pd)?;
        i.state = State::Free;
        Ok(())
    }

    /// What a bind needs to know about this MR, for a QP of `qp_pd`.
    pub(crate) fn bind_facts(&self, qp_pd: PdId) -> rules::BindMr {
        let i = self.inner.lock();
        rules::BindMr {
            same_pd: i.pd == qp_pd,
            access: i.access,
            iova: i.iova,
            length: i.length,
        }
    }

    pub(crate) fn bound_mws(&self) -> u32 {
        self.bound_mws.load(Ordering::Relaxed)
    }

    pub(crate) fn add_bound_mw(&self) {
        self.bound_mws.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn drop_bound_mw(&self) {
        self.bound_mws.fetch_sub(1, Ordering::Relaxed);
    }

    /// Makes the MR usable under `key` (`index << 8 | byte`).
    fn activate(&self, key: u32, state: State) {
        let mut i = self.inner.lock();
        i.lkey = key;
        i.rkey = key;
        i.state = state;
    }

    /// Ends every later access through references the datapath still holds.
    fn retire(&self) {
        let mut i = self.inner.lock();
        i.state = State::Invalid;
    }
}

/// An access that found an ODP page absent: what to fault in before it
/// runs again.
pub(crate) struct PendingFault {
    pub(crate) mr: Arc<Shared>,
    pub(crate) iova: u64,
    pub(crate) len: u64,
    pub(crate) write: bool,
}

impl PendingFault {
    /// Faults the range in. Process context, no datapath lock held.
    pub(crate) fn resolve(&self) -> Result<(), AccessError> {
        self.mr.fault(self.iova, self.len, self.write)
    }
}

/// Resolves `key` for an access with `access` rights by a QP in PD `pd`.
pub(crate) fn lookup(
    dev: &DeviceState,
    key: u32,
    kind: KeyKind,
    pd: PdId,
    access: Access,
) -> Result<Arc<Shared>, AccessError> {
    if let KeyKind::Remote { qp } = kind {
        if rules::rkey_is_mw(key) {
            return mw::lookup(dev, key, qp, pd, access);
        }
    }
    let mr = dev.mrs.get(rules::key_index(key)).ok_or(AccessError::Key)?;
    mr.check_key(key, kind, pd, access)?;
    Ok(mr)
}

/// [`lookup`], then with `range` the check that `(iova, len)` lies in
/// the region, the key and range checked under one lock of the MR.
pub(crate) fn lookup_range(
    dev: &DeviceState,
    key: u32,
    kind: KeyKind,
    pd: PdId,
    access: Access,
    range: Option<(u64, u64)>,
) -> Result<Arc<Shared>, AccessError> {
    if let KeyKind::Remote { qp } = kind {
        if rules::rkey_is_mw(key) {
            let mr = mw::lookup(dev, key, qp, pd, access)?;
            if let Some((iova, len)) = range {
                mr.check_range(iova, len)?;
            }
            return Ok(mr);
        }
    }
    let mr = dev.mrs.get(rules::key_index(key)).ok_or(AccessError::Key)?;
    mr.check_key_range(key, kind, pd, access, range)?;
    Ok(mr)
}

/// `ibv_advise_mr`: prefetches the ranges `(lkey, iova, length)` of ODP
/// MRs of PD `pd` as `advice` says. Process context (it may fault pages
/// in). The MRs must allow local writes, as in C. With `sync` false the
/// prefetch is best effort: only a bad key is reported.
pub(crate) fn advise(
    dev: &DeviceState,
    pd: PdId,
    advice: odp_logic::Advice,
    sync: bool,
    sges: impl Iterator<Item = (u32, u64, u32)>,
) -> Result {
    for (lkey, iova, len) in sges {
        let mr = lookup(dev, lkey, KeyKind::Local, pd, Access::LOCAL_WRITE).map_err(|_| EINVAL)?;
        let r = mr.odp_map(iova, u64::from(len), advice.write(), advice.fault());
        if sync {
            r.map_err(|_| EFAULT)?;
        }
    }
    Ok(())
}

/// A REG_MR work request as a kernel user posted it.
pub(crate) struct FastReg {
    /// The lkey of the request's `ib_mr` when it was posted: its index is
    /// the MR's pool index (a REG_MR changes only the key byte).
    pub(crate) mr_lkey: u32,
    /// The new lkey and rkey; its index must be the MR's.
    pub(crate) key: u32,
    pub(crate) access: Access,
    pub(crate) iova: u64,
    pub(crate) length: u64,
}

/// Executes a REG_MR work request on the MR its `ib_mr` names (found by
/// the index of that MR's lkey, as C follows the request's `ib_mr`). The new
/// key must keep the MR's index; `EINVAL` as in C otherwise, or when there
/// is no such MR any more.
pub(crate) fn fast_reg(dev: &DeviceState, qp_pd: PdId, reg: &FastReg) -> Result {
    let mr = dev.mrs.get(rules::key_index(reg.mr_lkey)).ok_or(EINVAL)?;
    mr.fast_reg(qp_pd, reg)
}

/// LOCAL_INV and send with invalidate: invalidates the MR or window `key`
/// names, if `qp` (of PD `pd`) may.
pub(crate) fn invalidate_key(
    dev: &DeviceState,
    key: u32,
    pd: PdId,
    qp: QpId,
) -> Result<(), InvalidateError> {
    if rules::rkey_is_mw(key) {
        return mw::invalidate(dev, key, pd, qp);
    }
    let mr = dev
        .mrs
        .get(rules::key_index(key))
        .ok_or(InvalidateError::Invalid)?;
    mr.invalidate(key, pd)
}

/// A memory region, as its `ib_mr` owns it.
pub(crate) struct Mr {
    shared: Arc<Shared>,
    index: u32,
    /// Fast-reg MRs: how many blocks a mapping may hold (`max_num_sg`).
    max_sg: usize,
    /// User MRs: the pinned range, unpinned when the MR goes.
    umem: Option<Umem>,
    /// ODP MRs: the registration, ended when the MR goes.
    _odp: Option<OdpReg>,
    _slot: ObjCount,
}

/// What the `ib_mr` of a new MR reports.
pub(crate) struct Keys {
    pub(crate) lkey: u32,
    pub(crate) rkey: u32,
}

impl Mr {
    /// Puts a new MR into the device's pool under a fresh key.
    fn publish(
        dev: &Device,
        shared: Arc<Shared>,
        slot: ObjCount,
        umem: Option<Umem>,
        max_sg: usize,
        state: State,
    ) -> Result<Self> {
        let index = dev.state().mrs.insert(shared.clone())?;
        let key = rules::make_key(index, random::u8());
        shared.activate(key, state);
        Ok(Self {
            shared,
            index,
            max_sg,
            umem,
            _odp: None,
            _slot: slot,
        })
    }

    /// `get_dma_mr`: an MR over all kernel memory, for kernel users.
    pub(crate) fn dma(dev: &Device, pd: PdId, access: u32, space: DmaSpace) -> Result<Self> {
        let slot = dev.state().take_slot(ObjKind::Mr)?;
        let inner = Shared::blank(pd, Access::from_raw(access), 0, 0, Memory::Dma(space));
        let shared = Arc::pin_init(Shared::new(MrType::Dma, None, inner), GFP_KERNEL)?;
        Self::publish(dev, shared, slot, None, 0, State::Valid)
    }

    /// `reg_user_mr`: pins `[start, start + length)` of the caller, seen by
    /// the MR's users at `iova`.
    pub(crate) fn user(
        dev: &Device,
        pd: PdId,
        start: u64,
        length: u64,
        iova: u64,
        access: u32,
    ) -> Result<Self> {
        let access = Access::from_raw(access);
        rules::check_reg_access(access).map_err(rule_errno)?;
        if access.contains(Access::ON_DEMAND) {
            return Self::user_odp(dev, pd, start, length, iova, access);
        }
        let slot = dev.state().take_slot(ObjKind::Mr)?;
        let umem = Umem::get(dev, start, length, access.bits())?;
        let pages = umem.pages()?;
        if access.contains(Access::FLUSH_PERSISTENT) && !pages.all_pmem() {
            return Err(EINVAL);
        }
        let inner = Shared::blank(pd, access, iova, length, Memory::Pages(pages));
        let shared = Arc::pin_init(Shared::new(MrType::User, None, inner), GFP_KERNEL)?;
        Self::publish(dev, shared, slot, Some(umem), 0, State::Valid)
    }

    /// `reg_user_mr` with `IB_ACCESS_ON_DEMAND`: nothing is pinned; pages
    /// are looked up as they are, faulted in when an access finds them
    /// absent and dropped when the MMU notifier invalidates them.
    fn user_odp(
        dev: &Device,
        pd: PdId,
        start: u64,
        length: u64,
        iova: u64,
        access: Access,
    ) -> Result<Self> {
        odp_logic::check_reg(start, length, iova).map_err(|_| EINVAL)?;
        let slot = dev.state().take_slot(ObjKind::Mr)?;
        let odp = Odp::get(dev, start, length, access.bits())?;
        let reg = OdpReg::new(odp.clone());
        let mem = Memory::Odp { odp, start };
        let inner = Shared::blank(pd, access, iova, length, mem);
        let shared = Arc::pin_init(Shared::new(MrType::User, None, inner), GFP_KERNEL)?;
        let mut mr = Self::publish(dev, shared, slot, None, 0, State::Valid)?;
        mr._odp = Some(reg);
        Ok(mr)
    }

    /// `alloc_mr(IB_MR_TYPE_MEM_REG)`: a fast-reg MR of up to `max_sg`
    /// pages, free until a REG_MR makes it valid.
    ///
    /// Both block lists (the one in use and the one the next `map_mr_sg`
    /// fills) are allocated here: kernel users map in atomic context
    /// (nvme-rdma from `queue_rq`, under RCU), where only small atomic
    /// allocations are allowed, as C preallocates its page list here too.
    pub(crate) fn fast(dev: &Device, pd: PdId, max_sg: u32) -> Result<Self> {
        let max_sg = usize::try_from(max_sg).map_err(|_| EINVAL)?;
        let slot = dev.state().take_slot(ObjKind::Mr)?;
        let pages = PageList::with_capacity(max_sg, caller_sized())?;
        let staging = PageList::with_capacity(max_sg, caller_sized())?;
        // Fast-reg MRs always allow remote access until a REG_MR says
        // otherwise, as in C.
        let mut inner = Shared::blank(pd, Access::REMOTE, 0, 0, Memory::Pages(pages));
        inner.staging = Some(staging);
        let shared = Arc::pin_init(Shared::new(MrType::MemReg, None, inner), GFP_KERNEL)?;
        Self::publish(dev, shared, slot, None, max_sg, State::Free)
    }

    pub(crate) fn keys(&self) -> Keys {
        let i = self.shared.inner.lock();
        Keys {
            lkey: i.lkey,
            rkey: i.rkey,
        }
    }

    /// `rereg_user_mr` in place: a new PD and/or new rights.
    pub(crate) fn rereg(&self, flags: u32, access: u32, new_pd: PdId) -> Result {
        let access = Access::from_raw(access);
        // C's order: unsupported flags, then the pin's writability, then
        // the new rights.
        rules::check_rereg(flags, Access::NONE).map_err(rule_errno)?;
        if let Some(umem) = &self.umem {
            umem.check_rereg(flags, access.bits())?;
        }
        rules::check_rereg(flags, access).map_err(rule_errno)?;
        let mut i = self.shared.inner.lock();
        if flags & rereg::PD != 0 {
            i.pd = new_pd;
        }
        if flags & rereg::ACCESS != 0 {
            i.access = access;
        }
        Ok(())
    }

    /// Starts a `map_mr_sg` with MR pages of `page_size` bytes: readies an
    /// empty block list the `set_page` callbacks fill. May run in atomic
    /// context: the list allocated at `alloc_mr` is reused, and only MR
    /// pages larger than a system page need it to grow (atomically).
    pub(crate) fn begin_map(&self, page_size: u32) -> Result {
        if self.shared.mr_type != MrType::MemReg || !page_size.is_power_of_two() {
            return Err(EINVAL);
        }
        let sys = 1u32 << PAGE_SHIFT;
        let per_page = if page_size > sys {
            to_usize(page_size / sys)
        } else {
            1
        };
        let blocks = per_page.checked_mul(self.max_sg).ok_or(ENOMEM)?;
        let mut i = self.shared.inner.lock();
        let list = match &mut i.staging {
            Some(l) => l,
            None => i
                .staging
                .insert(PageList::with_capacity(blocks, GFP_ATOMIC | __GFP_NOWARN)?),
        };
        // A list too large to have atomically is the caller's ENOMEM, quietly.
        list.reset(blocks, GFP_ATOMIC | __GFP_NOWARN)?;
        i.staging_shift = page_size.trailing_zeros();
        Ok(())
    }

    /// `set_page` of a mapping: one MR page at kernel address `addr`. Pages
    /// larger than a system page are stored as their system pages.
    ///
    /// `block` is a [`PageRef`] for each system-page-sized piece of the MR
    /// page, made by the caller from `addr`.
    pub(crate) fn map_block(&self, block: PageRef) -> Result {
        let mut i = self.shared.inner.lock();
        i.staging.as_mut().ok_or(EINVAL)?.push(block)
    }

    /// The MR page size of the mapping in progress.
    pub(crate) fn map_page_size(&self) -> u64 {
        1u64 << self.shared.inner.lock().staging_shift
    }

    /// Ends a mapping: the filled list replaces the old one, which is kept
    /// for the next mapping.
    pub(crate) fn end_map(&self) {
        let mut i = self.shared.inner.lock();
        if let Some(new) = i.staging.take() {
            i.page_shift = i.staging_shift;
            if let Memory::Pages(old) = core::mem::replace(&mut i.mem, Memory::Pages(new)) {
                i.staging = Some(old);
            }
        }
    }

    /// `dereg_mr`: refused while windows are bound to the MR (IBA
    /// 10.6.7.2.6); otherwise the key stops resolving at once.
    pub(crate) fn dereg(&self, dev: &Device) -> Result {
        if self.shared.bound_mws() > 0 {
            return Err(EINVAL);
        }
        let _ = dev.state().mrs.remove(self.index);
        self.shared.retire();
        Ok(())
    }
}
