// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Byte layouts of the rxe user ABI structures and the little readers and
//! writers the parsers share.

pub(super) use super::super::conv::to_usize;
use super::limits;

/// Byte layout of `struct rxe_queue_buf`: the header of every shared queue.
/// Each index sits on its own cache line so producer and consumer do not
/// bounce one line between CPUs.
pub(crate) mod queue_buf {
    pub(crate) const LOG2_ELEM_SIZE: usize = 0;
    pub(crate) const INDEX_MASK: usize = 4;
    pub(crate) const PRODUCER_INDEX: usize = 128;
    pub(crate) const CONSUMER_INDEX: usize = 256;
    pub(crate) const DATA: usize = 384;
    pub(crate) const LEN: usize = 384;
}

/// `struct rxe_sge` (the same layout as `struct ib_sge`).
pub(crate) mod sge {
    pub(crate) const ADDR: usize = 0;
    pub(crate) const LENGTH: usize = 8;
    pub(crate) const LKEY: usize = 12;
    pub(crate) const LEN: usize = 16;
}

/// `struct rxe_global_route`.
#[allow(dead_code)] // The whole C layout, used or not.
pub(crate) mod global_route {
    pub(crate) const DGID: usize = 0;
    pub(crate) const FLOW_LABEL: usize = 16;
    pub(crate) const SGID_INDEX: usize = 20;
    pub(crate) const HOP_LIMIT: usize = 21;
    pub(crate) const TRAFFIC_CLASS: usize = 22;
    pub(crate) const LEN: usize = 24;
}

/// `struct rxe_av`; the two address fields are unions of `sockaddr_in` and `sockaddr_in6`.
#[allow(dead_code)] // The whole C layout, used or not.
pub(crate) mod av {
    pub(crate) const PORT_NUM: usize = 0;
    pub(crate) const NETWORK_TYPE: usize = 1;
    pub(crate) const DMAC: usize = 2;
    pub(crate) const GRH: usize = 8;
    pub(crate) const SGID_ADDR: usize = 32;
    pub(crate) const DGID_ADDR: usize = 60;
    pub(crate) const SOCKADDR_LEN: usize = 28;
    pub(crate) const LEN: usize = 88;
}

/// Offsets inside `sockaddr_in` / `sockaddr_in6`.
#[allow(dead_code)] // The whole C layout, used or not.
pub(crate) mod sockaddr {
    pub(crate) const FAMILY: usize = 0;
    pub(crate) const PORT: usize = 2;
    pub(crate) const IN_ADDR: usize = 4;
    pub(crate) const IN6_FLOWINFO: usize = 4;
    pub(crate) const IN6_ADDR: usize = 8;
    pub(crate) const IN6_SCOPE_ID: usize = 24;
}

/// `struct rxe_send_wr`; `wr` is a union whose members all start at 24.
#[allow(dead_code)] // The whole C layout, used or not.
pub(crate) mod send_wr {
    pub(crate) const WR_ID: usize = 0;
    pub(crate) const RESERVED: usize = 8;
    pub(crate) const OPCODE: usize = 12;
    pub(crate) const SEND_FLAGS: usize = 16;
    pub(crate) const EX: usize = 20;
    pub(crate) const WR: usize = 24;
    pub(crate) const FLUSH_REMOTE_ADDR: usize = 24;
    pub(crate) const FLUSH_LENGTH: usize = 32;
    pub(crate) const FLUSH_RKEY: usize = 36;
    pub(crate) const FLUSH_TYPE: usize = 40;
    pub(crate) const FLUSH_LEVEL: usize = 41;
    pub(crate) const RDMA_REMOTE_ADDR: usize = 24;
    pub(crate) const RDMA_RKEY: usize = 32;
    pub(crate) const ATOMIC_REMOTE_ADDR: usize = 24;
    pub(crate) const ATOMIC_COMPARE_ADD: usize = 32;
    pub(crate) const ATOMIC_SWAP: usize = 40;
    pub(crate) const ATOMIC_RKEY: usize = 48;
    pub(crate) const UD_REMOTE_QPN: usize = 24;
    pub(crate) const UD_REMOTE_QKEY: usize = 28;
    pub(crate) const UD_PKEY_INDEX: usize = 32;
    pub(crate) const UD_AH_NUM: usize = 36;
    pub(crate) const UD_PAD: usize = 40;
    pub(crate) const UD_AV: usize = 56;
    pub(crate) const MW_ADDR: usize = 24;
    pub(crate) const MW_LENGTH: usize = 32;
    pub(crate) const MW_MR_LKEY: usize = 40;
    pub(crate) const MW_MW_RKEY: usize = 44;
    pub(crate) const MW_RKEY: usize = 48;
    pub(crate) const MW_ACCESS: usize = 52;
    /// `reg`, which only kernel rings carry (REG_MR). C keeps the `ib_mr`
    /// pointer in its first 8 bytes; the driver keeps the MR's lkey there
    /// (the rest zero), and after `key`/`access` the iova and length the
    /// `ib_mr` had when the work request was posted.
    pub(crate) const REG_MR_LKEY: usize = 24;
    pub(crate) const REG_KEY: usize = 32;
    pub(crate) const REG_ACCESS: usize = 36;
    pub(crate) const REG_IOVA: usize = 40;
    pub(crate) const REG_LENGTH: usize = 48;
    pub(crate) const LEN: usize = 144;
}

