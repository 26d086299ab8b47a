// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Address handles: the destinations of UD sends.
//!
//! Interface for the datapath: [`lookup`] finds the AH a UD send WQE names
//! by number, checked against the QP's PD; [`AhShared::av`] is its address
//! vector; [`AvCache`] keeps a QP's last one while no AH changes. [`embedded_av`] checks an AV a WQE carries instead.

use core::sync::atomic::{AtomicU64, Ordering};

use kernel::{alloc::Flags, prelude::*, sync::Arc};

use crate::rxe::device::{Device, DeviceState, ObjCount, ObjKind};
use crate::rxe::kapi::lock::{new_spinlock_irq, SpinLockIrq};
use crate::rxe::kapi::route;
use crate::rxe::kapi::udata::Udata;
use crate::rxe::kapi::wr::WrAh;
use crate::rxe::net;
use crate::rxe::proto::av::{self as pav, AhAttr};
use crate::rxe::proto::ip::IpAddr;
use crate::rxe::proto::qp_attr::AttrError;
use crate::rxe::proto::uapi::{create_ah_resp, resp, Av};
use crate::rxe::qp;

/// The part of an AH the datapath reaches through the device's pool.
#[pin_data]
pub(crate) struct AhShared {
    /// Identity of the PD the AH belongs to.
    pub(crate) pd: usize,
    /// modify_ah replaces it; the lock tolerates callers with interrupts
    /// off, as AHs are made and changed by the CM under such locks.
    #[pin]
    av: SpinLockIrq<Av>,
}

impl AhShared {
    /// A copy of the address vector.
    pub(crate) fn av(&self) -> Av {
        *self.av.lock()
    }
}

/// An AH as the core holds it.
pub(crate) struct Ah {
    pub(crate) shared: Arc<AhShared>,
    index: u32,
    /// The number UD WQEs use; 0 for AHs of old providers, which embed
    /// the AV in each WQE instead.
    num: u32,
    _slot: ObjCount,
}

/// What the AH verbs need from their caller.
pub(crate) struct CreateArgs<'a> {
    pub(crate) pd: usize,
    pub(crate) attr: AhAttr,
    /// The caller may sleep (`RDMA_CREATE_AH_SLEEPABLE`).
    pub(crate) sleepable: bool,
    pub(crate) udata: Option<&'a Udata>,
}

fn errno(e: AttrError) -> Error {
    match e {
        AttrError::Invalid => EINVAL,
        AttrError::NotSupported => crate::rxe::kapi::errno::eopnotsupp(),
    }
}

/// The AH numbered `ah_num`, if it exists and belongs to the PD `pd`.
pub(crate) fn lookup(dev: &DeviceState, ah_num: u32, pd: usize) -> Option<Arc<AhShared>> {
    dev.ahs.get(ah_num).filter(|ah| ah.pd == pd)
}

/// Counts the changes of every AH: each create, modify and destroy adds one
/// once it is visible (in the pool, in the AV). An [`AvCache`] entry made
/// while the count was `g` holds for as long as it still reads `g`.
static AH_GEN: AtomicU64 = AtomicU64::new(0);

fn changed() {
    AH_GEN.fetch_add(1, Ordering::Release);
}

/// One QP's copy of the AV of the AH it last sent to, as a `net::Av`: a UD
/// stream to one destination resolves the AH once, not per packet through
/// the pool's lock and the AV's.
pub(crate) struct AvCache {
    /// AH number, the [`AH_GEN`] count read before the AH was looked up,
    /// and its AV.
    entry: Option<(u32, u64, net::Av)>,
}

impl AvCache {
    pub(crate) const fn new() -> Self {
        Self { entry: None }
    }

    /// The AV of the AH numbered `ah_num` if it exists and belongs to the
    /// PD `pd` (always the same PD for one cache: its QP's), converted by
    /// `to_net` when it is not cached.
    ///
    /// A change counted after the count an entry was made with invalidates
    /// it: a modify or destroy bumps the count after it is done, so an entry
    /// read from the AH before the change (its lookup came after the count
    /// was read) is never used once the change has been counted.
    pub(crate) fn get(
        &mut self,
        dev: &DeviceState,
        ah_num: u32,
        pd: usize,
        to_net: impl FnOnce(&Av) -> net::Av,
    ) -> Option<&net::Av> {
        let gen = AH_GEN.load(Ordering::Acquire);
        let hit = matches!(self.entry, Some((n, g, _)) if n == ah_num && g == gen);
        if !hit {
            self.entry = None;
            let av = lookup(dev, ah_num, pd)?.av();
            self.entry = Some((ah_num, gen, to_net(&av)));
        }
        self.entry.as_ref().map(|(_, _, av)| av)
    }
}

/// The address vector a UD WQE embeds (providers that know no AH
/// numbers): it comes from user memory and no AH check saw it, so its
/// source must be one of the device's: the GID table entry at its
/// `sgid_index`, whose address is the AV's source address. `None` refuses
/// it (the WQE completes with `IB_WC_LOC_QP_OP_ERR`); rdma_rxe sends from
/// whatever source address the WQE names.
pub(crate) fn embedded_av(dev: &Device, av: Av) -> Option<Av> {
    let gid = route::gid_at(dev, u32::from(av.grh.sgid_index))?;
    (IpAddr::from_gid(gid) == qp::av_path(&av).0).then_some(av)
}

impl Ah {
    /// create_ah and create_user_ah.
    pub(crate) fn new(dev: &Device, args: CreateArgs<'_>) -> Result<Self> {
        let flags: Flags = if args.sleepable {
            GFP_KERNEL
        } else {
            GFP_ATOMIC
        };
        let state = dev.state();
        let slot = state.take_slot(ObjKind::Ah)?;
        pav::check_ah_attr(&args.attr).map_err(errno)?;
        let av = pav::av_from_ah_attr(&args.attr).map_err(errno)?;
        let shared = Arc::pin_init(
            pin_init!(AhShared { pd: args.pd, av <- new_spinlock_irq!(av, "rxe_ah_av") }),
            flags,
        )?;
        let index = state.ahs.reserve(flags)?;
        let num = match args.udata {
            // Providers that know AH numbers make room for the response.
            Some(u) if u.outlen() >= resp::CREATE_AH_LEN => {
                if let Err(e) = u.write_out(&create_ah_resp(index)) {
                    state.ahs.remove(index);
                    return Err(e);
                }
                index
            }
            Some(_) => 0,
            None => index,
        };
        state.ahs.set(index, shared.clone());
        changed();
        Ok(Self {
            shared,
            index,
            num,
            _slot: slot,
        })
    }

    /// modify_ah (kernel users only).
    pub(crate) fn modify(&self, attr: &AhAttr) -> Result {
        pav::check_ah_attr(attr).map_err(errno)?;
        let av = pav::av_from_ah_attr(attr).map_err(errno)?;
        *self.shared.av.lock() = av;
        changed();
        Ok(())
    }

    /// query_ah: the GRH and port of the AV.
    pub(crate) fn query(&self) -> AhAttr {
        pav::ah_attr_from_av(Some(&self.shared.av()))
    }

    /// destroy_ah: the number stops resolving; WQEs already holding the
    /// AV keep their copy.
    pub(crate) fn destroy(&self, dev: &Device) {
        dev.state().ahs.remove(self.index);
        changed();
    }
}

impl WrAh for Ah {
    /// The number UD send WQEs name this AH by.
    fn wr_num(&self) -> u32 {
        self.num
    }
}
