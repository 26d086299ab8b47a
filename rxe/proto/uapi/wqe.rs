// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Send and receive WQEs: copied out of a shared queue, validated once,
//! returned as plain values; and the fields the kernel writes back.

use super::layout::{
    av, bytes_at, dma, global_route, recv_wqe, send_wqe, send_wr, sge, sockaddr, to_usize, u16_at,
    u32_at, u64_at, u8_at, RECV_DATA_AREA, SEND_DATA_AREA,
};
#[cfg(test)]
use super::layout::{put, ShortBuffer};
#[cfg(test)]
use super::verbs::WqeState;
use super::verbs::{NetworkType, SendFlags, WcStatus, WrMask, WrOpcode};
use super::{limits, qp, MAX_MSG_SZ};

/// Why a WQE read from a shared queue was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WqeError {
    /// The slot copy is shorter than the fixed part of the WQE.
    Truncated,
    /// Not an opcode of this ring (REG_MR in a user ring), or not one rxe
    /// supports on this QP type.
    BadOpcode(u32),
    /// `num_sge` above what the queue was created for.
    TooManySge(u32),
    /// The SGE array runs past the end of the slot.
    SgeOutsideSlot,
    /// Inline data longer than the queue allows or than the slot holds.
    InlineTooLong(u32),
    /// `dma.length` differs from the sum of the SGE lengths.
    LengthMismatch { length: u32, sum: u64 },
    /// A message longer than the port's `max_msg_sz`.
    MessageTooLong(u32),
    /// An atomic with fewer than 8 bytes to return into, or an atomic write
    /// whose payload is not exactly 8 bytes.
    AtomicLength(u32),
    /// A legacy address vector (AH number 0) with an unknown network type.
    BadNetworkType(u8),
}

impl WqeError {
    /// The completion status the WQE is retired with. Malformed WQEs are a
    /// local QP operation error, as in the C driver; bad lengths a local
    /// length error.
    pub(crate) const fn wc_status(self) -> WcStatus {
        match self {
            WqeError::Truncated
            | WqeError::BadOpcode(_)
            | WqeError::TooManySge(_)
            | WqeError::SgeOutsideSlot
            | WqeError::BadNetworkType(_) => WcStatus::LocQpOpErr,
            WqeError::InlineTooLong(_)
            | WqeError::LengthMismatch { .. }
            | WqeError::MessageTooLong(_)
            | WqeError::AtomicLength(_) => WcStatus::LocLenErr,
        }
    }
}

/// One scatter/gather element.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct Sge {
    pub(crate) addr: u64,
    pub(crate) length: u32,
    pub(crate) lkey: u32,
}

impl Sge {
    pub(super) fn read(buf: &[u8], off: usize) -> Option<Sge> {
        Some(Sge {
            addr: u64_at(buf, off.checked_add(sge::ADDR)?)?,
            length: u32_at(buf, off.checked_add(sge::LENGTH)?)?,
            lkey: u32_at(buf, off.checked_add(sge::LKEY)?)?,
        })
    }
}

/// Reads `count` SGEs starting at `off` and sums their lengths without overflow.
fn sge_sum(buf: &[u8], off: usize, count: usize) -> Option<u64> {
    let mut sum = 0u64;
    for i in 0..count {
        let s = Sge::read(buf, off.checked_add(i.checked_mul(sge::LEN)?)?)?;
        // At most 32 u32 lengths: cannot overflow u64, checked anyway.
        sum = sum.checked_add(u64::from(s.length))?;
    }
    Some(sum)
}

/// `struct rxe_global_route`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct GlobalRoute {
    pub(crate) dgid: [u8; 16],
    pub(crate) flow_label: u32,
    pub(crate) sgid_index: u8,
    pub(crate) hop_limit: u8,
    pub(crate) traffic_class: u8,
}

/// `struct rxe_av`, the address vector old providers embed in UD WQEs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Av {
    pub(crate) port_num: u8,
    pub(crate) network_type: NetworkType,
    pub(crate) dmac: [u8; 6],
    pub(crate) grh: GlobalRoute,
    /// Raw `sockaddr_in`/`sockaddr_in6` bytes; see the accessors.
    pub(crate) sgid_addr: [u8; av::SOCKADDR_LEN],
    pub(crate) dgid_addr: [u8; av::SOCKADDR_LEN],
}

