// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Unit and fuzz tests of the user ABI code.
//!
//! Here: layouts, enums and opcode masks against compiled C, the send WQE
//! image builder, and the receive WQE, CQE, create-response and queue
//! geometry tests. Send WQE parsing is in `tests/send.rs`, the fuzz in
//! `tests/fuzz.rs`.

use super::*;
use std::vec;
use std::vec::Vec;

#[path = "uapi_tests/fuzz.rs"]
mod fuzz;
#[path = "uapi_tests/send.rs"]
mod send;

/// `sizeof`/`offsetof` printed by a C program compiled with clang-19
/// against the 6.12.117 `rdma_user_rxe.h` and `ib_user_verbs.h`.
#[test]
fn layout_matches_compiled_c() {
    let table: &[(&str, usize, usize)] = &[
        ("sizeof rxe_queue_buf", queue_buf::LEN, 384),
        ("rxe_queue_buf.log2_elem_size", queue_buf::LOG2_ELEM_SIZE, 0),
        ("rxe_queue_buf.index_mask", queue_buf::INDEX_MASK, 4),
        (
            "rxe_queue_buf.producer_index",
            queue_buf::PRODUCER_INDEX,
            128,
        ),
        (
            "rxe_queue_buf.consumer_index",
            queue_buf::CONSUMER_INDEX,
            256,
        ),
        ("rxe_queue_buf.data", queue_buf::DATA, 384),
        ("sizeof rxe_global_route", global_route::LEN, 24),
        ("rxe_global_route.dgid", global_route::DGID, 0),
        ("rxe_global_route.flow_label", global_route::FLOW_LABEL, 16),
        ("rxe_global_route.sgid_index", global_route::SGID_INDEX, 20),
        ("rxe_global_route.hop_limit", global_route::HOP_LIMIT, 21),
        (
            "rxe_global_route.traffic_class",
            global_route::TRAFFIC_CLASS,
            22,
        ),
        ("sizeof rxe_av", av::LEN, 88),
        ("rxe_av.port_num", av::PORT_NUM, 0),
        ("rxe_av.network_type", av::NETWORK_TYPE, 1),
        ("rxe_av.dmac", av::DMAC, 2),
        ("rxe_av.grh", av::GRH, 8),
        ("rxe_av.sgid_addr", av::SGID_ADDR, 32),
        ("rxe_av.dgid_addr", av::DGID_ADDR, 60),
        ("sizeof sockaddr_in6", av::SOCKADDR_LEN, 28),
        ("sockaddr_in.sin_family", sockaddr::FAMILY, 0),
        ("sockaddr_in.sin_port", sockaddr::PORT, 2),
        ("sockaddr_in.sin_addr", sockaddr::IN_ADDR, 4),
        ("sockaddr_in6.sin6_flowinfo", sockaddr::IN6_FLOWINFO, 4),
        ("sockaddr_in6.sin6_addr", sockaddr::IN6_ADDR, 8),
        ("sockaddr_in6.sin6_scope_id", sockaddr::IN6_SCOPE_ID, 24),
        ("sizeof rxe_send_wr", send_wr::LEN, 144),
        ("rxe_send_wr.wr_id", send_wr::WR_ID, 0),
        ("rxe_send_wr.reserved", send_wr::RESERVED, 8),
        ("rxe_send_wr.opcode", send_wr::OPCODE, 12),
        ("rxe_send_wr.send_flags", send_wr::SEND_FLAGS, 16),
        ("rxe_send_wr.ex", send_wr::EX, 20),
        ("rxe_send_wr.wr", send_wr::WR, 24),
        (
            "rxe_send_wr.wr.flush.remote_addr",
            send_wr::FLUSH_REMOTE_ADDR,
            24,
        ),
        ("rxe_send_wr.wr.flush.length", send_wr::FLUSH_LENGTH, 32),
        ("rxe_send_wr.wr.flush.rkey", send_wr::FLUSH_RKEY, 36),
        ("rxe_send_wr.wr.flush.type", send_wr::FLUSH_TYPE, 40),
        ("rxe_send_wr.wr.flush.level", send_wr::FLUSH_LEVEL, 41),
        (
            "rxe_send_wr.wr.rdma.remote_addr",
            send_wr::RDMA_REMOTE_ADDR,
            24,
        ),
        ("rxe_send_wr.wr.rdma.rkey", send_wr::RDMA_RKEY, 32),
        (
            "rxe_send_wr.wr.atomic.remote_addr",
            send_wr::ATOMIC_REMOTE_ADDR,
            24,
        ),
        (
            "rxe_send_wr.wr.atomic.compare_add",
            send_wr::ATOMIC_COMPARE_ADD,
            32,
        ),
        ("rxe_send_wr.wr.atomic.swap", send_wr::ATOMIC_SWAP, 40),
        ("rxe_send_wr.wr.atomic.rkey", send_wr::ATOMIC_RKEY, 48),
        ("rxe_send_wr.wr.ud.remote_qpn", send_wr::UD_REMOTE_QPN, 24),
        ("rxe_send_wr.wr.ud.remote_qkey", send_wr::UD_REMOTE_QKEY, 28),
        ("rxe_send_wr.wr.ud.pkey_index", send_wr::UD_PKEY_INDEX, 32),
        ("rxe_send_wr.wr.ud.ah_num", send_wr::UD_AH_NUM, 36),
        ("rxe_send_wr.wr.ud.pad", send_wr::UD_PAD, 40),
        ("rxe_send_wr.wr.ud.av", send_wr::UD_AV, 56),
        ("rxe_send_wr.wr.mw.addr", send_wr::MW_ADDR, 24),
        ("rxe_send_wr.wr.mw.length", send_wr::MW_LENGTH, 32),
        ("rxe_send_wr.wr.mw.mr_lkey", send_wr::MW_MR_LKEY, 40),
        ("rxe_send_wr.wr.mw.mw_rkey", send_wr::MW_MW_RKEY, 44),
        ("rxe_send_wr.wr.mw.rkey", send_wr::MW_RKEY, 48),
        ("rxe_send_wr.wr.mw.access", send_wr::MW_ACCESS, 52),
        ("rxe_send_wr.wr.reg.mr", send_wr::REG_MR_LKEY, 24),
        ("rxe_send_wr.wr.reg.key", send_wr::REG_KEY, 32),
        ("rxe_send_wr.wr.reg.access", send_wr::REG_ACCESS, 36),
        ("sizeof rxe_sge", sge::LEN, 16),
        ("rxe_sge.addr", sge::ADDR, 0),
        ("rxe_sge.length", sge::LENGTH, 8),
        ("rxe_sge.lkey", sge::LKEY, 12),
        ("sizeof mminfo", mminfo::LEN, 16),
        ("mminfo.offset", mminfo::OFFSET, 0),
        ("mminfo.size", mminfo::SIZE, 8),
        ("mminfo.pad", mminfo::PAD, 12),
        ("sizeof rxe_dma_info", dma::LEN, 24),
        ("rxe_dma_info.length", dma::LENGTH, 0),
        ("rxe_dma_info.resid", dma::RESID, 4),
        ("rxe_dma_info.cur_sge", dma::CUR_SGE, 8),
        ("rxe_dma_info.num_sge", dma::NUM_SGE, 12),
        ("rxe_dma_info.sge_offset", dma::SGE_OFFSET, 16),
        ("rxe_dma_info.reserved", dma::RESERVED, 20),
        ("rxe_dma_info.sge", dma::DATA, 24),
        ("sizeof rxe_send_wqe", send_wqe::LEN, 208),
        ("rxe_send_wqe.wr", send_wqe::WR, 0),
        ("rxe_send_wqe.status", send_wqe::STATUS, 144),
        ("rxe_send_wqe.state", send_wqe::STATE, 148),
        ("rxe_send_wqe.iova", send_wqe::IOVA, 152),
        ("rxe_send_wqe.mask", send_wqe::MASK, 160),
        ("rxe_send_wqe.first_psn", send_wqe::FIRST_PSN, 164),
        ("rxe_send_wqe.last_psn", send_wqe::LAST_PSN, 168),
        ("rxe_send_wqe.ack_length", send_wqe::ACK_LENGTH, 172),
        ("rxe_send_wqe.ssn", send_wqe::SSN, 176),
        ("rxe_send_wqe.has_rd_atomic", send_wqe::HAS_RD_ATOMIC, 180),
        ("rxe_send_wqe.dma", send_wqe::DMA, 184),
        ("rxe_send_wqe.dma.sge", send_wqe::DATA, 184 + 24),
        ("sizeof rxe_recv_wqe", recv_wqe::LEN, 40),
        ("rxe_recv_wqe.wr_id", recv_wqe::WR_ID, 0),
        ("rxe_recv_wqe.reserved", recv_wqe::RESERVED, 8),
        ("rxe_recv_wqe.padding", recv_wqe::PADDING, 12),
        ("rxe_recv_wqe.dma", recv_wqe::DMA, 16),
        ("rxe_recv_wqe.dma.sge", recv_wqe::DATA, 16 + 24),
        ("sizeof rxe_create_ah_resp", resp::CREATE_AH_LEN, 8),
        ("rxe_create_ah_resp.ah_num", resp::CREATE_AH_AH_NUM, 0),
        ("rxe_create_ah_resp.reserved", resp::CREATE_AH_RESERVED, 4),
        ("sizeof rxe_create_cq_resp", resp::CREATE_CQ_LEN, 16),
        ("rxe_create_cq_resp.mi", resp::CREATE_CQ_MI, 0),
        ("sizeof rxe_resize_cq_resp", resp::RESIZE_CQ_LEN, 16),
        ("rxe_resize_cq_resp.mi", resp::RESIZE_CQ_MI, 0),
        ("sizeof rxe_create_qp_resp", resp::CREATE_QP_LEN, 32),
        ("rxe_create_qp_resp.rq_mi", resp::CREATE_QP_RQ_MI, 0),
        ("rxe_create_qp_resp.sq_mi", resp::CREATE_QP_SQ_MI, 16),
        ("sizeof rxe_create_srq_resp", resp::CREATE_SRQ_LEN, 24),
        ("rxe_create_srq_resp.mi", resp::CREATE_SRQ_MI, 0),
        ("rxe_create_srq_resp.srq_num", resp::CREATE_SRQ_SRQ_NUM, 16),
        (
            "rxe_create_srq_resp.reserved",
            resp::CREATE_SRQ_RESERVED,
            20,
        ),
        ("sizeof rxe_modify_srq_cmd", resp::MODIFY_SRQ_LEN, 8),
        (
            "rxe_modify_srq_cmd.mmap_info_addr",
            resp::MODIFY_SRQ_MMAP_INFO_ADDR,
            0,
        ),
        ("sizeof ib_uverbs_wc", uverbs_wc::LEN, 48),
        ("ib_uverbs_wc.wr_id", uverbs_wc::WR_ID, 0),
        ("ib_uverbs_wc.status", uverbs_wc::STATUS, 8),
        ("ib_uverbs_wc.opcode", uverbs_wc::OPCODE, 12),
        ("ib_uverbs_wc.vendor_err", uverbs_wc::VENDOR_ERR, 16),
        ("ib_uverbs_wc.byte_len", uverbs_wc::BYTE_LEN, 20),
        ("ib_uverbs_wc.ex", uverbs_wc::EX, 24),
        ("ib_uverbs_wc.qp_num", uverbs_wc::QP_NUM, 28),
        ("ib_uverbs_wc.src_qp", uverbs_wc::SRC_QP, 32),
        ("ib_uverbs_wc.wc_flags", uverbs_wc::WC_FLAGS, 36),
        ("ib_uverbs_wc.pkey_index", uverbs_wc::PKEY_INDEX, 40),
        ("ib_uverbs_wc.slid", uverbs_wc::SLID, 42),
        ("ib_uverbs_wc.sl", uverbs_wc::SL, 44),
        ("ib_uverbs_wc.dlid_path_bits", uverbs_wc::DLID_PATH_BITS, 45),
        ("ib_uverbs_wc.port_num", uverbs_wc::PORT_NUM, 46),
        ("ib_uverbs_wc.reserved", uverbs_wc::RESERVED, 47),
        // A mimic of the kernel's struct ib_wc, compiled the same way.
        ("sizeof ib_wc (x86-64)", CQE_LEN, 72),
    ];
    for (name, ours, c) in table {
        assert_eq!(ours, c, "{name}");
    }
    // The union members all start where the union does.
    assert_eq!(send_wr::WR + av::LEN + 32, send_wr::LEN);
    assert_eq!(send_wqe::DMA + dma::LEN, send_wqe::DATA);
    assert_eq!(
        to_usize(limits::MAX_WQE_SIZE) - SEND_DATA_AREA,
        send_wqe::LEN
    );
}

