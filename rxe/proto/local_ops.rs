// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The checks of the local operations, the work requests that change an MR
//! or MW rather than move data: fast register (REG_MR), invalidate
//! (LOCAL_INV, or the invalidate a received send carries) and BIND_MW.
//! The keys, rights and states they check live in
//! [`mr`](super::mr), which re-exports these checks.

use super::mr::{range_ok, same_index, Access, MrType, MwType, RuleError, State};
use super::uapi::WcStatus;

/// What the fast-register and invalidate rules need to know about an MR.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MrFacts {
    pub(crate) mr_type: MrType,
    pub(crate) state: State,
    pub(crate) lkey: u32,
    pub(crate) rkey: u32,
    pub(crate) access: Access,
    pub(crate) bound_mws: u32,
}

/// REG_MR: only a free fast-reg MR of the QP's PD, and only the key byte may
/// change.
pub(crate) fn check_fast_reg(mr: &MrFacts, same_pd: bool, key: u32) -> Result<(), RuleError> {
    if mr.mr_type != MrType::MemReg
        || mr.state != State::Free
        || !same_pd
        || !same_index(mr.lkey, key)
    {
        return Err(RuleError::Invalid);
    }
    Ok(())
}

/// Why a LOCAL_INV or send with invalidate is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum InvalidateError {
    /// No such key, or an object of the wrong type or state (C's `-EINVAL`).
    Invalid,
    /// The MR or window is not the invalidating QP's to invalidate: it is
    /// in another PD, or it is a type 2 window bound to another QP. The IB
    /// specification asks for both checks; rdma_rxe makes neither.
    Protection { window: bool },
}

impl InvalidateError {
    /// The status a LOCAL_INV that fails so completes with: C's
    /// `IB_WC_LOC_QP_OP_ERR` for a bad key; a window the QP may not touch
    /// is a memory window error, an MR of another PD a protection error.
    pub(crate) fn local_status(self) -> WcStatus {
        match self {
            Self::Invalid => WcStatus::LocQpOpErr,
            Self::Protection { window: true } => WcStatus::MwBindErr,
            Self::Protection { window: false } => WcStatus::LocProtErr,
        }
    }
}

/// LOCAL_INV / send with invalidate on an MR key, by a QP of the MR's PD
/// (`same_pd`) or not.
pub(crate) fn check_invalidate_mr(
    mr: &MrFacts,
    key: u32,
    same_pd: bool,
) -> Result<(), InvalidateError> {
    let expected = if mr.access.intersects(Access::REMOTE) {
        mr.rkey
    } else {
        mr.lkey
    };
    if key != expected || mr.bound_mws > 0 || mr.mr_type != MrType::MemReg {
        return Err(InvalidateError::Invalid);
    }
    if !same_pd {
        return Err(InvalidateError::Protection { window: false });
    }
    Ok(())
}

/// Invalidating an MW: only type 2 windows that are not invalid, by a QP
/// of the window's PD (`same_pd`) that is the one a bound window is bound
/// to (`bound_here`; true when nothing is bound).
pub(crate) fn check_invalidate_mw(
    mw_type: MwType,
    state: State,
    same_pd: bool,
    bound_here: bool,
) -> Result<(), InvalidateError> {
    if state == State::Invalid || mw_type == MwType::One {
        return Err(InvalidateError::Invalid);
    }
    if !same_pd || !bound_here {
        return Err(InvalidateError::Protection { window: true });
    }
    Ok(())
}

/// The MR side of a bind request, as looked up by its lkey.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BindMr {
    /// The MR is in the QP's PD.
    pub(crate) same_pd: bool,
    pub(crate) access: Access,
    pub(crate) iova: u64,
    pub(crate) length: u64,
}

/// A bind request as the BIND_MW work request carries it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BindReq {
    pub(crate) addr: u64,
    pub(crate) length: u64,
    pub(crate) access: Access,
}

/// The checks of a bind, in the IBA's order: window state and type rules,
/// PD agreement, then the MR's rights and range.
pub(crate) fn check_bind(
    mw_type: MwType,
    state: State,
    mw_same_pd: bool,
    mr: Option<&BindMr>,
    req: &BindReq,
) -> Result<(), RuleError> {
    if !req.access.outside(Access::SUPPORTED_MW).is_empty() {
        return Err(RuleError::NotSupported);
    }
    match mw_type {
        MwType::One => {
            // o10-36.2.2: type 1 windows are never zero based.
            if state != State::Valid || req.access.contains(Access::ZERO_BASED) {
                return Err(RuleError::Invalid);
            }
        }
        MwType::Two => {
            // o10-37.2.30, o10-37.2.40: bind from free, and not to nothing.
            if state != State::Free || mr.is_none() || req.length == 0 {
                return Err(RuleError::Invalid);
            }
        }
    }
    // C10-72.
    if !mw_same_pd {
        return Err(RuleError::Invalid);
    }
    let Some(mr) = mr else {
        return Ok(());
    };
    if !mr.same_pd || mr.access.contains(Access::ZERO_BASED) {
        return Err(RuleError::Invalid);
    }
    // C10-73.
    if !mr.access.contains(Access::MW_BIND) {
        return Err(RuleError::Invalid);
    }
    // C10-74.
    let writes = Access::REMOTE_WRITE.union(Access::REMOTE_ATOMIC);
    if req.access.intersects(writes) && !mr.access.contains(Access::LOCAL_WRITE) {
        return Err(RuleError::Invalid);
    }
    // C10-75.
    let inside = if req.access.contains(Access::ZERO_BASED) {
        req.length <= mr.length
    } else {
        range_ok(mr.iova, mr.length, req.addr, req.length)
    };
    if !inside {
        return Err(RuleError::Invalid);
    }
    Ok(())
}

#[cfg(test)]
#[path = "local_ops_tests.rs"]
mod tests;
