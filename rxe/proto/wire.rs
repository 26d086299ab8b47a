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
#[path = "wire_tests.rs"]
mod tests;
