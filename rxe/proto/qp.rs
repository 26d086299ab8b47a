// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! QP states, QP types, the modify-QP attribute mask and the transition rules of
//! `ib_modify_qp_is_ok()` as Linux 6.12 defines them.
//!
//! In 6.12 `ib_modify_qp_is_ok()` takes no link-layer argument (it was dropped
//! long before), so RoCE and IB QPs follow the same table.

use core::ops::{BitAnd, BitOr, BitOrAssign, Not};

/// A raw value that names no variant of the enum it was converted to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct UnknownValue(pub(crate) u32);

/// `enum ib_qp_state`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub(crate) enum State {
    Reset = 0,
    Init = 1,
    Rtr = 2,
    Rts = 3,
    Sqd = 4,
    Sqe = 5,
    Err = 6,
}

impl State {
    /// Every state, in C enum order.
    #[allow(dead_code)] // The whole C value set, used or not.
    pub(crate) const ALL: [State; 7] = [
        State::Reset,
        State::Init,
        State::Rtr,
        State::Rts,
        State::Sqd,
        State::Sqe,
        State::Err,
    ];

    /// The C value.
    pub(crate) const fn as_raw(self) -> u32 {
        self as u32
    }
}

impl TryFrom<u32> for State {
    type Error = UnknownValue;

    fn try_from(v: u32) -> Result<Self, UnknownValue> {
        Ok(match v {
            0 => State::Reset,
            1 => State::Init,
            2 => State::Rtr,
            3 => State::Rts,
            4 => State::Sqd,
            5 => State::Sqe,
            6 => State::Err,
            _ => return Err(UnknownValue(v)),
        })
    }
}

/// `enum ib_qp_type`, the types below `IB_QPT_MAX` that the core table covers.
///
/// rxe itself creates only `Gsi`, `Rc`, `Uc` and `Ud`; see [`Type::rxe_supported`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub(crate) enum Type {
    Smi = 0,
    Gsi = 1,
    Rc = 2,
    Uc = 3,
    Ud = 4,
    RawIpv6 = 5,
    RawEthertype = 6,
    RawPacket = 8,
    XrcIni = 9,
    XrcTgt = 10,
}

/// `IB_QPT_MAX`: the per-type arrays of the core table have this many slots.
pub(crate) const QPT_MAX: usize = 11;

impl Type {
    /// Every type, in C enum order.
    #[allow(dead_code)] // The whole C value set, used or not.
    pub(crate) const ALL: [Type; 10] = [
        Type::Smi,
        Type::Gsi,
        Type::Rc,
        Type::Uc,
        Type::Ud,
        Type::RawIpv6,
        Type::RawEthertype,
        Type::RawPacket,
        Type::XrcIni,
        Type::XrcTgt,
    ];

    /// The C value.
    pub(crate) const fn as_raw(self) -> u32 {
        self as u32
    }

    /// The types `rxe_qp_chk_init()` accepts; anything else is `EOPNOTSUPP`.
    pub(crate) const fn rxe_supported(self) -> bool {
        matches!(self, Type::Gsi | Type::Rc | Type::Uc | Type::Ud)
    }

    /// UD and GSI send WQEs carry a destination (`wr.ud`) instead of RDMA fields.
    pub(crate) const fn is_datagram(self) -> bool {
        matches!(self, Type::Ud | Type::Gsi)
    }
}

impl TryFrom<u32> for Type {
    type Error = UnknownValue;

    fn try_from(v: u32) -> Result<Self, UnknownValue> {
        Ok(match v {
            0 => Type::Smi,
            1 => Type::Gsi,
            2 => Type::Rc,
            3 => Type::Uc,
            4 => Type::Ud,
            5 => Type::RawIpv6,
            6 => Type::RawEthertype,
            8 => Type::RawPacket,
            9 => Type::XrcIni,
            10 => Type::XrcTgt,
            _ => return Err(UnknownValue(v)),
        })
    }
}

