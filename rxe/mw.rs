// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Memory windows: allocation, binding and invalidation with rdma_rxe's
//! rules, and their part in rkey lookups.
//!
//! Type 1 windows are valid from allocation and (re)bound by ibv_bind_mw,
//! which rdma-core's rxe provider turns into a BIND_MW work request; type 2
//! windows start free, are bound by BIND_MW work requests to one QP, and
//! are freed again by an invalidate. A bound window holds a view of its MR
//! ([`mr::MrShared::window`]) that rkey lookups hand to the datapath.
//!
//! API for the requester: [`bind`] (BIND_MW) and, through
//! [`mr::invalidate_key`], [`invalidate`].

use kernel::{prelude::*, sync::Arc};

use crate::rxe::device::{Device, DeviceState, ObjCount, ObjKind};
use crate::rxe::kapi::{
    lock::{new_spinlock_bh, SpinLockBh},
    random,
};
use crate::rxe::mr::{self, AccessError, PdId, QpId};
use crate::rxe::proto::mr::{
    self as rules, Access, BindReq, InvalidateError, MwType, RuleError, State,
};
use crate::rxe::qp;

/// A bound MR: counts as one window on the MR while it lives.
struct Binding {
    /// What rkey lookups of the window return.
    view: Arc<mr::MrShared>,
    mr: Arc<mr::MrShared>,
}

impl Binding {
    fn new(mr: Arc<mr::MrShared>, view: Arc<mr::MrShared>) -> Self {
        mr.add_bound_mw();
        Self { view, mr }
    }
}

impl Drop for Binding {
    fn drop(&mut self) {
        self.mr.drop_bound_mw();
    }
}

struct Inner {
    state: State,
    rkey: u32,
    access: Access,
    addr: u64,
    length: u64,
    binding: Option<Binding>,
    /// Type 2: the QP the window is bound to; only it may use the rkey.
    qp: Option<Arc<qp::QpShared>>,
}

impl Inner {
    /// Unbinds, returning what was held so it is dropped after the lock.
    fn clear(&mut self, state: State) -> (Option<Binding>, Option<Arc<qp::QpShared>>) {
        self.state = state;
        self.access = Access::NONE;
        self.addr = 0;
        self.length = 0;
        (self.binding.take(), self.qp.take())
    }
}

/// The part of a window the device's pool holds.
#[pin_data]
pub(crate) struct MwShared {
    mw_type: MwType,
    pd: PdId,
    #[pin]
    inner: SpinLockBh<Inner>,
}

impl MwShared {
    pub(crate) fn rkey(&self) -> u32 {
        self.inner.lock().rkey
    }
}

/// A memory window, as the core's `ib_mw` holds it.
pub(crate) struct Mw {
    shared: Arc<MwShared>,
    index: u32,
    _slot: ObjCount,
}

impl Mw {
    /// `alloc_mw` of type `mw_type` (1 or 2) in PD `pd`.
    pub(crate) fn alloc(dev: &Device, pd: PdId, mw_type: u32) -> Result<Self> {
        let mw_type = MwType::from_raw(mw_type).ok_or(EINVAL)?;
        let slot = dev.state().take_slot(ObjKind::Mw)?;
        let inner = Inner {
            state: State::Invalid,
            rkey: 0,
            access: Access::NONE,
            addr: 0,
            length: 0,
            binding: None,
            qp: None,
        };
        let shared = Arc::pin_init(
            pin_init!(MwShared {
                mw_type,
                pd,
                inner <- new_spinlock_bh!(inner, "rxe_mw"),
            }),
            GFP_KERNEL,
        )?;
        let index = dev.state().mws.insert(shared.clone())?;
        {
            let mut i = shared.inner.lock();
            i.rkey = rules::make_key(index, random::u8());
            i.state = match mw_type {
                MwType::One => State::Valid,
                MwType::Two => State::Free,
            };
        }
        Ok(Self {
            shared,
            index,
            _slot: slot,
        })
    }

    pub(crate) fn rkey(&self) -> u32 {
        self.shared.rkey()
    }

    /// `dealloc_mw`: the rkey stops resolving and any MR is released.
    pub(crate) fn dealloc(&self, dev: &Device) {
        let _ = dev.state().mws.remove(self.index);
        let held = self.shared.inner.lock().clear(State::Invalid);
        drop(held);
    }
}

/// A BIND_MW work request (or an ibv_bind_mw call, which the provider
/// turns into one).
#[derive(Clone, Copy, Debug)]
pub(crate) struct BindWr {
    pub(crate) mw_rkey: u32,
    pub(crate) mr_lkey: u32,
    /// The new key byte of the window (its low 8 bits).
    pub(crate) rkey: u32,
    pub(crate) addr: u64,
    pub(crate) length: u64,
    pub(crate) access: u32,
}

