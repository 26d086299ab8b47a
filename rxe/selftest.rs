// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Load-time self-test of the task and timer wrappers (and the FIFO), built only with
//! `RXE_RS_SELFTEST=1` (cfg `rxe_rs_selftest`); see qemu-test/tests/selftest/module.sh.
//!
//! Nothing in the driver can exercise these wrappers without QPs, so a probe
//! object with two tasks and a timer walks through their guarantees and the
//! result is logged as `selftest: ok` or `selftest: FAILED ...`. Timings are
//! generous: the debug kernel under TCG is slow.

use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use kernel::{prelude::*, sync::Arc};

use crate::rxe::fifo::Fifo;
use crate::rxe::kapi::{
    task::{impl_has_task, new_task, Progress, Task, TaskOwner, MAX_ITERATIONS},
    timer::{impl_has_timer, new_timer, Jiffies, Timer, TimerOwner},
};

/// Sleeps `ms` milliseconds. Process context.
fn msleep(ms: u32) {
    // SAFETY: FFI call; the self-test runs at module load, in process
    // context.
    unsafe { crate::rxe::sys::msleep(ms) };
}

/// A delay of `ms` milliseconds, rounded up to jiffies.
fn msecs(ms: u32) -> Jiffies {
    Jiffies::from_usecs(ms * 1000)
}

const A: u64 = 0;
const B: u64 = 1;
const T: u64 = 0;

static DROPPED: AtomicBool = AtomicBool::new(false);

#[pin_data(PinnedDrop)]
struct Probe {
    #[pin]
    a: Task<Probe, A>,
    #[pin]
    b: Task<Probe, B>,
    #[pin]
    t: Timer<Probe, T>,
    /// Steps of task A.
    a_steps: AtomicU32,
    /// Task A returns `More` while this is non-zero, counting it down.
    a_more: AtomicU32,
    /// Task A sleeps this many ms in each step.
    a_sleep: AtomicU32,
    a_inside: AtomicBool,
    overlap: AtomicBool,
    b_steps: AtomicU32,
    fired: AtomicU32,
    /// The timer callback schedules task B.
    fire_schedules_b: AtomicBool,
}

impl_has_task! {
    impl HasTask<A> for Probe { self.a }
    impl HasTask<B> for Probe { self.b }
}

impl_has_timer! {
    impl HasTimer<T> for Probe { self.t }
}

impl TaskOwner<A> for Probe {
    fn step(this: &Arc<Self>) -> Progress {
        if this.a_inside.swap(true, Ordering::SeqCst) {
            this.overlap.store(true, Ordering::SeqCst);
        }
        this.a_steps.fetch_add(1, Ordering::SeqCst);
        let ms = this.a_sleep.load(Ordering::SeqCst);
        if ms > 0 {
            msleep(ms);
        }
        let more = this
            .a_more
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        this.a_inside.store(false, Ordering::SeqCst);
        if more {
            Progress::More
        } else {
            Progress::Done
        }
    }
}

impl TaskOwner<B> for Probe {
    fn step(this: &Arc<Self>) -> Progress {
        this.b_steps.fetch_add(1, Ordering::SeqCst);
        Progress::Done
    }
}

impl TimerOwner<T> for Probe {
    fn expired(this: Arc<Self>) {
        this.fired.fetch_add(1, Ordering::SeqCst);
        if this.fire_schedules_b.load(Ordering::SeqCst) {
            this.b.schedule(&this);
        }
    }
}

#[pinned_drop]
impl PinnedDrop for Probe {
    fn drop(self: Pin<&mut Self>) {
        DROPPED.store(true, Ordering::SeqCst);
    }
}

fn probe() -> Result<Arc<Probe>> {
    DROPPED.store(false, Ordering::SeqCst);
    Arc::pin_init(
        pin_init!(Probe {
            a <- new_task!("selftest_a"),
            b <- new_task!("selftest_b"),
            t <- new_timer!("selftest_t"),
            a_steps: AtomicU32::new(0),
            a_more: AtomicU32::new(0),
            a_sleep: AtomicU32::new(0),
            a_inside: AtomicBool::new(false),
            overlap: AtomicBool::new(false),
            b_steps: AtomicU32::new(0),
            fired: AtomicU32::new(0),
            fire_schedules_b: AtomicBool::new(false),
        }),
        GFP_KERNEL,
    )
}

