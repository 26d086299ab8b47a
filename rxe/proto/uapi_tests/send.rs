// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Tests of the send WQE parser on images filled the way rdma-core fills
//! them: SGE lists, inline data, atomics, local operations, REG_MR, UD
//! destinations and the status write-back.

use super::*;

#[test]
fn rdma_write_with_sges() {
    let mut img = SendImage::new(
        512,
        WrOpcode::RdmaWriteWithImm.as_raw(),
        SendFlags::SIGNALED,
    );
    img.u32(send_wr::EX, 0xdead_beef)
        .u64(send_wr::RDMA_REMOTE_ADDR, 0x7000)
        .u32(send_wr::RDMA_RKEY, 0x1234)
        .u64(send_wqe::IOVA, 0x7000)
        .u32(send_wqe::SSN, 9)
        // Progress fields user space could forge; the parser ignores them.
        .u32(send_wqe::STATUS, 77)
        .u32(send_wqe::MASK, 0xffff)
        .u32(send_wqe::DMA + dma::CUR_SGE, 1000)
        .sges(&[sge(0x1000, 100, 7), sge(0x2000, 28, 8)]);
    let w = SendWqe::from_bytes(&img.buf, &RC).unwrap();
    assert_eq!(w.wr_id, 0x1122_3344_5566_7788);
    assert_eq!(w.opcode, WrOpcode::RdmaWriteWithImm);
    assert_eq!(w.ex, 0xdead_beef);
    assert_eq!(
        w.wr,
        WrParams::Rdma {
            remote_addr: 0x7000,
            rkey: 0x1234
        }
    );
    assert_eq!((w.iova, w.ssn, w.length, w.num_sge), (0x7000, 9, 128, 2));
    assert_eq!(w.mask, WrMask(0x11));
    assert_eq!(w.payload, Payload::Sges { count: 2 });
    assert_eq!(
        w.sges().collect::<Vec<_>>(),
        [sge(0x1000, 100, 7), sge(0x2000, 28, 8)]
    );
    assert_eq!(w.sge(2), None);
    assert!(w.inline_data().is_empty());
    assert!(w.opcode.has_imm());
    assert_eq!(w.opcode.wc_opcode(), WcOpcode::RdmaWrite);
}

#[test]
fn inline_send() {
    let data: Vec<u8> = (0..40).collect();
    let mut img = SendImage::new(256, WrOpcode::Send.as_raw(), SendFlags::INLINE);
    // rdma-core leaves num_sge at the count of the source buffers.
    img.inline(&data).u32(send_wqe::DMA + dma::NUM_SGE, 3);
    let w = SendWqe::from_bytes(&img.buf, &RC).unwrap();
    assert_eq!(w.payload, Payload::Inline { len: 40 });
    assert_eq!(w.inline_data(), &data[..]);
    assert_eq!(w.sges().count(), 0);
    assert_eq!(w.wr, WrParams::None);

    // Longer than the QP allows, or than the slot holds.
    let long: Vec<u8> = vec![1; 65];
    img = SendImage::new(512, WrOpcode::Send.as_raw(), SendFlags::INLINE);
    img.inline(&long);
    assert_eq!(
        SendWqe::from_bytes(&img.buf, &RC),
        Err(WqeError::InlineTooLong(65))
    );
    let wide = SqLimits {
        max_inline: 512,
        ..RC
    };
    img = SendImage::new(256, WrOpcode::Send.as_raw(), SendFlags::INLINE);
    img.dma_len(49);
    assert_eq!(
        SendWqe::from_bytes(&img.buf, &wide),
        Err(WqeError::InlineTooLong(49))
    );
    img.dma_len(48);
    assert!(SendWqe::from_bytes(&img.buf, &wide).is_ok());

    // INLINE on a read is ignored, as the C requester ignores it.
    img = SendImage::new(256, WrOpcode::RdmaRead.as_raw(), SendFlags::INLINE);
    img.sges(&[sge(1, 16, 2)]);
    let w = SendWqe::from_bytes(&img.buf, &RC).unwrap();
    assert_eq!(w.payload, Payload::Sges { count: 1 });
}

