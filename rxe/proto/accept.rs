// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Whether a QP takes a received packet: the transport class, QP state,
//! address and key checks rdma_rxe makes before a packet reaches a QP.

use super::headers::GSI_QKEY;
use super::ip::IpAddr;
use super::opcode::{Mask, Opcode, Transport};
use super::qp;

/// Why a QP refuses a packet. Only the key failures are counted (in the
/// port's bad P_Key and Q_Key violation counters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reject {
    /// The opcode belongs to another transport service than the QP's.
    Type,
    /// The QP cannot take this direction of traffic in its state.
    State,
    /// Connected QP: wrong port, or not from/to the QP's path addresses.
    Addr,
    Pkey,
    Qkey,
}

/// What the checks need to know about the packet.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PacketFacts {
    pub(crate) opcode: Opcode,
    /// QPN from the BTH (1 addresses the GSI QP, whatever its pool index).
    pub(crate) bth_qpn: u32,
    pub(crate) pkey: u16,
    /// The DETH Q_Key, for opcodes that carry a DETH.
    pub(crate) qkey: Option<u32>,
    pub(crate) src: IpAddr,
    pub(crate) dst: IpAddr,
    /// The port it arrived on; rxe has only port 1.
    pub(crate) port: u32,
}

/// What the checks need to know about the QP.
#[derive(Clone, Copy, Debug)]
pub(crate) struct QpFacts {
    pub(crate) qp_type: qp::Type,
    pub(crate) state: qp::State,
    /// The Q_Key set on a UD QP (GSI always uses the well-known one).
    pub(crate) qkey: u32,
    pub(crate) port: u32,
    /// Connected QPs: (our address, the peer's address) of the primary path.
    pub(crate) path: Option<(IpAddr, IpAddr)>,
}

/// `pkey_match`: equal low 15 bits, not the invalid key 0, and at least one
/// side a full member.
pub(crate) fn pkey_match(a: u16, b: u16) -> bool {
    let (la, lb) = (a & 0x7fff, b & 0x7fff);
    if la == 0 || lb == 0 {
        return false;
    }
    la == lb && (a & 0x8000 != 0 || b & 0x8000 != 0)
}

fn state_ok(pkt: &PacketFacts, qp: &QpFacts) -> bool {
    // C compares enum values: requests need RTR or later, responses RTS or later.
    let need = if pkt.opcode.has(Mask::REQ) {
        qp::State::Rtr
    } else {
        qp::State::Rts
    };
    qp.state.as_raw() >= need.as_raw()
}

fn type_ok(pkt: &PacketFacts, qp: &QpFacts) -> bool {
    matches!(
        (qp.qp_type, pkt.opcode.transport()),
        (qp::Type::Rc, Transport::Rc)
            | (qp::Type::Uc, Transport::Uc)
            | (qp::Type::Ud | qp::Type::Gsi, Transport::Ud)
    )
}

fn addr_ok(pkt: &PacketFacts, qp: &QpFacts) -> bool {
    if !matches!(qp.qp_type, qp::Type::Rc | qp::Type::Uc) {
        return true;
    }
    if pkt.port != qp.port {
        return false;
    }
    // Our address must be the packet's destination and the peer its source.
    qp.path
        .is_some_and(|(local, remote)| pkt.dst == local && pkt.src == remote)
}

fn keys_ok(pkt: &PacketFacts, qp: &QpFacts, default_pkey: u16) -> Result<(), Reject> {
    if !pkey_match(pkt.pkey, default_pkey) {
        return Err(Reject::Pkey);
    }
    if matches!(qp.qp_type, qp::Type::Ud | qp::Type::Gsi) {
        let want = if pkt.bth_qpn == 1 { GSI_QKEY } else { qp.qkey };
        if pkt.qkey != Some(want) {
            return Err(Reject::Qkey);
        }
    }
    Ok(())
}

/// The unicast checks, in rdma_rxe's order: type, state, address, keys.
/// `default_pkey` is the port's only P_Key.
pub(crate) fn check(pkt: &PacketFacts, qp: &QpFacts, default_pkey: u16) -> Result<(), Reject> {
    if !type_ok(pkt, qp) {
        return Err(Reject::Type);
    }
    if !state_ok(pkt, qp) {
        return Err(Reject::State);
    }
    if !addr_ok(pkt, qp) {
        return Err(Reject::Addr);
    }
    keys_ok(pkt, qp, default_pkey)
}

/// The checks for one member QP of a multicast group: no address check.
pub(crate) fn check_mcast(
    pkt: &PacketFacts,
    qp: &QpFacts,
    default_pkey: u16,
) -> Result<(), Reject> {
    if !type_ok(pkt, qp) {
        return Err(Reject::Type);
    }
    if !state_ok(pkt, qp) {
        return Err(Reject::State);
    }
    keys_ok(pkt, qp, default_pkey)
}

#[cfg(test)]
mod tests {
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
}
