// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! One-shot kernel timers (`timer_list`) owned by an object in an [`Arc`]:
//! the retransmit and RNR timers of a QP.
//!
//! A [`Timer`] lives inside its owner `T`. While it is armed it holds a
//! reference to the owner, which its expiry hands to
//! [`TimerOwner::expired`]; so the owner cannot be freed while the timer is
//! pending or its callback runs, whatever the destroy path does. The destroy
//! path still calls [`Timer::shutdown`] so that the timer stops holding the
//! owner and no callback runs after the object is torn down.
//!
//! `expired` runs in softirq context: it should only note the event and
//! schedule a task (as C's `retransmit_timer`/`rnr_nak_timer` do). It may
//! re-arm its own timer.
//!
//! # Example
//!
//! `rxe/selftest.rs` is a compiled example (its `Probe`'s timer, armed,
//! cancelled and shut down, whose expiry schedules a task); the QP's
//! retransmission and RNR timers (`rxe/qp`) are the driver's use.

use core::{marker::PhantomData, ptr};

use kernel::{ffi::c_ulong, prelude::*, str::CStr, sync::Arc, types::Opaque};

use crate::rxe::kapi::lock::{lock_class_ptr, new_spinlock_bh, SpinLockBh, StaticLockClass};
use crate::rxe::sys;

/// A point in time or a duration, in jiffies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Jiffies(c_ulong);

impl Jiffies {
    /// The current time.
    pub(crate) fn now() -> Self {
        // SAFETY: Reads a global counter, no preconditions.
        Self(unsafe { sys::rxe_rs_jiffies() })
    }

    /// `usecs` rounded up to jiffies.
    pub(crate) fn from_usecs(usecs: u32) -> Self {
        // SAFETY: Pure conversion, no preconditions.
        Self(unsafe { sys::rxe_rs_usecs_to_jiffies(usecs) })
    }

    /// `nsecs` in jiffies, rounded down as C's `nsecs_to_jiffies` does.
    pub(crate) fn from_nsecs(nsecs: u64) -> Self {
        // SAFETY: Pure conversion, no preconditions.
        Self(unsafe { sys::nsecs_to_jiffies(nsecs) })
    }

    /// The raw count.
    pub(crate) fn raw(self) -> c_ulong {
        self.0
    }

    /// A count of `n` jiffies.
    pub(crate) fn from_raw(n: c_ulong) -> Self {
        Self(n)
    }

    /// A delay that waits at least `nsecs` however close to the next tick
    /// the timer is armed: a timer armed `n` ticks ahead fires between
    /// `n - 1` and `n` tick lengths later, so this is `nsecs` rounded down
    /// plus two ticks. (C's `nsecs_to_jiffies` rounded down and clamped to
    /// one jiffy can fire microseconds after it is armed.)
    pub(crate) fn at_least_nsecs(nsecs: u64) -> Self {
        Self(Self::from_nsecs(nsecs).0.saturating_add(2))
    }

    /// A delay that waits at least `usecs` (see [`Jiffies::at_least_nsecs`]):
    /// `usecs` rounded up plus one tick.
    pub(crate) fn at_least_usecs(usecs: u32) -> Self {
        Self(Self::from_usecs(usecs).0.saturating_add(1))
    }

    /// `self + d`; jiffies wrap, so does this.
    pub(crate) fn after(self, d: Jiffies) -> Self {
        Self(self.0.wrapping_add(d.0))
    }
}

/// What happens when a timer expires.
pub(crate) trait TimerOwner<const ID: u64>: Sized + Send + Sync + 'static {
    /// Runs in softirq context with the reference the armed timer held.
    fn expired(this: Arc<Self>);
}

/// Finds a timer in its owner; implemented by [`impl_has_timer!`].
///
/// # Safety
///
/// `OFFSET` is the offset in `Self` of the `Timer<Self, ID>` that `timer`
/// returns.
pub(crate) unsafe trait HasTimer<const ID: u64>: Sized {
    const OFFSET: usize;
    fn timer(&self) -> &Timer<Self, ID>;
}

