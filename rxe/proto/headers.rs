// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! IB transport header layouts: the BTH and the extension headers. Whole
//! packets are parsed and sized in [`packet`](super::packet).
//!
//! Headers are decoded into small `Copy` structs and encoded back into byte
//! slices, all big-endian. Nothing here trusts a length: every read and write
//! goes through bounds-checked slice accessors and reports a short buffer.

use super::opcode::{Hdr, Opcode};

pub(crate) const BTH_LEN: usize = 12;
pub(crate) const RETH_LEN: usize = 16;
pub(crate) const AETH_LEN: usize = 4;
pub(crate) const ATMETH_LEN: usize = 28;
pub(crate) const ATMACK_LEN: usize = 8;
pub(crate) const IMMDT_LEN: usize = 4;
pub(crate) const IETH_LEN: usize = 4;
pub(crate) const DETH_LEN: usize = 8;
pub(crate) const RDETH_LEN: usize = 4;
pub(crate) const FETH_LEN: usize = 4;
pub(crate) const ICRC_LEN: usize = 4;

/// The only transport header version IBTA defines.
pub(crate) const BTH_TVER: u8 = 0;
/// Full-membership default partition, the only one rxe uses.
#[allow(dead_code)] // The nettest build (`cfg(rxe_nettest)`) uses it.
pub(crate) const DEFAULT_PKEY: u16 = 0xffff;
/// Q_Key of the GSI QP (QP1).
pub(crate) const GSI_QKEY: u32 = 0x8001_0000;
/// QPN value addressing a multicast group.
pub(crate) const MULTICAST_QPN: u32 = 0x00ff_ffff;

const QPN_MASK: u32 = 0x00ff_ffff;
const PSN_MASK: u32 = 0x00ff_ffff;

/// Why a header could not be written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WriteError {
    /// The destination ends before the header does.
    TooShort,
    /// The opcode's layout has no such header.
    NotCarried,
}

fn get<const N: usize>(buf: &[u8], off: usize) -> Option<[u8; N]> {
    buf.get(off..)?.first_chunk::<N>().copied()
}

fn be16(buf: &[u8], off: usize) -> Option<u16> {
    get(buf, off).map(u16::from_be_bytes)
}

fn be32(buf: &[u8], off: usize) -> Option<u32> {
    get(buf, off).map(u32::from_be_bytes)
}

fn be64(buf: &[u8], off: usize) -> Option<u64> {
    get(buf, off).map(u64::from_be_bytes)
}

fn put<const N: usize>(buf: &mut [u8], off: usize, bytes: [u8; N]) -> Result<(), WriteError> {
    let dst = buf
        .get_mut(off..)
        .and_then(|b| b.first_chunk_mut::<N>())
        .ok_or(WriteError::TooShort)?;
    *dst = bytes;
    Ok(())
}

/// Checks the whole header fits before any byte is written, so a failed
/// write never leaves a half-updated header behind.
fn room(buf: &[u8], len: usize) -> Result<(), WriteError> {
    if buf.len() < len {
        Err(WriteError::TooShort)
    } else {
        Ok(())
    }
}

/// Base Transport Header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Bth {
    /// Raw opcode byte; [`packet::parse`](super::packet::parse) checks it against the table.
    pub(crate) opcode: u8,
    /// Solicited event.
    pub(crate) se: bool,
    pub(crate) mig: bool,
    /// Pad bytes (0..=3) after the payload.
    pub(crate) pad: u8,
    pub(crate) tver: u8,
    pub(crate) pkey: u16,
    pub(crate) fecn: bool,
    pub(crate) becn: bool,
    /// Six reserved bits next to FECN/BECN.
    pub(crate) resv6a: u8,
    /// Destination QP, 24 bits.
    pub(crate) qpn: u32,
    pub(crate) ack_req: bool,
    /// Seven reserved bits next to AckReq.
    pub(crate) resv7: u8,
    /// 24 bits.
    pub(crate) psn: u32,
}

