// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! IBTA transport opcodes as rxe handles them: per-opcode header layout and properties.
//!
//! The table covers exactly the opcodes rdma_rxe 6.12 knows (RC, UC, RD, UD); every
//! other opcode byte is unknown and its packets are dropped.

use core::ops::BitOr;

use super::headers::{
    AETH_LEN, ATMACK_LEN, ATMETH_LEN, BTH_LEN, DETH_LEN, FETH_LEN, IETH_LEN, IMMDT_LEN, RDETH_LEN,
    RETH_LEN,
};

/// Transport service of an opcode: the top three bits of the opcode byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Transport {
    Rc,
    Uc,
    Rd,
    Ud,
}

impl Transport {
    /// Service encoded in an opcode byte; `None` for CNP, vendor and reserved ranges.
    pub(crate) const fn of(opcode: u8) -> Option<Transport> {
        match opcode >> 5 {
            0 => Some(Transport::Rc),
            1 => Some(Transport::Uc),
            2 => Some(Transport::Rd),
            3 => Some(Transport::Ud),
            _ => None,
        }
    }
}

/// Extension headers that can follow the BTH, in the order rxe's table indexes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Hdr {
    Reth,
    Aeth,
    AtmEth,
    AtmAck,
    Ieth,
    Rdeth,
    Deth,
    ImmDt,
    Feth,
}

const HDR_COUNT: usize = 9;

impl Hdr {
    /// Bytes this header occupies on the wire.
    pub(crate) const fn len(self) -> usize {
        match self {
            Hdr::Reth => RETH_LEN,
            Hdr::Aeth => AETH_LEN,
            Hdr::AtmEth => ATMETH_LEN,
            Hdr::AtmAck => ATMACK_LEN,
            Hdr::Ieth => IETH_LEN,
            Hdr::Rdeth => RDETH_LEN,
            Hdr::Deth => DETH_LEN,
            Hdr::ImmDt => IMMDT_LEN,
            Hdr::Feth => FETH_LEN,
        }
    }

    /// The presence bit in [`Mask`].
    pub(crate) const fn mask(self) -> Mask {
        match self {
            Hdr::Reth => Mask::RETH,
            Hdr::Aeth => Mask::AETH,
            Hdr::AtmEth => Mask::ATMETH,
            Hdr::AtmAck => Mask::ATMACK,
            Hdr::Ieth => Mask::IETH,
            Hdr::Rdeth => Mask::RDETH,
            Hdr::Deth => Mask::DETH,
            Hdr::ImmDt => Mask::IMMDT,
            Hdr::Feth => Mask::FETH,
        }
    }
}

/// Properties of an opcode (and, for [`Mask::GRH`], of one received packet).
///
/// Bit positions follow rdma_rxe's `enum rxe_hdr_mask`, so a mask can be
/// compared with the C driver's numbers when debugging side by side.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Mask(u32);

impl Mask {
    pub(crate) const NONE: Mask = Mask(0);
    /// Never in the table: the receive path sets it on packets that came with an IP header.
    pub(crate) const GRH: Mask = Mask(1 << 1);
    pub(crate) const RETH: Mask = Mask(1 << 3);
    pub(crate) const AETH: Mask = Mask(1 << 4);
    pub(crate) const ATMETH: Mask = Mask(1 << 5);
    pub(crate) const ATMACK: Mask = Mask(1 << 6);
    pub(crate) const IETH: Mask = Mask(1 << 7);
    pub(crate) const RDETH: Mask = Mask(1 << 8);
    pub(crate) const DETH: Mask = Mask(1 << 9);
    pub(crate) const IMMDT: Mask = Mask(1 << 10);
    pub(crate) const FETH: Mask = Mask(1 << 11);
    /// The opcode may carry payload bytes after its headers.
    pub(crate) const PAYLOAD: Mask = Mask(1 << 12);
    /// Sent by a requester, handled by the responder.
    pub(crate) const REQ: Mask = Mask(1 << 13);
    /// Sent by a responder, handled by the completer.
    pub(crate) const ACK: Mask = Mask(1 << 14);
    pub(crate) const SEND: Mask = Mask(1 << 15);
    pub(crate) const WRITE: Mask = Mask(1 << 16);
    pub(crate) const READ: Mask = Mask(1 << 17);
    pub(crate) const ATOMIC: Mask = Mask(1 << 18);
    pub(crate) const FLUSH: Mask = Mask(1 << 19);
    /// The first packet of the message takes a receive WQE.
    pub(crate) const RWR: Mask = Mask(1 << 20);
    /// The message completes on the receive side with this packet.
    pub(crate) const COMP: Mask = Mask(1 << 21);
    pub(crate) const START: Mask = Mask(1 << 22);
    pub(crate) const MIDDLE: Mask = Mask(1 << 23);
    pub(crate) const END: Mask = Mask(1 << 24);
    pub(crate) const ATOMIC_WRITE: Mask = Mask(1 << 27);

