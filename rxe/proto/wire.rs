// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Wire encodings around the transport headers: AETH syndromes, credit and
//! RNR timer codes, the local ACK timeout, and IB path MTUs.

/// NAK codes carried in the low five bits of a NAK syndrome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum NakCode {
    PsnSeqError = 0,
    InvalidRequest = 1,
    RemoteAccessError = 2,
    RemoteOperationalError = 3,
    InvalidRdRequest = 4,
}

impl TryFrom<u8> for NakCode {
    type Error = u8;

    fn try_from(v: u8) -> Result<NakCode, u8> {
        match v {
            0 => Ok(NakCode::PsnSeqError),
            1 => Ok(NakCode::InvalidRequest),
            2 => Ok(NakCode::RemoteAccessError),
            3 => Ok(NakCode::RemoteOperationalError),
            4 => Ok(NakCode::InvalidRdRequest),
            other => Err(other),
        }
    }
}

/// Credit code meaning "no end-to-end flow control": what rxe always sends.
pub(crate) const CREDITS_UNLIMITED: u8 = 0x1f;

/// The AETH syndrome byte: bits 6..5 give the kind, bits 4..0 its argument;
/// bit 7 is reserved and must be clear.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Syndrome {
    /// Positive ACK with a 5-bit credit code (see [`credit_count`]).
    Ack {
        credits: u8,
    },
    /// Receiver not ready: retry after the 5-bit timer code (see [`rnr_timer_us`]).
    RnrNak {
        timer: u8,
    },
    Nak(NakCode),
}

/// A syndrome byte with the reserved kind, the reserved bit or an undefined NAK code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BadSyndrome(pub(crate) u8);

const KIND_MASK: u8 = 0xe0;
const ARG_MASK: u8 = 0x1f;
const KIND_ACK: u8 = 0x00;
const KIND_RNR_NAK: u8 = 0x20;
const KIND_NAK: u8 = 0x60;

impl Syndrome {
    /// The ACK rxe sends for every successful request.
    pub(crate) const ACK_UNLIMITED: Syndrome = Syndrome::Ack {
        credits: CREDITS_UNLIMITED,
    };

    /// The syndrome byte; arguments wider than five bits are truncated.
    pub(crate) const fn encode(self) -> u8 {
        match self {
            Syndrome::Ack { credits } => KIND_ACK | (credits & ARG_MASK),
            Syndrome::RnrNak { timer } => KIND_RNR_NAK | (timer & ARG_MASK),
            // Discriminants are the 5-bit wire codes.
            Syndrome::Nak(code) => KIND_NAK | code as u8,
        }
    }

    #[cfg(test)] // Only the host tests use it.
    pub(crate) const fn is_ack(self) -> bool {
        matches!(self, Syndrome::Ack { .. })
    }
}

impl TryFrom<u8> for Syndrome {
    type Error = BadSyndrome;

    fn try_from(v: u8) -> Result<Syndrome, BadSyndrome> {
        let arg = v & ARG_MASK;
        match v & KIND_MASK {
            KIND_ACK => Ok(Syndrome::Ack { credits: arg }),
            KIND_RNR_NAK => Ok(Syndrome::RnrNak { timer: arg }),
            KIND_NAK => NakCode::try_from(arg)
                .map(Syndrome::Nak)
                .map_err(|_| BadSyndrome(v)),
            _ => Err(BadSyndrome(v)),
        }
    }
}

/// Messages each credit code grants, codes 0..=30 (IBTA's table: powers of two
/// and 1.5 times powers of two).
#[cfg(test)] // Only the host tests use it.
const CREDITS: [u32; 31] = [
    0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536,
    2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768,
];

/// Receive credits granted by `code`; `None` for [`CREDITS_UNLIMITED`] and anything wider.
#[cfg(test)] // Only the host tests use it.
pub(crate) fn credit_count(code: u8) -> Option<u32> {
    CREDITS.get(usize::from(code)).copied()
}

/// Largest credit code granting at most `count` messages.
#[cfg(test)] // Only the host tests use it.
pub(crate) fn credit_code(count: u32) -> u8 {
    let n = CREDITS.iter().take_while(|&&c| c <= count).count();
    // 1..=31 entries qualify (code 0 grants 0), so the code is 0..=30 and fits a u8.
    n.saturating_sub(1) as u8
}