impl Av {
    /// Parses an AV at `off`; `None` if the bytes are not there.
    pub(super) fn read(buf: &[u8], off: usize) -> Option<Result<Av, WqeError>> {
        let at = |o: usize| off.checked_add(o);
        let g = at(av::GRH)?;
        let nt = u8_at(buf, at(av::NETWORK_TYPE)?)?;
        let network_type = match nt {
            1 => NetworkType::Ipv4,
            2 => NetworkType::Ipv6,
            _ => return Some(Err(WqeError::BadNetworkType(nt))),
        };
        Some(Ok(Av {
            port_num: u8_at(buf, at(av::PORT_NUM)?)?,
            network_type,
            dmac: bytes_at(buf, at(av::DMAC)?)?,
            grh: GlobalRoute {
                dgid: bytes_at(buf, g.checked_add(global_route::DGID)?)?,
                flow_label: u32_at(buf, g.checked_add(global_route::FLOW_LABEL)?)?,
                sgid_index: u8_at(buf, g.checked_add(global_route::SGID_INDEX)?)?,
                hop_limit: u8_at(buf, g.checked_add(global_route::HOP_LIMIT)?)?,
                traffic_class: u8_at(buf, g.checked_add(global_route::TRAFFIC_CLASS)?)?,
            },
            sgid_addr: bytes_at(buf, at(av::SGID_ADDR)?)?,
            dgid_addr: bytes_at(buf, at(av::DGID_ADDR)?)?,
        }))
    }

    /// The IPv4 source address (`sin_addr`, network byte order).
    pub(crate) fn src_ipv4(&self) -> [u8; 4] {
        bytes_at(&self.sgid_addr, sockaddr::IN_ADDR).unwrap_or_default()
    }

    /// The IPv4 destination address.
    pub(crate) fn dst_ipv4(&self) -> [u8; 4] {
        bytes_at(&self.dgid_addr, sockaddr::IN_ADDR).unwrap_or_default()
    }

    /// The IPv6 source address (`sin6_addr`).
    pub(crate) fn src_ipv6(&self) -> [u8; 16] {
        bytes_at(&self.sgid_addr, sockaddr::IN6_ADDR).unwrap_or_default()
    }

    /// The IPv6 destination address.
    pub(crate) fn dst_ipv6(&self) -> [u8; 16] {
        bytes_at(&self.dgid_addr, sockaddr::IN6_ADDR).unwrap_or_default()
    }
}

/// The opcode-specific part of a send WQE (the `wr` union), decoded by QP type
/// and opcode the way the C requester reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WrParams {
    /// Sends on connected QPs and local invalidate: nothing beyond `ex`.
    None,
    Rdma {
        remote_addr: u64,
        rkey: u32,
    },
    Atomic {
        remote_addr: u64,
        compare_add: u64,
        swap: u64,
        rkey: u32,
    },
    /// UD/GSI destination. `av` is present only when `ah_num` is 0: then the
    /// AV embedded in the WQE is the destination (old providers).
    Ud {
        remote_qpn: u32,
        remote_qkey: u32,
        pkey_index: u16,
        ah_num: u32,
        av: Option<Av>,
    },
    Mw {
        addr: u64,
        length: u64,
        mr_lkey: u32,
        mw_rkey: u32,
        rkey: u32,
        access: u32,
    },
    /// REG_MR, kernel rings only: the MR (by its lkey at post time), the
    /// new key and rights, and the range the `ib_mr` described at post time.
    Reg {
        mr_lkey: u32,
        key: u32,
        access: u32,
        iova: u64,
        length: u64,
    },
    /// The RETH length of a flush comes from `dma.length`, as in C; the
    /// union's own `length` is kept for completeness.
    Flush {
        remote_addr: u64,
        length: u32,
        rkey: u32,
        kind: u8,
        level: u8,
    },
}

impl WrParams {
    /// The rkey a RETH or AtomicETH carries: the RDMA (also atomic write),
    /// atomic or flush key; 0 for everything else.
    pub(crate) const fn remote_key(&self) -> u32 {
        match *self {
            WrParams::Rdma { rkey, .. }
            | WrParams::Atomic { rkey, .. }
            | WrParams::Flush { rkey, .. } => rkey,
            _ => 0,
        }
    }
}

