// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Verbs enums and flag sets as user space writes them into WQEs and reads
//! them from CQEs.

use super::layout::to_usize;
use super::qp;

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
    #[cfg(test)] // Only the host tests use it.
    pub(crate) const fn as_raw(self) -> u32 {
        self as u32
    }

    /// `rxe_wr_opcode_info[opcode].mask[qp_type]`: what the requester does with
    /// this opcode on this QP type; empty when rxe does not support the pair.
    #[inline]
    pub(crate) const fn mask(self, qp_type: qp::Type) -> WrMask {
        use qp::Type::{Gsi, Rc, Uc, Ud};
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
    #[allow(dead_code)] // The whole C value set, used or not.
    pub(crate) const IP_CSUM: u32 = 1 << 4;

    /// Whether `flag` (one of the consts above) is set.
    pub(crate) const fn has(self, flag: u32) -> bool {
        self.0 & flag != 0
    }
}

/// `enum ib_access_flags` bits (MR, MW and QP access).
#[allow(dead_code)] // The whole C value set, used or not.
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
#[allow(dead_code)] // The whole C value set, used or not.
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
