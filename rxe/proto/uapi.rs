//! The memory rxe shares with user space: queue layout (`rdma_user_rxe.h`,
//! `ib_user_verbs.h`), parsers for the work requests user space posts there,
//! and writers for what the kernel hands back (WQE status, CQEs, mmap info).
//!
//! All queue memory stays writable by user space while the kernel works on it.
//! The kernel copies a slot into its own buffer first; the parsers here read
//! that copy once, validate it and return plain values. Fields are in CPU byte
//! order, as user space stores them; `__be32` fields (immediate data) are kept
//! as the raw 32 bits that sit in memory.

use core::ops::Range;

use super::params::{limits, MAX_MSG_SZ};
use super::qp_state::QpType;

/// Lossless on every target the kernel builds Rust for (usize is 64 bits there).
const fn to_usize(v: u32) -> usize {
    v as usize
}

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
pub(crate) mod global_route {
    pub(crate) const DGID: usize = 0;
    pub(crate) const FLOW_LABEL: usize = 16;
    pub(crate) const SGID_INDEX: usize = 20;
    pub(crate) const HOP_LIMIT: usize = 21;
    pub(crate) const TRAFFIC_CLASS: usize = 22;
    pub(crate) const LEN: usize = 24;
}

/// `struct rxe_av`; the two address fields are unions of `sockaddr_in` and `sockaddr_in6`.
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
pub(crate) mod sockaddr {
    pub(crate) const FAMILY: usize = 0;
    pub(crate) const PORT: usize = 2;
    pub(crate) const IN_ADDR: usize = 4;
    pub(crate) const IN6_FLOWINFO: usize = 4;
    pub(crate) const IN6_ADDR: usize = 8;
    pub(crate) const IN6_SCOPE_ID: usize = 24;
}

/// `struct rxe_send_wr`; `wr` is a union whose members all start at 24.
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
    pub(crate) const LEN: usize = 144;
}

/// `struct rxe_dma_info`; `DATA` is where the SGE array or inline bytes begin.
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
pub(crate) mod recv_wqe {
    pub(crate) const WR_ID: usize = 0;
    pub(crate) const RESERVED: usize = 8;
    pub(crate) const PADDING: usize = 12;
    pub(crate) const DMA: usize = 16;
    pub(crate) const DATA: usize = 40;
    pub(crate) const LEN: usize = 40;
}

/// `struct mminfo`: where user space finds a queue to mmap.
pub(crate) mod mminfo {
    pub(crate) const OFFSET: usize = 0;
    pub(crate) const SIZE: usize = 8;
    pub(crate) const PAD: usize = 12;
    pub(crate) const LEN: usize = 16;
}

/// The driver-private create responses and the SRQ modify command.
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
const fn small(v: usize) -> u32 {
    assert!(v <= u32::MAX as usize);
    // Lossless: checked just above.
    v as u32
}

/// The most SGEs any rxe queue holds (`RXE_MAX_SGE`).
const MAX_SGE: usize = to_usize(limits::MAX_SGE);
/// The flexible area after a send WQE: 32 SGEs or 512 inline bytes.
const SEND_DATA_AREA: usize = to_usize(limits::MAX_INLINE_DATA);
/// The flexible area after a receive WQE.
const RECV_DATA_AREA: usize = MAX_SGE * sge::LEN;
const SGE_LEN: u32 = small(sge::LEN);
const SEND_WQE_LEN: u32 = small(send_wqe::LEN);
const RECV_WQE_LEN: u32 = small(recv_wqe::LEN);
// Widening u32 to u64 is lossless.
const HEADER_LEN: u64 = small(queue_buf::LEN) as u64;

fn bytes_at<const N: usize>(buf: &[u8], off: usize) -> Option<[u8; N]> {
    let end = off.checked_add(N)?;
    buf.get(off..end)?.try_into().ok()
}

fn u8_at(buf: &[u8], off: usize) -> Option<u8> {
    buf.get(off).copied()
}

fn u16_at(buf: &[u8], off: usize) -> Option<u16> {
    bytes_at(buf, off).map(u16::from_ne_bytes)
}

fn u32_at(buf: &[u8], off: usize) -> Option<u32> {
    bytes_at(buf, off).map(u32::from_ne_bytes)
}

fn u64_at(buf: &[u8], off: usize) -> Option<u64> {
    bytes_at(buf, off).map(u64::from_ne_bytes)
}

fn put(buf: &mut [u8], off: usize, bytes: &[u8]) -> Result<(), ShortBuffer> {
    let end = off.checked_add(bytes.len()).ok_or(ShortBuffer)?;
    buf.get_mut(off..end).ok_or(ShortBuffer)?.copy_from_slice(bytes);
    Ok(())
}

/// A buffer too short for the structure being read or written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ShortBuffer;

/// `enum ib_wr_opcode` values user space and rxe use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub(crate) enum WrOpcode {
    RdmaWrite = 0,
    RdmaWriteWithImm = 1,
    Send = 2,
    SendWithImm = 3,
    RdmaRead = 4,
    AtomicCmpAndSwp = 5,
    AtomicFetchAndAdd = 6,
    LocalInv = 7,
    BindMw = 8,
    SendWithInv = 9,
    Lso = 10,
    RdmaReadWithInv = 11,
    MaskedAtomicCmpAndSwp = 12,
    MaskedAtomicFetchAndAdd = 13,
    Flush = 14,
    AtomicWrite = 15,
    /// Kernel only: its C union member holds an `ib_mr` pointer, so a WQE
    /// from user space may never carry it.
    RegMr = 0x20,
}

impl WrOpcode {
    /// The C value.
    pub(crate) const fn as_raw(self) -> u32 {
        self as u32
    }

    /// `rxe_wr_opcode_info[opcode].mask[qp_type]`: what the requester does with
    /// this opcode on this QP type; empty when rxe does not support the pair.
    pub(crate) const fn mask(self, qp_type: QpType) -> WrMask {
        use QpType::{Gsi, Rc, Uc, Ud};
        use WrOpcode as O;
        let inline_write = WrMask(WrMask::INLINE.0 | WrMask::WRITE.0);
        let inline_send = WrMask(WrMask::INLINE.0 | WrMask::SEND.0);
        match (self, qp_type) {
            (O::RdmaWrite | O::RdmaWriteWithImm, Rc | Uc) => inline_write,
            (O::Send | O::SendWithImm, Gsi | Rc | Uc | Ud) => inline_send,
            // Listed for UD too in the C table, though UD has no IETH.
            (O::SendWithInv, Rc | Uc | Ud) => inline_send,
            (O::RdmaRead | O::RdmaReadWithInv, Rc) => WrMask::READ,
            (O::AtomicCmpAndSwp | O::AtomicFetchAndAdd, Rc) => WrMask::ATOMIC,
            (O::LocalInv | O::RegMr, Rc) => WrMask::LOCAL_OP,
            (O::BindMw, Rc | Uc) => WrMask::LOCAL_OP,
            (O::Flush, Rc) => WrMask::FLUSH,
            (O::AtomicWrite, Rc) => WrMask::ATOMIC_WRITE,
            _ => WrMask::NONE,
        }
    }

    /// `wr_to_wc_opcode()`: the opcode of the send completion.
    pub(crate) const fn wc_opcode(self) -> WcOpcode {
        match self {
            WrOpcode::RdmaWrite | WrOpcode::RdmaWriteWithImm => WcOpcode::RdmaWrite,
            WrOpcode::Send | WrOpcode::SendWithImm | WrOpcode::SendWithInv => WcOpcode::Send,
            WrOpcode::RdmaRead | WrOpcode::RdmaReadWithInv => WcOpcode::RdmaRead,
            WrOpcode::AtomicCmpAndSwp => WcOpcode::CompSwap,
            WrOpcode::AtomicFetchAndAdd => WcOpcode::FetchAdd,
            WrOpcode::Lso => WcOpcode::Lso,
            WrOpcode::LocalInv => WcOpcode::LocalInv,
            WrOpcode::RegMr => WcOpcode::RegMr,
            WrOpcode::BindMw => WcOpcode::BindMw,
            WrOpcode::AtomicWrite => WcOpcode::AtomicWrite,
            WrOpcode::Flush => WcOpcode::Flush,
            WrOpcode::MaskedAtomicCmpAndSwp => WcOpcode::MaskedCompSwap,
            WrOpcode::MaskedAtomicFetchAndAdd => WcOpcode::MaskedFetchAdd,
        }
    }

    /// Whether a successful completion carries `IB_WC_WITH_IMM`.
    pub(crate) const fn has_imm(self) -> bool {
        matches!(self, WrOpcode::RdmaWriteWithImm | WrOpcode::SendWithImm)
    }
}

impl TryFrom<u32> for WrOpcode {
    type Error = u32;

    fn try_from(v: u32) -> Result<Self, u32> {
        use WrOpcode as O;
        Ok(match v {
            0 => O::RdmaWrite,
            1 => O::RdmaWriteWithImm,
            2 => O::Send,
            3 => O::SendWithImm,
            4 => O::RdmaRead,
            5 => O::AtomicCmpAndSwp,
            6 => O::AtomicFetchAndAdd,
            7 => O::LocalInv,
            8 => O::BindMw,
            9 => O::SendWithInv,
            10 => O::Lso,
            11 => O::RdmaReadWithInv,
            12 => O::MaskedAtomicCmpAndSwp,
            13 => O::MaskedAtomicFetchAndAdd,
            14 => O::Flush,
            15 => O::AtomicWrite,
            0x20 => O::RegMr,
            _ => return Err(v),
        })
    }
}

/// `enum rxe_wr_mask`: the requester's classification of a work request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct WrMask(pub(crate) u32);

impl WrMask {
    pub(crate) const NONE: WrMask = WrMask(0);
    pub(crate) const INLINE: WrMask = WrMask(1 << 0);
    pub(crate) const ATOMIC: WrMask = WrMask(1 << 1);
    pub(crate) const SEND: WrMask = WrMask(1 << 2);
    pub(crate) const READ: WrMask = WrMask(1 << 3);
    pub(crate) const WRITE: WrMask = WrMask(1 << 4);
    pub(crate) const LOCAL_OP: WrMask = WrMask(1 << 5);
    pub(crate) const FLUSH: WrMask = WrMask(1 << 6);
    pub(crate) const ATOMIC_WRITE: WrMask = WrMask(1 << 7);
    pub(crate) const READ_OR_WRITE: WrMask = WrMask(Self::READ.0 | Self::WRITE.0);
    pub(crate) const WRITE_OR_SEND: WrMask = WrMask(Self::WRITE.0 | Self::SEND.0);
    pub(crate) const ATOMIC_OR_READ: WrMask = WrMask(Self::ATOMIC.0 | Self::READ.0);

    /// Whether any bit of `other` is set.
    pub(crate) const fn intersects(self, other: WrMask) -> bool {
        self.0 & other.0 != 0
    }

    pub(crate) const fn is_empty(self) -> bool {
        self.0 == 0
    }
}

/// `enum ib_send_flags`, as user space sets them in `send_flags`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct SendFlags(pub(crate) u32);

impl SendFlags {
    pub(crate) const FENCE: u32 = 1 << 0;
    pub(crate) const SIGNALED: u32 = 1 << 1;
    pub(crate) const SOLICITED: u32 = 1 << 2;
    pub(crate) const INLINE: u32 = 1 << 3;
    pub(crate) const IP_CSUM: u32 = 1 << 4;

    /// Whether `flag` (one of the consts above) is set.
    pub(crate) const fn has(self, flag: u32) -> bool {
        self.0 & flag != 0
    }
}

