// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! RoCEv2 invariant CRC (ICRC): which bytes it covers, which are masked, and its byte order.
//!
//! The CRC is CRC-32 (reflected polynomial 0xEDB88320) started from all ones
//! over 8 bytes of 0xff (a masked LRH that RoCEv2 does not carry), then the
//! IP header, UDP header and BTH with their variant fields set to all ones,
//! then the rest of the packet up to the ICRC. The inverted result goes on the
//! wire least-significant byte first, exactly like an Ethernet FCS; a packet
//! captured from a ConnectX-4 Lx is among the tests.
//!
//! The CRC primitive is pluggable; the host tests use [`crc32_le`]
//! (`super::crc32`), the driver the fastest the CPU offers. It takes and
//! returns the running value without any inversion, like the kernel's
//! `crc32_le`.
//!
//! A datagram whose IP header (IPv4 without options, or IPv6 without
//! extension headers), UDP header and transport packet lie in one buffer
//! ([`Frame`]) takes one masked CRC call from the IP header on: the masked
//! fields are ORed in by a constant [`Mask`] as the bytes are read, instead
//! of being copied into a masked pseudo-header first.

use super::crc32::{masked_with, Mask, MASK_LEN};
use super::headers::{BTH_LEN, ICRC_LEN};
use super::opcode::Opcode;

/// A running CRC-32 (reflected, polynomial 0xEDB88320) with no pre- or post-inversion,
/// i.e. the contract of the kernel's `crc32_le(crc, p, len)`.
pub(crate) trait Crc32 {
    fn update(&mut self, crc: u32, data: &[u8]) -> u32;

    /// [`Crc32::update`] over `data` with `mask` ORed into its first
    /// [`MASK_LEN`] bytes.
    fn update_masked(&mut self, crc: u32, data: &[u8], mask: &Mask) -> u32 {
        masked_with(crc, data, mask, |c, d| self.update(c, d))
    }
}

impl<F: FnMut(u32, &[u8]) -> u32> Crc32 for F {
    fn update(&mut self, crc: u32, data: &[u8]) -> u32 {
        self(crc, data)
    }
}

pub(crate) use super::crc32::crc32_le;

/// [`crc32_le`] as a [`Crc32`].
#[derive(Clone, Copy, Debug, Default)]
#[allow(dead_code)] // Used by the host tests only.
pub(crate) struct TableCrc32;

impl Crc32 for TableCrc32 {
    fn update(&mut self, crc: u32, data: &[u8]) -> u32 {
        crc32_le(crc, data)
    }
}

/// `crc32_le(!0, [0xff; 8])`: the all-ones start run over the masked LRH.
const SEED: u32 = 0xdebb_20e3;

const IPV4_MIN_LEN: usize = 20;
const IPV4_MAX_LEN: usize = 60;
const IPV6_LEN: usize = 40;
const UDP_LEN: usize = 8;
/// Largest masked prefix: IPv4 with options, UDP, BTH.
const PSEUDO_MAX: usize = IPV4_MAX_LEN + UDP_LEN + BTH_LEN;

/// The variant fields of IP, UDP and BTH headers in one buffer from the IP
/// header on, as a [`Mask`] (see [`pseudo_header`] for which they are).
const fn header_mask(v6: bool) -> Mask {
    let mut m = [0u8; MASK_LEN];
    let udp_at = if v6 {
        // Traffic class (the low nibble of byte 0, the high one of byte 1),
        // flow label, hop limit.
        m[0] = 0x0f;
        m[1] = 0xff;
        m[2] = 0xff;
        m[3] = 0xff;
        m[7] = 0xff;
        IPV6_LEN
    } else {
        // TOS, TTL, checksum.
        m[1] = 0xff;
        m[8] = 0xff;
        m[10] = 0xff;
        m[11] = 0xff;
        IPV4_MIN_LEN
    };
    m[udp_at + 6] = 0xff;
    m[udp_at + 7] = 0xff;
    m[udp_at + UDP_LEN + 4] = 0xff;
    Mask::new(m)
}

