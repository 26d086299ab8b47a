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
mod tests {
    use super::super::packet::parse;
    use super::*;

    use super::super::crc32::tests::bitwise as crc_bitwise;

    /// The driver's method on the host: the PCLMULQDQ fold with its mask
    /// for buffers of 16 bytes and more, the tables below.
    #[cfg(target_arch = "x86_64")]
    pub(super) struct FoldCrc32;

    #[cfg(target_arch = "x86_64")]
    impl Crc32 for FoldCrc32 {
        fn update(&mut self, crc: u32, data: &[u8]) -> u32 {
            self.update_masked(crc, data, &Mask::NONE)
        }

        fn update_masked(&mut self, crc: u32, data: &[u8], mask: &Mask) -> u32 {
            // SAFETY: the caller checked the CPU (`fold_available`), and the
            // 256-bit loop runs where the CPU has it; the host owns its
            // vector registers.
            unsafe { crate::clmul::crc32(crc, data, mask, wide_available()) }
                .unwrap_or_else(|| super::super::crc32::crc32_masked(crc, data, mask))
        }
    }

    #[cfg(target_arch = "x86_64")]
    fn wide_available() -> bool {
        std::is_x86_feature_detected!("vpclmulqdq") && std::is_x86_feature_detected!("avx2")
    }

    #[cfg(target_arch = "x86_64")]
    pub(super) fn fold_available() -> bool {
        std::is_x86_feature_detected!("pclmulqdq") && std::is_x86_feature_detected!("ssse3")
    }

    /// `ip`, `udp` and `pkt` in one buffer.
    pub(super) fn joined(ip: &[u8], udp: &[u8], pkt: &[u8]) -> std::vec::Vec<u8> {
        [ip, udp, pkt].concat()
    }

    /// The [`Frame`] forms agree with the split ones, with the table CRC
    /// and (where the CPU has it) with the fold, and `begin_frame` with
    /// the pieces after it equals the whole.
    pub(super) fn check_frame(ip: IpHdr<'_>, udp: &[u8], pkt: &[u8], hdr_len: Option<usize>) {
        let (v6, iph) = match ip {
            IpHdr::V4(h) => (false, h),
            IpHdr::V6(h) => (true, h),
        };
        let buf = joined(iph, udp, pkt);
        let f = Frame {
            buf: &buf,
            v6,
            udp_at: iph.len(),
        };
        let want = compute(&mut TableCrc32, ip, udp, pkt);
        let ok = icrc_ok(&mut TableCrc32, ip, udp, pkt);
        assert_eq!(compute_frame(&mut TableCrc32, f).ok(), want.ok());
        assert_eq!(icrc_ok_frame(&mut TableCrc32, f), ok);
        #[cfg(target_arch = "x86_64")]
        if fold_available() {
            assert_eq!(compute_frame(&mut FoldCrc32, f).ok(), want.ok());
            assert_eq!(icrc_ok_frame(&mut FoldCrc32, f), ok);
            assert_eq!(compute(&mut FoldCrc32, ip, udp, pkt).ok(), want.ok());
        }
        let (Ok(want), Some(hdr_len)) = (want, hdr_len) else {
            return;
        };
        if rxe_rescanned_header(pkt).is_some() {
            return;
        }
        let body = &pkt[hdr_len..pkt.len() - ICRC_LEN];
        let hf = Frame {
            buf: &buf[..iph.len() + UDP_LEN + hdr_len],
            ..f
        };
        let cut = body.len() / 3;
        let mut r = begin_frame(&mut TableCrc32, hf).unwrap();
        r.update(&mut TableCrc32, &body[..cut]);
        r.update(&mut TableCrc32, &body[cut..]);
        assert_eq!(r.finish(), want);
        #[cfg(target_arch = "x86_64")]
        if fold_available() {
            let mut r = begin_frame(&mut FoldCrc32, hf).unwrap();
            r.update(&mut FoldCrc32, &body[..cut]);
            r.update(&mut FoldCrc32, &body[cut..]);
            assert_eq!(r.finish(), want);
        }
    }