/// `enum ib_qp_attr_mask`: which fields of `ib_qp_attr` a modify-QP call sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub(crate) struct AttrMask(pub(crate) u32);

impl AttrMask {
    #[allow(dead_code)] // The whole C value set, used or not.
    pub(crate) const NONE: AttrMask = AttrMask(0);
    pub(crate) const STATE: AttrMask = AttrMask(1);
    pub(crate) const CUR_STATE: AttrMask = AttrMask(1 << 1);
    pub(crate) const EN_SQD_ASYNC_NOTIFY: AttrMask = AttrMask(1 << 2);
    pub(crate) const ACCESS_FLAGS: AttrMask = AttrMask(1 << 3);
    pub(crate) const PKEY_INDEX: AttrMask = AttrMask(1 << 4);
    pub(crate) const PORT: AttrMask = AttrMask(1 << 5);
    pub(crate) const QKEY: AttrMask = AttrMask(1 << 6);
    pub(crate) const AV: AttrMask = AttrMask(1 << 7);
    pub(crate) const PATH_MTU: AttrMask = AttrMask(1 << 8);
    pub(crate) const TIMEOUT: AttrMask = AttrMask(1 << 9);
    pub(crate) const RETRY_CNT: AttrMask = AttrMask(1 << 10);
    pub(crate) const RNR_RETRY: AttrMask = AttrMask(1 << 11);
    pub(crate) const RQ_PSN: AttrMask = AttrMask(1 << 12);
    pub(crate) const MAX_QP_RD_ATOMIC: AttrMask = AttrMask(1 << 13);
    pub(crate) const ALT_PATH: AttrMask = AttrMask(1 << 14);
    pub(crate) const MIN_RNR_TIMER: AttrMask = AttrMask(1 << 15);
    pub(crate) const SQ_PSN: AttrMask = AttrMask(1 << 16);
    pub(crate) const MAX_DEST_RD_ATOMIC: AttrMask = AttrMask(1 << 17);
    pub(crate) const PATH_MIG_STATE: AttrMask = AttrMask(1 << 18);
    pub(crate) const CAP: AttrMask = AttrMask(1 << 19);
    pub(crate) const DEST_QPN: AttrMask = AttrMask(1 << 20);
    #[allow(dead_code)] // The whole C mask, used or not.
    pub(crate) const RESERVED1: AttrMask = AttrMask(1 << 21);
    #[allow(dead_code)] // The whole C mask, used or not.
    pub(crate) const RESERVED2: AttrMask = AttrMask(1 << 22);
    #[allow(dead_code)] // The whole C mask, used or not.
    pub(crate) const RESERVED3: AttrMask = AttrMask(1 << 23);
    #[allow(dead_code)] // The whole C mask, used or not.
    pub(crate) const RESERVED4: AttrMask = AttrMask(1 << 24);
    pub(crate) const RATE_LIMIT: AttrMask = AttrMask(1 << 25);
    /// `IB_QP_ATTR_STANDARD_BITS`, bits 0..=20.
    pub(crate) const STANDARD_BITS: AttrMask = AttrMask((1 << 21) - 1);

    /// The raw bits.
    #[cfg(test)] // Only the host tests use it.
    pub(crate) const fn bits(self) -> u32 {
        self.0
    }

    /// `self | other`, usable in consts.
    pub(crate) const fn union(self, other: AttrMask) -> AttrMask {
        AttrMask(self.0 | other.0)
    }

    /// Whether every bit of `other` is set in `self`.
    pub(crate) const fn contains(self, other: AttrMask) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether any bit of `other` is set in `self`.
    pub(crate) const fn intersects(self, other: AttrMask) -> bool {
        self.0 & other.0 != 0
    }
}

impl BitOr for AttrMask {
    type Output = AttrMask;
    fn bitor(self, rhs: AttrMask) -> AttrMask {
        AttrMask(self.0 | rhs.0)
    }
}