/// `enum ib_access_flags` bits (MR, MW and QP access).
pub(crate) mod access {
    pub(crate) const LOCAL_WRITE: u32 = 1 << 0;
    pub(crate) const REMOTE_WRITE: u32 = 1 << 1;
    pub(crate) const REMOTE_READ: u32 = 1 << 2;
    pub(crate) const REMOTE_ATOMIC: u32 = 1 << 3;
    pub(crate) const MW_BIND: u32 = 1 << 4;
    pub(crate) const ZERO_BASED: u32 = 1 << 5;
    pub(crate) const ON_DEMAND: u32 = 1 << 6;
    pub(crate) const HUGETLB: u32 = 1 << 7;
    pub(crate) const FLUSH_GLOBAL: u32 = 1 << 8;
    pub(crate) const FLUSH_PERSISTENT: u32 = 1 << 9;
    pub(crate) const RELAXED_ORDERING: u32 = 1 << 20;
    /// Bits 20..=29: hints a device may ignore.
    pub(crate) const OPTIONAL: u32 = 0x3ff0_0000;
    pub(crate) const SUPPORTED: u32 = ((FLUSH_PERSISTENT << 1) - 1) | OPTIONAL;
}

/// `enum ib_wc_status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub(crate) enum WcStatus {
    Success = 0,
    LocLenErr = 1,
    LocQpOpErr = 2,
    LocEecOpErr = 3,
    LocProtErr = 4,
    WrFlushErr = 5,
    MwBindErr = 6,
    BadRespErr = 7,
    LocAccessErr = 8,
    RemInvReqErr = 9,
    RemAccessErr = 10,
    RemOpErr = 11,
    RetryExcErr = 12,
    RnrRetryExcErr = 13,
    LocRddViolErr = 14,
    RemInvRdReqErr = 15,
    RemAbortErr = 16,
    InvEecnErr = 17,
    InvEecStateErr = 18,
    FatalErr = 19,
    RespTimeoutErr = 20,
    GeneralErr = 21,
}

impl WcStatus {
    /// The C value.
    pub(crate) const fn as_raw(self) -> u32 {
        self as u32
    }
}

impl TryFrom<u32> for WcStatus {
    type Error = u32;

    fn try_from(v: u32) -> Result<Self, u32> {
        use WcStatus as S;
        const ALL: [WcStatus; 22] = [
            S::Success,
            S::LocLenErr,
            S::LocQpOpErr,
            S::LocEecOpErr,
            S::LocProtErr,
            S::WrFlushErr,
            S::MwBindErr,
            S::BadRespErr,
            S::LocAccessErr,
            S::RemInvReqErr,
            S::RemAccessErr,
            S::RemOpErr,
            S::RetryExcErr,
            S::RnrRetryExcErr,
            S::LocRddViolErr,
            S::RemInvRdReqErr,
            S::RemAbortErr,
            S::InvEecnErr,
            S::InvEecStateErr,
            S::FatalErr,
            S::RespTimeoutErr,
            S::GeneralErr,
        ];
        ALL.get(to_usize(v)).copied().ok_or(v)
    }
}

/// `enum ib_wc_opcode`. Receive opcodes have bit 7 set so consumers can test
/// `opcode & IB_WC_RECV`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub(crate) enum WcOpcode {
    Send = 0,
    RdmaWrite = 1,
    RdmaRead = 2,
    CompSwap = 3,
    FetchAdd = 4,
    BindMw = 5,
    LocalInv = 6,
    Lso = 7,
    Flush = 8,
    AtomicWrite = 9,
    RegMr = 10,
    MaskedCompSwap = 11,
    MaskedFetchAdd = 12,
    Recv = 128,
    RecvRdmaWithImm = 129,
}

impl WcOpcode {
    /// The C value.
    pub(crate) const fn as_raw(self) -> u32 {
        self as u32
    }
}

/// `enum ib_wc_flags`.
pub(crate) mod wc_flags {
    pub(crate) const GRH: u32 = 1 << 0;
    pub(crate) const WITH_IMM: u32 = 1 << 1;
    pub(crate) const WITH_INVALIDATE: u32 = 1 << 2;
    pub(crate) const IP_CSUM_OK: u32 = 1 << 3;
    pub(crate) const WITH_SMAC: u32 = 1 << 4;
    pub(crate) const WITH_VLAN: u32 = 1 << 5;
    pub(crate) const WITH_NETWORK_HDR_TYPE: u32 = 1 << 6;
}

/// `enum wqe_state`, written back into the `state` field of a send WQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum WqeState {
    Posted = 0,
    Processing = 1,
    Pending = 2,
    Done = 3,
    Error = 4,
}

impl WqeState {
    /// The C value.
    pub(crate) const fn as_raw(self) -> u32 {
        self as u32
    }
}

/// `RXE_NETWORK_TYPE_*` of an address vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum NetworkType {
    Ipv4 = 1,
    Ipv6 = 2,
}

/// Why a WQE read from a shared queue was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WqeError {
    /// The slot copy is shorter than the fixed part of the WQE.
    Truncated,
    /// Not a user-space opcode, or not one rxe supports on this QP type.
    BadOpcode(u32),
    /// `num_sge` above what the queue was created for.
    TooManySge(u32),
    /// The SGE array runs past the end of the slot.
    SgeOutsideSlot,
    /// Inline data longer than the queue allows or than the slot holds.
    InlineTooLong(u32),
    /// `dma.length` differs from the sum of the SGE lengths.
    LengthMismatch { length: u32, sum: u64 },
    /// A message longer than the port's `max_msg_sz`.
    MessageTooLong(u32),
    /// An atomic with fewer than 8 bytes to return into, or an atomic write
    /// whose payload is not exactly 8 bytes.
    AtomicLength(u32),
    /// A legacy address vector (AH number 0) with an unknown network type.
    BadNetworkType(u8),
}

impl WqeError {
    /// The completion status the WQE is retired with. Malformed WQEs are a
    /// local QP operation error, as in the C driver; bad lengths a local
    /// length error.
    pub(crate) const fn wc_status(self) -> WcStatus {
        match self {
            WqeError::Truncated
            | WqeError::BadOpcode(_)
            | WqeError::TooManySge(_)
            | WqeError::SgeOutsideSlot
            | WqeError::BadNetworkType(_) => WcStatus::LocQpOpErr,
            WqeError::InlineTooLong(_)
            | WqeError::LengthMismatch { .. }
            | WqeError::MessageTooLong(_)
            | WqeError::AtomicLength(_) => WcStatus::LocLenErr,
        }
    }
}

/// One scatter/gather element.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct Sge {
    pub(crate) addr: u64,
    pub(crate) length: u32,
    pub(crate) lkey: u32,
}

impl Sge {
    fn read(buf: &[u8], off: usize) -> Option<Sge> {
        Some(Sge {
            addr: u64_at(buf, off.checked_add(sge::ADDR)?)?,
            length: u32_at(buf, off.checked_add(sge::LENGTH)?)?,
            lkey: u32_at(buf, off.checked_add(sge::LKEY)?)?,
        })
    }
}

/// Reads `count` SGEs starting at `off` and sums their lengths without overflow.
fn sge_sum(buf: &[u8], off: usize, count: usize) -> Option<u64> {
    let mut sum = 0u64;
    for i in 0..count {
        let s = Sge::read(buf, off.checked_add(i.checked_mul(sge::LEN)?)?)?;
        // At most 32 u32 lengths: cannot overflow u64, checked anyway.
        sum = sum.checked_add(u64::from(s.length))?;
    }
    Some(sum)
}

/// `struct rxe_global_route`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct GlobalRoute {
    pub(crate) dgid: [u8; 16],
    pub(crate) flow_label: u32,
    pub(crate) sgid_index: u8,
    pub(crate) hop_limit: u8,
    pub(crate) traffic_class: u8,
}

/// `struct rxe_av`, the address vector old providers embed in UD WQEs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Av {
    pub(crate) port_num: u8,
    pub(crate) network_type: NetworkType,
    pub(crate) dmac: [u8; 6],
    pub(crate) grh: GlobalRoute,
    /// Raw `sockaddr_in`/`sockaddr_in6` bytes; see the accessors.
    pub(crate) sgid_addr: [u8; av::SOCKADDR_LEN],
    pub(crate) dgid_addr: [u8; av::SOCKADDR_LEN],
}

impl Av {
    /// Parses an AV at `off`; `None` if the bytes are not there.
    fn read(buf: &[u8], off: usize) -> Option<Result<Av, WqeError>> {
        let at = |o: usize| off.checked_add(o);
        let g = at(av::GRH)?;
        let nt = u8_at(buf, at(av::NETWORK_TYPE)?)?;
        let network_type = match nt {
            1 => NetworkType::Ipv4,
            2 => NetworkType::Ipv6,
            _ => return Some(Err(WqeError::BadNetworkType(nt))),
        };
        Some(Ok(Av {
            port_num: u8_at(buf, at(av::PORT_NUM)?)?,
            network_type,
            dmac: bytes_at(buf, at(av::DMAC)?)?,
            grh: GlobalRoute {
                dgid: bytes_at(buf, g.checked_add(global_route::DGID)?)?,
                flow_label: u32_at(buf, g.checked_add(global_route::FLOW_LABEL)?)?,
                sgid_index: u8_at(buf, g.checked_add(global_route::SGID_INDEX)?)?,
                hop_limit: u8_at(buf, g.checked_add(global_route::HOP_LIMIT)?)?,
                traffic_class: u8_at(buf, g.checked_add(global_route::TRAFFIC_CLASS)?)?,
            },
            sgid_addr: bytes_at(buf, at(av::SGID_ADDR)?)?,
            dgid_addr: bytes_at(buf, at(av::DGID_ADDR)?)?,
        }))
    }

    /// The IPv4 source address (`sin_addr`, network byte order).
    pub(crate) fn src_ipv4(&self) -> [u8; 4] {
        bytes_at(&self.sgid_addr, sockaddr::IN_ADDR).unwrap_or_default()
    }

    /// The IPv4 destination address.
    pub(crate) fn dst_ipv4(&self) -> [u8; 4] {
        bytes_at(&self.dgid_addr, sockaddr::IN_ADDR).unwrap_or_default()
    }

    /// The IPv6 source address (`sin6_addr`).
    pub(crate) fn src_ipv6(&self) -> [u8; 16] {
        bytes_at(&self.sgid_addr, sockaddr::IN6_ADDR).unwrap_or_default()
    }

    /// The IPv6 destination address.
    pub(crate) fn dst_ipv6(&self) -> [u8; 16] {
        bytes_at(&self.dgid_addr, sockaddr::IN6_ADDR).unwrap_or_default()
    }
}

/// The opcode-specific part of a send WQE (the `wr` union), decoded by QP type
/// and opcode the way the C requester reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WrParams {
    /// Sends on connected QPs and local invalidate: nothing beyond `ex`.
    None,
    Rdma { remote_addr: u64, rkey: u32 },
    Atomic { remote_addr: u64, compare_add: u64, swap: u64, rkey: u32 },
    /// UD/GSI destination. `av` is present only when `ah_num` is 0: then the
    /// AV embedded in the WQE is the destination (old providers).
    Ud { remote_qpn: u32, remote_qkey: u32, pkey_index: u16, ah_num: u32, av: Option<Av> },
    Mw { addr: u64, length: u64, mr_lkey: u32, mw_rkey: u32, rkey: u32, access: u32 },
    /// The RETH length of a flush comes from `dma.length`, as in C; the
    /// union's own `length` is kept for completeness.
    Flush { remote_addr: u64, length: u32, rkey: u32, kind: u8, level: u8 },
}

/// Where the data of a send WQE is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Payload {
    /// Local operations and flush move no data from this side.
    None,
    /// `count` SGEs, summing to the WQE length.
    Sges { count: usize },
    /// `len` inline bytes, equal to the WQE length.
    Inline { len: usize },
    /// The 8 bytes an atomic write stores remotely.
    AtomicWrite([u8; 8]),
}

/// Per-queue limits a send WQE is checked against (the QP's `rxe_sq`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SqLimits {
    pub(crate) qp_type: QpType,
    pub(crate) max_sge: u32,
    pub(crate) max_inline: u32,
}

