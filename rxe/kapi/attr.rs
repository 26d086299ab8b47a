// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The verbs attribute structs of the RDMA core and their Rust forms in
//! `proto`: device and port attributes, AH attributes, QP caps, modify and
//! query attributes, SRQ attributes. The entry points in `rxe/ops` convert
//! with these and stay a few lines each.

use kernel::ffi::c_int;

use crate::rxe::proto::av::{ah_attr_from_av, AhAttr, SgidAttr};
use crate::rxe::proto::cq_srq::SrqAttr;
use crate::rxe::proto::device_attr::{self, DeviceReport, PortAttr, PortImmutable};
use crate::rxe::proto::qp::AttrMask;
use crate::rxe::proto::qp_attr::{Caps, ModifyAttr, QpAttrs};
use crate::rxe::proto::uapi::GlobalRoute;
use crate::rxe::sys;

/// A count limit of `ib_device_attr` from the driver's `i32` parameters:
/// `int` in 6.12's struct.
#[cfg(not(rxe_kernel_7))]
fn attr_int(v: i32) -> i32 {
    v
}

/// A count limit of `ib_device_attr` from the driver's `i32` parameters:
/// `u32` in 7.x's struct (the limits are never negative).
#[cfg(rxe_kernel_7)]
fn attr_int(v: i32) -> u32 {
    u32::try_from(v).unwrap_or(0)
}

/// What query_device returns; the fields rxe does not set are zero.
impl From<&DeviceReport> for sys::ib_device_attr {
    fn from(r: &DeviceReport) -> Self {
        let a = &r.attr;
        let mut d = sys::ib_device_attr {
            fw_ver: a.fw_ver,
            sys_image_guid: r.sys_image_guid,
            max_mr_size: a.max_mr_size,
            page_size_cap: a.page_size_cap,
            vendor_id: a.vendor_id,
            vendor_part_id: a.vendor_part_id,
            hw_ver: a.hw_ver,
            max_qp: attr_int(a.max_qp),
            max_qp_wr: attr_int(a.max_qp_wr),
            device_cap_flags: a.device_cap_flags,
            kernel_cap_flags: a.kernel_cap_flags,
            max_send_sge: attr_int(a.max_send_sge),
            max_recv_sge: attr_int(a.max_recv_sge),
            max_sge_rd: attr_int(a.max_sge_rd),
            max_cq: attr_int(a.max_cq),
            max_cqe: attr_int(a.max_cqe),
            max_mr: attr_int(a.max_mr),
            max_pd: attr_int(a.max_pd),
            max_qp_rd_atom: attr_int(a.max_qp_rd_atom),
            max_res_rd_atom: attr_int(a.max_res_rd_atom),
            max_qp_init_rd_atom: attr_int(a.max_qp_init_rd_atom),
            atomic_cap: a.atomic_cap as u32,
            masked_atomic_cap: a.masked_atomic_cap as u32,
            max_mw: attr_int(a.max_mw),
            max_mcast_grp: attr_int(a.max_mcast_grp),
            max_mcast_qp_attach: attr_int(a.max_mcast_qp_attach),
            max_total_mcast_qp_attach: attr_int(a.max_total_mcast_qp_attach),
            max_ah: attr_int(a.max_ah),
            max_srq: attr_int(a.max_srq),
            max_srq_wr: attr_int(a.max_srq_wr),
            max_srq_sge: attr_int(a.max_srq_sge),
            max_fast_reg_page_list_len: a.max_fast_reg_page_list_len,
            max_pkeys: a.max_pkeys,
            local_ca_ack_delay: a.local_ca_ack_delay,
            ..Default::default()
        };
        d.odp_caps.general_caps = r.odp.general;
        d.odp_caps.per_transport_caps.rc_odp_caps = r.odp.rc;
        d.odp_caps.per_transport_caps.uc_odp_caps = r.odp.uc;
        d.odp_caps.per_transport_caps.ud_odp_caps = r.odp.ud;
        d
    }
}

/// What query_port returns; `subnet_prefix` and the fields rxe does not set
/// are zero.
impl From<&PortAttr> for sys::ib_port_attr {
    fn from(a: &PortAttr) -> Self {
        sys::ib_port_attr {
            state: a.state as u32,
            max_mtu: a.max_mtu.as_raw(),
            active_mtu: a.active_mtu.as_raw(),
            gid_tbl_len: a.gid_tbl_len,
            port_cap_flags: a.port_cap_flags,
            max_msg_sz: a.max_msg_sz,
            bad_pkey_cntr: a.bad_pkey_cntr,
            qkey_viol_cntr: a.qkey_viol_cntr,
            pkey_tbl_len: a.pkey_tbl_len,
            sm_lid: a.sm_lid,
            lid: a.lid,
            lmc: a.lmc,
            max_vl_num: a.max_vl_num,
            sm_sl: a.sm_sl,
            subnet_timeout: a.subnet_timeout,
            init_type_reply: a.init_type_reply,
            active_width: a.active_width,
            active_speed: a.active_speed,
            phys_state: a.phys_state as u8,
            ..Default::default()
        }
    }
}

