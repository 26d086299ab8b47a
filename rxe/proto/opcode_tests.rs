// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Host tests of [`super`] (`opcode.rs`).

use super::*;

/// rdma_rxe 6.12 `rxe_opcode[]`, evaluated from the C source: opcode, mask,
/// length, offsets of RETH, AETH, ATMETH, ATMACK, IETH, RDETH, DETH, IMMDT,
/// FETH, PAYLOAD (0 where the C entry leaves them unset).
const C_TABLE: [(u8, u32, usize, [usize; 10]); 60] = [
    (0x00, 0x0050b000, 12, [0, 0, 0, 0, 0, 0, 0, 0, 0, 12]),
    (0x01, 0x0080b000, 12, [0, 0, 0, 0, 0, 0, 0, 0, 0, 12]),
    (0x02, 0x0120b000, 12, [0, 0, 0, 0, 0, 0, 0, 0, 0, 12]),
    (0x03, 0x0120b400, 16, [0, 0, 0, 0, 0, 0, 0, 12, 0, 16]),
    (0x04, 0x0170b000, 12, [0, 0, 0, 0, 0, 0, 0, 0, 0, 12]),
    (0x05, 0x0170b400, 16, [0, 0, 0, 0, 0, 0, 0, 12, 0, 16]),
    (0x06, 0x00413008, 28, [12, 0, 0, 0, 0, 0, 0, 0, 0, 28]),
    (0x07, 0x00813000, 12, [0, 0, 0, 0, 0, 0, 0, 0, 0, 12]),
    (0x08, 0x01013000, 12, [0, 0, 0, 0, 0, 0, 0, 0, 0, 12]),
    (0x09, 0x01313400, 16, [0, 0, 0, 0, 0, 0, 0, 12, 0, 16]),
    (0x0a, 0x01413008, 28, [12, 0, 0, 0, 0, 0, 0, 0, 0, 28]),
    (0x0b, 0x01713408, 32, [12, 0, 0, 0, 0, 0, 0, 28, 0, 32]),
    (0x0c, 0x01422008, 28, [12, 0, 0, 0, 0, 0, 0, 0, 0, 28]),
    (0x0d, 0x00405010, 16, [0, 12, 0, 0, 0, 0, 0, 0, 0, 16]),
    (0x0e, 0x00805000, 12, [0, 0, 0, 0, 0, 0, 0, 0, 0, 12]),
    (0x0f, 0x01005010, 16, [0, 12, 0, 0, 0, 0, 0, 0, 0, 16]),
    (0x10, 0x01405010, 16, [0, 12, 0, 0, 0, 0, 0, 0, 0, 16]),
    (0x11, 0x01404010, 16, [0, 12, 0, 0, 0, 0, 0, 0, 0, 16]),
    (0x12, 0x01404050, 24, [0, 12, 0, 16, 0, 0, 0, 0, 0, 24]),
    (0x13, 0x01442020, 40, [0, 0, 12, 0, 0, 0, 0, 0, 0, 40]),
    (0x14, 0x01442020, 40, [0, 0, 12, 0, 0, 0, 0, 0, 0, 40]),
    (0x16, 0x0120b080, 16, [0, 0, 0, 0, 12, 0, 0, 0, 0, 16]),
    (0x17, 0x0170b080, 16, [0, 0, 0, 0, 12, 0, 0, 0, 0, 16]),
    (0x1c, 0x01482808, 32, [16, 0, 0, 0, 0, 0, 0, 0, 12, 0]),
    (0x1d, 0x09403008, 28, [12, 0, 0, 0, 0, 0, 0, 0, 0, 28]),
    (0x20, 0x0050b000, 12, [0, 0, 0, 0, 0, 0, 0, 0, 0, 12]),
    (0x21, 0x0080b000, 12, [0, 0, 0, 0, 0, 0, 0, 0, 0, 12]),
    (0x22, 0x0120b000, 12, [0, 0, 0, 0, 0, 0, 0, 0, 0, 12]),
    (0x23, 0x0120b400, 16, [0, 0, 0, 0, 0, 0, 0, 12, 0, 16]),
    (0x24, 0x0170b000, 12, [0, 0, 0, 0, 0, 0, 0, 0, 0, 12]),
    (0x25, 0x0170b400, 16, [0, 0, 0, 0, 0, 0, 0, 12, 0, 16]),
    (0x26, 0x00413008, 28, [12, 0, 0, 0, 0, 0, 0, 0, 0, 28]),
    (0x27, 0x00813000, 12, [0, 0, 0, 0, 0, 0, 0, 0, 0, 12]),
    (0x28, 0x01013000, 12, [0, 0, 0, 0, 0, 0, 0, 0, 0, 12]),
    (0x29, 0x01313400, 16, [0, 0, 0, 0, 0, 0, 0, 12, 0, 16]),
    (0x2a, 0x01413008, 28, [12, 0, 0, 0, 0, 0, 0, 0, 0, 28]),
    (0x2b, 0x01713408, 32, [12, 0, 0, 0, 0, 0, 0, 28, 0, 32]),
    (0x40, 0x0050b300, 24, [0, 0, 0, 0, 0, 12, 16, 0, 0, 24]),
    (0x41, 0x0080b300, 24, [0, 0, 0, 0, 0, 12, 16, 0, 0, 24]),
    (0x42, 0x0120b300, 24, [0, 0, 0, 0, 0, 12, 16, 0, 0, 24]),
    (0x43, 0x0120b700, 28, [0, 0, 0, 0, 0, 12, 16, 24, 0, 28]),
    (0x44, 0x0170b300, 24, [0, 0, 0, 0, 0, 12, 16, 0, 0, 24]),
    (0x45, 0x0170b700, 28, [0, 0, 0, 0, 0, 12, 16, 24, 0, 28]),
    (0x46, 0x00413308, 40, [24, 0, 0, 0, 0, 12, 16, 0, 0, 40]),
    (0x47, 0x00813300, 24, [0, 0, 0, 0, 0, 12, 16, 0, 0, 24]),
    (0x48, 0x01013300, 24, [0, 0, 0, 0, 0, 12, 16, 0, 0, 24]),
    (0x49, 0x01313700, 28, [0, 0, 0, 0, 0, 12, 16, 24, 0, 28]),
    (0x4a, 0x01413308, 40, [24, 0, 0, 0, 0, 12, 16, 0, 0, 40]),
    (0x4b, 0x01713708, 44, [24, 0, 0, 0, 0, 12, 16, 40, 0, 44]),
    (0x4c, 0x01422308, 40, [24, 0, 0, 0, 0, 12, 16, 0, 0, 40]),
    (0x4d, 0x00405110, 20, [0, 16, 0, 0, 0, 12, 0, 0, 0, 20]),
    (0x4e, 0x00805100, 16, [0, 0, 0, 0, 0, 12, 0, 0, 0, 16]),
    (0x4f, 0x01005110, 20, [0, 16, 0, 0, 0, 12, 0, 0, 0, 20]),
    (0x50, 0x01405110, 20, [0, 16, 0, 0, 0, 12, 0, 0, 0, 20]),
    (0x51, 0x01404110, 20, [0, 16, 0, 0, 0, 12, 0, 0, 0, 0]),
    (0x52, 0x01404150, 28, [0, 16, 0, 20, 0, 12, 0, 0, 0, 0]),
    (0x53, 0x01442320, 52, [0, 0, 24, 0, 0, 12, 16, 0, 0, 52]),
    (0x54, 0x01442320, 52, [0, 0, 24, 0, 0, 12, 16, 0, 0, 52]),
    (0x64, 0x0170b200, 20, [0, 0, 0, 0, 0, 0, 12, 0, 0, 20]),
    (0x65, 0x0170b600, 24, [0, 0, 0, 0, 0, 0, 12, 20, 0, 24]),
];

