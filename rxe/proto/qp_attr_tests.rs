// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Tests of the QP attribute rules.

use super::super::av::tests::{ah, sgid_v4};
use super::*;

fn rc_rtr() -> (AttrMask, ModifyAttr) {
    let mut a = ModifyAttr::zeroed();
    a.qp_state = qp::State::Rtr.as_raw();
    a.ah_attr = Some(ah(sgid_v4(), sgid_v4().gid));
    a.path_mtu = 3;
    a.dest_qp_num = 0x11;
    a.rq_psn = 0x1_00_00_05;
    a.max_dest_rd_atomic = 3;
    a.min_rnr_timer = 12;
    let m = AttrMask::STATE
        | AttrMask::AV
        | AttrMask::PATH_MTU
        | AttrMask::DEST_QPN
        | AttrMask::RQ_PSN
        | AttrMask::MAX_DEST_RD_ATOMIC
        | AttrMask::MIN_RNR_TIMER;
    (m, a)
}

fn init_rc() -> (AttrMask, ModifyAttr) {
    let mut a = ModifyAttr::zeroed();
    a.qp_state = qp::State::Init.as_raw();
    a.port_num = 1;
    a.qp_access_flags = access::REMOTE_WRITE | access::LOCAL_WRITE;
    (
        AttrMask::STATE | AttrMask::PKEY_INDEX | AttrMask::PORT | AttrMask::ACCESS_FLAGS,
        a,
    )
}

#[test]
fn caps_limits() {
    let ok = Caps {
        max_send_wr: 1 << 20,
        max_recv_wr: 1 << 20,
        max_send_sge: 32,
        max_recv_sge: 32,
        max_inline_data: 512,
    };
    assert_eq!(check_caps(&ok, false), Ok(()));
    for bad in [
        Caps {
            max_send_wr: (1 << 20) + 1,
            ..ok
        },
        Caps {
            max_recv_wr: (1 << 20) + 1,
            ..ok
        },
        Caps {
            max_send_sge: 33,
            ..ok
        },
        Caps {
            max_recv_sge: 33,
            ..ok
        },
        Caps {
            max_inline_data: 513,
            ..ok
        },
    ] {
        assert_eq!(check_caps(&bad, false), Err(AttrError::Invalid), "{bad:?}");
    }
    // With an SRQ the receive caps are not looked at.
    assert_eq!(
        check_caps(
            &Caps {
                max_recv_wr: u32::MAX,
                max_recv_sge: 99,
                ..ok
            },
            true
        ),
        Ok(())
    );
    assert_eq!(
        check_caps(
            &Caps {
                max_send_sge: 33,
                ..ok
            },
            true
        ),
        Err(AttrError::Invalid)
    );
}

#[test]
fn init_checks_in_c_order() {
    let base = InitAttr {
        qp_type: qp::Type::Rc.as_raw(),
        create_flags: 0,
        has_send_cq: true,
        has_recv_cq: true,
        has_srq: false,
        cap: Caps {
            max_send_wr: 4,
            max_recv_wr: 4,
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: 0,
        },
        port_num: 0,
    };
    assert_eq!(check_init(&base, false), Ok(qp::Type::Rc));
    assert_eq!(
        check_init(
            &InitAttr {
                create_flags: 2,
                ..base
            },
            false
        ),
        Err(AttrError::NotSupported)
    );
    // create_flags are looked at before the type.
    assert_eq!(
        check_init(
            &InitAttr {
                create_flags: 2,
                qp_type: 99,
                ..base
            },
            false
        ),
        Err(AttrError::NotSupported)
    );
    for t in [
        qp::Type::Smi,
        qp::Type::RawPacket,
        qp::Type::XrcIni,
        qp::Type::XrcTgt,
    ] {
        assert_eq!(
            check_init(
                &InitAttr {
                    qp_type: t.as_raw(),
                    ..base
                },
                false
            ),
            Err(AttrError::NotSupported)
        );
    }
    assert_eq!(
        check_init(&InitAttr { qp_type: 7, ..base }, false),
        Err(AttrError::NotSupported)
    );
    assert_eq!(
        check_init(
            &InitAttr {
                has_recv_cq: false,
                ..base
            },
            false
        ),
        Err(AttrError::Invalid)
    );
    // Type before CQs: an unsupported type without CQs is EOPNOTSUPP.
    assert_eq!(
        check_init(
            &InitAttr {
                has_send_cq: false,
                qp_type: 0,
                ..base
            },
            false
        ),
        Err(AttrError::NotSupported)
    );
    let gsi = InitAttr {
        qp_type: qp::Type::Gsi.as_raw(),
        port_num: 1,
        ..base
    };
    assert_eq!(check_init(&gsi, false), Ok(qp::Type::Gsi));
    assert_eq!(check_init(&gsi, true), Err(AttrError::Invalid));
    assert_eq!(
        check_init(&InitAttr { port_num: 2, ..gsi }, false),
        Err(AttrError::Invalid)
    );
    // Only GSI looks at the port.
    assert_eq!(
        check_init(
            &InitAttr {
                port_num: 7,
                ..base
            },
            true
        ),
        Ok(qp::Type::Rc)
    );
    assert_eq!(
        check_init(
            &InitAttr {
                cap: Caps {
                    max_inline_data: 600,
                    ..base.cap
                },
                ..base
            },
            false
        ),
        Err(AttrError::Invalid)
    );
}