const _: () = assert!(device_attr::CORE_CAP_FLAGS == sys::RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP);
const _: () = assert!(device_attr::MAX_MAD_SIZE == sys::IB_MGMT_MAD_SIZE);

/// What get_port_immutable returns.
impl From<&PortImmutable> for sys::ib_port_immutable {
    fn from(i: &PortImmutable) -> Self {
        sys::ib_port_immutable {
            pkey_tbl_len: c_int::from(i.pkey_tbl_len),
            gid_tbl_len: i.gid_tbl_len,
            core_cap_flags: i.core_cap_flags,
            max_mad_size: i.max_mad_size,
        }
    }
}

/// Reads an `rdma_ah_attr` the core has resolved.
///
/// # Safety
///
/// When `attr` has a GRH, `grh.sgid_attr` is null or points to a GID
/// attribute that is live for the call.
pub(crate) unsafe fn ah_attr_from_raw(attr: &sys::rdma_ah_attr) -> AhAttr {
    let g = &attr.grh;
    let has_grh = u32::from(attr.ah_flags) & sys::ib_ah_flags_IB_AH_GRH != 0;
    let sgid = if has_grh {
        // SAFETY: With a GRH, `sgid_attr` is null or points to a GID
        // attribute live for the call (the caller's contract); `as_ref`
        // turns null into `None`.
        unsafe { g.sgid_attr.as_ref() }.map(|s| SgidAttr {
            // SAFETY: Every bit pattern is a valid `raw` GID.
            gid: unsafe { s.gid.raw },
            gid_type: s.gid_type,
        })
    } else {
        None
    };
    AhAttr {
        port_num: attr.port_num,
        ah_flags: attr.ah_flags,
        sl: attr.sl,
        static_rate: attr.static_rate,
        grh: GlobalRoute {
            // SAFETY: Every bit pattern is a valid `raw` GID.
            dgid: unsafe { g.dgid.raw },
            flow_label: g.flow_label,
            sgid_index: g.sgid_index,
            hop_limit: g.hop_limit,
            traffic_class: g.traffic_class,
        },
        sgid,
        // SAFETY: The union's members are plain bytes; RoCE attributes use
        // `roce`, whose DMAC the core resolved.
        dmac: unsafe { attr.__bindgen_anon_1.roce.dmac },
    }
}

/// The attribute query_ah and query_qp return: a RoCE attribute with a GRH.
impl From<&AhAttr> for sys::rdma_ah_attr {
    fn from(a: &AhAttr) -> Self {
        let mut out = sys::rdma_ah_attr {
            type_: sys::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_ROCE,
            port_num: a.port_num,
            ah_flags: a.ah_flags,
            sl: a.sl,
            static_rate: a.static_rate,
            ..Default::default()
        };
        out.grh.dgid.raw = a.grh.dgid;
        out.grh.flow_label = a.grh.flow_label;
        out.grh.sgid_index = a.grh.sgid_index;
        out.grh.hop_limit = a.grh.hop_limit;
        out.grh.traffic_class = a.grh.traffic_class;
        out.__bindgen_anon_1.roce.dmac = a.dmac;
        out
    }
}

impl From<&sys::ib_qp_cap> for Caps {
    fn from(c: &sys::ib_qp_cap) -> Self {
        Caps {
            max_send_wr: c.max_send_wr,
            max_recv_wr: c.max_recv_wr,
            max_send_sge: c.max_send_sge,
            max_recv_sge: c.max_recv_sge,
            max_inline_data: c.max_inline_data,
        }
    }
}

/// Writes the caps a QP got into the caller's `ib_qp_cap`, leaving its
/// other fields (`max_rdma_ctxs`, which the core reads after create_qp).
pub(crate) fn write_caps(c: &Caps, out: &mut sys::ib_qp_cap) {
    out.max_send_wr = c.max_send_wr;
    out.max_recv_wr = c.max_recv_wr;
    out.max_send_sge = c.max_send_sge;
    out.max_recv_sge = c.max_recv_sge;
    out.max_inline_data = c.max_inline_data;
}

/// # Safety
///
/// `a` is the attribute of a modify call whose mask has `AV` (or
/// `ALT_PATH` for the alternate path), resolved by the core.
unsafe fn masked_ah(a: &sys::rdma_ah_attr, set: bool) -> Option<AhAttr> {
    // SAFETY: The attribute is read only when `set`, and then the core
    // resolved it (the caller's contract): a GRH's `sgid_attr` is null or a
    // GID attribute the core holds for the call.
    set.then(|| unsafe { ah_attr_from_raw(a) })
}

