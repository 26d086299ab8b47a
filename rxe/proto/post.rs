// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Work requests posted by kernel users: the checks of `validate_send_wr()`,
//! `init_send_wr()` and `post_one_recv()`, and the `rxe_send_wqe` /
//! `rxe_recv_wqe` images written into the rings, the same layout user space
//! writes (see `uapi`).

use super::conv::to_usize;
use super::params::{limits, MAX_MSG_SZ};
use super::qp;
use super::uapi::{dma, recv_wqe, send_wqe, send_wr, sge, Sge, WqeState, WrMask, WrOpcode};

/// Why a work request is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PostError {
    /// `EINVAL`: malformed for this QP (a full ring is the caller's check).
    Invalid,
}

/// The opcode-specific part of a kernel send WR, decoded from the
/// `ib_ud_wr`/`ib_rdma_wr`/`ib_atomic_wr`/`ib_reg_wr` the caller passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// UD and GSI QPs, whatever the opcode.
    Ud {
        remote_qpn: u32,
        remote_qkey: u32,
        pkey_index: u16,
        ah_num: u32,
    },
    /// RDMA read and write.
    Rdma { remote_addr: u64, rkey: u32 },
    /// Compare-and-swap and fetch-and-add.
    Atomic {
        remote_addr: u64,
        compare_add: u64,
        swap: u64,
        rkey: u32,
    },
    /// Fast registration. `mr_lkey` names the MR: C keeps an `ib_mr`
    /// pointer in that slot, the driver keeps the MR's lkey, whose index
    /// finds the MR. `iova` and `length` are the `ib_mr`'s when the WR is
    /// posted: users may change the iova after `ib_map_mr_sg` (xprtrdma
    /// does), and the registration takes what they set.
    Reg {
        mr_lkey: u32,
        key: u32,
        access: u32,
        iova: u64,
        length: u64,
    },
    /// Nothing beyond the common fields.
    None,
}

/// A send work request as `ib_send_wr` carries it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SendWr<'a> {
    pub(crate) wr_id: u64,
    pub(crate) opcode: u32,
    pub(crate) send_flags: u32,
    /// `ex`: immediate data (already big-endian) or the rkey to invalidate.
    pub(crate) ex: u32,
    pub(crate) target: Target,
    pub(crate) sges: &'a [Sge],
}

/// The send queue limits a WR is checked against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SqLimits {
    pub(crate) max_sge: u32,
    pub(crate) max_inline: u32,
}

/// `IB_SEND_INLINE`.
const SEND_INLINE: u32 = 1 << 3;

/// What a checked send WR turns into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Checked {
    pub(crate) opcode: WrOpcode,
    pub(crate) mask: WrMask,
    /// Sum of the SGE lengths.
    pub(crate) length: u32,
    pub(crate) inline: bool,
}

/// The total length of `sges`, which C sums into an unsigned long.
fn sge_length(sges: &[Sge]) -> u64 {
    sges.iter().map(|s| u64::from(s.length)).sum()
}

/// `validate_send_wr()` then the opcode switch of `init_send_wr()`.
pub(crate) fn check_send_wr(
    qp_type: qp::Type,
    sq: SqLimits,
    wr: &SendWr<'_>,
) -> Result<Checked, PostError> {
    let opcode = WrOpcode::try_from(wr.opcode).map_err(|_| PostError::Invalid)?;
    let mask = opcode.mask(qp_type);
    if mask.is_empty() {
        return Err(PostError::Invalid);
    }
    if wr.sges.len() > to_usize(sq.max_sge) {
        return Err(PostError::Invalid);
    }
    let length = sge_length(wr.sges);
    if length > u64::from(MAX_MSG_SZ) {
        return Err(PostError::Invalid);
    }
    if mask.intersects(WrMask::ATOMIC) {
        let addr = match wr.target {
            Target::Atomic { remote_addr, .. } => remote_addr,
            _ => return Err(PostError::Invalid),
        };
        if length != 8 || addr & 7 != 0 {
            return Err(PostError::Invalid);
        }
    }
    let inline = wr.send_flags & SEND_INLINE != 0;
    if inline && (!mask.intersects(WrMask::INLINE) || length > u64::from(sq.max_inline)) {
        return Err(PostError::Invalid);
    }
    // UD takes plain sends only, whatever else the opcode table lists.
    if qp_type.is_datagram() && !matches!(opcode, WrOpcode::Send | WrOpcode::SendWithImm) {
        return Err(PostError::Invalid);
    }
    // At most 2^31 (checked above).
    let length = length as u32;
    Ok(Checked {
        opcode,
        mask,
        length,
        inline,
    })
}

fn put(buf: &mut [u8], off: usize, bytes: &[u8]) -> Option<()> {
    buf.get_mut(off..off.checked_add(bytes.len())?)?
        .copy_from_slice(bytes);
    Some(())
}

fn put32(buf: &mut [u8], off: usize, v: u32) -> Option<()> {
    put(buf, off, &v.to_ne_bytes())
}

fn put64(buf: &mut [u8], off: usize, v: u64) -> Option<()> {
    put(buf, off, &v.to_ne_bytes())
}

fn put_sges(buf: &mut [u8], off: usize, sges: &[Sge]) -> Option<()> {
    for (i, s) in sges.iter().enumerate() {
        let at = off.checked_add(i.checked_mul(sge::LEN)?)?;
        put64(buf, at + sge::ADDR, s.addr)?;
        put32(buf, at + sge::LENGTH, s.length)?;
        put32(buf, at + sge::LKEY, s.lkey)?;
    }
    Some(())
}

