// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Completion queues: creation and resize of the ring user space polls,
//! polling and arming for kernel consumers, and the producer side the
//! datapath posts completions through.
//!
//! Interface for the rest of the driver:
//! - `Cq` is what the core allocates; `Cq::shared` is what QPs keep. The
//!   core refuses to destroy a CQ its QPs use (its `usecnt`); a QP that
//!   outlives its destroy op (work in flight) finds the CQ severed.
//! - [`CqShared::produce`] queues a completion (receive completions carry the
//!   packet's network facts to kernel consumers) and notes whether the
//!   consumer's completion handler (or CQ error event) is due;
//!   [`CqShared::run_due`] runs it once the poster holds no QP lock.
//!
//! Locks: `link` (the core's `ib_cq`, held while its callbacks run) nests
//! outside `inner` (the ring and its arming). Completion handlers run with
//! `link` held but not `inner`, so a handler may poll or re-arm the CQ, but
//! must not complete work into the same CQ synchronously (nor could it with
//! the C driver, which runs handlers under its CQ lock). Producers hold QP
//! locks and take only `inner`: a handler under `link` may take QP locks
//! (post, modify), so `link` is never taken under one.
//!
//! `inner` masks interrupts, not just softirqs: kernel consumers poll and
//! arm from any context, ib_srp's IB_POLL_DIRECT send CQ under its own
//! `spin_lock_irqsave`. Releasing a `_bh` lock there would turn softirqs
//! back on with interrupts off and run pending ones (its receive CQ's
//! irq_poll among them, which takes the lock ib_srp holds) on that stack.

use kernel::{prelude::*, sync::Arc};

use crate::rxe::device::{Device, ObjCount, ObjKind};
use crate::rxe::kapi::cq_srq::{self, CqLink};
use crate::rxe::kapi::lock::{new_spinlock_irq, SpinLockIrq};
use crate::rxe::kapi::object::QpHandle;
use crate::rxe::proto::cq_srq::{check_cqe, Notify, RecvNet};
use crate::rxe::proto::res_details::CqDetails;
use crate::rxe::proto::uapi::{
    cq_geometry, create_cq_resp, resp, Cqe, MmInfo, SizeError, CQE_LEN, DEFAULT_CACHE_LINE,
};
use crate::rxe::queue::{Queue, Role};
use crate::rxe::ucontext::{Ucontext, UserCall};

/// Consumer callbacks that completions made due, run after the poster's
/// QP locks are released ([`CqShared::produce`], [`CqShared::run_due`]).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Due {
    /// The completion handler (the CQ was armed).
    comp: bool,
    /// The CQ error event (a completion found the CQ full).
    overrun: bool,
}

impl Due {
    pub(crate) const NONE: Self = Self {
        comp: false,
        overrun: false,
    };
}

/// A completion queue, as the core holds it.
pub(crate) struct Cq {
    pub(crate) shared: Arc<CqShared>,
    _slot: ObjCount,
}

struct Inner {
    queue: Queue,
    notify: Notify,
    /// Where `queue` is published for mmap, until destroy or a resize
    /// takes it back (a no-op once user space has mapped it).
    mmap: Option<u64>,
    /// Cleared by destroy: completions are refused from then on. (Not the
    /// link's state: the link is held across the consumer's handler, which
    /// may take QP locks, so producers, which hold them, must not take it.)
    live: bool,
}

/// The part of a CQ its QPs reach.
#[pin_data]
pub(crate) struct CqShared {
    #[pin]
    link: CqLink,
    #[pin]
    inner: SpinLockIrq<Inner>,
    /// User space polls the ring (it holds `ib_uverbs_wc`s); else a kernel
    /// consumer polls through `poll_cq` (the ring holds `ib_wc`s).
    is_user: bool,
}

fn queue_error(e: SizeError) -> Error {
    match e {
        SizeError::Invalid => EINVAL,
        SizeError::TooLarge => ENOMEM,
    }
}

/// A queue buffer published for mmap while its verb may still fail: it is
/// unpublished on drop unless `keep` is called.
pub(crate) struct Published<'a> {
    pending: Option<(&'a UserCall<'a>, u64)>,
}