#[test]
fn rejects_bad_opcodes() {
    for (op, sq) in [
        (0x20, RC),
        (99, RC),
        (10, RC),
        (12, RC),
        (4, UD),
        (0, UD),
        (7, UD),
    ] {
        let img = SendImage::new(256, op, 0);
        assert_eq!(
            SendWqe::from_bytes(&img.buf, &sq),
            Err(WqeError::BadOpcode(op)),
            "{op}"
        );
    }
    let gsi = SqLimits {
        qp_type: qp::Type::Gsi,
        ..UD
    };
    let img = SendImage::new(256, WrOpcode::SendWithInv.as_raw(), 0);
    assert_eq!(
        SendWqe::from_bytes(&img.buf, &gsi),
        Err(WqeError::BadOpcode(9))
    );
    assert_eq!(WqeError::BadOpcode(9).wc_status(), WcStatus::LocQpOpErr);
}

#[test]
fn rejects_bad_sge_lists() {
    let mut img = SendImage::new(512, WrOpcode::Send.as_raw(), 0);
    img.sges(&[sge(1, 1, 1); 5]);
    assert_eq!(
        SendWqe::from_bytes(&img.buf, &RC),
        Err(WqeError::TooManySge(5))
    );

    // Three SGEs do not fit after a 208-byte WQE in a 240-byte slot.
    let mut img = SendImage::new(240, WrOpcode::Send.as_raw(), 0);
    img.u32(send_wqe::DMA + dma::NUM_SGE, 3);
    assert_eq!(
        SendWqe::from_bytes(&img.buf, &RC),
        Err(WqeError::SgeOutsideSlot)
    );

    let mut img = SendImage::new(256, WrOpcode::Send.as_raw(), 0);
    img.sges(&[sge(1, 10, 1), sge(2, 20, 1)]).dma_len(31);
    assert_eq!(
        SendWqe::from_bytes(&img.buf, &RC),
        Err(WqeError::LengthMismatch {
            length: 31,
            sum: 30
        })
    );

    // Lengths whose sum wraps a u32: caught by the u64 sum.
    let mut img = SendImage::new(256, WrOpcode::Send.as_raw(), 0);
    img.sges(&[sge(1, 0xffff_fff0, 1), sge(2, 0x20, 1)]);
    assert_eq!(
        SendWqe::from_bytes(&img.buf, &RC),
        Err(WqeError::LengthMismatch {
            length: 0x10,
            sum: 0x1_0000_0010
        })
    );

    let mut img = SendImage::new(256, WrOpcode::Send.as_raw(), 0);
    img.sges(&[sge(1, 0x8000_0000, 1), sge(2, 1, 1)]);
    assert_eq!(
        SendWqe::from_bytes(&img.buf, &RC),
        Err(WqeError::MessageTooLong(0x8000_0001))
    );
    let mut img = SendImage::new(256, WrOpcode::Send.as_raw(), 0);
    img.sges(&[sge(1, 0x8000_0000, 1)]);
    assert!(SendWqe::from_bytes(&img.buf, &RC).is_ok());

    assert_eq!(
        SendWqe::from_bytes(&[0u8; 207], &RC),
        Err(WqeError::Truncated)
    );
}

#[test]
fn atomics() {
    let mut img = SendImage::new(256, WrOpcode::AtomicCmpAndSwp.as_raw(), 0);
    img.u64(send_wr::ATOMIC_REMOTE_ADDR, 0x8000)
        .u64(send_wr::ATOMIC_COMPARE_ADD, 1)
        .u64(send_wr::ATOMIC_SWAP, 2)
        .u32(send_wr::ATOMIC_RKEY, 3)
        .sges(&[sge(0x100, 8, 4)]);
    let w = SendWqe::from_bytes(&img.buf, &RC).unwrap();
    assert_eq!(
        w.wr,
        WrParams::Atomic {
            remote_addr: 0x8000,
            compare_add: 1,
            swap: 2,
            rkey: 3
        }
    );
    img.sges(&[sge(0x100, 4, 4)]);
    assert_eq!(
        SendWqe::from_bytes(&img.buf, &RC),
        Err(WqeError::AtomicLength(4))
    );

    // rdma-core's wr_atomic_write: address and rkey in the `rdma` member.
    let mut img = SendImage::new(256, WrOpcode::AtomicWrite.as_raw(), SendFlags::SIGNALED);
    img.u64(send_wr::RDMA_REMOTE_ADDR, 0x8008)
        .u32(send_wr::RDMA_RKEY, 0x1234)
        .u64(send_wqe::IOVA, 0x8008)
        .inline(&[1, 2, 3, 4, 5, 6, 7, 8]);
    let w = SendWqe::from_bytes(&img.buf, &RC).unwrap();
    assert_eq!(w.payload, Payload::AtomicWrite([1, 2, 3, 4, 5, 6, 7, 8]));
    assert_eq!(
        w.wr,
        WrParams::Rdma {
            remote_addr: 0x8008,
            rkey: 0x1234
        }
    );
    assert_eq!(w.wr.remote_key(), 0x1234);
    img.dma_len(4096);
    assert_eq!(
        SendWqe::from_bytes(&img.buf, &RC),
        Err(WqeError::AtomicLength(4096))
    );
    assert_eq!(WqeError::AtomicLength(0).wc_status(), WcStatus::LocLenErr);
}

