// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Fuzz tests of the WQE parsers: random and WQE-shaped slots, the
//! properties every accepted WQE must have, and partial copies that must
//! parse like the whole slot.

use super::*;

/// xorshift64: deterministic, no dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Every property an accepted send WQE must have, checked against the bytes it came from.
fn check_send(w: &SendWqe, buf: &[u8], sq: &SqLimits) {
    if !sq.kernel {
        assert_ne!(w.opcode, WrOpcode::RegMr);
    }
    assert_eq!(w.mask, w.opcode.mask(sq.qp_type));
    assert!(!w.mask.is_empty());
    assert!(w.num_sge <= sq.max_sge.min(limits::MAX_SGE));
    assert!(w.length <= MAX_MSG_SZ);
    assert_eq!(u32_at(buf, send_wr::OPCODE), Some(w.opcode.as_raw()));
    match w.payload {
        Payload::None => assert!(w
            .mask
            .intersects(WrMask(WrMask::LOCAL_OP.0 | WrMask::FLUSH.0))),
        Payload::Sges { count } => {
            assert_eq!(count, to_usize(w.num_sge));
            assert!(send_wqe::DATA + count * sge::LEN <= buf.len());
            let mut sum = 0u64;
            for (i, s) in w.sges().enumerate() {
                assert_eq!(Some(s), Sge::read(buf, send_wqe::DATA + i * sge::LEN));
                sum += u64::from(s.length);
            }
            assert_eq!(w.sges().count(), count);
            assert_eq!(sum, u64::from(w.length));
            if w.mask.intersects(WrMask::ATOMIC) {
                assert!(w.length >= 8);
            }
        }
        Payload::Inline { len } => {
            assert!(w.mask.intersects(WrMask::INLINE) && w.send_flags.has(SendFlags::INLINE));
            assert_eq!(len, to_usize(w.length));
            assert!(w.length <= sq.max_inline && len <= SEND_DATA_AREA);
            assert_eq!(w.inline_data(), &buf[send_wqe::DATA..send_wqe::DATA + len]);
        }
        Payload::AtomicWrite(b) => {
            assert_eq!(w.length, 8);
            assert_eq!(&b[..], &buf[send_wqe::DATA..send_wqe::DATA + 8]);
        }
    }
    match w.wr {
        WrParams::Ud { ah_num, av, .. } => {
            assert!(sq.qp_type.is_datagram());
            assert_eq!(av.is_some(), ah_num == 0);
        }
        _ => assert!(!sq.qp_type.is_datagram()),
    }
}

fn check_recv(w: &RecvWqe, buf: &[u8], max_sge: u32) {
    assert!(w.num_sge <= max_sge.min(limits::MAX_SGE));
    let n = to_usize(w.num_sge);
    assert!(recv_wqe::DATA + n * sge::LEN <= buf.len());
    let sum: u64 = w.sges().map(|s| u64::from(s.length)).sum();
    assert_eq!(w.sges().count(), n);
    assert_eq!(sum, u64::from(w.length));
}

