// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Host tests of [`super`] (`accept.rs`).

use super::*;

const A: IpAddr = IpAddr::V4([10, 0, 0, 1]);
const B: IpAddr = IpAddr::V4([10, 0, 0, 2]);

fn pkt(opcode: Opcode) -> PacketFacts {
    PacketFacts {
        opcode,
        bth_qpn: 17,
        pkey: 0xffff,
        qkey: None,
        src: B,
        dst: A,
        port: 1,
    }
}

fn qp(qp_type: qp::Type, state: qp::State) -> QpFacts {
    QpFacts {
        qp_type,
        state,
        qkey: 0x1234,
        port: 1,
        path: Some((A, B)),
    }
}

#[test]
fn pkeys() {
    assert!(pkey_match(0xffff, 0xffff));
    assert!(pkey_match(0x7fff, 0xffff));
    assert!(!pkey_match(0x7fff, 0x7fff));
    assert!(!pkey_match(0x8000, 0xffff));
    assert!(!pkey_match(0x0000, 0xffff));
    assert!(!pkey_match(0xfffe, 0xffff));
    assert!(pkey_match(0x8001, 0x0001));
}

#[test]
fn types() {
    let rc = pkt(Opcode::RcSendOnly);
    let uc = pkt(Opcode::UcSendOnly);
    let mut ud = pkt(Opcode::UdSendOnly);
    ud.qkey = Some(0x1234);
    assert_eq!(
        check(&rc, &qp(qp::Type::Rc, qp::State::Rts), 0xffff),
        Ok(())
    );
    assert_eq!(
        check(&uc, &qp(qp::Type::Rc, qp::State::Rts), 0xffff),
        Err(Reject::Type)
    );
    assert_eq!(
        check(&uc, &qp(qp::Type::Uc, qp::State::Rts), 0xffff),
        Ok(())
    );
    assert_eq!(
        check(&ud, &qp(qp::Type::Ud, qp::State::Rts), 0xffff),
        Ok(())
    );
    assert_eq!(
        check(&rc, &qp(qp::Type::Ud, qp::State::Rts), 0xffff),
        Err(Reject::Type)
    );
    assert_eq!(
        check(&ud, &qp(qp::Type::Rc, qp::State::Rts), 0xffff),
        Err(Reject::Type)
    );
    let rd = pkt(Opcode::RdSendOnly);
    for t in qp::Type::ALL {
        assert_eq!(
            check(&rd, &qp(t, qp::State::Rts), 0xffff),
            Err(Reject::Type)
        );
    }
    assert_eq!(
        check(&rc, &qp(qp::Type::Smi, qp::State::Rts), 0xffff),
        Err(Reject::Type)
    );
}

#[test]
fn states() {
    let req = pkt(Opcode::RcSendOnly);
    let ack = pkt(Opcode::RcAck);
    for s in qp::State::ALL {
        let q = qp(qp::Type::Rc, s);
        let req_ok = s.as_raw() >= qp::State::Rtr.as_raw();
        let ack_ok = s.as_raw() >= qp::State::Rts.as_raw();
        assert_eq!(check(&req, &q, 0xffff).is_ok(), req_ok, "{s:?}");
        assert_eq!(check(&ack, &q, 0xffff).is_ok(), ack_ok, "{s:?}");
    }
    assert_eq!(
        check(&ack, &qp(qp::Type::Rc, qp::State::Rtr), 0xffff),
        Err(Reject::State)
    );
}

#[test]
fn addresses() {
    let p = pkt(Opcode::RcSendOnly);
    let mut q = qp(qp::Type::Rc, qp::State::Rts);
    assert_eq!(check(&p, &q, 0xffff), Ok(()));
    q.path = Some((B, A));
    assert_eq!(check(&p, &q, 0xffff), Err(Reject::Addr));
    q.path = None;
    assert_eq!(check(&p, &q, 0xffff), Err(Reject::Addr));
    q.path = Some((A, B));
    q.port = 2;
    assert_eq!(check(&p, &q, 0xffff), Err(Reject::Addr));
    // Families must agree.
    q.port = 1;
    q.path = Some((IpAddr::V6(A.to_gid()), IpAddr::V6(B.to_gid())));
    assert_eq!(check(&p, &q, 0xffff), Err(Reject::Addr));
    // UD takes any address.
    let mut ud = pkt(Opcode::UdSendOnly);
    ud.qkey = Some(0x1234);
    let mut u = qp(qp::Type::Ud, qp::State::Rtr);
    u.path = None;
    assert_eq!(check(&ud, &u, 0xffff), Ok(()));
}

#[test]
fn keys() {
    let mut p = pkt(Opcode::RcSendOnly);
    p.pkey = 0x7fff;
    assert_eq!(check(&p, &qp(qp::Type::Rc, qp::State::Rts), 0xffff), Ok(()));
    p.pkey = 0x1234;
    assert_eq!(
        check(&p, &qp(qp::Type::Rc, qp::State::Rts), 0xffff),
        Err(Reject::Pkey)
    );

    let mut ud = pkt(Opcode::UdSendOnly);
    let u = qp(qp::Type::Ud, qp::State::Rts);
    assert_eq!(check(&ud, &u, 0xffff), Err(Reject::Qkey));
    ud.qkey = Some(0x1235);
    assert_eq!(check(&ud, &u, 0xffff), Err(Reject::Qkey));
    ud.qkey = Some(0x1234);
    assert_eq!(check(&ud, &u, 0xffff), Ok(()));
    // P_Key is checked before Q_Key.
    ud.pkey = 0;
    ud.qkey = None;
    assert_eq!(check(&ud, &u, 0xffff), Err(Reject::Pkey));

    // QPN 1 needs the GSI Q_Key, whatever the QP's own.
    let mut gsi = pkt(Opcode::UdSendOnly);
    gsi.bth_qpn = 1;
    gsi.qkey = Some(0x1234);
    let g = qp(qp::Type::Gsi, qp::State::Rts);
    assert_eq!(check(&gsi, &g, 0xffff), Err(Reject::Qkey));
    gsi.qkey = Some(GSI_QKEY);
    assert_eq!(check(&gsi, &g, 0xffff), Ok(()));
}

#[test]
fn multicast_skips_addresses() {
    let mut p = pkt(Opcode::UdSendOnly);
    p.qkey = Some(0x1234);
    p.dst = IpAddr::V4([224, 0, 0, 9]);
    let mut u = qp(qp::Type::Ud, qp::State::Rtr);
    u.path = None;
    assert_eq!(check_mcast(&p, &u, 0xffff), Ok(()));
    u.state = qp::State::Init;
    assert_eq!(check_mcast(&p, &u, 0xffff), Err(Reject::State));
    let rc = qp(qp::Type::Rc, qp::State::Rts);
    assert_eq!(check_mcast(&p, &rc, 0xffff), Err(Reject::Type));
}
