// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Serialized per-object tasks on the driver's workqueue: the requester,
//! completer and responder of each QP run as one of these.
//!
//! A [`Task`] lives inside its owner `T`, which is always held in an
//! [`Arc`] (the QP's shared part). [`Task::schedule`] may be called from any
//! process or softirq context, with interrupts on or off; the task then runs
//! `T::step` on the driver's workqueue soon. The guarantees:
//!
//! - a task never runs concurrently with itself;
//! - a `schedule` while the task runs makes it run once more afterwards, so
//!   no wakeup is lost;
//! - `step` returns [`Progress::More`] while it has work left; after
//!   [`MAX_ITERATIONS`] calls in one go the task re-queues itself instead of
//!   looping, so one QP cannot hold a worker forever;
//! - after [`Task::disable`] or [`Task::shutdown`] return, no run is in
//!   progress and none starts until [`Task::enable`] (never after
//!   `shutdown`). Schedules that arrive while disabled are dropped, as in C:
//!   whoever enables the task schedules it again if there is work. While a
//!   task is disabled its owner may call its step function directly (C's
//!   reset and destroy paths drain the queues that way).
//!
//! A queued task holds a reference to its owner, so the owner cannot go
//! away under a pending run; `shutdown` waits for the last one. The owner
//! must therefore call `shutdown` on destroy (it cannot happen in the
//! owner's `Drop`: the last reference may be the one a run drops).
//!
//! The workqueue is a reclaim queue (`WQ_MEM_RECLAIM`): storage ULPs
//! destroy QPs, and so flush these tasks, from their own reclaim workers.
//!
//! `disable`, `enable` and `shutdown` sleep: call them from process context,
//! serialized by the owner (the QP's modify path), never from the task's own
//! step function and never while holding a lock that step function takes.
//!
//! [`Task::run`] runs an idle task at once in the caller's context instead
//! of handing it to a worker (C's `rxe_run_task`): a wake-up and a context
//! switch less on the path of a message. The same guarantees hold; `stop`
//! waits for such a run by polling, as it cannot flush it.
//!
//! # Example
//!
//! ```ignore
//! use crate::rxe::kernel::task::{impl_has_task, new_task, Progress, Task, TaskOwner};
//!
//! const REQ: u64 = 0;
//! const COMP: u64 = 1;
//!
//! #[pin_data]
//! struct Shared {
//!     #[pin]
//!     req: Task<Shared, REQ>,
//!     #[pin]
//!     comp: Task<Shared, COMP>,
//! }
//!
//! impl_has_task! {
//!     impl HasTask<REQ> for Shared { self.req }
//!     impl HasTask<COMP> for Shared { self.comp }
//! }
//!
//! impl TaskOwner<REQ> for Shared {
//!     fn step(this: &Arc<Self>) -> Progress {
//!         requester::step(this) // Progress::More while WQEs are left
//!     }
//! }
//! impl TaskOwner<COMP> for Shared {
//!     fn step(this: &Arc<Self>) -> Progress {
//!         completer::step(this)
//!     }
//! }
//!
//! let qp = Arc::pin_init(
//!     pin_init!(Shared { req <- new_task!("rxe_req"), comp <- new_task!("rxe_comp") }),
//!     GFP_KERNEL,
//! )?;
//! qp.req.schedule(&qp); // from post_send, a received ACK, a timer...
//! // destroy:
//! qp.req.shutdown();
//! qp.comp.shutdown();
//! ```

use core::{
    ptr,
    sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, Ordering},
};

use kernel::{
    prelude::*,
    str::CStr,
    sync::Arc,
    workqueue::{HasWork, Queue, Work, WorkItem},
};

use crate::rxe::kernel::lock::{new_spinlock_irq, SpinLockIrq, StaticLockClass};
use crate::rxe::sys as b;

/// Calls of the step function in one go before the task yields its worker
/// (C: `RXE_MAX_ITERATIONS`).
pub(crate) const MAX_ITERATIONS: u32 = 1024;

/// What a step of the task left behind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Progress {
    /// There may be more work: call again.
    More,
    /// Nothing left until the next `schedule`.
    Done,
    /// The step needs to sleep (an ODP page fault) and was called where it
    /// may not ([`Task::in_worker`] false): run it again on a worker.
    Defer,
}

/// The work of a task owner.
pub(crate) trait TaskOwner<const ID: u64>: Sized + Send + Sync + 'static {
    /// Does one step of the task's work, never concurrently with itself:
    /// on the driver's workqueue, or inline in the context of a
    /// [`Task::run`] caller (a system call, or the receive softirq), so it
    /// must not sleep.
    fn step(this: &Arc<Self>) -> Progress;
}

