// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Work requests posted by kernel verbs users: safe views of the
//! `ib_send_wr` and `ib_recv_wr` chains `post_send`/`post_recv` receive.
//!
//! The chains belong to the caller and are valid for the call; user space
//! never gets here with WRs (its sends are WQEs in the shared ring, its
//! `post_send` a doorbell with an empty chain).

use core::marker::PhantomData;

use kernel::prelude::*;

use super::object::CoreObj;
use crate::rxe::proto::conv::to_usize;
use crate::rxe::proto::post::Target;
use crate::rxe::proto::uapi::Sge;
use crate::rxe::sys;

/// The driver's part of an address handle: a UD send WR names its AH, and
/// the WQE built from it carries the number this returns.
pub(crate) trait WrAh {
    fn wr_num(&self) -> u32;
}

/// One send WR of a chain, on a QP whose AHs have `A` as their driver part.
///
/// # Invariants
///
/// `raw` is valid for `'a`; its `sg_list` holds `num_sge` entries, and it
/// is the first member of the `ib_ud_wr` (on UD and GSI QPs) or of the
/// `ib_rdma_wr`/`ib_atomic_wr`/`ib_reg_wr` its opcode implies. A non-null
/// `ah` of an `ib_ud_wr` is an AH of this driver whose driver part is an `A`.
pub(crate) struct SendWr<'a, A> {
    raw: &'a sys::ib_send_wr,
    datagram: bool,
    _ah: PhantomData<fn() -> A>,
}

/// # Safety
///
/// `list` holds more than `i` entries.
unsafe fn sge_at(list: *const sys::ib_sge, i: usize) -> Sge {
    // SAFETY: `list` holds more than `i` entries (the caller's contract), so
    // entry `i` is in bounds and readable.
    let s = unsafe { *list.add(i) };
    Sge {
        addr: s.addr,
        length: s.length,
        lkey: s.lkey,
    }
}

/// Copies the first `num_sge` SGEs of `list` into `out`; `EINVAL` when the
/// count is negative or does not fit.
///
/// # Safety
///
/// `list` holds `num_sge` entries.
unsafe fn read_sges(list: *const sys::ib_sge, num_sge: i32, out: &mut [Sge]) -> Result<usize> {
    let n = usize::try_from(num_sge).map_err(|_| EINVAL)?;
    if n > out.len() {
        return Err(EINVAL);
    }
    for (i, slot) in out.iter_mut().take(n).enumerate() {
        // SAFETY: `i < n = num_sge`, and `list` holds `num_sge` entries (the
        // caller's contract).
        *slot = unsafe { sge_at(list, i) };
    }
    Ok(n)
}

impl<A: WrAh> SendWr<'_, A> {
    pub(crate) fn wr_id(&self) -> u64 {
        // SAFETY: Both union members are plain 64-bit values; the driver
        // hands the bits back in the completion either way.
        unsafe { self.raw.__bindgen_anon_1.wr_id }
    }

    pub(crate) fn opcode(&self) -> u32 {
        self.raw.opcode
    }

    pub(crate) fn send_flags(&self) -> u32 {
        // The flags are a bit set the C side keeps in an int.
        self.raw.send_flags as u32
    }

    /// Immediate data (big-endian, as stored) or the rkey to invalidate.
    pub(crate) fn ex(&self) -> u32 {
        // SAFETY: Both union members are plain 32-bit values.
        unsafe { self.raw.ex.invalidate_rkey }
    }

    /// Copies the SGEs into `out`; `EINVAL` if there are more than it holds.
    pub(crate) fn read_sges(&self, out: &mut [Sge]) -> Result<usize> {
        // SAFETY: The list holds `num_sge` entries (type invariant).
        unsafe { read_sges(self.raw.sg_list, self.raw.num_sge, out) }
    }

    /// The opcode-specific fields, read from the WR type the QP type and
    /// opcode imply, as `init_send_wr()` reads them.
    pub(crate) fn target(&self) -> Target {
        let base: *const sys::ib_send_wr = self.raw;
        if self.datagram {
            // SAFETY: On UD and GSI QPs the WR is an `ib_ud_wr` (invariant).
            let ud = unsafe { &*base.cast::<sys::ib_ud_wr>() };
            let ah_num = if ud.ah.is_null() {
                0
            } else {
                // SAFETY: A non-null `ah` is an AH of this driver whose
                // driver part is an `A` (type invariant), which the caller
                // keeps alive for the post call, longer than this use.
                unsafe { CoreObj::<sys::ib_ah, A>::from_raw(ud.ah) }.wr_num()
            };
            return Target::Ud {
                remote_qpn: ud.remote_qpn,
                remote_qkey: ud.remote_qkey,
                pkey_index: ud.pkey_index,
                ah_num,
            };
        }
        match self.raw.opcode {
            sys::ib_wr_opcode_IB_WR_RDMA_WRITE
            | sys::ib_wr_opcode_IB_WR_RDMA_WRITE_WITH_IMM
            | sys::ib_wr_opcode_IB_WR_RDMA_READ
            | sys::ib_wr_opcode_IB_WR_RDMA_READ_WITH_INV => {
                // SAFETY: These opcodes come in an `ib_rdma_wr` (invariant).
                let r = unsafe { &*base.cast::<sys::ib_rdma_wr>() };
                Target::Rdma {
                    remote_addr: r.remote_addr,
                    rkey: r.rkey,
                }
            }
            sys::ib_wr_opcode_IB_WR_ATOMIC_CMP_AND_SWP
            | sys::ib_wr_opcode_IB_WR_ATOMIC_FETCH_AND_ADD => {
                // SAFETY: These opcodes come in an `ib_atomic_wr` (invariant).
                let a = unsafe { &*base.cast::<sys::ib_atomic_wr>() };
                Target::Atomic {
                    remote_addr: a.remote_addr,
                    compare_add: a.compare_add,
                    swap: a.swap,
                    rkey: a.rkey,
                }
            }
            sys::ib_wr_opcode_IB_WR_REG_MR => {
                // SAFETY: REG_MR comes in an `ib_reg_wr` (invariant).
                let r = unsafe { &*base.cast::<sys::ib_reg_wr>() };
                // SAFETY: A non-null MR of a WR posted to an rxe QP is an MR
                // of the same device, live for the call.
                let mr = unsafe { r.mr.as_ref() };
                // The range is read now, not when the requester runs: the
                // user may have moved the iova since `ib_map_mr_sg` and
                // owns the `ib_mr` again once this call returns. A null MR
                // gives lkey 0, which names no MR, so the WQE fails.
                let (mr_lkey, iova, length) =
                    mr.map_or((0, 0, 0), |mr| (mr.lkey, mr.iova, mr.length));
                // Access bits are a bit set the C side keeps in an int.
                Target::Reg {
                    mr_lkey,
                    key: r.key,
                    access: r.access as u32,
                    iova,
                    length,
                }
            }
            _ => Target::None,
        }
    }

    /// Gathers the data of an inline WR into `out` and returns its length;
    /// `EINVAL` if it does not fit.
    pub(crate) fn gather_inline(&self, out: &mut [u8]) -> Result<usize> {
        let n = usize::try_from(self.raw.num_sge).map_err(|_| EINVAL)?;
        let mut pos = 0usize;
        for i in 0..n {
            // SAFETY: `i < num_sge` (type invariant).
            let s = unsafe { sge_at(self.raw.sg_list, i) };
            let len = to_usize(s.length);
            let dst = pos
                .checked_add(len)
                .and_then(|end| out.get_mut(pos..end))
                .ok_or(EINVAL)?;
            if len != 0 {
                // SAFETY: rxe has no DMA device, so kernel users give inline
                // data as kernel virtual addresses (`ib_virt_dma_to_ptr`),
                // readable for `length` bytes during the call.
                unsafe {
                    core::ptr::copy_nonoverlapping(
                        s.addr as usize as *const u8,
                        dst.as_mut_ptr(),
                        len,
                    )
                };
            }
            pos += len;
        }
        Ok(pos)
    }
}

