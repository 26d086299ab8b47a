// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Memory region and window rules: key layout, access rights, bounds checks
//! and the iova-to-page arithmetic behind MR copies. The checks of the local
//! operations (fast register, invalidate, bind) are in
//! [`local_ops`](super::local_ops), which this module re-exports.
//!
//! Everything here is arithmetic on values the driver already copied out of
//! user memory, kernel work requests or packets; none of it can panic.

use super::conv::len64;
pub(crate) use super::local_ops::{
    check_bind, check_fast_reg, check_invalidate_mr, check_invalidate_mw, BindMr, BindReq,
    InvalidateError, MrFacts,
};
use super::params::{pool, KEY_INDEX_SHIFT};

/// The low byte of an lkey/rkey: the part a consumer may change.
pub(crate) const KEY_BYTE_MASK: u32 = (1 << KEY_INDEX_SHIFT) - 1;

/// `enum ib_access_flags` (the uverbs values) as a set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Access(u32);

impl Access {
    pub(crate) const NONE: Self = Self(0);
    pub(crate) const LOCAL_WRITE: Self = Self(1 << 0);
    pub(crate) const REMOTE_WRITE: Self = Self(1 << 1);
    pub(crate) const REMOTE_READ: Self = Self(1 << 2);
    pub(crate) const REMOTE_ATOMIC: Self = Self(1 << 3);
    pub(crate) const MW_BIND: Self = Self(1 << 4);
    pub(crate) const ZERO_BASED: Self = Self(1 << 5);
    pub(crate) const ON_DEMAND: Self = Self(1 << 6);
    #[allow(dead_code)] // The whole C value set, used or not.
    pub(crate) const HUGETLB: Self = Self(1 << 7);
    pub(crate) const FLUSH_GLOBAL: Self = Self(1 << 8);
    pub(crate) const FLUSH_PERSISTENT: Self = Self(1 << 9);
    /// Bits 20..=29: hints a device may ignore (relaxed ordering is bit 20).
    pub(crate) const OPTIONAL: Self = Self(((1 << 29) << 1) - (1 << 20));

    /// Any remote right.
    pub(crate) const REMOTE: Self =
        Self(Self::REMOTE_READ.0 | Self::REMOTE_WRITE.0 | Self::REMOTE_ATOMIC.0);
    /// What rxe accepts on an MR (`RXE_ACCESS_SUPPORTED_MR`).
    pub(crate) const SUPPORTED_MR: Self = Self(
        Self::REMOTE.0
            | Self::LOCAL_WRITE.0
            | Self::MW_BIND.0
            | Self::ON_DEMAND.0
            | Self::FLUSH_GLOBAL.0
            | Self::FLUSH_PERSISTENT.0
            | Self::OPTIONAL.0,
    );
    /// What rxe accepts when binding an MW (`RXE_ACCESS_SUPPORTED_MW`).
    pub(crate) const SUPPORTED_MW: Self = Self(Self::SUPPORTED_MR.0 | Self::ZERO_BASED.0);

    pub(crate) const fn from_raw(bits: u32) -> Self {
        Self(bits)
    }

    pub(crate) const fn bits(self) -> u32 {
        self.0
    }

    /// Whether every right of `other` is in `self`.
    pub(crate) const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether `self` and `other` share a right.
    pub(crate) const fn intersects(self, other: Self) -> bool {
        self.0 & other.0 != 0
    }

    pub(crate) const fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// The bits outside `allowed`.
    pub(crate) const fn outside(self, allowed: Self) -> Self {
        Self(self.0 & !allowed.0)
    }

    pub(crate) const fn is_empty(self) -> bool {
        self.0 == 0
    }
}

/// `enum rxe_mr_state` (MWs use the same three states).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum State {
    /// Not usable: a fresh object, or one being torn down.
    Invalid,
    /// A fast-register MR or type 2 MW waiting for a REG_MR/bind.
    Free,
    /// Usable by the datapath.
    Valid,
}

/// How the memory of an MR was described (`ib_mr.type` of interest to rxe).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MrType {
    /// `get_dma_mr`: addresses are kernel virtual addresses.
    Dma,
    /// `reg_user_mr`: pinned user pages.
    User,
    /// `alloc_mr(IB_MR_TYPE_MEM_REG)`: pages given by `map_mr_sg`.
    MemReg,
}

/// `enum ib_mw_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MwType {
    One,
    Two,
}

impl MwType {
    /// The `ib_mw_type` value (1 or 2).
    pub(crate) const fn from_raw(v: u32) -> Option<Self> {
        match v {
            1 => Some(Self::One),
            2 => Some(Self::Two),
            _ => None,
        }
    }
}

/// Why a verb or a local operation on an MR/MW is refused; the glue turns
/// these into the errnos the C driver returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RuleError {
    /// `-EINVAL`.
    Invalid,
    /// `-EOPNOTSUPP`.
    NotSupported,
}

