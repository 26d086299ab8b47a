// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Moving payload bytes between packets and the memory a work request's
//! SGEs name (C's `copy_data`/`advance_dma_data`).
//!
//! A [`Cursor`] is the progress of one WQE's transfer. Each copy looks up
//! the lkey of every SGE it touches with the QP's PD and the rights the
//! operation needs, as C does per packet, except that the MR of the current
//! SGE is kept between copies and serves while its generation has not moved
//! (`MrShared::unchanged_since`), which spares the device-wide pool lookup
//! and the MR's lock on every packet of a large SGE.
//!
//! The responder's receive copy is the model of use
//! (`rxe/responder/io.rs`, `take_recv` and `recv_data`): a [`Cursor`] made
//! from the receive WQE's length, then [`Cursor::copy_to_mem`] with a
//! [`LocalAccess`] of the QP's PD and `LOCAL_WRITE` for each packet's
//! payload.

use kernel::{prelude::*, sync::Arc};

use crate::rxe::device::DeviceState;
use crate::rxe::kapi::page::PayloadPages;
use crate::rxe::mr::{self, Access, AccessError, KeyKind, PdId, PendingFault};
use crate::rxe::proto::{
    conv::to_usize,
    sge_cursor::{CursorError, Piece, SgeCursor, SgeList},
    uapi::WcStatus,
};

/// Why a copy failed. The C errno each stands for decides the outcome:
/// the requester completes with [`DmaError::requester_status`], the
/// completer with `IB_WC_LOC_PROT_ERR` whatever the cause, and the responder
/// answers [`DmaError::NoSpace`] as a length error and everything else as a
/// malformed WQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DmaError {
    /// More bytes than the WQE has left (`-EINVAL`).
    TooLong,
    /// The SGEs end before the bytes do (`-ENOSPC`).
    NoSpace,
    /// An lkey names no valid MR of the PD with the rights (`-EINVAL`).
    Key,
    /// An SGE reaches outside its MR (`-EINVAL`).
    Range,
    /// No memory behind an address (`-EFAULT`).
    Fault,
    /// A page of an on-demand-paging MR is absent: nothing was copied and
    /// the cursor did not move; [`Cursor::take_fault`] names what to fault
    /// in before the copy is tried again.
    Absent,
}

impl DmaError {
    /// The status of a send WQE whose payload could not be read (C: a fault
    /// is a protection error, anything else a QP operation error).
    pub(crate) fn requester_status(self) -> WcStatus {
        match self {
            Self::Fault | Self::Absent => WcStatus::LocProtErr,
            _ => WcStatus::LocQpOpErr,
        }
    }
}

impl From<CursorError> for DmaError {
    fn from(e: CursorError) -> Self {
        match e {
            CursorError::TooLong => Self::TooLong,
            CursorError::NoSpace => Self::NoSpace,
        }
    }
}

impl From<AccessError> for DmaError {
    fn from(e: AccessError) -> Self {
        match e {
            AccessError::Key => Self::Key,
            AccessError::Range => Self::Range,
            // An 8-byte alignment rule never applies to a copy.
            AccessError::Fault | AccessError::Misaligned => Self::Fault,
            AccessError::Absent => Self::Absent,
        }
    }
}

/// Whose memory the SGEs may name and what the operation does to it: the
/// QP's PD and device, and `LOCAL_WRITE` when the copy writes memory (C
/// asks for no rights when it only reads).
pub(crate) struct LocalAccess<'a> {
    dev: &'a DeviceState,
    pd: PdId,
    access: Access,
}

impl<'a> LocalAccess<'a> {
    pub(crate) fn new(dev: &'a DeviceState, pd: PdId, access: Access) -> Self {
        Self { dev, pd, access }
    }
}

/// The MR of the SGE a cursor is in.
struct Held {
    index: usize,
    lkey: u32,
    /// The PD and rights the key was checked for, and the region's
    /// generation then.
    pd: PdId,
    access: Access,
    gen: u64,
    mr: Arc<mr::MrShared>,
}

/// The progress of one WQE's transfer through its SGEs.
pub(crate) struct Cursor {
    pos: SgeCursor,
    held: Option<Held>,
    /// What the last copy that failed with [`DmaError::Absent`] needs.
    fault: Option<PendingFault>,
}

impl Cursor {
    /// A transfer of `length` bytes (the WQE's length) from its start.
    pub(crate) fn new(length: u32) -> Self {
        Self {
            pos: SgeCursor::new(length),
            held: None,
            fault: None,
        }
    }

    /// Starts over for `length` bytes (a retry from the WQE's start, or
    /// the next WQE).
    pub(crate) fn reset(&mut self, length: u32) {
        *self = Self::new(length);
    }

    /// The fault the last [`DmaError::Absent`] asks for, once.
    pub(crate) fn take_fault(&mut self) -> Option<PendingFault> {
        self.fault.take()
    }

    /// Bytes left.
    pub(crate) fn resid(&self) -> u32 {
        self.pos.resid()
    }

