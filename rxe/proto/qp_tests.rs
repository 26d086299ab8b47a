// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Host tests of [`super`] (`qp.rs`).

use super::*;

/// Every non-empty (req, opt) entry of `qp_state_table` in verbs.c of 6.12.117,
/// dumped by a C program that compiled the table itself:
/// (cur, next, qp type, req, opt).
const C_ENTRIES: &[(u32, u32, u32, u32, u32)] = &[
    (0, 1, 0, 0x50, 0x0),
    (0, 1, 1, 0x50, 0x0),
    (0, 1, 2, 0x38, 0x0),
    (0, 1, 3, 0x38, 0x0),
    (0, 1, 4, 0x70, 0x0),
    (0, 1, 8, 0x20, 0x0),
    (0, 1, 9, 0x38, 0x0),
    (0, 1, 10, 0x38, 0x0),
    (1, 1, 0, 0x0, 0x50),
    (1, 1, 1, 0x0, 0x50),
    (1, 1, 2, 0x0, 0x38),
    (1, 1, 3, 0x0, 0x38),
    (1, 1, 4, 0x0, 0x70),
    (1, 1, 9, 0x0, 0x38),
    (1, 1, 10, 0x0, 0x38),
    (1, 2, 0, 0x0, 0x50),
    (1, 2, 1, 0x0, 0x50),
    (1, 2, 2, 0x129180, 0x4018),
    (1, 2, 3, 0x101180, 0x4018),
    (1, 2, 4, 0x0, 0x50),
    (1, 2, 9, 0x101180, 0x4018),
    (1, 2, 10, 0x129180, 0x4018),
    (2, 3, 0, 0x10000, 0x42),
    (2, 3, 1, 0x10000, 0x42),
    (2, 3, 2, 0x12e00, 0x4c00a),
    (2, 3, 3, 0x10000, 0x4400a),
    (2, 3, 4, 0x10000, 0x42),
    (2, 3, 8, 0x0, 0x2000000),
    (2, 3, 9, 0x12e00, 0x4400a),
    (2, 3, 10, 0x10200, 0x4c00a),
    (3, 3, 0, 0x0, 0x42),
    (3, 3, 1, 0x0, 0x42),
    (3, 3, 2, 0x0, 0x4c00a),
    (3, 3, 3, 0x0, 0x4400a),
    (3, 3, 4, 0x0, 0x42),
    (3, 3, 8, 0x0, 0x2000000),
    (3, 3, 9, 0x0, 0x4400a),
    (3, 3, 10, 0x0, 0x4c00a),
    (3, 4, 0, 0x0, 0x4),
    (3, 4, 1, 0x0, 0x4),
    (3, 4, 2, 0x0, 0x4),
    (3, 4, 3, 0x0, 0x4),
    (3, 4, 4, 0x0, 0x4),
    (3, 4, 9, 0x0, 0x4),
    (3, 4, 10, 0x0, 0x4),
    (4, 3, 0, 0x0, 0x42),
    (4, 3, 1, 0x0, 0x42),
    (4, 3, 2, 0x0, 0x4c00a),
    (4, 3, 3, 0x0, 0x4400a),
    (4, 3, 4, 0x0, 0x42),
    (4, 3, 9, 0x0, 0x4400a),
    (4, 3, 10, 0x0, 0x4c00a),
    (4, 4, 0, 0x0, 0x50),
    (4, 4, 1, 0x0, 0x50),
    (4, 4, 2, 0x0, 0x6eeb8),
    (4, 4, 3, 0x0, 0x44098),
    (4, 4, 4, 0x0, 0x50),
    (4, 4, 9, 0x0, 0x46eb8),
    (4, 4, 10, 0x0, 0x6c2b8),
    (5, 3, 0, 0x0, 0x42),
    (5, 3, 1, 0x0, 0x42),
    (5, 3, 3, 0x0, 0xa),
    (5, 3, 4, 0x0, 0x42),
];