/// Creates a [`Timer`] initialiser with its own lockdep class.
macro_rules! new_timer {
    ($name:literal $(,)?) => {
        $crate::rxe::kapi::timer::Timer::new(
            ::kernel::c_str!($name),
            ::kernel::static_lock_class!(),
        )
    };
}
pub(crate) use new_timer;

/// Implements [`HasTimer`] for an owner. The owner also implements
/// [`TimerOwner`] for each ID.
macro_rules! impl_has_timer {
    ($(impl HasTimer<$id:tt> for $ty:ty { self.$field:ident })*) => {$(
        // SAFETY: `OFFSET` is the offset of the field `timer` returns.
        unsafe impl $crate::rxe::kapi::timer::HasTimer<{ $id }> for $ty {
            const OFFSET: usize = ::core::mem::offset_of!($ty, $field);

            fn timer(&self) -> &$crate::rxe::kapi::timer::Timer<Self, { $id }> {
                &self.$field
            }
        }
    )*};
}
pub(crate) use impl_has_timer;

/// A `timer_list` whose expiry calls `T::expired`; `ID` tells the timers
/// of one owner apart.
///
/// # Invariants
///
/// While `raw` is pending it holds one reference to the `T` the timer is a
/// field of (taken in [`Timer::arm_at`]), released by the expiry or by
/// whoever deactivates it. `dead` is set once and then the timer is never
/// armed again.
#[pin_data(PinnedDrop)]
pub(crate) struct Timer<T, const ID: u64> {
    #[pin]
    raw: Opaque<sys::timer_list>,
    #[pin]
    dead: SpinLockBh<bool>,
    _owner: PhantomData<fn(Arc<T>)>,
}

// SAFETY: The `timer_list` is only touched through the timer API, which
// is safe from any thread; `dead` is a lock.
unsafe impl<T, const ID: u64> Send for Timer<T, ID> {}
// SAFETY: Every method takes `&self`; the timer API synchronizes itself and
// `dead` is a lock.
unsafe impl<T, const ID: u64> Sync for Timer<T, ID> {}