#[test]
fn modify_checks() {
    let (m, a) = init_rc();
    assert_eq!(check_modify(m, &a, qp::Type::Rc, false), Ok(()));
    assert_eq!(
        check_modify(m | AttrMask::RATE_LIMIT, &a, qp::Type::Rc, false),
        Err(AttrError::NotSupported)
    );
    assert_eq!(
        check_modify(m, &ModifyAttr { port_num: 2, ..a }, qp::Type::Rc, false),
        Err(AttrError::Invalid)
    );
    // Access flags only on connected QPs, and only rxe's bits.
    assert_eq!(
        check_modify(m, &a, qp::Type::Ud, false),
        Err(AttrError::Invalid)
    );
    let zb = ModifyAttr {
        qp_access_flags: access::ZERO_BASED,
        ..a
    };
    assert_eq!(
        check_modify(m, &zb, qp::Type::Rc, false),
        Err(AttrError::Invalid)
    );
    let relaxed = ModifyAttr {
        qp_access_flags: access::RELAXED_ORDERING,
        ..a
    };
    assert_eq!(check_modify(m, &relaxed, qp::Type::Uc, false), Ok(()));

    let mtu = AttrMask::PATH_MTU;
    assert_eq!(
        check_modify(mtu, &ModifyAttr { path_mtu: 5, ..a }, qp::Type::Rc, false),
        Ok(())
    );
    assert_eq!(
        check_modify(mtu, &ModifyAttr { path_mtu: 6, ..a }, qp::Type::Rc, false),
        Err(AttrError::Invalid)
    );
    assert_eq!(
        check_modify(mtu, &ModifyAttr { path_mtu: 0, ..a }, qp::Type::Rc, false),
        Ok(())
    );
    let rd = AttrMask::MAX_QP_RD_ATOMIC;
    assert_eq!(
        check_modify(
            rd,
            &ModifyAttr {
                max_rd_atomic: 128,
                ..a
            },
            qp::Type::Rc,
            false
        ),
        Ok(())
    );
    assert_eq!(
        check_modify(
            rd,
            &ModifyAttr {
                max_rd_atomic: 129,
                ..a
            },
            qp::Type::Rc,
            false
        ),
        Err(AttrError::Invalid)
    );
    let dest = AttrMask::MAX_DEST_RD_ATOMIC;
    assert_eq!(
        check_modify(
            dest,
            &ModifyAttr {
                max_dest_rd_atomic: 255,
                ..a
            },
            qp::Type::Rc,
            false
        ),
        Ok(())
    );
    let to = AttrMask::TIMEOUT;
    assert_eq!(
        check_modify(to, &ModifyAttr { timeout: 31, ..a }, qp::Type::Rc, false),
        Ok(())
    );
    assert_eq!(
        check_modify(to, &ModifyAttr { timeout: 32, ..a }, qp::Type::Rc, false),
        Err(AttrError::Invalid)
    );
    let cap = AttrMask::CAP;
    let big = ModifyAttr {
        cap: Caps {
            max_recv_sge: 40,
            ..a.cap
        },
        ..a
    };
    assert_eq!(
        check_modify(cap, &big, qp::Type::Rc, false),
        Err(AttrError::Invalid)
    );
    assert_eq!(check_modify(cap, &big, qp::Type::Rc, true), Ok(()));

    let alt = AttrMask::ALT_PATH;
    let mut with_alt = ModifyAttr {
        alt_ah_attr: Some(ah(sgid_v4(), [0; 16])),
        alt_port_num: 1,
        ..a
    };
    assert_eq!(check_modify(alt, &with_alt, qp::Type::Rc, false), Ok(()));
    with_alt.alt_timeout = 32;
    assert_eq!(
        check_modify(alt, &with_alt, qp::Type::Rc, false),
        Err(AttrError::Invalid)
    );
    assert_eq!(
        check_modify(alt, &a, qp::Type::Rc, false),
        Err(AttrError::Invalid)
    );
    assert_eq!(
        check_modify(AttrMask::AV, &a, qp::Type::Rc, false),
        Err(AttrError::Invalid)
    );
}