static IPV4_MASK: Mask = header_mask(false);
static IPV6_MASK: Mask = header_mask(true);

/// A RoCEv2 datagram in one buffer from its IP header on: the IP header
/// (IPv6: with its extension headers), the UDP header at `udp_at`, then
/// the transport packet, through its ICRC (or, for [`begin_frame`],
/// through its last header).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Frame<'a> {
    pub(crate) buf: &'a [u8],
    pub(crate) v6: bool,
    pub(crate) udp_at: usize,
}

impl<'a> Frame<'a> {
    /// The IP header, UDP header and transport packet.
    fn parts(&self) -> Result<(IpHdr<'a>, &'a [u8], &'a [u8]), IcrcError> {
        let ip = self.buf.get(..self.udp_at).ok_or(IcrcError::BadIpHeader)?;
        let udp = self
            .buf
            .get(self.udp_at..)
            .and_then(|b| b.get(..UDP_LEN))
            .ok_or(IcrcError::BadUdpHeader)?;
        let pkt = self
            .buf
            .get(self.udp_at + UDP_LEN..)
            .ok_or(IcrcError::TooShort)?;
        let ip = if self.v6 {
            IpHdr::V6(ip)
        } else {
            IpHdr::V4(ip)
        };
        Ok((ip, udp, pkt))
    }

    /// The mask for one CRC call over the whole buffer, and the BTH's
    /// offset, when the IP header is the one [`header_mask`] describes (no
    /// IPv4 options, no IPv6 extension headers) and the BTH is in the
    /// buffer.
    #[inline(always)]
    fn masked(&self) -> Option<(&'static Mask, usize)> {
        let (mask, ip_len) = if self.v6 {
            (&IPV6_MASK, IPV6_LEN)
        } else if self.buf.first()? & 0x0f == 5 {
            (&IPV4_MASK, IPV4_MIN_LEN)
        } else {
            return None;
        };
        let bth_at = ip_len + UDP_LEN;
        (self.udp_at == ip_len && self.buf.len() >= bth_at + BTH_LEN).then_some((mask, bth_at))
    }
}

