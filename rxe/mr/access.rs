// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The datapath's accesses to the bytes of a region or window: copies,
//! page references for zero-copy sends, atomics, flushes, and the faults
//! and presence checks of ODP pages.

use kernel::{prelude::*, sync::Arc};

use super::{AccessError, AtomicOp, Memory, MrShared};
use crate::rxe::kapi::page::PayloadPages;
use crate::rxe::proto::conv::len64;

impl MrShared {
    /// Copies `data` into the region at `iova`.
    pub(crate) fn copy_in(&self, iova: u64, data: &[u8]) -> Result<(), AccessError> {
        if data.is_empty() {
            return Ok(());
        }
        if let Some(w) = &self.window {
            return w.mr.copy_in(w.target(iova, len64(data.len()))?, data);
        }
        let i = self.inner.lock();
        i.usable()?;
        if let Memory::Dma(d) = &i.mem {
            return Ok(d.write(iova, data)?);
        }
        if let Some(o) = i.odp(iova, len64(data.len())) {
            let (odp, va) = o?;
            return Ok(odp.write(va, data)?);
        }
        i.each_chunk(iova, data.len(), |pages, c| {
            let src = data.get(c.pos..c.pos + c.len).ok_or(AccessError::Fault)?;
            Ok(pages.write(c.block, c.offset, src)?)
        })
    }

    /// Copies `out.len()` bytes of the region at `iova` into `out`.
    pub(crate) fn copy_out(&self, iova: u64, out: &mut [u8]) -> Result<(), AccessError> {
        if out.is_empty() {
            return Ok(());
        }
        if let Some(w) = &self.window {
            return w.mr.copy_out(w.target(iova, len64(out.len()))?, out);
        }
        let i = self.inner.lock();
        i.usable()?;
        if let Memory::Dma(d) = &i.mem {
            return Ok(d.read(iova, out)?);
        }
        if let Some(o) = i.odp(iova, len64(out.len())) {
            let (odp, va) = o?;
            return Ok(odp.read(va, out)?);
        }
        i.each_chunk(iova, out.len(), |pages, c| {
            let dst = out
                .get_mut(c.pos..c.pos + c.len)
                .ok_or(AccessError::Fault)?;
            Ok(pages.read(c.block, c.offset, dst)?)
        })
    }

    /// Adds `len` bytes of the region at `iova` to `out` as page pieces,
    /// each with a page reference, for sending without a copy. The checks
    /// are those of [`MrShared::copy_out`]; `Ok(false)` when the memory
    /// cannot be referenced (kernel slab memory, too many pieces), and the
    /// caller copies instead.
    pub(crate) fn ref_pages(
        &self,
        iova: u64,
        len: usize,
        out: &mut PayloadPages,
    ) -> Result<bool, AccessError> {
        if len == 0 {
            return Ok(true);
        }
        if let Some(w) = &self.window {
            return w.mr.ref_pages(w.target(iova, len64(len))?, len, out);
        }
        let i = self.inner.lock();
        i.usable()?;
        if let Memory::Dma(d) = &i.mem {
            return Ok(d.ref_into(iova, len, out)?);
        }
        if let Memory::Odp { .. } = &i.mem {
            // ODP pages may be invalidated and freed while an skb would
            // still hold them: always copy.
            return Ok(false);
        }
        let mut ok = true;
        i.each_chunk(iova, len, |pages, c| {
            if ok {
                ok = pages.ref_into(c.block, c.offset, c.len, out)?;
            }
            Ok(())
        })?;
        Ok(ok)
    }

    /// Runs an 8-byte atomic at `iova` and returns the value it found.
    pub(crate) fn atomic_op(&self, iova: u64, op: AtomicOp) -> Result<u64, AccessError> {
        if let Some(w) = &self.window {
            return w.mr.atomic_op(w.target(iova, 8)?, op);
        }
        let i = self.inner.lock();
        i.usable()?;
        match &i.mem {
            Memory::Dma(d) => Ok(d.atomic(iova, op)?),
            Memory::Odp { .. } => {
                let (odp, va) = i.odp(iova, 8).ok_or(AccessError::Fault)??;
                Ok(odp.atomic(va, op)?)
            }
            Memory::Pages(pages) => {
                if !i.in_range(iova, 8) {
                    return Err(AccessError::Range);
                }
                let (block, off) = i.layout().locate(iova).ok_or(AccessError::Range)?;
                Ok(pages.atomic(block, off, op)?)
            }
            Memory::None => Err(AccessError::Fault),
        }
    }

