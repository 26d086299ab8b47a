// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Device, port and pool limits that rdma_rxe of Linux 6.12 enforces
//! (`rxe_param.h`, `rxe_pool.c`); 7.3's are the same (docs/differences.md,
//! "Against rdma_rxe of 7.3"). The attributes `query_device` and
//! `query_port` report from them are in [`device_attr`](super::device_attr).

/// The common default limit of rxe: 2^20.
pub(crate) const DEFAULT_MAX_VALUE: u32 = 1 << 20;

/// `sizeof(struct rxe_send_wqe)`; `uapi` checks its own layout against this.
const SEND_WQE_SIZE: u32 = 208;
/// `sizeof(struct ib_sge)` and `sizeof(struct rxe_sge)`.
const SGE_SIZE: u32 = 16;

/// `enum ib_mtu`: the path MTUs IBTA defines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u32)]
pub(crate) enum IbMtu {
    Mtu256 = 1,
    Mtu512 = 2,
    Mtu1024 = 3,
    Mtu2048 = 4,
    Mtu4096 = 5,
}

impl IbMtu {
    /// The C value.
    pub(crate) const fn as_raw(self) -> u32 {
        self as u32
    }

    /// `ib_mtu_enum_to_int()`: payload bytes per packet.
    pub(crate) const fn bytes(self) -> u32 {
        // Code 1 is 256 = 128 << 1, and each step doubles.
        128 << self.as_raw()
    }

    /// The C enum value, as `modify_qp` receives it in `path_mtu`.
    pub(crate) const fn from_raw(v: u32) -> Option<IbMtu> {
        match v {
            1 => Some(IbMtu::Mtu256),
            2 => Some(IbMtu::Mtu512),
            3 => Some(IbMtu::Mtu1024),
            4 => Some(IbMtu::Mtu2048),
            5 => Some(IbMtu::Mtu4096),
            _ => None,
        }
    }

    /// `rxe_mtu_int_to_enum()`: the largest IB MTU not above `bytes`, or
    /// `None` below 256 (the C function returns 0 there).
    pub(crate) const fn from_bytes_floor(bytes: u32) -> Option<IbMtu> {
        if bytes >= 4096 {
            Some(IbMtu::Mtu4096)
        } else if bytes >= 2048 {
            Some(IbMtu::Mtu2048)
        } else if bytes >= 1024 {
            Some(IbMtu::Mtu1024)
        } else if bytes >= 512 {
            Some(IbMtu::Mtu512)
        } else if bytes >= 256 {
            Some(IbMtu::Mtu256)
        } else {
            None
        }
    }

    /// `rxe_set_mtu()`: the active MTU for a netdev MTU. The header bytes
    /// RoCEv2 needs come off first; too small a link still gets 256, the
    /// smallest IB MTU, rather than the invalid 0.
    pub(crate) const fn from_netdev_mtu(netdev_mtu: u32) -> IbMtu {
        match IbMtu::from_bytes_floor(netdev_mtu.saturating_sub(MAX_HDR_LENGTH)) {
            Some(m) => m,
            None => IbMtu::Mtu256,
        }
    }
}

/// `RXE_MAX_HDR_LENGTH`: header bytes (IP, UDP, transport; Ethernet excluded)
/// kept below the netdev MTU when picking the IB MTU.
pub(crate) const MAX_HDR_LENGTH: u32 = 80;

/// `RXE_UVERBS_ABI_VERSION`; rdma-core's rxe provider accepts only this.
pub(crate) const UVERBS_ABI_VERSION: u32 = 2;

