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
//!   looping, so one QP cannot hold a worker forever; on a worker, each
//!   call is followed by a `cond_resched`, so a run of many long steps does
//!   not hold the CPU either (steps bound their own work: the responder's
//!   FLUSH, for one, goes a piece per step);
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
//! [`Task::schedule_bh`] defers such a run to the end of the current
//! softirq pass on this CPU, for the receive path: the task goes on a
//! per-CPU list of the driver's (a kernel `llist`, holding a reference to
//! the owner), and a per-CPU work item that is only ever queued on the
//! kernel's softirq workqueue (`system_bh_wq`) takes the whole list once
//! the network receive softirq finished its batch and runs each task as
//! [`Task::run_for`] would, [`BH_STEPS`] steps and the rest on a worker.
//! So the packets one batch brought for one QP are handled in one run
//! (which lets the responder acknowledge them with one ACK); a
//! [`Task::schedule`] of a task that is on the list leaves the work to
//! that run rather than wake a worker. The task's own
//! work item never goes on that queue: one work item run both in and out
//! of softirq context is an inconsistent lock state to lockdep. A task
//! stopped while on the list is skipped when its turn comes (its run finds
//! it disabled or dead); the list's reference keeps the owner alive until
//! then, and [`BhRuns`] waits for the last run at module exit.
//!
//! # Example
//!
//! `rxe/selftest.rs` is a compiled example: its `Probe` owns two tasks and
//! a timer, with their `HasTask`/`HasTimer` declarations, the steps that
//! return [`Progress`], scheduling, disabling and shutdown (the test command
//! builds it, with `RXE_RS_SELFTEST=1`, and `make selftest` runs it). The
//! QP's send and responder tasks (`rxe/qp`) are the driver's use.

use core::{
    ffi::c_void,
    ptr,
    sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, Ordering},
};

use kernel::{
    prelude::*,
    str::CStr,
    sync::Arc,
    types::Opaque,
    workqueue::{HasWork, Queue, Work, WorkItem},
};

use crate::rxe::kapi::lock::{new_spinlock_irq, SpinLockIrq, StaticLockClass};
use crate::rxe::sys;

/// Calls of the step function in one go before the task yields its worker
/// (C: `RXE_MAX_ITERATIONS`).
pub(crate) const MAX_ITERATIONS: u32 = 1024;

/// Calls of the step function in one softirq run ([`Task::schedule_bh`])
/// before the rest goes to a worker.
pub(crate) const BH_STEPS: u32 = crate::rxe::proto::params::pacing::INLINE_STEPS;

/// What a step of the task left behind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Progress {
    /// There may be more work: call again.
    More,
    /// Nothing left until the next `schedule`.
    Done,
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
    /// The task's place on the softirq list ([`Task::schedule_bh`]).
    #[pin]
    bh: BhNode,
}

/// A task's entry on a CPU's softirq list. `link` comes first: the list
/// hands back `llist_node` pointers, which are pointers to the node.
#[repr(C)]
#[pin_data]
struct BhNode {
    /// The kernel list's link; written by `llist_add` only while `queued`
    /// is ours.
    #[pin]
    link: Opaque<sys::llist_node>,
    /// Set from the push until the run takes the node off: a node is on
    /// at most one list, once.
    queued: AtomicBool,
    /// The owner reference the list holds (`Arc::into_raw`), written
    /// before the push.
    owner: AtomicPtr<c_void>,
    /// Takes the reference back and runs the task: `Task::<T, ID>::bh_run`.
    run: unsafe fn(*const c_void),
}

// SAFETY: The link is written by `llist_add` while the node is being
// listed and read by the softirq run that took it off, the two ordered by
// `queued` and the list's atomics; the other fields are atomics and a
// function pointer. The owner pointer is an `Arc` of a `Send + Sync` owner.
unsafe impl Send for BhNode {}
// SAFETY: Shared access is ordered the same way: the link by `queued` and
// the list's atomics, the rest atomics and a function pointer that never
// changes; the owner is `Send + Sync`.
unsafe impl Sync for BhNode {}

/// Creates a [`Task`] initialiser with its own lockdep class for flushes.
macro_rules! new_task {
    ($name:literal $(,)?) => {
        $crate::rxe::kapi::task::Task::new(::kernel::c_str!($name), ::kernel::static_lock_class!())
    };
}
pub(crate) use new_task;

