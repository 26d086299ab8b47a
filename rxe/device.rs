// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The rxe device: creation on a netdev, its limits, port state and events.

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use kernel::{
    prelude::*,
    str::{BStr, CStr},
    sync::Arc,
};

use crate::rxe::counters::{Counter, Counters};
use crate::rxe::kapi::ibdev::{self, Identity, PortEvent};
use crate::rxe::kapi::netdev::{NetDevice, NetEvent};
use crate::rxe::kapi::netns::{Net, NetId, TunnelUse};
use crate::rxe::kapi::random;
use crate::rxe::kapi::route::RouteScope;
use crate::rxe::kapi::udata::Udata;
use crate::rxe::pool::Pool;
use crate::rxe::proto::device_attr::{
    guid_from_mac, guid_source, DeviceReport, PhysState, PortAttr, PortImmutable, PortState,
    PORT_ATTR,
};
use crate::rxe::proto::gid_set::GidSet;
use crate::rxe::proto::params::{self, IbMtu};
use crate::rxe::{ah, mcast, mr, mw, qp};

/// An rxe device: the core's `ib_device` followed by its [`DeviceState`].
pub(crate) type Device = ibdev::Device<DeviceState>;
/// A counted reference on an rxe device.
pub(crate) type DeviceRef = ibdev::DeviceRef<DeviceState>;

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
        let pool = match self {
            Self::Ucontext => params::pool::UC,
            Self::Pd => params::pool::PD,
            Self::Ah => params::pool::AH,
            Self::Srq => params::pool::SRQ,
            Self::Qp => params::pool::QP,
            Self::Cq => params::pool::CQ,
            Self::Mr => params::pool::MR,
            Self::Mw => params::pool::MW,
        };
        pool.max_elem
    }
}

/// `gsi_qp_index` while the GSI QP is being created.
const GSI_CLAIMED: u32 = u32::MAX;

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
    active_mtu: AtomicU32,
    cap_flags: AtomicU32,
    qkey_viol_cntr: AtomicU32,
    bad_pkey_cntr: AtomicU32,
}

/// What the driver keeps per device, after the core's `ib_device`.
#[pin_data]
pub(crate) struct DeviceState {
    sys_image_guid: AtomicU64,
    port: Port,
    counts: Arc<Counts>,
    /// QPs by QPN, for packet demux.
    #[pin]
    pub(crate) qps: Pool<Arc<qp::QpShared>>,
    /// MRs and MWs by key index (the top 24 bits of lkey/rkey).
    #[pin]
    pub(crate) mrs: Pool<Arc<mr::MrShared>>,
    #[pin]
    pub(crate) mws: Pool<Arc<mw::MwShared>>,
    /// AHs by the number user space puts in UD send WQEs.
    #[pin]
    pub(crate) ahs: Pool<Arc<ah::AhShared>>,
    /// SRQ numbers handed to user space.
    #[pin]
    pub(crate) srqs: Pool<()>,
    /// Packet and error counters (`rdma statistic`).
    pub(crate) counters: Counters,
    /// Pool index of the GSI QP (packets to QPN 1 go there); 0 while none.
    gsi_qp_index: AtomicU32,
    /// Multicast groups and their QPs, by MGID.
    #[pin]
    pub(crate) mcast: mcast::Groups,
    /// The port's RoCEv2 GIDs, for the receive path's destination check
    /// (kept by the `add_gid`/`del_gid` callbacks).
    pub(crate) gids: GidSet,
    /// Requests the QPs' reorder buffers hold now (`responder::reorder`).
    pub(crate) reorder_held: AtomicU32,
    /// Keeps the tunnel sockets of the netdev's namespace open while the
    /// device exists; dropped by `dealloc_driver` (process context).
    _tunnels: TunnelUse,
}