/// `RXE_ROCE_V2_SPORT`: QP source UDP ports are this plus a 14-bit hash of the QPN.
pub(crate) const ROCE_V2_SPORT: u16 = 0xc000;
/// `ROCE_V2_UDP_DPORT`.
pub(crate) const ROCE_V2_UDP_DPORT: u16 = 4791;
/// `IB_DEFAULT_PKEY_FULL`: the only P_Key rxe has (`query_pkey` index 0).
pub(crate) const DEFAULT_PKEY_FULL: u16 = 0xffff;
/// `GSI_QKEY` / `IB_QP1_QKEY`: QP1 always sends with this Q_Key.
#[allow(dead_code)] // The whole C value set, used or not.
pub(crate) const GSI_QKEY: u32 = 0x8001_0000;
/// `ib_device.phys_port_cnt`; the one port is number 1.
#[allow(dead_code)] // The whole C value set, used or not.
pub(crate) const NUM_PORT: u32 = 1;
/// `ib_device.local_dma_lkey`.
#[allow(dead_code)] // The whole C value set, used or not.
pub(crate) const LOCAL_DMA_LKEY: u32 = 0;
/// MR and MW keys are `index << 8 | random 8-bit key`.
pub(crate) const KEY_INDEX_SHIFT: u32 = 8;

/// Per-work-request limits (the `enum rxe_device_param` entries that size queues).
#[allow(dead_code)] // The whole C value set, used or not.
pub(crate) mod limits {
    use super::{DEFAULT_MAX_VALUE, SEND_WQE_SIZE, SGE_SIZE};

    pub(crate) const MAX_MR_SIZE: u64 = u64::MAX;
    pub(crate) const PAGE_SIZE_CAP: u64 = 0xffff_f000;
    pub(crate) const MAX_QP_WR: u32 = DEFAULT_MAX_VALUE;
    pub(crate) const MAX_SGE: u32 = 32;
    /// `RXE_MAX_WQE_SIZE`: a send WQE with the most SGEs.
    pub(crate) const MAX_WQE_SIZE: u32 = SEND_WQE_SIZE + SGE_SIZE * MAX_SGE;
    /// `RXE_MAX_INLINE_DATA`: inline data shares the SGE area.
    pub(crate) const MAX_INLINE_DATA: u32 = MAX_WQE_SIZE - SEND_WQE_SIZE;
    pub(crate) const MAX_SGE_RD: u32 = 32;
    pub(crate) const MAX_LOG_CQE: u32 = 15;
    pub(crate) const MAX_CQE: u32 = (1 << MAX_LOG_CQE) - 1;
    pub(crate) const MAX_QP_RD_ATOM: u32 = 128;
    pub(crate) const MAX_RES_RD_ATOM: u32 = 0x3f000;
    pub(crate) const MAX_QP_INIT_RD_ATOM: u32 = 128;
    pub(crate) const MAX_MCAST_GRP: u32 = 8192;
    pub(crate) const MAX_MCAST_QP_ATTACH: u32 = 56;
    pub(crate) const MAX_TOT_MCAST_QP_ATTACH: u32 = 0x70000;
    pub(crate) const MAX_SRQ_WR: u32 = DEFAULT_MAX_VALUE;
    pub(crate) const MIN_SRQ_WR: u32 = 1;
    pub(crate) const MAX_SRQ_SGE: u32 = 27;
    pub(crate) const MIN_SRQ_SGE: u32 = 1;
    pub(crate) const MAX_FMR_PAGE_LIST_LEN: u32 = 512;
    pub(crate) const MAX_PKEYS: u16 = 64;
    pub(crate) const LOCAL_CA_ACK_DELAY: u8 = 15;
    pub(crate) const MAX_UCONTEXT: u32 = DEFAULT_MAX_VALUE;
}