/// Implements [`HasTask`] for an owner, with the workqueue traits the task
/// needs. The owner also implements [`TaskOwner`] for each ID.
macro_rules! impl_has_task {
    ($(impl HasTask<$id:tt> for $ty:ty { self.$field:ident })*) => {$(
        impl $crate::rxe::kapi::task::HasTask<{ $id }> for $ty {
            fn task(&self) -> &$crate::rxe::kapi::task::Task<Self, { $id }> {
                &self.$field
            }
        }

        // SAFETY: `OFFSET` is the offset in `$ty` of the `Work` inside the
        // task field, and `raw_get_work` returns exactly that address.
        // 7.x replaced `OFFSET` by `work_container_of`.
        unsafe impl ::kernel::workqueue::HasWork<$ty, { $id }> for $ty {
            #[cfg(not(rxe_kernel_7))]
            const OFFSET: usize = ::core::mem::offset_of!($ty, $field)
                + $crate::rxe::kapi::task::Task::<$ty, { $id }>::WORK_OFFSET;

            #[cfg(rxe_kernel_7)]
            #[inline]
            unsafe fn work_container_of(ptr: *mut ::kernel::workqueue::Work<$ty, { $id }>) -> *mut Self {
                let offset = ::core::mem::offset_of!($ty, $field)
                    + $crate::rxe::kapi::task::Task::<$ty, { $id }>::WORK_OFFSET;
                // SAFETY: The caller promises that `ptr` is the `Work` of a
                // `$ty`'s task, `offset` bytes into it.
                unsafe { ptr.byte_sub(offset).cast::<Self>() }
            }

            #[inline]
            unsafe fn raw_get_work(ptr: *mut Self) -> *mut ::kernel::workqueue::Work<$ty, { $id }> {
                // SAFETY: The caller promises that `ptr` points at a valid
                // `$ty`, so its task field is valid too.
                unsafe {
                    $crate::rxe::kapi::task::Task::<$ty, { $id }>::raw_work(::core::ptr::addr_of_mut!(
                        (*ptr).$field
                    ))
                }
            }
        }

        impl ::kernel::workqueue::WorkItem<{ $id }> for $ty {
            type Pointer = ::kernel::sync::Arc<$ty>;

            fn run(this: ::kernel::sync::Arc<$ty>) {
                $crate::rxe::kapi::task::Task::<$ty, { $id }>::work_fn(this)
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
            bh <- pin_init!(BhNode {
                link <- Opaque::ffi_init(|slot: *mut sys::llist_node| {
                    // SAFETY: `slot` is valid for writes; a null link is an
                    // unlisted node.
                    unsafe { slot.write(sys::llist_node { next: ptr::null_mut() }) }
                }),
                queued: AtomicBool::new(false),
                owner: AtomicPtr::new(ptr::null_mut()),
                run: Self::bh_run,
            }),
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
            // Listed for a softirq run (`schedule_bh`) that has not taken
            // the state lock yet: it sees what the caller queued, without
            // a worker's wake-up. (The run clears `queued` before it takes
            // the lock, so a `true` read under the lock means it is still
            // to come.)
            State::Idle if self.bh.queued.load(Ordering::Acquire) => {}
            State::Idle => {
                if enqueue(owner.clone()) {
                    *state = State::Queued;
                }
            }
            State::Running => *state = State::Armed,
            State::Queued | State::Armed | State::Disabled | State::Dead => {}
        }
    }

    /// Makes an idle task run at the end of the current softirq pass on
    /// this CPU, as [`Task::run_for`] with [`BH_STEPS`] would (see the
    /// module doc); a running one runs once more. Softirq context (the
    /// receive path), or anywhere bottom halves are off: the run itself is
    /// in softirq context and may not sleep.
    pub(crate) fn schedule_bh(&self, owner: &Arc<T>) {
        if !self.is_in(owner) {
            return;
        }
        let mut state = self.state.lock();
        match *state {
            State::Idle if !BH_READY.load(Ordering::Acquire) => {
                // No softirq lists (module init or exit): run at once.
                drop(state);
                self.run_for(owner, BH_STEPS);
            }
            State::Idle => {
                // Listed already: that run is still to come, and it sees
                // what the caller queued.
                if self.bh.queued.swap(true, Ordering::AcqRel) {
                    return;
                }
                let raw = Arc::into_raw(owner.clone());
                self.bh
                    .owner
                    .store(raw.cast_mut().cast(), Ordering::Relaxed);
                // SAFETY: `queued` was false, so the node is on no list and
                // is ours to link until a run takes it off; the task is
                // pinned inside `owner`, whose reference the list now holds,
                // so the node outlives its time on the list. `BH_READY` says
                // the per-CPU lists are set up.
                unsafe { sys::rxe_rs_bh_add(self.bh.link.get()) };
            }
            State::Running => *state = State::Armed,
            State::Queued | State::Armed | State::Disabled | State::Dead => {}
        }
    }

    /// A softirq run of a task that was on a CPU's list: the node's `run`.
    ///
    /// # Safety
    ///
    /// `owner` came from the `Arc::into_raw` of [`Task::schedule_bh`] that
    /// listed this task's node, and the node is off the list.
    unsafe fn bh_run(owner: *const c_void) {
        // SAFETY: The caller promises that `owner` is the list's reference,
        // which is ours now.
        let this = unsafe { Arc::<T>::from_raw(owner.cast()) };
        let task = T::task(&this);
        // From here a new `schedule_bh` may list the task again: what it
        // queued is either seen by this run or by that one.
        task.bh.queued.store(false, Ordering::Release);
        // A task stopped meanwhile is not idle: this returns at once.
        task.run_for(&this, BH_STEPS);
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
            unsafe { sys::msleep(1) };
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

    /// Calls the step function while there is work and budget, then leaves
    /// the task idle, or queued for the rest of its work. The caller moved
    /// the task to `Running`. `worker`: called on a workqueue worker
    /// (process context), where it may reschedule between steps.
    fn drive(this: &Arc<T>, mut budget: u32, worker: bool) {
        let task = T::task(this);
        loop {
            let mut progress = Progress::More;
            while budget > 0 && progress == Progress::More {
                progress = T::step(this);
                budget -= 1;
                if worker {
                    // Process context, no lock held between steps.
                    cond_resched();
                }
            }
            let mut state = task.state.lock();
            match (*state, progress) {
                (State::Running, Progress::Done) => {
                    *state = State::Idle;
                    return;
                }
                // Scheduled while running: go on while the budget lasts.
                (State::Armed, Progress::More | Progress::Done) if budget > 0 => {
                    *state = State::Running;
                }
                // Out of budget with work left: yield and come back through
                // the queue.
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

/// Lets the scheduler run something else if it wants to. Process context
/// with no spinlock held (it may sleep).
pub(crate) fn cond_resched() {
    // SAFETY: Plain call; callers are in process context without spinlocks.
    unsafe { sys::rxe_rs_cond_resched() };
}

/// The softirq work of every CPU: takes the CPU's list (oldest first) and
/// runs each task on it.
///
/// # Safety
///
/// `first` is null or the first node of a list taken off a CPU's softirq
/// list: nodes linked by [`Task::schedule_bh`].
unsafe extern "C" fn bh_work(first: *mut sys::llist_node) {
    let mut node = first;
    while !node.is_null() {
        let bh = node.cast::<BhNode>();
        // SAFETY: Every node on the list is the `link` at the start of a
        // listed `BhNode`, alive through the owner reference the list
        // holds. Everything is read before the run: once it has taken the
        // node off, the node may be listed again.
        let (next, owner, run) = unsafe {
            let next = (*node).next;
            (next, (*bh).owner.load(Ordering::Relaxed), (*bh).run)
        };
        // SAFETY: `owner` is the reference the node was listed with, and
        // the node is off the list (the list was taken whole).
        unsafe { run(owner) };
        node = next;
    }
}

/// Set while the softirq lists are set up: between [`BhRuns::init`] and
/// the drop of the [`BhRuns`].
static BH_READY: AtomicBool = AtomicBool::new(false);

/// Owns the softirq lists and their work items: set up at module init,
/// and when dropped at module exit (after the devices, and so every task
/// owner, are gone) waits for every CPU's softirq work to finish, so that
/// none runs once the module's code is gone.
pub(crate) struct BhRuns(());

impl BhRuns {
    pub(crate) fn init() -> Self {
        // SAFETY: Called once at module init, before anything can list a
        // task; `bh_work` has the callback's signature and lives as long as
        // the module, which `drop` waits for.
        unsafe { sys::rxe_rs_bh_init(Some(bh_work)) };
        BH_READY.store(true, Ordering::Release);
        Self(())
    }
}

impl Drop for BhRuns {
    fn drop(&mut self) {
        BH_READY.store(false, Ordering::Release);
        // SAFETY: The work items were set up in `init`; process context.
        // Nothing lists a task any more (no device is left), so after the
        // flush no softirq work is queued or running.
        unsafe { sys::rxe_rs_bh_exit() };
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
    // SAFETY: `raw` came from `alloc_workqueue` and is destroyed only by
    // `WorkQueue::drop` at module exit, after every device and so every
    // object that queues one-shot work on it is gone.
    let queue = unsafe { Queue::from_raw(raw) };
    queue.enqueue::<Pin<KBox<T>>, 0>(item);
}

/// Owns the driver's workqueue: created at module init, destroyed (after
/// running what is still queued) when dropped at module exit.
pub(crate) struct WorkQueue(());

impl WorkQueue {
    pub(crate) fn create() -> Result<Self> {
        // SAFETY: Plain allocation call, no preconditions.
        let raw = unsafe { sys::rxe_rs_alloc_wq() };
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