/// `struct rxe_dma_info`; `DATA` is where the SGE array or inline bytes begin.
#[allow(dead_code)] // The whole C layout, used or not.
pub(crate) mod dma {
    pub(crate) const LENGTH: usize = 0;
    pub(crate) const RESID: usize = 4;
    pub(crate) const CUR_SGE: usize = 8;
    pub(crate) const NUM_SGE: usize = 12;
    pub(crate) const SGE_OFFSET: usize = 16;
    pub(crate) const RESERVED: usize = 20;
    pub(crate) const DATA: usize = 24;
    pub(crate) const LEN: usize = 24;
}

/// `struct rxe_send_wqe`; `DATA` is the start of its flexible SGE/inline area.
#[allow(dead_code)] // The whole C layout, used or not.
pub(crate) mod send_wqe {
    pub(crate) const WR: usize = 0;
    pub(crate) const STATUS: usize = 144;
    pub(crate) const STATE: usize = 148;
    pub(crate) const IOVA: usize = 152;
    pub(crate) const MASK: usize = 160;
    pub(crate) const FIRST_PSN: usize = 164;
    pub(crate) const LAST_PSN: usize = 168;
    pub(crate) const ACK_LENGTH: usize = 172;
    pub(crate) const SSN: usize = 176;
    pub(crate) const HAS_RD_ATOMIC: usize = 180;
    pub(crate) const DMA: usize = 184;
    pub(crate) const DATA: usize = 208;
    pub(crate) const LEN: usize = 208;
}

/// `struct rxe_recv_wqe`.
#[allow(dead_code)] // The whole C layout, used or not.
pub(crate) mod recv_wqe {
    pub(crate) const WR_ID: usize = 0;
    pub(crate) const RESERVED: usize = 8;
    pub(crate) const PADDING: usize = 12;
    pub(crate) const DMA: usize = 16;
    pub(crate) const DATA: usize = 40;
    pub(crate) const LEN: usize = 40;
}

/// `struct mminfo`: where user space finds a queue to mmap.
#[allow(dead_code)] // The whole C layout, used or not.
pub(crate) mod mminfo {
    pub(crate) const OFFSET: usize = 0;
    pub(crate) const SIZE: usize = 8;
    pub(crate) const PAD: usize = 12;
    pub(crate) const LEN: usize = 16;
}

/// The driver-private create responses and the SRQ modify command.
#[allow(dead_code)] // The whole C layout, used or not.
pub(crate) mod resp {
    pub(crate) const CREATE_CQ_MI: usize = 0;
    pub(crate) const CREATE_CQ_LEN: usize = 16;
    pub(crate) const RESIZE_CQ_MI: usize = 0;
    pub(crate) const RESIZE_CQ_LEN: usize = 16;
    pub(crate) const CREATE_QP_RQ_MI: usize = 0;
    pub(crate) const CREATE_QP_SQ_MI: usize = 16;
    pub(crate) const CREATE_QP_LEN: usize = 32;
    pub(crate) const CREATE_SRQ_MI: usize = 0;
    pub(crate) const CREATE_SRQ_SRQ_NUM: usize = 16;
    pub(crate) const CREATE_SRQ_RESERVED: usize = 20;
    pub(crate) const CREATE_SRQ_LEN: usize = 24;
    pub(crate) const CREATE_AH_AH_NUM: usize = 0;
    pub(crate) const CREATE_AH_RESERVED: usize = 4;
    pub(crate) const CREATE_AH_LEN: usize = 8;
    pub(crate) const MODIFY_SRQ_MMAP_INFO_ADDR: usize = 0;
    pub(crate) const MODIFY_SRQ_LEN: usize = 8;
}