/// The C enum values, printed by the same C program.
#[test]
fn enum_values_match_compiled_c() {
    assert_eq!(WcOpcode::RegMr.as_raw(), 10);
    assert_eq!(WcOpcode::MaskedCompSwap.as_raw(), 11);
    assert_eq!(WcOpcode::MaskedFetchAdd.as_raw(), 12);
    assert_eq!(WcOpcode::Flush.as_raw(), 8);
    assert_eq!(WcOpcode::AtomicWrite.as_raw(), 9);
    assert_eq!(WcOpcode::Lso.as_raw(), 7);
    assert_eq!(WcOpcode::Recv.as_raw(), 128);
    assert_eq!(WcOpcode::RecvRdmaWithImm.as_raw(), 129);
    assert_eq!(WcStatus::GeneralErr.as_raw(), 21);
    assert_eq!(WcStatus::RespTimeoutErr.as_raw(), 20);
    assert_eq!(WcStatus::LocQpOpErr.as_raw(), 2);
    assert_eq!(WrOpcode::RegMr.as_raw(), 0x20);
    assert_eq!(WrOpcode::Lso.as_raw(), 10);
    assert_eq!(WrOpcode::Flush.as_raw(), 14);
    assert_eq!(WrOpcode::AtomicWrite.as_raw(), 15);
    assert_eq!(access::SUPPORTED, 0x3ff0_03ff);
    for v in 0..64 {
        match WcStatus::try_from(v) {
            Ok(s) => assert_eq!(s.as_raw(), v),
            Err(e) => assert!(v > 21 && e == v),
        }
        match WrOpcode::try_from(v) {
            Ok(o) => assert_eq!(o.as_raw(), v),
            Err(e) => assert!((v > 15 && v != 0x20) && e == v),
        }
    }
}