impl Bth {
    /// A BTH for `opcode` with every flag clear and tver 0.
    pub(crate) fn new(opcode: Opcode, pkey: u16, qpn: u32, psn: u32) -> Bth {
        Bth {
            opcode: opcode.bits(),
            pkey,
            qpn: qpn & QPN_MASK,
            psn: psn & PSN_MASK,
            ..Bth::default()
        }
    }

    pub(crate) fn parse(buf: &[u8]) -> Option<Bth> {
        let [opcode, flags] = get::<2>(buf, 0)?;
        let qpn_word = be32(buf, 4)?;
        let psn_word = be32(buf, 8)?;
        // The top byte of each word holds flags; the masks keep the casts lossless.
        let qpn_hi = (qpn_word >> 24) as u8;
        let psn_hi = (psn_word >> 24) as u8;
        Some(Bth {
            opcode,
            se: flags & 0x80 != 0,
            mig: flags & 0x40 != 0,
            pad: (flags >> 4) & 0x3,
            tver: flags & 0x0f,
            pkey: be16(buf, 2)?,
            fecn: qpn_hi & 0x80 != 0,
            becn: qpn_hi & 0x40 != 0,
            resv6a: qpn_hi & 0x3f,
            qpn: qpn_word & QPN_MASK,
            ack_req: psn_hi & 0x80 != 0,
            resv7: psn_hi & 0x7f,
            psn: psn_word & PSN_MASK,
        })
    }

    /// Encodes into the first [`BTH_LEN`] bytes; out-of-range fields are truncated to their width.
    pub(crate) fn write(&self, buf: &mut [u8]) -> Result<(), WriteError> {
        room(buf, BTH_LEN)?;
        let flags = (u8::from(self.se) << 7)
            | (u8::from(self.mig) << 6)
            | ((self.pad & 0x3) << 4)
            | (self.tver & 0x0f);
        let qpn_hi = (u8::from(self.fecn) << 7) | (u8::from(self.becn) << 6) | (self.resv6a & 0x3f);
        let psn_hi = (u8::from(self.ack_req) << 7) | (self.resv7 & 0x7f);
        put(buf, 0, [self.opcode, flags])?;
        put(buf, 2, self.pkey.to_be_bytes())?;
        put(
            buf,
            4,
            ((u32::from(qpn_hi) << 24) | (self.qpn & QPN_MASK)).to_be_bytes(),
        )?;
        put(
            buf,
            8,
            ((u32::from(psn_hi) << 24) | (self.psn & PSN_MASK)).to_be_bytes(),
        )
    }
}

/// Sets or clears the AckReq bit of the BTH that starts `pkt`, leaving
/// every other bit as it is.
pub(crate) fn set_ack_req(pkt: &mut [u8], on: bool) -> Result<(), WriteError> {
    let mut bth = Bth::parse(pkt).ok_or(WriteError::TooShort)?;
    bth.ack_req = on;
    bth.write(pkt)
}

/// An extension header: its kind in the opcode table and its codec.
pub(crate) trait ExtHeader: Sized {
    const KIND: Hdr;

    /// Decodes from the start of `buf`.
    fn parse(buf: &[u8]) -> Option<Self>;

    /// Encodes into the start of `buf`.
    fn write(&self, buf: &mut [u8]) -> Result<(), WriteError>;
}

/// Reads header `H` of a packet (starting at its BTH) with opcode `op`.
pub(crate) fn read_ext<H: ExtHeader>(op: Opcode, pkt: &[u8]) -> Option<H> {
    H::parse(pkt.get(op.offset(H::KIND)?..)?)
}

/// Writes header `H` into a packet (starting at its BTH) with opcode `op`.
pub(crate) fn write_ext<H: ExtHeader>(
    op: Opcode,
    pkt: &mut [u8],
    hdr: &H,
) -> Result<(), WriteError> {
    let off = op.offset(H::KIND).ok_or(WriteError::NotCarried)?;
    hdr.write(pkt.get_mut(off..).ok_or(WriteError::TooShort)?)
}