/// Binds (or, for type 1 with length 0, unbinds) the window `wr.mw_rkey`
/// names for `qp` of PD `qp_pd`. `EINVAL`/`EOPNOTSUPP` as in C; the
/// requester completes the work request with `IB_WC_MW_BIND_ERR`.
pub(crate) fn bind(dev: &DeviceState, qp: &Arc<qp::QpShared>, qp_pd: PdId, wr: &BindWr) -> Result {
    let mw = dev.mws.get(rules::key_index(wr.mw_rkey)).ok_or(EINVAL)?;
    if mw.rkey() != wr.mw_rkey {
        return Err(EINVAL);
    }
    let mr = if wr.length != 0 {
        let mr = dev.mrs.get(rules::key_index(wr.mr_lkey)).ok_or(EINVAL)?;
        if mr.lkey() != wr.mr_lkey {
            return Err(EINVAL);
        }
        Some(mr)
    } else {
        None
    };
    let req = BindReq {
        addr: wr.addr,
        length: wr.length,
        access: Access::from_raw(wr.access),
    };
    let facts = mr.as_ref().map(|m| m.bind_facts(qp_pd));
    let map_err = |e| match e {
        RuleError::Invalid => EINVAL,
        RuleError::NotSupported => crate::rxe::kapi::errno::eopnotsupp(),
    };
    // The window state may change before the lock is taken, so the rules
    // are checked there; these early checks only avoid a useless view.
    let view = match &mr {
        Some(m) => {
            let zero_based = req.access.contains(Access::ZERO_BASED);
            Some(mr::MrShared::window(
                m, wr.addr, wr.length, zero_based, mw.pd,
            )?)
        }
        None => None,
    };
    let new_qp = match mw.mw_type {
        MwType::Two => Some(qp.clone()),
        MwType::One => None,
    };
    let old = {
        let mut i = mw.inner.lock();
        rules::check_bind(mw.mw_type, i.state, mw.pd == qp_pd, facts.as_ref(), &req)
            .map_err(map_err)?;
        i.rkey = rules::with_key_byte(i.rkey, wr.rkey);
        i.access = req.access;
        i.state = State::Valid;
        i.addr = wr.addr;
        i.length = wr.length;
        let binding = match (mr, view) {
            (Some(m), Some(v)) => Some(Binding::new(m, v)),
            _ => None,
        };
        let old_binding = core::mem::replace(&mut i.binding, binding);
        let old_qp = if new_qp.is_some() {
            core::mem::replace(&mut i.qp, new_qp)
        } else {
            None
        };
        (old_binding, old_qp)
    };
    drop(old);
    Ok(())
}

/// Invalidates a bound type 2 window (LOCAL_INV, send with invalidate) for
/// `qp` of PD `pd`: the window must be in that PD and bound to that QP.
pub(crate) fn invalidate(
    dev: &DeviceState,
    rkey: u32,
    pd: PdId,
    qp: QpId,
) -> Result<(), InvalidateError> {
    let mw = dev
        .mws
        .get(rules::key_index(rkey))
        .ok_or(InvalidateError::Invalid)?;
    let held = {
        let mut i = mw.inner.lock();
        if i.rkey != rkey {
            return Err(InvalidateError::Invalid);
        }
        let bound_here = match i.qp.as_deref() {
            Some(q) => QpId::of(q) == qp,
            None => true,
        };
        rules::check_invalidate_mw(mw.mw_type, i.state, mw.pd == pd, bound_here)?;
        i.clear(State::Free)
    };
    // The QP the window was bound to may be gone already: this can be its
    // last reference, dropped in the caller's context (under the
    // requester's or responder's lock); the QP's drop allows that.
    drop(held);
    Ok(())
}

/// The rkey lookup of a window (C's `rxe_lookup_mw`): the window's view of
/// its MR, if the key, PD, QP (type 2), rights and state allow the access.
pub(crate) fn lookup(
    dev: &DeviceState,
    rkey: u32,
    qp: QpId,
    pd: PdId,
    access: Access,
) -> Result<Arc<mr::MrShared>, AccessError> {
    let mw = dev
        .mws
        .get(rules::key_index(rkey))
        .ok_or(AccessError::Key)?;
    let i = mw.inner.lock();
    let qp_ok = match mw.mw_type {
        MwType::One => true,
        MwType::Two => i.qp.as_deref().map(QpId::of) == Some(qp),
    };
    if i.rkey != rkey
        || mw.pd != pd
        || !qp_ok
        || i.length == 0
        || !i.access.contains(access)
        || i.state != State::Valid
    {
        return Err(AccessError::Key);
    }
    i.binding
        .as_ref()
        .map(|b| b.view.clone())
        .ok_or(AccessError::Key)
}