/// `struct ib_uverbs_wc`: what user space reads at the start of a CQ slot.
#[allow(dead_code)] // The whole C layout, used or not.
pub(crate) mod uverbs_wc {
    pub(crate) const WR_ID: usize = 0;
    pub(crate) const STATUS: usize = 8;
    pub(crate) const OPCODE: usize = 12;
    pub(crate) const VENDOR_ERR: usize = 16;
    pub(crate) const BYTE_LEN: usize = 20;
    pub(crate) const EX: usize = 24;
    pub(crate) const QP_NUM: usize = 28;
    pub(crate) const SRC_QP: usize = 32;
    pub(crate) const WC_FLAGS: usize = 36;
    pub(crate) const PKEY_INDEX: usize = 40;
    pub(crate) const SLID: usize = 42;
    pub(crate) const SL: usize = 44;
    pub(crate) const DLID_PATH_BITS: usize = 45;
    pub(crate) const PORT_NUM: usize = 46;
    pub(crate) const RESERVED: usize = 47;
    pub(crate) const LEN: usize = 48;
}

/// `sizeof(struct rxe_cqe)`: a union of the kernel `ib_wc` (72 bytes on 64-bit)
/// and `ib_uverbs_wc`. This sizes CQ slots (72 rounds up to 128) and is how
/// many bytes the C driver writes per completion.
pub(crate) const CQE_LEN: usize = 72;

/// `cache_line_size()` of x86-64; queues round elements up to at least this.
pub(crate) const DEFAULT_CACHE_LINE: u32 = 64;

/// A layout size as the u32 the C size arithmetic uses; checked at compile time.
pub(super) const fn small(v: usize) -> u32 {
    assert!(v <= u32::MAX as usize);
    // Lossless: checked just above.
    v as u32
}

/// The most SGEs any rxe queue holds (`RXE_MAX_SGE`).
pub(super) const MAX_SGE: usize = to_usize(limits::MAX_SGE);
/// The flexible area after a send WQE: 32 SGEs or 512 inline bytes.
pub(super) const SEND_DATA_AREA: usize = to_usize(limits::MAX_INLINE_DATA);
/// The flexible area after a receive WQE.
pub(super) const RECV_DATA_AREA: usize = MAX_SGE * sge::LEN;
pub(super) const SGE_LEN: u32 = small(sge::LEN);
pub(super) const SEND_WQE_LEN: u32 = small(send_wqe::LEN);
pub(super) const RECV_WQE_LEN: u32 = small(recv_wqe::LEN);
// Widening u32 to u64 is lossless.
pub(super) const HEADER_LEN: u64 = small(queue_buf::LEN) as u64;

#[inline]
pub(super) fn bytes_at<const N: usize>(buf: &[u8], off: usize) -> Option<[u8; N]> {
    let end = off.checked_add(N)?;
    buf.get(off..end)?.try_into().ok()
}

#[inline]
pub(super) fn u8_at(buf: &[u8], off: usize) -> Option<u8> {
    buf.get(off).copied()
}

#[inline]
pub(super) fn u16_at(buf: &[u8], off: usize) -> Option<u16> {
    bytes_at(buf, off).map(u16::from_ne_bytes)
}

#[inline]
pub(super) fn u32_at(buf: &[u8], off: usize) -> Option<u32> {
    bytes_at(buf, off).map(u32::from_ne_bytes)
}

#[inline]
pub(super) fn u64_at(buf: &[u8], off: usize) -> Option<u64> {
    bytes_at(buf, off).map(u64::from_ne_bytes)
}

pub(super) fn put(buf: &mut [u8], off: usize, bytes: &[u8]) -> Result<(), ShortBuffer> {
    let end = off.checked_add(bytes.len()).ok_or(ShortBuffer)?;
    buf.get_mut(off..end)
        .ok_or(ShortBuffer)?
        .copy_from_slice(bytes);
    Ok(())
}

/// A buffer too short for the structure being read or written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ShortBuffer;
