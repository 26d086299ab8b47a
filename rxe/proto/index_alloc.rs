// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Cyclic allocation of pool indices in `[min, max]` over a radix of bitmap
//! words, for `rxe::pool`.
//!
//! Level 0 has one bit per index (set: taken). Each higher level has one bit
//! per word of the level below, set when that word is full, up to a level of
//! one word. Finding the first free index at or after a cursor climbs while
//! the rest of a word is full and descends along the first clear bit, so an
//! allocation reads at most two words per level, twice with the wrap-around,
//! whatever the pool holds: 4 levels and 16 reads for 2^20 indices.
//!
//! The words are the caller's (sized by [`IndexAlloc::words_for`], allocated
//! once); nothing here allocates.

use core::ops::DerefMut;

use super::conv::to_usize;

/// Bits per bitmap word.
const BITS: usize = 64;
/// Levels for the largest span, 2^32 indices: 2^26, 2^20, 2^14, 2^8, 4, 1 words.
const MAX_LEVELS: usize = 6;

/// Where each level lies in the words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Layout {
    /// Indices in `[min, max]`: the bits of level 0.
    span: usize,
    /// Levels in use, 1 to `MAX_LEVELS`.
    levels: usize,
    /// First word of each level.
    start: [usize; MAX_LEVELS],
    /// Words of each level.
    len: [usize; MAX_LEVELS],
}

impl Layout {
    fn new(min: u32, max: u32) -> Option<Self> {
        let span = to_usize(max.checked_sub(min)?) + 1;
        let mut layout = Layout {
            span,
            levels: 0,
            start: [0; MAX_LEVELS],
            len: [0; MAX_LEVELS],
        };
        let mut bits = span;
        let mut total = 0usize;
        loop {
            let words = bits.div_ceil(BITS);
            let level = layout.levels;
            *layout.start.get_mut(level)? = total;
            *layout.len.get_mut(level)? = words;
            layout.levels += 1;
            total = total.checked_add(words)?;
            if words == 1 {
                return Some(layout);
            }
            bits = words;
        }
    }

    /// Bits of `level`: the indices at 0, the words of the level below above.
    fn bits(&self, level: usize) -> usize {
        match level.checked_sub(1) {
            None => self.span,
            Some(below) => self.len.get(below).copied().unwrap_or(0),
        }
    }

    fn words(&self) -> usize {
        let top = self.levels - 1;
        self.start[top] + self.len[top]
    }
}

/// The free indices of a pool and its cursor.
///
/// # Invariants
///
/// `words` holds at least `layout.words()` words. A level-0 bit is set
/// exactly when its index is taken; a bit of a higher level is set exactly
/// when its word of the level below is all ones. Bits past the end of a
/// level are set, so they are never handed out and the level's last word
/// reads full once its real bits are. `next` is in `[min, max]`.
pub(crate) struct IndexAlloc<W> {
    min: u32,
    max: u32,
    next: u32,
    layout: Layout,
    words: W,
    /// Word reads and writes, for the tests' cost bound.
    #[cfg(test)]
    ops: core::cell::Cell<u64>,
}

impl<W: DerefMut<Target = [u64]>> IndexAlloc<W> {
    /// The words an allocator of `[min, max]` needs, or `None` if
    /// `min > max`.
    pub(crate) fn words_for(min: u32, max: u32) -> Option<usize> {
        Layout::new(min, max).map(|l| l.words())
    }

    /// An allocator of `[min, max]` with every index free, over `words`
    /// (at least [`words_for`](Self::words_for) of them, any contents).
    /// The first index handed out is `min`.
    pub(crate) fn new(min: u32, max: u32, mut words: W) -> Option<Self> {
        let layout = Layout::new(min, max)?;
        let w = words.get_mut(..layout.words())?;
        w.fill(0);
        for level in 0..layout.levels {
            let bits = layout.bits(level);
            let tail = bits % BITS;
            if tail != 0 {
                let last = layout.start[level] + layout.len[level] - 1;
                w[last] = !0u64 << tail;
            }
        }
        // INVARIANT: `words` has `layout.words()` words (the `get_mut`
        // above), all clear but the bits past each level's end: no index is
        // taken and no word full. `next` is `min`.
        Some(Self {
            min,
            max,
            next: min,
            layout,
            words,
            #[cfg(test)]
            ops: core::cell::Cell::new(0),
        })
    }

