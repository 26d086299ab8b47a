// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Host tests of [`super`] (`cq_srq.rs`).

use super::*;
use crate::proto::uapi::{srq_geometry, RecvWqe, DEFAULT_CACHE_LINE};
use std::vec;

#[test]
fn cqe_limits() {
    assert_eq!(check_cqe(1, None), Ok(1));
    assert_eq!(check_cqe(32767, None), Ok(32767));
    assert_eq!(check_cqe(32768, None), Err(Invalid));
    assert_eq!(check_cqe(0, None), Err(Invalid));
    assert_eq!(check_cqe(-1, None), Err(Invalid));
    assert_eq!(check_cqe(i32::MIN, None), Err(Invalid));
    // Resize below the waiting completions fails; to exactly them works.
    assert_eq!(check_cqe(16, Some(17)), Err(Invalid));
    assert_eq!(check_cqe(17, Some(17)), Ok(17));
    assert_eq!(check_cqe(100, Some(0)), Ok(100));
}

#[test]
fn notify_arming() {
    use notify_flags::*;
    let mut n = Notify::default();
    assert!(!n.on_completion(true), "not armed");
    assert_eq!(n.arm(SOLICITED, true), 0);
    assert!(
        !n.on_completion(false),
        "solicited-only ignores unsolicited"
    );
    assert!(n.on_completion(true));
    assert!(!n.on_completion(true), "one event per arming");
    assert_eq!(n.arm(NEXT_COMP, false), 0);
    assert!(n.on_completion(false));
    assert_eq!(n.arm(SOLICITED, true), 0);
    assert_eq!(n.arm(NEXT_COMP, true), 0);
    assert!(n.on_completion(false), "the wider arming wins");
    assert_eq!(n.arm(NEXT_COMP | REPORT_MISSED_EVENTS, false), 1);
    assert_eq!(n.arm(NEXT_COMP | REPORT_MISSED_EVENTS, true), 0);
    assert_eq!(n.arm(REPORT_MISSED_EVENTS, false), 1);
    assert!(n.on_completion(false));
    // Bits outside the mask do not arm.
    let mut n = Notify::default();
    assert_eq!(n.arm(0x18, true), 0);
    assert!(!n.on_completion(true));
}

#[test]
fn srq_modify_rules() {
    use srq_mask::*;
    let now = SrqNow {
        limit: 0,
        capacity: 127,
    };
    assert_eq!(
        check_srq_modify(now, MAX_WR, 200, 0),
        Ok(SrqChange {
            max_wr: Some(200),
            limit: None
        })
    );
    assert_eq!(check_srq_modify(now, MAX_WR, 0, 0), Err(Invalid));
    assert_eq!(
        check_srq_modify(now, MAX_WR, limits::MAX_SRQ_WR + 1, 0),
        Err(Invalid)
    );
    assert_eq!(
        check_srq_modify(now, LIMIT, 0, 127),
        Ok(SrqChange {
            max_wr: None,
            limit: Some(127)
        })
    );
    assert_eq!(check_srq_modify(now, LIMIT, 0, 128), Err(Invalid));
    assert_eq!(
        check_srq_modify(now, LIMIT, 0, limits::MAX_SRQ_WR + 1),
        Err(Invalid)
    );
    // The new limit is checked against the ring before the resize.
    assert_eq!(
        check_srq_modify(now, MAX_WR | LIMIT, 1000, 500),
        Err(Invalid)
    );
    // A new max_wr below the armed limit is refused, above it is fine.
    let armed = SrqNow {
        limit: 50,
        capacity: 127,
    };
    assert_eq!(check_srq_modify(armed, MAX_WR, 49, 0), Err(Invalid));
    assert!(check_srq_modify(armed, MAX_WR, 50, 0).is_ok());
    // ... even when the same call lowers the limit.
    assert_eq!(check_srq_modify(armed, MAX_WR | LIMIT, 10, 5), Err(Invalid));
    // Unknown mask bits are ignored, as in C.
    assert_eq!(
        check_srq_modify(now, 1 << 7, 0, 0),
        Ok(SrqChange {
            max_wr: None,
            limit: None
        })
    );
}

