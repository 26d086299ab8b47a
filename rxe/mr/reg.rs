// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The MR its `ib_mr` owns: registration (DMA, user, ODP and fast-reg
//! MRs), re-registration, the `map_mr_sg` block lists and deregistration.

use kernel::{alloc::flags::__GFP_NOWARN, page::PAGE_SHIFT, prelude::*, sync::Arc};

use super::{rule_errno, Access, Memory, MrShared, PdId};
use crate::rxe::device::{Device, ObjCount, ObjKind};
use crate::rxe::kapi::{
    alloc::caller_sized,
    odp::{Odp, OdpReg},
    page::{DmaSpace, PageList, PageRef},
    random,
    umem::Umem,
};
use crate::rxe::proto::conv::to_usize;
use crate::rxe::proto::mr::{self as rules, rereg, MrType, State};
use crate::rxe::proto::odp;

/// A memory region, as its `ib_mr` owns it.
pub(crate) struct Mr {
    shared: Arc<MrShared>,
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
        shared: Arc<MrShared>,
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
        let inner = MrShared::blank(pd, Access::from_raw(access), 0, 0, Memory::Dma(space));
        let shared = Arc::pin_init(MrShared::new(MrType::Dma, None, inner), GFP_KERNEL)?;
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
        let inner = MrShared::blank(pd, access, iova, length, Memory::Pages(pages));
        let shared = Arc::pin_init(MrShared::new(MrType::User, None, inner), GFP_KERNEL)?;
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
        odp::check_reg(start, length, iova).map_err(|_| EINVAL)?;
        let slot = dev.state().take_slot(ObjKind::Mr)?;
        let odp = Odp::get(dev, start, length, access.bits())?;
        // The rule of other user MRs: persistent flushes only on persistent
        // memory, which for an ODP MR means every page present and
        // persistent now (each FLUSH checks the pages again, as they may
        // change).
        if access.contains(Access::FLUSH_PERSISTENT) && !odp.all_pmem() {
            return Err(EINVAL);
        }
        let reg = OdpReg::new(odp.clone());
        let mem = Memory::Odp { odp, start };
        let inner = MrShared::blank(pd, access, iova, length, mem);
        let shared = Arc::pin_init(MrShared::new(MrType::User, None, inner), GFP_KERNEL)?;
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
        let mut inner = MrShared::blank(pd, Access::REMOTE, 0, 0, Memory::Pages(pages));
        inner.staging = Some(staging);
        let shared = Arc::pin_init(MrShared::new(MrType::MemReg, None, inner), GFP_KERNEL)?;
        Self::publish(dev, shared, slot, None, max_sg, State::Free)
    }

    /// Whether the MR's memory is persistent memory throughout, as
    /// `IB_ACCESS_FLUSH_PERSISTENT` needs. Process context (it may sleep).
    /// An ODP MR registered without that right does not track persistent
    /// memory, so it cannot gain the right.
    fn persistent(&self) -> bool {
        if let Some(umem) = &self.umem {
            return umem.all_pmem();
        }
        self._odp.as_ref().is_some_and(OdpReg::all_pmem)
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
        // New rights follow the registration's rule for persistent
        // flushes (rdma_rxe checks them at registration only).
        let had = self
            .shared
            .inner
            .lock()
            .access
            .contains(Access::FLUSH_PERSISTENT);
        if flags & rereg::ACCESS != 0
            && access.contains(Access::FLUSH_PERSISTENT)
            && !had
            && !self.persistent()
        {
            return Err(EINVAL);
        }
        let mut i = self.shared.change();
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