/// Finds a task in its owner; implemented by [`impl_has_task!`].
pub(crate) trait HasTask<const ID: u64>: Sized {
    fn task(&self) -> &Task<Self, ID>;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Not queued, not running.
    Idle,
    /// On the workqueue; the queue holds a reference to the owner.
    Queued,
    /// Running.
    Running,
    /// Running, and scheduled again meanwhile.
    Armed,
    /// Stopped until `enable`.
    Disabled,
    /// Stopped for good.
    Dead,
}

/// A serialized task of an owner `T`; `ID` tells the tasks of one owner
/// apart.
#[pin_data]
pub(crate) struct Task<T, const ID: u64> {
    #[pin]
    work: Work<T, ID>,
    /// Taken with interrupts off: `schedule` is reached from `post_send`
    /// and `post_recv`, which kernel users call under their own
    /// `spin_lock_irqsave` (the MAD layer does, for every CM message).
    #[pin]
    state: SpinLockIrq<State>,
    /// Runs in progress in callers' contexts ([`Task::run`]); raised under
    /// `state` when such a run takes the task.
    inline_runs: AtomicU32,
    /// Set while a worker drives the task: its step may sleep.
    in_worker: AtomicBool,
}

/// Creates a [`Task`] initialiser with its own lockdep class for flushes.
macro_rules! new_task {
    ($name:literal $(,)?) => {
        $crate::rxe::kernel::task::Task::new(
            ::kernel::c_str!($name),
            ::kernel::static_lock_class!(),
        )
    };
}
pub(crate) use new_task;

/// Implements [`HasTask`] for an owner, with the workqueue traits the task
/// needs. The owner also implements [`TaskOwner`] for each ID.
macro_rules! impl_has_task {
    ($(impl HasTask<$id:tt> for $ty:ty { self.$field:ident })*) => {$(
        impl $crate::rxe::kernel::task::HasTask<{ $id }> for $ty {
            fn task(&self) -> &$crate::rxe::kernel::task::Task<Self, { $id }> {
                &self.$field
            }
        }

        // SAFETY: `OFFSET` is the offset in `$ty` of the `Work` inside the
        // task field, and `raw_get_work` returns exactly that address.
        // 7.x replaced `OFFSET` by `work_container_of`.
        unsafe impl ::kernel::workqueue::HasWork<$ty, { $id }> for $ty {
            #[cfg(not(rxe_kernel_7))]
            const OFFSET: usize = ::core::mem::offset_of!($ty, $field)
                + $crate::rxe::kernel::task::Task::<$ty, { $id }>::WORK_OFFSET;

            #[cfg(rxe_kernel_7)]
            #[inline]
            unsafe fn work_container_of(ptr: *mut ::kernel::workqueue::Work<$ty, { $id }>) -> *mut Self {
                let offset = ::core::mem::offset_of!($ty, $field)
                    + $crate::rxe::kernel::task::Task::<$ty, { $id }>::WORK_OFFSET;
                // SAFETY: The caller promises that `ptr` is the `Work` of a
                // `$ty`'s task, `offset` bytes into it.
                unsafe { ptr.byte_sub(offset).cast::<Self>() }
            }

            #[inline]
            unsafe fn raw_get_work(ptr: *mut Self) -> *mut ::kernel::workqueue::Work<$ty, { $id }> {
                // SAFETY: The caller promises that `ptr` points at a valid
                // `$ty`, so its task field is valid too.
                unsafe {
                    $crate::rxe::kernel::task::Task::<$ty, { $id }>::raw_work(::core::ptr::addr_of_mut!(
                        (*ptr).$field
                    ))
                }
            }
        }

        impl ::kernel::workqueue::WorkItem<{ $id }> for $ty {
            type Pointer = ::kernel::sync::Arc<$ty>;

            fn run(this: ::kernel::sync::Arc<$ty>) {
                $crate::rxe::kernel::task::Task::<$ty, { $id }>::work_fn(this)
            }
        }
    )*};
}
pub(crate) use impl_has_task;

impl<T, const ID: u64> Task<T, ID> {
    /// Where the `work_struct` lies in a task, for [`impl_has_task!`].
    pub(crate) const WORK_OFFSET: usize = core::mem::offset_of!(Self, work);

    /// The `Work` of the task at `ptr`, for [`impl_has_task!`].
    ///
    /// # Safety
    ///
    /// `ptr` points at a valid `Task`.
    pub(crate) unsafe fn raw_work(ptr: *mut Self) -> *mut Work<T, ID> {
        // SAFETY: The caller promises that `ptr` is valid.
        unsafe { ptr::addr_of_mut!((*ptr).work) }
    }
}

