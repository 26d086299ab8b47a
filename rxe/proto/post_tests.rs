// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Host tests of [`super`] (`post.rs`).

use super::super::uapi::{
    Payload, RecvWqe, SendWqe, SqLimits as ParseLimits, WcOpcode, WqeError, WrParams,
};
use super::*;

const SQ: SqLimits = SqLimits {
    max_sge: 4,
    max_inline: 64,
};

fn sges(lens: &[u32]) -> [Sge; 4] {
    let mut s = [Sge::default(); 4];
    for (i, &l) in lens.iter().enumerate() {
        s[i] = Sge {
            addr: 0x1000 * (i as u64 + 1),
            length: l,
            lkey: 0x100 + i as u32,
        };
    }
    s
}

fn wr<'a>(opcode: WrOpcode, target: Target, sg: &'a [Sge]) -> SendWr<'a> {
    SendWr {
        wr_id: 0xabcd,
        opcode: opcode.as_raw(),
        send_flags: 2,
        ex: 0x0102_0304,
        target,
        sges: sg,
    }
}

#[test]
fn opcode_per_qp_type() {
    let s = sges(&[8]);
    let rdma = Target::Rdma {
        remote_addr: 0x10,
        rkey: 5,
    };
    let ud = Target::Ud {
        remote_qpn: 3,
        remote_qkey: 4,
        pkey_index: 0,
        ah_num: 1,
    };
    assert!(check_send_wr(qp::Type::Rc, SQ, &wr(WrOpcode::RdmaWrite, rdma, &s[..1])).is_ok());
    assert!(check_send_wr(qp::Type::Uc, SQ, &wr(WrOpcode::RdmaWrite, rdma, &s[..1])).is_ok());
    assert_eq!(
        check_send_wr(qp::Type::Uc, SQ, &wr(WrOpcode::RdmaRead, rdma, &s[..1])),
        Err(PostError::Invalid)
    );
    assert_eq!(
        check_send_wr(qp::Type::Ud, SQ, &wr(WrOpcode::RdmaWrite, ud, &s[..1])),
        Err(PostError::Invalid)
    );
    assert!(check_send_wr(qp::Type::Ud, SQ, &wr(WrOpcode::Send, ud, &s[..1])).is_ok());
    assert!(check_send_wr(qp::Type::Gsi, SQ, &wr(WrOpcode::SendWithImm, ud, &s[..1])).is_ok());
    // In the table for UD, refused by init_send_wr.
    assert_eq!(
        check_send_wr(qp::Type::Ud, SQ, &wr(WrOpcode::SendWithInv, ud, &s[..1])),
        Err(PostError::Invalid)
    );
    assert_eq!(
        check_send_wr(qp::Type::Rc, SQ, &wr(WrOpcode::Lso, Target::None, &s[..1])),
        Err(PostError::Invalid)
    );
    let bad = SendWr {
        opcode: 99,
        ..wr(WrOpcode::Send, Target::None, &s[..1])
    };
    assert_eq!(
        check_send_wr(qp::Type::Rc, SQ, &bad),
        Err(PostError::Invalid)
    );
}

#[test]
fn sge_and_length_rules() {
    let s = sges(&[1, 2, 3, 4]);
    let one = SqLimits { max_sge: 3, ..SQ };
    assert_eq!(
        check_send_wr(qp::Type::Rc, one, &wr(WrOpcode::Send, Target::None, &s)),
        Err(PostError::Invalid)
    );
    assert_eq!(
        check_send_wr(qp::Type::Rc, SQ, &wr(WrOpcode::Send, Target::None, &s))
            .unwrap()
            .length,
        10
    );
    let huge = [Sge {
        addr: 0,
        length: u32::MAX,
        lkey: 0,
    }; 2];
    let lim = SqLimits { max_sge: 2, ..SQ };
    assert_eq!(
        check_send_wr(qp::Type::Rc, lim, &wr(WrOpcode::Send, Target::None, &huge)),
        Err(PostError::Invalid)
    );
}

#[test]
fn atomic_rules() {
    let eight = sges(&[8]);
    let at = |addr| Target::Atomic {
        remote_addr: addr,
        compare_add: 1,
        swap: 2,
        rkey: 3,
    };
    assert!(check_send_wr(
        qp::Type::Rc,
        SQ,
        &wr(WrOpcode::AtomicFetchAndAdd, at(0x40), &eight[..1])
    )
    .is_ok());
    assert_eq!(
        check_send_wr(
            qp::Type::Rc,
            SQ,
            &wr(WrOpcode::AtomicFetchAndAdd, at(0x44), &eight[..1])
        ),
        Err(PostError::Invalid)
    );
    let four = sges(&[4]);
    assert_eq!(
        check_send_wr(
            qp::Type::Rc,
            SQ,
            &wr(WrOpcode::AtomicCmpAndSwp, at(0x40), &four[..1])
        ),
        Err(PostError::Invalid)
    );
}