impl<'a> Published<'a> {
    /// Publishes `queue` in the caller's context (nothing for kernel callers).
    pub(crate) fn new(
        queue: &Queue,
        user: Option<&'a UserCall<'a>>,
    ) -> Result<(Self, Option<MmInfo>)> {
        let Some(u) = user else {
            return Ok((Self { pending: None }, None));
        };
        let mi = u.ctx.publish(queue.buf().clone())?;
        Ok((
            Self {
                pending: Some((u, mi.offset)),
            },
            Some(mi),
        ))
    }

    /// The offset the buffer is published at.
    pub(crate) fn offset(&self) -> Option<u64> {
        self.pending.map(|(_, offset)| offset)
    }

    /// The verb succeeded: the buffer stays mappable until the object
    /// unpublishes it (on destroy or a later resize).
    pub(crate) fn keep(mut self) {
        self.pending = None;
    }
}

impl Drop for Published<'_> {
    fn drop(&mut self) {
        if let Some((u, offset)) = self.pending.take() {
            u.ctx.unpublish(offset);
        }
    }
}

/// A new ring of at least `cqe` entries; for user space published, with its
/// mmap info written to the response.
fn new_ring<'a>(cqe: u32, user: Option<&'a UserCall<'a>>) -> Result<(Queue, Published<'a>)> {
    let queue = Queue::new(
        cq_geometry(cqe, DEFAULT_CACHE_LINE).map_err(queue_error)?,
        Role::Producer,
    )?;
    let (published, mi) = Published::new(&queue, user)?;
    if let (Some(u), Some(mi)) = (user, mi) {
        u.udata.write_out(&create_cq_resp(mi))?;
    }
    Ok((queue, published))
}

impl Cq {
    /// `create_cq`: a CQ of at least `cqe` entries (the C `int` the verbs
    /// pass). Check order and errnos follow `rxe_create_cq()`.
    pub(crate) fn new(
        dev: &Device,
        cqe: i32,
        flags: u32,
        user: Option<&UserCall<'_>>,
    ) -> Result<Self> {
        if user.is_some_and(|u| u.udata.outlen() < resp::CREATE_CQ_LEN) {
            return Err(EINVAL);
        }
        if flags != 0 {
            return Err(crate::rxe::kapi::errno::eopnotsupp());
        }
        let cqe = check_cqe(cqe, None).map_err(|_| EINVAL)?;
        let slot = dev.state().take_slot(ObjKind::Cq)?;
        let (queue, published) = new_ring(cqe, user)?;
        let mmap = published.offset();
        let shared = Arc::pin_init(
            pin_init!(CqShared {
                link <- CqLink::new(),
                inner <- new_spinlock_irq!(
                    Inner {
                        queue,
                        notify: Notify::default(),
                        mmap,
                        live: true,
                    },
                    "rxe_cq"
                ),
                is_user: user.is_some(),
            }),
            GFP_KERNEL,
        )?;
        published.keep();
        Ok(Self {
            shared,
            _slot: slot,
        })
    }

    /// Entries the CQ holds: what the core reports as `cqe`.
    pub(crate) fn capacity(&self) -> u32 {
        self.shared.inner.lock().queue.capacity()
    }

    /// The fill state `rdma resource show cq -dd` prints.
    pub(crate) fn details(&self) -> CqDetails {
        let inner = self.shared.inner.lock();
        CqDetails {
            cqe_used: inner.queue.count(),
            cqe_max: inner.queue.capacity(),
            armed: inner.notify.armed(),
        }
    }

    /// `resize_cq`: a new ring of at least `cqe` entries that takes over the
    /// completions waiting in the old one. Returns the new capacity.
    pub(crate) fn resize(&self, cqe: i32, user: Option<&UserCall<'_>>) -> Result<u32> {
        if user.is_some_and(|u| u.udata.outlen() < resp::RESIZE_CQ_LEN) {
            return Err(EINVAL);
        }
        let count = self.shared.inner.lock().queue.count();
        let cqe = check_cqe(cqe, Some(count)).map_err(|_| EINVAL)?;
        let (mut queue, published) = new_ring(cqe, user)?;
        let capacity = queue.capacity();
        let old_mmap = {
            let mut inner = self.shared.inner.lock();
            // More completions may have arrived since the check above.
            inner.queue.drain_into(&mut queue, CQE_LEN)?;
            core::mem::swap(&mut inner.queue, &mut queue);
            core::mem::replace(&mut inner.mmap, published.offset())
        };
        published.keep();
        // The old ring is freed here, outside the lock, unless mapped.
        unpublish(user, old_mmap);
        drop(queue);
        Ok(capacity)
    }