#[test]
fn state_machine_and_storage() {
    let mut q = QpAttrs::new(qp::Type::Rc, 0);
    assert_eq!(q.path_mtu, 1);
    assert_eq!(q.mtu_bytes(), Some(256));
    let (m, a) = init_rc();
    assert_eq!(q.modify(m, &a, qp::Type::Rc), Ok(Some(qp::State::Init)));
    assert_eq!(q.port_num, 1);
    assert_eq!(q.access_flags, access::REMOTE_WRITE | access::LOCAL_WRITE);

    // INIT -> RTS is not a transition.
    let mut rts = ModifyAttr::zeroed();
    rts.qp_state = qp::State::Rts.as_raw();
    assert_eq!(
        q.modify(AttrMask::STATE, &rts, qp::Type::Rc),
        Err(AttrError::Invalid)
    );
    // RTR without its required attributes.
    let (m, a) = rc_rtr();
    assert_eq!(
        q.modify(m & !AttrMask::DEST_QPN, &a, qp::Type::Rc),
        Err(AttrError::Invalid)
    );
    assert_eq!(q.state, qp::State::Init);
    assert_eq!(q.modify(m, &a, qp::Type::Rc), Ok(Some(qp::State::Rtr)));
    assert_eq!(q.rq_psn, 5);
    assert_eq!(q.max_dest_rd_atomic, 4);
    assert_eq!(q.dest_qp_num, 0x11);
    assert_eq!(q.mtu_bytes(), Some(1024));
    assert!(q.pri_av.is_some());

    let mut r = ModifyAttr::zeroed();
    r.qp_state = qp::State::Rts.as_raw();
    r.sq_psn = 0xff_abcdef;
    r.timeout = 14;
    r.retry_cnt = 7;
    r.rnr_retry = 7;
    r.max_rd_atomic = 3;
    let rm = AttrMask::STATE
        | AttrMask::SQ_PSN
        | AttrMask::TIMEOUT
        | AttrMask::RETRY_CNT
        | AttrMask::RNR_RETRY
        | AttrMask::MAX_QP_RD_ATOMIC;
    assert_eq!(q.modify(rm, &r, qp::Type::Rc), Ok(Some(qp::State::Rts)));
    assert_eq!(q.sq_psn, 0xabcdef);
    assert_eq!(q.max_rd_atomic, 4);
    assert_eq!(q.timeout_ns(), Some(4096 << 14));

    let mut sqd = ModifyAttr::zeroed();
    sqd.qp_state = qp::State::Sqd.as_raw();
    assert_eq!(
        q.modify(AttrMask::STATE, &sqd, qp::Type::Rc),
        Ok(Some(qp::State::Sqd))
    );
    assert!(q.sq_draining);
    // Draining: back to RTS refused, to ERR allowed.
    assert_eq!(
        q.modify(AttrMask::STATE, &rts, qp::Type::Rc),
        Err(AttrError::Invalid)
    );
    q.sq_draining = false;
    assert_eq!(
        q.modify(AttrMask::STATE, &rts, qp::Type::Rc),
        Ok(Some(qp::State::Rts))
    );

    // Attributes without STATE are stored with no transition rule.
    let qk = ModifyAttr {
        qkey: 0x1234,
        ..ModifyAttr::zeroed()
    };
    assert_eq!(q.modify(AttrMask::QKEY, &qk, qp::Type::Rc), Ok(None));
    assert_eq!(q.qkey, 0x1234);

    let mut err = ModifyAttr::zeroed();
    err.qp_state = qp::State::Err.as_raw();
    assert_eq!(
        q.modify(AttrMask::STATE, &err, qp::Type::Rc),
        Ok(Some(qp::State::Err))
    );
    let mut reset = ModifyAttr::zeroed();
    reset.qp_state = qp::State::Reset.as_raw();
    assert_eq!(
        q.modify(AttrMask::STATE, &reset, qp::Type::Rc),
        Ok(Some(qp::State::Reset))
    );
    // Reset keeps the stored attributes.
    assert_eq!(q.qkey, 0x1234);
    // Out-of-range state values.
    let bogus = ModifyAttr {
        qp_state: 9,
        ..ModifyAttr::zeroed()
    };
    assert_eq!(
        q.modify(AttrMask::STATE, &bogus, qp::Type::Rc),
        Err(AttrError::Invalid)
    );
}

#[test]
fn cur_state_assertion_follows_c() {
    // C trusts the asserted current state for the transition check.
    let mut q = QpAttrs::new(qp::Type::Ud, 0);
    let mut a = ModifyAttr::zeroed();
    a.cur_qp_state = qp::State::Rts.as_raw();
    a.qp_state = qp::State::Rts.as_raw();
    let m = AttrMask::STATE | AttrMask::CUR_STATE;
    assert_eq!(q.modify(m, &a, qp::Type::Ud), Ok(Some(qp::State::Rts)));
    // But not from states a QP cannot be in unknowingly.
    let mut q = QpAttrs::new(qp::Type::Ud, 0);
    a.cur_qp_state = qp::State::Init.as_raw();
    assert_eq!(q.modify(m, &a, qp::Type::Ud), Err(AttrError::Invalid));
}

#[test]
fn rd_atomic_rounding() {
    assert_eq!(rd_atomic_depth(0), 0);
    assert_eq!(rd_atomic_depth(1), 1);
    assert_eq!(rd_atomic_depth(3), 4);
    assert_eq!(rd_atomic_depth(128), 128);
    // 256 does not fit the u8 attribute.
    assert_eq!(rd_atomic_depth(129), 0);
    assert_eq!(rd_atomic_depth(255), 0);
}

#[test]
fn gsi_knows_its_port() {
    assert_eq!(QpAttrs::new(qp::Type::Gsi, 1).port_num, 1);
    assert_eq!(QpAttrs::new(qp::Type::Ud, 1).port_num, 0);
}
