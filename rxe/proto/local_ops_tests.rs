// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Host tests of [`super`] (`local_ops.rs`).

use super::*;

fn fast_mr(state: State) -> MrFacts {
    MrFacts {
        mr_type: MrType::MemReg,
        state,
        lkey: 0x0000_0512,
        rkey: 0x0000_0512,
        access: Access::REMOTE,
        bound_mws: 0,
    }
}

#[test]
fn fast_reg_and_invalidate_rules() {
    assert_eq!(
        check_fast_reg(&fast_mr(State::Free), true, 0x0000_05ff),
        Ok(())
    );
    assert!(check_fast_reg(&fast_mr(State::Valid), true, 0x0000_05ff).is_err());
    assert!(check_fast_reg(&fast_mr(State::Free), false, 0x0000_05ff).is_err());
    assert!(check_fast_reg(&fast_mr(State::Free), true, 0x0000_06ff).is_err());
    let mut user = fast_mr(State::Free);
    user.mr_type = MrType::User;
    assert!(check_fast_reg(&user, true, 0x0000_0512).is_err());

    assert_eq!(
        check_invalidate_mr(&fast_mr(State::Valid), 0x512, true),
        Ok(())
    );
    assert!(check_invalidate_mr(&fast_mr(State::Valid), 0x513, true).is_err());
    assert_eq!(
        check_invalidate_mr(&fast_mr(State::Valid), 0x512, false),
        Err(InvalidateError::Protection { window: false })
    );
    assert_eq!(
        check_invalidate_mr(&fast_mr(State::Valid), 0x513, false),
        Err(InvalidateError::Invalid)
    );
    let mut bound = fast_mr(State::Valid);
    bound.bound_mws = 1;
    assert!(check_invalidate_mr(&bound, 0x512, true).is_err());
    assert!(check_invalidate_mr(&user, 0x512, true).is_err());

    assert!(check_invalidate_mw(MwType::One, State::Valid, true, true).is_err());
    assert!(check_invalidate_mw(MwType::Two, State::Invalid, true, true).is_err());
    assert_eq!(
        check_invalidate_mw(MwType::Two, State::Valid, true, true),
        Ok(())
    );
    let denied = Err(InvalidateError::Protection { window: true });
    assert_eq!(
        check_invalidate_mw(MwType::Two, State::Valid, false, true),
        denied
    );
    assert_eq!(
        check_invalidate_mw(MwType::Two, State::Valid, true, false),
        denied
    );
    assert_eq!(
        check_invalidate_mw(MwType::Two, State::Invalid, false, false),
        Err(InvalidateError::Invalid)
    );
    assert_eq!(
        InvalidateError::Invalid.local_status(),
        WcStatus::LocQpOpErr
    );
    assert_eq!(
        InvalidateError::Protection { window: true }.local_status(),
        WcStatus::MwBindErr
    );
    assert_eq!(
        InvalidateError::Protection { window: false }.local_status(),
        WcStatus::LocProtErr
    );
}

fn bind_mr() -> BindMr {
    BindMr {
        same_pd: true,
        access: Access::from_raw(Access::MW_BIND.bits() | Access::LOCAL_WRITE.bits()),
        iova: 0x1000,
        length: 0x1000,
    }
}

fn req(addr: u64, length: u64, access: Access) -> BindReq {
    BindReq {
        addr,
        length,
        access,
    }
}

#[test]
fn bind_rules() {
    let mr = bind_mr();
    let rw = Access::from_raw(Access::REMOTE_WRITE.bits() | Access::REMOTE_READ.bits());
    let ok = req(0x1100, 0x100, rw);
    assert_eq!(
        check_bind(MwType::One, State::Valid, true, Some(&mr), &ok),
        Ok(())
    );
    assert_eq!(
        check_bind(MwType::Two, State::Free, true, Some(&mr), &ok),
        Ok(())
    );
    // Type 1 may unbind (no MR); type 2 may not.
    let unbind = req(0, 0, Access::NONE);
    assert_eq!(
        check_bind(MwType::One, State::Valid, true, None, &unbind),
        Ok(())
    );
    assert!(check_bind(MwType::Two, State::Free, true, None, &unbind).is_err());
    // State rules.
    assert!(check_bind(MwType::One, State::Free, true, Some(&mr), &ok).is_err());
    assert!(check_bind(MwType::Two, State::Valid, true, Some(&mr), &ok).is_err());
    // PD rules.
    assert!(check_bind(MwType::One, State::Valid, false, Some(&mr), &ok).is_err());
    let other_pd = BindMr {
        same_pd: false,
        ..mr
    };
    assert!(check_bind(MwType::One, State::Valid, true, Some(&other_pd), &ok).is_err());
    // MR rights.
    let no_bind = BindMr {
        access: Access::LOCAL_WRITE,
        ..mr
    };
    assert!(check_bind(MwType::One, State::Valid, true, Some(&no_bind), &ok).is_err());
    let read_only = BindMr {
        access: Access::MW_BIND,
        ..mr
    };
    assert!(check_bind(MwType::One, State::Valid, true, Some(&read_only), &ok).is_err());
    let ro_req = req(0x1100, 0x100, Access::REMOTE_READ);
    assert_eq!(
        check_bind(MwType::One, State::Valid, true, Some(&read_only), &ro_req),
        Ok(())
    );
    // Range, including overflow.
    assert!(check_bind(
        MwType::One,
        State::Valid,
        true,
        Some(&mr),
        &req(0x1f00, 0x101, rw)
    )
    .is_err());
    assert!(check_bind(
        MwType::One,
        State::Valid,
        true,
        Some(&mr),
        &req(u64::MAX, 2, rw)
    )
    .is_err());
    // Zero based: type 2 only, and only length is checked.
    let zb = req(0x0, 0x1000, rw.union(Access::ZERO_BASED));
    assert!(check_bind(MwType::One, State::Valid, true, Some(&mr), &zb).is_err());
    assert_eq!(
        check_bind(MwType::Two, State::Free, true, Some(&mr), &zb),
        Ok(())
    );
    let zb_long = req(0x0, 0x1001, rw.union(Access::ZERO_BASED));
    assert!(check_bind(MwType::Two, State::Free, true, Some(&mr), &zb_long).is_err());
    // Unknown rights.
    let odd = req(0x1100, 0x100, Access::HUGETLB);
    assert_eq!(
        check_bind(MwType::One, State::Valid, true, Some(&mr), &odd),
        Err(RuleError::NotSupported)
    );
}