// ---------------------------------------------------------------------------
// Keys
// ---------------------------------------------------------------------------

/// `index << 8 | key byte`. Pool indices fit in 24 bits, so nothing is lost.
pub(crate) const fn make_key(index: u32, byte: u8) -> u32 {
    // Widening u8 -> u32.
    (index << KEY_INDEX_SHIFT) | byte as u32
}

/// The pool index a key names.
pub(crate) const fn key_index(key: u32) -> u32 {
    key >> KEY_INDEX_SHIFT
}

/// The consumer-owned low byte of a key.
#[cfg(test)] // Only the host tests use it.
pub(crate) const fn key_byte(key: u32) -> u8 {
    // Masked to 8 bits first, so the narrowing keeps the whole value.
    (key & KEY_BYTE_MASK) as u8
}

/// `key` with its low byte replaced by the low byte of `from`.
pub(crate) const fn with_key_byte(key: u32, from: u32) -> u32 {
    (key & !KEY_BYTE_MASK) | (from & KEY_BYTE_MASK)
}

/// Whether two keys name the same pool slot.
pub(crate) const fn same_index(a: u32, b: u32) -> bool {
    key_index(a) == key_index(b)
}

/// Whether an rkey names a memory window (MWs own the upper half of the
/// key index space).
pub(crate) const fn rkey_is_mw(rkey: u32) -> bool {
    pool::MW.holds(key_index(rkey))
}

/// A key byte from `random` that differs from `last` (if any), so a key
/// that changed never equals its previous value. `random` is asked again
/// only on a collision; after a few tries the byte is derived instead, so
/// this always terminates.
#[cfg(test)] // Only the host tests use it.
pub(crate) fn next_key_byte(last: Option<u8>, mut random: impl FnMut() -> u8) -> u8 {
    let Some(last) = last else {
        return random();
    };
    for _ in 0..8 {
        let b = random();
        if b != last {
            return b;
        }
    }
    last.wrapping_add(1)
}

// ---------------------------------------------------------------------------
// Access rules of the verbs
// ---------------------------------------------------------------------------

/// `reg_user_mr`: rights rxe cannot honour are refused with `EOPNOTSUPP`.
/// (The core has already refused remote write/atomic without local write.)
pub(crate) const fn check_reg_access(access: Access) -> Result<(), RuleError> {
    if access.outside(Access::SUPPORTED_MR).is_empty() {
        Ok(())
    } else {
        Err(RuleError::NotSupported)
    }
}

/// `IB_MR_REREG_*` flags.
pub(crate) mod rereg {
    #[allow(dead_code)] // The whole C value set, used or not.
    pub(crate) const TRANS: u32 = 1 << 0;
    pub(crate) const PD: u32 = 1 << 1;
    pub(crate) const ACCESS: u32 = 1 << 2;
    /// What rxe implements: a new PD and new rights, not a new range.
    pub(crate) const SUPPORTED: u32 = PD | ACCESS;
}

/// `rereg_user_mr`: flags and rights rxe supports.
pub(crate) const fn check_rereg(flags: u32, access: Access) -> Result<(), RuleError> {
    if flags & !rereg::SUPPORTED != 0 {
        return Err(RuleError::NotSupported);
    }
    if flags & rereg::ACCESS != 0 && !access.outside(Access::SUPPORTED_MR).is_empty() {
        return Err(RuleError::NotSupported);
    }
    Ok(())
}

/// Whether rights need the pages mapped writable (`ib_access_writable`).
#[cfg(test)] // Only the host tests use it.
pub(crate) const fn is_writable(access: Access) -> bool {
    access.intersects(Access(
        Access::LOCAL_WRITE.0
            | Access::REMOTE_WRITE.0
            | Access::REMOTE_ATOMIC.0
            | Access::MW_BIND.0,
    ))
}

// ---------------------------------------------------------------------------
// Bounds and page arithmetic
// ---------------------------------------------------------------------------

/// Whether `[iova, iova + len)` lies within `[base, base + length)`, computed
/// without overflow for any inputs.
pub(crate) const fn range_ok(base: u64, length: u64, iova: u64, len: u64) -> bool {
    iova >= base && len <= length && iova - base <= length - len
}

/// The MR iova a window address `va` means, and whether `[va, va + len)`
/// stays inside the window. A zero-based window counts from its start.
pub(crate) fn window_target(
    addr: u64,
    length: u64,
    zero_based: bool,
    va: u64,
    len: u64,
) -> Option<u64> {
    if zero_based {
        if !range_ok(0, length, va, len) {
            return None;
        }
        addr.checked_add(va)
    } else if range_ok(addr, length, va, len) {
        Some(va)
    } else {
        None
    }
}

/// Where the bytes of an MR live: a list of equal-sized blocks, the first one
/// starting at `base`. A user MR has one block per system page; a fast-reg MR
/// one per MR page (or one per system page when MR pages are larger).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    base: u64,
    block_shift: u32,
}