    fn hex(s: &str) -> std::vec::Vec<u8> {
        let s: std::string::String = s.chars().filter(|c| !c.is_whitespace()).collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn crc_primitive() {
        // zlib/IEEE check value of "123456789", which is the inverted crc32_le.
        assert_eq!(!crc32_le(!0, b"123456789"), 0xcbf4_3926);
        assert_eq!(crc32_le(!0, &[0xff; 8]), SEED);
        let mut x = 7u32;
        let data: std::vec::Vec<u8> = (0..1000)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                (x >> 16) as u8
            })
            .collect();
        assert_eq!(
            crc32_le(0x1234_5678, &data),
            crc_bitwise(0x1234_5678, &data)
        );
        // Splitting the input does not change the result.
        let (a, b) = data.split_at(333);
        assert_eq!(crc32_le(crc32_le(!0, a), b), crc32_le(!0, &data));
    }

    /// RoCEv2 CNP captured on a ConnectX-4 Lx (IPv4 from the IP header on), as
    /// published with scapy's RoCE tests. Checks the masking and byte order
    /// against real hardware.
    #[test]
    fn hardware_captured_cnp() {
        let frame = hex("45c2003c718c4000401191610a0011010a001201000012b700280000\
             8100ffff400001180000000000000000000000000000000000000000\
             82fd002a");
        let (ip, rest) = frame.split_at(20);
        let (udp, pkt) = rest.split_at(8);
        let mut crc = TableCrc32;
        assert_eq!(compute(&mut crc, IpHdr::V4(ip), udp, pkt), Ok(0x2a00_fd82));
        assert!(icrc_ok(&mut crc, IpHdr::V4(ip), udp, pkt));
        assert_eq!(&pkt[pkt.len() - 4..], &[0x82, 0xfd, 0x00, 0x2a]);
        check_frame(IpHdr::V4(ip), udp, pkt, Some(BTH_LEN + 16));
        #[cfg(target_arch = "x86_64")]
        if fold_available() {
            let f = Frame {
                buf: &frame,
                v6: false,
                udp_at: 20,
            };
            assert!(icrc_ok_frame(&mut FoldCrc32, f));
            assert_eq!(compute_frame(&mut FoldCrc32, f), Ok(0x2a00_fd82));
        }
    }

    // Expected values below come from Python's zlib.crc32 over 8 x 0xff and the
    // masked headers, written independently of this file.
    const IP4: &str = "4502003c04d240004011beefc0a80101c0a80102";
    const UDP: &str = "c0de12b700281234";
    const IB: &str = "04b0ffff8000001180123456536f66742d526f4345204b4154000000";
    const IP6: &str = "6123456700281140202122232425262728292a2b2c2d2e2f\
                       404142434445464748494a4b4c4d4e4f";

    fn packet(ib: &str) -> std::vec::Vec<u8> {
        let mut pkt = hex(ib);
        pkt.extend_from_slice(&[0; ICRC_LEN]);
        pkt
    }

    #[test]
    fn known_answer_ipv4() {
        let (ip, udp) = (hex(IP4), hex(UDP));
        let mut pkt = packet(IB);
        let mut crc = TableCrc32;
        generate(&mut crc, IpHdr::V4(&ip), &udp, &mut pkt).unwrap();
        assert_eq!(wire_icrc(&pkt), Some(0x5963_bbf6));
        assert_eq!(&pkt[pkt.len() - 4..], &[0xf6, 0xbb, 0x63, 0x59]);
        assert!(icrc_ok(&mut crc, IpHdr::V4(&ip), &udp, &pkt));
        // The packet parses and the ICRC sits where the parser says.
        let pi = parse(&pkt).unwrap();
        assert_eq!(pi.icrc_offset(), pkt.len() - 4);
        assert_eq!(pi.payload(&pkt), Some(&b"Soft-RoCE KAT"[..]));
        check_frame(IpHdr::V4(&ip), &udp, &pkt, Some(BTH_LEN));
        let mut buf = joined(&ip, &udp, &pkt);
        let at = buf.len() - ICRC_LEN;
        buf[at..].fill(0);
        generate_frame(&mut TableCrc32, &mut buf, false, 20).unwrap();
        assert_eq!(&buf[at..], &[0xf6, 0xbb, 0x63, 0x59]);
    }

    /// The piecewise ICRC of a packet split anywhere after its headers
    /// equals the one over the whole packet.
    #[test]
    fn pieces_match_the_whole() {
        let (ip, udp) = (hex(IP4), hex(UDP));
        let pkt = packet(IB);
        let mut crc = TableCrc32;
        let whole = compute(&mut crc, IpHdr::V4(&ip), &udp, &pkt).unwrap();
        let pi = parse(&pkt).unwrap();
        let hdr_len = pi.icrc_offset() - pi.payload(&pkt).unwrap().len() - pi.pad;
        let body = &pkt[hdr_len..pkt.len() - ICRC_LEN];
        for cut in 0..=body.len() {
            let mut r = begin(&mut crc, IpHdr::V4(&ip), &udp, &pkt[..hdr_len]).unwrap();
            r.update(&mut crc, &body[..cut]);
            r.update(&mut crc, &body[cut..]);
            assert_eq!(r.finish(), whole);
        }
        // Too short a header, and the opcodes covered twice, are refused.
        assert!(begin(&mut crc, IpHdr::V4(&ip), &udp, &pkt[..BTH_LEN - 1]).is_err());
        let mut flush = pkt.clone();
        flush[0] = Opcode::RcFlush as u8;
        assert!(begin(&mut crc, IpHdr::V4(&ip), &udp, &flush[..hdr_len]).is_err());
    }

    #[test]
    fn known_answer_ipv6() {
        let (ip, udp) = (hex(IP6), hex(UDP));
        let pkt = packet(IB);
        let mut crc = |c: u32, d: &[u8]| crc_bitwise(c, d);
        assert_eq!(
            compute(&mut crc, IpHdr::V6(&ip), &udp, &pkt),
            Ok(0xf434_60d8)
        );
        let buf = joined(&ip, &udp, &pkt);
        let f = Frame {
            buf: &buf,
            v6: true,
            udp_at: 40,
        };
        assert_eq!(compute_frame(&mut crc, f), Ok(0xf434_60d8));
        #[cfg(target_arch = "x86_64")]
        if fold_available() {
            assert_eq!(compute_frame(&mut FoldCrc32, f), Ok(0xf434_60d8));
        }
        check_frame(IpHdr::V6(&ip), &udp, &pkt, Some(BTH_LEN));
        // An extension header between the IPv6 and UDP headers is not
        // covered.
        let mut ext = ip.clone();
        ext.extend_from_slice(&[17, 0, 1, 4, 0, 0, 0, 0]);
        let buf = joined(&ext, &udp, &pkt);
        let f = Frame {
            buf: &buf,
            v6: true,
            udp_at: 48,
        };
        assert_eq!(compute_frame(&mut crc, f), Ok(0xf434_60d8));
    }

    #[test]
    fn variant_fields_are_masked_and_others_are_not() {
        let (ip, udp) = (hex(IP4), hex(UDP));
        let pkt = packet(IB);
        let mut crc = TableCrc32;
        let base = compute(&mut crc, IpHdr::V4(&ip), &udp, &pkt).unwrap();
        for (i, variant) in [
            (1, true),
            (8, true),
            (10, true),
            (11, true),
            (9, false),
            (15, false),
        ] {
            let mut ip2 = ip.clone();
            ip2[i] ^= 0x5a;
            let got = compute(&mut crc, IpHdr::V4(&ip2), &udp, &pkt).unwrap();
            assert_eq!(got == base, variant, "ipv4 byte {i}");
        }
        for (i, variant) in [(6, true), (7, true), (2, false), (4, false)] {
            let mut udp2 = udp.clone();
            udp2[i] ^= 0x5a;
            let got = compute(&mut crc, IpHdr::V4(&ip), &udp2, &pkt).unwrap();
            assert_eq!(got == base, variant, "udp byte {i}");
        }
        for (i, variant) in [(4, true), (5, false), (8, false), (1, false), (20, false)] {
            let mut pkt2 = pkt.clone();
            pkt2[i] ^= 0x5a;
            let got = compute(&mut crc, IpHdr::V4(&ip), &udp, &pkt2).unwrap();
            assert_eq!(got == base, variant, "ib byte {i}");
        }
        // The ICRC slot itself is not covered.
        let mut pkt2 = pkt.clone();
        let last = pkt2.len() - 1;
        pkt2[last] = 0x77;
        assert_eq!(compute(&mut crc, IpHdr::V4(&ip), &udp, &pkt2), Ok(base));

        let ip6 = hex(IP6);
        let base6 = compute(&mut crc, IpHdr::V6(&ip6), &udp, &pkt).unwrap();
        for (i, mask, variant) in [
            (0, 0x0f, true),
            (0, 0xf0, false),
            (1, 0xff, true),
            (3, 0xff, true),
            (7, 0xff, true),
            (4, 1, false),
            (6, 1, false),
            (8, 1, false),
        ] {
            let mut ip2 = ip6.clone();
            ip2[i] ^= mask;
            let got = compute(&mut crc, IpHdr::V6(&ip2), &udp, &pkt).unwrap();
            assert_eq!(got == base6, variant, "ipv6 byte {i} mask {mask:#x}");
            check_frame(IpHdr::V6(&ip2), &udp, &pkt, Some(BTH_LEN));
        }
        // The same fields are masked in a frame, with either CRC.
        for i in 0..ip.len() + udp.len() + pkt.len() - ICRC_LEN {
            let mut buf = joined(&ip, &udp, &pkt);
            buf[i] ^= 0x5a;
            let (ip2, rest) = buf.split_at(20);
            check_frame(IpHdr::V4(ip2), &rest[..8], &rest[8..], Some(BTH_LEN));
        }
    }

    #[test]
    fn flush_uses_rxe_framing_and_accepts_spec() {
        let ip = hex("4500004000014000401100000a0000010a000002");
        let udp = hex("c0de12b7002c0000");
        let mut pkt = packet("1c00ffff00000011800000070000001300000000000010000000222200000040");
        let mut crc = TableCrc32;
        // rdma_rxe's double coverage of the headers.
        assert_eq!(
            compute(&mut crc, IpHdr::V4(&ip), &udp, &pkt),
            Ok(0x600e_1ad8)
        );
        generate(&mut crc, IpHdr::V4(&ip), &udp, &mut pkt).unwrap();
        assert!(icrc_ok(&mut crc, IpHdr::V4(&ip), &udp, &pkt));
        check_frame(IpHdr::V4(&ip), &udp, &pkt, None);
        let mut buf = joined(&ip, &udp, &pkt);
        generate_frame(&mut crc, &mut buf, false, 20).unwrap();
        assert_eq!(&buf[28..], &pkt[..]);
        // A peer that covers the packet once, as the spec does, is accepted too.
        let at = pkt.len() - 4;
        pkt[at..].copy_from_slice(&0xffe1_b4edu32.to_le_bytes());
        assert!(icrc_ok(&mut crc, IpHdr::V4(&ip), &udp, &pkt));
        check_frame(IpHdr::V4(&ip), &udp, &pkt, None);
        let buf = joined(&ip, &udp, &pkt);
        let f = Frame {
            buf: &buf,
            v6: false,
            udp_at: 20,
        };
        assert!(icrc_ok_frame(&mut crc, f));
        pkt[at] ^= 1;
        assert!(!icrc_ok(&mut crc, IpHdr::V4(&ip), &udp, &pkt));
    }

    #[test]
    fn bad_inputs() {
        let (ip, udp) = (hex(IP4), hex(UDP));
        let pkt = packet(IB);
        let mut crc = TableCrc32;
        assert_eq!(
            compute(&mut crc, IpHdr::V4(&ip[..19]), &udp, &pkt),
            Err(IcrcError::BadIpHeader)
        );
        let mut opts = ip.clone();
        opts[0] = 0x46;
        assert_eq!(
            compute(&mut crc, IpHdr::V4(&opts), &udp, &pkt),
            Err(IcrcError::BadIpHeader)
        );
        opts[0] = 0x44;
        assert_eq!(
            compute(&mut crc, IpHdr::V4(&opts), &udp, &pkt),
            Err(IcrcError::BadIpHeader)
        );
        assert_eq!(
            compute(&mut crc, IpHdr::V6(&ip), &udp, &pkt),
            Err(IcrcError::BadIpHeader)
        );
        assert_eq!(
            compute(&mut crc, IpHdr::V4(&ip), &udp[..7], &pkt),
            Err(IcrcError::BadUdpHeader)
        );
        assert_eq!(
            compute(&mut crc, IpHdr::V4(&ip), &udp, &pkt[..15]),
            Err(IcrcError::TooShort)
        );
        assert!(compute(&mut crc, IpHdr::V4(&ip), &udp, &pkt[..16]).is_ok());
        assert!(!icrc_ok(&mut crc, IpHdr::V4(&ip), &udp, &pkt[..3]));
        // A flush too short for its own headers is rejected, not misread.
        let flush = packet("1c00ffff000000118000000700000013");
        assert_eq!(
            compute(&mut crc, IpHdr::V4(&ip), &udp, &flush),
            Err(IcrcError::TooShort)
        );
        // IPv4 options are covered.
        let mut with_opts = ip.clone();
        with_opts[0] = 0x46;
        with_opts.extend_from_slice(&[1, 1, 1, 0]);
        let a = compute(&mut crc, IpHdr::V4(&with_opts), &udp, &pkt).unwrap();
        with_opts[21] = 2;
        assert_ne!(
            compute(&mut crc, IpHdr::V4(&with_opts), &udp, &pkt).unwrap(),
            a
        );
    }
}