#[test]
fn local_ops_and_flush() {
    let mut img = SendImage::new(256, WrOpcode::LocalInv.as_raw(), 0);
    // The dma part of a local op means nothing; garbage SGEs are not read.
    img.u32(send_wr::EX, 0x4242)
        .u32(send_wqe::DMA + dma::NUM_SGE, 2)
        .dma_len(12345);
    let w = SendWqe::from_bytes(&img.buf, &RC).unwrap();
    assert_eq!(
        (w.payload, w.ex, w.mask),
        (Payload::None, 0x4242, WrMask::LOCAL_OP)
    );

    let mut img = SendImage::new(256, WrOpcode::BindMw.as_raw(), 0);
    img.u64(send_wr::MW_ADDR, 1)
        .u64(send_wr::MW_LENGTH, 2)
        .u32(send_wr::MW_MR_LKEY, 3)
        .u32(send_wr::MW_MW_RKEY, 4)
        .u32(send_wr::MW_RKEY, 5)
        .u32(send_wr::MW_ACCESS, access::REMOTE_READ);
    let uc = SqLimits {
        qp_type: qp::Type::Uc,
        ..RC
    };
    let w = SendWqe::from_bytes(&img.buf, &uc).unwrap();
    assert_eq!(
        w.wr,
        WrParams::Mw {
            addr: 1,
            length: 2,
            mr_lkey: 3,
            mw_rkey: 4,
            rkey: 5,
            access: 4
        }
    );

    let mut img = SendImage::new(256, WrOpcode::Flush.as_raw(), 0);
    img.u64(send_wr::FLUSH_REMOTE_ADDR, 0x9000)
        .u32(send_wr::FLUSH_LENGTH, 64)
        .u32(send_wr::FLUSH_RKEY, 6)
        .u8(send_wr::FLUSH_TYPE, 1)
        .u8(send_wr::FLUSH_LEVEL, 2)
        .dma_len(64);
    let w = SendWqe::from_bytes(&img.buf, &RC).unwrap();
    assert_eq!(
        w.wr,
        WrParams::Flush {
            remote_addr: 0x9000,
            length: 64,
            rkey: 6,
            kind: 1,
            level: 2
        }
    );
    assert_eq!((w.payload, w.length), (Payload::None, 64));
}