/// A validated copy of a `struct rxe_send_wqe`.
///
/// Kernel-owned progress fields (`status`, `state`, PSNs, `resid`, `cur_sge`,
/// `sge_offset`, `mask`) are not taken from user memory: the requester starts
/// a WQE at (`length`, 0, 0) as rdma-core writes it, and `mask` is derived
/// from the opcode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SendWqe {
    pub(crate) wr_id: u64,
    pub(crate) opcode: WrOpcode,
    pub(crate) send_flags: SendFlags,
    /// `ex`: immediate data (the raw big-endian bits) or the rkey to invalidate.
    pub(crate) ex: u32,
    pub(crate) wr: WrParams,
    pub(crate) iova: u64,
    pub(crate) ssn: u32,
    pub(crate) mask: WrMask,
    pub(crate) length: u32,
    pub(crate) num_sge: u32,
    pub(crate) payload: Payload,
    /// Copy of the slot's SGE/inline area; `payload` says how much is valid.
    area: [u8; SEND_DATA_AREA],
}

impl SendWqe {
    /// Parses and validates the slot copy `buf` (the whole slot, so that the
    /// SGE/inline area can be bounded by it).
    pub(crate) fn from_bytes(buf: &[u8], sq: &SqLimits) -> Result<SendWqe, WqeError> {
        if buf.len() < send_wqe::LEN {
            return Err(WqeError::Truncated);
        }
        let rd32 = |off: usize| u32_at(buf, off).ok_or(WqeError::Truncated);
        let rd64 = |off: usize| u64_at(buf, off).ok_or(WqeError::Truncated);

        let raw_opcode = rd32(send_wr::OPCODE)?;
        let opcode = WrOpcode::try_from(raw_opcode).map_err(WqeError::BadOpcode)?;
        let mask = opcode.mask(sq.qp_type);
        if opcode == WrOpcode::RegMr || mask.is_empty() {
            return Err(WqeError::BadOpcode(raw_opcode));
        }

        let num_sge = rd32(send_wqe::DMA + dma::NUM_SGE)?;
        if num_sge > sq.max_sge.min(limits::MAX_SGE) {
            return Err(WqeError::TooManySge(num_sge));
        }
        let length = rd32(send_wqe::DMA + dma::LENGTH)?;
        if length > MAX_MSG_SZ {
            return Err(WqeError::MessageTooLong(length));
        }
        let send_flags = SendFlags(rd32(send_wr::SEND_FLAGS)?);

        // Everything after the fixed part that the slot holds, capped at the
        // largest area any rxe SQ has.
        let avail = buf.len().saturating_sub(send_wqe::DATA).min(SEND_DATA_AREA);
        let mut area = [0u8; SEND_DATA_AREA];
        let src = buf.get(send_wqe::DATA..send_wqe::DATA + avail).ok_or(WqeError::Truncated)?;
        area.get_mut(..avail).ok_or(WqeError::Truncated)?.copy_from_slice(src);

        let payload = if mask.intersects(WrMask::LOCAL_OP) || mask.intersects(WrMask::FLUSH) {
            Payload::None
        } else if mask.intersects(WrMask::ATOMIC_WRITE) {
            if length != 8 {
                return Err(WqeError::AtomicLength(length));
            }
            if avail < 8 {
                return Err(WqeError::Truncated);
            }
            Payload::AtomicWrite(bytes_at(&area, 0).ok_or(WqeError::Truncated)?)
        } else if send_flags.has(SendFlags::INLINE) && mask.intersects(WrMask::INLINE) {
            let len = to_usize(length);
            if length > sq.max_inline || len > avail {
                return Err(WqeError::InlineTooLong(length));
            }
            Payload::Inline { len }
        } else {
            let count = to_usize(num_sge);
            if count.checked_mul(sge::LEN).is_none_or(|n| n > avail) {
                return Err(WqeError::SgeOutsideSlot);
            }
            let sum = sge_sum(&area, 0, count).ok_or(WqeError::SgeOutsideSlot)?;
            if sum != u64::from(length) {
                return Err(WqeError::LengthMismatch { length, sum });
            }
            // The completer returns the 8 original bytes into these SGEs.
            if mask.intersects(WrMask::ATOMIC) && length < 8 {
                return Err(WqeError::AtomicLength(length));
            }
            Payload::Sges { count }
        };

        let wr = if sq.qp_type.is_datagram() {
            let ah_num = rd32(send_wr::UD_AH_NUM)?;
            let av = if ah_num == 0 {
                Some(Av::read(buf, send_wr::UD_AV).ok_or(WqeError::Truncated)??)
            } else {
                None
            };
            WrParams::Ud {
                remote_qpn: rd32(send_wr::UD_REMOTE_QPN)?,
                remote_qkey: rd32(send_wr::UD_REMOTE_QKEY)?,
                pkey_index: u16_at(buf, send_wr::UD_PKEY_INDEX).ok_or(WqeError::Truncated)?,
                ah_num,
                av,
            }
        } else {
            match opcode {
                WrOpcode::RdmaWrite
                | WrOpcode::RdmaWriteWithImm
                | WrOpcode::RdmaRead
                | WrOpcode::RdmaReadWithInv => WrParams::Rdma {
                    remote_addr: rd64(send_wr::RDMA_REMOTE_ADDR)?,
                    rkey: rd32(send_wr::RDMA_RKEY)?,
                },
                WrOpcode::AtomicCmpAndSwp | WrOpcode::AtomicFetchAndAdd => WrParams::Atomic {
                    remote_addr: rd64(send_wr::ATOMIC_REMOTE_ADDR)?,
                    compare_add: rd64(send_wr::ATOMIC_COMPARE_ADD)?,
                    swap: rd64(send_wr::ATOMIC_SWAP)?,
                    rkey: rd32(send_wr::ATOMIC_RKEY)?,
                },
                WrOpcode::BindMw => WrParams::Mw {
                    addr: rd64(send_wr::MW_ADDR)?,
                    length: rd64(send_wr::MW_LENGTH)?,
                    mr_lkey: rd32(send_wr::MW_MR_LKEY)?,
                    mw_rkey: rd32(send_wr::MW_MW_RKEY)?,
                    rkey: rd32(send_wr::MW_RKEY)?,
                    access: rd32(send_wr::MW_ACCESS)?,
                },
                WrOpcode::Flush => WrParams::Flush {
                    remote_addr: rd64(send_wr::FLUSH_REMOTE_ADDR)?,
                    length: rd32(send_wr::FLUSH_LENGTH)?,
                    rkey: rd32(send_wr::FLUSH_RKEY)?,
                    kind: u8_at(buf, send_wr::FLUSH_TYPE).ok_or(WqeError::Truncated)?,
                    level: u8_at(buf, send_wr::FLUSH_LEVEL).ok_or(WqeError::Truncated)?,
                },
                _ => WrParams::None,
            }
        };

        Ok(SendWqe {
            wr_id: rd64(send_wr::WR_ID)?,
            opcode,
            send_flags,
            ex: rd32(send_wr::EX)?,
            wr,
            iova: rd64(send_wqe::IOVA)?,
            ssn: rd32(send_wqe::SSN)?,
            mask,
            length,
            num_sge,
            payload,
            area,
        })
    }

    /// SGE `i` of an SGE payload.
    pub(crate) fn sge(&self, i: usize) -> Option<Sge> {
        match self.payload {
            Payload::Sges { count } if i < count => Sge::read(&self.area, i.checked_mul(sge::LEN)?),
            _ => None,
        }
    }

    /// The SGEs of an SGE payload; empty for other payloads.
    pub(crate) fn sges(&self) -> impl Iterator<Item = Sge> + '_ {
        let count = match self.payload {
            Payload::Sges { count } => count,
            _ => 0,
        };
        (0..count).map_while(move |i| self.sge(i))
    }

    /// The inline bytes of an inline payload; empty for other payloads.
    pub(crate) fn inline_data(&self) -> &[u8] {
        match self.payload {
            Payload::Inline { len } => self.area.get(..len).unwrap_or(&[]),
            _ => &[],
        }
    }
}

/// Writes `status` and `state` into a send WQE slot, where the C driver keeps them.
pub(crate) fn write_send_status(slot: &mut [u8], status: WcStatus, state: WqeState) -> Result<(), ShortBuffer> {
    put(slot, send_wqe::STATUS, &status.as_raw().to_ne_bytes())?;
    put(slot, send_wqe::STATE, &state.as_raw().to_ne_bytes())
}

/// Writes the first and last PSN the requester used for a send WQE.
pub(crate) fn write_send_psns(slot: &mut [u8], first_psn: u32, last_psn: u32) -> Result<(), ShortBuffer> {
    put(slot, send_wqe::FIRST_PSN, &first_psn.to_ne_bytes())?;
    put(slot, send_wqe::LAST_PSN, &last_psn.to_ne_bytes())
}

/// A validated copy of a `struct rxe_recv_wqe`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RecvWqe {
    pub(crate) wr_id: u64,
    /// Total bytes the SGEs can take; equal to their sum.
    pub(crate) length: u32,
    pub(crate) num_sge: u32,
    area: [u8; RECV_DATA_AREA],
}

impl RecvWqe {
    /// Parses and validates the slot copy `buf` of an RQ or SRQ created with
    /// `max_sge` SGEs per WQE.
    pub(crate) fn from_bytes(buf: &[u8], max_sge: u32) -> Result<RecvWqe, WqeError> {
        if buf.len() < recv_wqe::LEN {
            return Err(WqeError::Truncated);
        }
        let rd32 = |off: usize| u32_at(buf, off).ok_or(WqeError::Truncated);
        let num_sge = rd32(recv_wqe::DMA + dma::NUM_SGE)?;
        if num_sge > max_sge.min(limits::MAX_SGE) {
            return Err(WqeError::TooManySge(num_sge));
        }
        let avail = buf.len().saturating_sub(recv_wqe::DATA).min(RECV_DATA_AREA);
        let count = to_usize(num_sge);
        if count.checked_mul(sge::LEN).is_none_or(|n| n > avail) {
            return Err(WqeError::SgeOutsideSlot);
        }
        let mut area = [0u8; RECV_DATA_AREA];
        let src = buf.get(recv_wqe::DATA..recv_wqe::DATA + avail).ok_or(WqeError::Truncated)?;
        area.get_mut(..avail).ok_or(WqeError::Truncated)?.copy_from_slice(src);

        let length = rd32(recv_wqe::DMA + dma::LENGTH)?;
        let sum = sge_sum(&area, 0, count).ok_or(WqeError::SgeOutsideSlot)?;
        if sum != u64::from(length) {
            return Err(WqeError::LengthMismatch { length, sum });
        }
        Ok(RecvWqe { wr_id: u64_at(buf, recv_wqe::WR_ID).ok_or(WqeError::Truncated)?, length, num_sge, area })
    }

    /// SGE `i`.
    pub(crate) fn sge(&self, i: usize) -> Option<Sge> {
        if i < to_usize(self.num_sge) {
            Sge::read(&self.area, i.checked_mul(sge::LEN)?)
        } else {
            None
        }
    }

    /// All SGEs.
    pub(crate) fn sges(&self) -> impl Iterator<Item = Sge> + '_ {
        (0..to_usize(self.num_sge)).map_while(move |i| self.sge(i))
    }
}

/// A completion as user space reads it (`struct ib_uverbs_wc`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Cqe {
    pub(crate) wr_id: u64,
    pub(crate) status: WcStatus,
    /// Left as `Send` (0) on error completions, as the C driver does.
    pub(crate) opcode: WcOpcode,
    pub(crate) vendor_err: u32,
    pub(crate) byte_len: u32,
    /// Immediate data (raw big-endian bits) or the invalidated rkey.
    pub(crate) ex: u32,
    pub(crate) qp_num: u32,
    pub(crate) src_qp: u32,
    pub(crate) wc_flags: u32,
    pub(crate) pkey_index: u16,
    pub(crate) slid: u16,
    pub(crate) sl: u8,
    pub(crate) dlid_path_bits: u8,
    pub(crate) port_num: u8,
}