const HDR_ORDER: [Hdr; 9] = [
    Hdr::Reth,
    Hdr::Aeth,
    Hdr::AtmEth,
    Hdr::AtmAck,
    Hdr::Ieth,
    Hdr::Rdeth,
    Hdr::Deth,
    Hdr::ImmDt,
    Hdr::Feth,
];

/// Opcodes whose C entry has no payload offset although their headers end
/// past the BTH; their payload really starts at `length` (see icrc.rs).
const C_NO_PAYLOAD_OFFSET: [u8; 3] = [0x1c, 0x51, 0x52];

#[test]
fn matches_c_table() {
    assert_eq!(ALL.len(), C_TABLE.len());
    for (&op, &(code, mask, length, offs)) in ALL.iter().zip(C_TABLE.iter()) {
        assert_eq!(op.bits(), code);
        let info = op.info();
        assert_eq!(info.mask.bits(), mask, "mask of {}", info.name);
        assert_eq!(info.header_len(), length, "length of {}", info.name);
        for (i, hdr) in HDR_ORDER.iter().enumerate() {
            assert_eq!(
                info.offset(*hdr).unwrap_or(0),
                offs[i],
                "{:?} in {}",
                hdr,
                info.name
            );
        }
        if C_NO_PAYLOAD_OFFSET.contains(&code) {
            assert_eq!(offs[9], 0);
        } else {
            assert_eq!(offs[9], info.header_len(), "payload of {}", info.name);
        }
    }
}

