// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! A spinlock that also masks softirqs: the 6.12 and 7.x kernel crates have
//! none. And one that masks interrupts with `spin_lock_irqsave`: 6.12's
//! kernel crate has none, and 7.x's (`kernel::sync::SpinLockIrq`) keeps a
//! per-CPU nesting count of its own and takes the lock through a C helper,
//! more work per lock than the datapath wants (it takes a dozen locks per
//! packet).
//!
//! Packet receive runs in softirq context and takes the same locks as the
//! verbs calls in process context; without `_bh` a softirq arriving on a CPU
//! that holds the lock would deadlock on it.

use kernel::sync::lock::{Backend, Lock};
use kernel::sync::LockClassKey;

use crate::rxe::sys;

/// The lock calls the backends below make. Where the kernel has out-of-line
/// `_raw_spin_*` functions for them (x86 and most architectures, without
/// PREEMPT_RT), they are called directly on the `raw_spinlock_t` at the
/// start of the `spinlock_t`, as `spin_lock_bh()` and friends do: a call
/// through a C wrapper would be two calls per lock operation, and the
/// datapath takes about a dozen locks per packet (under QEMU's TCG, the
/// bench's emulator, every call and return costs several times a branch).
/// Elsewhere, the wrappers in `helpers_core.c`.
mod raw {
    use super::sys;
    use kernel::ffi::c_ulong;

    type Lock = kernel::bindings::spinlock_t;

    /// `spin_lock_bh()`.
    ///
    /// # Safety
    ///
    /// `l` is a live, initialised `spinlock_t`.
    #[cfg(not(any(CONFIG_PREEMPT_RT, CONFIG_INLINE_SPIN_LOCK_BH)))]
    #[inline(always)]
    pub(super) unsafe fn lock_bh(l: *mut Lock) {
        // SAFETY: Without PREEMPT_RT a `spinlock_t` is a union whose first
        // member is its `raw_spinlock_t`; the caller passes a live, initialised
        // lock.
        unsafe { sys::_raw_spin_lock_bh(l.cast()) }
    }

    /// `spin_lock_bh()`.
    ///
    /// # Safety
    ///
    /// `l` is a live, initialised `spinlock_t`.
    #[cfg(any(CONFIG_PREEMPT_RT, CONFIG_INLINE_SPIN_LOCK_BH))]
    #[inline(always)]
    pub(super) unsafe fn lock_bh(l: *mut Lock) {
        // SAFETY: The caller passes a live, initialised lock.
        unsafe { sys::rxe_rs_spin_lock_bh(l.cast()) }
    }

    /// `spin_unlock_bh()`.
    ///
    /// # Safety
    ///
    /// `l` is a live lock that the caller took with [`lock_bh`].
    #[cfg(not(any(CONFIG_PREEMPT_RT, CONFIG_INLINE_SPIN_UNLOCK_BH)))]
    #[inline(always)]
    pub(super) unsafe fn unlock_bh(l: *mut Lock) {
        // SAFETY: Without PREEMPT_RT a `spinlock_t` is a union whose first
        // member is its `raw_spinlock_t`; the caller holds this live lock, taken with
        // `lock_bh`.
        unsafe { sys::_raw_spin_unlock_bh(l.cast()) }
    }

    /// `spin_unlock_bh()`.
    ///
    /// # Safety
    ///
    /// `l` is a live lock that the caller took with [`lock_bh`].
    #[cfg(any(CONFIG_PREEMPT_RT, CONFIG_INLINE_SPIN_UNLOCK_BH))]
    #[inline(always)]
    pub(super) unsafe fn unlock_bh(l: *mut Lock) {
        // SAFETY: The caller holds the lock.
        unsafe { sys::rxe_rs_spin_unlock_bh(l.cast()) }
    }

    /// `spin_lock_irqsave()`: the flags to restore.
    ///
    /// # Safety
    ///
    /// `l` is a live, initialised `spinlock_t`.
    #[cfg(not(any(CONFIG_PREEMPT_RT, CONFIG_INLINE_SPIN_LOCK_IRQSAVE)))]
    #[inline(always)]
    pub(super) unsafe fn lock_irqsave(l: *mut Lock) -> c_ulong {
        // SAFETY: Without PREEMPT_RT a `spinlock_t` is a union whose first
        // member is its `raw_spinlock_t`; the caller passes a live, initialised lock.
        unsafe { sys::_raw_spin_lock_irqsave(l.cast()) }
    }

