// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! One-shot high-resolution timers owned by an object in an [`Arc`], for
//! delays far below a jiffy (the responder's held ACK: a few hundred
//! microseconds, where a `timer_list` would wait 4 ms at HZ=250).
//!
//! The same contract as [`super::timer::Timer`]: an armed [`HrTimer`] holds
//! a reference to its owner, which the expiry hands to
//! [`TimerOwner::expired`] in softirq context (the timer runs in the
//! `HRTIMER_SOFTIRQ`, `HRTIMER_MODE_REL_SOFT`), and the destroy path calls
//! [`HrTimer::shutdown`]. It is armed only when idle ([`HrTimer::arm_idle`]):
//! a deadline, once set, is not pushed back.
//!
//! ```ignore
//! impl_has_hrtimer! {
//!     impl HasHrTimer<ACK> for Shared { self.ack_timer }
//! }
//! qp.ack_timer.arm_idle(&qp, 200_000);
//! // destroy, after the tasks are shut down:
//! qp.ack_timer.shutdown(&qp);
//! ```

use core::{marker::PhantomData, ptr};

use kernel::{prelude::*, sync::Arc, types::Opaque};

use crate::rxe::kernel::lock::{new_spinlock_bh, SpinLockBh};
use crate::rxe::kernel::timer::TimerOwner;
use crate::rxe::sys as b;

/// The callback's "do not restart": 7.x's bindings make `hrtimer_restart` a
/// newtype (the kernel's `--newtype-enum`), 6.12's a set of constants.
#[cfg(not(rxe_kernel_7))]
const NORESTART: b::hrtimer_restart = b::hrtimer_restart_HRTIMER_NORESTART;
#[cfg(rxe_kernel_7)]
const NORESTART: b::hrtimer_restart = b::hrtimer_restart::HRTIMER_NORESTART;

/// Finds an [`HrTimer`] in its owner; implemented by [`impl_has_hrtimer!`].
///
/// # Safety
///
/// `OFFSET` is the offset in `Self` of the `HrTimer<Self, ID>` that
/// `hrtimer` returns.
pub(crate) unsafe trait HasHrTimer<const ID: u64>: Sized {
    const OFFSET: usize;
    fn hrtimer(&self) -> &HrTimer<Self, ID>;
}

/// Implements [`HasHrTimer`] for an owner, which also implements
/// [`TimerOwner`] for the ID.
macro_rules! impl_has_hrtimer {
    ($(impl HasHrTimer<$id:tt> for $ty:ty { self.$field:ident })*) => {$(
        // SAFETY: `OFFSET` is the offset of the field `hrtimer` returns.
        unsafe impl $crate::rxe::kernel::hrtimer::HasHrTimer<{ $id }> for $ty {
            const OFFSET: usize = ::core::mem::offset_of!($ty, $field);

            fn hrtimer(&self) -> &$crate::rxe::kernel::hrtimer::HrTimer<Self, { $id }> {
                &self.$field
            }
        }
    )*};
}
pub(crate) use impl_has_hrtimer;

/// The current time on the monotonic clock, in nanoseconds.
pub(crate) fn now_ns() -> u64 {
    // SAFETY: Reads the clock, no preconditions.
    unsafe { b::rxe_rs_now_ns() }
}

/// An `hrtimer` whose expiry calls `T::expired`.
///
/// # Invariants
///
/// While `raw` is queued it holds one reference to the `T` the timer is a
/// field of (taken in [`HrTimer::arm_idle`]), released by the expiry or by
/// whoever dequeues it. `dead` is set once and then the timer is never
/// armed again; arming happens under `dead`'s lock.
#[pin_data(PinnedDrop)]
pub(crate) struct HrTimer<T, const ID: u64> {
    #[pin]
    raw: Opaque<b::hrtimer>,
    #[pin]
    dead: SpinLockBh<bool>,
    _owner: PhantomData<fn(Arc<T>)>,
}

// SAFETY: The `hrtimer` is only touched through the hrtimer API, which is
// safe from any thread; `dead` is a lock.
unsafe impl<T, const ID: u64> Send for HrTimer<T, ID> {}
// SAFETY: As above: every method takes `&self` and the hrtimer API
// synchronizes itself.
unsafe impl<T, const ID: u64> Sync for HrTimer<T, ID> {}