/// The (cur, next) pairs whose `valid` bit is set in the C table.
const C_VALID: &[(u32, u32)] = &[
    (0, 0),
    (0, 1),
    (1, 0),
    (1, 1),
    (1, 2),
    (1, 6),
    (2, 0),
    (2, 3),
    (2, 6),
    (3, 0),
    (3, 3),
    (3, 4),
    (3, 6),
    (4, 0),
    (4, 3),
    (4, 4),
    (4, 6),
    (5, 0),
    (5, 3),
    (5, 6),
    (6, 0),
    (6, 6),
];

/// FNV-1a over the results of the compiled C `ib_modify_qp_is_ok()` for the
/// masks [`c_probe_masks`] generates, in (cur, next, type) order.
const C_RESULTS_HASH: u64 = 0xe811_e162_a0d7_60de;

fn c_entry(cur: State, next: State, t: Type) -> (u32, u32) {
    C_ENTRIES
        .iter()
        .find(|e| e.0 == cur.as_raw() && e.1 == next.as_raw() && e.2 == t.as_raw())
        .map_or((0, 0), |e| (e.3, e.4))
}

/// The C function, transcribed over the dumped numbers rather than over our table.
fn reference(cur: State, next: State, t: Type, mask: u32) -> bool {
    let cur_ok = matches!(cur, State::Rtr | State::Rts | State::Sqd | State::Sqe);
    if mask & AttrMask::CUR_STATE.0 != 0 && !cur_ok {
        return false;
    }
    if !C_VALID.contains(&(cur.as_raw(), next.as_raw())) {
        return false;
    }
    let (req, opt) = c_entry(cur, next, t);
    if mask & req != req {
        return false;
    }
    mask & !(req | opt | AttrMask::STATE.0) == 0
}

struct XorShift(u64);
impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Mirrors the C probe: random masks, required masks with one bit flipped,
/// required plus some optional bits, and subsets of everything allowed.
fn c_probe_masks(rng: &mut XorShift, req: u32, opt: u32, k: u32) -> u32 {
    let x = rng.next();
    match k & 3 {
        0 => (x as u32) & 0x3ff_ffff,
        1 => (req | AttrMask::STATE.0) ^ (1u32 << (x % 26)),
        2 => req | ((x as u32) & opt) | ((x >> 40) & 1) as u32,
        _ => (x as u32) & (req | opt | AttrMask::STATE.0 | AttrMask::CUR_STATE.0),
    }
}

#[test]
fn table_matches_c_dump() {
    for cur in State::ALL {
        for next in State::ALL {
            assert_eq!(
                transition_exists(cur, next),
                C_VALID.contains(&(cur.as_raw(), next.as_raw())),
                "{cur:?} -> {next:?}"
            );
            for t in Type::ALL {
                let (req, opt) = c_entry(cur, next, t);
                assert_eq!(
                    required_attrs(cur, next, t).bits(),
                    req,
                    "req {cur:?}->{next:?} {t:?}"
                );
                assert_eq!(
                    optional_attrs(cur, next, t).bits(),
                    opt,
                    "opt {cur:?}->{next:?} {t:?}"
                );
            }
        }
    }
}

#[test]
fn results_match_compiled_c_function() {
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for cur in State::ALL {
        for next in State::ALL {
            for t in Type::ALL {
                let (req, opt) = c_entry(cur, next, t);
                for k in 0..256 {
                    let mask = c_probe_masks(&mut rng, req, opt, k);
                    let ok = modify_is_ok(cur, next, t, AttrMask(mask));
                    assert_eq!(
                        ok,
                        reference(cur, next, t, mask),
                        "{cur:?}->{next:?} {t:?} {mask:#x}"
                    );
                    h ^= u64::from(ok);
                    h = h.wrapping_mul(0x0000_0100_0000_01b3);
                }
            }
        }
    }
    assert_eq!(h, C_RESULTS_HASH);
}

