//! The rxe device: creation on a netdev, its limits, port state and events.

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use kernel::{prelude::*, str::CStr, sync::Arc};

use crate::rxe::kernel::ibdev::{Device, DeviceAttr, DeviceRef, Identity, PortAttr, PortEvent};
use crate::rxe::kernel::netdev::{NetDevice, NetEvent};
use crate::rxe::kernel::udata::Udata;
use crate::rxe::proto::params as p;
use crate::rxe::proto::wire::Mtu;

/// The verbs object kinds whose number the device limits.
#[derive(Clone, Copy)]
pub(crate) enum ObjKind {
    Ucontext,
    Pd,
    Ah,
    Srq,
    Qp,
    Cq,
    Mr,
    Mw,
}

const KINDS: usize = 8;

impl ObjKind {
    fn max(self) -> u32 {
        match self {
            Self::Ucontext => p::MAX_UCONTEXT,
            Self::Pd => p::MAX_PD,
            Self::Ah => p::MAX_AH,
            Self::Srq => p::MAX_SRQ,
            Self::Qp => p::MAX_QP,
            Self::Cq => p::MAX_CQ,
            Self::Mr => p::MAX_MR,
            Self::Mw => p::MAX_MW,
        }
    }
}

/// Live object counts per kind, shared with the objects that hold a slot.
struct Counts([AtomicU32; KINDS]);

/// One object's place in its kind's budget; dropping it frees the place.
pub(crate) struct ObjCount {
    counts: Arc<Counts>,
    kind: ObjKind,
}

impl Drop for ObjCount {
    fn drop(&mut self) {
        self.counts.0[self.kind as usize].fetch_sub(1, Ordering::Relaxed);
    }
}

/// Port 1 of the device. Fields change from netdev notifiers and verbs
/// calls concurrently, so each is an atomic.
struct Port {
    state: AtomicU32,
    active_mtu: AtomicU32,
    cap_flags: AtomicU32,
    qkey_viol_cntr: AtomicU32,
}

/// What the driver keeps per device, after the core's `ib_device`.
pub(crate) struct DeviceState {
    attr: DeviceAttr,
    sys_image_guid: AtomicU64,
    port: Port,
    counts: Arc<Counts>,
}

/// The modified EUI-64 of a MAC address: the GUID rxe derives its identity from.
pub(crate) fn guid_from_mac(mac: [u8; 6]) -> [u8; 8] {
    [mac[0] ^ 2, mac[1], mac[2], 0xff, 0xfe, mac[3], mac[4], mac[5]]
}

fn device_attr(guid: [u8; 8]) -> DeviceAttr {
    DeviceAttr {
        vendor_id: p::VENDOR_ID,
        max_mr_size: p::MAX_MR_SIZE,
        page_size_cap: p::PAGE_SIZE_CAP,
        max_qp: p::MAX_QP as i32,
        max_qp_wr: p::MAX_QP_WR as i32,
        device_cap_flags: p::DEVICE_CAP_FLAGS,
        kernel_cap_flags: p::KERNEL_CAP_FLAGS,
        max_send_sge: p::MAX_SGE as i32,
        max_recv_sge: p::MAX_SGE as i32,
        max_sge_rd: p::MAX_SGE_RD as i32,
        max_cq: p::MAX_CQ as i32,
        max_cqe: p::MAX_CQE as i32,
        max_mr: p::MAX_MR as i32,
        max_mw: p::MAX_MW as i32,
        max_pd: p::MAX_PD as i32,
        max_qp_rd_atom: p::MAX_QP_RD_ATOM as i32,
        max_res_rd_atom: p::MAX_RES_RD_ATOM as i32,
        max_qp_init_rd_atom: p::MAX_QP_INIT_RD_ATOM as i32,
        atomic_cap: p::ATOMIC_CAP,
        max_mcast_grp: p::MAX_MCAST_GRP as i32,
        max_mcast_qp_attach: p::MAX_MCAST_QP_ATTACH as i32,
        max_total_mcast_qp_attach: p::MAX_TOT_MCAST_QP_ATTACH as i32,
        max_ah: p::MAX_AH as i32,
        max_srq: p::MAX_SRQ as i32,
        max_srq_wr: p::MAX_SRQ_WR as i32,
        max_srq_sge: p::MAX_SRQ_SGE as i32,
        max_fast_reg_page_list_len: p::MAX_FMR_PAGE_LIST_LEN,
        max_pkeys: p::MAX_PKEYS as u16,
        local_ca_ack_delay: p::LOCAL_CA_ACK_DELAY as u8,
        sys_image_guid: u64::from_ne_bytes(guid),
        ..Default::default()
    }
}

