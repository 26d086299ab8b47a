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
    Ack { credits: u8 },
    /// Receiver not ready: retry after the 5-bit timer code (see [`rnr_timer_us`]).
    RnrNak { timer: u8 },
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
const CREDITS: [u32; 31] = [
    0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536,
    2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768,
];

/// Receive credits granted by `code`; `None` for [`CREDITS_UNLIMITED`] and anything wider.
pub(crate) fn credit_count(code: u8) -> Option<u32> {
    CREDITS.get(usize::from(code)).copied()
}

/// Largest credit code granting at most `count` messages.
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

/// Bytes rdma_rxe keeps below the netdev MTU for the IP, UDP and transport
/// headers when it picks the port MTU (its RXE_MAX_HDR_LENGTH).
pub(crate) const MAX_HDR_LEN: u32 = 80;

/// IB path MTU; discriminants are the verbs `enum ib_mtu` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub(crate) enum Mtu {
    B256 = 1,
    B512 = 2,
    B1024 = 3,
    B2048 = 4,
    B4096 = 5,
}

impl TryFrom<u8> for Mtu {
    type Error = u8;

    fn try_from(v: u8) -> Result<Mtu, u8> {
        match v {
            1 => Ok(Mtu::B256),
            2 => Ok(Mtu::B512),
            3 => Ok(Mtu::B1024),
            4 => Ok(Mtu::B2048),
            5 => Ok(Mtu::B4096),
            other => Err(other),
        }
    }
}

impl Mtu {
    /// The verbs `enum ib_mtu` value.
    pub(crate) const fn code(self) -> u8 {
        self as u8
    }

    /// Payload bytes per packet.
    pub(crate) const fn bytes(self) -> u32 {
        // Code 1 is 256 = 128 << 1, and each step doubles.
        128 << (self as u8)
    }

    /// Largest IB MTU not above `bytes`; `None` below 256.
    pub(crate) const fn from_bytes_floor(bytes: u32) -> Option<Mtu> {
        if bytes >= 4096 {
            Some(Mtu::B4096)
        } else if bytes >= 2048 {
            Some(Mtu::B2048)
        } else if bytes >= 1024 {
            Some(Mtu::B1024)
        } else if bytes >= 512 {
            Some(Mtu::B512)
        } else if bytes >= 256 {
            Some(Mtu::B256)
        } else {
            None
        }
    }

    /// Active MTU of a port on a netdev with MTU `ndev_mtu`: the largest IB MTU
    /// that leaves [`MAX_HDR_LEN`] bytes for headers, at least 256 (rxe never
    /// reports less, even on links too small for it), at most 4096.
    pub(crate) const fn from_netdev_mtu(ndev_mtu: u32) -> Mtu {
        match Mtu::from_bytes_floor(ndev_mtu.saturating_sub(MAX_HDR_LEN)) {
            Some(m) => m,
            None => Mtu::B256,
        }
    }
}

/// Payload bytes per packet for `mtu`.
pub(crate) const fn mtu_to_bytes(mtu: Mtu) -> u32 {
    mtu.bytes()
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
        assert_eq!(Syndrome::Nak(NakCode::RemoteOperationalError).encode(), 0x63);
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
            65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024,
            1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152,
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

    #[test]
    fn mtus() {
        assert_eq!(
            [Mtu::B256, Mtu::B512, Mtu::B1024, Mtu::B2048, Mtu::B4096].map(mtu_to_bytes),
            [256, 512, 1024, 2048, 4096]
        );
        for code in 0..=255u8 {
            match Mtu::try_from(code) {
                Ok(m) => assert_eq!(m.code(), code),
                Err(e) => assert!(e == code && !(1..=5).contains(&code)),
            }
        }
        assert_eq!(Mtu::from_bytes_floor(255), None);
        assert_eq!(Mtu::from_bytes_floor(1023), Some(Mtu::B512));
        assert_eq!(Mtu::from_bytes_floor(65535), Some(Mtu::B4096));
        // 1500 leaves 1420 for IB: 1024, as the contract says.
        assert_eq!(Mtu::from_netdev_mtu(1500), Mtu::B1024);
        assert_eq!(Mtu::from_netdev_mtu(1103), Mtu::B512);
        assert_eq!(Mtu::from_netdev_mtu(1104), Mtu::B1024);
        assert_eq!(Mtu::from_netdev_mtu(4175), Mtu::B2048);
        assert_eq!(Mtu::from_netdev_mtu(4176), Mtu::B4096);
        assert_eq!(Mtu::from_netdev_mtu(9000), Mtu::B4096);
        assert_eq!(Mtu::from_netdev_mtu(65536), Mtu::B4096);
        // Tiny or zero MTUs still report 256, like rxe_set_mtu.
        assert_eq!(Mtu::from_netdev_mtu(300), Mtu::B256);
        assert_eq!(Mtu::from_netdev_mtu(0), Mtu::B256);
    }
}