    /// `spin_lock_irqsave()`: the flags to restore.
    ///
    /// # Safety
    ///
    /// `l` is a live, initialised `spinlock_t`.
    #[cfg(any(CONFIG_PREEMPT_RT, CONFIG_INLINE_SPIN_LOCK_IRQSAVE))]
    #[inline(always)]
    pub(super) unsafe fn lock_irqsave(l: *mut Lock) -> c_ulong {
        // SAFETY: The caller passes a live, initialised lock.
        unsafe { sys::rxe_rs_spin_lock_irqsave(l.cast()) }
    }

    /// `spin_unlock_irqrestore()`.
    ///
    /// # Safety
    ///
    /// `l` is a live lock that the caller took with [`lock_irqsave`],
    /// which returned `flags`.
    #[cfg(not(any(CONFIG_PREEMPT_RT, CONFIG_INLINE_SPIN_UNLOCK_IRQRESTORE)))]
    #[inline(always)]
    pub(super) unsafe fn unlock_irqrestore(l: *mut Lock, flags: c_ulong) {
        // SAFETY: Without PREEMPT_RT a `spinlock_t` is a union whose first
        // member is its `raw_spinlock_t`; the caller holds this live lock and passes the
        // flags its lock call returned.
        unsafe { sys::_raw_spin_unlock_irqrestore(l.cast(), flags) }
    }

    /// `spin_unlock_irqrestore()`.
    ///
    /// # Safety
    ///
    /// `l` is a live lock that the caller took with [`lock_irqsave`],
    /// which returned `flags`.
    #[cfg(any(CONFIG_PREEMPT_RT, CONFIG_INLINE_SPIN_UNLOCK_IRQRESTORE))]
    #[inline(always)]
    pub(super) unsafe fn unlock_irqrestore(l: *mut Lock, flags: c_ulong) {
        // SAFETY: The caller holds the lock and passes its saved flags.
        unsafe { sys::rxe_rs_spin_unlock_irqrestore(l.cast(), flags) }
    }
}

/// `lockdep_assert_held()`, which 7.x's lock guards make on every lock:
/// nothing, without the C helper's call, when lockdep is off.
///
/// # Safety
///
/// `l` is a live, initialised `spinlock_t`.
#[cfg(rxe_kernel_7)]
#[inline(always)]
unsafe fn assert_held(l: *mut kernel::bindings::spinlock_t) {
    #[cfg(CONFIG_LOCKDEP)]
    // SAFETY: The caller passes a live, initialised lock.
    unsafe {
        kernel::bindings::spin_assert_is_held(l)
    };
    #[cfg(not(CONFIG_LOCKDEP))]
    let _ = l;
}

/// What `static_lock_class!()` gives: a plain reference on 6.12, a pinned
/// one on 7.x.
#[cfg(not(rxe_kernel_7))]
pub(crate) type StaticLockClass = &'static LockClassKey;
/// What `static_lock_class!()` gives: a plain reference on 6.12, a pinned
/// one on 7.x.
#[cfg(rxe_kernel_7)]
pub(crate) type StaticLockClass = core::pin::Pin<&'static LockClassKey>;

/// The C `lock_class_key` of a static lock class.
#[cfg(not(rxe_kernel_7))]
pub(crate) fn lock_class_ptr(key: StaticLockClass) -> *mut kernel::bindings::lock_class_key {
    // `LockClassKey` is a transparent wrapper of `lock_class_key`.
    core::ptr::from_ref(key).cast_mut().cast()
}

/// The C `lock_class_key` of a static lock class.
#[cfg(rxe_kernel_7)]
pub(crate) fn lock_class_ptr(key: StaticLockClass) -> *mut kernel::bindings::lock_class_key {
    key.as_ptr()
}

/// A `spinlock_t` taken with `spin_lock_bh`.
pub(crate) type SpinLockBh<T> = Lock<T, SpinLockBhBackend>;

/// Creates a [`SpinLockBh`] initialiser with a lock class of its own.
macro_rules! new_spinlock_bh {
    ($inner:expr, $name:literal $(,)?) => {
        $crate::rxe::kapi::lock::SpinLockBh::new(
            $inner,
            ::kernel::c_str!($name),
            ::kernel::static_lock_class!(),
        )
    };
}
pub(crate) use new_spinlock_bh;

pub(crate) struct SpinLockBhBackend;

