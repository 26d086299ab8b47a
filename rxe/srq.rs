// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! SrqShared receive queues: creation, resize and the limit event, receives
//! posted by kernel users, and the consumer side the responder takes
//! receive WQEs from.
//!
//! Interface for the rest of the driver:
//! - `Srq` is what the core allocates; `Srq::shared` is what QPs keep.
//! - [`SrqShared::take`] hands the responder the next receive WQE, validated,
//!   and fires the limit event when the queue drains below an armed limit.
//!
//! Locks: `link` (the core's `ib_srq`, held while its event handler runs)
//! is never taken with `inner` (the ring, its limits and the armed limit)
//! held.

use kernel::{prelude::*, sync::Arc};

use crate::rxe::cq::{unpublish, Published};
use crate::rxe::device::{Device, ObjCount, ObjKind};
use crate::rxe::kapi::cq_srq::{RecvWr, SrqLink};
use crate::rxe::kapi::errno;
use crate::rxe::kapi::lock::{new_spinlock_irq, SpinLockIrq};
use crate::rxe::kapi::udata;
use crate::rxe::proto::conv::to_usize;
use crate::rxe::proto::cq_srq::{
    build_recv_wqe, check_srq_modify, srq_limit_reached, PostRecvError, SrqNow, RECV_WQE_MAX,
};
use crate::rxe::proto::uapi::{
    create_srq_resp, modify_srq_cmd, recv_wqe, resp, sge, srq_geometry, RecvWqe, SizeError,
    WqeError, DEFAULT_CACHE_LINE,
};
use crate::rxe::queue::{Queue, Role};
use crate::rxe::ucontext::{Ucontext, UserCall};

pub(crate) use crate::rxe::proto::cq_srq::SrqAttr as Attr;

/// A shared receive queue, as the core holds it.
pub(crate) struct Srq {
    pub(crate) shared: Arc<SrqShared>,
    _slot: ObjCount,
}

struct Inner {
    queue: Queue,
    /// SGEs per WQE the ring was created for (fixed for its life).
    max_sge: u32,
    /// The armed limit, 0 when not armed.
    limit: u32,
    /// Where `queue` is published for mmap, until destroy or a resize
    /// takes it back (a no-op once user space has mapped it).
    mmap: Option<u64>,
}

impl Inner {
    /// Bytes of a slot a WQE may use: the fixed part and `max_sge` SGEs.
    fn wqe_len(&self) -> usize {
        // max_sge is at most 27 (checked at create), so this is small.
        recv_wqe::LEN + to_usize(self.max_sge) * sge::LEN
    }
}

/// The part of an SRQ its QPs reach.
#[pin_data]
pub(crate) struct SrqShared {
    #[pin]
    link: SrqLink,
    #[pin]
    inner: SpinLockIrq<Inner>,
    srq_num: u32,
    /// Whether the SRQ's owner takes async events; the limit stays armed
    /// without one, as in the C driver.
    has_handler: bool,
}

fn queue_error(e: SizeError) -> Error {
    match e {
        SizeError::Invalid => EINVAL,
        SizeError::TooLarge => ENOMEM,
    }
}

/// An SRQ number from the device's pool, returned on drop.
struct SrqNum<'a> {
    dev: &'a Device,
    num: u32,
}

impl Drop for SrqNum<'_> {
    fn drop(&mut self) {
        self.dev.state().srqs.remove(self.num);
    }
}

