// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Index pools: the numbers that name verbs objects on the wire and in the
//! user ABI (QPNs, MR/MW key indices, AH numbers, SRQ numbers).
//!
//! Indices are handed out cyclically in `[min, max]`, so a number freed by a
//! destroy is not reused at once and a stale QPN or key misses instead of
//! reaching a new object. A bitmap radix (`proto::index_alloc`) finds the
//! next free index in a few word operations however full the pool is; the
//! red-black tree maps indices to objects for lookups.
//!
//! An index can be reserved before its object exists (the object may need
//! its own number to be built) and filled in once the object is complete;
//! lookups miss a reserved index until then.
//!
//! The lock masks interrupts: AHs come and go from callers that hold
//! IRQ-disabling locks (the CM), and packet receive looks objects up from
//! softirq context.

use kernel::{
    alloc::{Flags, VVec},
    prelude::*,
    rbtree::{RBTree, RBTreeNodeReservation},
};

use crate::rxe::kapi::lock::{new_spinlock_irq, SpinLockIrq};
use crate::rxe::proto::index_alloc::IndexAlloc;

/// # Invariants
///
/// `ids` has an index taken exactly when `map` has it as a key.
struct Inner<T> {
    map: RBTree<u32, Option<T>>,
    ids: IndexAlloc<VVec<u64>>,
}

/// A map from index to `T` (an `Arc` of the object, so lookups can keep the
/// object alive while they use it).
#[pin_data]
pub(crate) struct Pool<T> {
    #[pin]
    inner: SpinLockIrq<Inner<T>>,
}

// `Unpin`: a lock guard gives `&mut` access only to `Unpin` data on 7.x.
impl<T: Clone + Unpin> Pool<T> {
    /// A pool of the indices `[min, max]`. Its bitmap (an eighth of a byte
    /// per index: 65 KiB for the MW pool, 130 KiB for the QP pool) is
    /// allocated here, once, so taking an index never allocates it.
    pub(crate) fn new(min: u32, max: u32) -> Result<impl PinInit<Self>> {
        let words = IndexAlloc::<VVec<u64>>::words_for(min, max).ok_or(EINVAL)?;
        let words = VVec::from_elem(0u64, words, GFP_KERNEL)?;
        let ids = IndexAlloc::new(min, max, words).ok_or(EINVAL)?;
        // INVARIANT: No index is taken and the map is empty.
        Ok(pin_init!(Self {
            inner <- new_spinlock_irq!(Inner { map: RBTree::new(), ids }, "rxe_pool"),
        }))
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
        // The object counts (`take_slot`) keep each pool below its size;
        // a full pool fails all the same.
        let idx = inner.ids.alloc().ok_or(ENOMEM)?;
        // INVARIANT: `idx` was free, so not a key of `map` (type
        // invariant); it becomes one as it is taken, under the same lock.
        inner.map.insert(node.into_node(idx, value));
        Ok(idx)
    }

    /// A clone of the value at `idx`, if any.
    pub(crate) fn get(&self, idx: u32) -> Option<T> {
        self.inner.lock().map.get(&idx).cloned().flatten()
    }

    /// Calls `f` with a clone of every value, in index order, each taken
    /// under the lock and handed over after it is released (so `f` may
    /// take locks that come after the pool's, and nothing is allocated).
    /// Values added or removed meanwhile may or may not be seen.
    pub(crate) fn for_each(&self, mut f: impl FnMut(T)) {
        let mut from = 0u32;
        loop {
            // The guard lives to the end of the statement. (6.12's
            // cursor_lower_bound takes the tree by `&mut`, 7.x's by `&`.)
            let next = self
                .inner
                .lock()
                .map
                .cursor_lower_bound(&from)
                .map(|c| (*c.current().0, c.current().1.clone()));
            let Some((idx, value)) = next else {
                return;
            };
            // A reserved index has no value yet.
            if let Some(v) = value {
                f(v);
            }
            match idx.checked_add(1) {
                Some(n) => from = n,
                None => return,
            }
        }
    }

    /// Removes the index (reserved or filled) and returns its value.
    pub(crate) fn remove(&self, idx: u32) -> Option<T> {
        let mut inner = self.inner.lock();
        let slot = inner.map.remove(&idx)?;
        // INVARIANT: `idx` was a key, so taken (type invariant); it is freed
        // as its key goes, under the same lock.
        inner.ids.free(idx);
        slot
    }
}