impl Cqe {
    /// A completion with only the fields every CQE has; the rest zero.
    pub(crate) const fn new(wr_id: u64, status: WcStatus, qp_num: u32) -> Cqe {
        Cqe {
            wr_id,
            status,
            opcode: WcOpcode::Send,
            vendor_err: 0,
            byte_len: 0,
            ex: 0,
            qp_num,
            src_qp: 0,
            wc_flags: 0,
            pkey_index: 0,
            slid: 0,
            sl: 0,
            dlid_path_bits: 0,
            port_num: 0,
        }
    }

    /// Writes the completion into a CQ slot: the `ib_uverbs_wc` followed by
    /// zeros up to [`CQE_LEN`], the bytes the C driver copies per CQE.
    pub(crate) fn write(&self, slot: &mut [u8]) -> Result<(), ShortBuffer> {
        let mut b = [0u8; CQE_LEN];
        put(&mut b, uverbs_wc::WR_ID, &self.wr_id.to_ne_bytes())?;
        put(&mut b, uverbs_wc::STATUS, &self.status.as_raw().to_ne_bytes())?;
        put(&mut b, uverbs_wc::OPCODE, &self.opcode.as_raw().to_ne_bytes())?;
        put(&mut b, uverbs_wc::VENDOR_ERR, &self.vendor_err.to_ne_bytes())?;
        put(&mut b, uverbs_wc::BYTE_LEN, &self.byte_len.to_ne_bytes())?;
        put(&mut b, uverbs_wc::EX, &self.ex.to_ne_bytes())?;
        put(&mut b, uverbs_wc::QP_NUM, &self.qp_num.to_ne_bytes())?;
        put(&mut b, uverbs_wc::SRC_QP, &self.src_qp.to_ne_bytes())?;
        put(&mut b, uverbs_wc::WC_FLAGS, &self.wc_flags.to_ne_bytes())?;
        put(&mut b, uverbs_wc::PKEY_INDEX, &self.pkey_index.to_ne_bytes())?;
        put(&mut b, uverbs_wc::SLID, &self.slid.to_ne_bytes())?;
        put(&mut b, uverbs_wc::SL, &[self.sl])?;
        put(&mut b, uverbs_wc::DLID_PATH_BITS, &[self.dlid_path_bits])?;
        put(&mut b, uverbs_wc::PORT_NUM, &[self.port_num])?;
        put(slot, 0, &b)
    }
}

/// `struct mminfo`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct MmInfo {
    pub(crate) offset: u64,
    pub(crate) size: u32,
}

impl MmInfo {
    pub(crate) fn to_bytes(self) -> [u8; mminfo::LEN] {
        let mut b = [0u8; mminfo::LEN];
        b[mminfo::OFFSET..mminfo::OFFSET + 8].copy_from_slice(&self.offset.to_ne_bytes());
        b[mminfo::SIZE..mminfo::SIZE + 4].copy_from_slice(&self.size.to_ne_bytes());
        b
    }
}

/// `struct rxe_create_cq_resp` (and `rxe_resize_cq_resp`, the same layout).
pub(crate) fn create_cq_resp(mi: MmInfo) -> [u8; resp::CREATE_CQ_LEN] {
    mi.to_bytes()
}

/// `struct rxe_create_qp_resp`: the RQ's mmap info first, then the SQ's.
pub(crate) fn create_qp_resp(rq_mi: MmInfo, sq_mi: MmInfo) -> [u8; resp::CREATE_QP_LEN] {
    let mut b = [0u8; resp::CREATE_QP_LEN];
    b[resp::CREATE_QP_RQ_MI..resp::CREATE_QP_RQ_MI + mminfo::LEN].copy_from_slice(&rq_mi.to_bytes());
    b[resp::CREATE_QP_SQ_MI..resp::CREATE_QP_SQ_MI + mminfo::LEN].copy_from_slice(&sq_mi.to_bytes());
    b
}

/// `struct rxe_create_srq_resp`.
pub(crate) fn create_srq_resp(mi: MmInfo, srq_num: u32) -> [u8; resp::CREATE_SRQ_LEN] {
    let mut b = [0u8; resp::CREATE_SRQ_LEN];
    b[resp::CREATE_SRQ_MI..resp::CREATE_SRQ_MI + mminfo::LEN].copy_from_slice(&mi.to_bytes());
    b[resp::CREATE_SRQ_SRQ_NUM..resp::CREATE_SRQ_SRQ_NUM + 4].copy_from_slice(&srq_num.to_ne_bytes());
    b
}

/// `struct rxe_create_ah_resp`.
pub(crate) fn create_ah_resp(ah_num: u32) -> [u8; resp::CREATE_AH_LEN] {
    let mut b = [0u8; resp::CREATE_AH_LEN];
    b[resp::CREATE_AH_AH_NUM..resp::CREATE_AH_AH_NUM + 4].copy_from_slice(&ah_num.to_ne_bytes());
    b
}

/// `struct rxe_modify_srq_cmd`: the user address the new SRQ mmap info goes to.
pub(crate) fn modify_srq_cmd(buf: &[u8]) -> Result<u64, ShortBuffer> {
    u64_at(buf, resp::MODIFY_SRQ_MMAP_INFO_ADDR).ok_or(ShortBuffer)
}

/// A queue size request the driver refuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SizeError {
    /// Outside the device limits (`EINVAL` in C).
    Invalid,
    /// The buffer would not be addressable (`ENOMEM` in C).
    TooLarge,
}

/// The shape of a shared queue, as `rxe_queue_init()` computes it.
///
/// The kernel keeps this copy; user space gets one in the queue header but may
/// overwrite it, so every index taken from user memory goes through [`Self::mask`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct QueueGeometry {
    log2_elem_size: u32,
    index_mask: u32,
}

impl QueueGeometry {
    /// A queue for `num_elem` elements of `elem_size` bytes. Elements are
    /// padded to a power of two of at least a cache line; one slot always
    /// stays empty so that full and empty differ, hence `num_elem + 1` slots
    /// rounded up to a power of two.
    pub(crate) fn new(num_elem: u32, elem_size: u32, cache_line: u32) -> Result<QueueGeometry, SizeError> {
        let elem = elem_size.max(cache_line).checked_next_power_of_two().ok_or(SizeError::TooLarge)?;
        let slots = num_elem
            .checked_add(1)
            .and_then(u32::checked_next_power_of_two)
            .ok_or(SizeError::TooLarge)?;
        let g = QueueGeometry { log2_elem_size: elem.trailing_zeros(), index_mask: slots - 1 };
        g.buf_size_checked().ok_or(SizeError::TooLarge)?;
        Ok(g)
    }

    fn buf_size_checked(&self) -> Option<usize> {
        let slots = u64::from(self.index_mask) + 1;
        let bytes = slots.checked_shl(self.log2_elem_size)?.checked_add(HEADER_LEN)?;
        usize::try_from(bytes).ok()
    }

    pub(crate) const fn log2_elem_size(&self) -> u32 {
        self.log2_elem_size
    }

    pub(crate) const fn index_mask(&self) -> u32 {
        self.index_mask
    }

    /// The padded element size, the stride between slots.
    pub(crate) const fn elem_size(&self) -> usize {
        1usize << self.log2_elem_size
    }

    pub(crate) const fn num_slots(&self) -> u32 {
        self.index_mask + 1
    }

    /// How many elements fit: what create returns as the actual `max_wr`/`cqe`.
    pub(crate) const fn capacity(&self) -> u32 {
        self.index_mask
    }

    /// Header plus slots: the size of the `vmalloc_user` buffer and its mmap.
    pub(crate) fn buf_size(&self) -> usize {
        // `new()` checked that this fits.
        self.buf_size_checked().unwrap_or(usize::MAX)
    }

    /// An index from user memory (or anywhere) reduced to a slot number.
    pub(crate) const fn mask(&self, index: u32) -> u32 {
        index & self.index_mask
    }

    /// `queue_next_index()`.
    pub(crate) const fn next(&self, index: u32) -> u32 {
        index.wrapping_add(1) & self.index_mask
    }

    /// `queue_count()`: elements between consumer and producer.
    pub(crate) const fn count(&self, producer: u32, consumer: u32) -> u32 {
        producer.wrapping_sub(consumer) & self.index_mask
    }

    /// `queue_empty()`.
    pub(crate) const fn is_empty(&self, producer: u32, consumer: u32) -> bool {
        self.count(producer, consumer) == 0
    }

    /// `queue_full()`.
    pub(crate) const fn is_full(&self, producer: u32, consumer: u32) -> bool {
        producer.wrapping_add(1).wrapping_sub(consumer) & self.index_mask == 0
    }

    /// Byte range of slot `index` (masked first) within the whole buffer.
    pub(crate) fn slot_range(&self, index: u32) -> Range<usize> {
        let start = queue_buf::DATA + (to_usize(self.mask(index)) << self.log2_elem_size);
        start..start + self.elem_size()
    }

    /// Writes `log2_elem_size` and `index_mask` into a fresh queue header.
    pub(crate) fn write_header(&self, header: &mut [u8]) -> Result<(), ShortBuffer> {
        put(header, queue_buf::LOG2_ELEM_SIZE, &self.log2_elem_size.to_ne_bytes())?;
        put(header, queue_buf::INDEX_MASK, &self.index_mask.to_ne_bytes())
    }
}

/// The SQ of a new QP (`rxe_init_sq()`). Inline data shares the SGE area, so
/// the area is the larger of the two requests and both limits grow to fill it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SqGeometry {
    pub(crate) queue: QueueGeometry,
    pub(crate) max_wr: u32,
    pub(crate) max_sge: u32,
    pub(crate) max_inline: u32,
}

/// The RQ of a QP or an SRQ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RqGeometry {
    pub(crate) queue: QueueGeometry,
    pub(crate) max_wr: u32,
    pub(crate) max_sge: u32,
}

/// Send queue caps after `rxe_qp_chk_cap()`.
pub(crate) fn sq_geometry(
    max_send_wr: u32,
    max_send_sge: u32,
    max_inline: u32,
    cache_line: u32,
) -> Result<SqGeometry, SizeError> {
    if max_send_wr > limits::MAX_QP_WR || max_send_sge > limits::MAX_SGE || max_inline > limits::MAX_INLINE_DATA {
        return Err(SizeError::Invalid);
    }
    // Bounded by the checks above: at most 512 bytes.
    let area = (max_send_sge * SGE_LEN).max(max_inline);
    let queue = QueueGeometry::new(max_send_wr, area + SEND_WQE_LEN, cache_line)?;
    Ok(SqGeometry { queue, max_wr: queue.capacity(), max_sge: area / SGE_LEN, max_inline: area })
}

/// Receive queue caps of a QP without SRQ after `rxe_qp_chk_cap()`.
pub(crate) fn rq_geometry(max_recv_wr: u32, max_recv_sge: u32, cache_line: u32) -> Result<RqGeometry, SizeError> {
    if max_recv_wr > limits::MAX_QP_WR || max_recv_sge > limits::MAX_SGE {
        return Err(SizeError::Invalid);
    }
    recv_queue(max_recv_wr, max_recv_sge, cache_line)
}

/// An SRQ after `rxe_srq_chk_init()`: at least one WR and one SGE.
pub(crate) fn srq_geometry(max_wr: u32, max_sge: u32, cache_line: u32) -> Result<RqGeometry, SizeError> {
    if max_wr == 0 || max_wr > limits::MAX_SRQ_WR || max_sge > limits::MAX_SRQ_SGE {
        return Err(SizeError::Invalid);
    }
    recv_queue(max_wr.max(limits::MIN_SRQ_WR), max_sge.max(limits::MIN_SRQ_SGE), cache_line)
}

fn recv_queue(max_wr: u32, max_sge: u32, cache_line: u32) -> Result<RqGeometry, SizeError> {
    // max_sge <= 32 here, so the element is at most 552 bytes.
    let elem = RECV_WQE_LEN + max_sge * SGE_LEN;
    let queue = QueueGeometry::new(max_wr, elem, cache_line)?;
    Ok(RqGeometry { queue, max_wr: queue.capacity(), max_sge })
}

