// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Memory regions: the registration verbs, rdma_rxe's key and state rules,
//! and the memory-access API of the datapath.
//!
//! This file holds the region the datapath shares, its key and state
//! rules, the key lookups and the local operations; `access.rs` the
//! datapath's accesses to a region's bytes and its ODP faults; `reg.rs` the
//! [`Mr`] an `ib_mr` owns and the registration verbs.
//!
//! # Datapath API
//!
//! - [`lookup`]`(dev, key, kind, pd, access) -> Result<Arc<MrShared>, AccessError>`
//!   resolves an lkey ([`KeyKind::Local`]) or an rkey ([`KeyKind::Remote`],
//!   which may name an MR or a bound memory window) after checking the key
//!   byte, the PD, the state and the rights. For a window the result is a
//!   view of the window: the same copy methods, bounded by the window and
//!   translated for zero-based windows.
//! - On the result: [`MrShared::copy_in`], [`MrShared::copy_out`],
//!   [`MrShared::check_range`], [`MrShared::atomic_op`] (8-byte compare-swap or
//!   fetch-add, returns the old value), [`MrShared::atomic_write`],
//!   [`MrShared::flush`], [`MrShared::bounds`]. Addresses are iovas of the
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
//! [`MrShared`] part that the device's `mrs` pool and the datapath hold. A
//! user MR's pages carry page references of their own, so a datapath copy
//! still running when the MR is deregistered touches pages that stay
//! allocated until its `Arc` goes, while the pin of the user range ends at
//! deregistration as in C.

mod access;
mod reg;

pub(crate) use access::PendingFault;
pub(crate) use reg::Mr;

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use kernel::{page::PAGE_SHIFT, prelude::*, sync::Arc};

use crate::rxe::device::DeviceState;
use crate::rxe::kapi::{
    lock::{new_spinlock_bh, SpinLockBh},
    odp::{Odp, OdpError},
    page::{DmaSpace, PageError, PageList},
};
use crate::rxe::mw;
use crate::rxe::proto::conv::len64;
use crate::rxe::proto::mr::{
    self as rules, Chunk, InvalidateError, Layout, MrFacts, MrType, RuleError, State,
};
use crate::rxe::proto::odp::{self, Span};
use crate::rxe::qp;

/// The rights (`ib_access_flags`) and atomics of the API, for its users.
pub(crate) use crate::rxe::proto::mr::{Access, AtomicOp};

/// The identity of a protection domain: the address of its `ib_pd`, stable
/// while the PD lives (PDs outlive the objects created in them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PdId(pub(crate) usize);

/// The identity of a QP for type 2 window checks: the address of its
/// `qp::QpShared`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct QpId(usize);