/// The IP header in front of the UDP header, as it goes on the wire.
#[derive(Clone, Copy, Debug)]
pub(crate) enum IpHdr<'a> {
    /// At least IHL * 4 bytes; only those are covered.
    V4(&'a [u8]),
    /// At least the 40-byte fixed header; extension headers are not covered.
    V6(&'a [u8]),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IcrcError {
    /// IPv4 header shorter than its IHL, IHL below 5, or IPv6 header shorter than 40.
    BadIpHeader,
    /// Fewer than 8 UDP header bytes.
    BadUdpHeader,
    /// The transport packet cannot hold a BTH, its headers and an ICRC.
    TooShort,
}

/// Copies as many bytes as both slices have; callers size them equally.
fn copy(dst: &mut [u8], src: &[u8]) {
    let n = dst.len().min(src.len());
    if let (Some(d), Some(s)) = (dst.get_mut(..n), src.get(..n)) {
        d.copy_from_slice(s);
    }
}

/// Copies the `N` bytes of `src` to `dst` at `at`: a fixed-size move the
/// compiler inlines (a slice copy of unknown length calls `memcpy`, and
/// under an emulator every call costs several times a branch).
#[inline(always)]
fn put<const N: usize>(dst: &mut [u8], at: usize, src: &[u8; N]) -> Option<()> {
    *dst.get_mut(at..)?.first_chunk_mut::<N>()? = *src;
    Some(())
}

/// Sets the byte at `i` to all ones (a masked field).
#[inline(always)]
fn mask(buf: &mut [u8], i: usize) {
    if let Some(b) = buf.get_mut(i) {
        *b = 0xff;
    }
}

/// Builds the masked IP + UDP + BTH prefix into `out`, returning its length.
/// Called twice per packet (sent and received): it avoids library calls
/// (`fill`, `memcpy`) for the usual header sizes.
fn pseudo_header(
    ip: IpHdr<'_>,
    udp: &[u8],
    pkt: &[u8],
    out: &mut [u8; PSEUDO_MAX],
) -> Result<usize, IcrcError> {
    let ip_len = match ip {
        IpHdr::V4(h) => {
            let ihl = usize::from(h.first().ok_or(IcrcError::BadIpHeader)? & 0x0f) * 4;
            if ihl < IPV4_MIN_LEN || h.len() < ihl {
                return Err(IcrcError::BadIpHeader);
            }
            match h.first_chunk::<IPV4_MIN_LEN>() {
                Some(base) if ihl == IPV4_MIN_LEN => put(out, 0, base),
                _ => {
                    copy(out, h.get(..ihl).ok_or(IcrcError::BadIpHeader)?);
                    Some(())
                }
            }
            .ok_or(IcrcError::BadIpHeader)?;
            // Routers rewrite TOS (DSCP/ECN), TTL and so the checksum.
            mask(out, 1);
            mask(out, 8);
            mask(out, 10);
            mask(out, 11);
            ihl
        }
        IpHdr::V6(h) => {
            put(
                out,
                0,
                h.first_chunk::<IPV6_LEN>().ok_or(IcrcError::BadIpHeader)?,
            )
            .ok_or(IcrcError::BadIpHeader)?;
            // Traffic class (low nibble of byte 0 and high nibble of byte 1),
            // flow label and hop limit may change in flight; the version stays.
            if let Some(b) = out.first_mut() {
                *b |= 0x0f;
            }
            mask(out, 1);
            mask(out, 2);
            mask(out, 3);
            mask(out, 7);
            IPV6_LEN
        }
    };
    let udp_at = ip_len;
    let bth_at = udp_at + UDP_LEN;
    let end = bth_at + BTH_LEN;
    put(
        out,
        udp_at,
        udp.first_chunk::<UDP_LEN>()
            .ok_or(IcrcError::BadUdpHeader)?,
    )
    .ok_or(IcrcError::BadUdpHeader)?;
    // The UDP checksum is optional and may be rewritten.
    mask(out, udp_at + 6);
    mask(out, udp_at + 7);
    put(
        out,
        bth_at,
        pkt.first_chunk::<BTH_LEN>().ok_or(IcrcError::TooShort)?,
    )
    .ok_or(IcrcError::TooShort)?;
    // FECN, BECN and the reserved bits beside them are variant.
    mask(out, bth_at + 4);
    Ok(end)
}

/// Header length of the opcodes for which rdma_rxe 6.12 runs the CRC over the
/// header twice: RC_FLUSH and the RD ACKs have no payload offset in its opcode
/// table, so after the headers it restarts at the BTH (unmasked this time) and
/// runs to the ICRC. An unmodified C peer sends and expects exactly that.
fn rxe_rescanned_header(pkt: &[u8]) -> Option<usize> {
    // Compared as bytes: it runs on every packet, and the full opcode
    // decode is a call.
    pkt.first().and_then(rescanned).map(Opcode::header_len)
}

/// The opcode `b`, if rdma_rxe covers its headers twice.
#[inline(always)]
fn rescanned(&b: &u8) -> Option<Opcode> {
    [Opcode::RcFlush, Opcode::RdAck, Opcode::RdAtomicAck]
        .into_iter()
        .find(|op| op.bits() == b)
}

/// ICRC of `pkt` (BTH through the 4-byte ICRC slot, whose content is ignored).
/// With `rescan`, uses rdma_rxe's framing for the opcodes it covers twice.
fn compute_framed<C: Crc32>(
    crc: &mut C,
    ip: IpHdr<'_>,
    udp: &[u8],
    pkt: &[u8],
    rescan: bool,
) -> Result<u32, IcrcError> {
    let body_end = pkt
        .len()
        .checked_sub(ICRC_LEN)
        .filter(|&e| e >= BTH_LEN)
        .ok_or(IcrcError::TooShort)?;
    let mut pseudo = [0u8; PSEUDO_MAX];
    let n = pseudo_header(ip, udp, pkt, &mut pseudo)?;
    let mut c = crc.update(SEED, pseudo.get(..n).ok_or(IcrcError::TooShort)?);
    match rxe_rescanned_header(pkt).filter(|_| rescan) {
        Some(hdr_len) => {
            c = crc.update(c, pkt.get(BTH_LEN..hdr_len).ok_or(IcrcError::TooShort)?);
            c = crc.update(c, pkt.get(..body_end).ok_or(IcrcError::TooShort)?);
        }
        None => {
            c = crc.update(c, pkt.get(BTH_LEN..body_end).ok_or(IcrcError::TooShort)?);
        }
    }
    Ok(!c)
}

/// [`compute_framed`] over a [`Frame`]: one masked CRC call where the
/// headers allow it.
fn compute_frame_framed<C: Crc32>(
    crc: &mut C,
    f: Frame<'_>,
    rescan: bool,
) -> Result<u32, IcrcError> {
    if let Some((mask, bth_at)) = f.masked() {
        let covered_once = !rescan || f.buf.get(bth_at).and_then(rescanned).is_none();
        // `masked` checked that the buffer holds the BTH.
        let body = f.buf.len().saturating_sub(ICRC_LEN);
        if let (true, true, Some(body)) =
            (covered_once, body >= bth_at + BTH_LEN, f.buf.get(..body))
        {
            return Ok(!crc.update_masked(SEED, body, mask));
        }
    }
    compute_frame_split(crc, f, rescan)
}

/// [`compute_frame_framed`] through the split form: IP headers the mask
/// does not describe, the opcodes rdma_rxe covers twice, and errors.
#[inline(never)]
fn compute_frame_split<C: Crc32>(
    crc: &mut C,
    f: Frame<'_>,
    rescan: bool,
) -> Result<u32, IcrcError> {
    let (ip, udp, pkt) = f.parts()?;
    compute_framed(crc, ip, udp, pkt, rescan)
}

/// [`compute`] over a [`Frame`].
pub(crate) fn compute_frame<C: Crc32>(crc: &mut C, f: Frame<'_>) -> Result<u32, IcrcError> {
    compute_frame_framed(crc, f, true)
}

/// [`generate`] over a datagram in one buffer (see [`Frame`]).
pub(crate) fn generate_frame<C: Crc32>(
    crc: &mut C,
    buf: &mut [u8],
    v6: bool,
    udp_at: usize,
) -> Result<(), IcrcError> {
    let icrc = compute_frame(crc, Frame { buf, v6, udp_at })?;
    let at = buf.len().checked_sub(ICRC_LEN).ok_or(IcrcError::TooShort)?;
    let slot = buf
        .get_mut(at..)
        .and_then(|s| s.first_chunk_mut::<ICRC_LEN>())
        .ok_or(IcrcError::TooShort)?;
    *slot = icrc.to_le_bytes();
    Ok(())
}

/// [`icrc_ok`] over a [`Frame`].
pub(crate) fn icrc_ok_frame<C: Crc32>(crc: &mut C, f: Frame<'_>) -> bool {
    let Some(wire) = wire_icrc(f.buf) else {
        return false;
    };
    if compute_frame_framed(crc, f, true) == Ok(wire) {
        return true;
    }
    let Ok((_, _, pkt)) = f.parts() else {
        return false;
    };
    rxe_rescanned_header(pkt).is_some() && compute_frame_framed(crc, f, false) == Ok(wire)
}

/// [`begin`] over a [`Frame`] whose buffer ends with the last transport
/// header.
pub(crate) fn begin_frame<C: Crc32>(crc: &mut C, f: Frame<'_>) -> Result<Running, IcrcError> {
    let (ip, udp, hdr) = f.parts()?;
    match f.masked() {
        Some((mask, _)) => {
            if rxe_rescanned_header(hdr).is_some() {
                return Err(IcrcError::TooShort);
            }
            Ok(Running(crc.update_masked(SEED, f.buf, mask)))
        }
        None => begin(crc, ip, udp, hdr),
    }
}

/// ICRC of a RoCEv2 packet as rdma_rxe 6.12 computes it. `ip` and `udp` must be
/// final except for their masked fields; `pkt` runs from the BTH through the
/// ICRC slot (the UDP payload). The wire bytes are `value.to_le_bytes()`.
#[allow(dead_code)] // The split form: the host tests and fuzzers.
pub(crate) fn compute<C: Crc32>(
    crc: &mut C,
    ip: IpHdr<'_>,
    udp: &[u8],
    pkt: &[u8],
) -> Result<u32, IcrcError> {
    compute_framed(crc, ip, udp, pkt, true)
}

/// Fills the last four bytes of `pkt` with its ICRC.
#[allow(dead_code)] // The split form: the host tests and fuzzers.
pub(crate) fn generate<C: Crc32>(
    crc: &mut C,
    ip: IpHdr<'_>,
    udp: &[u8],
    pkt: &mut [u8],
) -> Result<(), IcrcError> {
    let icrc = compute(crc, ip, udp, pkt)?;
    let at = pkt.len().checked_sub(ICRC_LEN).ok_or(IcrcError::TooShort)?;
    let slot = pkt
        .get_mut(at..)
        .and_then(|s| s.first_chunk_mut::<ICRC_LEN>())
        .ok_or(IcrcError::TooShort)?;
    *slot = icrc.to_le_bytes();
    Ok(())
}

/// An ICRC being computed over a packet whose bytes come in pieces (a
/// payload in page fragments): [`begin`] takes the headers, [`Running::update`]
/// each later piece in order (payload, then pad), [`Running::finish`] gives
/// the value [`compute`] would give for the whole packet.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Running(u32);

/// Starts an ICRC over `hdr`, the BTH through the last extension header.
/// Refuses the opcodes rdma_rxe covers twice (none carries a payload).
pub(crate) fn begin<C: Crc32>(
    crc: &mut C,
    ip: IpHdr<'_>,
    udp: &[u8],
    hdr: &[u8],
) -> Result<Running, IcrcError> {
    if hdr.len() < BTH_LEN {
        return Err(IcrcError::TooShort);
    }
    if rxe_rescanned_header(hdr).is_some() {
        return Err(IcrcError::TooShort);
    }
    let mut pseudo = [0u8; PSEUDO_MAX];
    let n = pseudo_header(ip, udp, hdr, &mut pseudo)?;
    let c = crc.update(SEED, pseudo.get(..n).ok_or(IcrcError::TooShort)?);
    Ok(Running(crc.update(c, hdr.get(BTH_LEN..).unwrap_or(&[]))))
}

impl Running {
    pub(crate) fn update<C: Crc32>(&mut self, crc: &mut C, data: &[u8]) {
        // No call for the empty pad of a 4-byte-aligned payload.
        if !data.is_empty() {
            self.0 = crc.update(self.0, data);
        }
    }

    /// The ICRC; its wire bytes are `value.to_le_bytes()`.
    pub(crate) fn finish(self) -> u32 {
        !self.0
    }
}

/// The ICRC carried in the last four bytes of `pkt`.
pub(crate) fn wire_icrc(pkt: &[u8]) -> Option<u32> {
    let at = pkt.len().checked_sub(ICRC_LEN)?;
    pkt.get(at..)?
        .first_chunk::<ICRC_LEN>()
        .map(|b| u32::from_le_bytes(*b))
}

/// Checks the ICRC of a received packet. For the opcodes rdma_rxe frames
/// oddly, the spec's single-coverage framing is accepted as well, so peers of
/// either kind interoperate.
#[allow(dead_code)] // The split form: the host tests and fuzzers.
pub(crate) fn icrc_ok<C: Crc32>(crc: &mut C, ip: IpHdr<'_>, udp: &[u8], pkt: &[u8]) -> bool {
    let Some(wire) = wire_icrc(pkt) else {
        return false;
    };
    if compute_framed(crc, ip, udp, pkt, true) == Ok(wire) {
        return true;
    }
    rxe_rescanned_header(pkt).is_some() && compute_framed(crc, ip, udp, pkt, false) == Ok(wire)
}

#[cfg(test)]
#[path = "icrc_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "icrc_fuzz_tests.rs"]
mod fuzz;