/// A CQ of `cqe` entries after `rxe_cq_chk_attr()`.
pub(crate) fn cq_geometry(cqe: u32, cache_line: u32) -> Result<QueueGeometry, SizeError> {
    if cqe == 0 || cqe > limits::MAX_CQE {
        return Err(SizeError::Invalid);
    }
    QueueGeometry::new(cqe, small(CQE_LEN), cache_line)
}


#[cfg(test)]
mod tests {
    use super::*;
    use std::vec;
    use std::vec::Vec;

    /// `sizeof`/`offsetof` printed by a C program compiled with clang-19
    /// against the 6.12.117 `rdma_user_rxe.h` and `ib_user_verbs.h`.
    #[test]
    fn layout_matches_compiled_c() {
        let table: &[(&str, usize, usize)] = &[
            ("sizeof rxe_queue_buf", queue_buf::LEN, 384),
            ("rxe_queue_buf.log2_elem_size", queue_buf::LOG2_ELEM_SIZE, 0),
            ("rxe_queue_buf.index_mask", queue_buf::INDEX_MASK, 4),
            ("rxe_queue_buf.producer_index", queue_buf::PRODUCER_INDEX, 128),
            ("rxe_queue_buf.consumer_index", queue_buf::CONSUMER_INDEX, 256),
            ("rxe_queue_buf.data", queue_buf::DATA, 384),
            ("sizeof rxe_global_route", global_route::LEN, 24),
            ("rxe_global_route.dgid", global_route::DGID, 0),
            ("rxe_global_route.flow_label", global_route::FLOW_LABEL, 16),
            ("rxe_global_route.sgid_index", global_route::SGID_INDEX, 20),
            ("rxe_global_route.hop_limit", global_route::HOP_LIMIT, 21),
            ("rxe_global_route.traffic_class", global_route::TRAFFIC_CLASS, 22),
            ("sizeof rxe_av", av::LEN, 88),
            ("rxe_av.port_num", av::PORT_NUM, 0),
            ("rxe_av.network_type", av::NETWORK_TYPE, 1),
            ("rxe_av.dmac", av::DMAC, 2),
            ("rxe_av.grh", av::GRH, 8),
            ("rxe_av.sgid_addr", av::SGID_ADDR, 32),
            ("rxe_av.dgid_addr", av::DGID_ADDR, 60),
            ("sizeof sockaddr_in6", av::SOCKADDR_LEN, 28),
            ("sockaddr_in.sin_family", sockaddr::FAMILY, 0),
            ("sockaddr_in.sin_port", sockaddr::PORT, 2),
            ("sockaddr_in.sin_addr", sockaddr::IN_ADDR, 4),
            ("sockaddr_in6.sin6_flowinfo", sockaddr::IN6_FLOWINFO, 4),
            ("sockaddr_in6.sin6_addr", sockaddr::IN6_ADDR, 8),
            ("sockaddr_in6.sin6_scope_id", sockaddr::IN6_SCOPE_ID, 24),
            ("sizeof rxe_send_wr", send_wr::LEN, 144),
            ("rxe_send_wr.wr_id", send_wr::WR_ID, 0),
            ("rxe_send_wr.reserved", send_wr::RESERVED, 8),
            ("rxe_send_wr.opcode", send_wr::OPCODE, 12),
            ("rxe_send_wr.send_flags", send_wr::SEND_FLAGS, 16),
            ("rxe_send_wr.ex", send_wr::EX, 20),
            ("rxe_send_wr.wr", send_wr::WR, 24),
            ("rxe_send_wr.wr.flush.remote_addr", send_wr::FLUSH_REMOTE_ADDR, 24),
            ("rxe_send_wr.wr.flush.length", send_wr::FLUSH_LENGTH, 32),
            ("rxe_send_wr.wr.flush.rkey", send_wr::FLUSH_RKEY, 36),
            ("rxe_send_wr.wr.flush.type", send_wr::FLUSH_TYPE, 40),
            ("rxe_send_wr.wr.flush.level", send_wr::FLUSH_LEVEL, 41),
            ("rxe_send_wr.wr.rdma.remote_addr", send_wr::RDMA_REMOTE_ADDR, 24),
            ("rxe_send_wr.wr.rdma.rkey", send_wr::RDMA_RKEY, 32),
            ("rxe_send_wr.wr.atomic.remote_addr", send_wr::ATOMIC_REMOTE_ADDR, 24),
            ("rxe_send_wr.wr.atomic.compare_add", send_wr::ATOMIC_COMPARE_ADD, 32),
            ("rxe_send_wr.wr.atomic.swap", send_wr::ATOMIC_SWAP, 40),
            ("rxe_send_wr.wr.atomic.rkey", send_wr::ATOMIC_RKEY, 48),
            ("rxe_send_wr.wr.ud.remote_qpn", send_wr::UD_REMOTE_QPN, 24),
            ("rxe_send_wr.wr.ud.remote_qkey", send_wr::UD_REMOTE_QKEY, 28),
            ("rxe_send_wr.wr.ud.pkey_index", send_wr::UD_PKEY_INDEX, 32),
            ("rxe_send_wr.wr.ud.ah_num", send_wr::UD_AH_NUM, 36),
            ("rxe_send_wr.wr.ud.pad", send_wr::UD_PAD, 40),
            ("rxe_send_wr.wr.ud.av", send_wr::UD_AV, 56),
            ("rxe_send_wr.wr.mw.addr", send_wr::MW_ADDR, 24),
            ("rxe_send_wr.wr.mw.length", send_wr::MW_LENGTH, 32),
            ("rxe_send_wr.wr.mw.mr_lkey", send_wr::MW_MR_LKEY, 40),
            ("rxe_send_wr.wr.mw.mw_rkey", send_wr::MW_MW_RKEY, 44),
            ("rxe_send_wr.wr.mw.rkey", send_wr::MW_RKEY, 48),
            ("rxe_send_wr.wr.mw.access", send_wr::MW_ACCESS, 52),
            ("sizeof rxe_sge", sge::LEN, 16),
            ("rxe_sge.addr", sge::ADDR, 0),
            ("rxe_sge.length", sge::LENGTH, 8),
            ("rxe_sge.lkey", sge::LKEY, 12),
            ("sizeof mminfo", mminfo::LEN, 16),
            ("mminfo.offset", mminfo::OFFSET, 0),
            ("mminfo.size", mminfo::SIZE, 8),
            ("mminfo.pad", mminfo::PAD, 12),
            ("sizeof rxe_dma_info", dma::LEN, 24),
            ("rxe_dma_info.length", dma::LENGTH, 0),
            ("rxe_dma_info.resid", dma::RESID, 4),
            ("rxe_dma_info.cur_sge", dma::CUR_SGE, 8),
            ("rxe_dma_info.num_sge", dma::NUM_SGE, 12),
            ("rxe_dma_info.sge_offset", dma::SGE_OFFSET, 16),
            ("rxe_dma_info.reserved", dma::RESERVED, 20),
            ("rxe_dma_info.sge", dma::DATA, 24),
            ("sizeof rxe_send_wqe", send_wqe::LEN, 208),
            ("rxe_send_wqe.wr", send_wqe::WR, 0),
            ("rxe_send_wqe.status", send_wqe::STATUS, 144),
            ("rxe_send_wqe.state", send_wqe::STATE, 148),
            ("rxe_send_wqe.iova", send_wqe::IOVA, 152),
            ("rxe_send_wqe.mask", send_wqe::MASK, 160),
            ("rxe_send_wqe.first_psn", send_wqe::FIRST_PSN, 164),
            ("rxe_send_wqe.last_psn", send_wqe::LAST_PSN, 168),
            ("rxe_send_wqe.ack_length", send_wqe::ACK_LENGTH, 172),
            ("rxe_send_wqe.ssn", send_wqe::SSN, 176),
            ("rxe_send_wqe.has_rd_atomic", send_wqe::HAS_RD_ATOMIC, 180),
            ("rxe_send_wqe.dma", send_wqe::DMA, 184),
            ("rxe_send_wqe.dma.sge", send_wqe::DATA, 184 + 24),
            ("sizeof rxe_recv_wqe", recv_wqe::LEN, 40),
            ("rxe_recv_wqe.wr_id", recv_wqe::WR_ID, 0),
            ("rxe_recv_wqe.reserved", recv_wqe::RESERVED, 8),
            ("rxe_recv_wqe.padding", recv_wqe::PADDING, 12),
            ("rxe_recv_wqe.dma", recv_wqe::DMA, 16),
            ("rxe_recv_wqe.dma.sge", recv_wqe::DATA, 16 + 24),
            ("sizeof rxe_create_ah_resp", resp::CREATE_AH_LEN, 8),
            ("rxe_create_ah_resp.ah_num", resp::CREATE_AH_AH_NUM, 0),
            ("rxe_create_ah_resp.reserved", resp::CREATE_AH_RESERVED, 4),
            ("sizeof rxe_create_cq_resp", resp::CREATE_CQ_LEN, 16),
            ("rxe_create_cq_resp.mi", resp::CREATE_CQ_MI, 0),
            ("sizeof rxe_resize_cq_resp", resp::RESIZE_CQ_LEN, 16),
            ("rxe_resize_cq_resp.mi", resp::RESIZE_CQ_MI, 0),
            ("sizeof rxe_create_qp_resp", resp::CREATE_QP_LEN, 32),
            ("rxe_create_qp_resp.rq_mi", resp::CREATE_QP_RQ_MI, 0),
            ("rxe_create_qp_resp.sq_mi", resp::CREATE_QP_SQ_MI, 16),
            ("sizeof rxe_create_srq_resp", resp::CREATE_SRQ_LEN, 24),
            ("rxe_create_srq_resp.mi", resp::CREATE_SRQ_MI, 0),
            ("rxe_create_srq_resp.srq_num", resp::CREATE_SRQ_SRQ_NUM, 16),
            ("rxe_create_srq_resp.reserved", resp::CREATE_SRQ_RESERVED, 20),
            ("sizeof rxe_modify_srq_cmd", resp::MODIFY_SRQ_LEN, 8),
            ("rxe_modify_srq_cmd.mmap_info_addr", resp::MODIFY_SRQ_MMAP_INFO_ADDR, 0),
            ("sizeof ib_uverbs_wc", uverbs_wc::LEN, 48),
            ("ib_uverbs_wc.wr_id", uverbs_wc::WR_ID, 0),
            ("ib_uverbs_wc.status", uverbs_wc::STATUS, 8),
            ("ib_uverbs_wc.opcode", uverbs_wc::OPCODE, 12),
            ("ib_uverbs_wc.vendor_err", uverbs_wc::VENDOR_ERR, 16),
            ("ib_uverbs_wc.byte_len", uverbs_wc::BYTE_LEN, 20),
            ("ib_uverbs_wc.ex", uverbs_wc::EX, 24),
            ("ib_uverbs_wc.qp_num", uverbs_wc::QP_NUM, 28),
            ("ib_uverbs_wc.src_qp", uverbs_wc::SRC_QP, 32),
            ("ib_uverbs_wc.wc_flags", uverbs_wc::WC_FLAGS, 36),
            ("ib_uverbs_wc.pkey_index", uverbs_wc::PKEY_INDEX, 40),
            ("ib_uverbs_wc.slid", uverbs_wc::SLID, 42),
            ("ib_uverbs_wc.sl", uverbs_wc::SL, 44),
            ("ib_uverbs_wc.dlid_path_bits", uverbs_wc::DLID_PATH_BITS, 45),
            ("ib_uverbs_wc.port_num", uverbs_wc::PORT_NUM, 46),
            ("ib_uverbs_wc.reserved", uverbs_wc::RESERVED, 47),
            // A mimic of the kernel's struct ib_wc, compiled the same way.
            ("sizeof ib_wc (x86-64)", CQE_LEN, 72),
        ];
        for (name, ours, c) in table {
            assert_eq!(ours, c, "{name}");
        }
        // The union members all start where the union does.
        assert_eq!(send_wr::WR + av::LEN + 32, send_wr::LEN);
        assert_eq!(send_wqe::DMA + dma::LEN, send_wqe::DATA);
        assert_eq!(to_usize(limits::MAX_WQE_SIZE) - SEND_DATA_AREA, send_wqe::LEN);
    }

