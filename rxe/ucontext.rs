// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! User contexts: one per open of the uverbs device by a process. A context
//! hands out the mmap offsets of the queues its objects share with user
//! space and maps each of them once.

use kernel::{
    prelude::*,
    rbtree::{RBTree, RBTreeNodeReservation},
    sync::Arc,
};

use crate::rxe::device::{Device, ObjCount, ObjKind};
use crate::rxe::kapi::lock::{new_spinlock_bh, SpinLockBh};
use crate::rxe::kapi::{cq_srq, udata::Udata, vmbuf::VmBuf};
use crate::rxe::proto::conv::len64;
use crate::rxe::proto::uapi::MmInfo;

struct Mmaps {
    /// Published, not yet mapped buffers by offset.
    pending: RBTree<u64, Arc<VmBuf>>,
    next_offset: u64,
}

/// A user context. Holds a slot of the device's context budget.
#[pin_data]
pub(crate) struct Ucontext {
    #[pin]
    mmaps: SpinLockBh<Mmaps>,
    _slot: ObjCount,
}

/// A verb called from user space, in one of our contexts.
pub(crate) type UserCall<'a> = cq_srq::UserCall<'a, Ucontext>;

const PAGE_SIZE: u64 = len64(kernel::page::PAGE_SIZE);

impl Ucontext {
    pub(crate) fn new(dev: &Device, _udata: Option<&Udata>) -> Result<impl PinInit<Self, Error>> {
        let slot = dev.state().take_slot(ObjKind::Ucontext)?;
        Ok(try_pin_init!(Self {
            // Offset 0 stays unused so a zeroed mminfo never maps anything.
            mmaps <- new_spinlock_bh!(Mmaps { pending: RBTree::new(), next_offset: PAGE_SIZE }, "rxe_mmaps"),
            _slot: slot,
        }? Error))
    }

    /// Makes `buf` mappable at a fresh offset, once.
    pub(crate) fn publish(&self, buf: Arc<VmBuf>) -> Result<MmInfo> {
        let size = len64(buf.len()).div_ceil(PAGE_SIZE) * PAGE_SIZE;
        let size32 = u32::try_from(size).map_err(|_| EINVAL)?;
        let node = RBTreeNodeReservation::new(GFP_KERNEL)?;
        let mut m = self.mmaps.lock();
        let offset = m.next_offset;
        m.pending.insert(node.into_node(offset, buf));
        m.next_offset = offset + size;
        Ok(MmInfo {
            offset,
            size: size32,
        })
    }

    /// Takes back a buffer published but never mapped (an object whose
    /// creation failed after publishing, one destroyed, or a ring replaced
    /// by a resize); nothing once it is mapped, as the mapping holds it.
    pub(crate) fn unpublish(&self, offset: u64) {
        let buf = self.mmaps.lock().pending.remove(&offset);
        drop(buf);
    }

    /// The buffer user space asks to map at `offset` for `len` bytes; it is
    /// consumed, so each queue maps once.
    pub(crate) fn take_for_mmap(&self, offset: u64, len: u64) -> Result<Arc<VmBuf>> {
        let mut m = self.mmaps.lock();
        let buf = m.pending.get(&offset).ok_or(EINVAL)?;
        if len > len64(buf.len()).div_ceil(PAGE_SIZE) * PAGE_SIZE {
            return Err(EINVAL);
        }
        m.pending.remove(&offset).ok_or(EINVAL)
    }
}