impl DeviceState {
    fn new(ndev: &NetDevice) -> Result<Self> {
        let guid = guid_from_mac(ndev.mac());
        let zero = || AtomicU32::new(0);
        Ok(Self {
            attr: device_attr(guid),
            sys_image_guid: AtomicU64::new(u64::from_ne_bytes(guid)),
            port: Port {
                state: AtomicU32::new(p::PORT_DOWN),
                active_mtu: AtomicU32::new(Mtu::from_netdev_mtu(ndev.mtu()) as u32),
                cap_flags: AtomicU32::new(p::PORT_CAP_FLAGS),
                qkey_viol_cntr: zero(),
            },
            counts: Arc::new(
                Counts([zero(), zero(), zero(), zero(), zero(), zero(), zero(), zero()]),
                GFP_KERNEL,
            )?,
        })
    }

    /// Reserves a place for a new object of `kind`, or fails as the C
    /// driver's pools do when the kind is at its limit.
    pub(crate) fn take_slot(&self, kind: ObjKind) -> Result<ObjCount> {
        let count = &self.counts.0[kind as usize];
        if count.fetch_add(1, Ordering::Relaxed) >= kind.max() {
            count.fetch_sub(1, Ordering::Relaxed);
            return Err(EINVAL);
        }
        Ok(ObjCount {
            counts: self.counts.clone(),
            kind,
        })
    }

    pub(crate) fn query_device(&self, _dev: &Device, attr: &mut DeviceAttr, udata: Option<&Udata>) -> Result {
        if udata.is_some_and(|u| u.inlen() != 0 || u.outlen() != 0) {
            return Err(EINVAL);
        }
        *attr = self.attr;
        attr.sys_image_guid = self.sys_image_guid.load(Ordering::Relaxed);
        Ok(())
    }

    pub(crate) fn set_sys_image_guid(&self, guid_be: u64) {
        self.sys_image_guid.store(guid_be, Ordering::Relaxed);
    }

    pub(crate) fn query_port(&self, dev: &Device, port: u32, attr: &mut PortAttr) -> Result {
        if port != 1 {
            return Err(EINVAL);
        }
        let ndev = dev.netdev().ok_or(ENODEV)?;
        let state = self.port.state.load(Ordering::Relaxed);
        *attr = PortAttr {
            state,
            max_mtu: Mtu::Mtu4096 as u32,
            active_mtu: self.port.active_mtu.load(Ordering::Relaxed),
            gid_tbl_len: p::PORT_GID_TBL_LEN as i32,
            port_cap_flags: self.port.cap_flags.load(Ordering::Relaxed),
            max_msg_sz: p::PORT_MAX_MSG_SZ,
            qkey_viol_cntr: self.port.qkey_viol_cntr.load(Ordering::Relaxed),
            pkey_tbl_len: p::PORT_PKEY_TBL_LEN as u16,
            max_vl_num: p::PORT_MAX_VL_NUM as u8,
            ..Default::default()
        };
        let (speed, width) = dev.eth_speed()?;
        attr.active_speed = speed;
        attr.active_width = width;
        attr.phys_state = if state == p::PORT_ACTIVE {
            p::PHYS_STATE_LINK_UP
        } else if ndev.is_up() {
            p::PHYS_STATE_POLLING
        } else {
            p::PHYS_STATE_DISABLED
        };
        Ok(())
    }

