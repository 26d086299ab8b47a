// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Deterministic xorshift generator shared by the fuzz tests.

use std::convert::TryFrom;

pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    pub(crate) fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    pub(crate) fn u32(&mut self) -> u32 {
        (self.next() >> 32) as u32
    }

    /// Uniform in `0..n` (`n` > 0).
    pub(crate) fn below(&mut self, n: u32) -> u32 {
        ((self.next() >> 32) % u64::from(n)) as u32
    }

    pub(crate) fn bool(&mut self) -> bool {
        self.next() & 1 == 1
    }

    /// True with probability `pct`%.
    pub(crate) fn chance(&mut self, pct: u32) -> bool {
        self.below(100) < pct
    }

    pub(crate) fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        let n = u32::try_from(items.len()).unwrap();
        items[self.below(n) as usize]
    }
}