/// Requester pacing and acknowledgement constants.
#[allow(dead_code)] // The whole C value set, used or not.
pub(crate) mod pacing {
    /// An RC requester asks for an ACK at least every this many packets.
    pub(crate) const MAX_PKT_PER_ACK: u32 = 64;
    /// A requester sending messages back to back asks for an ACK only on
    /// the last of those it sends in one step, as long as the packets
    /// without a request before it stay below this many
    /// (`ack_req::next_built`).
    pub(crate) const MAX_DEFERRED_ACK_PKTS: u32 = 16;
    /// The responder holds back the ACKs of queued requests (coalesced
    /// acknowledgement) for at most this many PSNs: well inside the
    /// requester's window of [`MAX_UNACKED_PSNS`], and never across a
    /// [`MAX_PKT_PER_ACK`] ACK request of a long message.
    pub(crate) const MAX_COALESCED_PSNS: u32 = 16;
    /// The RC requester stops when this many PSNs are unacknowledged.
    pub(crate) const MAX_UNACKED_PSNS: u32 = 128;
    /// The requester stops queuing skbs for a QP above this many in flight...
    pub(crate) const INFLIGHT_SKBS_PER_QP_HIGH: u32 = 64;
    /// ...and is woken again when the count falls below this.
    pub(crate) const INFLIGHT_SKBS_PER_QP_LOW: u32 = 16;
    /// Work items a task handles before it yields the CPU.
    pub(crate) const MAX_ITERATIONS: u32 = 1024;
    /// Steps a task takes in the receive softirq before a worker takes over
    /// (a NAPI poll's budget of packets).
    pub(crate) const INLINE_STEPS: u32 = 64;
    /// `RXE_NSEC_ARB_TIMER_DELAY`.
    pub(crate) const NSEC_ARB_TIMER_DELAY: u32 = 200;
}

/// An inclusive range of pool indices (`xa_limit` of an rxe pool) and the
/// element cap the pool enforces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pool {
    pub(crate) min_index: u32,
    pub(crate) max_index: u32,
    pub(crate) max_elem: u32,
}

impl Pool {
    /// Whether `index` can name an element of this pool.
    pub(crate) const fn holds(&self, index: u32) -> bool {
        index >= self.min_index && index <= self.max_index
    }
}

/// The pools of `rxe_type_info[]`. The QP pool starts at 16 so that QPNs 0
/// and 1 stay free for the special QPs; SRQ numbers start at 0x20001 so they
/// never collide with a QPN; MRs and MWs split the key index space in halves.
#[allow(dead_code)] // The whole C value set, used or not.
pub(crate) mod pool {
    use super::{Pool, DEFAULT_MAX_VALUE};

    pub(crate) const UC: Pool = Pool {
        min_index: 1,
        max_index: DEFAULT_MAX_VALUE,
        max_elem: DEFAULT_MAX_VALUE,
    };
    pub(crate) const PD: Pool = Pool {
        min_index: 1,
        max_index: DEFAULT_MAX_VALUE,
        max_elem: DEFAULT_MAX_VALUE,
    };
    pub(crate) const AH: Pool = Pool {
        min_index: 1,
        max_index: (1 << 15) - 1,
        max_elem: (1 << 15) - 1,
    };
    pub(crate) const SRQ: Pool = Pool {
        min_index: 0x0002_0001,
        max_index: DEFAULT_MAX_VALUE,
        max_elem: DEFAULT_MAX_VALUE - 0x0002_0001,
    };
    pub(crate) const QP: Pool = Pool {
        min_index: 16,
        max_index: DEFAULT_MAX_VALUE,
        max_elem: DEFAULT_MAX_VALUE - 16,
    };
    pub(crate) const CQ: Pool = Pool {
        min_index: 1,
        max_index: DEFAULT_MAX_VALUE,
        max_elem: DEFAULT_MAX_VALUE,
    };
    pub(crate) const MR: Pool = Pool {
        min_index: 1,
        max_index: DEFAULT_MAX_VALUE >> 1,
        max_elem: (DEFAULT_MAX_VALUE >> 1) - 1,
    };
    pub(crate) const MW: Pool = Pool {
        min_index: (DEFAULT_MAX_VALUE >> 1) + 1,
        max_index: DEFAULT_MAX_VALUE,
        max_elem: DEFAULT_MAX_VALUE - ((DEFAULT_MAX_VALUE >> 1) + 1),
    };
}

/// `RXE_PORT_MAX_MSG_SZ`: the longest message a WQE may describe.
pub(crate) const MAX_MSG_SZ: u32 = 1 << 31;

#[cfg(test)]
#[path = "params_tests.rs"]
mod tests;