impl BitOrAssign for AttrMask {
    fn bitor_assign(&mut self, rhs: AttrMask) {
        self.0 |= rhs.0;
    }
}

impl BitAnd for AttrMask {
    type Output = AttrMask;
    fn bitand(self, rhs: AttrMask) -> AttrMask {
        AttrMask(self.0 & rhs.0)
    }
}

impl Not for AttrMask {
    type Output = AttrMask;
    fn not(self) -> AttrMask {
        AttrMask(!self.0)
    }
}

/// Required or optional attributes of one transition, one entry per QP type.
#[derive(Clone, Copy)]
struct PerType([u32; QPT_MAX]);

impl PerType {
    const NONE: PerType = PerType([0; QPT_MAX]);

    /// Sets the entry of `t`; evaluated at compile time only, so the index is checked by the compiler.
    const fn with(mut self, t: Type, m: AttrMask) -> PerType {
        self.0[t as usize] = m.0;
        self
    }

    /// The same mask for every listed type.
    const fn all(types: &[Type], m: AttrMask) -> PerType {
        let mut p = PerType::NONE;
        let mut i = 0;
        while i < types.len() {
            p = p.with(types[i], m);
            i += 1;
        }
        p
    }

    fn get(&self, t: Type) -> AttrMask {
        AttrMask(self.0.get(t as usize).copied().unwrap_or(0))
    }
}

#[derive(Clone, Copy)]
struct Transition {
    valid: bool,
    req: PerType,
    opt: PerType,
}

impl Transition {
    const INVALID: Transition = Transition {
        valid: false,
        req: PerType::NONE,
        opt: PerType::NONE,
    };
    const BARE: Transition = Transition {
        valid: true,
        req: PerType::NONE,
        opt: PerType::NONE,
    };
}

/// Shorthands so the table below reads like the IBA tables it encodes.
mod m {
    use super::AttrMask as A;

    pub(super) const PKEY_PORT_QKEY: A = A::PKEY_INDEX.union(A::PORT).union(A::QKEY);
    pub(super) const PKEY_PORT_ACCESS: A = A::PKEY_INDEX.union(A::PORT).union(A::ACCESS_FLAGS);
    pub(super) const PKEY_QKEY: A = A::PKEY_INDEX.union(A::QKEY);
    pub(super) const CUR_QKEY: A = A::CUR_STATE.union(A::QKEY);
    pub(super) const ALT_ACCESS_PKEY: A = A::ALT_PATH.union(A::ACCESS_FLAGS).union(A::PKEY_INDEX);
    pub(super) const RTR_UC: A = A::AV.union(A::PATH_MTU).union(A::DEST_QPN).union(A::RQ_PSN);
    pub(super) const RTR_RC: A = RTR_UC.union(A::MAX_DEST_RD_ATOMIC).union(A::MIN_RNR_TIMER);
    pub(super) const RTS_RC: A = A::TIMEOUT
        .union(A::RETRY_CNT)
        .union(A::RNR_RETRY)
        .union(A::SQ_PSN)
        .union(A::MAX_QP_RD_ATOMIC);
    pub(super) const RTS_XRC_TGT: A = A::TIMEOUT.union(A::SQ_PSN);
    pub(super) const CUR_ALT_ACCESS_MIG: A = A::CUR_STATE
        .union(A::ALT_PATH)
        .union(A::ACCESS_FLAGS)
        .union(A::PATH_MIG_STATE);
    pub(super) const CUR_ALT_ACCESS_MIG_RNR: A = CUR_ALT_ACCESS_MIG.union(A::MIN_RNR_TIMER);
    pub(super) const SQD_UC: A = A::AV
        .union(A::ALT_PATH)
        .union(A::ACCESS_FLAGS)
        .union(A::PKEY_INDEX)
        .union(A::PATH_MIG_STATE);
    pub(super) const SQD_XRC_INI: A = SQD_UC
        .union(A::PORT)
        .union(A::TIMEOUT)
        .union(A::RETRY_CNT)
        .union(A::RNR_RETRY)
        .union(A::MAX_QP_RD_ATOMIC);
    pub(super) const SQD_RC: A = SQD_XRC_INI
        .union(A::MAX_DEST_RD_ATOMIC)
        .union(A::MIN_RNR_TIMER);
    pub(super) const SQD_XRC_TGT: A = SQD_UC
        .union(A::PORT)
        .union(A::TIMEOUT)
        .union(A::MAX_DEST_RD_ATOMIC)
        .union(A::MIN_RNR_TIMER);
}