/// RDMA Extended Transport Header: the remote buffer of a write, read, flush or atomic write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Reth {
    pub(crate) va: u64,
    pub(crate) rkey: u32,
    pub(crate) len: u32,
}

impl ExtHeader for Reth {
    const KIND: Hdr = Hdr::Reth;

    fn parse(buf: &[u8]) -> Option<Reth> {
        Some(Reth {
            va: be64(buf, 0)?,
            rkey: be32(buf, 8)?,
            len: be32(buf, 12)?,
        })
    }

    fn write(&self, buf: &mut [u8]) -> Result<(), WriteError> {
        room(buf, RETH_LEN)?;
        put(buf, 0, self.va.to_be_bytes())?;
        put(buf, 8, self.rkey.to_be_bytes())?;
        put(buf, 12, self.len.to_be_bytes())
    }
}

/// ACK Extended Transport Header. Decode the syndrome with `wire::Syndrome`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Aeth {
    pub(crate) syndrome: u8,
    /// Message sequence number, 24 bits.
    pub(crate) msn: u32,
}

impl ExtHeader for Aeth {
    const KIND: Hdr = Hdr::Aeth;

    fn parse(buf: &[u8]) -> Option<Aeth> {
        let [syndrome, a, b, c] = get::<4>(buf, 0)?;
        Some(Aeth {
            syndrome,
            msn: u32::from_be_bytes([0, a, b, c]),
        })
    }

    fn write(&self, buf: &mut [u8]) -> Result<(), WriteError> {
        let [_, a, b, c] = (self.msn & 0x00ff_ffff).to_be_bytes();
        put(buf, 0, [self.syndrome, a, b, c])
    }
}

/// Atomic Extended Transport Header (compare-and-swap, fetch-and-add). Packed: 28 bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct AtmEth {
    pub(crate) va: u64,
    pub(crate) rkey: u32,
    /// Swap value for compare-and-swap, addend for fetch-and-add.
    pub(crate) swap_add: u64,
    pub(crate) compare: u64,
}

impl ExtHeader for AtmEth {
    const KIND: Hdr = Hdr::AtmEth;

    fn parse(buf: &[u8]) -> Option<AtmEth> {
        Some(AtmEth {
            va: be64(buf, 0)?,
            rkey: be32(buf, 8)?,
            swap_add: be64(buf, 12)?,
            compare: be64(buf, 20)?,
        })
    }

    fn write(&self, buf: &mut [u8]) -> Result<(), WriteError> {
        room(buf, ATMETH_LEN)?;
        put(buf, 0, self.va.to_be_bytes())?;
        put(buf, 8, self.rkey.to_be_bytes())?;
        put(buf, 12, self.swap_add.to_be_bytes())?;
        put(buf, 20, self.compare.to_be_bytes())
    }
}

/// Atomic ACK Extended Transport Header: the value found at the target before the atomic.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct AtmAck {
    pub(crate) orig: u64,
}

impl ExtHeader for AtmAck {
    const KIND: Hdr = Hdr::AtmAck;

    fn parse(buf: &[u8]) -> Option<AtmAck> {
        Some(AtmAck {
            orig: be64(buf, 0)?,
        })
    }

    fn write(&self, buf: &mut [u8]) -> Result<(), WriteError> {
        put(buf, 0, self.orig.to_be_bytes())
    }
}

/// Immediate data, kept as the four wire bytes: verbs hands it to user space
/// in network order (`__be32 imm_data`), so it is never byte-swapped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ImmDt(pub(crate) [u8; 4]);

impl ExtHeader for ImmDt {
    const KIND: Hdr = Hdr::ImmDt;

    fn parse(buf: &[u8]) -> Option<ImmDt> {
        get(buf, 0).map(ImmDt)
    }

    fn write(&self, buf: &mut [u8]) -> Result<(), WriteError> {
        put(buf, 0, self.0)
    }
}

/// Invalidate Extended Transport Header: the rkey a SEND_WITH_INV invalidates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Ieth {
    pub(crate) rkey: u32,
}

impl ExtHeader for Ieth {
    const KIND: Hdr = Hdr::Ieth;