impl QpId {
    pub(crate) fn of(qp: &qp::QpShared) -> Self {
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
    /// nothing was accessed; [`MrShared::fault`] the range in from process
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
        RuleError::NotSupported => crate::rxe::kapi::errno::eopnotsupp(),
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
    mr: Arc<MrShared>,
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
pub(crate) struct MrShared {
    mr_type: MrType,
    /// Set for the views windows hand out; `inner` is then unused.
    window: Option<Window>,
    #[pin]
    inner: SpinLockBh<Inner>,
    /// Windows bound to this MR; deregistration is refused while non-zero.
    bound_mws: AtomicU32,
    /// Moves (under `inner`'s lock, before the change) whenever the state,
    /// keys, rights, PD or range change: a check made under the lock holds
    /// while it has not moved ([`MrShared::unchanged_since`]). 64 bits: it
    /// never comes back to a value a held check saw.
    gen: AtomicU64,
}

impl MrShared {
    fn new(mr_type: MrType, window: Option<Window>, inner: Inner) -> impl PinInit<Self> {
        pin_init!(Self {
            mr_type,
            window,
            inner <- new_spinlock_bh!(inner, "rxe_mr"),
            bound_mws: AtomicU32::new(0),
            gen: AtomicU64::new(0),
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
        mr: &Arc<MrShared>,
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

    /// Whether `key` grants `access` to a QP of `pd` (of `kind`) and, with
    /// `range`, whether `(iova, len)` lies in the region, under one lock;
    /// on success the region's generation the checks were made at.
    fn check_key_range(
        &self,
        key: u32,
        kind: KeyKind,
        pd: PdId,
        access: Access,
        range: Option<(u64, u64)>,
    ) -> Result<u64, AccessError> {
        if self.window.is_some() {
            self.check_key(key, kind, pd, access)?;
            if let Some((iova, len)) = range {
                self.check_range(iova, len)?;
            }
            return Ok(self.gen.load(Ordering::Relaxed));
        }
        let i = self.inner.lock();
        i.key_grants(key, kind, pd, access)?;
        match (range, &i.mem) {
            (None, _) | (_, Memory::Dma(_)) => {}
            (Some((iova, len)), _) if i.in_range(iova, len) => {}
            _ => return Err(AccessError::Range),
        }
        Ok(self.gen.load(Ordering::Relaxed))
    }

    /// Whether nothing a key check depends on (state, keys, rights, PD,
    /// range) changed since generation `gen`, which [`lookup_range`]
    /// returned: a check that passed then still passes, for any range
    /// inside the one it checked. Takes no lock. Not for windows, whose
    /// changes are the window's.
    pub(crate) fn unchanged_since(&self, gen: u64) -> bool {
        self.window.is_none() && self.gen.load(Ordering::Acquire) == gen
    }

    /// Takes `inner` for a change that can fail checks made before.
    fn change(&self) -> impl core::ops::DerefMut<Target = Inner> + '_ {
        let i = self.inner.lock();
        // The datapath sees the generation move before any of the change.
        self.gen.fetch_add(1, Ordering::Release);
        i
    }

    /// Whether this is the view of a memory window (a type 1 or 2 MW's
    /// binding) rather than a region.
    pub(crate) fn is_window(&self) -> bool {
        self.window.is_some()
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

    /// Executes a REG_MR work request: a free fast-reg MR of the QP's PD
    /// takes the new key byte, rights and range (`iova`/`length` are the
    /// `ib_mr` fields the kernel user set up through `ib_map_mr_sg`, and
    /// bound every later access through the new key).
    fn fast_reg(&self, qp_pd: PdId, reg: &FastReg) -> Result {
        let mut i = self.change();
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
        let mut i = self.change();
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
        let mut i = self.change();
        i.lkey = key;
        i.rkey = key;
        i.state = state;
    }

    /// Ends every later access through references the datapath still holds.
    fn retire(&self) {
        let mut i = self.change();
        i.state = State::Invalid;
    }
}

/// Resolves `key` for an access with `access` rights by a QP in PD `pd`.
pub(crate) fn lookup(
    dev: &DeviceState,
    key: u32,
    kind: KeyKind,
    pd: PdId,
    access: Access,
) -> Result<Arc<MrShared>, AccessError> {
    lookup_range(dev, key, kind, pd, access, None).map(|(mr, _)| mr)
}

/// [`lookup`], then with `range` the check that `(iova, len)` lies in
/// the region, the key and range checked under one lock of the MR; with
/// the region's generation they were made at (see
/// [`MrShared::unchanged_since`]).
pub(crate) fn lookup_range(
    dev: &DeviceState,
    key: u32,
    kind: KeyKind,
    pd: PdId,
    access: Access,
    range: Option<(u64, u64)>,
) -> Result<(Arc<MrShared>, u64), AccessError> {
    if let KeyKind::Remote { qp } = kind {
        if rules::rkey_is_mw(key) {
            let mr = mw::lookup(dev, key, qp, pd, access)?;
            if let Some((iova, len)) = range {
                mr.check_range(iova, len)?;
            }
            let gen = mr.gen.load(Ordering::Relaxed);
            return Ok((mr, gen));
        }
    }
    let mr = dev.mrs.get(rules::key_index(key)).ok_or(AccessError::Key)?;
    let gen = mr.check_key_range(key, kind, pd, access, range)?;
    Ok((mr, gen))
}

/// `ibv_advise_mr`: prefetches the ranges `(lkey, iova, length)` of ODP
/// MRs of PD `pd` as `advice` says. Process context (it may fault pages
/// in). The MRs must allow local writes, as in C. With `sync` false the
/// prefetch is best effort: only a bad key is reported.
pub(crate) fn advise(
    dev: &DeviceState,
    pd: PdId,
    advice: odp::Advice,
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