// Short names keep the table rows on one line each.
use State as S;
use Type as T;

/// The connected types share most rows of the table.
const CONNECTED: [Type; 4] = [T::Rc, T::Uc, T::XrcIni, T::XrcTgt];
/// Every type the `EN_SQD_ASYNC_NOTIFY` row lists.
const SQD_NOTIFY_TYPES: [Type; 7] = [T::Ud, T::Uc, T::Rc, T::XrcIni, T::XrcTgt, T::Smi, T::Gsi];

/// The RTR->RTS, RTS->RTS and SQD->RTS optional masks differ only in details.
const fn to_rts_opt(with_raw_rate: bool) -> PerType {
    let p = PerType::NONE
        .with(T::Ud, m::CUR_QKEY)
        .with(T::Uc, m::CUR_ALT_ACCESS_MIG)
        .with(T::Rc, m::CUR_ALT_ACCESS_MIG_RNR)
        .with(T::XrcIni, m::CUR_ALT_ACCESS_MIG)
        .with(T::XrcTgt, m::CUR_ALT_ACCESS_MIG_RNR)
        .with(T::Smi, m::CUR_QKEY)
        .with(T::Gsi, m::CUR_QKEY);
    if with_raw_rate {
        p.with(T::RawPacket, AttrMask::RATE_LIMIT)
    } else {
        p
    }
}

/// Rows are the current state, columns the next one; `as usize` turns the
/// enum discriminants (all below 7) into indices, checked by const evaluation.
const fn build_table() -> [[Transition; 7]; 7] {
    let mut t = [[Transition::INVALID; 7]; 7];

    // Any state may go to RESET and, except RESET itself, to ERR.
    let mut s = 0;
    while s < 7 {
        t[s][S::Reset as usize] = Transition::BARE;
        if s != S::Reset as usize {
            t[s][S::Err as usize] = Transition::BARE;
        }
        s += 1;
    }

    let init_params = PerType::all(&CONNECTED, m::PKEY_PORT_ACCESS)
        .with(T::Ud, m::PKEY_PORT_QKEY)
        .with(T::Smi, m::PKEY_QKEY)
        .with(T::Gsi, m::PKEY_QKEY);

    t[S::Reset as usize][S::Init as usize] = Transition {
        valid: true,
        req: init_params.with(T::RawPacket, AttrMask::PORT),
        opt: PerType::NONE,
    };

    t[S::Init as usize][S::Init as usize] = Transition {
        valid: true,
        req: PerType::NONE,
        opt: init_params,
    };

    t[S::Init as usize][S::Rtr as usize] = Transition {
        valid: true,
        req: PerType::NONE
            .with(T::Uc, m::RTR_UC)
            .with(T::Rc, m::RTR_RC)
            .with(T::XrcIni, m::RTR_UC)
            .with(T::XrcTgt, m::RTR_RC),
        opt: PerType::all(&CONNECTED, m::ALT_ACCESS_PKEY)
            .with(T::Ud, m::PKEY_QKEY)
            .with(T::Smi, m::PKEY_QKEY)
            .with(T::Gsi, m::PKEY_QKEY),
    };

    t[S::Rtr as usize][S::Rts as usize] = Transition {
        valid: true,
        req: PerType::NONE
            .with(T::Ud, AttrMask::SQ_PSN)
            .with(T::Uc, AttrMask::SQ_PSN)
            .with(T::Rc, m::RTS_RC)
            .with(T::XrcIni, m::RTS_RC)
            .with(T::XrcTgt, m::RTS_XRC_TGT)
            .with(T::Smi, AttrMask::SQ_PSN)
            .with(T::Gsi, AttrMask::SQ_PSN),
        opt: to_rts_opt(true),
    };

    t[S::Rts as usize][S::Rts as usize] = Transition {
        valid: true,
        req: PerType::NONE,
        opt: to_rts_opt(true),
    };

    t[S::Rts as usize][S::Sqd as usize] = Transition {
        valid: true,
        req: PerType::NONE,
        opt: PerType::all(&SQD_NOTIFY_TYPES, AttrMask::EN_SQD_ASYNC_NOTIFY),
    };

    t[S::Sqd as usize][S::Rts as usize] = Transition {
        valid: true,
        req: PerType::NONE,
        opt: to_rts_opt(false),
    };

    t[S::Sqd as usize][S::Sqd as usize] = Transition {
        valid: true,
        req: PerType::NONE,
        opt: PerType::NONE
            .with(T::Ud, m::PKEY_QKEY)
            .with(T::Uc, m::SQD_UC)
            .with(T::Rc, m::SQD_RC)
            .with(T::XrcIni, m::SQD_XRC_INI)
            .with(T::XrcTgt, m::SQD_XRC_TGT)
            .with(T::Smi, m::PKEY_QKEY)
            .with(T::Gsi, m::PKEY_QKEY),
    };

    t[S::Sqe as usize][S::Rts as usize] = Transition {
        valid: true,
        req: PerType::NONE,
        opt: PerType::NONE
            .with(T::Ud, m::CUR_QKEY)
            .with(T::Uc, AttrMask::CUR_STATE.union(AttrMask::ACCESS_FLAGS))
            .with(T::Smi, m::CUR_QKEY)
            .with(T::Gsi, m::CUR_QKEY),
    };

    t
}