#[test]
fn inline_rules() {
    let s = sges(&[32, 32, 1]);
    let mut w = wr(WrOpcode::Send, Target::None, &s[..2]);
    w.send_flags |= SEND_INLINE;
    assert!(check_send_wr(qp::Type::Rc, SQ, &w).unwrap().inline);
    w.sges = &s[..3];
    assert_eq!(check_send_wr(qp::Type::Rc, SQ, &w), Err(PostError::Invalid));
    let mut r = wr(
        WrOpcode::RdmaRead,
        Target::Rdma {
            remote_addr: 0,
            rkey: 0,
        },
        &s[..1],
    );
    r.send_flags |= SEND_INLINE;
    assert_eq!(check_send_wr(qp::Type::Rc, SQ, &r), Err(PostError::Invalid));
}

/// What the encoder writes reads back through the user-WQE parser.
#[test]
fn send_wqe_round_trip() {
    let s = sges(&[100, 28]);
    let w = wr(
        WrOpcode::RdmaWriteWithImm,
        Target::Rdma {
            remote_addr: 0x9000,
            rkey: 0x77,
        },
        &s[..2],
    );
    let c = check_send_wr(qp::Type::Rc, SQ, &w).unwrap();
    let mut slot = [0xeeu8; 512];
    assert_eq!(
        encode_send_wqe(&mut slot, qp::Type::Rc, &w, &c, &[], 9),
        Some(true)
    );
    let p = SendWqe::from_bytes(
        &slot,
        &ParseLimits {
            qp_type: qp::Type::Rc,
            max_sge: 4,
            max_inline: 64,
            kernel: true,
        },
    )
    .unwrap();
    assert_eq!(p.wr_id, 0xabcd);
    assert_eq!(p.opcode, WrOpcode::RdmaWriteWithImm);
    assert_eq!(p.ex, 0x0102_0304);
    assert_eq!(p.iova, 0x9000);
    assert_eq!(p.length, 128);
    assert_eq!(p.num_sge, 2);
    assert_eq!(p.ssn, 9);
    assert_eq!(p.mask, c.mask);
    assert_eq!(p.sge(1), Some(s[1]));
    assert_eq!(
        p.wr,
        WrParams::Rdma {
            remote_addr: 0x9000,
            rkey: 0x77
        }
    );
}

#[test]
fn ud_and_inline_encoding() {
    let s = sges(&[3]);
    let mut w = wr(
        WrOpcode::Send,
        Target::Ud {
            remote_qpn: 1,
            remote_qkey: 0x8001_0000,
            pkey_index: 5,
            ah_num: 42,
        },
        &s[..1],
    );
    w.send_flags |= SEND_INLINE;
    let c = check_send_wr(qp::Type::Gsi, SQ, &w).unwrap();
    let mut slot = [0u8; 512];
    assert_eq!(
        encode_send_wqe(&mut slot, qp::Type::Gsi, &w, &c, b"abc", 1),
        Some(true)
    );
    assert_eq!(&slot[send_wqe::DATA..send_wqe::DATA + 3], b"abc");
    assert_eq!(slot[send_wr::UD_AH_NUM], 42);
    assert_eq!(
        u16::from_ne_bytes([
            slot[send_wr::UD_PKEY_INDEX],
            slot[send_wr::UD_PKEY_INDEX + 1]
        ]),
        5
    );
    // Plain UD does not carry the P_Key index; no immediate for SEND.
    let c = check_send_wr(qp::Type::Ud, SQ, &w).unwrap();
    encode_send_wqe(&mut slot, qp::Type::Ud, &w, &c, b"abc", 1).unwrap();
    assert_eq!(slot[send_wr::UD_PKEY_INDEX], 0);
    assert_eq!(slot[send_wr::EX], 0);
    let p = SendWqe::from_bytes(
        &slot,
        &ParseLimits {
            qp_type: qp::Type::Ud,
            max_sge: 4,
            max_inline: 64,
            kernel: true,
        },
    )
    .unwrap();
    assert_eq!(p.inline_data(), b"abc");
}

const REG: Target = Target::Reg {
    mr_lkey: 0x1234_5600,
    key: 0x1234_5601,
    access: 7,
    iova: 0xffff_0000_0001_0200,
    length: 0x2_0000,
};

fn reg_wr() -> SendWr<'static> {
    SendWr {
        wr_id: 1,
        opcode: WrOpcode::RegMr.as_raw(),
        send_flags: 2,
        ex: 0,
        target: REG,
        sges: &[],
    }
}

const KERNEL_RC: ParseLimits = ParseLimits {
    qp_type: qp::Type::Rc,
    max_sge: 4,
    max_inline: 64,
    kernel: true,
};