/// One piece of a copy that stays within a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Chunk {
    /// Index of the block in the MR's list.
    pub(crate) block: usize,
    /// Byte offset within the block.
    pub(crate) offset: usize,
    /// Bytes of this piece.
    pub(crate) len: usize,
    /// Offset of this piece in the caller's buffer.
    pub(crate) pos: usize,
}

impl Layout {
    /// The layout of an MR at `iova` with pages of `1 << page_shift` bytes on
    /// a system with `1 << sys_page_shift` byte pages. Shifts are clamped to
    /// 63, so odd inputs give odd layouts, never a panic.
    pub(crate) const fn new(iova: u64, page_shift: u32, sys_page_shift: u32) -> Self {
        let page_shift = if page_shift > 63 { 63 } else { page_shift };
        let sys = if sys_page_shift > 63 {
            63
        } else {
            sys_page_shift
        };
        let mask = (1u64 << page_shift) - 1;
        Self {
            base: iova & !mask,
            block_shift: if page_shift < sys { page_shift } else { sys },
        }
    }

    pub(crate) const fn block_size(&self) -> u64 {
        1 << self.block_shift
    }

    /// Block index and offset of `iova`, or `None` below the first block or
    /// past what a `usize` can index.
    pub(crate) fn locate(&self, iova: u64) -> Option<(usize, usize)> {
        let rel = iova.checked_sub(self.base)?;
        let block = usize::try_from(rel >> self.block_shift).ok()?;
        let offset = usize::try_from(rel & (self.block_size() - 1)).ok()?;
        Some((block, offset))
    }

    /// Number of blocks `[iova, iova + len)` touches after the first
    /// block, i.e. the block index of its last byte, or `None` on overflow.
    #[cfg(test)] // Only the host tests use it.
    pub(crate) fn last_block(&self, iova: u64, len: u64) -> Option<usize> {
        let last = iova.checked_add(len.checked_sub(1)?)?;
        self.locate(last).map(|(b, _)| b)
    }

    /// Splits a copy of `len` bytes at `iova` into pieces that each stay
    /// inside one block.
    pub(crate) fn chunks(&self, iova: u64, len: usize) -> Chunks {
        Chunks {
            layout: *self,
            iova,
            pos: 0,
            len,
            wrapped: false,
            failed: false,
        }
    }
}

/// Iterator of [`Layout::chunks`]. Yields `Err(())` once, then stops, if the
/// arithmetic leaves the addressable range.
pub(crate) struct Chunks {
    layout: Layout,
    iova: u64,
    pos: usize,
    len: usize,
    /// The next byte would be past the top of the address space.
    wrapped: bool,
    failed: bool,
}

impl Iterator for Chunks {
    type Item = Result<Chunk, ()>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.len {
            return None;
        }
        let located = if self.wrapped {
            None
        } else {
            self.layout.locate(self.iova)
        };
        let Some((block, offset)) = located else {
            self.failed = true;
            return Some(Err(()));
        };
        let room = usize::try_from(self.layout.block_size()).unwrap_or(usize::MAX) - offset;
        let len = core::cmp::min(room, self.len - self.pos);
        let chunk = Chunk {
            block,
            offset,
            len,
            pos: self.pos,
        };
        self.pos += len;
        match self.iova.checked_add(len64(len)) {
            Some(next) => self.iova = next,
            None => self.wrapped = true,
        }
        Some(Ok(chunk))
    }
}

/// Number of `1 << shift` byte pages `[addr, addr + len)` spans
/// (`ib_umem_num_dma_blocks`), or `None` on overflow.
#[cfg(test)] // Only the host tests use it.
pub(crate) fn pages_spanned(addr: u64, len: u64, shift: u32) -> Option<u64> {
    if len == 0 || shift > 63 {
        return Some(0);
    }
    let mask = (1u64 << shift) - 1;
    let end = addr.checked_add(len)?.checked_add(mask)? & !mask;
    Some((end - (addr & !mask)) >> shift)
}

// ---------------------------------------------------------------------------
// Atomics
// ---------------------------------------------------------------------------

/// The two 8-byte atomics of the IBA transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AtomicOp {
    CompareSwap { compare: u64, swap: u64 },
    FetchAdd { add: u64 },
}

impl AtomicOp {
    /// The value to store when the target holds `old`, or `None` to leave it.
    #[cfg(test)] // Only the host tests use it.
    pub(crate) const fn apply(self, old: u64) -> Option<u64> {
        match self {
            Self::CompareSwap { compare, swap } => {
                if old == compare {
                    Some(swap)
                } else {
                    None
                }
            }
            Self::FetchAdd { add } => Some(old.wrapping_add(add)),
        }
    }
}

/// Atomic targets are naturally aligned 8-byte words.
pub(crate) const fn atomic_aligned(addr: u64) -> bool {
    addr & 7 == 0
}

#[cfg(test)]
#[path = "mr_tests.rs"]
mod tests;