    pub(crate) const READ_OR_ATOMIC: Mask = Mask::READ.union(Mask::ATOMIC);
    pub(crate) const WRITE_OR_SEND: Mask = Mask::WRITE.union(Mask::SEND);
    pub(crate) const READ_OR_WRITE: Mask = Mask::READ.union(Mask::WRITE);
    pub(crate) const RDMA_OP: Mask = Mask::READ_OR_WRITE
        .union(Mask::ATOMIC_WRITE)
        .union(Mask::FLUSH)
        .union(Mask::ATOMIC);
    /// Both message boundaries: a single-packet message.
    pub(crate) const ONLY: Mask = Mask::START.union(Mask::END);

    #[cfg(test)] // Only the host tests use it.
    pub(crate) const fn bits(self) -> u32 {
        self.0
    }

    pub(crate) const fn union(self, other: Mask) -> Mask {
        Mask(self.0 | other.0)
    }

    /// Every bit of `other` is set.
    pub(crate) const fn contains(self, other: Mask) -> bool {
        self.0 & other.0 == other.0
    }

    /// At least one bit of `other` is set.
    pub(crate) const fn intersects(self, other: Mask) -> bool {
        self.0 & other.0 != 0
    }
}

impl BitOr for Mask {
    type Output = Mask;

    fn bitor(self, rhs: Mask) -> Mask {
        self.union(rhs)
    }
}

/// Static description of one opcode: name, properties and header layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Info {
    pub(crate) name: &'static str,
    pub(crate) mask: Mask,
    /// BTH plus extension headers, i.e. where the payload starts.
    pub(crate) length: u8,
    /// Offset of each [`Hdr`] from the start of the BTH; 0 means absent
    /// (no extension header can sit at 0, the BTH is there).
    offsets: [u8; HDR_COUNT],
}

impl Info {
    const UNKNOWN: Info = Info {
        name: "UNKNOWN",
        mask: Mask::NONE,
        length: 0,
        offsets: [0; HDR_COUNT],
    };

    /// Lays out `hdrs` after the BTH in the given order and adds their presence bits.
    const fn new(name: &'static str, class: Mask, hdrs: &[Hdr]) -> Info {
        let mut offsets = [0u8; HDR_COUNT];
        let mut mask = class;
        let mut at = BTH_LEN;
        let mut i = 0;
        while i < hdrs.len() {
            let h = hdrs[i];
            // `Hdr` discriminants are 0..HDR_COUNT, the index of its offset.
            // Headers total at most 52 bytes, so the offset always fits a u8.
            offsets[h as usize] = at as u8;
            at += h.len();
            mask = mask.union(h.mask());
            i += 1;
        }
        Info {
            name,
            mask,
            length: at as u8,
            offsets,
        }
    }

    /// Offset of `hdr` from the start of the BTH, if this opcode carries it.
    pub(crate) fn offset(&self, hdr: Hdr) -> Option<usize> {
        match self.offsets.get(hdr as usize) {
            Some(&0) | None => None,
            Some(&off) => Some(usize::from(off)),
        }
    }

    /// Header length including the BTH; the payload (if any) starts here.
    pub(crate) fn header_len(&self) -> usize {
        usize::from(self.length)
    }
}