#[test]
fn try_from_agrees_with_table() {
    let mut known = 0;
    for b in 0..=255u8 {
        let entry = &TABLE[usize::from(b)];
        match Opcode::try_from(b) {
            Ok(op) => {
                known += 1;
                assert_eq!(op.bits(), b);
                assert!(op.mask() != Mask::NONE);
                assert!(op.header_len() >= BTH_LEN);
                assert_eq!(Transport::of(b), Some(op.transport()));
            }
            Err(e) => {
                assert_eq!(e, UnknownOpcode(b));
                assert_eq!(entry.mask, Mask::NONE);
                assert_eq!(entry.length, 0);
            }
        }
    }
    assert_eq!(known, 60);
}

#[test]
fn transport_ranges() {
    assert_eq!(Opcode::RcSendFirst.transport(), Transport::Rc);
    assert_eq!(Opcode::RcAtomicWrite.transport(), Transport::Rc);
    assert_eq!(Opcode::UcWriteOnlyImm.transport(), Transport::Uc);
    assert_eq!(Opcode::RdFetchAdd.transport(), Transport::Rd);
    assert_eq!(Opcode::UdSendOnlyImm.transport(), Transport::Ud);
    assert_eq!(Transport::of(0x81), None);
    assert_eq!(Transport::of(0xe0), None);
    assert!(Opcode::try_from(0x81).is_err());
    assert!(Opcode::try_from(0x15).is_err());
}

#[test]
fn masks_and_names() {
    assert!(Opcode::RcFlush
        .mask()
        .contains(Mask::FETH | Mask::RETH | Mask::ONLY));
    assert!(!Opcode::RcFlush.has(Mask::PAYLOAD));
    assert!(Opcode::RcAtomicWrite.has(Mask::RDMA_OP));
    assert!(Opcode::RcCompareSwap.has(Mask::READ_OR_ATOMIC));
    assert!(!Opcode::RcAck.has(Mask::REQ));
    assert_eq!(Opcode::RcSendOnlyInv.name(), "RC_SEND_ONLY_WITH_INVALIDATE");
    assert_eq!(Opcode::RcAtomicAck.offset(Hdr::AtmAck), Some(16));
    assert_eq!(Opcode::RcAck.offset(Hdr::Reth), None);
    // Names are unique, so logs can be mapped back.
    for (i, a) in ALL.iter().enumerate() {
        for b in ALL.iter().skip(i + 1) {
            assert_ne!(a.name(), b.name());
        }
    }
}
