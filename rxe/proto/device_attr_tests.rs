// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Host tests of [`super`] (`device_attr.rs`).

use super::*;

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