    /// `destroy_cq`, with the caller's context (`None` for kernel callers).
    pub(crate) fn destroy(&self, ctx: Option<&Ucontext>) -> Result {
        self.shared.destroy()?;
        let mmap = self.shared.inner.lock().mmap.take();
        if let (Some(ctx), Some(offset)) = (ctx, mmap) {
            ctx.unpublish(offset);
        }
        Ok(())
    }
}

/// Takes back the old ring of a resize if it was never mapped, as rdma_rxe
/// frees its pending mmap info with the queue.
pub(crate) fn unpublish(user: Option<&UserCall<'_>>, offset: Option<u64>) {
    if let (Some(u), Some(offset)) = (user, offset) {
        u.ctx.unpublish(offset);
    }
}

impl CqShared {
    /// `destroy_cq`: cuts the CQ off from the core object, which the core
    /// frees next.
    pub(crate) fn destroy(&self) -> Result {
        self.link.sever();
        self.inner.lock().live = false;
        Ok(())
    }

    /// Queues a completion of `qp` (a send, or a receive without network
    /// facts; `net` gives a kernel consumer the packet's network header type
    /// and VLAN) and notes in `due` the consumer callbacks it makes due,
    /// which [`Self::run_due`] runs. The ring entry is in place on return,
    /// so completions keep the order of the calls; the callbacks wait until
    /// the caller has released its QP locks, so that a handler can call back
    /// into the QP. `solicited`: the completion answers a solicited event.
    ///
    /// Fails with `EBUSY` when the CQ is full (the CQ error event is then
    /// due), or `EINVAL` once the CQ is destroyed.
    pub(crate) fn produce(
        &self,
        cqe: &Cqe,
        qp: QpHandle,
        solicited: bool,
        net: Option<RecvNet>,
        due: &mut Due,
    ) -> Result {
        let slot = if self.is_user {
            let mut s = [0u8; CQE_LEN];
            cqe.write(&mut s).map_err(|_| EINVAL)?;
            s
        } else {
            cq_srq::kernel_wc(cqe, qp, net)
        };
        let mut inner = self.inner.lock();
        if !inner.live {
            return Err(EINVAL);
        }
        if inner.queue.is_full() {
            due.overrun = true;
            return Err(EBUSY);
        }
        inner.queue.produce(&slot)?;
        if inner.notify.on_completion(solicited) {
            due.comp = true;
        }
        Ok(())
    }

    /// Runs the consumer callbacks [`Self::produce`] made due (once each,
    /// however many completions asked), and clears `due`. Call with no QP
    /// lock held.
    pub(crate) fn run_due(&self, due: &mut Due) {
        if !due.comp && !due.overrun {
            return;
        }
        let link = self.link.lock();
        if due.overrun {
            link.overrun_event();
        }
        if due.comp {
            link.comp_handler();
        }
        *due = Due::NONE;
    }

    /// `poll_cq` of a kernel consumer: hands up to `max` completions, oldest
    /// first, to `out` (with their index) and returns how many.
    pub(crate) fn poll(&self, max: usize, mut out: impl FnMut(usize, &[u8; CQE_LEN])) -> usize {
        let mut slot = [0u8; CQE_LEN];
        let mut inner = self.inner.lock();
        let mut n = 0;
        while n < max {
            match inner.queue.kernel_consume(&mut slot) {
                Ok(true) => out(n, &slot),
                _ => break,
            }
            n += 1;
        }
        n
    }

    /// Completions waiting.
    pub(crate) fn count(&self) -> u32 {
        self.inner.lock().queue.count()
    }

    /// `req_notify_cq` with `enum ib_cq_notify_flags`; returns the verb's
    /// result (1: completions are already waiting and the caller asked).
    pub(crate) fn req_notify(&self, flags: u32) -> i32 {
        let mut inner = self.inner.lock();
        let empty = inner.queue.is_empty();
        inner.notify.arm(flags, empty)
    }

    /// The link to the core's CQ, for the create op to attach.
    pub(crate) fn link(&self) -> &CqLink {
        &self.link
    }
}
