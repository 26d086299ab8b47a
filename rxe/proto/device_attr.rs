// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The device and port attributes rxe reports (`rxe_init_device_param()`,
//! `rxe_init_port_param()`): capability flags, `ib_device_attr`,
//! `ib_port_attr` and the port's immutable data, built from the limits in
//! [`params`](super::params), and the GUIDs made from the netdev's address.
//!
//! `query_device` and `query_port` must return exactly these numbers: user space
//! (rdma-core, perftest, MPI stacks) sizes its queues from them.

use super::odp;
use super::params::{limits, pool, IbMtu, MAX_MSG_SZ};

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
    pub(crate) odp: odp::Caps,
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
            odp: odp::CAPS,
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
#[path = "device_attr_tests.rs"]
mod tests;