impl DeviceState {
    fn new(
        guid: [u8; 8],
        netdev_mtu: u32,
        tunnels: TunnelUse,
    ) -> Result<impl PinInit<Self, Error>> {
        let zero = || AtomicU32::new(0);
        let counts = Arc::new(
            Counts([
                zero(),
                zero(),
                zero(),
                zero(),
                zero(),
                zero(),
                zero(),
                zero(),
            ]),
            GFP_KERNEL,
        )?;
        let qps = Pool::new(params::pool::QP.min_index, params::pool::QP.max_index)?;
        let mrs = Pool::new(params::pool::MR.min_index, params::pool::MR.max_index)?;
        let mws = Pool::new(params::pool::MW.min_index, params::pool::MW.max_index)?;
        let ahs = Pool::new(params::pool::AH.min_index, params::pool::AH.max_index)?;
        let srqs = Pool::new(params::pool::SRQ.min_index, params::pool::SRQ.max_index)?;
        Ok(try_pin_init!(Self {
            sys_image_guid: AtomicU64::new(u64::from_ne_bytes(guid)),
            port: Port {
                active_mtu: AtomicU32::new(IbMtu::from_netdev_mtu(netdev_mtu).as_raw()),
                cap_flags: AtomicU32::new(PORT_ATTR.port_cap_flags),
                qkey_viol_cntr: zero(),
                bad_pkey_cntr: zero(),
            },
            counts,
            qps <- qps,
            mrs <- mrs,
            mws <- mws,
            ahs <- ahs,
            srqs <- srqs,
            counters: Counters::new(),
            gsi_qp_index: AtomicU32::new(0),
            mcast <- mcast::Groups::new(),
            gids: GidSet::new(),
            reorder_held: zero(),
            _tunnels: tunnels,
        }? Error))
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

    pub(crate) fn query_device(&self, udata: Option<&Udata>) -> Result<DeviceReport> {
        if udata.is_some_and(|u| u.inlen() != 0 || u.outlen() != 0) {
            return Err(EINVAL);
        }
        Ok(DeviceReport::new(
            self.sys_image_guid.load(Ordering::Relaxed),
        ))
    }

    pub(crate) fn set_sys_image_guid(&self, guid_be: u64) {
        self.sys_image_guid.store(guid_be, Ordering::Relaxed);
    }

    pub(crate) fn query_port(&self, dev: &Device, port: u32) -> Result<PortAttr> {
        if port != 1 {
            return Err(EINVAL);
        }
        let ndev = dev.netdev().ok_or(ENODEV)?;
        // The netdev's state now, as 7.3's rdma_rxe reports it (6.12 reports
        // the state of the last netdev event).
        let active = ndev.is_running_with_carrier();
        // The width/speed the core derives from the netdev's link settings.
        let (active_speed, active_width) = dev.eth_speed()?;
        let d = &PORT_ATTR;
        Ok(PortAttr {
            state: if active {
                PortState::Active
            } else {
                PortState::Down
            },
            active_mtu: IbMtu::from_raw(self.port.active_mtu.load(Ordering::Relaxed))
                .unwrap_or(d.active_mtu),
            port_cap_flags: self.port.cap_flags.load(Ordering::Relaxed),
            bad_pkey_cntr: self.port.bad_pkey_cntr.load(Ordering::Relaxed),
            qkey_viol_cntr: self.port.qkey_viol_cntr.load(Ordering::Relaxed),
            active_width,
            active_speed,
            phys_state: PhysState::reported(active, ndev.is_up()),
            ..*d
        })
    }

    /// What the core keeps of port `port`, from its attributes now.
    pub(crate) fn port_immutable(&self, dev: &Device, port: u32) -> Result<PortImmutable> {
        Ok(PortImmutable::of(&self.query_port(dev, port)?))
    }

    pub(crate) fn query_pkey(&self, _port: u32, index: u16) -> Result<u16> {
        if index != 0 {
            return Err(EINVAL);
        }
        Ok(params::DEFAULT_PKEY_FULL)
    }

    pub(crate) fn modify_port(&self, set: u32, clear: u32, reset_qkey_cntr: bool) {
        // Set then clear, as one update, so a concurrent query sees either.
        let _ = self
            .port
            .cap_flags
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |f| {
                Some((f | set) & !clear)
            });
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
        // `query_port` reads the netdev's state itself; this only tells
        // the consumers, and counts the loss of the link.
        let event = if active {
            PortEvent::Active
        } else {
            PortEvent::Error
        };
        dev.dispatch_port_event(event);
        if !active {
            self.counters.inc(Counter::LinkDowned);
        }
    }

    fn follow_link(&self, dev: &Device, ndev: &NetDevice) {
        self.set_port_state(dev, ndev.is_running_with_carrier());
    }

    fn set_mtu(&self, mtu: u32) {
        self.port
            .active_mtu
            .store(IbMtu::from_netdev_mtu(mtu).as_raw(), Ordering::Relaxed);
    }

    /// A packet came with a P_Key we do not have (saturates at 0xffff, as the
    /// 16-bit port counter does).
    pub(crate) fn count_bad_pkey(&self) {
        saturating_inc16(&self.port.bad_pkey_cntr);
    }