    pub(crate) fn query_pkey(&self, _port: u32, index: u16) -> Result<u16> {
        if index != 0 {
            return Err(EINVAL);
        }
        Ok(p::DEFAULT_PKEY_FULL)
    }

    pub(crate) fn modify_port(&self, set: u32, clear: u32, reset_qkey_cntr: bool) {
        // Set then clear, as one update, so a concurrent query sees either.
        let _ = self
            .port
            .cap_flags
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |f| Some((f | set) & !clear));
        if reset_qkey_cntr {
            self.port.qkey_viol_cntr.store(0, Ordering::Relaxed);
        }
    }

    /// Called by the core once the device is registered.
    pub(crate) fn enable(&self, dev: &Device) -> Result {
        let ndev = dev.netdev().ok_or(ENODEV)?;
        self.follow_link(dev, &ndev);
        dev_info(dev, &ndev, "added");
        Ok(())
    }

    fn set_port_state(&self, dev: &Device, active: bool) {
        let (state, event) = if active {
            (p::PORT_ACTIVE, PortEvent::Active)
        } else {
            (p::PORT_DOWN, PortEvent::Error)
        };
        self.port.state.store(state, Ordering::Relaxed);
        dev.dispatch_port_event(event);
    }

    fn follow_link(&self, dev: &Device, ndev: &NetDevice) {
        self.set_port_state(dev, ndev.is_running_with_carrier());
    }

    fn set_mtu(&self, mtu: u32) {
        self.port.active_mtu.store(Mtu::from_netdev_mtu(mtu) as u32, Ordering::Relaxed);
    }

    /// The path MTU limit of the port, in bytes.
    pub(crate) fn mtu_bytes(&self) -> u32 {
        Mtu::try_from(self.port.active_mtu.load(Ordering::Relaxed)).map_or(256, Mtu::bytes)
    }
}

fn dev_info(_dev: &Device, ndev: &NetDevice, what: &str) {
    pr_info!("{} {}\n", what, BStrDisplay(ndev.name()));
}

/// Displays bytes that are ASCII in practice (interface names).
struct BStrDisplay<'a>(&'a [u8]);

impl core::fmt::Display for BStrDisplay<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        for &c in self.0 {
            let c = if c.is_ascii_graphic() { c as char } else { '?' };
            core::fmt::Write::write_char(f, c)?;
        }
        Ok(())
    }
}

/// `rdma link add NAME type rxe netdev DEV`.
pub(crate) fn newlink(name: &CStr, ndev: &NetDevice) -> Result {
    if ndev.is_vlan() {
        pr_err!("rxe can only be added on a real device, not a VLAN\n");
        return Err(EPERM);
    }
    if DeviceRef::by_netdev(ndev).is_some() {
        pr_err!("{} already has an rxe device\n", BStrDisplay(ndev.name()));
        return Err(EEXIST);
    }
    let identity = Identity {
        node_guid: guid_from_mac(ndev.mac()),
        node_desc: b"rxe",
    };
    Device::register(name, ndev, identity, DeviceState::new(ndev)?)
}

/// Netdev notifier: keep each rxe device in step with its netdev.
pub(crate) fn net_event(ndev: &NetDevice, event: NetEvent) {
    let Some(dev) = DeviceRef::by_netdev(ndev) else {
        return;
    };
    let state = dev.state();
    match event {
        NetEvent::Unregister => dev.unregister_queued(),
        NetEvent::Up => state.set_port_state(&dev, true),
        NetEvent::Down => state.set_port_state(&dev, false),
        NetEvent::Change => state.follow_link(&dev, ndev),
        NetEvent::ChangeMtu => state.set_mtu(ndev.mtu()),
        NetEvent::Other => {}
    }
}
