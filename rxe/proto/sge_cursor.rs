// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Where a transfer is in a work request's scatter/gather list: which SGE,
//! how far into it, how many bytes are left (C's `rxe_dma_info` progress
//! fields and the walk of `copy_data`/`advance_dma_data`).
//!
//! The cursor only plans: [`SgeCursor::walk`] cuts the next `len` bytes
//! into [`Piece`]s, one per SGE they touch, and the caller copies each piece
//! (looking up its lkey) and then keeps [`Walk::position`]. A failed walk
//! leaves the caller's cursor as it was.

use super::conv::to_usize;
use super::uapi::{RecvWqe, SendWqe, Sge};

/// An indexable list of SGEs.
pub(crate) trait SgeList {
    /// SGE `i`, or `None` past the end (every `i` past the end).
    fn sge_at(&self, i: usize) -> Option<Sge>;
}

impl SgeList for [Sge] {
    fn sge_at(&self, i: usize) -> Option<Sge> {
        self.get(i).copied()
    }
}

impl SgeList for SendWqe {
    fn sge_at(&self, i: usize) -> Option<Sge> {
        self.sge(i)
    }
}

impl SgeList for RecvWqe {
    fn sge_at(&self, i: usize) -> Option<Sge> {
        self.sge(i)
    }
}

/// Why a walk failed. C's `copy_data` returns `-EINVAL` and `-ENOSPC`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CursorError {
    /// More bytes than the work request has left (`-EINVAL`).
    TooLong,
    /// The SGEs end before the bytes do (`-ENOSPC`).
    NoSpace,
}

/// The progress of a transfer through an SGE list.
///
/// Like C, the cursor moves to the next SGE lazily: after a piece that ends
/// an SGE it stays at that SGE's end, and zero-length SGEs are stepped over
/// by the next walk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SgeCursor {
    cur_sge: usize,
    sge_offset: u32,
    resid: u32,
}

/// One contiguous piece of a walk: `len` bytes at `offset` into SGE
/// `index`, which are bytes `pos..pos + len` of the walk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Piece {
    pub(crate) index: usize,
    pub(crate) sge: Sge,
    pub(crate) offset: u32,
    pub(crate) len: u32,
    pub(crate) pos: usize,
}

impl Piece {
    /// The address the piece starts at; `None` if the SGE's address plus
    /// the offset overflows.
    pub(crate) fn addr(&self) -> Option<u64> {
        self.sge.addr.checked_add(u64::from(self.offset))
    }

    /// The piece's bytes in the caller's buffer.
    pub(crate) fn range(&self) -> core::ops::Range<usize> {
        self.pos..self.pos.saturating_add(to_usize(self.len))
    }
}

impl SgeCursor {
    /// The start of a transfer of `resid` bytes (the WQE's length, which
    /// the WQE parsers checked to be the sum of its SGE lengths).
    pub(crate) const fn new(resid: u32) -> Self {
        Self {
            cur_sge: 0,
            sge_offset: 0,
            resid,
        }
    }

    /// Bytes left.
    pub(crate) const fn resid(&self) -> u32 {
        self.resid
    }

    /// The SGE the cursor is in.
    pub(crate) const fn cur_sge(&self) -> usize {
        self.cur_sge
    }

    /// How far into that SGE.
    #[cfg(test)] // Only the host tests use it.
    pub(crate) const fn sge_offset(&self) -> u32 {
        self.sge_offset
    }

    /// Plans the next `len` bytes over `sges`. A zero length plans nothing
    /// (C returns before touching the SGEs).
    pub(crate) fn walk<'a, L: SgeList + ?Sized>(
        &self,
        sges: &'a L,
        len: u32,
    ) -> Result<Walk<'a, L>, CursorError> {
        if len > self.resid {
            return Err(CursorError::TooLong);
        }
        Ok(Walk {
            sges,
            at: *self,
            left: len,
            pos: 0,
            failed: false,
        })
    }

    /// Moves `len` bytes on without copying (C's `advance_dma_data`: a
    /// retransmission restarting inside a message). On error the cursor is
    /// unchanged.
    pub(crate) fn advance<L: SgeList + ?Sized>(
        &mut self,
        sges: &L,
        len: u32,
    ) -> Result<(), CursorError> {
        let mut walk = self.walk(sges, len)?;
        for piece in walk.by_ref() {
            piece?;
        }
        *self = walk.position();
        Ok(())
    }

    /// Moves `len` bytes on through inline data, where C counts the offset
    /// in `sge_offset` with no SGEs.
    #[cfg(test)] // Only the host tests use it.
    pub(crate) fn advance_inline(&mut self, len: u32) -> Result<(), CursorError> {
        let resid = self.resid.checked_sub(len).ok_or(CursorError::TooLong)?;
        let sge_offset = self
            .sge_offset
            .checked_add(len)
            .ok_or(CursorError::TooLong)?;
        self.resid = resid;
        self.sge_offset = sge_offset;
        Ok(())
    }
}

/// The pieces of one transfer, in order. Yields an error (and then
/// nothing) when the SGEs run out.
pub(crate) struct Walk<'a, L: ?Sized> {
    sges: &'a L,
    at: SgeCursor,
    left: u32,
    pos: usize,
    failed: bool,
}

impl<L: SgeList + ?Sized> Walk<'_, L> {
    /// The cursor after the pieces yielded so far; after the last one, the
    /// cursor to keep.
    pub(crate) fn position(&self) -> SgeCursor {
        self.at
    }

    /// Bytes not yet yielded.
    #[cfg(test)] // Only the host tests use it.
    pub(crate) fn left(&self) -> u32 {
        self.left
    }
}

impl<L: SgeList + ?Sized> Iterator for Walk<'_, L> {
    type Item = Result<Piece, CursorError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 || self.failed {
            return None;
        }
        loop {
            let Some(sge) = self.sges.sge_at(self.at.cur_sge) else {
                self.failed = true;
                return Some(Err(CursorError::NoSpace));
            };
            if self.at.sge_offset >= sge.length {
                // This SGE is used up (or empty): on to the next. Ends at
                // the list's end, where `sge_at` gives `None`.
                self.at.cur_sge = self.at.cur_sge.saturating_add(1);
                self.at.sge_offset = 0;
                if self.at.cur_sge == usize::MAX {
                    self.failed = true;
                    return Some(Err(CursorError::NoSpace));
                }
                continue;
            }
            let len = self.left.min(sge.length - self.at.sge_offset);
            let piece = Piece {
                index: self.at.cur_sge,
                sge,
                offset: self.at.sge_offset,
                len,
                pos: self.pos,
            };
            // No overflow: `len` fits in what is left of the SGE, of the
            // walk and (checked in `walk`) of `resid`.
            self.at.sge_offset += len;
            self.at.resid = self.at.resid.saturating_sub(len);
            self.left -= len;
            self.pos = piece.range().end;
            return Some(Ok(piece));
        }
    }
}

#[cfg(test)]
#[path = "sge_cursor_tests.rs"]
mod tests;
