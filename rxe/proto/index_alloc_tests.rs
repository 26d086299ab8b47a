// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Tests of the cyclic index allocator: against a linear-scan model, its
//! radix invariants, and its cost on a full pool.

use std::vec;
use std::vec::Vec;

use super::super::params::pool;
use super::super::testing::rng::Rng;
use super::*;

type Alloc = IndexAlloc<Vec<u64>>;

fn alloc(min: u32, max: u32) -> Alloc {
    let words = Alloc::words_for(min, max).unwrap();
    // Garbage in the words: `new` clears what it uses.
    Alloc::new(min, max, vec![0x5a5a_5a5a_5a5a_5a5a; words]).unwrap()
}

/// The pool's old allocator: a linear scan from the cursor.
struct Model {
    min: u32,
    max: u32,
    next: u32,
    taken: Vec<bool>,
}

impl Model {
    fn new(min: u32, max: u32) -> Self {
        Self {
            min,
            max,
            next: min,
            taken: vec![false; (max - min + 1) as usize],
        }
    }

    fn alloc(&mut self) -> Option<u32> {
        let span = self.max - self.min + 1;
        let mut idx = self.next;
        for _ in 0..span {
            if !self.taken[(idx - self.min) as usize] {
                self.taken[(idx - self.min) as usize] = true;
                self.next = if idx == self.max { self.min } else { idx + 1 };
                return Some(idx);
            }
            idx = if idx == self.max { self.min } else { idx + 1 };
        }
        None
    }

    fn free(&mut self, idx: u32) -> bool {
        if idx < self.min || idx > self.max {
            return false;
        }
        std::mem::replace(&mut self.taken[(idx - self.min) as usize], false)
    }
}

/// Every bit above level 0 says whether its word below is full, and the
/// bits past each level's end are set.
fn check_invariants(a: &Alloc) {
    let l = &a.layout;
    for level in 0..l.levels {
        let bits = l.bits(level);
        for i in 0..l.len[level] {
            let w = a.words[l.start[level] + i];
            for b in 0..BITS {
                let pos = i * BITS + b;
                let set = w & (1 << b) != 0;
                if pos >= bits {
                    assert!(set, "padding bit {pos} of level {level} clear");
                } else if level > 0 {
                    let child = a.words[l.start[level - 1] + pos];
                    assert_eq!(set, child == !0, "level {level} bit {pos}");
                }
            }
        }
    }
    assert!(a.next >= a.min && a.next <= a.max);
}

#[test]
fn layouts() {
    assert_eq!(Alloc::words_for(1, 1), Some(1));
    assert_eq!(Alloc::words_for(0, 63), Some(1));
    assert_eq!(Alloc::words_for(0, 64), Some(3));
    assert_eq!(Alloc::words_for(5, 4), None);
    // The MW pool: 2^19 indices in 8192 + 128 + 2 + 1 words (65 KiB).
    assert_eq!(
        Alloc::words_for(pool::MW.min_index, pool::MW.max_index),
        Some(8192 + 128 + 2 + 1)
    );
    let qp = Layout::new(pool::QP.min_index, pool::QP.max_index).unwrap();
    assert_eq!(qp.levels, 4);
    let all = Layout::new(0, u32::MAX).unwrap();
    assert_eq!(all.levels, MAX_LEVELS);
    assert_eq!(
        all.words(),
        (1 << 26) + (1 << 20) + (1 << 14) + (1 << 8) + 4 + 1
    );
    // Too few words.
    assert!(Alloc::new(0, 64, vec![0; 2]).is_none());
}

#[test]
fn hands_out_in_order_then_fails_when_full() {
    for (min, max) in [
        (7, 7),
        (0, 63),
        (16, 16 + 64),
        (1, 4097),
        (3, 3 + 64 * 64 * 64),
    ] {
        let mut a = alloc(min, max);
        for want in min..=max {
            assert_eq!(a.alloc(), Some(want));
        }
        assert_eq!(a.alloc(), None, "{min}..={max} full");
        check_invariants(&a);
        // Full, one freed: that one, whatever the cursor.
        let mid = min + (max - min) / 2;
        assert!(a.free(mid));
        assert!(!a.free(mid));
        assert_eq!(a.alloc(), Some(mid));
        assert_eq!(a.alloc(), None);
        check_invariants(&a);
    }
}

#[test]
fn a_freed_index_waits_for_its_turn() {
    let mut a = alloc(16, 31);
    for want in 16..=20 {
        assert_eq!(a.alloc(), Some(want));
    }
    assert!(a.free(18));
    // Not 18: the cursor is past it.
    assert_eq!(a.alloc(), Some(21));
    assert!(a.free(21));
    for want in 22..=31 {
        assert_eq!(a.alloc(), Some(want));
    }
    // Wraps to the first free from `min`.
    assert_eq!(a.alloc(), Some(18));
    assert_eq!(a.alloc(), Some(21));
    assert_eq!(a.alloc(), None);
    check_invariants(&a);
}

