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
#[path = "accept_tests.rs"]
mod tests;