macro_rules! opcodes {
    ($( $variant:ident = $value:literal, $name:literal, $class:expr, [$($hdr:ident),*]; )*) => {
        /// A transport opcode that rxe knows. The discriminant is the wire value.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(u8)]
        pub(crate) enum Opcode {
            $( $variant = $value, )*
        }

        impl TryFrom<u8> for Opcode {
            type Error = UnknownOpcode;

            #[inline]
            fn try_from(value: u8) -> Result<Opcode, UnknownOpcode> {
                match value {
                    $( $value => Ok(Opcode::$variant), )*
                    _ => Err(UnknownOpcode(value)),
                }
            }
        }

        /// Every known opcode, in wire order.
        #[allow(dead_code)] // The whole opcode table, used or not.
        pub(crate) const ALL: &[Opcode] = &[ $( Opcode::$variant, )* ];

        /// Indexed by opcode byte; unknown bytes hold [`Info::UNKNOWN`].
        static TABLE: [Info; 256] = {
            let mut t = [Info::UNKNOWN; 256];
            $( t[$value] = Info::new($name, $class, &[$(Hdr::$hdr),*]); )*
            t
        };
    };
}

/// An opcode byte outside rxe's table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct UnknownOpcode(pub(crate) u8);

const SEND: Mask = Mask::REQ.union(Mask::SEND).union(Mask::PAYLOAD);
const WRITE: Mask = Mask::REQ.union(Mask::WRITE).union(Mask::PAYLOAD);
const READ_RESP: Mask = Mask::ACK.union(Mask::PAYLOAD);
const ATOMIC: Mask = Mask::REQ.union(Mask::ATOMIC).union(Mask::ONLY);
// Masks for the position of a packet inside its message.
const FIRST: Mask = Mask::START;
const MIDDLE: Mask = Mask::MIDDLE;
const LAST: Mask = Mask::END;
const ONLY: Mask = Mask::ONLY;
const RWR: Mask = Mask::RWR;
const COMP: Mask = Mask::COMP;