/// Deterministic fuzzing of the receive path: parser, header accessors and ICRC
/// over random and mutated packets. Nothing may panic, and every accepted
/// packet must describe lengths that add up.
#[cfg(test)]
mod fuzz {
    use super::super::headers::{
        Aeth, AtmAck, AtmEth, Bth, Deth, Feth, Ieth, ImmDt, Rdeth, Reth, DEFAULT_PKEY,
    };
    use super::super::opcode::{Hdr, Mask, Opcode, ALL};
    use super::super::packet::{packet_len, pad_for, parse, ParseError};
    use super::*;
    use std::vec::Vec;

    struct XorShift(u64);

    impl XorShift {
        fn next(&mut self) -> u64 {
            let mut x = self.0;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            self.0 = x;
            x
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }

        fn bytes(&mut self, n: usize) -> Vec<u8> {
            (0..n).map(|_| self.next() as u8).collect()
        }
    }

    /// A well-formed packet for a random opcode, with random header contents.
    fn valid_packet(rng: &mut XorShift) -> (Vec<u8>, Opcode, usize) {
        let op = ALL[rng.below(ALL.len())];
        let payload_len = if op.has(Mask::PAYLOAD) {
            rng.below(80)
        } else {
            0
        };
        let len = packet_len(op, payload_len).unwrap();
        let mut pkt = rng.bytes(len);
        let mut bth = Bth::parse(&pkt).unwrap();
        bth.opcode = op.bits();
        bth.tver = 0;
        bth.pad = pad_for(payload_len);
        bth.pkey = DEFAULT_PKEY;
        bth.write(&mut pkt).unwrap();
        (pkt, op, payload_len)
    }