/// Where the data of a send WQE is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Payload {
    /// Local operations and flush move no data from this side.
    None,
    /// `count` SGEs, summing to the WQE length.
    Sges { count: usize },
    /// `len` inline bytes, equal to the WQE length.
    Inline { len: usize },
    /// The 8 bytes an atomic write stores remotely.
    AtomicWrite([u8; 8]),
}

/// Per-queue limits a send WQE is checked against (the QP's `rxe_sq`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SqLimits {
    pub(crate) qp_type: qp::Type,
    pub(crate) max_sge: u32,
    pub(crate) max_inline: u32,
    /// The ring belongs to a kernel user: the driver wrote every WQE in it
    /// and user space cannot reach it. Only such rings may carry REG_MR,
    /// whose MR and range user space must never choose.
    pub(crate) kernel: bool,
}

/// A validated copy of a `struct rxe_send_wqe`.
///
/// Kernel-owned progress fields (`status`, `state`, PSNs, `resid`, `cur_sge`,
/// `sge_offset`, `mask`) are not taken from user memory: the requester starts
/// a WQE at (`length`, 0, 0) as rdma-core writes it, and `mask` is derived
/// from the opcode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SendWqe {
    pub(crate) wr_id: u64,
    pub(crate) opcode: WrOpcode,
    pub(crate) send_flags: SendFlags,
    /// `ex`: immediate data (the raw big-endian bits) or the rkey to invalidate.
    pub(crate) ex: u32,
    pub(crate) wr: WrParams,
    pub(crate) iova: u64,
    pub(crate) ssn: u32,
    pub(crate) mask: WrMask,
    pub(crate) length: u32,
    pub(crate) num_sge: u32,
    pub(crate) payload: Payload,
    /// Copy of the slot's SGE/inline area; `payload` says how much is valid.
    area: [u8; SEND_DATA_AREA],
}

impl SendWqe {
    /// A placeholder that moves no data (a local invalidate of key 0), for
    /// storage that a parse overwrites before use.
    pub(crate) fn empty() -> SendWqe {
        SendWqe {
            wr_id: 0,
            opcode: WrOpcode::LocalInv,
            send_flags: SendFlags(0),
            ex: 0,
            wr: WrParams::None,
            iova: 0,
            ssn: 0,
            mask: WrMask(0),
            length: 0,
            num_sge: 0,
            payload: Payload::None,
            area: [0; SEND_DATA_AREA],
        }
    }

    /// Parses and validates the slot copy `buf` (the whole slot, so that the
    /// SGE/inline area can be bounded by it).
    #[cfg(test)] // Only the host tests use it.
    pub(crate) fn from_bytes(buf: &[u8], sq: &SqLimits) -> Result<SendWqe, WqeError> {
        let mut w = SendWqe::empty();
        w.parse_from(buf, sq)?;
        Ok(w)
    }

    /// How many bytes of a slot the WQE whose fixed part begins `head`
    /// needs: the fixed part and the SGE or inline bytes it names, at most
    /// `slot_len`. Copying just these out of the ring is enough for
    /// [`SendWqe::parse_from`]; an inconsistent header is refused there.
    pub(crate) fn needed_len(head: &[u8], slot_len: usize) -> usize {
        let rd32 = |off: usize| u32_at(head, off).map_or(0, to_usize);
        let flags = SendFlags(u32_at(head, send_wr::SEND_FLAGS).unwrap_or(0));
        let sges = rd32(send_wqe::DMA + dma::NUM_SGE).saturating_mul(sge::LEN);
        let inline = if flags.has(SendFlags::INLINE) {
            rd32(send_wqe::DMA + dma::LENGTH)
        } else {
            0
        };
        // An atomic write's 8 bytes sit in the area too.
        // SEND_DATA_AREA is well above 8, so the clamp cannot panic.
        let area = sges.max(inline).clamp(8, SEND_DATA_AREA);
        send_wqe::DATA.saturating_add(area).min(slot_len)
    }