/// `rxe_wr_opcode_info[]` of rxe_opcode.c, one row per opcode:
/// masks for (GSI, RC, UC, UD); SMI and the other types have none.
#[test]
fn wr_opcode_masks_match_c_table() {
    const IW: u32 = 0x11; // INLINE | WRITE
    const IS: u32 = 0x05; // INLINE | SEND
    let rows: &[(WrOpcode, [u32; 4])] = &[
        (WrOpcode::RdmaWrite, [0, IW, IW, 0]),
        (WrOpcode::RdmaWriteWithImm, [0, IW, IW, 0]),
        (WrOpcode::Send, [IS, IS, IS, IS]),
        (WrOpcode::SendWithImm, [IS, IS, IS, IS]),
        (WrOpcode::RdmaRead, [0, 0x08, 0, 0]),
        (WrOpcode::AtomicCmpAndSwp, [0, 0x02, 0, 0]),
        (WrOpcode::AtomicFetchAndAdd, [0, 0x02, 0, 0]),
        (WrOpcode::Lso, [0, 0, 0, 0]),
        (WrOpcode::SendWithInv, [0, IS, IS, IS]),
        (WrOpcode::RdmaReadWithInv, [0, 0x08, 0, 0]),
        (WrOpcode::LocalInv, [0, 0x20, 0, 0]),
        (WrOpcode::RegMr, [0, 0x20, 0, 0]),
        (WrOpcode::BindMw, [0, 0x20, 0x20, 0]),
        (WrOpcode::Flush, [0, 0x40, 0, 0]),
        (WrOpcode::AtomicWrite, [0, 0x80, 0, 0]),
        (WrOpcode::MaskedAtomicCmpAndSwp, [0, 0, 0, 0]),
        (WrOpcode::MaskedAtomicFetchAndAdd, [0, 0, 0, 0]),
    ];
    let types = [qp::Type::Gsi, qp::Type::Rc, qp::Type::Uc, qp::Type::Ud];
    for (op, masks) in rows {
        for (t, m) in types.iter().zip(masks) {
            assert_eq!(op.mask(*t).0, *m, "{op:?} on {t:?}");
        }
        for t in qp::Type::ALL {
            if !types.contains(&t) {
                assert!(op.mask(t).is_empty(), "{op:?} on {t:?}");
            }
        }
    }
}