#[test]
fn local_ops_skip_dma_and_ssn() {
    let w = reg_wr();
    let c = check_send_wr(qp::Type::Rc, SQ, &w).unwrap();
    let mut slot = [0u8; 256];
    assert_eq!(
        encode_send_wqe(&mut slot, qp::Type::Rc, &w, &c, &[], 7),
        Some(false)
    );
    assert_eq!(slot[send_wqe::SSN], 0);
    let at = |off: usize, n: usize| &slot[off..off + n];
    assert_eq!(at(send_wr::REG_KEY, 4), &0x1234_5601u32.to_ne_bytes());
    // The lkey in the low half of C's pointer slot, the high half zero.
    assert_eq!(at(send_wr::REG_MR_LKEY, 8), &0x1234_5600u64.to_ne_bytes());
    assert_eq!(at(send_wr::REG_ACCESS, 4), &7u32.to_ne_bytes());
    assert_eq!(
        at(send_wr::REG_IOVA, 8),
        &0xffff_0000_0001_0200u64.to_ne_bytes()
    );
    assert_eq!(at(send_wr::REG_LENGTH, 8), &0x2_0000u64.to_ne_bytes());
    assert_eq!(slot[send_wqe::MASK], WrMask::LOCAL_OP.0 as u8);
    // No DMA part: the iova of the WQE itself stays zero.
    assert_eq!(at(send_wqe::IOVA, 8), &[0; 8]);
    // REG_MR is for RC only.
    assert_eq!(check_send_wr(qp::Type::Uc, SQ, &w), Err(PostError::Invalid));
    assert_eq!(check_send_wr(qp::Type::Ud, SQ, &w), Err(PostError::Invalid));
}

/// A REG_MR the driver wrote reads back from a kernel ring with every
/// field, and is refused from a user ring.
#[test]
fn reg_mr_round_trip_kernel_ring_only() {
    let w = reg_wr();
    let c = check_send_wr(qp::Type::Rc, SQ, &w).unwrap();
    let mut slot = [0xeeu8; 512];
    encode_send_wqe(&mut slot, qp::Type::Rc, &w, &c, &[], 7).unwrap();
    let p = SendWqe::from_bytes(&slot, &KERNEL_RC).unwrap();
    assert_eq!(p.opcode, WrOpcode::RegMr);
    assert_eq!(p.mask, WrMask::LOCAL_OP);
    assert_eq!(
        p.wr,
        WrParams::Reg {
            mr_lkey: 0x1234_5600,
            key: 0x1234_5601,
            access: 7,
            iova: 0xffff_0000_0001_0200,
            length: 0x2_0000
        }
    );
    assert_eq!(p.send_flags.0, 2);
    assert_eq!(p.payload, Payload::None);
    assert_eq!(p.opcode.wc_opcode(), WcOpcode::RegMr);
    let user = ParseLimits {
        kernel: false,
        ..KERNEL_RC
    };
    assert_eq!(
        SendWqe::from_bytes(&slot, &user).unwrap_err(),
        WqeError::BadOpcode(WrOpcode::RegMr.as_raw())
    );
    // Not on a kernel UC ring either: the opcode table says RC only.
    let uc = ParseLimits {
        qp_type: qp::Type::Uc,
        ..KERNEL_RC
    };
    assert!(SendWqe::from_bytes(&slot, &uc).is_err());
}

/// LOCAL_INV, the other local operation kernel users post around
/// REG_MR, carries its key in `ex` and reads back from either ring.
#[test]
fn local_inv_round_trip() {
    let w = SendWr {
        opcode: WrOpcode::LocalInv.as_raw(),
        ex: 0x1234_5601,
        target: Target::None,
        ..reg_wr()
    };
    let c = check_send_wr(qp::Type::Rc, SQ, &w).unwrap();
    let mut slot = [0u8; 512];
    assert_eq!(
        encode_send_wqe(&mut slot, qp::Type::Rc, &w, &c, &[], 7),
        Some(false)
    );
    for kernel in [true, false] {
        let p = SendWqe::from_bytes(
            &slot,
            &ParseLimits {
                kernel,
                ..KERNEL_RC
            },
        )
        .unwrap();
        assert_eq!(
            (p.opcode, p.ex, p.wr),
            (WrOpcode::LocalInv, 0x1234_5601, WrParams::None)
        );
        assert_eq!(p.opcode.wc_opcode(), WcOpcode::LocalInv);
    }
}

#[test]
fn short_slot() {
    let s = sges(&[1, 1, 1, 1]);
    let w = wr(WrOpcode::Send, Target::None, &s);
    let c = check_send_wr(qp::Type::Rc, SQ, &w).unwrap();
    let mut slot = [0u8; send_wqe::LEN + 16];
    assert_eq!(
        encode_send_wqe(&mut slot, qp::Type::Rc, &w, &c, &[], 1),
        None
    );
}

#[test]
fn recv_round_trip() {
    let s = sges(&[10, 20]);
    assert_eq!(check_recv_wr(1, &s[..2]), Err(PostError::Invalid));
    let len = check_recv_wr(2, &s[..2]).unwrap();
    let mut slot = [0xffu8; 128];
    encode_recv_wqe(&mut slot, 77, &s[..2], len).unwrap();
    let r = RecvWqe::from_bytes(&slot, 2).unwrap();
    assert_eq!((r.wr_id, r.length, r.num_sge), (77, 30, 2));
    assert_eq!(r.sge(0), Some(s[0]));
}