    fn check_parsed(pkt: &[u8]) {
        let res = parse(pkt);
        match res {
            Ok(pi) => {
                assert_eq!(pi.opcode.bits(), pkt[0]);
                assert_eq!(pi.paylen, pkt.len());
                assert_eq!(
                    pi.header_len() + pi.payload_len + pi.pad + ICRC_LEN,
                    pkt.len()
                );
                assert!(pi.pad <= 3);
                assert!(pi.pad == 0 || pi.mask.contains(Mask::PAYLOAD));
                assert_eq!(pi.payload(pkt).map(<[u8]>::len), Some(pi.payload_len));
                assert_eq!(pi.icrc_offset() + ICRC_LEN, pkt.len());
                let op = pi.opcode;
                assert_eq!(
                    pi.ext::<Reth>(pkt).is_some(),
                    op.offset(Hdr::Reth).is_some()
                );
                assert_eq!(
                    pi.ext::<Aeth>(pkt).is_some(),
                    op.offset(Hdr::Aeth).is_some()
                );
                assert_eq!(
                    pi.ext::<AtmEth>(pkt).is_some(),
                    op.offset(Hdr::AtmEth).is_some()
                );
                assert_eq!(
                    pi.ext::<AtmAck>(pkt).is_some(),
                    op.offset(Hdr::AtmAck).is_some()
                );
                assert_eq!(
                    pi.ext::<ImmDt>(pkt).is_some(),
                    op.offset(Hdr::ImmDt).is_some()
                );
                assert_eq!(
                    pi.ext::<Ieth>(pkt).is_some(),
                    op.offset(Hdr::Ieth).is_some()
                );
                assert_eq!(
                    pi.ext::<Deth>(pkt).is_some(),
                    op.offset(Hdr::Deth).is_some()
                );
                assert_eq!(
                    pi.ext::<Rdeth>(pkt).is_some(),
                    op.offset(Hdr::Rdeth).is_some()
                );
                assert_eq!(
                    pi.ext::<Feth>(pkt).is_some(),
                    op.offset(Hdr::Feth).is_some()
                );
                let mut out = [0u8; 12];
                pi.bth.write(&mut out).unwrap();
                assert_eq!(&out[..], &pkt[..12]);
            }
            Err(ParseError::NoBth) => assert!(pkt.len() < 12),
            Err(ParseError::UnknownOpcode(b)) => {
                assert_eq!(b, pkt[0]);
                assert!(Opcode::try_from(b).is_err());
            }
            Err(ParseError::BadTver(t)) => assert_eq!(t, pkt[1] & 0x0f),
            Err(ParseError::BadPad(p)) => assert_eq!(p, (pkt[1] >> 4) & 3),
            Err(ParseError::Truncated { need, have }) => {
                assert_eq!(have, pkt.len());
                assert!(need > have);
            }
        }
    }