/// A send WQE image, filled the way rdma-core's provider fills one.
struct SendImage {
    buf: Vec<u8>,
}

impl SendImage {
    fn new(slot: usize, opcode: u32, flags: u32) -> SendImage {
        let mut s = SendImage { buf: vec![0; slot] };
        s.u64(send_wr::WR_ID, 0x1122_3344_5566_7788);
        s.u32(send_wr::OPCODE, opcode);
        s.u32(send_wr::SEND_FLAGS, flags);
        s
    }
    fn u8(&mut self, off: usize, v: u8) -> &mut Self {
        self.buf[off] = v;
        self
    }
    fn u32(&mut self, off: usize, v: u32) -> &mut Self {
        self.buf[off..off + 4].copy_from_slice(&v.to_ne_bytes());
        self
    }
    fn u64(&mut self, off: usize, v: u64) -> &mut Self {
        self.buf[off..off + 8].copy_from_slice(&v.to_ne_bytes());
        self
    }
    fn sges(&mut self, sges: &[Sge]) -> &mut Self {
        let mut len = 0u32;
        for (i, s) in sges.iter().enumerate() {
            let off = send_wqe::DATA + i * sge::LEN;
            self.u64(off + sge::ADDR, s.addr)
                .u32(off + sge::LENGTH, s.length)
                .u32(off + sge::LKEY, s.lkey);
            len = len.wrapping_add(s.length);
        }
        self.u32(send_wqe::DMA + dma::NUM_SGE, sges.len() as u32)
            .dma_len(len)
    }
    fn inline(&mut self, data: &[u8]) -> &mut Self {
        self.buf[send_wqe::DATA..send_wqe::DATA + data.len()].copy_from_slice(data);
        self.dma_len(data.len() as u32)
    }
    fn dma_len(&mut self, len: u32) -> &mut Self {
        self.u32(send_wqe::DMA + dma::LENGTH, len)
            .u32(send_wqe::DMA + dma::RESID, len)
    }
}