    /// Parses and validates the slot copy `buf` into `self`, in place: only
    /// the SGE or inline bytes the WQE uses are copied into the area. On
    /// error `self` holds an unspecified (but valid) WQE.
    pub(crate) fn parse_from(&mut self, buf: &[u8], sq: &SqLimits) -> Result<(), WqeError> {
        // The fixed part as an array: its fields are read at constant
        // offsets within a known length, with no check left to run.
        let fixed: &[u8; send_wqe::LEN] = buf.first_chunk().ok_or(WqeError::Truncated)?;
        let rd32 = |off: usize| u32_at(fixed, off).ok_or(WqeError::Truncated);
        let rd64 = |off: usize| u64_at(fixed, off).ok_or(WqeError::Truncated);

        let raw_opcode = rd32(send_wr::OPCODE)?;
        let opcode = WrOpcode::try_from(raw_opcode).map_err(WqeError::BadOpcode)?;
        let mask = opcode.mask(sq.qp_type);
        if (opcode == WrOpcode::RegMr && !sq.kernel) || mask.is_empty() {
            return Err(WqeError::BadOpcode(raw_opcode));
        }

        let num_sge = rd32(send_wqe::DMA + dma::NUM_SGE)?;
        if num_sge > sq.max_sge.min(limits::MAX_SGE) {
            return Err(WqeError::TooManySge(num_sge));
        }
        let length = rd32(send_wqe::DMA + dma::LENGTH)?;
        if length > MAX_MSG_SZ {
            return Err(WqeError::MessageTooLong(length));
        }
        let send_flags = SendFlags(rd32(send_wr::SEND_FLAGS)?);

        // Everything after the fixed part that the slot holds, capped at the
        // largest area any rxe SQ has.
        let avail = buf.len().saturating_sub(send_wqe::DATA).min(SEND_DATA_AREA);
        let data = buf
            .get(send_wqe::DATA..send_wqe::DATA + avail)
            .ok_or(WqeError::Truncated)?;

        let (payload, used) = if mask.intersects(WrMask::LOCAL_OP) || mask.intersects(WrMask::FLUSH)
        {
            (Payload::None, 0)
        } else if mask.intersects(WrMask::ATOMIC_WRITE) {
            if length != 8 {
                return Err(WqeError::AtomicLength(length));
            }
            if avail < 8 {
                return Err(WqeError::Truncated);
            }
            (
                Payload::AtomicWrite(bytes_at(data, 0).ok_or(WqeError::Truncated)?),
                8,
            )
        } else if send_flags.has(SendFlags::INLINE) && mask.intersects(WrMask::INLINE) {
            let len = to_usize(length);
            if length > sq.max_inline || len > avail {
                return Err(WqeError::InlineTooLong(length));
            }
            (Payload::Inline { len }, len)
        } else {
            let count = to_usize(num_sge);
            let used = count
                .checked_mul(sge::LEN)
                .filter(|&n| n <= avail)
                .ok_or(WqeError::SgeOutsideSlot)?;
            let sum = sge_sum(data, 0, count).ok_or(WqeError::SgeOutsideSlot)?;
            if sum != u64::from(length) {
                return Err(WqeError::LengthMismatch { length, sum });
            }
            // The completer returns the 8 original bytes into these SGEs.
            if mask.intersects(WrMask::ATOMIC) && length < 8 {
                return Err(WqeError::AtomicLength(length));
            }
            (Payload::Sges { count }, used)
        };

        let wr = if sq.qp_type.is_datagram() {
            let ah_num = rd32(send_wr::UD_AH_NUM)?;
            let av = if ah_num == 0 {
                Some(Av::read(buf, send_wr::UD_AV).ok_or(WqeError::Truncated)??)
            } else {
                None
            };
            WrParams::Ud {
                remote_qpn: rd32(send_wr::UD_REMOTE_QPN)?,
                remote_qkey: rd32(send_wr::UD_REMOTE_QKEY)?,
                pkey_index: u16_at(fixed, send_wr::UD_PKEY_INDEX).ok_or(WqeError::Truncated)?,
                ah_num,
                av,
            }
        } else {
            match opcode {
                // rdma-core puts an atomic write's address and rkey in the
                // `rdma` member, like a write's.
                WrOpcode::RdmaWrite
                | WrOpcode::RdmaWriteWithImm
                | WrOpcode::RdmaRead
                | WrOpcode::RdmaReadWithInv
                | WrOpcode::AtomicWrite => WrParams::Rdma {
                    remote_addr: rd64(send_wr::RDMA_REMOTE_ADDR)?,
                    rkey: rd32(send_wr::RDMA_RKEY)?,
                },
                WrOpcode::AtomicCmpAndSwp | WrOpcode::AtomicFetchAndAdd => WrParams::Atomic {
                    remote_addr: rd64(send_wr::ATOMIC_REMOTE_ADDR)?,
                    compare_add: rd64(send_wr::ATOMIC_COMPARE_ADD)?,
                    swap: rd64(send_wr::ATOMIC_SWAP)?,
                    rkey: rd32(send_wr::ATOMIC_RKEY)?,
                },
                WrOpcode::BindMw => WrParams::Mw {
                    addr: rd64(send_wr::MW_ADDR)?,
                    length: rd64(send_wr::MW_LENGTH)?,
                    mr_lkey: rd32(send_wr::MW_MR_LKEY)?,
                    mw_rkey: rd32(send_wr::MW_MW_RKEY)?,
                    rkey: rd32(send_wr::MW_RKEY)?,
                    access: rd32(send_wr::MW_ACCESS)?,
                },
                WrOpcode::Flush => WrParams::Flush {
                    remote_addr: rd64(send_wr::FLUSH_REMOTE_ADDR)?,
                    length: rd32(send_wr::FLUSH_LENGTH)?,
                    rkey: rd32(send_wr::FLUSH_RKEY)?,
                    kind: u8_at(fixed, send_wr::FLUSH_TYPE).ok_or(WqeError::Truncated)?,
                    level: u8_at(fixed, send_wr::FLUSH_LEVEL).ok_or(WqeError::Truncated)?,
                },
                // Only reached on kernel rings (checked above).
                WrOpcode::RegMr => WrParams::Reg {
                    mr_lkey: rd32(send_wr::REG_MR_LKEY)?,
                    key: rd32(send_wr::REG_KEY)?,
                    access: rd32(send_wr::REG_ACCESS)?,
                    iova: rd64(send_wr::REG_IOVA)?,
                    length: rd64(send_wr::REG_LENGTH)?,
                },
                _ => WrParams::None,
            }
        };

        let wr_id = rd64(send_wr::WR_ID)?;
        let ex = rd32(send_wr::EX)?;
        let iova = rd64(send_wqe::IOVA)?;
        let ssn = rd32(send_wqe::SSN)?;
        let src = data.get(..used).ok_or(WqeError::Truncated)?;
        self.area
            .get_mut(..used)
            .ok_or(WqeError::Truncated)?
            .copy_from_slice(src);
        self.wr_id = wr_id;
        self.opcode = opcode;
        self.send_flags = send_flags;
        self.ex = ex;
        self.wr = wr;
        self.iova = iova;
        self.ssn = ssn;
        self.mask = mask;
        self.length = length;
        self.num_sge = num_sge;
        self.payload = payload;
        Ok(())
    }

