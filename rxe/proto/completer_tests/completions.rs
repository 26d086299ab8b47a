// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Completer tests of the state setters and the send completions it
//! reports, and the random run that checks its invariants.

use super::*;

#[test]
fn state_setters() {
    let mut c = State::new(0x0123_4567, 5, 6);
    assert_eq!(c.psn, 0x23_4567);
    c.set_sq_psn(PSN_MASK + 3);
    assert_eq!(c.psn, 2);
    c.set_retry_cnt(1);
    c.set_rnr_retry(7);
    assert_eq!(
        (c.retry_cnt, c.attr_retry_cnt, c.rnr_retry, c.attr_rnr_retry),
        (1, 1, 7, 7)
    );
    c.opcode = Some(Opcode::RcReadResponseFirst);
    c.started_retry = true;
    c.timer_fired();
    c.reset();
    assert_eq!(
        c,
        State {
            psn: 2,
            ..State::new(0, 1, 7)
        }
    );
}

#[test]
fn send_completions() {
    let all = [
        (WrOpcode::RdmaWrite, WcOpcode::RdmaWrite, 0),
        (
            WrOpcode::RdmaWriteWithImm,
            WcOpcode::RdmaWrite,
            wc_flags::WITH_IMM,
        ),
        (WrOpcode::Send, WcOpcode::Send, 0),
        (WrOpcode::SendWithImm, WcOpcode::Send, wc_flags::WITH_IMM),
        (WrOpcode::SendWithInv, WcOpcode::Send, 0),
        (WrOpcode::RdmaRead, WcOpcode::RdmaRead, 0),
        (WrOpcode::AtomicCmpAndSwp, WcOpcode::CompSwap, 0),
        (WrOpcode::AtomicFetchAndAdd, WcOpcode::FetchAdd, 0),
        (WrOpcode::LocalInv, WcOpcode::LocalInv, 0),
        (WrOpcode::BindMw, WcOpcode::BindMw, 0),
        (WrOpcode::RegMr, WcOpcode::RegMr, 0),
        (WrOpcode::Flush, WcOpcode::Flush, 0),
        (WrOpcode::AtomicWrite, WcOpcode::AtomicWrite, 0),
    ];
    for (wr, op, flags) in all {
        let info = WqeInfo::new(wr, qp::Type::Rc, SendFlags(0), 1234, 0);
        assert_eq!(
            send_cqe(&info, WcStatus::Success),
            SendCqe {
                opcode: op,
                wc_flags: flags,
                byte_len: 1234
            }
        );
        assert_eq!(
            send_cqe(&info, FLUSH_STATUS),
            SendCqe {
                opcode: WcOpcode::Send,
                wc_flags: 0,
                byte_len: 0
            }
        );
    }
    let sig = SendFlags(SendFlags::SIGNALED);
    assert!(must_post(true, SendFlags(0), WcStatus::Success));
    assert!(must_post(false, sig, WcStatus::Success));
    assert!(!must_post(
        false,
        SendFlags(SendFlags::FENCE),
        WcStatus::Success
    ));
    assert!(must_post(false, SendFlags(0), WcStatus::RetryExcErr));
    assert!(must_post(false, SendFlags(0), FLUSH_STATUS));
}

#[test]
fn fuzz_never_panics_and_keeps_invariants() {
    let mut rng = Rng::new(0xc0ffee);
    let wrs = [
        WrOpcode::Send,
        WrOpcode::SendWithImm,
        WrOpcode::RdmaWrite,
        WrOpcode::RdmaRead,
        WrOpcode::AtomicCmpAndSwp,
        WrOpcode::AtomicFetchAndAdd,
        WrOpcode::AtomicWrite,
        WrOpcode::Flush,
        WrOpcode::LocalInv,
    ];
    let states = [
        WqeState::Posted,
        WqeState::Processing,
        WqeState::Pending,
        WqeState::Done,
        WqeState::Error,
    ];
    let acks: Vec<Opcode> = ALL.iter().copied().filter(|o| o.has(Mask::ACK)).collect();
    let mut errors = 0;
    for _ in 0..100_000 {
        let base = rng.u32() & PSN_MASK;
        let mut f = Fixture::new(base, psn_add(base, rng.below(300)));
        f.comp.opcode = rng.pick(&[
            None,
            Some(Opcode::RcReadResponseFirst),
            Some(Opcode::RcReadResponseMiddle),
        ]);
        f.comp.retry_cnt = rng.below(8) as u8;
        f.comp.rnr_retry = rng.below(8) as u8;
        f.comp.started_retry = rng.bool();
        f.comp.timeout = rng.bool();
        f.req.need_retry = rng.chance(10);
        f.req.need_rd_atomic = rng.bool();
        f.sq.fault = rng.chance(5);
        let mut psn = psn_sub(base, rng.below(3));
        for _ in 0..rng.below(5) {
            let len = rng.below(5000);
            let n = rng.below(6);
            let mut h = head(rng.pick(&wrs), len, psn, psn_add(psn, n), rng.pick(&states));
            h.progress.resid = rng.below(len + 1);
            h.progress.status = WcStatus::LocQpOpErr;
            f.wqe(h);
            psn = psn_add(psn, n + 1);
        }
        for _ in 0..rng.below(4) {
            let r = Response {
                opcode: rng.pick(&acks),
                psn: psn_add(base, rng.below(40)).wrapping_sub(20) & PSN_MASK,
                syndrome: rng.u32() as u8,
            };
            f.resp(r, rng.below(2000));
        }
        let total = f.sq.wqes.len();
        let credits = f.req.rd_atomic;
        let mut runs = 0;
        loop {
            let o = f.run();
            runs += 1;
            assert!(f.comp.psn <= PSN_MASK);
            if o.qp_error {
                errors += 1;
                let last = f.sq.retired.last().expect("an error retires a WQE");
                assert_ne!(last.1, WcStatus::Success);
                break;
            }
            if let Some(t) = o.rnr_timer {
                assert!(t < 32 && f.req.wait_for_rnr_timer);
            }
            if !o.progress || runs > 20 {
                break;
            }
            f.req.need_retry = false;
        }
        assert!(f.sq.retired.len() <= total);
        // Credits only come back for WQEs that held one.
        let held = f.sq.retired.len() as u32;
        assert!(f.req.rd_atomic <= credits + held);
    }
    assert!(errors > 1000, "{errors}");
}