/// The fields of a modify_qp's `ib_qp_attr` the mask says are set: kernel
/// callers leave the others uninitialised.
///
/// # Safety
///
/// Where the mask sets `AV` or `ALT_PATH`, the core resolved the AH
/// attribute of that path (see [`ah_attr_from_raw`]).
pub(crate) unsafe fn modify_attr_from_raw(a: &sys::ib_qp_attr, mask: AttrMask) -> ModifyAttr {
    let has = |m: AttrMask| mask.intersects(m);
    let mut m = ModifyAttr::zeroed();
    if has(AttrMask::STATE) {
        m.qp_state = a.qp_state;
    }
    if has(AttrMask::CUR_STATE) {
        m.cur_qp_state = a.cur_qp_state;
    }
    if has(AttrMask::PATH_MTU) {
        m.path_mtu = a.path_mtu;
    }
    if has(AttrMask::PATH_MIG_STATE) {
        m.path_mig_state = a.path_mig_state;
    }
    if has(AttrMask::QKEY) {
        m.qkey = a.qkey;
    }
    if has(AttrMask::RQ_PSN) {
        m.rq_psn = a.rq_psn;
    }
    if has(AttrMask::SQ_PSN) {
        m.sq_psn = a.sq_psn;
    }
    if has(AttrMask::DEST_QPN) {
        m.dest_qp_num = a.dest_qp_num;
    }
    if has(AttrMask::ACCESS_FLAGS) {
        // A bit set the C side keeps in an int.
        m.qp_access_flags = a.qp_access_flags as u32;
    }
    if has(AttrMask::CAP) {
        m.cap = Caps::from(&a.cap);
    }
    if has(AttrMask::PKEY_INDEX) {
        m.pkey_index = a.pkey_index;
    }
    if has(AttrMask::EN_SQD_ASYNC_NOTIFY) {
        m.en_sqd_async_notify = a.en_sqd_async_notify;
    }
    if has(AttrMask::MAX_QP_RD_ATOMIC) {
        m.max_rd_atomic = a.max_rd_atomic;
    }
    if has(AttrMask::MAX_DEST_RD_ATOMIC) {
        m.max_dest_rd_atomic = a.max_dest_rd_atomic;
    }
    if has(AttrMask::MIN_RNR_TIMER) {
        m.min_rnr_timer = a.min_rnr_timer;
    }
    if has(AttrMask::PORT) {
        m.port_num = a.port_num;
    }
    if has(AttrMask::TIMEOUT) {
        m.timeout = a.timeout;
    }
    if has(AttrMask::RETRY_CNT) {
        m.retry_cnt = a.retry_cnt;
    }
    if has(AttrMask::RNR_RETRY) {
        m.rnr_retry = a.rnr_retry;
    }
    if has(AttrMask::ALT_PATH) {
        m.alt_pkey_index = a.alt_pkey_index;
        m.alt_port_num = a.alt_port_num;
        m.alt_timeout = a.alt_timeout;
    }
    // SAFETY: With `AV` in the mask the core resolved the primary path's
    // AH attribute (the caller's contract).
    m.ah_attr = unsafe { masked_ah(&a.ah_attr, has(AttrMask::AV)) };
    // SAFETY: With `ALT_PATH` in the mask the core resolved the alternate
    // path's AH attribute (the caller's contract).
    m.alt_ah_attr = unsafe { masked_ah(&a.alt_ah_attr, has(AttrMask::ALT_PATH)) };
    m
}

/// What query_qp returns: the QP's attributes and the caps it got.
impl From<(&QpAttrs, &Caps)> for sys::ib_qp_attr {
    fn from((a, cap): (&QpAttrs, &Caps)) -> Self {
        let mut out = sys::ib_qp_attr {
            qp_state: a.state.as_raw(),
            cur_qp_state: a.state.as_raw(),
            path_mtu: a.path_mtu,
            path_mig_state: a.path_mig_state,
            qkey: a.qkey,
            rq_psn: a.rq_psn,
            sq_psn: a.sq_psn,
            dest_qp_num: a.dest_qp_num,
            // The C attribute is an int holding a bit set.
            qp_access_flags: a.access_flags as c_int,
            ah_attr: (&ah_attr_from_av(a.pri_av.as_ref())).into(),
            alt_ah_attr: (&ah_attr_from_av(a.alt_av.as_ref())).into(),
            pkey_index: a.pkey_index,
            alt_pkey_index: a.alt_pkey_index,
            en_sqd_async_notify: a.en_sqd_async_notify,
            sq_draining: u8::from(a.sq_draining),
            max_rd_atomic: a.max_rd_atomic,
            max_dest_rd_atomic: a.max_dest_rd_atomic,
            min_rnr_timer: a.min_rnr_timer,
            port_num: a.port_num,
            timeout: a.timeout,
            retry_cnt: a.retry_cnt,
            rnr_retry: a.rnr_retry,
            alt_port_num: a.alt_port_num,
            alt_timeout: a.alt_timeout,
            ..Default::default()
        };
        write_caps(cap, &mut out.cap);
        out
    }
}

impl From<&sys::ib_srq_attr> for SrqAttr {
    fn from(a: &sys::ib_srq_attr) -> Self {
        SrqAttr {
            max_wr: a.max_wr,
            max_sge: a.max_sge,
            srq_limit: a.srq_limit,
        }
    }
}

impl From<&SrqAttr> for sys::ib_srq_attr {
    fn from(a: &SrqAttr) -> Self {
        sys::ib_srq_attr {
            max_wr: a.max_wr,
            max_sge: a.max_sge,
            srq_limit: a.srq_limit,
        }
    }
}
