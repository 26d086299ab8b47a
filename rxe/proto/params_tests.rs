// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Host tests of [`super`] (`params.rs`).

use super::super::device_attr::{
    guid_from_mac, guid_source, PhysState, DEVICE_CAP_FLAGS, PORT_CM_SUP, PORT_SUBNET_PREFIX,
};
use super::*;

/// Values printed by a C program built from `rxe_param.h` and the 6.12
/// `ib_verbs.h` enums (64-bit).
#[test]
fn matches_compiled_c_header() {
    let table: &[(&str, u64, u64)] = &[
        ("RXE_DEVICE_CAP_FLAGS", DEVICE_CAP_FLAGS, 0x1c0_0122_3c76),
        ("RXE_MAX_WQE_SIZE", limits::MAX_WQE_SIZE.into(), 720),
        ("RXE_MAX_INLINE_DATA", limits::MAX_INLINE_DATA.into(), 512),
        ("RXE_MAX_QP", pool::QP.max_elem.into(), 1_048_560),
        ("RXE_MAX_SRQ", pool::SRQ.max_elem.into(), 917_503),
        ("RXE_MAX_MR", pool::MR.max_elem.into(), 524_287),
        ("RXE_MIN_MW_INDEX", pool::MW.min_index.into(), 524_289),
        ("RXE_MAX_MW", pool::MW.max_elem.into(), 524_287),
        ("RXE_MAX_AH", pool::AH.max_elem.into(), 32_767),
        (
            "RXE_MAX_MR_SIZE",
            limits::MAX_MR_SIZE,
            0xffff_ffff_ffff_ffff,
        ),
        ("RXE_PAGE_SIZE_CAP", limits::PAGE_SIZE_CAP, 0xffff_f000),
        ("RXE_PORT_MAX_MSG_SZ", MAX_MSG_SZ.into(), 2_147_483_648),
        ("RXE_PORT_PORT_CAP_FLAGS", PORT_CM_SUP.into(), 0x10000),
        (
            "RXE_PORT_SUBNET_PREFIX",
            PORT_SUBNET_PREFIX,
            0xfe80_0000_0000_0000,
        ),
    ];
    for (name, ours, c) in table {
        assert_eq!(ours, c, "{name}");
    }
}

/// (netdev MTU, C result of `rxe_set_mtu()`), from the compiled C helpers:
#[test]
fn active_mtu_matches_c() {
    let c: &[(u32, u32)] = &[
        (0, 1),
        (79, 1),
        (80, 1),
        (335, 1),
        (336, 1),
        (591, 1),
        (592, 2),
        (1103, 2),
        (1104, 3),
        (1500, 3),
        (2127, 3),
        (2128, 4),
        (4175, 4),
        (4176, 5),
        (9000, 5),
        (65535, 5),
    ];
    for &(mtu, want) in c {
        assert_eq!(IbMtu::from_netdev_mtu(mtu).as_raw(), want, "{mtu}");
    }
    assert_eq!(IbMtu::from_netdev_mtu(u32::MAX), IbMtu::Mtu4096);
    for v in 1..=5 {
        assert_eq!(IbMtu::from_raw(v).map(IbMtu::bytes), Some(128 << v));
    }
    assert_eq!(IbMtu::from_raw(0), None);
    assert_eq!(IbMtu::from_raw(6), None);
    assert_eq!(IbMtu::from_bytes_floor(255), None);
    assert_eq!(IbMtu::from_bytes_floor(1023), Some(IbMtu::Mtu512));
}

#[test]
fn pools_and_helpers() {
    assert!(pool::QP.holds(16) && !pool::QP.holds(15) && !pool::QP.holds(1));
    assert!(pool::MR.holds(1) && !pool::MR.holds(pool::MW.min_index));
    assert_eq!(pool::MR.max_index + 1, pool::MW.min_index);
    assert!(!pool::AH.holds(0));
    assert_eq!(
        guid_from_mac([0x52, 0x54, 0, 0x12, 0x34, 0x56]),
        [0x50, 0x54, 0, 0xff, 0xfe, 0x12, 0x34, 0x56]
    );
    let mac = [0x52, 0x54, 0, 0x12, 0x34, 0x56];
    assert_eq!(guid_source(mac, 6, [0xff; 6]), mac);
    assert_eq!(guid_source(mac, 20, [0xff; 6]), mac);
    // An IPv4 tunnel's 4-byte address, padded.
    assert_eq!(
        guid_source([10, 0, 0, 1, 0x77, 0x77], 4, [0xff; 6]),
        [10, 0, 0, 1, 0, 0]
    );
    // No hardware address: the random bytes, local and unicast.
    assert_eq!(
        guid_source([0; 6], 0, [0xff, 1, 2, 3, 4, 5]),
        [0xfe, 1, 2, 3, 4, 5]
    );
    assert_eq!(guid_source([0; 6], 0, [0; 6]), [0x02, 0, 0, 0, 0, 0]);
    assert_eq!(PhysState::reported(true, false), PhysState::LinkUp);
    assert_eq!(PhysState::reported(false, true), PhysState::Polling);
    assert_eq!(PhysState::reported(false, false), PhysState::Disabled);
    assert_eq!(pacing::MAX_PKT_PER_ACK, 64);
    assert_eq!(pacing::MAX_UNACKED_PSNS, 128);
    assert_eq!(
        (
            pacing::INFLIGHT_SKBS_PER_QP_HIGH,
            pacing::INFLIGHT_SKBS_PER_QP_LOW
        ),
        (64, 16)
    );
}