    #[test]
    fn random_and_mutated_packets() {
        let mut rng = XorShift(0x5eed_1234_abcd_0001);
        let mut crc = TableCrc32;
        let mut accepted = 0;
        for round in 0..100_000 {
            let (ip_v6, ip) = if rng.below(2) == 0 {
                let words = 5 + rng.below(3);
                let mut ip = rng.bytes(4 * words);
                ip[0] = 0x40 | words as u8;
                (false, ip)
            } else {
                (true, rng.bytes(40))
            };
            let ip_hdr = if ip_v6 {
                IpHdr::V6(&ip)
            } else {
                IpHdr::V4(&ip)
            };
            let udp = rng.bytes(8);
            let mut pkt = match round % 4 {
                0 => {
                    let n = rng.below(160);
                    rng.bytes(n)
                }
                1 => {
                    let (mut pkt, op, payload_len) = valid_packet(&mut rng);
                    generate(&mut crc, ip_hdr, &udp, &mut pkt).unwrap();
                    assert!(icrc_ok(&mut crc, ip_hdr, &udp, &pkt));
                    let pi = parse(&pkt).unwrap();
                    let hdr_len = pi.icrc_offset() - pi.payload_len - pi.pad;
                    super::tests::check_frame(ip_hdr, &udp, &pkt, Some(hdr_len));
                    assert_eq!((pi.opcode, pi.payload_len), (op, payload_len));
                    pkt
                }
                _ => {
                    let (mut pkt, _, _) = valid_packet(&mut rng);
                    generate(&mut crc, ip_hdr, &udp, &mut pkt).unwrap();
                    // Flip, truncate or extend a little.
                    for _ in 0..1 + rng.below(3) {
                        match rng.below(3) {
                            0 => {
                                let i = rng.below(pkt.len());
                                pkt[i] ^= 1 << rng.below(8);
                            }
                            1 => {
                                let cut = rng.below(pkt.len() + 1);
                                pkt.truncate(cut);
                            }
                            _ => {
                                let extra = rng.below(8);
                                pkt.extend(rng.bytes(extra));
                            }
                        }
                        if pkt.is_empty() {
                            break;
                        }
                    }
                    pkt
                }
            };
            check_parsed(&pkt);
            if parse(&pkt).is_ok() {
                accepted += 1;
            }
            // The ICRC code must cope with anything, accepted or not, and
            // the one-buffer forms agree with the split ones.
            super::tests::check_frame(ip_hdr, &udp, &pkt, None);
            let _ = compute(&mut crc, ip_hdr, &udp, &pkt);
            let _ = icrc_ok(&mut crc, ip_hdr, &udp, &pkt);
            let _ = compute(&mut crc, ip_hdr, &udp[..rng.below(9)], &pkt);
            let short_ip = &ip[..rng.below(ip.len() + 1)];
            let _ = compute(&mut crc, IpHdr::V4(short_ip), &udp, &pkt);
            let _ = compute(&mut crc, IpHdr::V6(short_ip), &udp, &pkt);
            if round % 4 == 1 {
                // A single flipped covered bit must be detected.
                let i = rng.below(pkt.len() - ICRC_LEN);
                if i != 4 {
                    pkt[i] ^= 1 << rng.below(8);
                    assert!(!icrc_ok(&mut crc, ip_hdr, &udp, &pkt));
                    super::tests::check_frame(ip_hdr, &udp, &pkt, None);
                }
            }
        }
        // Both sides of the parser were exercised.
        assert!(accepted > 30_000 && accepted < 90_000, "{accepted}");
    }
}