/// The `rxe_send_wqe` of a checked WR (`init_send_wqe()`), in `out`, which
/// is cleared first. `inline_data` holds the gathered bytes of an inline
/// WR; `ssn` is the QP's next send sequence number, which local operations
/// do not take. Returns whether `ssn` was used, or `None` if `out` is too
/// short.
pub(crate) fn encode_send_wqe(
    out: &mut [u8],
    qp_type: qp::Type,
    wr: &SendWr<'_>,
    c: &Checked,
    inline_data: &[u8],
    ssn: u32,
) -> Option<bool> {
    use WrOpcode as O;
    out.fill(0);
    put64(out, send_wr::WR_ID, wr.wr_id)?;
    put32(out, send_wr::OPCODE, wr.opcode)?;
    put32(out, send_wr::SEND_FLAGS, wr.send_flags)?;
    let has_ex = matches!(
        c.opcode,
        O::SendWithImm | O::RdmaWriteWithImm | O::SendWithInv | O::RdmaReadWithInv | O::LocalInv
    );
    if has_ex {
        put32(out, send_wr::EX, wr.ex)?;
    }
    let mut iova = 0;
    match wr.target {
        Target::Ud {
            remote_qpn,
            remote_qkey,
            pkey_index,
            ah_num,
        } => {
            put32(out, send_wr::UD_REMOTE_QPN, remote_qpn)?;
            put32(out, send_wr::UD_REMOTE_QKEY, remote_qkey)?;
            put32(out, send_wr::UD_AH_NUM, ah_num)?;
            if qp_type == qp::Type::Gsi {
                put(out, send_wr::UD_PKEY_INDEX, &pkey_index.to_ne_bytes())?;
            }
        }
        Target::Rdma { remote_addr, rkey } => {
            put64(out, send_wr::RDMA_REMOTE_ADDR, remote_addr)?;
            put32(out, send_wr::RDMA_RKEY, rkey)?;
            if c.mask.intersects(WrMask::READ_OR_WRITE) {
                iova = remote_addr;
            }
        }
        Target::Atomic {
            remote_addr,
            compare_add,
            swap,
            rkey,
        } => {
            put64(out, send_wr::ATOMIC_REMOTE_ADDR, remote_addr)?;
            put64(out, send_wr::ATOMIC_COMPARE_ADD, compare_add)?;
            put64(out, send_wr::ATOMIC_SWAP, swap)?;
            put32(out, send_wr::ATOMIC_RKEY, rkey)?;
            iova = remote_addr;
        }
        Target::Reg {
            mr_lkey,
            key,
            access,
            iova,
            length,
        } => {
            // The upper half of C's pointer slot stays zero.
            put32(out, send_wr::REG_MR_LKEY, mr_lkey)?;
            put32(out, send_wr::REG_KEY, key)?;
            put32(out, send_wr::REG_ACCESS, access)?;
            put64(out, send_wr::REG_IOVA, iova)?;
            put64(out, send_wr::REG_LENGTH, length)?;
        }
        Target::None => {}
    }
    put32(out, send_wqe::MASK, c.mask.0)?;
    put32(out, send_wqe::STATE, WqeState::Posted.as_raw())?;
    if c.mask.intersects(WrMask::LOCAL_OP) {
        return Some(false);
    }
    if c.inline {
        put(out, send_wqe::DMA + dma::DATA, inline_data)?;
    } else {
        put_sges(out, send_wqe::DMA + dma::DATA, wr.sges)?;
    }
    put64(out, send_wqe::IOVA, iova)?;
    put32(out, send_wqe::DMA + dma::LENGTH, c.length)?;
    put32(out, send_wqe::DMA + dma::RESID, c.length)?;
    // Bounded by max_sge (<= 32) in check_send_wr.
    put32(out, send_wqe::DMA + dma::NUM_SGE, wr.sges.len() as u32)?;
    put32(out, send_wqe::SSN, ssn)?;
    Some(true)
}

/// `post_one_recv()`'s checks (after the full-ring test): returns the total
/// length.
pub(crate) fn check_recv_wr(max_sge: u32, sges: &[Sge]) -> Result<u32, PostError> {
    if sges.len() > to_usize(max_sge.min(limits::MAX_SGE)) {
        return Err(PostError::Invalid);
    }
    let length = sge_length(sges);
    if length > u64::from(MAX_MSG_SZ) {
        return Err(PostError::Invalid);
    }
    // At most 2^31 (checked above).
    Ok(length as u32)
}

/// The `rxe_recv_wqe` of a checked receive WR, in `out` (cleared first).
pub(crate) fn encode_recv_wqe(out: &mut [u8], wr_id: u64, sges: &[Sge], length: u32) -> Option<()> {
    out.fill(0);
    put64(out, recv_wqe::WR_ID, wr_id)?;
    put32(out, recv_wqe::DMA + dma::LENGTH, length)?;
    put32(out, recv_wqe::DMA + dma::RESID, length)?;
    // Bounded by max_sge (<= 32) in check_recv_wr.
    put32(out, recv_wqe::DMA + dma::NUM_SGE, sges.len() as u32)?;
    put_sges(out, recv_wqe::DMA + dma::DATA, sges)
}

#[cfg(test)]
#[path = "post_tests.rs"]
mod tests;