/// A chain of send WRs whose AHs have `A` as their driver part.
pub(crate) struct SendWrs<'a, A> {
    next: *const sys::ib_send_wr,
    datagram: bool,
    _chain: PhantomData<&'a sys::ib_send_wr>,
    _ah: PhantomData<fn() -> A>,
}

impl<'a, A> SendWrs<'a, A> {
    /// # Safety
    ///
    /// `first` is null or the head of a chain of WRs valid for `'a`, each
    /// as [`SendWr`]'s invariants describe for a QP of the given kind.
    pub(crate) unsafe fn new(first: *const sys::ib_send_wr, datagram: bool) -> Self {
        Self {
            next: first,
            datagram,
            _chain: PhantomData,
            _ah: PhantomData,
        }
    }
}

impl<'a, A> Iterator for SendWrs<'a, A> {
    type Item = SendWr<'a, A>;

    fn next(&mut self) -> Option<SendWr<'a, A>> {
        // SAFETY: Per `new`, every WR of the chain is valid for `'a`.
        let raw = unsafe { self.next.as_ref()? };
        self.next = raw.next;
        // INVARIANT: Every WR of the chain is as `SendWr`'s invariants
        // describe for a QP of this kind (the contract of `new`).
        Some(SendWr {
            raw,
            datagram: self.datagram,
            _ah: PhantomData,
        })
    }
}

/// One receive WR of a chain.
///
/// # Invariants
///
/// `raw` is valid for `'a` and its `sg_list` holds `num_sge` entries.
pub(crate) struct RecvWr<'a> {
    raw: &'a sys::ib_recv_wr,
}

impl RecvWr<'_> {
    pub(crate) fn wr_id(&self) -> u64 {
        // SAFETY: Both union members are plain 64-bit values.
        unsafe { self.raw.__bindgen_anon_1.wr_id }
    }

    /// Copies the SGEs into `out`; `EINVAL` if there are more than it holds.
    pub(crate) fn read_sges(&self, out: &mut [Sge]) -> Result<usize> {
        // SAFETY: The list holds `num_sge` entries (type invariant).
        unsafe { read_sges(self.raw.sg_list, self.raw.num_sge, out) }
    }
}

/// A chain of receive WRs.
pub(crate) struct RecvWrs<'a> {
    next: *const sys::ib_recv_wr,
    _chain: PhantomData<&'a sys::ib_recv_wr>,
}

impl<'a> RecvWrs<'a> {
    /// # Safety
    ///
    /// `first` is null or the head of a chain of WRs valid for `'a`, each
    /// with `num_sge` entries in its `sg_list`.
    pub(crate) unsafe fn new(first: *const sys::ib_recv_wr) -> Self {
        Self {
            next: first,
            _chain: PhantomData,
        }
    }
}

impl<'a> Iterator for RecvWrs<'a> {
    type Item = RecvWr<'a>;

    fn next(&mut self) -> Option<RecvWr<'a>> {
        // SAFETY: Per `new`, every WR of the chain is valid for `'a`.
        let raw = unsafe { self.next.as_ref()? };
        self.next = raw.next;
        // INVARIANT: Every WR of the chain is valid for `'a` with `num_sge`
        // entries in its `sg_list` (the contract of `new`).
        Some(RecvWr { raw })
    }
}