impl<T, const ID: u64> Timer<T, ID>
where
    T: TimerOwner<ID> + HasTimer<ID>,
{
    /// An idle timer. Use [`new_timer!`].
    pub(crate) fn new(name: &'static CStr, key: StaticLockClass) -> impl PinInit<Self> {
        let key = lock_class_ptr(key);
        // INVARIANT: A timer just initialised is not pending, and not dead.
        pin_init!(Self {
            raw <- Opaque::ffi_init(move |slot: *mut sys::timer_list| {
                // SAFETY: `slot` is valid for writes and pinned; `name` and
                // `key` are static.
                unsafe { sys::rxe_rs_timer_init_key(slot, Some(Self::expire), 0, name.as_char_ptr(), key.cast()) }
            }),
            dead <- new_spinlock_bh!(false, "rxe_timer"),
            _owner: PhantomData,
        })
    }

    /// The timer callback.
    ///
    /// # Safety
    ///
    /// Called by the timer core for a `raw` armed by `arm_at`, which is a
    /// field of a `T` in an `Arc` and holds a reference to it.
    unsafe extern "C" fn expire(raw: *mut sys::timer_list) {
        // `raw` is the first field of the timer, which is `T::OFFSET` into
        // its owner.
        let owner = raw
            .cast::<u8>()
            .wrapping_sub(T::OFFSET + core::mem::offset_of!(Self, raw))
            .cast::<T>()
            .cast_const();
        // INVARIANT: The timer core detached the timer before calling us:
        // it is no longer pending, and the reference it held is ours now.
        // SAFETY: By the type invariant the armed timer held a reference to
        // the owner (an `Arc::into_raw` of it), which is now ours.
        let owner = unsafe { Arc::from_raw(owner) };
        T::expired(owner);
    }

    /// Whether `owner` is the object this timer lives in.
    fn is_in(&self, owner: &Arc<T>) -> bool {
        if ptr::eq(T::timer(owner), self) {
            return true;
        }
        pr_warn!("timer used with an owner it does not belong to\n");
        false
    }

    /// Gives back the reference a pending timer held on `owner`, after the
    /// caller deactivated it.
    fn release(owner: &Arc<T>) {
        let held: *const T = &**owner;
        // INVARIANT: The caller deactivated the timer, which holds nothing
        // from now on.
        // SAFETY: By the type invariant the pending timer held a reference
        // to this owner (an `Arc::into_raw` of it); deactivating the timer
        // made it the caller's. The caller's own `owner` keeps the count above
        // zero.
        drop(unsafe { Arc::from_raw(held) });
    }

    /// Arms (or re-arms) the timer to expire at `expires`. Does nothing
    /// after [`Timer::shutdown`]. Any context but hard IRQ.
    pub(crate) fn arm_at(&self, owner: &Arc<T>, expires: Jiffies) {
        if !self.is_in(owner) {
            return;
        }
        let dead = self.dead.lock();
        if *dead {
            return;
        }
        // INVARIANT: Armed under `dead`'s lock with `dead` false, and the
        // pending timer holds one reference to its owner: `held`, or the
        // one it held already when it was pending.
        let held = Arc::into_raw(owner.clone());
        // SAFETY: `raw` was initialised in `new` and stays valid while
        // `self` does.
        let was_pending = unsafe { sys::mod_timer(self.raw.get(), expires.raw()) } != 0;
        if was_pending {
            // The pending timer already held a reference: keep one.
            // SAFETY: `held` is the reference taken above, unused.
            drop(unsafe { Arc::from_raw(held) });
        }
        drop(dead);
    }

    /// Arms the timer to expire `delay` from now (C's
    /// `mod_timer(t, jiffies + delay)`).
    pub(crate) fn arm_in(&self, owner: &Arc<T>, delay: Jiffies) {
        self.arm_at(owner, Jiffies::now().after(delay));
    }

    /// Whether the timer is armed and has not expired yet.
    pub(crate) fn pending(&self) -> bool {
        // SAFETY: `raw` was initialised in `new`; the helper only reads it.
        unsafe { sys::rxe_rs_timer_pending(self.raw.get()) }
    }

    /// Disarms the timer without waiting for a callback already running.
    /// Any context but hard IRQ, including the timer's own callback.
    pub(crate) fn cancel(&self, owner: &Arc<T>) {
        if !self.is_in(owner) {
            return;
        }
        // SAFETY: `raw` was initialised in `new`.
        if unsafe { sys::timer_delete(self.raw.get()) } != 0 {
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
        // INVARIANT: `dead` is set, once and for good: `arm_at` checks it
        // under the same lock.
        *self.dead.lock() = true;
        // SAFETY: `raw` was initialised in `new`; we are not its callback
        // (documented requirement), so the wait ends.
        if unsafe { sys::timer_delete_sync(self.raw.get()) } != 0 {
            Self::release(owner);
        }
    }
}

#[pinned_drop]
impl<T, const ID: u64> PinnedDrop for Timer<T, ID> {
    fn drop(self: Pin<&mut Self>) {
        // A pending timer holds a reference to the owner it is part of, so
        // it cannot be pending while that owner is dropped. This only keeps
        // a broken invariant from turning into a use after free. Not the
        // sync variant: the last reference may be dropped by our own
        // callback.
        // SAFETY: `raw` was initialised in `new`.
        if unsafe { sys::rxe_rs_timer_pending(self.raw.get()) } {
            pr_warn!("timer dropped while pending\n");
            // SAFETY: `raw` was initialised in `new`.
            unsafe { sys::timer_delete(self.raw.get()) };
        }
    }
}