const RC: SqLimits = SqLimits {
    qp_type: qp::Type::Rc,
    max_sge: 4,
    max_inline: 64,
    kernel: false,
};
const UD: SqLimits = SqLimits {
    qp_type: qp::Type::Ud,
    max_sge: 4,
    max_inline: 64,
    kernel: false,
};

fn sge(addr: u64, length: u32, lkey: u32) -> Sge {
    Sge { addr, length, lkey }
}

fn recv_image(slot: usize, sges: &[Sge]) -> Vec<u8> {
    let mut b = vec![0u8; slot];
    b[..8].copy_from_slice(&42u64.to_ne_bytes());
    let mut len = 0u32;
    for (i, s) in sges.iter().enumerate() {
        let off = recv_wqe::DATA + i * sge::LEN;
        b[off..off + 8].copy_from_slice(&s.addr.to_ne_bytes());
        b[off + 8..off + 12].copy_from_slice(&s.length.to_ne_bytes());
        b[off + 12..off + 16].copy_from_slice(&s.lkey.to_ne_bytes());
        len = len.wrapping_add(s.length);
    }
    let d = recv_wqe::DMA;
    b[d + dma::LENGTH..d + dma::LENGTH + 4].copy_from_slice(&len.to_ne_bytes());
    b[d + dma::NUM_SGE..d + dma::NUM_SGE + 4].copy_from_slice(&(sges.len() as u32).to_ne_bytes());
    b
}

#[test]
fn recv_wqes() {
    let b = recv_image(64, &[sge(0x10, 100, 3)]);
    let w = RecvWqe::from_bytes(&b, 1).unwrap();
    assert_eq!((w.wr_id, w.length, w.num_sge), (42, 100, 1));
    assert_eq!(w.sges().collect::<Vec<_>>(), [sge(0x10, 100, 3)]);
    assert_eq!(RecvWqe::from_bytes(&b, 0), Err(WqeError::TooManySge(1)));
    let b = recv_image(128, &[sge(0x10, 1, 3), sge(0x20, 1, 3)]);
    assert_eq!(
        RecvWqe::from_bytes(&b[..64], 2),
        Err(WqeError::SgeOutsideSlot)
    );
    assert!(RecvWqe::from_bytes(&b[..72], 2).is_ok());
    let b = recv_image(128, &[sge(0, 0x8000_0000, 1), sge(0, 0x8000_0000, 1)]);
    assert_eq!(
        RecvWqe::from_bytes(&b, 2),
        Err(WqeError::LengthMismatch {
            length: 0,
            sum: 1 << 32
        })
    );
    let b = recv_image(64, &[]);
    assert_eq!(RecvWqe::from_bytes(&b, 0).map(|w| w.length), Ok(0));
    assert_eq!(RecvWqe::from_bytes(&b[..39], 0), Err(WqeError::Truncated));
}

