// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! A send queue in memory for the completer ([`Sq`]): WQEs already sent,
//! the responses delivered to an inbox, and every retirement checked (in
//! order; a successful READ with all its data, an atomic with its value)
//! and recorded.

use crate::proto::completer::{CopyFault, Head, Response, Sq};
use crate::proto::psn::{psn_before, psn_diff};
use crate::proto::requester::{Progress, WqeInfo};
use crate::proto::uapi::{WcStatus, WrMask, WrOpcode};
use std::collections::{BTreeMap, VecDeque};
use std::vec::Vec;

/// A posted WQE as the requester and the completer see it.
pub(crate) struct SentWqe {
    pub(crate) info: WqeInfo,
    pub(crate) progress: Progress,
    /// The payload a SEND, WRITE or ATOMIC WRITE carries.
    pub(crate) data: Vec<u8>,
    /// Where a READ's response data and an atomic's original value land
    /// (left empty when a test does not keep them).
    pub(crate) local: Vec<u8>,
    pub(crate) rkey: u32,
    /// An atomic's add or swap operand.
    pub(crate) add: u64,
    pub(crate) imm: Option<u32>,
    /// The atomic's original value came back.
    pub(crate) atomic_done: bool,
}

impl SentWqe {
    /// A WQE with no payload, no local buffer and no remote key.
    pub(crate) fn new(info: WqeInfo, progress: Progress) -> SentWqe {
        SentWqe {
            info,
            progress,
            data: Vec::new(),
            local: Vec::new(),
            rkey: 0,
            add: 0,
            imm: None,
            atomic_done: false,
        }
    }
}

/// A response with its payload and an atomic's original value.
pub(crate) type Delivery = (Response, Vec<u8>, u64);

#[derive(Default)]
pub(crate) struct SqModel {
    pub(crate) wqes: Vec<SentWqe>,
    /// The oldest WQE not yet retired.
    pub(crate) consumer: usize,
    pub(crate) inbox: VecDeque<Delivery>,
    /// The response being handled.
    pub(crate) cur: Option<Delivery>,
    /// (WQE index, status) of every retirement, in order.
    pub(crate) retired: Vec<(usize, WcStatus)>,
    /// Successful completions by work request opcode.
    pub(crate) ok: [u64; 16],
    /// Print every retirement.
    pub(crate) trace: bool,
    /// A reorder buffer for read responses of this many PSNs after the
    /// expected one ([`Sq::hold_response`], as the driver's); none when 0.
    pub(crate) reorder: u32,
    /// The responses it holds, by PSN.
    pub(crate) held: BTreeMap<u32, Delivery>,
    /// Responses it took.
    pub(crate) held_taken: usize,
}

impl SqModel {
    /// Retirements in error.
    pub(crate) fn errors(&self) -> usize {
        self.retired
            .iter()
            .filter(|(_, s)| *s != WcStatus::Success)
            .count()
    }
}

impl Sq for SqModel {
    fn next_response(&mut self) -> Option<Response> {
        self.cur = self.inbox.pop_front();
        self.cur.as_ref().map(|c| c.0)
    }

    fn next_response_from(&mut self, comp_psn: u32) -> Option<Response> {
        self.held.retain(|&psn, _| !psn_before(psn, comp_psn));
        if let Some(d) = self.held.remove(&comp_psn) {
            self.held_taken += 1;
            self.cur = Some(d);
            return self.cur.as_ref().map(|c| c.0);
        }
        self.next_response()
    }

    fn hold_response(&mut self, comp_psn: u32) {
        let Some(d) = self.cur.take() else {
            return;
        };
        let ahead = psn_diff(d.0.psn, comp_psn);
        if ahead > 0 && (ahead as u32) < self.reorder && self.held.len() < 64 {
            self.held.entry(d.0.psn).or_insert(d);
        }
    }

    fn head(&mut self) -> Option<Head> {
        self.wqes.get(self.consumer).map(|w| Head {
            info: w.info,
            progress: w.progress,
        })
    }

    fn read_data(&mut self) -> Result<u32, CopyFault> {
        let payload = self.cur.as_ref().map_or(&[][..], |c| c.1.as_slice());
        let w = self.wqes.get_mut(self.consumer).ok_or(CopyFault)?;
        assert!(
            w.info.mask.intersects(WrMask::READ) || w.info.opcode == WrOpcode::Flush,
            "read data into {:?}",
            w.info.opcode
        );
        let n = payload.len() as u32;
        if n > w.progress.resid {
            return Err(CopyFault);
        }
        let off = (w.info.length - w.progress.resid) as usize;
        if let Some(dst) = w.local.get_mut(off..off + payload.len()) {
            dst.copy_from_slice(payload);
        }
        w.progress.resid -= n;
        Ok(w.progress.resid)
    }

    fn atomic_data(&mut self) -> Result<(), CopyFault> {
        let orig = self.cur.as_ref().map_or(0, |c| c.2);
        let w = self.wqes.get_mut(self.consumer).ok_or(CopyFault)?;
        assert!(
            w.info.mask.intersects(WrMask::ATOMIC),
            "atomic data into {:?}",
            w.info.opcode
        );
        if let Some(dst) = w.local.get_mut(..8) {
            dst.copy_from_slice(&orig.to_ne_bytes());
        }
        w.atomic_done = true;
        Ok(())
    }

    fn retire(&mut self, status: WcStatus) {
        let i = self.consumer;
        let w = self.wqes.get(i).expect("retired a WQE that is not there");
        assert_eq!(self.retired.len(), i, "retired out of order");
        if self.trace {
            std::println!(
                "RETIRE {i} {:?} psns {}..{} {status:?} by {:?}",
                w.info.opcode,
                w.progress.first_psn,
                w.progress.last_psn,
                self.cur.as_ref().map(|c| c.0)
            );
        }
        if status == WcStatus::Success {
            if w.info.opcode == WrOpcode::RdmaRead {
                assert_eq!(
                    w.progress.resid, 0,
                    "read completed without all its data: {:?} by {:?}",
                    w.progress, self.cur
                );
            }
            if w.info.mask.intersects(WrMask::ATOMIC) {
                assert!(w.atomic_done, "atomic completed without its value");
            }
            self.ok[w.info.opcode as usize] += 1;
        }
        self.retired.push((i, status));
        self.consumer += 1;
    }
}