#[test]
fn free_outside_or_untaken() {
    let mut a = alloc(100, 199);
    assert!(!a.free(99));
    assert!(!a.free(200));
    assert!(!a.free(150));
    assert!(!a.is_taken(u32::MAX));
    assert_eq!(a.alloc(), Some(100));
    assert!(a.is_taken(100));
    assert!(a.free(100));
    assert!(!a.is_taken(100));
    check_invariants(&a);
}

#[test]
fn the_top_of_u32() {
    let mut a = alloc(u32::MAX - 2, u32::MAX);
    assert_eq!(a.alloc(), Some(u32::MAX - 2));
    assert_eq!(a.alloc(), Some(u32::MAX - 1));
    assert_eq!(a.alloc(), Some(u32::MAX));
    assert_eq!(a.alloc(), None);
    assert!(a.free(u32::MAX));
    assert_eq!(a.alloc(), Some(u32::MAX));
}

/// Random allocs and frees, biased so pools run full and empty, against
/// the linear scan: same indices, same failures.
#[test]
fn matches_linear_scan() {
    let ranges = [
        (1, 1),
        (0, 62),
        (0, 63),
        (0, 64),
        (16, 16 + 4095),
        (1, 4097),
        (9, 9 + 3 * 4096 + 7),
        (0x2_0001, 0x2_0001 + 64 * 64 * 64),
    ];
    let mut rng = Rng::new(0x1d_a110c);
    for (min, max) in ranges {
        let mut a = alloc(min, max);
        let mut m = Model::new(min, max);
        let span = max - min + 1;
        let mut live: Vec<u32> = Vec::new();
        let steps = 20_000.max(3 * span as usize).min(300_000);
        for step in 0..steps {
            // Phases of mostly-alloc and mostly-free.
            let alloc_pct = if (step / 2000) % 2 == 0 { 85 } else { 30 };
            if live.is_empty() || rng.chance(alloc_pct) {
                let got = a.alloc();
                assert_eq!(got, m.alloc(), "{min}..={max} step {step}");
                if let Some(i) = got {
                    live.push(i);
                }
            } else {
                let k = rng.below(live.len() as u32) as usize;
                let i = live.swap_remove(k);
                assert!(a.free(i));
                assert!(m.free(i));
            }
            if rng.chance(1) {
                // Frees of free and out-of-range indices change nothing.
                let i = min.wrapping_add(rng.below(span + 2)).wrapping_sub(1);
                let taken = a.is_taken(i);
                assert_eq!(taken, live.contains(&i));
                if !taken {
                    assert!(!a.free(i));
                }
            }
        }
        check_invariants(&a);
        for i in min..=max {
            assert_eq!(a.is_taken(i), m.taken[(i - min) as usize]);
        }
    }
}

/// Word reads and writes of one `alloc`.
fn cost(a: &mut Alloc) -> (Option<u32>, u64) {
    a.ops.set(0);
    let got = a.alloc();
    (got, a.ops.get())
}

/// The MW pool filled but for one index, then one freed in the middle:
/// each allocation of it touches a few words (the linear scan visited up
/// to 2^19 indices), and so does one on an empty pool.
#[test]
fn cost_on_a_full_mw_pool_is_bounded() {
    let (min, max) = (pool::MW.min_index, pool::MW.max_index);
    let mut a = alloc(min, max);
    let (_, empty) = cost(&mut a);
    // 4 levels: at most 2 reads a level twice over (wrap), 2 a level to take.
    const BOUND: u64 = 6 * 4;
    assert!(empty <= BOUND, "{empty} word operations on an empty pool");
    let mut worst = 0;
    // As the MW limit leaves it: all but one index taken.
    for _ in 1..pool::MW.max_elem {
        let (got, ops) = cost(&mut a);
        assert!(got.is_some());
        worst = worst.max(ops);
    }
    assert!(worst <= BOUND, "{worst} word operations filling the pool");
    // The index the limit leaves spare, and one freed in the middle: the
    // user's free-and-allocate loop alternates between them.
    let spare = max;
    assert!(!a.is_taken(spare));
    let mid = min + (max - min) / 2;
    let mut last = mid;
    for round in 0..20 {
        assert!(a.free(last));
        let (got, ops) = cost(&mut a);
        let got = got.unwrap();
        assert!(got == spare || got == mid, "{got}");
        assert!(ops <= BOUND, "{ops} word operations, round {round}");
        last = got;
    }
    // Full: failing is as cheap.
    let other = if last == spare { mid } else { spare };
    assert_eq!(a.alloc(), Some(other));
    let (got, ops) = cost(&mut a);
    assert_eq!(got, None);
    assert!(ops <= BOUND, "{ops} word operations to fail");
    check_invariants(&a);
}