#[test]
fn cqe_layout() {
    let mut slot = [0xaau8; 128];
    let cqe = Cqe {
        opcode: WcOpcode::RecvRdmaWithImm,
        vendor_err: 3,
        byte_len: 4,
        ex: 0x0102_0304,
        src_qp: 5,
        wc_flags: wc_flags::GRH | wc_flags::WITH_IMM,
        pkey_index: 6,
        slid: 7,
        sl: 8,
        dlid_path_bits: 9,
        port_num: 1,
        ..Cqe::new(0x55, WcStatus::Success, 17)
    };
    cqe.write(&mut slot).unwrap();
    assert_eq!(u64_at(&slot, uverbs_wc::WR_ID), Some(0x55));
    assert_eq!(u32_at(&slot, uverbs_wc::STATUS), Some(0));
    assert_eq!(u32_at(&slot, uverbs_wc::OPCODE), Some(129));
    assert_eq!(u32_at(&slot, uverbs_wc::VENDOR_ERR), Some(3));
    assert_eq!(u32_at(&slot, uverbs_wc::BYTE_LEN), Some(4));
    assert_eq!(u32_at(&slot, uverbs_wc::EX), Some(0x0102_0304));
    assert_eq!(u32_at(&slot, uverbs_wc::QP_NUM), Some(17));
    assert_eq!(u32_at(&slot, uverbs_wc::SRC_QP), Some(5));
    assert_eq!(u32_at(&slot, uverbs_wc::WC_FLAGS), Some(3));
    assert_eq!(u16_at(&slot, uverbs_wc::PKEY_INDEX), Some(6));
    assert_eq!(u16_at(&slot, uverbs_wc::SLID), Some(7));
    assert_eq!(slot[uverbs_wc::SL..uverbs_wc::LEN], [8, 9, 1, 0]);
    // The rest of the rxe_cqe union is zeroed, the rest of the slot untouched.
    assert!(slot[uverbs_wc::LEN..CQE_LEN].iter().all(|&b| b == 0));
    assert!(slot[CQE_LEN..].iter().all(|&b| b == 0xaa));
    assert_eq!(cqe.write(&mut [0u8; CQE_LEN - 1]), Err(ShortBuffer));
}

#[test]
fn create_responses() {
    let rq = MmInfo {
        offset: 0x1000,
        size: 0x2000,
    };
    let sq = MmInfo {
        offset: 0x3000,
        size: 0x4000,
    };
    let b = create_qp_resp(rq, sq);
    assert_eq!(
        u64_at(&b, resp::CREATE_QP_RQ_MI + mminfo::OFFSET),
        Some(0x1000)
    );
    assert_eq!(
        u32_at(&b, resp::CREATE_QP_RQ_MI + mminfo::SIZE),
        Some(0x2000)
    );
    assert_eq!(
        u64_at(&b, resp::CREATE_QP_SQ_MI + mminfo::OFFSET),
        Some(0x3000)
    );
    assert_eq!(
        u32_at(&b, resp::CREATE_QP_SQ_MI + mminfo::SIZE),
        Some(0x4000)
    );
    assert_eq!(u32_at(&b, mminfo::PAD), Some(0));
    assert_eq!(create_cq_resp(rq), rq.to_bytes());
    let b = create_srq_resp(sq, 0x20001);
    assert_eq!(u32_at(&b, resp::CREATE_SRQ_SRQ_NUM), Some(0x20001));
    assert_eq!(u32_at(&b, resp::CREATE_SRQ_RESERVED), Some(0));
    assert_eq!(u32_at(&create_ah_resp(9), resp::CREATE_AH_AH_NUM), Some(9));
    assert_eq!(
        modify_srq_cmd(&0x7fff_0000u64.to_ne_bytes()),
        Ok(0x7fff_0000)
    );
    assert_eq!(modify_srq_cmd(&[0; 7]), Err(ShortBuffer));
}