#[test]
fn every_single_extra_bit_is_judged_like_c() {
    for cur in State::ALL {
        for next in State::ALL {
            for t in Type::ALL {
                let (req, opt) = c_entry(cur, next, t);
                let base = req | AttrMask::STATE.0;
                for bit in 0..32 {
                    let mask = base | (1u32 << bit);
                    assert_eq!(
                        modify_is_ok(cur, next, t, AttrMask(mask)),
                        reference(cur, next, t, mask)
                    );
                    let full = base | opt | (1u32 << bit);
                    assert_eq!(
                        modify_is_ok(cur, next, t, AttrMask(full)),
                        reference(cur, next, t, full)
                    );
                }
            }
        }
    }
}

#[test]
fn rc_bring_up_sequence() {
    let init = AttrMask::STATE | AttrMask::PKEY_INDEX | AttrMask::PORT | AttrMask::ACCESS_FLAGS;
    assert!(modify_is_ok(S::Reset, S::Init, T::Rc, init));
    // Missing PORT.
    let short = AttrMask::STATE | AttrMask::PKEY_INDEX | AttrMask::ACCESS_FLAGS;
    assert!(!modify_is_ok(S::Reset, S::Init, T::Rc, short));
    let rtr = AttrMask::STATE
        | AttrMask::AV
        | AttrMask::PATH_MTU
        | AttrMask::DEST_QPN
        | AttrMask::RQ_PSN
        | AttrMask::MAX_DEST_RD_ATOMIC
        | AttrMask::MIN_RNR_TIMER;
    assert!(modify_is_ok(S::Init, S::Rtr, T::Rc, rtr));
    let rts = AttrMask::STATE
        | AttrMask::TIMEOUT
        | AttrMask::RETRY_CNT
        | AttrMask::RNR_RETRY
        | AttrMask::SQ_PSN
        | AttrMask::MAX_QP_RD_ATOMIC;
    assert!(modify_is_ok(S::Rtr, S::Rts, T::Rc, rts));
    // Reset -> Rts skips states.
    assert!(!modify_is_ok(S::Reset, S::Rts, T::Rc, rts));
    // CUR_STATE is only legal from Rtr/Rts/Sqd/Sqe.
    assert!(!modify_is_ok(
        S::Init,
        S::Err,
        T::Rc,
        AttrMask::STATE | AttrMask::CUR_STATE
    ));
    assert!(modify_is_ok(
        S::Rts,
        S::Rts,
        T::Rc,
        AttrMask::STATE | AttrMask::CUR_STATE
    ));
    // Error and reset need nothing but STATE.
    assert!(modify_is_ok(S::Rts, S::Err, T::Ud, AttrMask::STATE));
    assert!(modify_is_ok(S::Err, S::Reset, T::Ud, AttrMask::STATE));
    // Even STATE may be absent: the core does not demand it.
    assert!(modify_is_ok(S::Err, S::Reset, T::Ud, AttrMask::NONE));
}

#[test]
fn raw_conversions_round_trip() {
    for s in State::ALL {
        assert_eq!(State::try_from(s.as_raw()), Ok(s));
    }
    assert_eq!(State::try_from(7), Err(UnknownValue(7)));
    for t in Type::ALL {
        assert_eq!(Type::try_from(t.as_raw()), Ok(t));
        assert!((t.as_raw() as usize) < QPT_MAX);
    }
    assert_eq!(Type::try_from(7), Err(UnknownValue(7)));
    assert_eq!(Type::try_from(11), Err(UnknownValue(11)));
    assert_eq!(Type::try_from(0xff), Err(UnknownValue(0xff)));
    let supported: usize = Type::ALL.iter().filter(|t| t.rxe_supported()).count();
    assert_eq!(supported, 4);
    assert_eq!(AttrMask::STANDARD_BITS.bits(), 0x1f_ffff);
    assert_eq!(AttrMask::RATE_LIMIT.bits(), 0x200_0000);
}