#[test]
fn srq_limit_event() {
    let mut limit = 10;
    assert!(!srq_limit_reached(&mut limit, 10, true));
    assert!(
        !srq_limit_reached(&mut limit, 9, false),
        "no handler: stays armed"
    );
    assert_eq!(limit, 10);
    assert!(srq_limit_reached(&mut limit, 9, true));
    assert_eq!(limit, 0);
    assert!(!srq_limit_reached(&mut limit, 0, true), "fires once");
}

fn sges(n: usize) -> impl FnMut(usize) -> Sge {
    move |i| {
        assert!(i < n, "asked for SGE {i} of {n}");
        Sge {
            addr: 0x1000 * (i as u64 + 1),
            length: 100 + i as u32,
            lkey: 0x200 + i as u32,
        }
    }
}

#[test]
fn kernel_recv_wqe_round_trip() {
    let mut img = [0xaau8; RECV_WQE_MAX];
    let len = build_recv_wqe(&mut img, 0xfeed, 3, 4, sges(3)).unwrap();
    assert_eq!(len, 40 + 48);
    let g = srq_geometry(8, 4, DEFAULT_CACHE_LINE).unwrap();
    let mut slot = vec![0u8; g.queue.elem_size()];
    slot[..len].copy_from_slice(&img[..len]);
    let w = RecvWqe::from_bytes(&slot, 4).unwrap();
    assert_eq!(w.wr_id, 0xfeed);
    assert_eq!(w.num_sge, 3);
    assert_eq!(w.length, 100 + 101 + 102);
    assert_eq!(
        w.sge(2),
        Some(Sge {
            addr: 0x3000,
            length: 102,
            lkey: 0x202
        })
    );
    // resid starts equal to length; cur_sge and sge_offset at zero.
    let d = recv_wqe::DMA;
    assert_eq!(
        &img[d + dma::RESID..d + dma::RESID + 4],
        &303u32.to_ne_bytes()
    );
    assert_eq!(&img[d + dma::CUR_SGE..d + dma::CUR_SGE + 4], &[0; 4]);
    assert_eq!(&img[d + dma::SGE_OFFSET..d + dma::SGE_OFFSET + 4], &[0; 4]);
    // No SGEs at all is a valid zero-length receive.
    assert_eq!(build_recv_wqe(&mut img, 1, 0, 1, sges(0)), Ok(40));
}

#[test]
fn kernel_recv_wqe_errors() {
    let mut img = [0u8; RECV_WQE_MAX];
    assert_eq!(
        build_recv_wqe(&mut img, 0, 5, 4, sges(0)),
        Err(PostRecvError::TooManySge)
    );
    assert_eq!(
        build_recv_wqe(&mut img, 0, -1, 4, sges(0)),
        Err(PostRecvError::TooManySge)
    );
    assert_eq!(
        build_recv_wqe(&mut img, 0, 33, 40, sges(0)),
        Err(PostRecvError::TooManySge)
    );
    let huge = |_| Sge {
        addr: 0,
        length: 1 << 30,
        lkey: 0,
    };
    assert_eq!(
        build_recv_wqe(&mut img, 0, 2, 4, huge),
        Ok(72),
        "exactly 2^31 is allowed"
    );
    assert_eq!(
        build_recv_wqe(&mut img, 0, 3, 4, huge),
        Err(PostRecvError::TooLong)
    );
    let max = |_| Sge {
        addr: 0,
        length: u32::MAX,
        lkey: 0,
    };
    assert_eq!(
        build_recv_wqe(&mut img, 0, 32, 32, max),
        Err(PostRecvError::TooLong)
    );
}

#[test]
fn recv_net() {
    assert_eq!(RecvNet::default().network_hdr_type(), 2);
    assert_eq!(
        RecvNet {
            ipv6: true,
            vlan_id: None
        }
        .network_hdr_type(),
        3
    );
}