/// Random slots, half of them shaped like real WQEs so that the
/// accepting paths are reached too: never a panic, and every accepted WQE
/// satisfies [`check_send`]/[`check_recv`].
#[test]
fn fuzz_wqe_parsers() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let types = [
        qp::Type::Rc,
        qp::Type::Uc,
        qp::Type::Ud,
        qp::Type::Gsi,
        qp::Type::Smi,
        qp::Type::XrcIni,
    ];
    let mut accepted = [0usize; 2];
    let mut buf = vec![0u8; 1100];
    for iter in 0..100_000u32 {
        let slot = match rng.below(4) {
            0 => to_usize(rng.below(1100) as u32),
            1 => 256,
            2 => 512,
            _ => 1024,
        };
        let b = &mut buf[..slot];
        for chunk in b.chunks_mut(8) {
            let r = rng.next().to_ne_bytes();
            chunk.copy_from_slice(&r[..chunk.len()]);
        }
        let shaped = iter % 2 == 0 && slot >= send_wqe::LEN;
        let sq = SqLimits {
            qp_type: types[to_usize(rng.below(types.len() as u64) as u32)],
            max_sge: rng.below(40) as u32,
            max_inline: rng.below(600) as u32,
            kernel: rng.below(4) == 0,
        };
        if shaped {
            let n = rng.below(6) as u32;
            let opcode = if rng.below(8) == 0 {
                WrOpcode::RegMr.as_raw()
            } else {
                rng.below(17) as u32
            };
            let mut put32 = |off: usize, v: u32| b[off..off + 4].copy_from_slice(&v.to_ne_bytes());
            put32(send_wr::OPCODE, opcode);
            put32(send_wr::SEND_FLAGS, (rng.next() as u32) & 0xf);
            put32(send_wqe::DMA + dma::NUM_SGE, n);
            put32(send_wr::UD_AH_NUM, (rng.below(2) as u32) * 3);
            b[send_wr::UD_AV + av::NETWORK_TYPE] = rng.below(3) as u8;
            let mut len = 0u32;
            for i in 0..to_usize(n) {
                let off = send_wqe::DATA + i * sge::LEN + sge::LENGTH;
                if off + 4 <= slot {
                    let l = rng.below(5000) as u32;
                    b[off..off + 4].copy_from_slice(&l.to_ne_bytes());
                    len = len.wrapping_add(l);
                }
            }
            if rng.below(3) == 0 {
                len = rng.below(70) as u32;
            }
            b[send_wqe::DMA..send_wqe::DMA + 4].copy_from_slice(&len.to_ne_bytes());
        }
        if let Ok(w) = SendWqe::from_bytes(b, &sq) {
            check_send(&w, b, &sq);
            accepted[0] += 1;
        }

        let max_sge = rng.below(34) as u32;
        if iter % 2 == 0 && slot >= recv_wqe::LEN {
            let n = rng.below(u64::from(max_sge) + 2) as u32;
            b[recv_wqe::DMA + dma::NUM_SGE..recv_wqe::DMA + dma::NUM_SGE + 4]
                .copy_from_slice(&n.to_ne_bytes());
            let mut len = 0u32;
            for i in 0..to_usize(n) {
                let off = recv_wqe::DATA + i * sge::LEN + sge::LENGTH;
                if off + 4 <= slot {
                    let l = rng.below(1 << 20) as u32;
                    b[off..off + 4].copy_from_slice(&l.to_ne_bytes());
                    len = len.wrapping_add(l);
                }
            }
            b[recv_wqe::DMA..recv_wqe::DMA + 4].copy_from_slice(&len.to_ne_bytes());
        }
        if let Ok(w) = RecvWqe::from_bytes(b, max_sge) {
            check_recv(&w, b, max_sge);
            accepted[1] += 1;
        }
    }
    // The shaped half must reach the accepting paths often.
    assert!(accepted[0] > 5_000 && accepted[1] > 20_000, "{accepted:?}");
}

/// The requester copies only `needed_len` bytes of a slot out of the ring
/// and parses them into a recycled WQE: that must give what a parse of the
/// whole slot into a fresh WQE gives, errors included.
#[test]
fn partial_copy_parses_like_the_whole_slot() {
    use crate::proto::testing::rng::Rng;
    let mut rng = Rng::new(0x5eed_0a11);
    let ops = [0u32, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 15, 16, 99];
    let mut recycled = SendWqe::empty();
    for _ in 0..20_000 {
        let slot = send_wqe::LEN + 16 * (rng.below(40) as usize);
        let flags = if rng.bool() { SendFlags::INLINE } else { 0 } | SendFlags::SIGNALED;
        let mut img = SendImage::new(slot, rng.pick(&ops), flags);
        for b in img.buf[send_wqe::DATA..].iter_mut() {
            *b = rng.next() as u8;
        }
        let n = rng.below(8);
        let sges: Vec<Sge> = (0..n)
            .map(|i| sge(0x1000 * u64::from(i), rng.below(300), 7))
            .collect();
        if (n as usize) * sge::LEN <= slot - send_wqe::DATA {
            img.sges(&sges);
        } else {
            img.u32(send_wqe::DMA + dma::NUM_SGE, n);
        }
        if rng.chance(30) {
            img.dma_len(rng.below(600));
        }
        let limits = rng.pick(&[
            RC,
            UD,
            SqLimits {
                max_inline: 512,
                max_sge: 32,
                ..RC
            },
        ]);
        let whole = SendWqe::from_bytes(&img.buf, &limits);
        let need = SendWqe::needed_len(&img.buf[..send_wqe::LEN], img.buf.len());
        assert!(need >= send_wqe::LEN && need <= img.buf.len());
        let part = recycled.parse_from(&img.buf[..need], &limits);
        match whole {
            Err(e) => assert_eq!(part, Err(e)),
            Ok(w) => {
                assert_eq!(part, Ok(()));
                let r = &recycled;
                assert_eq!(
                    (r.wr_id, r.opcode, r.send_flags, r.ex),
                    (w.wr_id, w.opcode, w.send_flags, w.ex)
                );
                assert_eq!((r.wr, r.iova, r.ssn, r.mask), (w.wr, w.iova, w.ssn, w.mask));
                assert_eq!(
                    (r.length, r.num_sge, r.payload),
                    (w.length, w.num_sge, w.payload)
                );
                assert!(r.sges().eq(w.sges()));
                assert_eq!(r.inline_data(), w.inline_data());
            }
        }
    }
}