/// REG_MR: a user ring may never carry it, whatever else the slot says; a
/// kernel ring gives back the `reg` member and the range after it.
#[test]
fn reg_mr_only_from_kernel_rings() {
    let mut img = SendImage::new(256, WrOpcode::RegMr.as_raw(), SendFlags::SIGNALED);
    img.u32(send_wr::REG_MR_LKEY, 0x0000_3300)
        .u32(send_wr::REG_KEY, 0x0000_3301)
        .u32(send_wr::REG_ACCESS, access::REMOTE_READ)
        .u64(send_wr::REG_IOVA, 0xdead_0000_0000_1000)
        .u64(send_wr::REG_LENGTH, 1 << 20)
        // Garbage in the DMA part is not read for a local operation.
        .dma_len(12345);
    for qp_type in [qp::Type::Rc, qp::Type::Uc, qp::Type::Ud, qp::Type::Gsi] {
        let user = SqLimits { qp_type, ..RC };
        assert_eq!(
            SendWqe::from_bytes(&img.buf, &user),
            Err(WqeError::BadOpcode(0x20))
        );
    }
    assert_eq!(WqeError::BadOpcode(0x20).wc_status(), WcStatus::LocQpOpErr);
    let kernel = SqLimits { kernel: true, ..RC };
    let w = SendWqe::from_bytes(&img.buf, &kernel).unwrap();
    assert_eq!(
        w.wr,
        WrParams::Reg {
            mr_lkey: 0x3300,
            key: 0x3301,
            access: 4,
            iova: 0xdead_0000_0000_1000,
            length: 1 << 20
        }
    );
    assert_eq!((w.payload, w.mask), (Payload::None, WrMask::LOCAL_OP));
    assert!(w.send_flags.has(SendFlags::SIGNALED));
    // The opcode table still rules on kernel rings: RC only.
    for qp_type in [qp::Type::Uc, qp::Type::Ud, qp::Type::Gsi] {
        assert_eq!(
            SendWqe::from_bytes(&img.buf, &SqLimits { qp_type, ..kernel }),
            Err(WqeError::BadOpcode(0x20))
        );
    }
    // The driver's fields fit the union, after C's `reg` member.
    const _: () = assert!(send_wr::REG_IOVA >= send_wr::REG_ACCESS + 4);
    const _: () = assert!(send_wr::REG_LENGTH >= send_wr::REG_IOVA + 8);
    const _: () = assert!(send_wr::REG_LENGTH + 8 <= send_wr::LEN);
}

#[test]
fn ud_destinations() {
    let mut img = SendImage::new(256, WrOpcode::SendWithImm.as_raw(), 0);
    img.u32(send_wr::UD_REMOTE_QPN, 0x11)
        .u32(send_wr::UD_REMOTE_QKEY, 0x22)
        .u32(send_wr::UD_AH_NUM, 5)
        .u8(send_wr::UD_AV + av::NETWORK_TYPE, 9)
        .sges(&[sge(1, 10, 1)]);
    let w = SendWqe::from_bytes(&img.buf, &UD).unwrap();
    assert_eq!(
        w.wr,
        WrParams::Ud {
            remote_qpn: 0x11,
            remote_qkey: 0x22,
            pkey_index: 0,
            ah_num: 5,
            av: None
        }
    );

    // AH number 0: the embedded AV is the destination and must make sense.
    img.u32(send_wr::UD_AH_NUM, 0);
    assert_eq!(
        SendWqe::from_bytes(&img.buf, &UD),
        Err(WqeError::BadNetworkType(9))
    );
    let a = send_wr::UD_AV;
    img.u8(a + av::NETWORK_TYPE, 1)
        .u8(a + av::PORT_NUM, 1)
        .u8(a + av::DMAC, 0x02)
        .u8(a + av::GRH + global_route::HOP_LIMIT, 64)
        .u8(a + av::SGID_ADDR + sockaddr::IN_ADDR, 10)
        .u8(a + av::DGID_ADDR + sockaddr::IN_ADDR + 3, 7);
    let w = SendWqe::from_bytes(&img.buf, &UD).unwrap();
    let WrParams::Ud { av: Some(v), .. } = w.wr else {
        panic!("{:?}", w.wr)
    };
    assert_eq!(
        (v.network_type, v.port_num, v.dmac[0], v.grh.hop_limit),
        (NetworkType::Ipv4, 1, 2, 64)
    );
    assert_eq!((v.src_ipv4(), v.dst_ipv4()), ([10, 0, 0, 0], [0, 0, 0, 7]));
    assert_eq!(v.src_ipv6()[0], 0);
}

#[test]
fn send_status_write_back() {
    let mut slot = vec![0u8; 256];
    write_send_status(&mut slot, WcStatus::WrFlushErr, WqeState::Error).unwrap();
    write_send_psns(&mut slot, 0x10, 0x20).unwrap();
    assert_eq!(u32_at(&slot, send_wqe::STATUS), Some(5));
    assert_eq!(u32_at(&slot, send_wqe::STATE), Some(4));
    assert_eq!(u32_at(&slot, send_wqe::FIRST_PSN), Some(0x10));
    assert_eq!(u32_at(&slot, send_wqe::LAST_PSN), Some(0x20));
    assert_eq!(
        write_send_status(&mut [0u8; 150], WcStatus::Success, WqeState::Done),
        Err(ShortBuffer)
    );
}