impl<T, const ID: u64> HrTimer<T, ID>
where
    T: TimerOwner<ID> + HasHrTimer<ID>,
{
    /// An idle timer.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            raw <- Opaque::ffi_init(move |slot: *mut b::hrtimer| {
                // SAFETY: `slot` is valid for writes and pinned.
                unsafe { b::rxe_rs_hrtimer_setup(slot, Some(Self::expire)) }
            }),
            dead <- new_spinlock_bh!(false, "rxe_hrtimer"),
            _owner: PhantomData,
        })
    }

    /// The timer callback, in the hrtimer softirq.
    ///
    /// # Safety
    ///
    /// Called by the hrtimer core for a `raw` queued by `arm_idle`, which is
    /// a field of a `T` in an `Arc` and holds a reference to it.
    unsafe extern "C" fn expire(raw: *mut b::hrtimer) -> b::hrtimer_restart {
        let owner = raw
            .cast::<u8>()
            .wrapping_sub(T::OFFSET + core::mem::offset_of!(Self, raw))
            .cast::<T>()
            .cast_const();
        // SAFETY: By the invariant the queued timer held a reference to the
        // owner; the core dequeued it before calling us, so that reference
        // is ours now.
        let owner = unsafe { Arc::from_raw(owner) };
        T::expired(owner);
        NORESTART
    }

    fn is_in(&self, owner: &Arc<T>) -> bool {
        if ptr::eq(T::hrtimer(owner), self) {
            return true;
        }
        pr_warn!("hrtimer used with an owner it does not belong to\n");
        false
    }

    /// Gives back the reference a queued timer held on `owner`, after the
    /// caller dequeued it.
    fn release(owner: &Arc<T>) {
        let held: *const T = &**owner;
        // SAFETY: By the invariant the queued timer held a reference to
        // this owner (an `Arc::into_raw` of it); dequeuing it made it the
        // caller's. The caller's own `owner` keeps the count above zero.
        drop(unsafe { Arc::from_raw(held) });
    }

    /// Arms the timer to expire `delay_ns` from now, unless it is already
    /// queued (the earlier deadline stands) or shut down. Any context but
    /// hard IRQ.
    pub(crate) fn arm_idle(&self, owner: &Arc<T>, delay_ns: u64) {
        if !self.is_in(owner) {
            return;
        }
        let dead = self.dead.lock();
        // SAFETY: `raw` was initialised in `new`; the helper only reads it.
        if *dead || unsafe { b::rxe_rs_hrtimer_queued(self.raw.get()) } {
            return;
        }
        // The reference the queued timer holds. Not queued, and every arm
        // is under `dead`: this enqueue is the only one. (A callback still
        // running from the last expiry owns the reference of that arm.)
        let _ = Arc::into_raw(owner.clone());
        // SAFETY: `raw` was initialised in `new` and stays valid while
        // `self` does.
        unsafe { b::rxe_rs_hrtimer_start_ns(self.raw.get(), delay_ns) };
        drop(dead);
    }

    /// Whether the timer is queued (armed, not yet expired).
    pub(crate) fn pending(&self) -> bool {
        // SAFETY: `raw` was initialised in `new`; the helper only reads it.
        unsafe { b::rxe_rs_hrtimer_queued(self.raw.get()) }
    }

    /// Dequeues the timer without waiting for a callback already running.
    /// Any context but hard IRQ, including the timer's own callback.
    pub(crate) fn cancel(&self, owner: &Arc<T>) {
        if !self.is_in(owner) {
            return;
        }
        // SAFETY: `raw` was initialised in `new`.
        if unsafe { b::hrtimer_try_to_cancel(self.raw.get()) } == 1 {
            Self::release(owner);
        }
    }

    /// Disarms the timer for good and waits for a running callback: when
    /// this returns the timer holds no reference to `owner` and its
    /// callback never runs again. Process context; not from the callback
    /// itself nor under a lock the callback takes.
    pub(crate) fn shutdown(&self, owner: &Arc<T>) {
        if !self.is_in(owner) {
            return;
        }
        *self.dead.lock() = true;
        // SAFETY: `raw` was initialised in `new`; we are not its callback
        // (documented requirement).
        if unsafe { b::hrtimer_cancel(self.raw.get()) } == 1 {
            Self::release(owner);
        }
    }
}

#[pinned_drop]
impl<T, const ID: u64> PinnedDrop for HrTimer<T, ID> {
    fn drop(self: Pin<&mut Self>) {
        // A queued timer holds a reference to the owner it is part of, so
        // it cannot be queued while that owner is dropped; this only keeps
        // a broken invariant from turning into a use after free. Not the
        // waiting variant: the last reference may be dropped by our own
        // callback.
        // SAFETY: `raw` was initialised in `new`.
        if unsafe { b::rxe_rs_hrtimer_queued(self.raw.get()) } {
            pr_warn!("hrtimer dropped while queued\n");
            // SAFETY: `raw` was initialised in `new`.
            unsafe { b::hrtimer_try_to_cancel(self.raw.get()) };
        }
    }
}