    /// The C enum values, printed by the same C program.
    #[test]
    fn enum_values_match_compiled_c() {
        assert_eq!(WcOpcode::RegMr.as_raw(), 10);
        assert_eq!(WcOpcode::MaskedCompSwap.as_raw(), 11);
        assert_eq!(WcOpcode::MaskedFetchAdd.as_raw(), 12);
        assert_eq!(WcOpcode::Flush.as_raw(), 8);
        assert_eq!(WcOpcode::AtomicWrite.as_raw(), 9);
        assert_eq!(WcOpcode::Lso.as_raw(), 7);
        assert_eq!(WcOpcode::Recv.as_raw(), 128);
        assert_eq!(WcOpcode::RecvRdmaWithImm.as_raw(), 129);
        assert_eq!(WcStatus::GeneralErr.as_raw(), 21);
        assert_eq!(WcStatus::RespTimeoutErr.as_raw(), 20);
        assert_eq!(WcStatus::LocQpOpErr.as_raw(), 2);
        assert_eq!(WrOpcode::RegMr.as_raw(), 0x20);
        assert_eq!(WrOpcode::Lso.as_raw(), 10);
        assert_eq!(WrOpcode::Flush.as_raw(), 14);
        assert_eq!(WrOpcode::AtomicWrite.as_raw(), 15);
        assert_eq!(access::SUPPORTED, 0x3ff0_03ff);
        for v in 0..64 {
            match WcStatus::try_from(v) {
                Ok(s) => assert_eq!(s.as_raw(), v),
                Err(e) => assert!(v > 21 && e == v),
            }
            match WrOpcode::try_from(v) {
                Ok(o) => assert_eq!(o.as_raw(), v),
                Err(e) => assert!((v > 15 && v != 0x20) && e == v),
            }
        }
    }

    /// `rxe_wr_opcode_info[]` of rxe_opcode.c, one row per opcode:
    /// masks for (GSI, RC, UC, UD); SMI and the other types have none.
    #[test]
    fn wr_opcode_masks_match_c_table() {
        const IW: u32 = 0x11; // INLINE | WRITE
        const IS: u32 = 0x05; // INLINE | SEND
        let rows: &[(WrOpcode, [u32; 4])] = &[
            (WrOpcode::RdmaWrite, [0, IW, IW, 0]),
            (WrOpcode::RdmaWriteWithImm, [0, IW, IW, 0]),
            (WrOpcode::Send, [IS, IS, IS, IS]),
            (WrOpcode::SendWithImm, [IS, IS, IS, IS]),
            (WrOpcode::RdmaRead, [0, 0x08, 0, 0]),
            (WrOpcode::AtomicCmpAndSwp, [0, 0x02, 0, 0]),
            (WrOpcode::AtomicFetchAndAdd, [0, 0x02, 0, 0]),
            (WrOpcode::Lso, [0, 0, 0, 0]),
            (WrOpcode::SendWithInv, [0, IS, IS, IS]),
            (WrOpcode::RdmaReadWithInv, [0, 0x08, 0, 0]),
            (WrOpcode::LocalInv, [0, 0x20, 0, 0]),
            (WrOpcode::RegMr, [0, 0x20, 0, 0]),
            (WrOpcode::BindMw, [0, 0x20, 0x20, 0]),
            (WrOpcode::Flush, [0, 0x40, 0, 0]),
            (WrOpcode::AtomicWrite, [0, 0x80, 0, 0]),
            (WrOpcode::MaskedAtomicCmpAndSwp, [0, 0, 0, 0]),
            (WrOpcode::MaskedAtomicFetchAndAdd, [0, 0, 0, 0]),
        ];
        let types = [QpType::Gsi, QpType::Rc, QpType::Uc, QpType::Ud];
        for (op, masks) in rows {
            for (t, m) in types.iter().zip(masks) {
                assert_eq!(op.mask(*t).0, *m, "{op:?} on {t:?}");
            }
            for t in QpType::ALL {
                if !types.contains(&t) {
                    assert!(op.mask(t).is_empty(), "{op:?} on {t:?}");
                }
            }
        }
    }

    /// A send WQE image, filled the way rdma-core's provider fills one.
    struct SendImage {
        buf: Vec<u8>,
    }

    impl SendImage {
        fn new(slot: usize, opcode: u32, flags: u32) -> SendImage {
            let mut s = SendImage { buf: vec![0; slot] };
            s.u64(send_wr::WR_ID, 0x1122_3344_5566_7788);
            s.u32(send_wr::OPCODE, opcode);
            s.u32(send_wr::SEND_FLAGS, flags);
            s
        }
        fn u8(&mut self, off: usize, v: u8) -> &mut Self {
            self.buf[off] = v;
            self
        }
        fn u32(&mut self, off: usize, v: u32) -> &mut Self {
            self.buf[off..off + 4].copy_from_slice(&v.to_ne_bytes());
            self
        }
        fn u64(&mut self, off: usize, v: u64) -> &mut Self {
            self.buf[off..off + 8].copy_from_slice(&v.to_ne_bytes());
            self
        }
        fn sges(&mut self, sges: &[Sge]) -> &mut Self {
            let mut len = 0u32;
            for (i, s) in sges.iter().enumerate() {
                let off = send_wqe::DATA + i * sge::LEN;
                self.u64(off + sge::ADDR, s.addr).u32(off + sge::LENGTH, s.length).u32(off + sge::LKEY, s.lkey);
                len = len.wrapping_add(s.length);
            }
            self.u32(send_wqe::DMA + dma::NUM_SGE, sges.len() as u32).dma_len(len)
        }
        fn inline(&mut self, data: &[u8]) -> &mut Self {
            self.buf[send_wqe::DATA..send_wqe::DATA + data.len()].copy_from_slice(data);
            self.dma_len(data.len() as u32)
        }
        fn dma_len(&mut self, len: u32) -> &mut Self {
            self.u32(send_wqe::DMA + dma::LENGTH, len).u32(send_wqe::DMA + dma::RESID, len)
        }
    }

    const RC: SqLimits = SqLimits { qp_type: QpType::Rc, max_sge: 4, max_inline: 64 };
    const UD: SqLimits = SqLimits { qp_type: QpType::Ud, max_sge: 4, max_inline: 64 };

    fn sge(addr: u64, length: u32, lkey: u32) -> Sge {
        Sge { addr, length, lkey }
    }

    #[test]
    fn rdma_write_with_sges() {
        let mut img = SendImage::new(512, WrOpcode::RdmaWriteWithImm.as_raw(), SendFlags::SIGNALED);
        img.u32(send_wr::EX, 0xdead_beef)
            .u64(send_wr::RDMA_REMOTE_ADDR, 0x7000)
            .u32(send_wr::RDMA_RKEY, 0x1234)
            .u64(send_wqe::IOVA, 0x7000)
            .u32(send_wqe::SSN, 9)
            // Progress fields user space could forge; the parser ignores them.
            .u32(send_wqe::STATUS, 77)
            .u32(send_wqe::MASK, 0xffff)
            .u32(send_wqe::DMA + dma::CUR_SGE, 1000)
            .sges(&[sge(0x1000, 100, 7), sge(0x2000, 28, 8)]);
        let w = SendWqe::from_bytes(&img.buf, &RC).unwrap();
        assert_eq!(w.wr_id, 0x1122_3344_5566_7788);
        assert_eq!(w.opcode, WrOpcode::RdmaWriteWithImm);
        assert_eq!(w.ex, 0xdead_beef);
        assert_eq!(w.wr, WrParams::Rdma { remote_addr: 0x7000, rkey: 0x1234 });
        assert_eq!((w.iova, w.ssn, w.length, w.num_sge), (0x7000, 9, 128, 2));
        assert_eq!(w.mask, WrMask(0x11));
        assert_eq!(w.payload, Payload::Sges { count: 2 });
        assert_eq!(w.sges().collect::<Vec<_>>(), [sge(0x1000, 100, 7), sge(0x2000, 28, 8)]);
        assert_eq!(w.sge(2), None);
        assert!(w.inline_data().is_empty());
        assert!(w.opcode.has_imm());
        assert_eq!(w.opcode.wc_opcode(), WcOpcode::RdmaWrite);
    }

    #[test]
    fn inline_send() {
        let data: Vec<u8> = (0..40).collect();
        let mut img = SendImage::new(256, WrOpcode::Send.as_raw(), SendFlags::INLINE);
        // rdma-core leaves num_sge at the count of the source buffers.
        img.inline(&data).u32(send_wqe::DMA + dma::NUM_SGE, 3);
        let w = SendWqe::from_bytes(&img.buf, &RC).unwrap();
        assert_eq!(w.payload, Payload::Inline { len: 40 });
        assert_eq!(w.inline_data(), &data[..]);
        assert_eq!(w.sges().count(), 0);
        assert_eq!(w.wr, WrParams::None);

        // Longer than the QP allows, or than the slot holds.
        let long: Vec<u8> = vec![1; 65];
        img = SendImage::new(512, WrOpcode::Send.as_raw(), SendFlags::INLINE);
        img.inline(&long);
        assert_eq!(SendWqe::from_bytes(&img.buf, &RC), Err(WqeError::InlineTooLong(65)));
        let wide = SqLimits { max_inline: 512, ..RC };
        img = SendImage::new(256, WrOpcode::Send.as_raw(), SendFlags::INLINE);
        img.dma_len(49);
        assert_eq!(SendWqe::from_bytes(&img.buf, &wide), Err(WqeError::InlineTooLong(49)));
        img.dma_len(48);
        assert!(SendWqe::from_bytes(&img.buf, &wide).is_ok());

        // INLINE on a read is ignored, as the C requester ignores it.
        img = SendImage::new(256, WrOpcode::RdmaRead.as_raw(), SendFlags::INLINE);
        img.sges(&[sge(1, 16, 2)]);
        let w = SendWqe::from_bytes(&img.buf, &RC).unwrap();
        assert_eq!(w.payload, Payload::Sges { count: 1 });
    }

    #[test]
    fn rejects_bad_opcodes() {
        for (op, sq) in [(0x20, RC), (99, RC), (10, RC), (12, RC), (4, UD), (0, UD), (7, UD)] {
            let img = SendImage::new(256, op, 0);
            assert_eq!(SendWqe::from_bytes(&img.buf, &sq), Err(WqeError::BadOpcode(op)), "{op}");
        }
        let gsi = SqLimits { qp_type: QpType::Gsi, ..UD };
        let img = SendImage::new(256, WrOpcode::SendWithInv.as_raw(), 0);
        assert_eq!(SendWqe::from_bytes(&img.buf, &gsi), Err(WqeError::BadOpcode(9)));
        assert_eq!(WqeError::BadOpcode(9).wc_status(), WcStatus::LocQpOpErr);
    }