    fn parse(buf: &[u8]) -> Option<Ieth> {
        Some(Ieth {
            rkey: be32(buf, 0)?,
        })
    }

    fn write(&self, buf: &mut [u8]) -> Result<(), WriteError> {
        put(buf, 0, self.rkey.to_be_bytes())
    }
}

/// Datagram Extended Transport Header (UD, RD).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Deth {
    pub(crate) qkey: u32,
    /// Source QP, 24 bits; the byte above it is reserved.
    pub(crate) src_qpn: u32,
}

impl ExtHeader for Deth {
    const KIND: Hdr = Hdr::Deth;

    fn parse(buf: &[u8]) -> Option<Deth> {
        Some(Deth {
            qkey: be32(buf, 0)?,
            src_qpn: be32(buf, 4)? & QPN_MASK,
        })
    }

    fn write(&self, buf: &mut [u8]) -> Result<(), WriteError> {
        room(buf, DETH_LEN)?;
        put(buf, 0, self.qkey.to_be_bytes())?;
        put(buf, 4, (self.src_qpn & QPN_MASK).to_be_bytes())
    }
}

/// Reliable Datagram Extended Transport Header (RD only, which rxe rejects).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[allow(dead_code)] // Every extension header of the opcode table, used or not.
pub(crate) struct Rdeth {
    /// End-to-end context, 24 bits.
    pub(crate) een: u32,
}

impl ExtHeader for Rdeth {
    const KIND: Hdr = Hdr::Rdeth;

    fn parse(buf: &[u8]) -> Option<Rdeth> {
        Some(Rdeth {
            een: be32(buf, 0)? & 0x00ff_ffff,
        })
    }

    fn write(&self, buf: &mut [u8]) -> Result<(), WriteError> {
        put(buf, 0, (self.een & 0x00ff_ffff).to_be_bytes())
    }
}

/// FLUSH placement type bit: make the data globally visible.
pub(crate) const FLUSH_GLOBAL: u8 = 1 << 0;
/// FLUSH placement type bit: make the data persistent.
pub(crate) const FLUSH_PERSISTENT: u8 = 1 << 1;

/// What a FLUSH covers (the FETH selectivity level).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
#[allow(dead_code)] // The whole C value set, used or not.
pub(crate) enum FlushLevel {
    /// The RETH's va/len range.
    Range = 0,
    /// The whole memory region named by the RETH's rkey.
    Mr = 1,
}

impl TryFrom<u8> for FlushLevel {
    type Error = u8;

    fn try_from(v: u8) -> Result<FlushLevel, u8> {
        match v {
            0 => Ok(FlushLevel::Range),
            1 => Ok(FlushLevel::Mr),
            other => Err(other),
        }
    }
}

/// Flush Extended Transport Header: placement type in bits 3..0, selectivity in bits 5..4.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Feth {
    /// [`FLUSH_GLOBAL`] | [`FLUSH_PERSISTENT`]; 4 bits.
    pub(crate) ptype: u8,
    /// Raw selectivity level, 2 bits; see [`FlushLevel`].
    pub(crate) level: u8,
}

impl Feth {
    #[cfg(test)] // Only the host tests use it.
    pub(crate) fn flush_level(self) -> Result<FlushLevel, u8> {
        FlushLevel::try_from(self.level)
    }
}

impl ExtHeader for Feth {
    const KIND: Hdr = Hdr::Feth;

    fn parse(buf: &[u8]) -> Option<Feth> {
        let bits = be32(buf, 0)?;
        // Both fields sit in the low byte; the masks make the casts lossless.
        Some(Feth {
            ptype: (bits & 0x0f) as u8,
            level: ((bits >> 4) & 0x3) as u8,
        })
    }

    fn write(&self, buf: &mut [u8]) -> Result<(), WriteError> {
        let bits = u32::from(self.ptype & 0x0f) | (u32::from(self.level & 0x3) << 4);
        put(buf, 0, bits.to_be_bytes())
    }
}

#[cfg(test)]
#[path = "headers_tests.rs"]
mod tests;
