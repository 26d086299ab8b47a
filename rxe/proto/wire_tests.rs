// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Host tests of [`super`] (`wire.rs`).

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
