// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Host tests of [`super`] (`sge_cursor.rs`).

use super::*;
use std::vec::Vec;

fn sge(addr: u64, length: u32) -> Sge {
    Sge {
        addr,
        length,
        lkey: 0x100 + length,
    }
}

/// (index, offset, len, pos) of each piece.
type Pieces = Vec<(usize, u32, u32, usize)>;
/// (index, offset, len) of each piece of the C walk.
type CPieces = Vec<(usize, u32, u32)>;

fn pieces(c: &SgeCursor, sges: &[Sge], len: u32) -> (Pieces, Option<CursorError>, SgeCursor) {
    let mut out = Vec::new();
    let mut walk = match c.walk(sges, len) {
        Ok(w) => w,
        Err(e) => return (out, Some(e), *c),
    };
    let mut err = None;
    for p in walk.by_ref() {
        match p {
            Ok(p) => out.push((p.index, p.offset, p.len, p.pos)),
            Err(e) => err = Some(e),
        }
    }
    (out, err, walk.position())
}

#[test]
fn single_sge_in_steps() {
    let sges = [sge(0x1000, 100)];
    let mut c = SgeCursor::new(100);
    let (p, e, end) = pieces(&c, &sges, 40);
    assert_eq!((p, e), (std::vec![(0, 0, 40, 0)], None));
    c = end;
    assert_eq!((c.cur_sge(), c.sge_offset(), c.resid()), (0, 40, 60));
    let (p, _, end) = pieces(&c, &sges, 60);
    assert_eq!(p, std::vec![(0, 40, 60, 0)]);
    c = end;
    // Lazy: stays at the end of SGE 0.
    assert_eq!((c.cur_sge(), c.sge_offset(), c.resid()), (0, 100, 0));
    assert_eq!(pieces(&c, &sges, 1).1, Some(CursorError::TooLong));
    assert_eq!(pieces(&c, &sges, 0), (Vec::new(), None, c));
}

#[test]
fn spans_sges_and_skips_empty_ones() {
    let sges = [
        sge(0x1000, 10),
        sge(0, 0),
        sge(0x2000, 5),
        sge(0, 0),
        sge(0x3000, 20),
    ];
    let c = SgeCursor::new(35);
    let (p, e, end) = pieces(&c, &sges, 30);
    assert_eq!(e, None);
    assert_eq!(p, std::vec![(0, 0, 10, 0), (2, 0, 5, 10), (4, 0, 15, 15)]);
    assert_eq!((end.cur_sge(), end.sge_offset(), end.resid()), (4, 15, 5));
    let piece = c.walk(&sges[..], 30).unwrap().nth(2).unwrap().unwrap();
    assert_eq!(piece.addr(), Some(0x3000));
    assert_eq!(piece.range(), 15..30);
}

#[test]
fn leading_empty_sges() {
    let sges = [sge(0, 0), sge(0, 0), sge(0x10, 4)];
    let (p, e, end) = pieces(&SgeCursor::new(4), &sges, 4);
    assert_eq!((p, e), (std::vec![(2, 0, 4, 0)], None));
    assert_eq!((end.cur_sge(), end.sge_offset(), end.resid()), (2, 4, 0));
}

#[test]
fn no_space_when_resid_outruns_sges() {
    // A cursor whose resid exceeds the SGEs (never built from a parsed
    // WQE) fails like C, after the pieces that fit.
    let sges = [sge(0x1000, 8)];
    let (p, e, _) = pieces(&SgeCursor::new(20), &sges, 12);
    assert_eq!(p, std::vec![(0, 0, 8, 0)]);
    assert_eq!(e, Some(CursorError::NoSpace));
    let empty: [Sge; 0] = [];
    assert_eq!(
        pieces(&SgeCursor::new(1), &empty, 1).1,
        Some(CursorError::NoSpace)
    );
}

#[test]
fn failed_advance_keeps_cursor() {
    let sges = [sge(0x1000, 8)];
    let mut c = SgeCursor::new(20);
    assert_eq!(c.advance(&sges[..], 12), Err(CursorError::NoSpace));
    assert_eq!(c, SgeCursor::new(20));
    assert_eq!(c.advance(&sges[..], 21), Err(CursorError::TooLong));
    assert_eq!(c.advance(&sges[..], 5), Ok(()));
    assert_eq!((c.cur_sge(), c.sge_offset(), c.resid()), (0, 5, 15));
}

#[test]
fn address_overflow_is_reported() {
    let sges = [sge(u64::MAX - 1, 8)];
    let mut c = SgeCursor::new(8);
    c.advance(&sges[..], 4).unwrap();
    let p = c.walk(&sges[..], 4).unwrap().next().unwrap().unwrap();
    assert_eq!(p.addr(), None);
}

