// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Device, port and pool limits that rdma_rxe of Linux 6.12 reports and enforces
//! (`rxe_param.h`, `rxe_init_device_param()`, `rxe_init_port_param()`, `rxe_pool.c`);
//! 7.3's are the same (README, "Against newer rdma_rxe").
//!
//! `query_device` and `query_port` must return exactly these numbers: user space
//! (rdma-core, perftest, MPI stacks) sizes its queues from them.

use super::odp_logic;

/// The common default limit of rxe: 2^20.
pub(crate) const DEFAULT_MAX_VALUE: u32 = 1 << 20;

/// `sizeof(struct rxe_send_wqe)`; `uapi` checks its own layout against this.
const SEND_WQE_SIZE: u32 = 208;
/// `sizeof(struct ib_sge)` and `sizeof(struct rxe_sge)`.
const SGE_SIZE: u32 = 16;

/// Bits of `enum ib_device_cap_flags` (values of `IB_UVERBS_DEVICE_*`).
#[allow(dead_code)] // The whole C value set, used or not.
pub(crate) mod device_cap {
    pub(crate) const RESIZE_MAX_WR: u64 = 1 << 0;
    pub(crate) const BAD_PKEY_CNTR: u64 = 1 << 1;
    pub(crate) const BAD_QKEY_CNTR: u64 = 1 << 2;
    pub(crate) const RAW_MULTI: u64 = 1 << 3;
    pub(crate) const AUTO_PATH_MIG: u64 = 1 << 4;
    pub(crate) const CHANGE_PHY_PORT: u64 = 1 << 5;
    pub(crate) const UD_AV_PORT_ENFORCE: u64 = 1 << 6;
    pub(crate) const CURR_QP_STATE_MOD: u64 = 1 << 7;
    pub(crate) const SHUTDOWN_PORT: u64 = 1 << 8;
    pub(crate) const PORT_ACTIVE_EVENT: u64 = 1 << 10;
    pub(crate) const SYS_IMAGE_GUID: u64 = 1 << 11;
    pub(crate) const RC_RNR_NAK_GEN: u64 = 1 << 12;
    pub(crate) const SRQ_RESIZE: u64 = 1 << 13;
    pub(crate) const N_NOTIFY_CQ: u64 = 1 << 14;
    pub(crate) const MEM_WINDOW: u64 = 1 << 17;
    pub(crate) const UD_IP_CSUM: u64 = 1 << 18;
    pub(crate) const XRC: u64 = 1 << 20;
    pub(crate) const MEM_MGT_EXTENSIONS: u64 = 1 << 21;
    pub(crate) const MEM_WINDOW_TYPE_2A: u64 = 1 << 23;
    pub(crate) const MEM_WINDOW_TYPE_2B: u64 = 1 << 24;
    pub(crate) const RC_IP_CSUM: u64 = 1 << 25;
    pub(crate) const RAW_IP_CSUM: u64 = 1 << 26;
    pub(crate) const MANAGED_FLOW_STEERING: u64 = 1 << 29;
    pub(crate) const RAW_SCATTER_FCS: u64 = 1 << 34;
    pub(crate) const PCI_WRITE_END_PADDING: u64 = 1 << 36;
    pub(crate) const FLUSH_GLOBAL: u64 = 1 << 38;
    pub(crate) const FLUSH_PERSISTENT: u64 = 1 << 39;
    pub(crate) const ATOMIC_WRITE: u64 = 1 << 40;
}

/// Bits of `enum ib_kernel_cap_flags`.
#[allow(dead_code)] // The whole C value set, used or not.
pub(crate) mod kernel_cap {
    pub(crate) const LOCAL_DMA_LKEY: u64 = 1 << 0;
    pub(crate) const INTEGRITY_HANDOVER: u64 = 1 << 1;
    pub(crate) const ON_DEMAND_PAGING: u64 = 1 << 2;
    pub(crate) const SG_GAPS_REG: u64 = 1 << 3;
    pub(crate) const ALLOW_USER_UNREG: u64 = 1 << 4;
}

/// `RXE_DEVICE_CAP_FLAGS` as a 64-bit kernel builds it. MW type 2B and atomic
/// write are only advertised on `CONFIG_64BIT`; the Rust module is 64-bit only.
pub(crate) const DEVICE_CAP_FLAGS: u64 = device_cap::BAD_PKEY_CNTR
    | device_cap::BAD_QKEY_CNTR
    | device_cap::AUTO_PATH_MIG
    | device_cap::CHANGE_PHY_PORT
    | device_cap::UD_AV_PORT_ENFORCE
    | device_cap::PORT_ACTIVE_EVENT
    | device_cap::SYS_IMAGE_GUID
    | device_cap::RC_RNR_NAK_GEN
    | device_cap::SRQ_RESIZE
    | device_cap::MEM_MGT_EXTENSIONS
    | device_cap::MEM_WINDOW
    | device_cap::FLUSH_GLOBAL
    | device_cap::FLUSH_PERSISTENT
    | device_cap::MEM_WINDOW_TYPE_2B
    | device_cap::ATOMIC_WRITE;