/// Waits up to `ms` for `cond`.
fn wait_for(ms: u32, cond: impl Fn() -> bool) -> bool {
    for _ in 0..ms / 5 {
        if cond() {
            return true;
        }
        msleep(5);
    }
    cond()
}

macro_rules! check {
    ($cond:expr, $what:literal) => {
        if !$cond {
            pr_err!("selftest: FAILED {} ({}:{})\n", $what, file!(), line!());
            return Err(EINVAL);
        }
    };
}

fn tasks() -> Result {
    let p = probe()?;
    let a_steps = || p.a_steps.load(Ordering::SeqCst);

    // A schedule runs the task once.
    p.a.schedule(&p);
    check!(wait_for(2000, || a_steps() == 1), "a scheduled task runs");
    msleep(50);
    check!(a_steps() == 1, "one schedule, one step");

    // Schedules while it runs give one more run, never a concurrent one.
    p.a_sleep.store(200, Ordering::SeqCst);
    p.a.schedule(&p);
    check!(
        wait_for(2000, || p.a_inside.load(Ordering::SeqCst)),
        "task starts"
    );
    for _ in 0..100 {
        p.a.schedule(&p);
    }
    check!(
        wait_for(2000, || a_steps() == 3),
        "a schedule while running reruns"
    );
    msleep(400);
    check!(
        a_steps() == 3,
        "schedules while running fold into one rerun"
    );
    p.a_sleep.store(0, Ordering::SeqCst);

    // `More` keeps it going across budget yields until `Done`.
    let more = 3 * MAX_ITERATIONS + 7;
    p.a_more.store(more, Ordering::SeqCst);
    p.a.schedule(&p);
    check!(
        wait_for(5000, || a_steps() == 3 + more + 1),
        "More runs until Done"
    );
    msleep(50);
    check!(a_steps() == 3 + more + 1, "no step after Done");

    // Disable waits for a running step and drops schedules until enable.
    p.a_sleep.store(50, Ordering::SeqCst);
    p.a.schedule(&p);
    check!(
        wait_for(2000, || p.a_inside.load(Ordering::SeqCst)),
        "task starts before disable"
    );
    p.a.disable();
    check!(
        !p.a_inside.load(Ordering::SeqCst),
        "disable waits for the running step"
    );
    let n = a_steps();
    p.a.schedule(&p);
    msleep(100);
    check!(a_steps() == n, "a disabled task does not run");
    p.a_sleep.store(0, Ordering::SeqCst);
    p.a.enable();
    p.a.schedule(&p);
    check!(
        wait_for(2000, || a_steps() == n + 1),
        "an enabled task runs again"
    );

    // A queued run is dropped by disable and the reference it held goes.
    p.a_more.store(u32::MAX, Ordering::SeqCst);
    p.a.schedule(&p);
    check!(
        wait_for(2000, || a_steps() > n + 1 + MAX_ITERATIONS),
        "endless task yields and requeues"
    );
    p.a.disable();
    let n = a_steps();
    msleep(50);
    check!(a_steps() == n, "disable stops an endless task");
    p.a_more.store(0, Ordering::SeqCst);

    // Shutdown is final.
    p.a.shutdown();
    p.a.enable();
    p.a.schedule(&p);
    msleep(50);
    check!(a_steps() == n, "enable does not revive a shut down task");
    check!(
        !p.overlap.load(Ordering::SeqCst),
        "a task never overlaps itself"
    );

    // Tasks of one owner are independent.
    p.b.schedule(&p);
    check!(
        wait_for(2000, || p.b_steps.load(Ordering::SeqCst) == 1),
        "second task runs"
    );
    p.b.shutdown();

    drop(p);
    check!(
        DROPPED.load(Ordering::SeqCst),
        "no reference left after shutdown"
    );

    // The last reference may go in the worker.
    let p = probe()?;
    p.a_sleep.store(20, Ordering::SeqCst);
    p.a.schedule(&p);
    drop(p);
    check!(
        wait_for(2000, || DROPPED.load(Ordering::SeqCst)),
        "owner freed by its last run"
    );
    Ok(())
}

