// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Building one requester packet: its address, its headers from the WQE
//! and the plan, and its payload, copied or referenced in the MR's pages.

use super::Snap;
use crate::rxe::ah;
use crate::rxe::dma::{Cursor, DmaError, LocalAccess};
use crate::rxe::kapi::page::PayloadPages;
use crate::rxe::mr::{PdId, PendingFault};
use crate::rxe::net;
use crate::rxe::proto::conv::to_usize;
use crate::rxe::proto::headers::{AtmEth, Bth, Deth, Feth, Ieth, ImmDt, Reth};
use crate::rxe::proto::mr::Access;
use crate::rxe::proto::opcode::{Mask, Opcode};
use crate::rxe::proto::params::DEFAULT_PKEY_FULL;
use crate::rxe::proto::requester as rl;
use crate::rxe::proto::uapi::{self, Payload, SendWqe, WcStatus, WrParams};
use crate::rxe::qp::{self, QpShared};

/// Why a packet was not built.
pub(super) enum BuildError {
    /// The WQE fails with this status.
    Status(WcStatus),
    /// Its payload met an absent ODP page.
    Absent(Option<PendingFault>),
}

impl From<WcStatus> for BuildError {
    fn from(s: WcStatus) -> Self {
        Self::Status(s)
    }
}

/// A `net::Av` for an address vector, sent from `sport`.
pub(crate) fn net_av(av: &uapi::Av, sport: u16) -> net::Av {
    let (src, dst) = qp::av_path(av);
    net::Av {
        src,
        dst,
        sgid_index: av.grh.sgid_index,
        dmac: av.dmac,
        traffic_class: av.grh.traffic_class,
        hop_limit: av.grh.hop_limit,
        flow_label: av.grh.flow_label,
        sport,
    }
}

/// The address a packet of `wqe` goes to; `cache` keeps the AV of the AH
/// a UD WQE names.
fn packet_av(
    qp: &QpShared,
    snap: &Snap,
    wqe: &SendWqe,
    cache: &mut ah::AvCache,
) -> Option<net::Av> {
    if qp.qp_type.is_datagram() {
        let WrParams::Ud { ah_num, av, .. } = wqe.wr else {
            return None;
        };
        if ah_num != 0 {
            let sport = snap.sport;
            let mut av = *cache.get(qp.dev.state(), ah_num, qp.pd, |a| net_av(a, sport))?;
            av.sport = sport;
            Some(av)
        } else {
            Some(net_av(&ah::embedded_av(&qp.dev, av?)?, snap.sport))
        }
    } else {
        snap.av
    }
}

/// The requester's place in the SGEs of the WQE it sends: each packet of
/// a message goes on from where the one before ended, with the MR of the
/// SGE it is in kept (its key rechecked per packet, see [`Cursor`]),
/// instead of walking the SGEs from the start and looking the MR up again.
pub(super) struct SendCursor {
    /// The WQE copy ([`super::sq::WqeCopy::seq`]) the cursor walks; `None`
    /// when it walks none.
    seq: Option<u64>,
    cur: Cursor,
}

impl SendCursor {
    pub(super) fn new() -> Self {
        Self {
            seq: None,
            cur: Cursor::new(0),
        }
    }

    /// Lets go of the WQE and of the MR held for it.
    pub(super) fn forget(&mut self) {
        self.seq = None;
        self.cur.reset(0);
    }

    /// The cursor `done` bytes into the payload of `wqe`, the WQE copy
    /// `seq`: where the last packet left it when that is the place, else
    /// walked there from the start.
    fn at(&mut self, seq: u64, wqe: &SendWqe, done: u32) -> Result<&mut Cursor, DmaError> {
        let here = self.seq == Some(seq) && wqe.length.checked_sub(self.cur.resid()) == Some(done);
        if !here {
            self.seq = None;
            self.cur.reset(wqe.length);
            self.cur.advance(wqe, done)?;
            self.seq = Some(seq);
        }
        Ok(&mut self.cur)
    }
}

/// The `len` payload bytes of `wqe` from `done` on as referenced page
/// pieces, or `None` when they must be copied. Fails as the copy would.
fn ref_payload(
    qp: &QpShared,
    wqe: &SendWqe,
    at: (&mut SendCursor, u64),
    done: u32,
    len: u32,
    pages: &mut PayloadPages,
) -> Result<bool, WcStatus> {
    let mem = LocalAccess::new(qp.dev.state(), PdId(qp.pd), Access::NONE);
    let cur = at.0.at(at.1, wqe, done).map_err(|e| e.requester_status())?;
    cur.ref_from_mem(&mem, wqe, to_usize(len), pages)
        .map_err(|e| e.requester_status())
}