    /// SGE `i` of an SGE payload.
    pub(crate) fn sge(&self, i: usize) -> Option<Sge> {
        match self.payload {
            Payload::Sges { count } if i < count => Sge::read(&self.area, i.checked_mul(sge::LEN)?),
            _ => None,
        }
    }

    /// The SGEs of an SGE payload; empty for other payloads.
    #[cfg(test)] // Only the host tests use it.
    pub(crate) fn sges(&self) -> impl Iterator<Item = Sge> + '_ {
        let count = match self.payload {
            Payload::Sges { count } => count,
            _ => 0,
        };
        (0..count).map_while(move |i| self.sge(i))
    }

    /// The inline bytes of an inline payload; empty for other payloads.
    pub(crate) fn inline_data(&self) -> &[u8] {
        match self.payload {
            Payload::Inline { len } => self.area.get(..len).unwrap_or(&[]),
            _ => &[],
        }
    }
}

/// Writes `status` and `state` into a send WQE slot, where the C driver keeps them.
#[cfg(test)] // Only the host tests use it.
pub(crate) fn write_send_status(
    slot: &mut [u8],
    status: WcStatus,
    state: WqeState,
) -> Result<(), ShortBuffer> {
    put(slot, send_wqe::STATUS, &status.as_raw().to_ne_bytes())?;
    put(slot, send_wqe::STATE, &state.as_raw().to_ne_bytes())
}