/// `enum ib_atomic_cap`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum AtomicCap {
    None = 0,
    Hca = 1,
    #[allow(dead_code)] // The whole C value set, used or not.
    Glob = 2,
}

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

/// The fields of `struct ib_device_attr` rxe sets; everything else is zero.
/// Types follow the C struct so the glue can assign them without casts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DeviceAttr {
    pub(crate) fw_ver: u64,
    pub(crate) max_mr_size: u64,
    pub(crate) page_size_cap: u64,
    pub(crate) vendor_id: u32,
    pub(crate) vendor_part_id: u32,
    pub(crate) hw_ver: u32,
    pub(crate) max_qp: i32,
    pub(crate) max_qp_wr: i32,
    pub(crate) device_cap_flags: u64,
    pub(crate) kernel_cap_flags: u64,
    pub(crate) max_send_sge: i32,
    pub(crate) max_recv_sge: i32,
    pub(crate) max_sge_rd: i32,
    pub(crate) max_cq: i32,
    pub(crate) max_cqe: i32,
    pub(crate) max_mr: i32,
    pub(crate) max_pd: i32,
    pub(crate) max_qp_rd_atom: i32,
    pub(crate) max_res_rd_atom: i32,
    pub(crate) max_qp_init_rd_atom: i32,
    pub(crate) atomic_cap: AtomicCap,
    pub(crate) masked_atomic_cap: AtomicCap,
    pub(crate) max_mw: i32,
    pub(crate) max_mcast_grp: i32,
    pub(crate) max_mcast_qp_attach: i32,
    pub(crate) max_total_mcast_qp_attach: i32,
    pub(crate) max_ah: i32,
    pub(crate) max_srq: i32,
    pub(crate) max_srq_wr: i32,
    pub(crate) max_srq_sge: i32,
    pub(crate) max_fast_reg_page_list_len: u32,
    pub(crate) max_pkeys: u16,
    pub(crate) local_ca_ack_delay: u8,
}

/// Converts a limit to the `int` the C struct holds; every rxe limit is far below `i32::MAX`.
const fn int(v: u32) -> i32 {
    assert!(v <= i32::MAX as u32);
    // Lossless: checked just above, at compile time for every use below.
    v as i32
}

/// What `rxe_query_device()` returns. `sys_image_guid` is not here: it is the
/// EUI-64 of the netdev MAC, see [`guid_from_mac`]. rxe sets no firmware
/// version, part id or hardware version, so those read as zero.
pub(crate) const DEVICE_ATTR: DeviceAttr = DeviceAttr {
    fw_ver: 0,
    max_mr_size: limits::MAX_MR_SIZE,
    page_size_cap: limits::PAGE_SIZE_CAP,
    // IBTA v1.4 A3.3.1: 0xffffff is the vendor id of a device with no OUI.
    vendor_id: 0x00ff_ffff,
    vendor_part_id: 0,
    hw_ver: 0,
    max_qp: int(pool::QP.max_elem),
    max_qp_wr: int(limits::MAX_QP_WR),
    device_cap_flags: DEVICE_CAP_FLAGS,
    kernel_cap_flags: kernel_cap::ALLOW_USER_UNREG,
    max_send_sge: int(limits::MAX_SGE),
    max_recv_sge: int(limits::MAX_SGE),
    max_sge_rd: int(limits::MAX_SGE_RD),
    max_cq: int(pool::CQ.max_elem),
    max_cqe: int(limits::MAX_CQE),
    max_mr: int(pool::MR.max_elem),
    max_pd: int(pool::PD.max_elem),
    max_qp_rd_atom: int(limits::MAX_QP_RD_ATOM),
    max_res_rd_atom: int(limits::MAX_RES_RD_ATOM),
    max_qp_init_rd_atom: int(limits::MAX_QP_INIT_RD_ATOM),
    atomic_cap: AtomicCap::Hca,
    masked_atomic_cap: AtomicCap::None,
    max_mw: int(pool::MW.max_elem),
    max_mcast_grp: int(limits::MAX_MCAST_GRP),
    max_mcast_qp_attach: int(limits::MAX_MCAST_QP_ATTACH),
    max_total_mcast_qp_attach: int(limits::MAX_TOT_MCAST_QP_ATTACH),
    max_ah: int(pool::AH.max_elem),
    max_srq: int(pool::SRQ.max_elem),
    max_srq_wr: int(limits::MAX_SRQ_WR),
    max_srq_sge: int(limits::MAX_SRQ_SGE),
    max_fast_reg_page_list_len: limits::MAX_FMR_PAGE_LIST_LEN,
    max_pkeys: limits::MAX_PKEYS,
    local_ca_ack_delay: limits::LOCAL_CA_ACK_DELAY,
};