    /// Stores 8 bytes at `iova` after everything written before (the
    /// ATOMIC WRITE operation).
    pub(crate) fn atomic_write(&self, iova: u64, value: u64) -> Result<(), AccessError> {
        if let Some(w) = &self.window {
            return w.mr.atomic_write(w.target(iova, 8)?, value);
        }
        let i = self.inner.lock();
        i.usable()?;
        match &i.mem {
            Memory::Dma(d) => Ok(d.store_release(iova, value)?),
            Memory::Odp { .. } => {
                let (odp, va) = i.odp(iova, 8).ok_or(AccessError::Fault)??;
                Ok(odp.store_release(va, value)?)
            }
            Memory::Pages(pages) => {
                if !i.in_range(iova, 8) {
                    return Err(AccessError::Range);
                }
                let (block, off) = i.layout().locate(iova).ok_or(AccessError::Range)?;
                Ok(pages.store_release(block, off, value)?)
            }
            Memory::None => Err(AccessError::Fault),
        }
    }

    /// Writes `[iova, iova + len)` back from the CPU caches (FLUSH). Not
    /// available on DMA MRs, as in C. The region's lock (and an ODP MR's
    /// table lock) is held for the whole range: the responder passes one
    /// piece of at most `FLUSH_STEP` bytes at a time.
    pub(crate) fn flush(&self, iova: u64, len: u64) -> Result<(), AccessError> {
        if len == 0 {
            return Ok(());
        }
        if let Some(w) = &self.window {
            return w.mr.flush(w.target(iova, len)?, len);
        }
        let len = usize::try_from(len).map_err(|_| AccessError::Range)?;
        let i = self.inner.lock();
        if let Memory::Dma(_) = i.mem {
            return Err(AccessError::Fault);
        }
        if let Some(o) = i.odp(iova, len64(len)) {
            let (odp, va) = o?;
            return Ok(odp.flush(va, len)?);
        }
        i.each_chunk(iova, len, |pages, c| {
            Ok(pages.flush(c.block, c.offset, c.len)?)
        })
    }

    /// Makes the pages of `[iova, iova + len)` present (writable when
    /// `write`) for an access that failed with [`AccessError::Absent`].
    /// Sleeps: process context, with no datapath lock held. `Ok` for MRs
    /// that are not ODP MRs (nothing to do).
    pub(crate) fn fault(&self, iova: u64, len: u64, write: bool) -> Result<(), AccessError> {
        self.odp_map(iova, len, write, true)
    }

    /// [`MrShared::fault`], or with `fault` false a snapshot of the pages
    /// already present (prefetch without faults).
    pub(super) fn odp_map(
        &self,
        iova: u64,
        len: u64,
        write: bool,
        fault: bool,
    ) -> Result<(), AccessError> {
        if let Some(w) = &self.window {
            return w.mr.odp_map(w.target(iova, len)?, len, write, fault);
        }
        let (odp, va) = {
            let i = self.inner.lock();
            let Memory::Odp { odp, .. } = &i.mem else {
                return Ok(());
            };
            let (_, va) = i.odp(iova, len).ok_or(AccessError::Fault)??;
            (odp.clone(), va)
        };
        odp.map(va, len, write, fault)
            .map_err(|_| AccessError::Fault)
    }

    /// Whether `[iova, iova + len)` can be accessed without a fault: always
    /// for MRs that are not ODP MRs (and for ranges the access itself will
    /// refuse).
    pub(crate) fn present(&self, iova: u64, len: u64, write: bool) -> bool {
        if let Some(w) = &self.window {
            return match w.target(iova, len) {
                Ok(t) => w.mr.present(t, len, write),
                Err(_) => true,
            };
        }
        let Ok(n) = usize::try_from(len) else {
            return true;
        };
        let i = self.inner.lock();
        match i.odp(iova, len) {
            Some(Ok((odp, va))) => odp.present(va, n, write),
            _ => true,
        }
    }
}

/// An access that found an ODP page absent: what to fault in before it
/// runs again.
pub(crate) struct PendingFault {
    pub(crate) mr: Arc<MrShared>,
    pub(crate) iova: u64,
    pub(crate) len: u64,
    pub(crate) write: bool,
}

impl PendingFault {
    /// Faults the range in. Process context, no datapath lock held.
    pub(crate) fn resolve(&self) -> Result<(), AccessError> {
        self.mr.fault(self.iova, self.len, self.write)
    }
}
