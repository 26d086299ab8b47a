// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Index pools: the numbers that name verbs objects on the wire and in the
//! user ABI (QPNs, MR/MW key indices, AH numbers, SRQ numbers).
//!
//! Indices are handed out cyclically in `[min, max]`, so a number freed by a
//! destroy is not reused at once and a stale QPN or key misses instead of
//! reaching a new object.
//!
//! An index can be reserved before its object exists (the object may need
//! its own number to be built) and filled in once the object is complete;
//! lookups miss a reserved index until then.
//!
//! The lock masks interrupts: AHs come and go from callers that hold
//! IRQ-disabling locks (the CM), and packet receive looks objects up from
//! softirq context.

use kernel::{
    alloc::Flags,
    prelude::*,
    rbtree::{RBTree, RBTreeNodeReservation},
};

use crate::rxe::kernel::lock::{new_spinlock_irq, SpinLockIrq};

struct Inner<T> {
    map: RBTree<u32, Option<T>>,
    next: u32,
}

/// A map from index to `T` (an `Arc` of the object, so lookups can keep the
/// object alive while they use it).
#[pin_data]
pub(crate) struct Pool<T> {
    #[pin]
    inner: SpinLockIrq<Inner<T>>,
    min: u32,
    max: u32,
}

// `Unpin`: a lock guard gives `&mut` access only to `Unpin` data on 7.x.
impl<T: Clone + Unpin> Pool<T> {
    pub(crate) fn new(min: u32, max: u32) -> impl PinInit<Self> {
        pin_init!(Self {
            inner <- new_spinlock_irq!(Inner { map: RBTree::new(), next: min }, "rxe_pool"),
            min,
            max,
        })
    }

    /// Takes a free index with no value yet; `set` fills it, `remove`
    /// gives it back. `flags` are those of the caller's context.
    pub(crate) fn reserve(&self, flags: Flags) -> Result<u32> {
        self.insert_slot(None, flags)
    }

    /// Stores `value` at an index `reserve` returned.
    pub(crate) fn set(&self, idx: u32, value: T) {
        if let Some(slot) = self.inner.lock().map.get_mut(&idx) {
            *slot = Some(value);
        }
    }

    /// Stores `value` under a free index and returns the index.
    pub(crate) fn insert(&self, value: T) -> Result<u32> {
        self.insert_slot(Some(value), GFP_KERNEL)
    }

    fn insert_slot(&self, value: Option<T>, flags: Flags) -> Result<u32> {
        let node = RBTreeNodeReservation::new(flags)?;
        let mut inner = self.inner.lock();
        let span = self.max - self.min + 1;
        let mut idx = inner.next;
        for _ in 0..span {
            if idx < self.min || idx > self.max {
                idx = self.min;
            }
            if inner.map.get(&idx).is_none() {
                inner.map.insert(node.into_node(idx, value));
                inner.next = if idx == self.max { self.min } else { idx + 1 };
                return Ok(idx);
            }
            idx = idx.wrapping_add(1);
        }
        Err(ENOMEM)
    }

    /// A clone of the value at `idx`, if any.
    pub(crate) fn get(&self, idx: u32) -> Option<T> {
        self.inner.lock().map.get(&idx).cloned().flatten()
    }

    /// Clones of every value, to walk them outside the lock (which masks
    /// interrupts, hence the atomic allocation).
    pub(crate) fn values(&self) -> Result<KVec<T>> {
        let inner = self.inner.lock();
        let mut out = KVec::with_capacity(inner.map.iter().count(), GFP_ATOMIC)?;
        for v in inner.map.values().flatten() {
            out.push(v.clone(), GFP_ATOMIC)?;
        }
        Ok(out)
    }

    /// Removes the index (reserved or filled) and returns its value.
    pub(crate) fn remove(&self, idx: u32) -> Option<T> {
        self.inner.lock().map.remove(&idx).flatten()
    }
}