// Which messages take a receive WQE and complete on the receiver: sends always
// (WQE taken by the first packet, completion on the last), writes only when
// they carry immediate data (both on the packet that has the ImmDt).
opcodes! {
    RcSendFirst = 0x00, "RC_SEND_FIRST", SEND.union(FIRST).union(RWR), [];
    RcSendMiddle = 0x01, "RC_SEND_MIDDLE", SEND.union(MIDDLE), [];
    RcSendLast = 0x02, "RC_SEND_LAST", SEND.union(LAST).union(COMP), [];
    RcSendLastImm = 0x03, "RC_SEND_LAST_WITH_IMMEDIATE", SEND.union(LAST).union(COMP), [ImmDt];
    RcSendOnly = 0x04, "RC_SEND_ONLY", SEND.union(ONLY).union(RWR).union(COMP), [];
    RcSendOnlyImm = 0x05, "RC_SEND_ONLY_WITH_IMMEDIATE",
        SEND.union(ONLY).union(RWR).union(COMP), [ImmDt];
    RcWriteFirst = 0x06, "RC_RDMA_WRITE_FIRST", WRITE.union(FIRST), [Reth];
    RcWriteMiddle = 0x07, "RC_RDMA_WRITE_MIDDLE", WRITE.union(MIDDLE), [];
    RcWriteLast = 0x08, "RC_RDMA_WRITE_LAST", WRITE.union(LAST), [];
    RcWriteLastImm = 0x09, "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE",
        WRITE.union(LAST).union(RWR).union(COMP), [ImmDt];
    RcWriteOnly = 0x0a, "RC_RDMA_WRITE_ONLY", WRITE.union(ONLY), [Reth];
    RcWriteOnlyImm = 0x0b, "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE",
        WRITE.union(ONLY).union(RWR).union(COMP), [Reth, ImmDt];
    RcReadRequest = 0x0c, "RC_RDMA_READ_REQUEST", Mask::REQ.union(Mask::READ).union(ONLY), [Reth];
    RcReadResponseFirst = 0x0d, "RC_RDMA_READ_RESPONSE_FIRST", READ_RESP.union(FIRST), [Aeth];
    RcReadResponseMiddle = 0x0e, "RC_RDMA_READ_RESPONSE_MIDDLE", READ_RESP.union(MIDDLE), [];
    RcReadResponseLast = 0x0f, "RC_RDMA_READ_RESPONSE_LAST", READ_RESP.union(LAST), [Aeth];
    RcReadResponseOnly = 0x10, "RC_RDMA_READ_RESPONSE_ONLY", READ_RESP.union(ONLY), [Aeth];
    RcAck = 0x11, "RC_ACKNOWLEDGE", Mask::ACK.union(ONLY), [Aeth];
    RcAtomicAck = 0x12, "RC_ATOMIC_ACKNOWLEDGE", Mask::ACK.union(ONLY), [Aeth, AtmAck];
    RcCompareSwap = 0x13, "RC_COMPARE_SWAP", ATOMIC, [AtmEth];
    RcFetchAdd = 0x14, "RC_FETCH_ADD", ATOMIC, [AtmEth];
    RcSendLastInv = 0x16, "RC_SEND_LAST_WITH_INVALIDATE", SEND.union(LAST).union(COMP), [Ieth];
    RcSendOnlyInv = 0x17, "RC_SEND_ONLY_WITH_INVALIDATE",
        SEND.union(ONLY).union(RWR).union(COMP), [Ieth];
    RcFlush = 0x1c, "RC_FLUSH", Mask::REQ.union(Mask::FLUSH).union(ONLY), [Feth, Reth];
    RcAtomicWrite = 0x1d, "RC_ATOMIC_WRITE",
        Mask::REQ.union(Mask::ATOMIC_WRITE).union(Mask::PAYLOAD).union(ONLY), [Reth];

    UcSendFirst = 0x20, "UC_SEND_FIRST", SEND.union(FIRST).union(RWR), [];
    UcSendMiddle = 0x21, "UC_SEND_MIDDLE", SEND.union(MIDDLE), [];
    UcSendLast = 0x22, "UC_SEND_LAST", SEND.union(LAST).union(COMP), [];
    UcSendLastImm = 0x23, "UC_SEND_LAST_WITH_IMMEDIATE", SEND.union(LAST).union(COMP), [ImmDt];
    UcSendOnly = 0x24, "UC_SEND_ONLY", SEND.union(ONLY).union(RWR).union(COMP), [];
    UcSendOnlyImm = 0x25, "UC_SEND_ONLY_WITH_IMMEDIATE",
        SEND.union(ONLY).union(RWR).union(COMP), [ImmDt];
    UcWriteFirst = 0x26, "UC_RDMA_WRITE_FIRST", WRITE.union(FIRST), [Reth];
    UcWriteMiddle = 0x27, "UC_RDMA_WRITE_MIDDLE", WRITE.union(MIDDLE), [];
    UcWriteLast = 0x28, "UC_RDMA_WRITE_LAST", WRITE.union(LAST), [];
    UcWriteLastImm = 0x29, "UC_RDMA_WRITE_LAST_WITH_IMMEDIATE",
        WRITE.union(LAST).union(RWR).union(COMP), [ImmDt];
    UcWriteOnly = 0x2a, "UC_RDMA_WRITE_ONLY", WRITE.union(ONLY), [Reth];
    UcWriteOnlyImm = 0x2b, "UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE",
        WRITE.union(ONLY).union(RWR).union(COMP), [Reth, ImmDt];

    // RD is never accepted by a QP, but its layouts are kept so the packets parse.
    RdSendFirst = 0x40, "RD_SEND_FIRST", SEND.union(FIRST).union(RWR), [Rdeth, Deth];
    RdSendMiddle = 0x41, "RD_SEND_MIDDLE", SEND.union(MIDDLE), [Rdeth, Deth];
    RdSendLast = 0x42, "RD_SEND_LAST", SEND.union(LAST).union(COMP), [Rdeth, Deth];
    RdSendLastImm = 0x43, "RD_SEND_LAST_WITH_IMMEDIATE",
        SEND.union(LAST).union(COMP), [Rdeth, Deth, ImmDt];
    RdSendOnly = 0x44, "RD_SEND_ONLY", SEND.union(ONLY).union(RWR).union(COMP), [Rdeth, Deth];
    RdSendOnlyImm = 0x45, "RD_SEND_ONLY_WITH_IMMEDIATE",
        SEND.union(ONLY).union(RWR).union(COMP), [Rdeth, Deth, ImmDt];
    RdWriteFirst = 0x46, "RD_RDMA_WRITE_FIRST", WRITE.union(FIRST), [Rdeth, Deth, Reth];
    RdWriteMiddle = 0x47, "RD_RDMA_WRITE_MIDDLE", WRITE.union(MIDDLE), [Rdeth, Deth];
    RdWriteLast = 0x48, "RD_RDMA_WRITE_LAST", WRITE.union(LAST), [Rdeth, Deth];
    RdWriteLastImm = 0x49, "RD_RDMA_WRITE_LAST_WITH_IMMEDIATE",
        WRITE.union(LAST).union(RWR).union(COMP), [Rdeth, Deth, ImmDt];
    RdWriteOnly = 0x4a, "RD_RDMA_WRITE_ONLY", WRITE.union(ONLY), [Rdeth, Deth, Reth];
    RdWriteOnlyImm = 0x4b, "RD_RDMA_WRITE_ONLY_WITH_IMMEDIATE",
        WRITE.union(ONLY).union(RWR).union(COMP), [Rdeth, Deth, Reth, ImmDt];
    RdReadRequest = 0x4c, "RD_RDMA_READ_REQUEST",
        Mask::REQ.union(Mask::READ).union(ONLY), [Rdeth, Deth, Reth];
    RdReadResponseFirst = 0x4d, "RD_RDMA_READ_RESPONSE_FIRST",
        READ_RESP.union(FIRST), [Rdeth, Aeth];
    RdReadResponseMiddle = 0x4e, "RD_RDMA_READ_RESPONSE_MIDDLE", READ_RESP.union(MIDDLE), [Rdeth];
    RdReadResponseLast = 0x4f, "RD_RDMA_READ_RESPONSE_LAST", READ_RESP.union(LAST), [Rdeth, Aeth];
    RdReadResponseOnly = 0x50, "RD_RDMA_READ_RESPONSE_ONLY", READ_RESP.union(ONLY), [Rdeth, Aeth];
    RdAck = 0x51, "RD_ACKNOWLEDGE", Mask::ACK.union(ONLY), [Rdeth, Aeth];
    RdAtomicAck = 0x52, "RD_ATOMIC_ACKNOWLEDGE", Mask::ACK.union(ONLY), [Rdeth, Aeth, AtmAck];
    RdCompareSwap = 0x53, "RD_COMPARE_SWAP", ATOMIC, [Rdeth, Deth, AtmEth];
    RdFetchAdd = 0x54, "RD_FETCH_ADD", ATOMIC, [Rdeth, Deth, AtmEth];

    UdSendOnly = 0x64, "UD_SEND_ONLY", SEND.union(ONLY).union(RWR).union(COMP), [Deth];
    UdSendOnlyImm = 0x65, "UD_SEND_ONLY_WITH_IMMEDIATE",
        SEND.union(ONLY).union(RWR).union(COMP), [Deth, ImmDt];
}