    /// Copies `data` into the memory of the next `data.len()` bytes of
    /// `sges` (C: `RXE_TO_MR_OBJ`; received SEND payload, READ responses,
    /// the original value of an atomic).
    pub(crate) fn copy_to_mem<L: SgeList + ?Sized>(
        &mut self,
        mem: &LocalAccess<'_>,
        sges: &L,
        data: &[u8],
    ) -> Result<(), DmaError> {
        self.transfer(mem, sges, data.len(), true, |mr, addr, piece| {
            let src = data.get(piece.range()).ok_or(DmaError::Fault)?;
            Ok(mr.copy_in(addr, src)?)
        })
    }

    /// Copies the next `out.len()` bytes of `sges` into `out` (C:
    /// `RXE_FROM_MR_OBJ`; the payload of an outgoing packet).
    pub(crate) fn copy_from_mem<L: SgeList + ?Sized>(
        &mut self,
        mem: &LocalAccess<'_>,
        sges: &L,
        out: &mut [u8],
    ) -> Result<(), DmaError> {
        self.transfer(mem, sges, out.len(), false, |mr, addr, piece| {
            let dst = out.get_mut(piece.range()).ok_or(DmaError::Fault)?;
            Ok(mr.copy_out(addr, dst)?)
        })
    }

    /// Adds the memory of the next `len` bytes of `sges` to `out` as
    /// referenced page pieces, to be sent without a copy. The same checks as
    /// [`Cursor::copy_from_mem`]; `Ok(false)` when some of it cannot be
    /// referenced, and the caller copies instead (with a fresh cursor: this
    /// one has moved on either way).
    pub(crate) fn ref_from_mem<L: SgeList + ?Sized>(
        &mut self,
        mem: &LocalAccess<'_>,
        sges: &L,
        len: usize,
        out: &mut PayloadPages,
    ) -> Result<bool, DmaError> {
        let mut ok = true;
        self.transfer(mem, sges, len, false, |mr, addr, piece| {
            if ok {
                ok = mr.ref_pages(addr, to_usize(piece.len), out)?;
            }
            Ok(())
        })?;
        Ok(ok)
    }

    /// Moves `len` bytes on without copying or looking up keys (a
    /// retransmission restarting inside a message).
    pub(crate) fn advance<L: SgeList + ?Sized>(
        &mut self,
        sges: &L,
        len: u32,
    ) -> Result<(), DmaError> {
        self.pos.advance(sges, len)?;
        self.drop_stale();
        Ok(())
    }

    /// Walks `len` bytes and runs `copy` on each piece with its MR and
    /// address. The cursor moves only if every piece was copied.
    fn transfer<L: SgeList + ?Sized>(
        &mut self,
        mem: &LocalAccess<'_>,
        sges: &L,
        len: usize,
        write: bool,
        mut copy: impl FnMut(&mr::MrShared, u64, &Piece) -> Result<(), DmaError>,
    ) -> Result<(), DmaError> {
        let len = u32::try_from(len).map_err(|_| DmaError::TooLong)?;
        let mut walk = self.pos.walk(sges, len)?;
        for piece in walk.by_ref() {
            let piece = piece?;
            let mr = self.mr_for(mem, &piece)?;
            let addr = piece.addr().ok_or(DmaError::Range)?;
            if let Err(e) = copy(mr, addr, &piece) {
                if e == DmaError::Absent {
                    self.fault = self.held.as_ref().map(|h| PendingFault {
                        mr: h.mr.clone(),
                        iova: addr,
                        len: u64::from(piece.len),
                        write,
                    });
                }
                return Err(e);
            }
        }
        self.pos = walk.position();
        self.drop_stale();
        Ok(())
    }

    /// The MR of `piece`'s SGE, checked for this access: the held one if it
    /// is for the same SGE and access and nothing its key check depends on
    /// changed since (a rereg, an invalidation or a deregistration moves
    /// the region's generation), else a fresh lookup. Each SGE is checked
    /// once per copy, as C looks it up once.
    #[inline(always)]
    fn mr_for(&mut self, mem: &LocalAccess<'_>, piece: &Piece) -> Result<&mr::MrShared, DmaError> {
        let lkey = piece.sge.lkey;
        let reuse = match &self.held {
            Some(h) => {
                h.index == piece.index
                    && h.lkey == lkey
                    && h.pd == mem.pd
                    && h.access == mem.access
                    && h.mr.unchanged_since(h.gen)
            }
            None => false,
        };
        if !reuse {
            self.held = None;
            let (mr, gen) =
                mr::lookup_range(mem.dev, lkey, KeyKind::Local, mem.pd, mem.access, None)?;
            self.held = Some(Held {
                index: piece.index,
                lkey,
                pd: mem.pd,
                access: mem.access,
                gen,
                mr,
            });
        }
        self.held.as_ref().map(|h| &*h.mr).ok_or(DmaError::Key)
    }

    /// Lets go of the held MR once the cursor has left its SGE, so a
    /// finished transfer pins no MR.
    fn drop_stale(&mut self) {
        if matches!(&self.held, Some(h) if h.index != self.pos.cur_sge() || self.pos.resid() == 0) {
            self.held = None;
        }
    }
}
