// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The workqueue that ODP faults run on, apart from the engines' tasks.
//!
//! A fault sleeps for as long as its pages take to come in. For a file
//! mapping that is as long as the file system takes to answer, and a FUSE
//! daemon that never answers makes it forever: the core faults with the
//! owner's `mmap_lock` held and without `FAULT_FLAG_ALLOW_RETRY`, so the
//! wait is uninterruptible, and a worker has no signals to end it anyway
//! (FUSE's own wait for a request the daemon has read ignores even
//! `SIGKILL`). No wait of ours can make such a fault end, so faults are
//! isolated instead: each one is a work item of its own ([`spawn`]) on a
//! queue of its own ([`FaultQueue`]), which nothing ever flushes. A stuck
//! fault holds one worker of that queue and the references its [`Job`]
//! owns, nothing else: the QP that asked for it goes on without it, and
//! destroying that QP does not wait for it.
//!
//! What a stuck fault does hold up is the end of the device (a job holds a
//! reference on it, as the umem it faults in uses the device) and module
//! unload, which drains this queue: both finish once the fault does, for
//! instance when the FUSE connection is aborted.

use core::{
    ptr,
    sync::atomic::{AtomicPtr, Ordering},
};

use kernel::{
    prelude::*,
    workqueue::{impl_has_work, new_work, Queue, Work, WorkItem},
};

use crate::rxe::sys;

/// Work that may sleep without bound: an ODP fault and what to do when it
/// ends. It runs once, in process context, and is dropped after that.
pub(crate) trait Job: Send + Sync + 'static {
    fn run(&self);
}

/// A job with its work item, in its own allocation.
#[pin_data]
struct Boxed<J: Job> {
    #[pin]
    work: Work<Boxed<J>>,
    job: J,
}

impl_has_work! {
    impl{J: Job} HasWork<Self> for Boxed<J> { self.work }
}

impl<J: Job> WorkItem for Boxed<J> {
    type Pointer = Pin<KBox<Self>>;

    fn run(this: Pin<KBox<Self>>) {
        this.job.run();
    }
}

/// The fault workqueue, set while the module is loaded.
static QUEUE: AtomicPtr<kernel::bindings::workqueue_struct> = AtomicPtr::new(ptr::null_mut());

/// Runs `job` on the fault workqueue. Any context: allocates atomically.
/// On an error (no memory, no queue) the job is dropped without running.
pub(crate) fn spawn<J: Job>(job: J) -> Result {
    let raw = QUEUE.load(Ordering::Acquire);
    if raw.is_null() {
        return Err(ENODEV);
    }
    let item = KBox::pin_init(
        pin_init!(Boxed {
            work <- new_work!("rxe_fault"),
            job,
        }),
        GFP_ATOMIC,
    )?;
    // SAFETY: `raw` came from `alloc_workqueue` and is destroyed only when
    // the `FaultQueue` is dropped at module exit, after every device (whose
    // QPs spawn jobs) is gone.
    let queue = unsafe { Queue::from_raw(raw) };
    queue.enqueue::<Pin<KBox<Boxed<J>>>, 0>(item);
    Ok(())
}

/// Owns the fault workqueue: created at module init, destroyed when
/// dropped at module exit, which waits for the jobs still queued or
/// running (their code is the module's).
pub(crate) struct FaultQueue(());

impl FaultQueue {
    pub(crate) fn create() -> Result<Self> {
        // SAFETY: Plain allocation call, no preconditions.
        let raw = unsafe { sys::rxe_rs_alloc_fault_wq() };
        if raw.is_null() {
            return Err(ENOMEM);
        }
        // Both bindings describe the same C `struct workqueue_struct`.
        QUEUE.store(raw.cast(), Ordering::Release);
        Ok(Self(()))
    }
}

impl Drop for FaultQueue {
    fn drop(&mut self) {
        let raw = QUEUE.swap(ptr::null_mut(), Ordering::AcqRel);
        if !raw.is_null() {
            // SAFETY: `raw` came from `alloc_workqueue` in `create` and was
            // just unpublished; `destroy_workqueue` drains it first.
            unsafe { kernel::bindings::destroy_workqueue(raw) };
        }
    }
}
