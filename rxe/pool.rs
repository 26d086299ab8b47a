//! Index pools: the numbers that name verbs objects on the wire and in the
//! user ABI (QPNs, MR/MW key indices, AH numbers, SRQ numbers).
//!
//! Indices are handed out cyclically in `[min, max]`, so a number freed by a
//! destroy is not reused at once and a stale QPN or key misses instead of
//! reaching a new object.

use kernel::{
    prelude::*,
    rbtree::{RBTree, RBTreeNodeReservation},
};

use crate::rxe::kernel::lock::{new_spinlock_bh, SpinLockBh};

struct Inner<T> {
    map: RBTree<u32, T>,
    next: u32,
}

/// A map from index to `T` (an `Arc` of the object, so lookups can keep the
/// object alive while they use it).
#[pin_data]
pub(crate) struct Pool<T> {
    #[pin]
    inner: SpinLockBh<Inner<T>>,
    min: u32,
    max: u32,
}

impl<T: Clone> Pool<T> {
    pub(crate) fn new(min: u32, max: u32) -> impl PinInit<Self> {
        pin_init!(Self {
            inner <- new_spinlock_bh!(Inner { map: RBTree::new(), next: min }, "rxe_pool"),
            min,
            max,
        })
    }

    /// Stores `value` under a free index and returns the index.
    pub(crate) fn insert(&self, value: T) -> Result<u32> {
        let node = RBTreeNodeReservation::new(GFP_KERNEL)?;
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
        self.inner.lock().map.get(&idx).cloned()
    }

    /// Removes and returns the value at `idx`.
    pub(crate) fn remove(&self, idx: u32) -> Option<T> {
        self.inner.lock().map.remove(&idx)
    }

    /// Calls `f` on every value, under the pool's lock.
    pub(crate) fn for_each(&self, mut f: impl FnMut(&T)) {
        for v in self.inner.lock().map.values() {
            f(v);
        }
    }
}
