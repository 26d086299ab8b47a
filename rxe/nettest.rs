// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Test scaffolding, built only with `RXE_RS_NETTEST=1` (`--cfg rxe_nettest`):
//! lets a test drive the transmit path before any QP can.
//!
//! A UD SEND_ONLY to the multicast QPN whose payload is [`PING`] followed by
//! a 16-byte GID is answered with the same packet, payload [`PONG`], sent to
//! that GID's address through `net::alloc_packet_with`/`net::TxBatch` (to the pinger,
//! or back to ourselves for the loopback path). qemu-test/tests/hardening/net_raw.py
//! counts the answers in the receiver's `rcvd_pkts`, which only a valid
//! packet (headers and ICRC) reaches, on rdma_rxe as on rxe_rs.

use crate::rxe::kapi::route;
use crate::rxe::net::{alloc_packet_with, Av, NdevCache, TxBatch, TxFlow};
use crate::rxe::proto::headers::{Bth, Deth, DEFAULT_PKEY, MULTICAST_QPN};
use crate::rxe::proto::ip::IpAddr;
use crate::rxe::proto::opcode::Opcode;
use crate::rxe::recv::RxPacket;

pub(crate) const PING: &[u8; 12] = b"rxe_rs ping\0";
pub(crate) const PONG: &[u8; 12] = b"rxe_rs pong\0";

/// Answers a ping; true when `pkt` was one (and is consumed).
pub(crate) fn echo(pkt: &RxPacket) -> bool {
    if pkt.opcode() != Opcode::UdSendOnly {
        return false;
    }
    let payload = pkt.payload();
    let Some((magic, rest)) = payload.split_first_chunk::<12>() else {
        return false;
    };
    if magic != PING {
        return false;
    }
    if let Some(gid) = rest.first_chunk::<16>() {
        let _ = pong(pkt, IpAddr::from_gid(*gid), payload.len());
    }
    true
}

fn pong(ping: &RxPacket, to: IpAddr, len: usize) -> Option<()> {
    let dev = ping.device();
    let sgid_index = route::find_gid(dev, ping.dst_gid(), None)?;
    let av = Av {
        src: ping.dst(),
        dst: to,
        sgid_index: u8::try_from(sgid_index).ok()?,
        dmac: [0; 6],
        traffic_class: 0,
        hop_limit: 64,
        flow_label: 0,
        sport: ping.udp_sport(),
    };
    let mut ndevs = NdevCache::new();
    let mut tx = alloc_packet_with(dev, &mut ndevs, &av, Opcode::UdSendOnly, len, None).ok()?;
    tx.write_bth(Bth::new(
        Opcode::UdSendOnly,
        DEFAULT_PKEY,
        MULTICAST_QPN,
        ping.psn(),
    ))
    .ok()?;
    tx.write_ext(&Deth {
        qkey: ping.deth()?.qkey,
        src_qpn: 1,
    })
    .ok()?;
    let out = tx.payload_mut();
    if out.len() != ping.payload().len() {
        return None;
    }
    for (d, s) in out.iter_mut().zip(ping.payload()) {
        *d = *s;
    }
    out.get_mut(..PONG.len())?.copy_from_slice(PONG);
    let flow = TxFlow::unowned(()).ok()?;
    let mut batch = TxBatch::new(&flow);
    let sent = batch.send(tx).ok();
    batch.flush();
    sent
}
