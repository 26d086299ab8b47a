// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Whole IB transport packets: [`parse`] checks a received one once (BTH
//! version, pad, length against its opcode's headers) into the
//! [`PacketInfo`] the receive path reads it through; [`pad_for`] and
//! [`packet_len`] size one to send. The header layouts are in
//! [`headers`](super::headers).

use super::headers::{
    read_ext, AtmEth, Bth, Deth, ExtHeader, Feth, Ieth, ImmDt, Reth, BTH_TVER, ICRC_LEN,
};
#[cfg(test)]
use super::headers::{Aeth, AtmAck};
use super::opcode::{Mask, Opcode};

/// Why a received IB transport packet was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ParseError {
    /// Shorter than a BTH.
    NoBth,
    /// Opcode byte outside rxe's table.
    UnknownOpcode(u8),
    /// Transport header version other than 0.
    BadTver(u8),
    /// Pad count on an opcode that carries no payload.
    BadPad(u8),
    /// Shorter than the opcode's headers plus pad plus ICRC.
    Truncated { need: usize, have: usize },
}

/// What the receive path needs to know about a packet, validated once.
///
/// Owns no bytes: accessors take the same slice that was parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PacketInfo {
    pub(crate) opcode: Opcode,
    /// The opcode's properties; callers may add [`Mask::GRH`].
    pub(crate) mask: Mask,
    pub(crate) bth: Bth,
    /// BTH through ICRC, i.e. the UDP payload length.
    pub(crate) paylen: usize,
    pub(crate) pad: usize,
    /// Payload bytes between the headers and the pad.
    pub(crate) payload_len: usize,
}

/// Parses an IB transport packet: `pkt` runs from the BTH to the end of the
/// ICRC, exactly the UDP payload (UDP length minus 8).
pub(crate) fn parse(pkt: &[u8]) -> Result<PacketInfo, ParseError> {
    let bth = Bth::parse(pkt).ok_or(ParseError::NoBth)?;
    let opcode = Opcode::try_from(bth.opcode).map_err(|e| ParseError::UnknownOpcode(e.0))?;
    if bth.tver != BTH_TVER {
        return Err(ParseError::BadTver(bth.tver));
    }
    // Pad exists to align payload; an opcode without payload never has any,
    // and rdma_rxe never sends one.
    if bth.pad != 0 && !opcode.has(Mask::PAYLOAD) {
        return Err(ParseError::BadPad(bth.pad));
    }
    let hdr = opcode.header_len();
    let pad = usize::from(bth.pad);
    // At most 52 + 3 + 4, so this cannot overflow.
    let need = hdr + pad + ICRC_LEN;
    let payload_len = pkt.len().checked_sub(need).ok_or(ParseError::Truncated {
        need,
        have: pkt.len(),
    })?;
    Ok(PacketInfo {
        opcode,
        mask: opcode.mask(),
        bth,
        paylen: pkt.len(),
        pad,
        payload_len,
    })
}

impl PacketInfo {
    pub(crate) fn psn(&self) -> u32 {
        self.bth.psn
    }

    pub(crate) fn qpn(&self) -> u32 {
        self.bth.qpn
    }

    #[cfg(test)] // Only the host tests use it.
    pub(crate) fn header_len(&self) -> usize {
        self.opcode.header_len()
    }

    /// Offset of the payload from the BTH.
    pub(crate) fn payload_offset(&self) -> usize {
        self.opcode.header_len()
    }

    /// Offset of the ICRC from the BTH.
    #[cfg(test)] // Only the host tests use it.
    pub(crate) fn icrc_offset(&self) -> usize {
        self.paylen.saturating_sub(ICRC_LEN)
    }

    /// The payload of `pkt`, which must be the slice this info was parsed from.
    pub(crate) fn payload<'a>(&self, pkt: &'a [u8]) -> Option<&'a [u8]> {
        let start = self.payload_offset();
        pkt.get(start..start.checked_add(self.payload_len)?)
    }

    /// Extension header `H`, if the opcode carries it.
    pub(crate) fn ext<H: ExtHeader>(&self, pkt: &[u8]) -> Option<H> {
        read_ext(self.opcode, pkt)
    }

    pub(crate) fn reth(&self, pkt: &[u8]) -> Option<Reth> {
        self.ext(pkt)
    }

    #[cfg(test)] // Only the host tests use it.
    pub(crate) fn aeth(&self, pkt: &[u8]) -> Option<Aeth> {
        self.ext(pkt)
    }

    pub(crate) fn atmeth(&self, pkt: &[u8]) -> Option<AtmEth> {
        self.ext(pkt)
    }

    #[cfg(test)] // Only the host tests use it.
    pub(crate) fn atmack(&self, pkt: &[u8]) -> Option<AtmAck> {
        self.ext(pkt)
    }

    pub(crate) fn immdt(&self, pkt: &[u8]) -> Option<ImmDt> {
        self.ext(pkt)
    }

    pub(crate) fn ieth(&self, pkt: &[u8]) -> Option<Ieth> {
        self.ext(pkt)
    }

    pub(crate) fn deth(&self, pkt: &[u8]) -> Option<Deth> {
        self.ext(pkt)
    }

    pub(crate) fn feth(&self, pkt: &[u8]) -> Option<Feth> {
        self.ext(pkt)
    }
}

/// Pad bytes needed after `payload_len` bytes of payload.
pub(crate) fn pad_for(payload_len: usize) -> u8 {
    // Two's-complement low bits give the distance to the next multiple of 4.
    (payload_len.wrapping_neg() & 0x3) as u8
}

/// UDP payload length of a packet with opcode `op` carrying `payload_len` bytes:
/// headers, payload, pad and ICRC. `None` on overflow.
pub(crate) fn packet_len(op: Opcode, payload_len: usize) -> Option<usize> {
    op.header_len()
        .checked_add(payload_len)?
        .checked_add(usize::from(pad_for(payload_len)))?
        .checked_add(ICRC_LEN)
}

#[cfg(test)]
#[path = "packet_tests.rs"]
mod tests;