impl<T, const ID: u64> Task<T, ID>
where
    T: TaskOwner<ID> + HasTask<ID> + HasWork<T, ID> + WorkItem<ID, Pointer = Arc<T>>,
{
    /// A task that starts idle and enabled. Use [`new_task!`].
    pub(crate) fn new(name: &'static CStr, key: StaticLockClass) -> impl PinInit<Self> {
        pin_init!(Self {
            work <- Work::new(name, key),
            state <- new_spinlock_irq!(State::Idle, "rxe_task"),
            inline_runs: AtomicU32::new(0),
            in_worker: AtomicBool::new(false),
        })
    }

    /// Whether `owner` is the object this task lives in. Everything that
    /// queues goes through `owner`, so the two must match.
    fn is_in(&self, owner: &Arc<T>) -> bool {
        if ptr::eq(T::task(owner), self) {
            return true;
        }
        pr_warn!("task used with an owner it does not belong to\n");
        false
    }

    /// Makes the task run soon, or once more if it is running. `owner` is
    /// the object the task is a field of. Process or softirq context.
    pub(crate) fn schedule(&self, owner: &Arc<T>) {
        if !self.is_in(owner) {
            return;
        }
        let mut state = self.state.lock();
        match *state {
            State::Idle => {
                if enqueue(owner.clone()) {
                    *state = State::Queued;
                }
            }
            State::Running => *state = State::Armed,
            State::Queued | State::Armed | State::Disabled | State::Dead => {}
        }
    }

    /// Runs the task now, in the caller's context, when it is idle; when it
    /// is queued or running elsewhere this does what [`Task::schedule`]
    /// does. `owner` is the object the task is a field of.
    ///
    /// The caller must be able to do what the step function does: hold no
    /// lock that it takes, and be in a context where it may send packets
    /// (process context, or the softirq of the receive path for step
    /// functions that are softirq-safe). Out of budget, the rest of the
    /// work goes to the workqueue.
    pub(crate) fn run(&self, owner: &Arc<T>) {
        self.run_for(owner, MAX_ITERATIONS);
    }

    /// [`Task::run`] with at most `budget` steps here; the rest of the work
    /// goes to a worker. For callers that must not stay long, such as the
    /// receive softirq.
    pub(crate) fn run_for(&self, owner: &Arc<T>, budget: u32) {
        if !self.is_in(owner) {
            return;
        }
        {
            let mut state = self.state.lock();
            match *state {
                State::Idle => {
                    *state = State::Running;
                    self.inline_runs.fetch_add(1, Ordering::Relaxed);
                }
                State::Running => {
                    *state = State::Armed;
                    return;
                }
                State::Queued | State::Armed | State::Disabled | State::Dead => return,
            }
        }
        Self::drive(owner, budget, false);
        // Pairs with the acquire in `stop`: the run's effects are visible
        // to whoever sees it finished.
        self.inline_runs.fetch_sub(1, Ordering::Release);
    }

    /// Stops the task until [`Task::enable`]: when this returns, no run is
    /// in progress or queued. Process context; see the module doc.
    pub(crate) fn disable(&self) {
        self.stop(State::Disabled);
    }

    /// Stops the task for good, for destroy; `enable` no longer restarts
    /// it. When this returns, no run is in progress or queued and the
    /// workqueue holds no reference to the owner.
    pub(crate) fn shutdown(&self) {
        self.stop(State::Dead);
    }

    fn stop(&self, to: State) {
        {
            let mut state = self.state.lock();
            if *state != State::Dead {
                *state = to;
            }
        }
        // A queued run now finds the task stopped and returns at once; a
        // running one returns at its next check. Neither queues again, so
        // after the flush nothing is left.
        // SAFETY: The work was initialised in `new` and lives as long as
        // `self`.
        unsafe { kernel::bindings::flush_work(Work::raw_get(&self.work)) };
        // A run in a caller's context cannot be flushed: wait for it. It
        // sees the new state at its next check and returns, within one
        // budget of steps.
        while self.inline_runs.load(Ordering::Acquire) != 0 {
            // SAFETY: Process context, as `disable` and `shutdown` require.
            unsafe { b::msleep(1) };
        }
    }

    /// Lets a disabled task be scheduled again (QP modify out of reset or
    /// error). Does not run it: schedule it if there is work.
    pub(crate) fn enable(&self) {
        let mut state = self.state.lock();
        if *state == State::Disabled {
            *state = State::Idle;
        }
    }

    /// The workqueue entry point, reached through [`impl_has_task!`].
    pub(crate) fn work_fn(this: Arc<T>) {
        let task = T::task(&this);
        {
            let mut state = task.state.lock();
            if *state != State::Queued {
                // Disabled or shut down after it was queued.
                return;
            }
            *state = State::Running;
        }
        Self::drive(&this, MAX_ITERATIONS, true);
    }

    /// Whether the step running now runs on a worker, in process context
    /// with no lock of the task held, where it may sleep. Only meaningful
    /// from the task's own step function (the task never runs twice at
    /// once, so the flag is the current run's).
    pub(crate) fn in_worker(&self) -> bool {
        self.in_worker.load(Ordering::Relaxed)
    }

    /// Calls the step function while there is work and budget, then leaves
    /// the task idle, or queued for the rest of its work. The caller moved
    /// the task to `Running`.
    fn drive(this: &Arc<T>, mut budget: u32, worker: bool) {
        let task = T::task(this);
        // Only this run can see the flag until it leaves `Running`, and it
        // clears the flag under the state lock before it does: the next
        // run, inline or not, finds it false.
        task.in_worker.store(worker, Ordering::Relaxed);
        loop {
            let mut progress = Progress::More;
            while budget > 0 && progress == Progress::More {
                progress = T::step(this);
                budget -= 1;
            }
            let mut state = task.state.lock();
            task.in_worker.store(false, Ordering::Relaxed);
            match (*state, progress) {
                (State::Running, Progress::Done) => {
                    *state = State::Idle;
                    return;
                }
                // Scheduled while running: go on while the budget lasts.
                (State::Armed, Progress::More | Progress::Done) if budget > 0 => {
                    *state = State::Running;
                    task.in_worker.store(worker, Ordering::Relaxed);
                }
                // Out of budget with work left, or a step that must sleep
                // outside a worker: yield and come back through the queue.
                (State::Running | State::Armed, _) => {
                    *state = if enqueue(this.clone()) {
                        State::Queued
                    } else {
                        State::Idle
                    };
                    return;
                }
                (State::Disabled | State::Dead, _) => return,
                (State::Idle | State::Queued, _) => {
                    pr_warn!("task ran in state {:?}\n", *state);
                    return;
                }
            }
        }
    }
}