#[test]
fn inline_advance() {
    let mut c = SgeCursor::new(10);
    c.advance_inline(4).unwrap();
    assert_eq!((c.sge_offset(), c.resid()), (4, 6));
    assert_eq!(c.advance_inline(7), Err(CursorError::TooLong));
    assert_eq!((c.sge_offset(), c.resid()), (4, 6));
}

/// C's `copy_data` walk (without the copies), written as C does it:
/// cursor fields are updated in place, errors leave them half-moved.
/// Returns the pieces and the outcome.
fn c_model(
    sges: &[Sge],
    cur: &mut (usize, u32, u32),
    length: u32,
) -> (CPieces, Result<(), CursorError>) {
    let mut out = Vec::new();
    if length == 0 {
        return (out, Ok(()));
    }
    let (mut idx, mut offset, mut resid) = *cur;
    let mut length = length;
    if length > resid {
        return (out, Err(CursorError::TooLong));
    }
    // C reads sge[cur_sge] unchecked; past the end it is garbage, which
    // a cursor from a parsed WQE never reaches. Treat it as NoSpace.
    if idx >= sges.len() {
        return (out, Err(CursorError::NoSpace));
    }
    while length > 0 {
        let mut bytes = length;
        if offset >= sges[idx].length {
            idx += 1;
            offset = 0;
            if idx >= sges.len() {
                return (out, Err(CursorError::NoSpace));
            }
            if sges[idx].length == 0 {
                continue;
            }
        }
        if bytes > sges[idx].length - offset {
            bytes = sges[idx].length - offset;
        }
        if bytes > 0 {
            out.push((idx, offset, bytes));
            offset += bytes;
            resid -= bytes;
            length -= bytes;
        }
    }
    *cur = (idx, offset, resid);
    (out, Ok(()))
}

/// xorshift64*: deterministic, no dependencies.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[test]
fn fuzz_against_c_walk() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..20_000 {
        let n = rng.below(6) as usize;
        let sges: Vec<Sge> = (0..n)
            .map(|i| {
                // Many zero-length and tiny SGEs, some large ones.
                let length = match rng.below(4) {
                    0 => 0,
                    1 => rng.below(4) as u32,
                    2 => rng.below(64) as u32,
                    _ => rng.below(1 << 20) as u32,
                };
                Sge {
                    addr: rng.next(),
                    length,
                    lkey: i as u32,
                }
            })
            .collect();
        let sum: u32 = sges.iter().map(|s| s.length).sum();
        // Mostly consistent cursors (resid = sum), sometimes not.
        let resid = if rng.below(8) == 0 {
            rng.below(u64::from(sum) + 64) as u32
        } else {
            sum
        };
        let mut ours = SgeCursor::new(resid);
        let mut c = (0usize, 0u32, resid);
        for _ in 0..8 {
            let len = match rng.below(4) {
                0 => 0,
                1 => rng.below(8) as u32,
                2 => rng.below(u64::from(ours.resid()) + 2) as u32,
                _ => ours.resid(),
            };
            let before = ours;
            let (got, err, end) = pieces(&ours, &sges, len);
            let (want, outcome) = c_model(&sges, &mut c, len);
            let got3: Vec<_> = got.iter().map(|&(i, o, l, _)| (i, o, l)).collect();
            assert_eq!(
                got3, want,
                "pieces, sges {sges:?} cursor {before:?} len {len}"
            );
            // Pieces tile the buffer in order.
            let mut pos = 0;
            for &(_, _, l, p) in &got {
                assert_eq!(p, pos);
                pos += l as usize;
            }
            match outcome {
                Ok(()) => {
                    assert_eq!(err, None);
                    assert_eq!(pos, len as usize);
                    assert_eq!((end.cur_sge(), end.sge_offset(), end.resid()), c);
                    ours = end;
                }
                Err(e) => {
                    assert_eq!(
                        err,
                        Some(e),
                        "error, sges {sges:?} cursor {before:?} len {len}"
                    );
                    // Ours is transactional: the caller keeps `before`.
                    break;
                }
            }
            // advance() agrees with walk().
            let mut adv = before;
            assert_eq!(adv.advance(&sges[..], len), Ok(()));
            assert_eq!(adv, ours);
        }
        if resid == sum {
            // Consistent cursors never run out of SGEs before resid.
            let mut c = SgeCursor::new(sum);
            assert_eq!(c.advance(&sges[..], sum), Ok(()));
            assert_eq!(c.resid(), 0);
        }
    }
}