/// Writes the first and last PSN the requester used for a send WQE.
#[cfg(test)] // Only the host tests use it.
pub(crate) fn write_send_psns(
    slot: &mut [u8],
    first_psn: u32,
    last_psn: u32,
) -> Result<(), ShortBuffer> {
    put(slot, send_wqe::FIRST_PSN, &first_psn.to_ne_bytes())?;
    put(slot, send_wqe::LAST_PSN, &last_psn.to_ne_bytes())
}

/// A validated copy of a `struct rxe_recv_wqe`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RecvWqe {
    pub(crate) wr_id: u64,
    /// Total bytes the SGEs can take; equal to their sum.
    pub(crate) length: u32,
    pub(crate) num_sge: u32,
    area: [u8; RECV_DATA_AREA],
}

impl RecvWqe {
    /// An empty WQE, for storage that [`RecvWqe::read_from`] fills.
    pub(crate) const fn empty() -> RecvWqe {
        RecvWqe {
            wr_id: 0,
            length: 0,
            num_sge: 0,
            area: [0; RECV_DATA_AREA],
        }
    }

    /// Parses and validates the slot copy `buf` of an RQ or SRQ created with
    /// `max_sge` SGEs per WQE.
    #[cfg(test)] // Only the host tests use it.
    pub(crate) fn from_bytes(buf: &[u8], max_sge: u32) -> Result<RecvWqe, WqeError> {
        let mut w = RecvWqe::empty();
        w.read_from(buf.len(), max_sge, |off, out| {
            let src = off.checked_add(out.len()).and_then(|end| buf.get(off..end));
            src.map(|b| out.copy_from_slice(b)).is_some()
        })?;
        Ok(w)
    }

    /// Reads and validates into `self`, in place, the WQE of a `slot_len`
    /// byte slot of an RQ or SRQ created with `max_sge` SGEs per WQE.
    /// `read(offset, out)` copies `out.len()` bytes at `offset` of the slot
    /// (false if it cannot): the fixed part once, then just the SGEs it
    /// names, each byte once, so a producer rewriting the slot meanwhile
    /// cannot make the copy disagree with what was checked. On error `self`
    /// holds an unspecified (but valid) WQE.
    pub(crate) fn read_from(
        &mut self,
        slot_len: usize,
        max_sge: u32,
        mut read: impl FnMut(usize, &mut [u8]) -> bool,
    ) -> Result<(), WqeError> {
        let mut head = [0u8; recv_wqe::LEN];
        if slot_len < recv_wqe::LEN || !read(0, &mut head) {
            return Err(WqeError::Truncated);
        }
        let rd32 = |off: usize| u32_at(&head, off).ok_or(WqeError::Truncated);
        let num_sge = rd32(recv_wqe::DMA + dma::NUM_SGE)?;
        if num_sge > max_sge.min(limits::MAX_SGE) {
            return Err(WqeError::TooManySge(num_sge));
        }
        let avail = slot_len.saturating_sub(recv_wqe::DATA).min(RECV_DATA_AREA);
        let count = to_usize(num_sge);
        let used = count
            .checked_mul(sge::LEN)
            .filter(|&n| n <= avail)
            .ok_or(WqeError::SgeOutsideSlot)?;
        let area = self.area.get_mut(..used).ok_or(WqeError::SgeOutsideSlot)?;
        if !read(recv_wqe::DATA, area) {
            return Err(WqeError::Truncated);
        }
        let length = rd32(recv_wqe::DMA + dma::LENGTH)?;
        let sum = sge_sum(&self.area, 0, count).ok_or(WqeError::SgeOutsideSlot)?;
        if sum != u64::from(length) {
            return Err(WqeError::LengthMismatch { length, sum });
        }
        self.wr_id = u64_at(&head, recv_wqe::WR_ID).ok_or(WqeError::Truncated)?;
        self.length = length;
        self.num_sge = num_sge;
        Ok(())
    }

    /// SGE `i`.
    pub(crate) fn sge(&self, i: usize) -> Option<Sge> {
        if i < to_usize(self.num_sge) {
            Sge::read(&self.area, i.checked_mul(sge::LEN)?)
        } else {
            None
        }
    }

    /// All SGEs.
    #[cfg(test)] // Only the host tests use it.
    pub(crate) fn sges(&self) -> impl Iterator<Item = Sge> + '_ {
        (0..to_usize(self.num_sge)).map_while(move |i| self.sge(i))
    }
}