    /// A datagram came with the wrong Q_Key.
    pub(crate) fn count_qkey_violation(&self) {
        saturating_inc16(&self.port.qkey_viol_cntr);
    }

    /// Records where the GSI QP lives, so packets to QPN 1 reach it; 0 clears.
    pub(crate) fn set_gsi_qp_index(&self, index: u32) {
        self.gsi_qp_index.store(index, Ordering::Release);
    }

    /// The pool index of the GSI QP, if there is one.
    pub(crate) fn gsi_qp_index(&self) -> Option<u32> {
        Some(self.gsi_qp_index.load(Ordering::Acquire)).filter(|&i| i != 0 && i != GSI_CLAIMED)
    }

    /// Claims the device's only GSI QP for a create in progress; `false`
    /// when it exists or is being created. `set_gsi_qp_index` completes or
    /// (with 0) abandons the claim.
    pub(crate) fn claim_gsi_qp(&self) -> bool {
        self.gsi_qp_index
            .compare_exchange(0, GSI_CLAIMED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// The path MTU limit of the port, in bytes.
    pub(crate) fn mtu_bytes(&self) -> u32 {
        IbMtu::from_raw(self.port.active_mtu.load(Ordering::Relaxed)).map_or(256, IbMtu::bytes)
    }
}

fn saturating_inc16(c: &AtomicU32) {
    let _ = c.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
        (v < 0xffff).then_some(v + 1)
    });
}

fn dev_info(_dev: &Device, ndev: &NetDevice, what: &str) {
    pr_info!("{} {}\n", what, BStr::from_bytes(ndev.name()));
}

/// `rdma link add NAME type rxe netdev DEV`, run in any namespace: `DEV` is
/// the caller's, `net` its namespace, `tunnels` that namespace's sockets.
pub(crate) fn newlink(name: &CStr, ndev: &NetDevice, net: &Net, tunnels: TunnelUse) -> Result {
    if ndev.is_vlan() {
        pr_err!("rxe can only be added on a real device, not a VLAN\n");
        return Err(EPERM);
    }
    if DeviceRef::by_netdev(ndev).is_some() {
        pr_err!(
            "{} already has an rxe device\n",
            BStr::from_bytes(ndev.name())
        );
        return Err(EEXIST);
    }
    let random = [(); 6].map(|()| random::u8());
    let guid = guid_from_mac(guid_source(ndev.mac(), ndev.addr_len(), random));
    let identity = Identity {
        node_guid: guid,
        node_desc: b"rxe",
    };
    Device::register(
        name,
        ndev,
        net,
        identity,
        DeviceState::new(guid, ndev.mtu(), tunnels)?,
    )
}

/// Drops the routes that every QP of every device cached within `scope`.
/// Process context.
fn forget_routes(scope: RouteScope) {
    Device::for_each(|dev| dev.state().qps.for_each(|qp| qp.forget_routes(scope)));
}

/// A namespace exits: no route of it may outlive it, whatever netdev the
/// QP's source GID is on (the port's netdev, or a VLAN or other upper
/// device of it moved into that namespace).
pub(crate) fn net_exit(net: NetId) {
    forget_routes(RouteScope::Net(net));
}

/// Netdev notifier: keep each rxe device in step with its netdev.
pub(crate) fn net_event(ndev: &NetDevice, event: NetEvent) {
    if matches!(event, NetEvent::Unregister) {
        // Any netdev that goes away or leaves its namespace may be the
        // one a QP's route leaves through (the netdev of its source GID,
        // an upper device of a port's).
        forget_routes(RouteScope::Dev(NetId::of(ndev), ndev.ifindex()));
    }
    let Some(dev) = DeviceRef::by_netdev(ndev) else {
        return;
    };
    let state = dev.state();
    match event {
        NetEvent::Unregister => {
            // The netdev goes away or moves to another namespace. Both end
            // the device; the routes its QPs cached in the old namespace
            // go now, since a QP held open by a user can outlive that
            // namespace (a moved netdev does not hold its exit back).
            state.qps.for_each(|qp| qp.forget_routes(RouteScope::All));
            dev.unregister_queued()
        }
        NetEvent::Up => state.set_port_state(&dev, true),
        NetEvent::Down => state.set_port_state(&dev, false),
        NetEvent::Change => state.follow_link(&dev, ndev),
        NetEvent::ChangeMtu => state.set_mtu(ndev.mtu()),
        NetEvent::Other => {}
    }
}
