// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The responder's replies that carry data or results back: RDMA READ
//! responses, atomic and atomic write replies, and FLUSH, whose write-back
//! goes a piece per run.

use super::*;

impl<I: Io> Run<'_, I> {
    pub(super) fn read_reply(&mut self, p: &Request) -> St {
        let i = match self.st.cur {
            Some(i) => i,
            None => match self.st.prepare_res(ResKind::Read, p, self.qp.mtu) {
                Some(i) => i,
                None => return St::Err(RespError::TooManyRdmaAtmReq),
            },
        };
        let (mtu, msn) = (self.qp.mtu, self.st.msn);
        let Some(res) = self.st.res.get_mut(i).filter(|r| r.kind == ResKind::Read) else {
            // Only a read reply spans runs; anything else is stale.
            self.st.cur = None;
            return St::ChkPsn;
        };
        let prev_state = res.state;
        let (opcode, source) = if res.state == ResState::New {
            // A first response that stopped at an absent ODP page and runs
            // again no longer holds the MR: it looks the key up again.
            let src = if res.length == 0 || (!res.replay && self.mr_held) {
                ReadSource::Held
            } else {
                ReadSource::Recheck(res.rkey)
            };
            let op = if res.resid <= mtu {
                Opcode::RcReadResponseOnly
            } else {
                Opcode::RcReadResponseFirst
            };
            (op, src)
        } else {
            let op = if res.resid > mtu {
                Opcode::RcReadResponseMiddle
            } else {
                Opcode::RcReadResponseLast
            };
            (op, ReadSource::Recheck(res.rkey))
        };
        res.state = ResState::Next;
        let len = res.resid.min(mtu);
        let r = ReadResponse {
            opcode,
            psn: res.cur_psn,
            msn,
            va: res.va,
            len,
            source,
        };
        self.flush_ack();
        let sent = self.io.send_read_response(&r);
        if source == ReadSource::Held {
            self.release_mr();
        }
        if sent.is_err() && self.io.absent() {
            // Nothing went out: the same response is sent again later.
            if let Some(res) = self.st.res.get_mut(i) {
                res.state = prev_state;
            }
            return St::Fault;
        }
        if let Err(e) = sent {
            self.st.cur = None;
            return St::Err(match e {
                SendFailed::Send => RespError::Rnr,
                SendFailed::Access => RespError::RkeyViolation,
            });
        }
        let Some(res) = self.st.res.get_mut(i) else {
            return St::Cleanup;
        };
        res.va = res.va.wrapping_add(u64::from(len));
        res.resid -= len;
        res.cur_psn = psn_add(res.cur_psn, 1);
        if res.resid > 0 {
            return St::Done;
        }
        let (replay, cur_psn) = (res.replay, res.cur_psn);
        self.st.cur = None;
        if !replay {
            self.st.opcode = None;
        }
        if !psn_before(cur_psn, self.st.psn) {
            self.st.psn = cur_psn;
        }
        St::Cleanup
    }

    /// What [`Run::reply_res`] may change, to put back when the reply stops
    /// at an absent ODP page.
    pub(super) fn res_undo(&self) -> ResUndo {
        let slot = if self.st.cur.is_none() && self.st.res_count > 0 {
            let i = self.st.res_head.min(self.st.res_count - 1);
            self.st.res.get(i).map(|r| (i, *r))
        } else {
            None
        };
        ResUndo {
            res_head: self.st.res_head,
            cur: self.st.cur,
            slot,
        }
    }

    pub(super) fn res_restore(&mut self, u: ResUndo) {
        self.st.res_head = u.res_head;
        self.st.cur = u.cur;
        if let Some((i, r)) = u.slot {
            if let Some(s) = self.st.res.get_mut(i) {
                *s = r;
            }
        }
    }

    /// The resource of an atomic, atomic write or flush reply: the replayed
    /// one, or a new one.
    pub(super) fn reply_res(&mut self, kind: ResKind, p: &Request) -> Option<usize> {
        match self.st.cur {
            Some(i) => Some(i),
            None => self.st.prepare_res(kind, p, self.qp.mtu),
        }
    }

    pub(super) fn atomic_reply(&mut self, p: &Request) -> St {
        let undo = self.res_undo();
        let Some(i) = self.reply_res(ResKind::Atomic, p) else {
            return St::Err(RespError::TooManyRdmaAtmReq);
        };
        if self.st.res.get(i).is_some_and(|r| r.replay) {
            return St::Acknowledge;
        }
        let a = p.atmeth.unwrap_or_default();
        let op = if p.opcode == Opcode::RcCompareSwap {
            AtomicOp::CompareSwap {
                compare: a.compare,
                swap: a.swap_add,
            }
        } else {
            AtomicOp::FetchAdd { add: a.swap_add }
        };
        match self.io.atomic(self.st.va, op) {
            Ok(orig) => {
                if let Some(r) = self.st.res.get_mut(i) {
                    r.orig = orig;
                }
                self.st.executed(p, true);
                self.status = WcStatus::Success;
                St::Acknowledge
            }
            Err(_) if self.io.absent() => {
                self.res_restore(undo);
                St::Fault
            }
            Err(AtomicError::Misaligned) => St::Err(RespError::MisalignedAtomic),
            Err(AtomicError::Access) => St::Err(RespError::RkeyViolation),
        }
    }

    pub(super) fn atomic_write_reply(&mut self, p: &Request) -> St {
        let undo = self.res_undo();
        let Some(i) = self.reply_res(ResKind::AtomicWrite, p) else {
            return St::Err(RespError::TooManyRdmaAtmReq);
        };
        if self.st.res.get(i).is_some_and(|r| r.replay) {
            return St::Acknowledge;
        }
        match self.io.atomic_write(self.st.va) {
            Ok(()) => {
                self.st.resid = 0;
                self.st.executed(p, true);
                self.status = WcStatus::Success;
                St::Acknowledge
            }
            Err(_) if self.io.absent() => {
                self.res_restore(undo);
                St::Fault
            }
            Err(AtomicError::Misaligned) => St::Err(RespError::MisalignedAtomic),
            Err(AtomicError::Access) => St::Err(RespError::RkeyViolation),
        }
    }

    pub(super) fn process_flush(&mut self, p: &Request) -> St {
        let Some(i) = self.reply_res(ResKind::Flush, p) else {
            return St::Err(RespError::TooManyRdmaAtmReq);
        };
        let Some(res) = self.st.res.get(i).copied() else {
            return St::Err(RespError::TooManyRdmaAtmReq);
        };
        if res.replay {
            return St::Acknowledge;
        }
        if res.flush_type & FLUSH_PERSISTENT == 0 {
            return self.flush_done(p, res.flush_type & FLUSH_GLOBAL != 0);
        }
        // The write-back covers the range, or the whole region, and goes
        // piece by piece from here (`flush_piece`).
        let range = if res.flush_level != 0 {
            self.io.region_bounds()
        } else {
            Some((res.va, u64::from(res.length)))
        };
        let Some((start, end)) = range.and_then(|(va, len)| Some((va, va.checked_add(len)?)))
        else {
            return St::Err(RespError::RkeyViolation);
        };
        if let Some(r) = self.st.res.get_mut(i) {
            r.flush_next = start;
            r.flush_end = end;
        }
        self.flush_piece(i, p)
    }

    /// Whether the head request is a FLUSH whose write-back an earlier run
    /// left unfinished.
    pub(super) fn flush_pending(&self) -> bool {
        self.st
            .cur
            .and_then(|i| self.st.res.get(i))
            .is_some_and(|r| r.flush_pending())
    }

    /// The next piece of the write-back [`Run::process_flush`] began: the
    /// key is looked up again, as the region may have gone since.
    pub(super) fn resume_flush(&mut self, p: &Request) -> St {
        let Some(i) = self.st.cur else {
            return St::ChkPsn;
        };
        let Some(res) = self.st.res.get(i).copied() else {
            return St::ChkPsn;
        };
        if !p.has(Mask::FLUSH) || p.psn != res.first_psn {
            // Not the request the write-back belongs to: forget it.
            self.stop_flush(i);
            self.st.cur = None;
            return St::ChkPsn;
        }
        let t = Target {
            rkey: res.rkey,
            access: flush_rights(res.flush_type),
            va: res.flush_next,
            len: 0,
            check_range: false,
        };
        if self.io.lookup(&t).is_err() {
            self.stop_flush(i);
            return St::Err(RespError::RkeyViolation);
        }
        self.mr_held = true;
        self.flush_piece(i, p)
    }

    /// Writes back one piece of resource `i`'s range; acknowledges the
    /// FLUSH after the last.
    pub(super) fn flush_piece(&mut self, i: usize, p: &Request) -> St {
        let Some(res) = self.st.res.get(i).copied() else {
            return St::Err(RespError::TooManyRdmaAtmReq);
        };
        let (next, end) = (res.flush_next, res.flush_end);
        let piece_end = flush_piece_end(next, end);
        if piece_end > next && self.io.flush(next, piece_end - next).is_err() {
            self.stop_flush(i);
            return St::Err(RespError::RkeyViolation);
        }
        if let Some(r) = self.st.res.get_mut(i) {
            r.flush_next = piece_end;
        }
        if piece_end < end {
            return St::FlushMore;
        }
        self.flush_done(p, true)
    }

    /// Ends the write-back of resource `i` where it stands.
    pub(super) fn stop_flush(&mut self, i: usize) {
        if let Some(r) = self.st.res.get_mut(i) {
            r.flush_end = r.flush_next;
        }
    }

    /// The end of a FLUSH: the barrier, when it asks for placement, then
    /// the bookkeeping of an executed request.
    pub(super) fn flush_done(&mut self, p: &Request, barrier: bool) -> St {
        if barrier {
            self.io.flush_barrier();
        }
        self.st.executed(p, true);
        self.status = WcStatus::Success;
        St::Acknowledge
    }
}
