// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Where the engines meet the QP: the receive path hands packets to the
//! responder or the completer, the doorbell and the kicks run or schedule
//! the send task (completer, then requester) and the responder's task,
//! and the state changes of the verbs level (ERR, RESET, destroy) stop or
//! flush them. The lock order is in the parent module's doc.

use core::sync::atomic::{fence, AtomicBool, Ordering};

use kernel::sync::Arc;

use super::{QpShared, State, Type, SEND_TASK};
use crate::rxe::counters::{self, Counter};
use crate::rxe::kapi::event::QpEvent;
use crate::rxe::kapi::task::{Progress, TaskOwner};
use crate::rxe::proto::params::pacing::INLINE_STEPS;
use crate::rxe::recv::RxPacket;
use crate::rxe::{completer, requester};

impl QpShared {
    /// A packet for this QP passed the receive checks: the responder takes
    /// requests, the completer acknowledgements. Datapath hook.
    pub(crate) fn receive(self: &Arc<Self>, pkt: RxPacket) {
        use crate::rxe::proto::opcode::Mask;
        let to_comp = pkt.mask().intersects(Mask::ACK);
        let single = pkt.mask().contains(Mask::ONLY);
        // A packet from the network that finds its engine idle is handled
        // in the receive softirq: a worker wake-up and a context switch
        // less per message. Two kinds wait for the end of the receive
        // softirq's batch (`schedule_bh`), so that the packets of one batch
        // for this QP are handled in one run: a single-packet request (the
        // small messages of a message-rate load; the responder then
        // acknowledges them with one ACK), and a packet of a multi-packet
        // read response (the completer takes a window of them per step).
        // Packets that arrive while that run is still to come join it
        // (`Task::schedule` leaves a listed task to its softirq run).
        // Everything else runs right here (batching the request packets of
        // long messages stalled them: a fixed-clock A/B lost 70% of 64 KiB
        // bandwidth). Either run is cut short after
        // `INLINE_STEPS` steps (a read request's reply or a window of
        // requests the acknowledgement opened can be a long run of packets)
        // and a worker does the rest. Looped-back packets are queued: a reply
        // would recurse through the sender. Responses go to the send task,
        // which runs the completer and then the requester the acknowledgement
        // may have unblocked; the two never overlap, so the completer cannot
        // retire a message the requester is still sending.
        let inline = !pkt.is_loopback();
        let fifo = if to_comp {
            &self.comp_pkts
        } else {
            &self.resp_pkts
        };
        let (queued, alone) = {
            let mut f = fifo.lock();
            let alone = f.is_empty();
            (f.push(pkt), alone)
        };
        // A full queue drops the packet: the peer retransmits.
        if let Err(pkt) = queued {
            pkt.drop_for(Counter::RcvdQueueFull);
            return;
        }
        if to_comp {
            self.want_comp.store(true, Ordering::Release);
            if inline && alone && single {
                self.send_task.run_for(self, INLINE_STEPS);
            } else if inline && alone {
                self.send_task.schedule_bh(self);
            } else {
                counters::inc(&self.dev, Counter::AckDeferred);
                self.send_task.schedule(self);
            }
        } else if inline && alone && single {
            self.resp_task.schedule_bh(self);
        } else if inline && alone {
            self.resp_task.run_for(self, INLINE_STEPS);
        } else {
            self.resp_task.schedule(self);
        }
    }

    /// Schedules the requester; it ends an SQD drain once nothing is in
    /// flight.
    pub(crate) fn kick_requester(self: &Arc<Self>) {
        self.want_req.store(true, Ordering::Release);
        self.send_task.schedule(self);
    }

    /// Schedules the completer: responses, a retransmit timeout, WQEs to
    /// retire or flush.
    pub(crate) fn kick_completer(self: &Arc<Self>) {
        self.want_comp.store(true, Ordering::Release);
        self.send_task.schedule(self);
    }