// SAFETY: `spin_lock_bh`/`spin_unlock_bh` give mutual exclusion on an
// initialised `spinlock_t`, and the guard state carries nothing.
unsafe impl Backend for SpinLockBhBackend {
    type State = kernel::bindings::spinlock_t;
    type GuardState = ();

    unsafe fn init(
        ptr: *mut Self::State,
        name: *const kernel::ffi::c_char,
        key: *mut kernel::bindings::lock_class_key,
    ) {
        // SAFETY: Per the trait contract `ptr` is writable and `name`/`key`
        // live forever.
        unsafe { kernel::bindings::__spin_lock_init(ptr, name, key) }
    }

    unsafe fn lock(ptr: *mut Self::State) -> Self::GuardState {
        // SAFETY: The lock was initialised (trait contract).
        unsafe { raw::lock_bh(ptr) }
    }

    unsafe fn unlock(ptr: *mut Self::State, _guard_state: &Self::GuardState) {
        // SAFETY: The caller owns the lock (trait contract).
        unsafe { raw::unlock_bh(ptr) }
    }

    #[cfg(rxe_kernel_7)]
    unsafe fn try_lock(ptr: *mut Self::State) -> Option<Self::GuardState> {
        // SAFETY: The lock was initialised (trait contract).
        (unsafe { sys::rxe_rs_spin_trylock_bh(ptr.cast()) }).then_some(())
    }

    #[cfg(rxe_kernel_7)]
    #[inline(always)]
    unsafe fn assert_is_held(ptr: *mut Self::State) {
        // SAFETY: The lock was initialised (trait contract).
        unsafe { assert_held(ptr) }
    }
}

/// A `spinlock_t` taken with `spin_lock_irqsave`: for state reached from
/// callers that may hold hard-IRQ-disabling locks themselves (the CM
/// creates and destroys AHs under `spin_lock_irqsave`), where a `_bh`
/// unlock would re-enable softirqs with interrupts off.
pub(crate) type SpinLockIrq<T> = Lock<T, SpinLockIrqBackend>;

/// The guard of a held [`SpinLockIrq`].
pub(crate) type SpinLockIrqGuard<'a, T> = kernel::sync::lock::Guard<'a, T, SpinLockIrqBackend>;

/// Creates a [`SpinLockIrq`] initialiser with a lock class of its own.
macro_rules! new_spinlock_irq {
    ($inner:expr, $name:literal $(,)?) => {
        $crate::rxe::kapi::lock::SpinLockIrq::new(
            $inner,
            ::kernel::c_str!($name),
            ::kernel::static_lock_class!(),
        )
    };
}
pub(crate) use new_spinlock_irq;

pub(crate) struct SpinLockIrqBackend;

// SAFETY: `spin_lock_irqsave`/`spin_unlock_irqrestore` give mutual exclusion
// on an initialised `spinlock_t`; the guard keeps the saved flags for the
// unlock.
unsafe impl Backend for SpinLockIrqBackend {
    type State = kernel::bindings::spinlock_t;
    type GuardState = kernel::ffi::c_ulong;

    unsafe fn init(
        ptr: *mut Self::State,
        name: *const kernel::ffi::c_char,
        key: *mut kernel::bindings::lock_class_key,
    ) {
        // SAFETY: Per the trait contract `ptr` is writable and `name`/`key`
        // live forever.
        unsafe { kernel::bindings::__spin_lock_init(ptr, name, key) }
    }

    unsafe fn lock(ptr: *mut Self::State) -> Self::GuardState {
        // SAFETY: The lock was initialised (trait contract).
        unsafe { raw::lock_irqsave(ptr) }
    }

    unsafe fn unlock(ptr: *mut Self::State, guard_state: &Self::GuardState) {
        // SAFETY: The caller owns the lock (trait contract); the flags are
        // the ones its lock call saved.
        unsafe { raw::unlock_irqrestore(ptr, *guard_state) }
    }

    #[cfg(rxe_kernel_7)]
    unsafe fn try_lock(ptr: *mut Self::State) -> Option<Self::GuardState> {
        let mut flags: kernel::ffi::c_ulong = 0;
        // SAFETY: The lock was initialised (trait contract); `flags` is a
        // local.
        (unsafe { sys::rxe_rs_spin_trylock_irqsave(ptr.cast(), &mut flags) }).then_some(flags)
    }

    #[cfg(rxe_kernel_7)]
    #[inline(always)]
    unsafe fn assert_is_held(ptr: *mut Self::State) {
        // SAFETY: The lock was initialised (trait contract).
        unsafe { assert_held(ptr) }
    }
}
