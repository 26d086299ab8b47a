// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Multicast groups: which UD QPs receive the packets sent to an MGID.
//!
//! A group exists while at least one QP is attached to it; creating it
//! joins the MGID's Ethernet multicast address on the netdev, removing it
//! leaves it again. Limits and errnos are those of `rxe_mcast.c`.
//!
//! Interface for packet receive: [`Groups::members`] copies the QPs
//! attached to an MGID (to deliver to without the groups' lock held);
//! [`Groups::for_each_member`] calls a closure on each of them under the
//! lock instead. Both work from any context.

use core::sync::atomic::Ordering;

use kernel::{
    alloc::flags::__GFP_NOWARN,
    prelude::*,
    rbtree::{RBTree, RBTreeNodeReservation},
    sync::Arc,
};

use crate::rxe::device::Device;
use crate::rxe::kapi::lock::{new_spinlock_bh, SpinLockBh};
use crate::rxe::proto::av::mcast_mac;
use crate::rxe::proto::conv::to_usize;
use crate::rxe::proto::params::limits;
use crate::rxe::qp;
use crate::rxe::recv::{self, RxPacket};

/// QPs one group holds at most (`max_mcast_qp_attach`).
const MAX_PER_GROUP: usize = to_usize(limits::MAX_MCAST_QP_ATTACH);

/// A multicast GID.
pub(crate) type Mgid = [u8; 16];

struct Group {
    members: [Option<Arc<qp::QpShared>>; MAX_PER_GROUP],
    count: u32,
}

impl Group {
    fn new() -> Self {
        Self {
            members: [const { None }; MAX_PER_GROUP],
            count: 0,
        }
    }

    fn position(&self, qp: &Arc<qp::QpShared>) -> Option<usize> {
        self.members
            .iter()
            .position(|m| m.as_ref().is_some_and(|m| Arc::ptr_eq(m, qp)))
    }
}

struct Inner {
    groups: RBTree<Mgid, Group>,
    /// Groups in the tree plus those being created.
    num_groups: u32,
    /// Attachments over all groups.
    num_attached: u32,
}

impl Inner {
    /// `__rxe_init_mca()`: adds `qp` to `group`, unless it is there already.
    fn attach(num_attached: &mut u32, group: &mut Group, qp: &Arc<qp::QpShared>) -> Result {
        if group.position(qp).is_some() {
            return Ok(());
        }
        if *num_attached >= limits::MAX_TOT_MCAST_QP_ATTACH
            || group.count >= limits::MAX_MCAST_QP_ATTACH
        {
            return Err(ENOMEM);
        }
        let slot = group
            .members
            .iter_mut()
            .find(|m| m.is_none())
            .ok_or(ENOMEM)?;
        *slot = Some(qp.clone());
        group.count += 1;
        *num_attached += 1;
        qp.mcg_num.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

/// The multicast groups of a device.
#[pin_data]
pub(crate) struct Groups {
    #[pin]
    inner: SpinLockBh<Inner>,
}

impl Groups {
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            inner <- new_spinlock_bh!(
                Inner { groups: RBTree::new(), num_groups: 0, num_attached: 0 },
                "rxe_mcast"
            ),
        })
    }

    /// attach_mcast: `qp` receives the packets sent to `mgid` from now on.
    /// Attaching twice is not an error.
    pub(crate) fn attach(&self, dev: &Device, qp: &Arc<qp::QpShared>, mgid: &Mgid) -> Result {
        let node = RBTreeNodeReservation::new(GFP_KERNEL)?;
        {
            let mut g = self.inner.lock();
            let inner = &mut *g;
            if let Some(group) = inner.groups.get_mut(mgid) {
                return Inner::attach(&mut inner.num_attached, group, qp);
            }
            if inner.num_groups >= limits::MAX_MCAST_GRP {
                return Err(ENOMEM);
            }
            inner.num_groups += 1;
        }

        // A new group: join the address first (it may sleep), then make the
        // group visible with its first member.
        let mac = mcast_mac(mgid);
        let joined = dev.netdev().ok_or(ENODEV).and_then(|nd| nd.mc_add(&mac));
        if let Err(e) = joined {
            self.inner.lock().num_groups -= 1;
            return Err(e);
        }
        let mut g = self.inner.lock();
        let inner = &mut *g;
        if let Some(group) = inner.groups.get_mut(mgid) {
            // Someone else created it meanwhile: use theirs, leave ours.
            inner.num_groups -= 1;
            let res = Inner::attach(&mut inner.num_attached, group, qp);
            drop(g);
            leave(dev, &mac);
            return res;
        }
        let mut group = Group::new();
        if let Err(e) = Inner::attach(&mut inner.num_attached, &mut group, qp) {
            inner.num_groups -= 1;
            drop(g);
            leave(dev, &mac);
            return Err(e);
        }
        inner.groups.insert(node.into_node(*mgid, group));
        Ok(())
    }

    /// detach_mcast: `EINVAL` unless `qp` is attached to `mgid`. The group
    /// goes with its last member.
    pub(crate) fn detach(&self, dev: &Device, qp: &Arc<qp::QpShared>, mgid: &Mgid) -> Result {
        let mut g = self.inner.lock();
        let inner = &mut *g;
        let group = inner.groups.get_mut(mgid).ok_or(EINVAL)?;
        let pos = group.position(qp).ok_or(EINVAL)?;
        let member = group.members.get_mut(pos).and_then(Option::take);
        group.count -= 1;
        inner.num_attached -= 1;
        qp.mcg_num.fetch_sub(1, Ordering::Relaxed);
        let emptied = if group.count == 0 {
            inner.num_groups -= 1;
            inner.groups.remove(mgid)
        } else {
            None
        };
        drop(g);
        drop(member);
        if emptied.is_some() {
            leave(dev, &mcast_mac(mgid));
        }
        Ok(())
    }

    /// The QPs attached to `mgid`; `None` when there is no such group (or
    /// no memory for the list, as a multicast packet may be dropped).
    pub(crate) fn members(&self, mgid: &Mgid) -> Option<KVec<Arc<qp::QpShared>>> {
        // A failure drops the packet, as multicast may: no warning.
        let mut list = KVec::with_capacity(MAX_PER_GROUP, GFP_ATOMIC | __GFP_NOWARN).ok()?;
        let found = self.for_each_member(mgid, |qp| {
            // Capacity for a full group was reserved: this cannot fail.
            let _ = list.push(qp.clone(), GFP_ATOMIC);
        });
        found.then_some(list)
    }

    /// Calls `f` on every QP attached to `mgid`; returns whether the group
    /// exists. Runs under the groups' lock.
    pub(crate) fn for_each_member(
        &self,
        mgid: &Mgid,
        mut f: impl FnMut(&Arc<qp::QpShared>),
    ) -> bool {
        let g = self.inner.lock();
        let Some(group) = g.groups.get(mgid) else {
            return false;
        };
        group.members.iter().flatten().for_each(&mut f);
        true
    }
}

/// Leaves a link-layer multicast address; like C, a failure (the netdev
/// is going away) is not reported.
fn leave(dev: &Device, mac: &[u8; 6]) {
    if let Some(nd) = dev.netdev() {
        let _ = nd.mc_del(mac);
    }
}

/// A packet to the multicast QPN passed the header and ICRC checks: every
/// member QP of the group its destination GID names gets it.
pub(crate) fn receive(pkt: RxPacket) {
    let mgid: Mgid = pkt.dst_gid();
    match pkt.device().state().mcast.members(&mgid) {
        Some(members) => recv::deliver_to_members(pkt, &members),
        None => pkt.consume(),
    }
}