impl Srq {
    /// `create_srq`: an SRQ of at least `attr.max_wr` WQEs of `attr.max_sge`
    /// SGEs. `attr` comes back with the sizes granted. Check order and
    /// errnos follow `rxe_create_srq()`.
    pub(crate) fn new(
        dev: &Device,
        attr: &mut Attr,
        basic: bool,
        has_handler: bool,
        user: Option<&UserCall<'_>>,
    ) -> Result<Self> {
        if user.is_some_and(|u| u.udata.outlen() < resp::CREATE_SRQ_LEN) {
            return Err(EINVAL);
        }
        if !basic {
            return Err(errno::eopnotsupp());
        }
        let geo =
            srq_geometry(attr.max_wr, attr.max_sge, DEFAULT_CACHE_LINE).map_err(queue_error)?;
        let slot = dev.state().take_slot(ObjKind::Srq)?;
        let num = SrqNum {
            dev,
            num: dev.state().srqs.insert(())?,
        };
        let queue = Queue::new(geo.queue, Role::Consumer)?;
        let (published, mi) = Published::new(&queue, user)?;
        if let (Some(u), Some(mi)) = (user, mi) {
            u.udata.write_out(&create_srq_resp(mi, num.num))?;
        }
        let limit = attr.srq_limit;
        let mmap = published.offset();
        let shared = Arc::pin_init(
            pin_init!(SrqShared {
                link <- SrqLink::new(),
                inner <- new_spinlock_irq!(
                    Inner { queue, max_sge: geo.max_sge, limit, mmap },
                    "rxe_srq"
                ),
                srq_num: num.num,
                has_handler,
            }),
            GFP_KERNEL,
        )?;
        published.keep();
        // From here on `destroy` returns the number.
        core::mem::forget(num);
        attr.max_wr = geo.max_wr;
        attr.max_sge = geo.max_sge;
        Ok(Self {
            shared,
            _slot: slot,
        })
    }

    /// `destroy_srq`: returns the SRQ number and cuts the SRQ off from the
    /// core object, which the core frees next. `ctx` is the caller's
    /// context (`None` for kernel callers).
    pub(crate) fn destroy(&self, dev: &Device, ctx: Option<&Ucontext>) {
        dev.state().srqs.remove(self.shared.srq_num);
        self.shared.link.sever();
        let mmap = self.shared.inner.lock().mmap.take();
        if let (Some(ctx), Some(offset)) = (ctx, mmap) {
            ctx.unpublish(offset);
        }
    }

    /// `modify_srq` with `enum ib_srq_attr_mask`: resize (`IB_SRQ_MAX_WR`;
    /// `attr.max_wr` comes back as the size granted) and/or arm the limit
    /// event (`IB_SRQ_LIMIT`). User space names in its command where the
    /// new ring's mmap info goes.
    pub(crate) fn modify(&self, mask: u32, attr: &mut Attr, user: Option<&UserCall<'_>>) -> Result {
        let mut mi_addr = 0;
        if let Some(u) = user {
            if u.udata.inlen() < resp::MODIFY_SRQ_LEN {
                return Err(EINVAL);
            }
            let mut cmd = [0u8; resp::MODIFY_SRQ_LEN];
            u.udata.read_in(&mut cmd).map_err(|_| EFAULT)?;
            mi_addr = modify_srq_cmd(&cmd).map_err(|_| EINVAL)?;
        }
        let (now, max_sge) = {
            let inner = self.shared.inner.lock();
            (
                SrqNow {
                    limit: inner.limit,
                    capacity: inner.queue.capacity(),
                },
                inner.max_sge,
            )
        };
        let change =
            check_srq_modify(now, mask, attr.max_wr, attr.srq_limit).map_err(|_| EINVAL)?;
        if let Some(max_wr) = change.max_wr {
            attr.max_wr = self.resize(max_wr, max_sge, mi_addr, user)?;
        }
        if let Some(limit) = change.limit {
            self.shared.inner.lock().limit = limit;
        }
        Ok(())
    }