/// What `query_device` reports: the limits of [`DEVICE_ATTR`] and what is
/// known only at run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DeviceReport {
    pub(crate) attr: DeviceAttr,
    /// The system image GUID as the attribute holds it: the EUI-64 bytes in
    /// wire order, read as a native `u64`.
    pub(crate) sys_image_guid: u64,
    /// The on-demand paging capabilities.
    pub(crate) odp: odp_logic::Caps,
}

impl DeviceReport {
    /// The report of a device with system image GUID `sys_image_guid`; it
    /// offers on-demand paging as the newest rdma_rxe does.
    pub(crate) const fn new(sys_image_guid: u64) -> Self {
        let mut attr = DEVICE_ATTR;
        attr.kernel_cap_flags |= kernel_cap::ON_DEMAND_PAGING;
        Self {
            attr,
            sys_image_guid,
            odp: odp_logic::CAPS,
        }
    }
}

/// `enum ib_port_state`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
#[allow(dead_code)] // The whole C value set, used or not.
pub(crate) enum PortState {
    Nop = 0,
    Down = 1,
    Init = 2,
    Armed = 3,
    Active = 4,
    ActiveDefer = 5,
}

/// `enum ib_port_phys_state`, the values rxe reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum PhysState {
    Polling = 2,
    Disabled = 3,
    LinkUp = 5,
}

impl PhysState {
    /// What `rxe_query_port()` reports: link up when the port is active,
    /// polling when the netdev is administratively up without carrier,
    /// disabled when it is down.
    pub(crate) const fn reported(port_active: bool, netdev_up: bool) -> PhysState {
        if port_active {
            PhysState::LinkUp
        } else if netdev_up {
            PhysState::Polling
        } else {
            PhysState::Disabled
        }
    }
}

/// `IB_WIDTH_1X`.
pub(crate) const WIDTH_1X: u8 = 1;
/// `IB_SPEED_SDR`.
pub(crate) const SPEED_SDR: u16 = 1;
/// `IB_PORT_CM_SUP` of the PortInfo capability mask.
pub(crate) const PORT_CM_SUP: u32 = 1 << 16;
/// `RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP`: the core capabilities of the port
/// (RoCEv2 protocol, MAD, CM, AF_IB addressing, Ethernet AHs).
pub(crate) const CORE_CAP_FLAGS: u32 = 0x0080_0000 | 0x1 | 0x4 | 0x1000 | 0x2000;
/// `IB_MGMT_MAD_SIZE`: the port immutable `max_mad_size`.
pub(crate) const MAX_MAD_SIZE: u32 = 256;

/// The fields of `struct ib_port_attr` rxe sets at device creation.
///
/// `state` and `active_mtu` follow the netdev afterwards ([`IbMtu::from_netdev_mtu`]),
/// and each `query_port` replaces `active_speed`/`active_width` by what
/// `ib_get_eth_speed()` derives from the link, and `phys_state` by
/// [`PhysState::reported`]. `subnet_prefix` is left zero in this struct.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PortAttr {
    pub(crate) state: PortState,
    pub(crate) max_mtu: IbMtu,
    pub(crate) active_mtu: IbMtu,
    pub(crate) gid_tbl_len: i32,
    pub(crate) port_cap_flags: u32,
    pub(crate) max_msg_sz: u32,
    pub(crate) bad_pkey_cntr: u32,
    pub(crate) qkey_viol_cntr: u32,
    pub(crate) pkey_tbl_len: u16,
    pub(crate) sm_lid: u32,
    pub(crate) lid: u32,
    pub(crate) lmc: u8,
    pub(crate) max_vl_num: u8,
    pub(crate) sm_sl: u8,
    pub(crate) subnet_timeout: u8,
    pub(crate) init_type_reply: u8,
    pub(crate) active_width: u8,
    pub(crate) active_speed: u16,
    pub(crate) phys_state: PhysState,
}