/// RNR NAK timer per 5-bit code, in microseconds. Code 0 is the longest wait.
/// (rdma_rxe's copy has 61410 for code 25; the spec value is 61.44 ms.)
const RNR_TIMER_US: [u32; 32] = [
    655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920, 2560, 3840,
    5120, 7680, 10_240, 15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880, 163_840, 245_760,
    327_680, 491_520,
];

/// Delay before retrying after an RNR NAK carrying `code`; `None` above 31.
pub(crate) fn rnr_timer_us(code: u8) -> Option<u32> {
    RNR_TIMER_US.get(usize::from(code)).copied()
}

/// An rnr_retry of 7 retries forever.
pub(crate) const RNR_RETRY_INFINITE: u8 = 7;

/// Local ACK timeout for the 5-bit QP `timeout` attribute: 4.096 us * 2^timeout,
/// in nanoseconds. `None` for 0, which disables the retransmit timer. Values
/// above 31 do not fit the attribute and are treated as 31.
pub(crate) fn local_ack_timeout_ns(timeout: u8) -> Option<u64> {
    if timeout == 0 {
        None
    } else {
        Some(4096u64 << timeout.min(31))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syndromes_round_trip() {
        for v in 0..=255u8 {
            match Syndrome::try_from(v) {
                Ok(s) => assert_eq!(s.encode(), v, "{v:#x}"),
                Err(e) => {
                    assert_eq!(e, BadSyndrome(v));
                    let kind = v & 0xe0;
                    assert!(kind == 0x40 || v & 0x80 != 0 || (kind == 0x60 && v & 0x1f > 4));
                }
            }
        }
        assert_eq!(Syndrome::ACK_UNLIMITED.encode(), 0x1f);
        assert_eq!(Syndrome::Nak(NakCode::PsnSeqError).encode(), 0x60);
        assert_eq!(Syndrome::Nak(NakCode::InvalidRequest).encode(), 0x61);
        assert_eq!(Syndrome::Nak(NakCode::RemoteAccessError).encode(), 0x62);
        assert_eq!(
            Syndrome::Nak(NakCode::RemoteOperationalError).encode(),
            0x63
        );
        assert_eq!(Syndrome::Nak(NakCode::InvalidRdRequest).encode(), 0x64);
        assert_eq!(Syndrome::RnrNak { timer: 14 }.encode(), 0x2e);
        assert_eq!(Syndrome::try_from(0x2e), Ok(Syndrome::RnrNak { timer: 14 }));
        assert_eq!(Syndrome::try_from(0x05), Ok(Syndrome::Ack { credits: 5 }));
        assert!(Syndrome::try_from(0x1f).unwrap().is_ack());
        assert_eq!(Syndrome::try_from(0x65), Err(BadSyndrome(0x65)));
        assert_eq!(Syndrome::try_from(0x40), Err(BadSyndrome(0x40)));
        assert_eq!(Syndrome::try_from(0x80), Err(BadSyndrome(0x80)));
    }

    #[test]
    fn credits() {
        assert_eq!(credit_count(0), Some(0));
        assert_eq!(credit_count(5), Some(6));
        assert_eq!(credit_count(30), Some(32768));
        assert_eq!(credit_count(CREDITS_UNLIMITED), None);
        assert_eq!(credit_count(200), None);
        assert_eq!(credit_code(0), 0);
        assert_eq!(credit_code(5), 4);
        assert_eq!(credit_code(6), 5);
        assert_eq!(credit_code(u32::MAX), 30);
        for code in 0..=30u8 {
            assert_eq!(credit_code(credit_count(code).unwrap()), code);
        }
    }

    #[test]
    fn rnr_timer_table() {
        // The enum ib_rnr_timeout names spell the delay in ms: code 0 is 655.36 ms.
        let from_names_ms_x100: [u32; 32] = [
            65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768,
            1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152,
        ];
        for (code, ms_x100) in from_names_ms_x100.iter().enumerate() {
            assert_eq!(rnr_timer_us(code as u8), Some(ms_x100 * 10));
        }
        assert_eq!(rnr_timer_us(32), None);
    }

    #[test]
    fn ack_timeout() {
        assert_eq!(local_ack_timeout_ns(0), None);
        assert_eq!(local_ack_timeout_ns(1), Some(8192));
        // 14 is a common default: about 67 ms.
        assert_eq!(local_ack_timeout_ns(14), Some(67_108_864));
        assert_eq!(local_ack_timeout_ns(31), Some(4096 << 31));
        assert_eq!(local_ack_timeout_ns(255), local_ack_timeout_ns(31));
    }
}