/// The driver's workqueue, set while the module is loaded.
static QUEUE: AtomicPtr<kernel::bindings::workqueue_struct> = AtomicPtr::new(ptr::null_mut());

/// Queues `owner`'s work `ID` on the driver's workqueue. False if it was not
/// queued (no workqueue, or already queued, which the task state rules out).
fn enqueue<T, const ID: u64>(owner: Arc<T>) -> bool
where
    T: HasWork<T, ID> + WorkItem<ID, Pointer = Arc<T>> + Send + Sync + 'static,
{
    let raw = QUEUE.load(Ordering::Acquire);
    if raw.is_null() {
        return false;
    }
    // SAFETY: `raw` came from `alloc_workqueue` and is destroyed only by
    // `WorkQueue::drop` at module exit, after every device and so every
    // task owner is gone: nothing can be scheduling then.
    let queue = unsafe { Queue::from_raw(raw) };
    queue.enqueue::<Arc<T>, ID>(owner).is_ok()
}

/// Queues a one-shot boxed work item on the driver's workqueue, or on the
/// system one when the driver's is not there (module init or exit):
/// `WorkQueue::drop` drains the driver's, so work queued on it has run
/// before the module text goes.
pub(crate) fn enqueue_once<T>(item: Pin<KBox<T>>)
where
    T: HasWork<T, 0> + WorkItem<0, Pointer = Pin<KBox<T>>> + Send + 'static,
{
    let raw = QUEUE.load(Ordering::Acquire);
    if raw.is_null() {
        kernel::workqueue::system().enqueue::<Pin<KBox<T>>, 0>(item);
        return;
    }
    // SAFETY: As in `enqueue`: the queue outlives every object that can
    // queue work on it.
    let queue = unsafe { Queue::from_raw(raw) };
    queue.enqueue::<Pin<KBox<T>>, 0>(item);
}

/// Owns the driver's workqueue: created at module init, destroyed (after
/// running what is still queued) when dropped at module exit.
pub(crate) struct WorkQueue(());

impl WorkQueue {
    pub(crate) fn create() -> Result<Self> {
        // SAFETY: Plain allocation call, no preconditions.
        let raw = unsafe { b::rxe_rs_alloc_wq() };
        if raw.is_null() {
            return Err(ENOMEM);
        }
        // Both bindings describe the same C `struct workqueue_struct`.
        QUEUE.store(raw.cast(), Ordering::Release);
        Ok(Self(()))
    }
}

impl Drop for WorkQueue {
    fn drop(&mut self) {
        let raw = QUEUE.swap(ptr::null_mut(), Ordering::AcqRel);
        if !raw.is_null() {
            // SAFETY: `raw` came from `alloc_workqueue` in `create` and was
            // just unpublished; `destroy_workqueue` drains it first.
            unsafe { kernel::bindings::destroy_workqueue(raw) };
        }
    }
}