    fn resize(
        &self,
        max_wr: u32,
        max_sge: u32,
        mi_addr: u64,
        user: Option<&UserCall<'_>>,
    ) -> Result<u32> {
        let geo = srq_geometry(max_wr, max_sge, DEFAULT_CACHE_LINE).map_err(queue_error)?;
        let mut queue = Queue::new(geo.queue, Role::Consumer)?;
        // A null address asks for no mapping of the new ring (as in C).
        let (published, mi) = Published::new(&queue, user.filter(|_| mi_addr != 0))?;
        if let Some(mi) = mi {
            let addr = usize::try_from(mi_addr).map_err(|_| EFAULT)?;
            let bytes = mi.to_bytes();
            udata::user_slice(addr, bytes.len())
                .writer()
                .write_slice(&bytes)?;
        }
        let old_mmap = {
            let mut inner = self.shared.inner.lock();
            let len = inner.wqe_len();
            // WQEs may have been posted since the checks; too many fail here.
            inner.queue.drain_into(&mut queue, len)?;
            core::mem::swap(&mut inner.queue, &mut queue);
            core::mem::replace(&mut inner.mmap, published.offset())
        };
        published.keep();
        // The old ring is freed here, outside the lock, unless mapped.
        unpublish(user, old_mmap);
        drop(queue);
        Ok(geo.max_wr)
    }

    /// `query_srq`.
    pub(crate) fn query(&self) -> Attr {
        let inner = self.shared.inner.lock();
        Attr {
            max_wr: inner.queue.capacity(),
            max_sge: inner.max_sge,
            srq_limit: inner.limit,
        }
    }
}

impl SrqShared {
    /// The link to the core's SRQ, for the create op to attach.
    pub(crate) fn link(&self) -> &SrqLink {
        &self.link
    }

    /// `post_srq_recv` of a kernel user: queues each work request in turn.
    /// On failure returns the errno and the request that failed; the ones
    /// before it are queued.
    pub(crate) fn post_recv(
        &self,
        wrs: impl Iterator<Item = RecvWr>,
    ) -> core::result::Result<(), (Error, RecvWr)> {
        let mut img = [0u8; RECV_WQE_MAX];
        let mut inner = self.inner.lock();
        for wr in wrs {
            let res = if inner.queue.is_full() {
                Err(PostRecvError::Full)
            } else {
                build_recv_wqe(&mut img, wr.wr_id(), wr.num_sge(), inner.max_sge, |i| {
                    wr.sge(i)
                })
            };
            let len = match res {
                Ok(len) => len,
                Err(PostRecvError::Full) => return Err((ENOMEM, wr)),
                Err(PostRecvError::TooManySge | PostRecvError::TooLong) => {
                    return Err((EINVAL, wr))
                }
            };
            if let Err(e) = inner.queue.kernel_produce(img.get(..len).unwrap_or(&[])) {
                return Err((e, wr));
            }
        }
        Ok(())
    }

    /// The responder's receive: the WQE at the head, validated against the
    /// SRQ's `max_sge`, and consumed. `None` when the SRQ is empty. A WQE
    /// that fails validation is left in place (the C driver does not
    /// consume it either) and its error returned.
    ///
    /// `Ok(true)` when the WQEs left fell below an armed limit: the caller
    /// then calls [`SrqShared::limit_reached`] once it holds no QP lock (the
    /// owner's handler may call back into the QP).
    pub(crate) fn take_into(
        &self,
        wqe: &mut RecvWqe,
    ) -> Option<core::result::Result<bool, WqeError>> {
        let fire = {
            let mut inner = self.inner.lock();
            let mut empty = false;
            let slot_len = inner.wqe_len();
            let max_sge = inner.max_sge;
            let q = &inner.queue;
            let r = wqe.read_from(slot_len, max_sge, |off, out| match q.peek_at(off, out) {
                Ok(true) => true,
                Ok(false) => {
                    empty = true;
                    false
                }
                Err(_) => false,
            });
            if empty {
                return None;
            }
            if let Err(e) = r {
                return Some(Err(e));
            }
            inner.queue.advance();
            let count = inner.queue.count();
            srq_limit_reached(&mut inner.limit, count, self.has_handler)
        };
        Some(Ok(fire))
    }

    /// Raises `IB_EVENT_SRQ_LIMIT_REACHED` (once per arming: [`SrqShared::take_into`]
    /// said so and disarmed the limit). No QP or SRQ lock may be held.
    pub(crate) fn limit_reached(&self) {
        self.link.lock().limit_event();
    }
}