fn timers() -> Result {
    let p = probe()?;
    let fired = || p.fired.load(Ordering::SeqCst);

    p.t.arm_in(&p, msecs(10));
    check!(p.t.pending(), "armed timer pending");
    check!(wait_for(2000, || fired() == 1), "timer fires");
    check!(!p.t.pending(), "fired timer not pending");

    // Re-arming a pending timer moves it; it fires once.
    p.t.arm_in(&p, msecs(10));
    p.t.arm_in(&p, msecs(40));
    check!(wait_for(2000, || fired() == 2), "re-armed timer fires");
    msleep(100);
    check!(fired() == 2, "re-armed timer fires once");

    // Cancel.
    p.t.arm_in(&p, msecs(50));
    p.t.cancel(&p);
    check!(!p.t.pending(), "cancelled timer not pending");
    msleep(150);
    check!(fired() == 2, "cancelled timer does not fire");

    // The callback can schedule a task (softirq context).
    p.fire_schedules_b.store(true, Ordering::SeqCst);
    p.t.arm_in(&p, Jiffies::from_usecs(1));
    check!(
        wait_for(2000, || p.b_steps.load(Ordering::SeqCst) == 1),
        "timer schedules a task"
    );

    // Shutdown while pending, then arming does nothing.
    p.t.arm_in(&p, msecs(50));
    p.t.shutdown(&p);
    p.t.arm_in(&p, msecs(1));
    check!(!p.t.pending(), "shut down timer does not arm");
    msleep(150);
    check!(fired() == 3, "shut down timer does not fire");
    p.a.shutdown();
    p.b.shutdown();
    drop(p);
    check!(
        DROPPED.load(Ordering::SeqCst),
        "timer holds no reference after shutdown"
    );

    // An armed timer keeps its owner until it fires.
    let p = probe()?;
    p.t.arm_in(&p, msecs(20));
    drop(p);
    check!(
        !DROPPED.load(Ordering::SeqCst),
        "armed timer keeps its owner"
    );
    check!(
        wait_for(2000, || DROPPED.load(Ordering::SeqCst)),
        "owner freed after expiry"
    );
    Ok(())
}

fn fifo() -> Result {
    let mut f = Fifo::new(2, 8, GFP_KERNEL)?;
    check!(f.capacity() == 2 && f.is_empty(), "fifo starts empty");
    check!(
        f.push(KBox::new(0u32, GFP_KERNEL)?).is_ok(),
        "fifo takes an item"
    );
    check!(f.pop().map(|b| *b) == Some(0), "fifo pops it");
    for i in 1..9u32 {
        check!(
            f.push(KBox::new(i, GFP_KERNEL)?).is_ok(),
            "fifo grows to its limit"
        );
    }
    check!(
        f.capacity() == 8 && f.push(KBox::new(9, GFP_KERNEL)?).is_err(),
        "full fifo refuses"
    );
    check!(f.pop().map(|b| *b) == Some(1), "growth keeps the order");
    check!(f.push(KBox::new(9, GFP_KERNEL)?).is_ok(), "fifo wraps");
    check!(f.len() == 8, "fifo counts its items");
    f.clear();
    check!(f.pop().is_none(), "cleared fifo is empty");
    Ok(())
}

/// Runs the self-test; errors are logged and do not fail the load.
pub(crate) fn run() {
    match fifo().and_then(|()| tasks()).and_then(|()| timers()) {
        Ok(()) => pr_info!("selftest: ok\n"),
        Err(_) => pr_err!("selftest: FAILED\n"),
    }
}
