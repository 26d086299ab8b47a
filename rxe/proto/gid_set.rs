// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The RoCEv2 GIDs of a device, as the receive path checks a packet's
//! destination against them: a copy of the RoCEv2 entries of the core's
//! GID table, kept up to date by the `add_gid`/`del_gid` callbacks, that a
//! packet is looked up in without a lock.
//!
//! A sequence count guards it, as a seqlock does: a writer makes the count
//! odd, changes the slots and makes it even again; a reader reads the
//! count, the slots and the count again, and trusts what it read only if
//! the count was even and did not move. Every shared word is an atomic, so
//! a torn read is only ever a retry. The writers are serialised by the
//! caller (the core holds the port's GID table lock around both callbacks);
//! a writer that finds another under way poisons the set, which then
//! answers [`Found::Unknown`] for good.
//!
//! The set holds [`SLOTS`] entries. Beyond that it keeps counting the
//! entries it could not store, and answers [`Found::Unknown`] until they
//! are gone: the caller then asks the core's table, as it would without
//! the set.
//!
//! # API
//!
//! - [`GidSet::new`], [`GidSet::add`]`(gid, ndev)`, [`GidSet::remove`]`(gid, ndev)`
//! - [`GidSet::lookup`]`(gid, ndev) -> Found`
//!
//! `ndev` is the identity of the network device the entry belongs to (its
//! address), only ever compared.

use core::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// Entries the set stores: a device has a few RoCEv2 GIDs (an IPv4
/// address, an IPv6 link-local and a global one, per VLAN device).
pub(crate) const SLOTS: usize = 8;

/// Attempts of a lookup that meets writers before it gives up.
const READ_TRIES: u32 = 4;

/// What [`GidSet::lookup`] knows of a GID.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Found {
    Yes,
    No,
    /// Entries beyond [`SLOTS`], a writer under way, or a poisoned set:
    /// ask the core.
    Unknown,
}

#[derive(Default)]
struct Slot {
    hi: AtomicU64,
    lo: AtomicU64,
    ndev: AtomicUsize,
}

impl Slot {
    fn holds(&self, (hi, lo): (u64, u64), ndev: usize) -> bool {
        self.hi.load(Ordering::Relaxed) == hi
            && self.lo.load(Ordering::Relaxed) == lo
            && self.ndev.load(Ordering::Relaxed) == ndev
    }

    fn set(&self, (hi, lo): (u64, u64), ndev: usize) {
        self.hi.store(hi, Ordering::Relaxed);
        self.lo.store(lo, Ordering::Relaxed);
        self.ndev.store(ndev, Ordering::Relaxed);
    }

    fn copy_from(&self, other: &Slot) {
        let key = (
            other.hi.load(Ordering::Relaxed),
            other.lo.load(Ordering::Relaxed),
        );
        self.set(key, other.ndev.load(Ordering::Relaxed));
    }
}

/// See the module documentation.
#[derive(Default)]
pub(crate) struct GidSet {
    /// Odd while a writer changes the slots.
    seq: AtomicU32,
    /// Two writers met: the set no longer knows anything.
    poisoned: AtomicBool,
    /// Slots in use, from the first.
    stored: AtomicUsize,
    /// Entries added and not removed that found no free slot.
    unstored: AtomicUsize,
    slots: [Slot; SLOTS],
}

fn key(gid: &[u8; 16]) -> (u64, u64) {
    let mut hi = [0u8; 8];
    let mut lo = [0u8; 8];
    hi.copy_from_slice(&gid[..8]);
    lo.copy_from_slice(&gid[8..]);
    (u64::from_ne_bytes(hi), u64::from_ne_bytes(lo))
}

impl GidSet {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Whether `gid` is an entry of network device `ndev`.
    #[inline]
    pub(crate) fn lookup(&self, gid: &[u8; 16], ndev: usize) -> Found {
        let k = key(gid);
        for _ in 0..READ_TRIES {
            let s = self.seq.load(Ordering::Acquire);
            if self.poisoned.load(Ordering::Relaxed) {
                return Found::Unknown;
            }
            if s & 1 != 0 {
                core::hint::spin_loop();
                continue;
            }
            let unstored = self.unstored.load(Ordering::Relaxed);
            let stored = self.stored.load(Ordering::Relaxed).min(SLOTS);
            let hit = self.slots[..stored].iter().any(|slot| slot.holds(k, ndev));
            fence(Ordering::Acquire);
            if self.seq.load(Ordering::Relaxed) != s {
                continue;
            }
            return match (hit, unstored) {
                (true, _) => Found::Yes,
                (false, 0) => Found::No,
                (false, _) => Found::Unknown,
            };
        }
        Found::Unknown
    }

    /// A new entry of `ndev`.
    pub(crate) fn add(&self, gid: &[u8; 16], ndev: usize) {
        self.write(|set| {
            let stored = set.stored.load(Ordering::Relaxed);
            match set.slots.get(stored) {
                Some(slot) => {
                    slot.set(key(gid), ndev);
                    set.stored.store(stored + 1, Ordering::Relaxed);
                }
                None => {
                    let n = set.unstored.load(Ordering::Relaxed);
                    set.unstored.store(n.saturating_add(1), Ordering::Relaxed);
                }
            }
        });
    }

    /// An entry of `ndev` is gone (one that `add` was given).
    pub(crate) fn remove(&self, gid: &[u8; 16], ndev: usize) {
        self.write(|set| {
            let k = key(gid);
            let stored = set.stored.load(Ordering::Relaxed).min(SLOTS);
            match set.slots[..stored].iter().position(|s| s.holds(k, ndev)) {
                Some(i) => {
                    // The last stored entry takes the freed slot.
                    let last = stored - 1;
                    if i != last {
                        set.slots[i].copy_from(&set.slots[last]);
                    }
                    set.slots[last].set((0, 0), 0);
                    set.stored.store(last, Ordering::Relaxed);
                }
                None => {
                    // One of those that found no slot.
                    let n = set.unstored.load(Ordering::Relaxed);
                    set.unstored.store(n.saturating_sub(1), Ordering::Relaxed);
                }
            }
        });
    }

    /// Runs `change` as the only writer, between the odd and the even
    /// sequence count; poisons the set if another writer is under way.
    fn write(&self, change: impl FnOnce(&Self)) {
        if self.poisoned.load(Ordering::Relaxed) {
            return;
        }
        let s = self.seq.load(Ordering::Relaxed);
        let odd = s.wrapping_add(1);
        if s & 1 != 0
            || self
                .seq
                .compare_exchange(s, odd, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            self.poisoned.store(true, Ordering::Release);
            return;
        }
        // The odd count is seen before any change of the slots.
        fence(Ordering::Release);
        change(self);
        self.seq.store(odd.wrapping_add(1), Ordering::Release);
    }
}

#[cfg(test)]
#[path = "gid_set_tests.rs"]
mod tests;