    #[test]
    fn rejects_bad_sge_lists() {
        let mut img = SendImage::new(512, WrOpcode::Send.as_raw(), 0);
        img.sges(&[sge(1, 1, 1); 5]);
        assert_eq!(SendWqe::from_bytes(&img.buf, &RC), Err(WqeError::TooManySge(5)));

        // Three SGEs do not fit after a 208-byte WQE in a 240-byte slot.
        let mut img = SendImage::new(240, WrOpcode::Send.as_raw(), 0);
        img.u32(send_wqe::DMA + dma::NUM_SGE, 3);
        assert_eq!(SendWqe::from_bytes(&img.buf, &RC), Err(WqeError::SgeOutsideSlot));

        let mut img = SendImage::new(256, WrOpcode::Send.as_raw(), 0);
        img.sges(&[sge(1, 10, 1), sge(2, 20, 1)]).dma_len(31);
        assert_eq!(SendWqe::from_bytes(&img.buf, &RC), Err(WqeError::LengthMismatch { length: 31, sum: 30 }));

        // Lengths whose sum wraps a u32: caught by the u64 sum.
        let mut img = SendImage::new(256, WrOpcode::Send.as_raw(), 0);
        img.sges(&[sge(1, 0xffff_fff0, 1), sge(2, 0x20, 1)]);
        assert_eq!(
            SendWqe::from_bytes(&img.buf, &RC),
            Err(WqeError::LengthMismatch { length: 0x10, sum: 0x1_0000_0010 })
        );

        let mut img = SendImage::new(256, WrOpcode::Send.as_raw(), 0);
        img.sges(&[sge(1, 0x8000_0000, 1), sge(2, 1, 1)]);
        assert_eq!(SendWqe::from_bytes(&img.buf, &RC), Err(WqeError::MessageTooLong(0x8000_0001)));
        let mut img = SendImage::new(256, WrOpcode::Send.as_raw(), 0);
        img.sges(&[sge(1, 0x8000_0000, 1)]);
        assert!(SendWqe::from_bytes(&img.buf, &RC).is_ok());

        assert_eq!(SendWqe::from_bytes(&[0u8; 207], &RC), Err(WqeError::Truncated));
    }

    #[test]
    fn atomics() {
        let mut img = SendImage::new(256, WrOpcode::AtomicCmpAndSwp.as_raw(), 0);
        img.u64(send_wr::ATOMIC_REMOTE_ADDR, 0x8000)
            .u64(send_wr::ATOMIC_COMPARE_ADD, 1)
            .u64(send_wr::ATOMIC_SWAP, 2)
            .u32(send_wr::ATOMIC_RKEY, 3)
            .sges(&[sge(0x100, 8, 4)]);
        let w = SendWqe::from_bytes(&img.buf, &RC).unwrap();
        assert_eq!(w.wr, WrParams::Atomic { remote_addr: 0x8000, compare_add: 1, swap: 2, rkey: 3 });
        img.sges(&[sge(0x100, 4, 4)]);
        assert_eq!(SendWqe::from_bytes(&img.buf, &RC), Err(WqeError::AtomicLength(4)));

        let mut img = SendImage::new(256, WrOpcode::AtomicWrite.as_raw(), 0);
        img.inline(&[1, 2, 3, 4, 5, 6, 7, 8]);
        let w = SendWqe::from_bytes(&img.buf, &RC).unwrap();
        assert_eq!(w.payload, Payload::AtomicWrite([1, 2, 3, 4, 5, 6, 7, 8]));
        img.dma_len(4096);
        assert_eq!(SendWqe::from_bytes(&img.buf, &RC), Err(WqeError::AtomicLength(4096)));
        assert_eq!(WqeError::AtomicLength(0).wc_status(), WcStatus::LocLenErr);
    }

    #[test]
    fn local_ops_and_flush() {
        let mut img = SendImage::new(256, WrOpcode::LocalInv.as_raw(), 0);
        // The dma part of a local op means nothing; garbage SGEs are not read.
        img.u32(send_wr::EX, 0x4242).u32(send_wqe::DMA + dma::NUM_SGE, 2).dma_len(12345);
        let w = SendWqe::from_bytes(&img.buf, &RC).unwrap();
        assert_eq!((w.payload, w.ex, w.mask), (Payload::None, 0x4242, WrMask::LOCAL_OP));

        let mut img = SendImage::new(256, WrOpcode::BindMw.as_raw(), 0);
        img.u64(send_wr::MW_ADDR, 1)
            .u64(send_wr::MW_LENGTH, 2)
            .u32(send_wr::MW_MR_LKEY, 3)
            .u32(send_wr::MW_MW_RKEY, 4)
            .u32(send_wr::MW_RKEY, 5)
            .u32(send_wr::MW_ACCESS, access::REMOTE_READ);
        let uc = SqLimits { qp_type: QpType::Uc, ..RC };
        let w = SendWqe::from_bytes(&img.buf, &uc).unwrap();
        assert_eq!(w.wr, WrParams::Mw { addr: 1, length: 2, mr_lkey: 3, mw_rkey: 4, rkey: 5, access: 4 });

        let mut img = SendImage::new(256, WrOpcode::Flush.as_raw(), 0);
        img.u64(send_wr::FLUSH_REMOTE_ADDR, 0x9000)
            .u32(send_wr::FLUSH_LENGTH, 64)
            .u32(send_wr::FLUSH_RKEY, 6)
            .u8(send_wr::FLUSH_TYPE, 1)
            .u8(send_wr::FLUSH_LEVEL, 2)
            .dma_len(64);
        let w = SendWqe::from_bytes(&img.buf, &RC).unwrap();
        assert_eq!(w.wr, WrParams::Flush { remote_addr: 0x9000, length: 64, rkey: 6, kind: 1, level: 2 });
        assert_eq!((w.payload, w.length), (Payload::None, 64));
    }

    #[test]
    fn ud_destinations() {
        let mut img = SendImage::new(256, WrOpcode::SendWithImm.as_raw(), 0);
        img.u32(send_wr::UD_REMOTE_QPN, 0x11)
            .u32(send_wr::UD_REMOTE_QKEY, 0x22)
            .u32(send_wr::UD_AH_NUM, 5)
            .u8(send_wr::UD_AV + av::NETWORK_TYPE, 9)
            .sges(&[sge(1, 10, 1)]);
        let w = SendWqe::from_bytes(&img.buf, &UD).unwrap();
        assert_eq!(w.wr, WrParams::Ud { remote_qpn: 0x11, remote_qkey: 0x22, pkey_index: 0, ah_num: 5, av: None });

        // AH number 0: the embedded AV is the destination and must make sense.
        img.u32(send_wr::UD_AH_NUM, 0);
        assert_eq!(SendWqe::from_bytes(&img.buf, &UD), Err(WqeError::BadNetworkType(9)));
        let a = send_wr::UD_AV;
        img.u8(a + av::NETWORK_TYPE, 1)
            .u8(a + av::PORT_NUM, 1)
            .u8(a + av::DMAC, 0x02)
            .u8(a + av::GRH + global_route::HOP_LIMIT, 64)
            .u8(a + av::SGID_ADDR + sockaddr::IN_ADDR, 10)
            .u8(a + av::DGID_ADDR + sockaddr::IN_ADDR + 3, 7);
        let w = SendWqe::from_bytes(&img.buf, &UD).unwrap();
        let WrParams::Ud { av: Some(v), .. } = w.wr else { panic!("{:?}", w.wr) };
        assert_eq!((v.network_type, v.port_num, v.dmac[0], v.grh.hop_limit), (NetworkType::Ipv4, 1, 2, 64));
        assert_eq!((v.src_ipv4(), v.dst_ipv4()), ([10, 0, 0, 0], [0, 0, 0, 7]));
        assert_eq!(v.src_ipv6()[0], 0);
    }

    #[test]
    fn send_status_write_back() {
        let mut slot = vec![0u8; 256];
        write_send_status(&mut slot, WcStatus::WrFlushErr, WqeState::Error).unwrap();
        write_send_psns(&mut slot, 0x10, 0x20).unwrap();
        assert_eq!(u32_at(&slot, send_wqe::STATUS), Some(5));
        assert_eq!(u32_at(&slot, send_wqe::STATE), Some(4));
        assert_eq!(u32_at(&slot, send_wqe::FIRST_PSN), Some(0x10));
        assert_eq!(u32_at(&slot, send_wqe::LAST_PSN), Some(0x20));
        assert_eq!(write_send_status(&mut [0u8; 150], WcStatus::Success, WqeState::Done), Err(ShortBuffer));
    }

    fn recv_image(slot: usize, sges: &[Sge]) -> Vec<u8> {
        let mut b = vec![0u8; slot];
        b[..8].copy_from_slice(&42u64.to_ne_bytes());
        let mut len = 0u32;
        for (i, s) in sges.iter().enumerate() {
            let off = recv_wqe::DATA + i * sge::LEN;
            b[off..off + 8].copy_from_slice(&s.addr.to_ne_bytes());
            b[off + 8..off + 12].copy_from_slice(&s.length.to_ne_bytes());
            b[off + 12..off + 16].copy_from_slice(&s.lkey.to_ne_bytes());
            len = len.wrapping_add(s.length);
        }
        let d = recv_wqe::DMA;
        b[d + dma::LENGTH..d + dma::LENGTH + 4].copy_from_slice(&len.to_ne_bytes());
        b[d + dma::NUM_SGE..d + dma::NUM_SGE + 4].copy_from_slice(&(sges.len() as u32).to_ne_bytes());
        b
    }

    #[test]
    fn recv_wqes() {
        let b = recv_image(64, &[sge(0x10, 100, 3)]);
        let w = RecvWqe::from_bytes(&b, 1).unwrap();
        assert_eq!((w.wr_id, w.length, w.num_sge), (42, 100, 1));
        assert_eq!(w.sges().collect::<Vec<_>>(), [sge(0x10, 100, 3)]);
        assert_eq!(RecvWqe::from_bytes(&b, 0), Err(WqeError::TooManySge(1)));
        let b = recv_image(128, &[sge(0x10, 1, 3), sge(0x20, 1, 3)]);
        assert_eq!(RecvWqe::from_bytes(&b[..64], 2), Err(WqeError::SgeOutsideSlot));
        assert!(RecvWqe::from_bytes(&b[..72], 2).is_ok());
        let b = recv_image(128, &[sge(0, 0x8000_0000, 1), sge(0, 0x8000_0000, 1)]);
        assert_eq!(RecvWqe::from_bytes(&b, 2), Err(WqeError::LengthMismatch { length: 0, sum: 1 << 32 }));
        let b = recv_image(64, &[]);
        assert_eq!(RecvWqe::from_bytes(&b, 0).map(|w| w.length), Ok(0));
        assert_eq!(RecvWqe::from_bytes(&b[..39], 0), Err(WqeError::Truncated));
    }

    #[test]
    fn cqe_layout() {
        let mut slot = [0xaau8; 128];
        let cqe = Cqe {
            opcode: WcOpcode::RecvRdmaWithImm,
            vendor_err: 3,
            byte_len: 4,
            ex: 0x0102_0304,
            src_qp: 5,
            wc_flags: wc_flags::GRH | wc_flags::WITH_IMM,
            pkey_index: 6,
            slid: 7,
            sl: 8,
            dlid_path_bits: 9,
            port_num: 1,
            ..Cqe::new(0x55, WcStatus::Success, 17)
        };
        cqe.write(&mut slot).unwrap();
        assert_eq!(u64_at(&slot, uverbs_wc::WR_ID), Some(0x55));
        assert_eq!(u32_at(&slot, uverbs_wc::STATUS), Some(0));
        assert_eq!(u32_at(&slot, uverbs_wc::OPCODE), Some(129));
        assert_eq!(u32_at(&slot, uverbs_wc::VENDOR_ERR), Some(3));
        assert_eq!(u32_at(&slot, uverbs_wc::BYTE_LEN), Some(4));
        assert_eq!(u32_at(&slot, uverbs_wc::EX), Some(0x0102_0304));
        assert_eq!(u32_at(&slot, uverbs_wc::QP_NUM), Some(17));
        assert_eq!(u32_at(&slot, uverbs_wc::SRC_QP), Some(5));
        assert_eq!(u32_at(&slot, uverbs_wc::WC_FLAGS), Some(3));
        assert_eq!(u16_at(&slot, uverbs_wc::PKEY_INDEX), Some(6));
        assert_eq!(u16_at(&slot, uverbs_wc::SLID), Some(7));
        assert_eq!(slot[uverbs_wc::SL..uverbs_wc::LEN], [8, 9, 1, 0]);
        // The rest of the rxe_cqe union is zeroed, the rest of the slot untouched.
        assert!(slot[uverbs_wc::LEN..CQE_LEN].iter().all(|&b| b == 0));
        assert!(slot[CQE_LEN..].iter().all(|&b| b == 0xaa));
        assert_eq!(cqe.write(&mut [0u8; CQE_LEN - 1]), Err(ShortBuffer));
    }