    /// Word `i` of `level`; past the level's end it reads full.
    fn word(&self, level: usize, i: usize) -> u64 {
        #[cfg(test)]
        self.ops.set(self.ops.get() + 1);
        if level >= self.layout.levels || i >= self.layout.len[level] {
            return !0;
        }
        self.words
            .get(self.layout.start[level] + i)
            .copied()
            .unwrap_or(!0)
    }

    fn set_word(&mut self, level: usize, i: usize, value: u64) {
        #[cfg(test)]
        self.ops.set(self.ops.get() + 1);
        if level >= self.layout.levels || i >= self.layout.len[level] {
            return;
        }
        if let Some(w) = self.words.get_mut(self.layout.start[level] + i) {
            *w = value;
        }
    }

    /// The first clear level-0 bit at or after `pos`, without wrapping.
    fn find_from(&self, pos: usize) -> Option<usize> {
        let mut level = 0;
        let mut pos = pos;
        // Climb while the rest of the word at `pos` is full; a clear bit
        // above `pos` on a higher level is a later word with room.
        loop {
            if level >= self.layout.levels || pos >= self.layout.bits(level) {
                return None;
            }
            let i = pos / BITS;
            let below = (1u64 << (pos % BITS)) - 1;
            let w = self.word(level, i) | below;
            if w != !0 {
                pos = i * BITS + to_usize((!w).trailing_zeros());
                break;
            }
            level += 1;
            pos = i + 1;
        }
        // Descend along the first clear bit; a clear bit above promises one.
        while level > 0 {
            level -= 1;
            let w = self.word(level, pos);
            if w == !0 {
                return None;
            }
            pos = pos * BITS + to_usize((!w).trailing_zeros());
        }
        (pos < self.layout.span).then_some(pos)
    }

    /// Sets level-0 bit `pos` and the bits of the words it fills.
    fn take(&mut self, pos: usize) {
        let mut pos = pos;
        for level in 0..self.layout.levels {
            let i = pos / BITS;
            let w = self.word(level, i) | 1u64 << (pos % BITS);
            // INVARIANT: The bit is set; the level above changes only when
            // this word becomes full, by setting the bit of the word.
            self.set_word(level, i, w);
            if w != !0 {
                return;
            }
            pos = i;
        }
    }

    /// Clears level-0 bit `pos` and the bits of the words that were full.
    fn give(&mut self, pos: usize) {
        let mut pos = pos;
        for level in 0..self.layout.levels {
            let i = pos / BITS;
            let old = self.word(level, i);
            // INVARIANT: The bit is clear; the level above changes only when
            // this word was full, by clearing the bit of the word.
            self.set_word(level, i, old & !(1u64 << (pos % BITS)));
            if old != !0 {
                return;
            }
            pos = i;
        }
    }

    /// The level-0 bit of `idx`, if it is in `[min, max]`.
    fn pos(&self, idx: u32) -> Option<usize> {
        if idx > self.max {
            return None;
        }
        Some(to_usize(idx.checked_sub(self.min)?))
    }

    /// Takes the first free index at or after the cursor, wrapping to `min`
    /// past `max`, and moves the cursor past it; `None` when all are taken.
    pub(crate) fn alloc(&mut self) -> Option<u32> {
        let start = self.pos(self.next).unwrap_or(0);
        let pos = match self.find_from(start) {
            Some(p) => p,
            None => self.find_from(0)?,
        };
        let idx = self.min.checked_add(u32::try_from(pos).ok()?)?;
        if idx > self.max {
            return None;
        }
        self.take(pos);
        // INVARIANT: `idx` is in `[min, max]` (checked), so the cursor is
        // too: past `idx`, or `min` after `max`.
        self.next = if idx == self.max { self.min } else { idx + 1 };
        Some(idx)
    }

    /// Frees `idx`; false if it was not taken (or not in the range).
    pub(crate) fn free(&mut self, idx: u32) -> bool {
        if !self.is_taken(idx) {
            return false;
        }
        if let Some(pos) = self.pos(idx) {
            self.give(pos);
        }
        true
    }

    /// Whether `idx` is taken.
    pub(crate) fn is_taken(&self, idx: u32) -> bool {
        match self.pos(idx) {
            Some(pos) => self.word(0, pos / BITS) & (1u64 << (pos % BITS)) != 0,
            None => false,
        }
    }
}

#[cfg(test)]
#[path = "index_alloc_tests.rs"]
mod tests;