/// `rxe_init_port_param()`.
pub(crate) const PORT_ATTR: PortAttr = PortAttr {
    state: PortState::Down,
    max_mtu: IbMtu::Mtu4096,
    active_mtu: IbMtu::Mtu256,
    gid_tbl_len: 1024,
    port_cap_flags: PORT_CM_SUP,
    max_msg_sz: MAX_MSG_SZ,
    bad_pkey_cntr: 0,
    qkey_viol_cntr: 0,
    pkey_tbl_len: 1,
    sm_lid: 0,
    lid: 0,
    lmc: 0,
    max_vl_num: 1,
    sm_sl: 0,
    subnet_timeout: 0,
    init_type_reply: 0,
    active_width: WIDTH_1X,
    active_speed: SPEED_SDR,
    phys_state: PhysState::Polling,
};

/// `struct ib_port_immutable`: what the core keeps of port 1 for the
/// device's life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PortImmutable {
    pub(crate) pkey_tbl_len: u16,
    pub(crate) gid_tbl_len: i32,
    pub(crate) core_cap_flags: u32,
    pub(crate) max_mad_size: u32,
}

impl PortImmutable {
    /// The immutable data of a port whose attributes `query_port` reported.
    pub(crate) const fn of(port: &PortAttr) -> Self {
        Self {
            pkey_tbl_len: port.pkey_tbl_len,
            gid_tbl_len: port.gid_tbl_len,
            core_cap_flags: CORE_CAP_FLAGS,
            max_mad_size: MAX_MAD_SIZE,
        }
    }
}

/// `RXE_PORT_MAX_MSG_SZ`: the longest message a WQE may describe.
pub(crate) const MAX_MSG_SZ: u32 = 1 << 31;
/// `RXE_PORT_SUBNET_PREFIX`: the link-local GID prefix.
#[allow(dead_code)] // The whole C value set, used or not.
pub(crate) const PORT_SUBNET_PREFIX: u64 = 0xfe80_0000_0000_0000;
/// PortInfo defaults of `enum rxe_port_info_param`.
#[allow(dead_code)] // The whole C value set, used or not.
pub(crate) const PORT_INFO_VL_CAP: u8 = 4;
#[allow(dead_code)] // The whole C value set, used or not.
pub(crate) const PORT_INFO_MTU_CAP: u8 = 5;
#[allow(dead_code)] // The whole C value set, used or not.
pub(crate) const PORT_INFO_OPER_VL: u8 = 1;

/// The six bytes the GUIDs are made from (`raw_gid` of 7.3's rdma_rxe;
/// 6.12 reads six bytes of `dev_addr` whatever its length): the start of the
/// netdev's hardware address, zero-padded when the address is shorter than
/// a MAC. A netdev without one (`addr_len` 0: tun, WireGuard) gets `random`
/// made a locally administered unicast MAC (`eth_random_addr()`), so that
/// two such devices do not share the all-zero address's GUID.
pub(crate) const fn guid_source(hw_addr: [u8; 6], addr_len: usize, random: [u8; 6]) -> [u8; 6] {
    if addr_len == 0 {
        let mut mac = random;
        mac[0] = (mac[0] & !0x01) | 0x02;
        return mac;
    }
    let mut mac = [0u8; 6];
    let mut i = 0;
    while i < addr_len && i < 6 {
        mac[i] = hw_addr[i];
        i += 1;
    }
    mac
}