/// Builds the packet `p` of `wqe`, `done` bytes into its payload, with the
/// empty page list `pages` for a payload sent from the MR's pages (what the
/// skb does not take stays there for the caller to clear); `at` is the
/// send cursor and the number of the WQE copy `wqe`.
#[allow(clippy::too_many_arguments)]
pub(super) fn build<'a>(
    qp: &'a QpShared,
    snap: &Snap,
    wqe: &SendWqe,
    p: &rl::Packet,
    done: u32,
    odp_give_up: bool,
    pages: &mut PayloadPages,
    av_cache: &mut ah::AvCache,
    ndevs: &mut net::NdevCache,
    at: (&mut SendCursor, u64),
) -> Result<net::TxPacket<'a>, BuildError> {
    let av = packet_av(qp, snap, wqe, av_cache).ok_or(WcStatus::LocQpOpErr)?;
    let op: Opcode = p.opcode;
    let mask = op.mask();
    let (cursor, seq) = at;
    let referenced = match wqe.payload {
        Payload::Sges { .. } if net::wants_frags(qp.qp_type, to_usize(p.payload)) => {
            ref_payload(qp, wqe, (&mut *cursor, seq), done, p.payload, pages)?
        }
        _ => false,
    };
    let pages = referenced.then_some(pages);
    let fill = |out: &mut [u8]| fill_payload(qp, wqe, (cursor, seq), done, odp_give_up, out);
    let mut tx =
        net::alloc_packet_filled(&qp.dev, ndevs, &av, op, to_usize(p.payload), pages, fill)
            .map_err(|e| match e {
                net::FillError::Alloc => BuildError::Status(WcStatus::LocQpOpErr),
                net::FillError::Fill(e) => e,
            })?;
    let (dest_qpn, qkey) = match wqe.wr {
        // A remote qkey with the top bit set means the QP's own.
        WrParams::Ud {
            remote_qpn,
            remote_qkey,
            ..
        } => (
            remote_qpn,
            if (remote_qkey as i32) < 0 {
                snap.qkey
            } else {
                remote_qkey
            },
        ),
        _ => (snap.dest_qpn, snap.qkey),
    };
    let mut bth = Bth::new(op, DEFAULT_PKEY_FULL, dest_qpn, p.psn);
    bth.se = p.solicited;
    bth.ack_req = p.ack_req;
    tx.write_bth(bth).map_err(|_| WcStatus::LocQpOpErr)?;
    let rkey = wqe.wr.remote_key();
    let hdr_err = |_| WcStatus::LocQpOpErr;
    if mask.contains(Mask::RETH) {
        tx.write_ext(&Reth {
            va: p.reth_va,
            rkey,
            len: p.reth_len,
        })
        .map_err(hdr_err)?;
    }
    if mask.contains(Mask::FETH) {
        if let WrParams::Flush { kind, level, .. } = wqe.wr {
            tx.write_ext(&Feth { ptype: kind, level })
                .map_err(hdr_err)?;
        }
    }
    if mask.contains(Mask::IMMDT) {
        tx.write_ext(&ImmDt(wqe.ex.to_ne_bytes()))
            .map_err(hdr_err)?;
    }
    if mask.contains(Mask::IETH) {
        tx.write_ext(&Ieth { rkey: wqe.ex }).map_err(hdr_err)?;
    }
    if mask.contains(Mask::ATMETH) {
        if let WrParams::Atomic {
            compare_add, swap, ..
        } = wqe.wr
        {
            let eth = if op == Opcode::RcCompareSwap {
                AtmEth {
                    va: p.reth_va,
                    rkey,
                    swap_add: swap,
                    compare: compare_add,
                }
            } else {
                AtmEth {
                    va: p.reth_va,
                    rkey,
                    swap_add: compare_add,
                    compare: 0,
                }
            };
            tx.write_ext(&eth).map_err(hdr_err)?;
        }
    }
    if mask.contains(Mask::DETH) {
        tx.write_ext(&Deth {
            qkey,
            src_qpn: qp.qpn,
        })
        .map_err(hdr_err)?;
    }
    Ok(tx)
}

/// Writes all of `out`, the linear payload of a packet of `wqe` (walked by
/// the send cursor `at`) from `done` bytes into the message on.
fn fill_payload(
    qp: &QpShared,
    wqe: &SendWqe,
    at: (&mut SendCursor, u64),
    done: u32,
    odp_give_up: bool,
    out: &mut [u8],
) -> Result<(), BuildError> {
    match wqe.payload {
        Payload::Inline { .. } => {
            let start = to_usize(done);
            let src = wqe
                .inline_data()
                .get(start..start + out.len())
                .ok_or(WcStatus::LocLenErr)?;
            out.copy_from_slice(src);
        }
        Payload::AtomicWrite(bytes) => {
            let src = bytes.get(..out.len()).ok_or(WcStatus::LocLenErr)?;
            out.copy_from_slice(src);
        }
        Payload::Sges { .. } => {
            let mem = LocalAccess::new(qp.dev.state(), PdId(qp.pd), Access::NONE);
            let cur = at.0.at(at.1, wqe, done).map_err(|e| e.requester_status())?;
            match cur.copy_from_mem(&mem, wqe, out) {
                Ok(()) => {}
                Err(DmaError::Absent) if !odp_give_up => {
                    return Err(BuildError::Absent(cur.take_fault()))
                }
                Err(e) => return Err(e.requester_status().into()),
            }
        }
        // No data for a payload (never planned): zeros.
        Payload::None => out.fill(0),
    }
    Ok(())
}