static TABLE: [[Transition; 7]; 7] = build_table();

fn transition(cur: State, next: State) -> Transition {
    TABLE
        .get(cur as usize)
        .and_then(|row| row.get(next as usize))
        .copied()
        .unwrap_or(Transition::INVALID)
}

/// Whether the transition `cur -> next` is allowed at all, whatever the mask.
#[cfg(test)] // Only the host tests use it.
pub(crate) fn transition_exists(cur: State, next: State) -> bool {
    transition(cur, next).valid
}

/// The attributes a `cur -> next` modify must set for `qp_type`.
#[cfg(test)] // Only the host tests use it.
pub(crate) fn required_attrs(cur: State, next: State, qp_type: Type) -> AttrMask {
    transition(cur, next).req.get(qp_type)
}

/// The attributes a `cur -> next` modify may set for `qp_type`, besides the required ones and `STATE`.
#[cfg(test)] // Only the host tests use it.
pub(crate) fn optional_attrs(cur: State, next: State, qp_type: Type) -> AttrMask {
    transition(cur, next).opt.get(qp_type)
}

/// `ib_modify_qp_is_ok()`: whether moving a `qp_type` QP from `cur` to `next`
/// with `mask` set is a legal modify.
pub(crate) fn modify_is_ok(cur: State, next: State, qp_type: Type, mask: AttrMask) -> bool {
    // A caller may only assert the current state of a QP that can be in a
    // state it does not know about (the async error paths).
    if mask.intersects(AttrMask::CUR_STATE)
        && !matches!(cur, State::Rtr | State::Rts | State::Sqd | State::Sqe)
    {
        return false;
    }

    let tr = transition(cur, next);
    if !tr.valid {
        return false;
    }

    let req = tr.req.get(qp_type);
    let opt = tr.opt.get(qp_type);
    if !mask.contains(req) {
        return false;
    }
    !mask.intersects(!(req | opt | AttrMask::STATE))
}

#[cfg(test)]
#[path = "qp_tests.rs"]
mod tests;