    #[test]
    fn create_responses() {
        let rq = MmInfo { offset: 0x1000, size: 0x2000 };
        let sq = MmInfo { offset: 0x3000, size: 0x4000 };
        let b = create_qp_resp(rq, sq);
        assert_eq!(u64_at(&b, resp::CREATE_QP_RQ_MI + mminfo::OFFSET), Some(0x1000));
        assert_eq!(u32_at(&b, resp::CREATE_QP_RQ_MI + mminfo::SIZE), Some(0x2000));
        assert_eq!(u64_at(&b, resp::CREATE_QP_SQ_MI + mminfo::OFFSET), Some(0x3000));
        assert_eq!(u32_at(&b, resp::CREATE_QP_SQ_MI + mminfo::SIZE), Some(0x4000));
        assert_eq!(u32_at(&b, mminfo::PAD), Some(0));
        assert_eq!(create_cq_resp(rq), rq.to_bytes());
        let b = create_srq_resp(sq, 0x20001);
        assert_eq!(u32_at(&b, resp::CREATE_SRQ_SRQ_NUM), Some(0x20001));
        assert_eq!(u32_at(&b, resp::CREATE_SRQ_RESERVED), Some(0));
        assert_eq!(u32_at(&create_ah_resp(9), resp::CREATE_AH_AH_NUM), Some(9));
        assert_eq!(modify_srq_cmd(&0x7fff_0000u64.to_ne_bytes()), Ok(0x7fff_0000));
        assert_eq!(modify_srq_cmd(&[0; 7]), Err(ShortBuffer));
    }

    #[test]
    fn queue_geometry() {
        let cq = cq_geometry(limits::MAX_CQE, DEFAULT_CACHE_LINE).unwrap();
        assert_eq!((cq.elem_size(), cq.num_slots(), cq.capacity()), (128, 32768, 32767));
        assert_eq!(cq.buf_size(), 384 + 32768 * 128);
        let cq = cq_geometry(1, DEFAULT_CACHE_LINE).unwrap();
        assert_eq!((cq.num_slots(), cq.capacity()), (2, 1));
        assert_eq!(cq_geometry(0, 64), Err(SizeError::Invalid));
        assert_eq!(cq_geometry(limits::MAX_CQE + 1, 64), Err(SizeError::Invalid));

        let sq = sq_geometry(16, 2, 0, 64).unwrap();
        assert_eq!((sq.queue.elem_size(), sq.max_wr, sq.max_sge, sq.max_inline), (256, 31, 2, 32));
        let sq = sq_geometry(100, 1, 100, 64).unwrap();
        assert_eq!((sq.queue.elem_size(), sq.max_wr, sq.max_sge, sq.max_inline), (512, 127, 6, 100));
        let sq = sq_geometry(limits::MAX_QP_WR, 32, 512, 64).unwrap();
        assert_eq!((sq.queue.elem_size(), sq.queue.num_slots(), sq.max_sge), (1024, 1 << 21, 32));
        assert_eq!(sq_geometry(0, 0, 0, 64).map(|g| (g.queue.elem_size(), g.max_wr)), Ok((256, 0)));
        assert_eq!(sq_geometry(1, 33, 0, 64), Err(SizeError::Invalid));
        assert_eq!(sq_geometry(1, 0, 513, 64), Err(SizeError::Invalid));
        assert_eq!(sq_geometry(limits::MAX_QP_WR + 1, 0, 0, 64), Err(SizeError::Invalid));

        let rq = rq_geometry(8, 1, 64).unwrap();
        assert_eq!((rq.queue.elem_size(), rq.max_wr, rq.max_sge), (64, 15, 1));
        let rq = rq_geometry(8, 32, 128).unwrap();
        assert_eq!(rq.queue.elem_size(), 1024);
        let srq = srq_geometry(1, 0, 64).unwrap();
        assert_eq!((srq.max_wr, srq.max_sge, srq.queue.elem_size()), (1, 1, 64));
        assert_eq!(srq_geometry(0, 1, 64), Err(SizeError::Invalid));
        assert_eq!(srq_geometry(1, 28, 64), Err(SizeError::Invalid));

        assert_eq!(QueueGeometry::new(u32::MAX, 64, 64), Err(SizeError::TooLarge));
        assert_eq!(QueueGeometry::new(1, u32::MAX, 64), Err(SizeError::TooLarge));

        let q = QueueGeometry::new(7, 100, 64).unwrap();
        let mut hdr = [0u8; queue_buf::LEN];
        q.write_header(&mut hdr).unwrap();
        assert_eq!((u32_at(&hdr, 0), u32_at(&hdr, 4)), (Some(7), Some(7)));
        assert_eq!(q.write_header(&mut [0u8; 7]), Err(ShortBuffer));
    }

    #[test]
    fn queue_indices_from_user_memory() {
        let q = QueueGeometry::new(7, 64, 64).unwrap();
        assert!(q.is_empty(3, 3));
        assert!(q.is_full(2, 3));
        assert_eq!(q.count(1, 6), 3);
        assert_eq!(q.next(7), 0);
        // Garbage indices from user space still land inside the buffer.
        for raw in [0u32, 7, 8, 0xffff_ffff, 0x8000_0001, 12345] {
            let r = q.slot_range(raw);
            assert!(r.start >= queue_buf::DATA && r.end <= q.buf_size(), "{raw}");
            assert!(q.count(raw, 0) <= q.capacity());
        }
        assert_eq!(q.slot_range(9), q.slot_range(1));
    }

    /// xorshift64: deterministic, no dependency.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// Every property an accepted send WQE must have, checked against the bytes it came from.
    fn check_send(w: &SendWqe, buf: &[u8], sq: &SqLimits) {
        assert_ne!(w.opcode, WrOpcode::RegMr);
        assert_eq!(w.mask, w.opcode.mask(sq.qp_type));
        assert!(!w.mask.is_empty());
        assert!(w.num_sge <= sq.max_sge.min(limits::MAX_SGE));
        assert!(w.length <= MAX_MSG_SZ);
        assert_eq!(u32_at(buf, send_wr::OPCODE), Some(w.opcode.as_raw()));
        match w.payload {
            Payload::None => assert!(w.mask.intersects(WrMask(WrMask::LOCAL_OP.0 | WrMask::FLUSH.0))),
            Payload::Sges { count } => {
                assert_eq!(count, to_usize(w.num_sge));
                assert!(send_wqe::DATA + count * sge::LEN <= buf.len());
                let mut sum = 0u64;
                for (i, s) in w.sges().enumerate() {
                    assert_eq!(Some(s), Sge::read(buf, send_wqe::DATA + i * sge::LEN));
                    sum += u64::from(s.length);
                }
                assert_eq!(w.sges().count(), count);
                assert_eq!(sum, u64::from(w.length));
                if w.mask.intersects(WrMask::ATOMIC) {
                    assert!(w.length >= 8);
                }
            }
            Payload::Inline { len } => {
                assert!(w.mask.intersects(WrMask::INLINE) && w.send_flags.has(SendFlags::INLINE));
                assert_eq!(len, to_usize(w.length));
                assert!(w.length <= sq.max_inline && len <= SEND_DATA_AREA);
                assert_eq!(w.inline_data(), &buf[send_wqe::DATA..send_wqe::DATA + len]);
            }
            Payload::AtomicWrite(b) => {
                assert_eq!(w.length, 8);
                assert_eq!(&b[..], &buf[send_wqe::DATA..send_wqe::DATA + 8]);
            }
        }
        match w.wr {
            WrParams::Ud { ah_num, av, .. } => {
                assert!(sq.qp_type.is_datagram());
                assert_eq!(av.is_some(), ah_num == 0);
            }
            _ => assert!(!sq.qp_type.is_datagram()),
        }
    }

    fn check_recv(w: &RecvWqe, buf: &[u8], max_sge: u32) {
        assert!(w.num_sge <= max_sge.min(limits::MAX_SGE));
        let n = to_usize(w.num_sge);
        assert!(recv_wqe::DATA + n * sge::LEN <= buf.len());
        let sum: u64 = w.sges().map(|s| u64::from(s.length)).sum();
        assert_eq!(w.sges().count(), n);
        assert_eq!(sum, u64::from(w.length));
    }

    /// Random slots, half of them shaped like real WQEs so that the
    /// accepting paths are reached too: never a panic, and every accepted WQE
    /// satisfies [`check_send`]/[`check_recv`].
    #[test]
    fn fuzz_wqe_parsers() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let types = [QpType::Rc, QpType::Uc, QpType::Ud, QpType::Gsi, QpType::Smi, QpType::XrcIni];
        let mut accepted = [0usize; 2];
        let mut buf = vec![0u8; 1100];
        for iter in 0..100_000u32 {
            let slot = match rng.below(4) {
                0 => to_usize(rng.below(1100) as u32),
                1 => 256,
                2 => 512,
                _ => 1024,
            };
            let b = &mut buf[..slot];
            for chunk in b.chunks_mut(8) {
                let r = rng.next().to_ne_bytes();
                chunk.copy_from_slice(&r[..chunk.len()]);
            }
            let shaped = iter % 2 == 0 && slot >= send_wqe::LEN;
            let sq = SqLimits {
                qp_type: types[to_usize(rng.below(types.len() as u64) as u32)],
                max_sge: rng.below(40) as u32,
                max_inline: rng.below(600) as u32,
            };
            if shaped {
                let n = rng.below(6) as u32;
                let opcode = rng.below(17) as u32;
                let mut put32 = |off: usize, v: u32| b[off..off + 4].copy_from_slice(&v.to_ne_bytes());
                put32(send_wr::OPCODE, opcode);
                put32(send_wr::SEND_FLAGS, (rng.next() as u32) & 0xf);
                put32(send_wqe::DMA + dma::NUM_SGE, n);
                put32(send_wr::UD_AH_NUM, (rng.below(2) as u32) * 3);
                b[send_wr::UD_AV + av::NETWORK_TYPE] = rng.below(3) as u8;
                let mut len = 0u32;
                for i in 0..to_usize(n) {
                    let off = send_wqe::DATA + i * sge::LEN + sge::LENGTH;
                    if off + 4 <= slot {
                        let l = rng.below(5000) as u32;
                        b[off..off + 4].copy_from_slice(&l.to_ne_bytes());
                        len = len.wrapping_add(l);
                    }
                }
                if rng.below(3) == 0 {
                    len = rng.below(70) as u32;
                }
                b[send_wqe::DMA..send_wqe::DMA + 4].copy_from_slice(&len.to_ne_bytes());
            }
            if let Ok(w) = SendWqe::from_bytes(b, &sq) {
                check_send(&w, b, &sq);
                accepted[0] += 1;
            }

            let max_sge = rng.below(34) as u32;
            if iter % 2 == 0 && slot >= recv_wqe::LEN {
                let n = rng.below(u64::from(max_sge) + 2) as u32;
                b[recv_wqe::DMA + dma::NUM_SGE..recv_wqe::DMA + dma::NUM_SGE + 4].copy_from_slice(&n.to_ne_bytes());
                let mut len = 0u32;
                for i in 0..to_usize(n) {
                    let off = recv_wqe::DATA + i * sge::LEN + sge::LENGTH;
                    if off + 4 <= slot {
                        let l = rng.below(1 << 20) as u32;
                        b[off..off + 4].copy_from_slice(&l.to_ne_bytes());
                        len = len.wrapping_add(l);
                    }
                }
                b[recv_wqe::DMA..recv_wqe::DMA + 4].copy_from_slice(&len.to_ne_bytes());
            }
            if let Ok(w) = RecvWqe::from_bytes(b, max_sge) {
                check_recv(&w, b, max_sge);
                accepted[1] += 1;
            }
        }
        // The shaped half must reach the accepting paths often.
        assert!(accepted[0] > 5_000 && accepted[1] > 20_000, "{accepted:?}");
    }
}
