// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Index keeping of a fixed-capacity FIFO over a slice of slots, for
//! `rxe::fifo` (the 6.12 `KVec` has no pop).

/// Head and length of a ring over `slots`, where the caller passes the
/// same slots (same length) to every call.
///
/// # Invariants
///
/// `len <= slots.len()`, `head < slots.len()` (or 0 with no slots); the
/// `len` slots from `head` on, wrapping, are `Some` and the others `None`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Ring {
    head: usize,
    len: usize,
}

impl Ring {
    pub(crate) const fn new() -> Self {
        // INVARIANT: No item, for slots that are all `None` (the caller's
        // fresh slots, or those `clear` emptied); `derive(Default)` gives
        // the same.
        Self { head: 0, len: 0 }
    }

    pub(crate) const fn len(&self) -> usize {
        self.len
    }

    #[cfg(test)] // Only the host tests use it.
    pub(crate) const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// `head + n` wrapped to `cap`, for `n <= cap`.
    fn wrap(&self, n: usize, cap: usize) -> usize {
        // Both are below `cap`, so the sum wraps at most once; with
        // `head + n` computed as `n - (cap - head)` no overflow either.
        if n >= cap - self.head {
            n - (cap - self.head)
        } else {
            self.head + n
        }
    }

    /// Appends `item`; gives it back when all slots are taken.
    pub(crate) fn push<T>(&mut self, slots: &mut [Option<T>], item: T) -> Result<(), T> {
        let cap = slots.len();
        if self.len >= cap {
            return Err(item);
        }
        let tail = self.wrap(self.len, cap);
        match slots.get_mut(tail) {
            Some(slot) => {
                // INVARIANT: `len < cap` (checked), and the slot right after
                // the `len` taken ones, wrapping, was `None` and now holds
                // the item.
                *slot = Some(item);
                self.len += 1;
                Ok(())
            }
            None => Err(item),
        }
    }

    /// Removes the oldest item.
    pub(crate) fn pop<T>(&mut self, slots: &mut [Option<T>]) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let item = slots.get_mut(self.head)?.take();
        // INVARIANT: The head slot is `None` now and the ring starts at the
        // next one, below `cap` (`wrap`), with one item fewer.
        self.head = self.wrap(1, slots.len());
        self.len -= 1;
        item
    }

    /// The oldest item.
    #[cfg(test)] // Only the host tests use it.
    pub(crate) fn peek<'a, T>(&self, slots: &'a [Option<T>]) -> Option<&'a T> {
        if self.len == 0 {
            return None;
        }
        slots.get(self.head)?.as_ref()
    }

    /// The oldest item, to change in place.
    #[cfg(test)] // Only the host tests use it.
    pub(crate) fn peek_mut<'a, T>(&self, slots: &'a mut [Option<T>]) -> Option<&'a mut T> {
        if self.len == 0 {
            return None;
        }
        slots.get_mut(self.head)?.as_mut()
    }

    /// Drops every item.
    pub(crate) fn clear<T>(&mut self, slots: &mut [Option<T>]) {
        for slot in slots.iter_mut() {
            *slot = None;
        }
        // INVARIANT: Every slot is `None` and the ring holds nothing.
        *self = Self::new();
    }
}

#[cfg(test)]
#[path = "ring_tests.rs"]
mod tests;