#[test]
fn queue_geometry() {
    let cq = cq_geometry(limits::MAX_CQE, DEFAULT_CACHE_LINE).unwrap();
    assert_eq!(
        (cq.elem_size(), cq.num_slots(), cq.capacity()),
        (128, 32768, 32767)
    );
    assert_eq!(cq.buf_size(), 384 + 32768 * 128);
    let cq = cq_geometry(1, DEFAULT_CACHE_LINE).unwrap();
    assert_eq!((cq.num_slots(), cq.capacity()), (2, 1));
    assert_eq!(cq_geometry(0, 64), Err(SizeError::Invalid));
    assert_eq!(
        cq_geometry(limits::MAX_CQE + 1, 64),
        Err(SizeError::Invalid)
    );

    let sq = sq_geometry(16, 2, 0, 64).unwrap();
    assert_eq!(
        (sq.queue.elem_size(), sq.max_wr, sq.max_sge, sq.max_inline),
        (256, 31, 2, 32)
    );
    let sq = sq_geometry(100, 1, 100, 64).unwrap();
    assert_eq!(
        (sq.queue.elem_size(), sq.max_wr, sq.max_sge, sq.max_inline),
        (512, 127, 6, 100)
    );
    let sq = sq_geometry(limits::MAX_QP_WR, 32, 512, 64).unwrap();
    assert_eq!(
        (sq.queue.elem_size(), sq.queue.num_slots(), sq.max_sge),
        (1024, 1 << 21, 32)
    );
    assert_eq!(
        sq_geometry(0, 0, 0, 64).map(|g| (g.queue.elem_size(), g.max_wr)),
        Ok((256, 0))
    );
    assert_eq!(sq_geometry(1, 33, 0, 64), Err(SizeError::Invalid));
    assert_eq!(sq_geometry(1, 0, 513, 64), Err(SizeError::Invalid));
    assert_eq!(
        sq_geometry(limits::MAX_QP_WR + 1, 0, 0, 64),
        Err(SizeError::Invalid)
    );

    let rq = rq_geometry(8, 1, 64).unwrap();
    assert_eq!((rq.queue.elem_size(), rq.max_wr, rq.max_sge), (64, 15, 1));
    let rq = rq_geometry(8, 32, 128).unwrap();
    assert_eq!(rq.queue.elem_size(), 1024);
    let srq = srq_geometry(1, 0, 64).unwrap();
    assert_eq!((srq.max_wr, srq.max_sge, srq.queue.elem_size()), (1, 1, 64));
    assert_eq!(srq_geometry(0, 1, 64), Err(SizeError::Invalid));
    assert_eq!(srq_geometry(1, 28, 64), Err(SizeError::Invalid));

    assert_eq!(
        QueueGeometry::new(u32::MAX, 64, 64),
        Err(SizeError::TooLarge)
    );
    assert_eq!(
        QueueGeometry::new(1, u32::MAX, 64),
        Err(SizeError::TooLarge)
    );

    let q = QueueGeometry::new(7, 100, 64).unwrap();
    let mut hdr = [0u8; queue_buf::LEN];
    q.write_header(&mut hdr).unwrap();
    assert_eq!((u32_at(&hdr, 0), u32_at(&hdr, 4)), (Some(7), Some(7)));
    assert_eq!(q.write_header(&mut [0u8; 7]), Err(ShortBuffer));
}

#[test]
fn queue_indices_from_user_memory() {
    let q = QueueGeometry::new(7, 64, 64).unwrap();
    assert!(q.is_empty(3, 3));
    assert!(q.is_full(2, 3));
    assert_eq!(q.count(1, 6), 3);
    assert_eq!(q.next(7), 0);
    // Garbage indices from user space still land inside the buffer.
    for raw in [0u32, 7, 8, 0xffff_ffff, 0x8000_0001, 12345] {
        let r = q.slot_range(raw);
        assert!(r.start >= queue_buf::DATA && r.end <= q.buf_size(), "{raw}");
        assert!(q.count(raw, 0) <= q.capacity());
    }
    assert_eq!(q.slot_range(9), q.slot_range(1));
}