/// `addrconf_addr_eui48()`: the EUI-64 rxe uses as node, port and system
/// image GUID, in wire (big-endian) byte order.
pub(crate) const fn guid_from_mac(mac: [u8; 6]) -> [u8; 8] {
    // FF:FE in the middle, and the universal/local bit flipped.
    [
        mac[0] ^ 0x02,
        mac[1],
        mac[2],
        0xff,
        0xfe,
        mac[3],
        mac[4],
        mac[5],
    ]
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn device_attr_table() {
        let d = DEVICE_ATTR;
        let table: &[(&str, i64, i64)] = &[
            ("vendor_id", d.vendor_id.into(), 0xff_ffff),
            ("vendor_part_id", d.vendor_part_id.into(), 0),
            ("hw_ver", d.hw_ver.into(), 0),
            ("max_qp", d.max_qp.into(), (1 << 20) - 16),
            ("max_qp_wr", d.max_qp_wr.into(), 1 << 20),
            ("max_send_sge", d.max_send_sge.into(), 32),
            ("max_recv_sge", d.max_recv_sge.into(), 32),
            ("max_sge_rd", d.max_sge_rd.into(), 32),
            ("max_cq", d.max_cq.into(), 1 << 20),
            ("max_cqe", d.max_cqe.into(), 32767),
            ("max_mr", d.max_mr.into(), (1 << 19) - 1),
            ("max_mw", d.max_mw.into(), (1 << 19) - 1),
            ("max_pd", d.max_pd.into(), 1 << 20),
            ("max_qp_rd_atom", d.max_qp_rd_atom.into(), 128),
            ("max_res_rd_atom", d.max_res_rd_atom.into(), 0x3f000),
            ("max_qp_init_rd_atom", d.max_qp_init_rd_atom.into(), 128),
            ("atomic_cap", (d.atomic_cap as u32).into(), 1),
            ("masked_atomic_cap", (d.masked_atomic_cap as u32).into(), 0),
            ("max_mcast_grp", d.max_mcast_grp.into(), 8192),
            ("max_mcast_qp_attach", d.max_mcast_qp_attach.into(), 56),
            (
                "max_total_mcast_qp_attach",
                d.max_total_mcast_qp_attach.into(),
                0x70000,
            ),
            ("max_ah", d.max_ah.into(), 32767),
            ("max_srq", d.max_srq.into(), (1 << 20) - 0x20001),
            ("max_srq_wr", d.max_srq_wr.into(), 1 << 20),
            ("max_srq_sge", d.max_srq_sge.into(), 27),
            (
                "max_fast_reg_page_list_len",
                d.max_fast_reg_page_list_len.into(),
                512,
            ),
            ("max_pkeys", d.max_pkeys.into(), 64),
            ("local_ca_ack_delay", d.local_ca_ack_delay.into(), 15),
            ("kernel_cap_flags", d.kernel_cap_flags as i64, 0x10),
        ];
        for (name, ours, want) in table {
            assert_eq!(ours, want, "{name}");
        }
        assert_eq!(d.fw_ver, 0);
        assert_eq!(d.max_mr_size, u64::MAX);
    }

    #[test]
    fn port_attr_table() {
        let p = PORT_ATTR;
        let table: &[(&str, i64, i64)] = &[
            ("state", (p.state as u32).into(), 1),
            ("max_mtu", p.max_mtu.as_raw().into(), 5),
            ("active_mtu", p.active_mtu.as_raw().into(), 1),
            ("gid_tbl_len", p.gid_tbl_len.into(), 1024),
            ("port_cap_flags", p.port_cap_flags.into(), 1 << 16),
            ("max_msg_sz", p.max_msg_sz.into(), 1 << 31),
            ("bad_pkey_cntr", p.bad_pkey_cntr.into(), 0),
            ("qkey_viol_cntr", p.qkey_viol_cntr.into(), 0),
            ("pkey_tbl_len", p.pkey_tbl_len.into(), 1),
            ("lid", p.lid.into(), 0),
            ("sm_lid", p.sm_lid.into(), 0),
            ("lmc", p.lmc.into(), 0),
            ("max_vl_num", p.max_vl_num.into(), 1),
            ("sm_sl", p.sm_sl.into(), 0),
            ("subnet_timeout", p.subnet_timeout.into(), 0),
            ("init_type_reply", p.init_type_reply.into(), 0),
            ("active_width", p.active_width.into(), 1),
            ("active_speed", p.active_speed.into(), 1),
            ("phys_state", (p.phys_state as u8).into(), 2),
        ];
        for (name, ours, want) in table {
            assert_eq!(ours, want, "{name}");
        }
        assert_eq!(CORE_CAP_FLAGS, 0x0080_3005);
    }

    /// The run-time report adds the GUID and 7.3's on-demand paging: the
    /// kernel capability bit and its RC/UD capabilities.
    #[test]
    fn device_report_adds_odp() {
        let r = DeviceReport::new(0x1122_3344_5566_7788);
        assert_eq!(r.sys_image_guid, 0x1122_3344_5566_7788);
        assert_eq!(r.attr.kernel_cap_flags, 0x14);
        let attr = DeviceAttr {
            kernel_cap_flags: DEVICE_ATTR.kernel_cap_flags,
            ..r.attr
        };
        assert_eq!(attr, DEVICE_ATTR);
        assert_eq!(
            (r.odp.general, r.odp.rc, r.odp.uc, r.odp.ud),
            (1, 0xff, 0, 0x23)
        );
    }

    #[test]
    fn port_immutable_of_port_attr() {
        let i = PortImmutable::of(&PORT_ATTR);
        assert_eq!(
            (
                i.pkey_tbl_len,
                i.gid_tbl_len,
                i.core_cap_flags,
                i.max_mad_size
            ),
            (1, 1024, 0x0080_3005, 256)
        );
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
}