    /// The doorbell of a user QP, in the process context of the post_send
    /// system call, with no lock held (`rts`: the QP is in RTS). While an
    /// RC QP in RTS has its retransmit timer armed (packets in flight await
    /// an acknowledgement), it only marks the requester wanted: that
    /// acknowledgement, or the timer, runs the send task, whose requester
    /// then sends what was posted meanwhile as one batch, with one
    /// notification of the device, instead of one packet per system call.
    /// Otherwise the requester runs now in the caller's context when it is
    /// idle (else it is scheduled): it saves the hand-off to a worker per
    /// message that rdma_rxe 6.12 makes there (`rxe_sched_task`).
    pub(crate) fn ring_doorbell(self: &Arc<Self>, rts: bool) {
        self.want_req.store(true, Ordering::Release);
        if rts && self.qp_type == Type::Rc {
            // Pairs with the fence after the completer disarms the timer:
            // either this sees the timer disarmed and runs the requester,
            // or the send task's requester half sees `want_req`.
            fence(Ordering::SeqCst);
            if self.retrans_timer.pending() {
                return;
            }
        }
        self.send_task.run(self);
    }

    /// Schedules the responder (receive WQEs posted on a QP in error are to
    /// be flushed). Datapath hook.
    pub(crate) fn kick_responder(self: &Arc<Self>) {
        self.resp_task.schedule(self);
    }

    /// The QP entered ERR: the datapath flushes both queues with error
    /// completions. Datapath hook.
    pub(crate) fn on_error(self: &Arc<Self>) {
        self.want_comp.store(true, Ordering::Release);
        self.kick_requester();
        self.resp_task.schedule(self);
    }

    /// The QP entered RESET: the datapath stops its work and drops packets
    /// in flight before the rings are emptied. Datapath hook.
    pub(super) fn on_reset(self: &Arc<Self>) {
        self.send_task.disable();
        self.resp_task.disable();
        self.retrans_timer.cancel(self);
        self.rnr_timer.cancel(self);
        self.comp_pkts.lock().clear();
        self.resp_pkts.lock().clear();
        self.faults.forget();
        requester::reset(self);
        self.send_task.enable();
        self.resp_task.enable();
    }

    /// The QP is being destroyed and already out of the pool: the datapath
    /// stops its tasks and timers and waits for those running. Datapath hook.
    pub(super) fn on_destroy(self: &Arc<Self>) {
        // Faults in progress are not waited for: they end on their own and
        // no longer kick the QP.
        self.faults.close();
        self.send_task.shutdown();
        self.resp_task.shutdown();
        self.retrans_timer.shutdown(self);
        self.rnr_timer.shutdown(self);
        // No requester runs any more to arm it: break the QP -> waker cycle.
        self.flow.waker().disarm();
        self.comp_pkts.lock().clear();
        self.resp_pkts.lock().clear();
        // Packets held for reordering keep their device referenced.
        self.req.lock().responses.clear();
        self.resp_forget();
    }

    /// One step of the send task: the completer if it has work, then the
    /// requester if it has. A half that reports more work keeps its flag
    /// for the next step.
    fn send_step(self: &Arc<Self>) -> Progress {
        let mut more = false;
        let mut half = |want: &AtomicBool, step: fn(&Arc<Self>) -> Progress| {
            if !want.swap(false, Ordering::AcqRel) {
                return;
            }
            if step(self) == Progress::More {
                want.store(true, Ordering::Release);
                more = true;
            }
        };
        half(&self.want_comp, completer::step);
        half(&self.want_req, requester::step);
        if more {
            Progress::More
        } else {
            Progress::Done
        }
    }

    /// Ends an SQD drain once nothing is in flight: clears `sq_draining`
    /// and raises `IB_EVENT_SQ_DRAINED`. For the requester to call.
    pub(crate) fn finish_sq_drain(&self) {
        let drained = {
            let mut s = self.status_mut();
            let done = s.valid && s.attrs.state == State::Sqd && s.attrs.sq_draining;
            if done {
                s.attrs.sq_draining = false;
            }
            done
        };
        if drained {
            self.link.dispatch(QpEvent::SqDrained);
        }
    }
}

impl TaskOwner<SEND_TASK> for QpShared {
    fn step(this: &Arc<Self>) -> Progress {
        this.send_step()
    }
}
