// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! What the kernel hands back: CQEs, mmap info and create/resize responses.

use super::layout::{mminfo, put, resp, u64_at, uverbs_wc, ShortBuffer, CQE_LEN};
use super::verbs::{WcOpcode, WcStatus};

/// A completion as user space reads it (`struct ib_uverbs_wc`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Cqe {
    pub(crate) wr_id: u64,
    pub(crate) status: WcStatus,
    /// Left as `Send` (0) on error completions, as the C driver does.
    pub(crate) opcode: WcOpcode,
    pub(crate) vendor_err: u32,
    pub(crate) byte_len: u32,
    /// Immediate data (raw big-endian bits) or the invalidated rkey.
    pub(crate) ex: u32,
    pub(crate) qp_num: u32,
    pub(crate) src_qp: u32,
    pub(crate) wc_flags: u32,
    pub(crate) pkey_index: u16,
    pub(crate) slid: u16,
    pub(crate) sl: u8,
    pub(crate) dlid_path_bits: u8,
    pub(crate) port_num: u8,
}

impl Cqe {
    /// A completion with only the fields every CQE has; the rest zero.
    pub(crate) const fn new(wr_id: u64, status: WcStatus, qp_num: u32) -> Cqe {
        Cqe {
            wr_id,
            status,
            opcode: WcOpcode::Send,
            vendor_err: 0,
            byte_len: 0,
            ex: 0,
            qp_num,
            src_qp: 0,
            wc_flags: 0,
            pkey_index: 0,
            slid: 0,
            sl: 0,
            dlid_path_bits: 0,
            port_num: 0,
        }
    }

    /// Writes the completion into a CQ slot: the `ib_uverbs_wc` followed by
    /// zeros up to [`CQE_LEN`], the bytes the C driver copies per CQE.
    pub(crate) fn write(&self, slot: &mut [u8]) -> Result<(), ShortBuffer> {
        let mut b = [0u8; CQE_LEN];
        put(&mut b, uverbs_wc::WR_ID, &self.wr_id.to_ne_bytes())?;
        put(
            &mut b,
            uverbs_wc::STATUS,
            &self.status.as_raw().to_ne_bytes(),
        )?;
        put(
            &mut b,
            uverbs_wc::OPCODE,
            &self.opcode.as_raw().to_ne_bytes(),
        )?;
        put(
            &mut b,
            uverbs_wc::VENDOR_ERR,
            &self.vendor_err.to_ne_bytes(),
        )?;
        put(&mut b, uverbs_wc::BYTE_LEN, &self.byte_len.to_ne_bytes())?;
        put(&mut b, uverbs_wc::EX, &self.ex.to_ne_bytes())?;
        put(&mut b, uverbs_wc::QP_NUM, &self.qp_num.to_ne_bytes())?;
        put(&mut b, uverbs_wc::SRC_QP, &self.src_qp.to_ne_bytes())?;
        put(&mut b, uverbs_wc::WC_FLAGS, &self.wc_flags.to_ne_bytes())?;
        put(
            &mut b,
            uverbs_wc::PKEY_INDEX,
            &self.pkey_index.to_ne_bytes(),
        )?;
        put(&mut b, uverbs_wc::SLID, &self.slid.to_ne_bytes())?;
        put(&mut b, uverbs_wc::SL, &[self.sl])?;
        put(&mut b, uverbs_wc::DLID_PATH_BITS, &[self.dlid_path_bits])?;
        put(&mut b, uverbs_wc::PORT_NUM, &[self.port_num])?;
        put(slot, 0, &b)
    }
}

/// `struct mminfo`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct MmInfo {
    pub(crate) offset: u64,
    pub(crate) size: u32,
}

impl MmInfo {
    pub(crate) fn to_bytes(self) -> [u8; mminfo::LEN] {
        let mut b = [0u8; mminfo::LEN];
        b[mminfo::OFFSET..mminfo::OFFSET + 8].copy_from_slice(&self.offset.to_ne_bytes());
        b[mminfo::SIZE..mminfo::SIZE + 4].copy_from_slice(&self.size.to_ne_bytes());
        b
    }
}

/// `struct rxe_create_cq_resp` (and `rxe_resize_cq_resp`, the same layout).
pub(crate) fn create_cq_resp(mi: MmInfo) -> [u8; resp::CREATE_CQ_LEN] {
    mi.to_bytes()
}

/// `struct rxe_create_qp_resp`: the RQ's mmap info first, then the SQ's.
pub(crate) fn create_qp_resp(rq_mi: MmInfo, sq_mi: MmInfo) -> [u8; resp::CREATE_QP_LEN] {
    let mut b = [0u8; resp::CREATE_QP_LEN];
    b[resp::CREATE_QP_RQ_MI..resp::CREATE_QP_RQ_MI + mminfo::LEN]
        .copy_from_slice(&rq_mi.to_bytes());
    b[resp::CREATE_QP_SQ_MI..resp::CREATE_QP_SQ_MI + mminfo::LEN]
        .copy_from_slice(&sq_mi.to_bytes());
    b
}

/// `struct rxe_create_srq_resp`.
pub(crate) fn create_srq_resp(mi: MmInfo, srq_num: u32) -> [u8; resp::CREATE_SRQ_LEN] {
    let mut b = [0u8; resp::CREATE_SRQ_LEN];
    b[resp::CREATE_SRQ_MI..resp::CREATE_SRQ_MI + mminfo::LEN].copy_from_slice(&mi.to_bytes());
    b[resp::CREATE_SRQ_SRQ_NUM..resp::CREATE_SRQ_SRQ_NUM + 4]
        .copy_from_slice(&srq_num.to_ne_bytes());
    b
}

/// `struct rxe_create_ah_resp`.
pub(crate) fn create_ah_resp(ah_num: u32) -> [u8; resp::CREATE_AH_LEN] {
    let mut b = [0u8; resp::CREATE_AH_LEN];
    b[resp::CREATE_AH_AH_NUM..resp::CREATE_AH_AH_NUM + 4].copy_from_slice(&ah_num.to_ne_bytes());
    b
}

/// `struct rxe_modify_srq_cmd`: the user address the new SRQ mmap info goes to.
pub(crate) fn modify_srq_cmd(buf: &[u8]) -> Result<u64, ShortBuffer> {
    u64_at(buf, resp::MODIFY_SRQ_MMAP_INFO_ADDR).ok_or(ShortBuffer)
}