impl Opcode {
    /// The wire byte.
    pub(crate) const fn bits(self) -> u8 {
        // A `repr(u8)` enum whose discriminants are the wire values.
        self as u8
    }

    pub(crate) fn info(self) -> &'static Info {
        // A u8 always indexes the 256-entry table; the fallback is unreachable.
        TABLE
            .get(usize::from(self.bits()))
            .unwrap_or(&Info::UNKNOWN)
    }

    pub(crate) fn transport(self) -> Transport {
        match Transport::of(self.bits()) {
            Some(t) => t,
            // Every opcode in the table lies in the RC/UC/RD/UD ranges.
            None => Transport::Rc,
        }
    }

    #[cfg(test)] // Only the host tests use it.
    pub(crate) fn name(self) -> &'static str {
        self.info().name
    }

    pub(crate) fn mask(self) -> Mask {
        self.info().mask
    }

    /// Shorthand for `self.mask().intersects(m)`.
    pub(crate) fn has(self, m: Mask) -> bool {
        self.mask().intersects(m)
    }

    /// Header bytes including the BTH; the payload starts here.
    pub(crate) fn header_len(self) -> usize {
        self.info().header_len()
    }

    /// Offset of `hdr` from the start of the BTH, if this opcode carries it.
    pub(crate) fn offset(self, hdr: Hdr) -> Option<usize> {
        self.info().offset(hdr)
    }
}

#[cfg(test)]
#[path = "opcode_tests.rs"]
mod tests;
