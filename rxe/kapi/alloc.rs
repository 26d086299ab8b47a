// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Allocation of arrays whose length a verbs caller chooses (queue depths,
//! pages of an MR), and the in-place initialisers whose API changed in 7.x.

use kernel::alloc::{flags, Flags};
use kernel::prelude::*;

/// Flags for a caller-sized `KVVec`: kvmalloc falls back to vmalloc where a
/// kmalloc of that order would fail (and warn), and a request too large for
/// vmalloc too fails with ENOMEM quietly, as it is the caller's choice.
pub(crate) fn caller_sized() -> Flags {
    flags::GFP_KERNEL | flags::__GFP_NOWARN
}

/// A finished value as an initialiser: 6.12's init module takes any value
/// as one with any error type, 7.x's pin-init only with `Infallible`, so
/// there the value goes in an `Ok`.
#[cfg(not(rxe_kernel_7))]
pub(crate) fn value<T>(v: T) -> impl PinInit<T, Error> {
    v
}

/// A finished value as an initialiser (see the 6.12 one).
#[cfg(rxe_kernel_7)]
pub(crate) fn value<T>(v: T) -> impl PinInit<T, Error> {
    Ok::<T, Error>(v)
}

/// An array of `N` values made by `f`, built in place.
#[cfg(not(rxe_kernel_7))]
pub(crate) fn array_from_fn<T, const N: usize>(f: impl Fn(usize) -> T) -> impl Init<[T; N], Error> {
    kernel::init::init_array_from_fn::<_, N, T, Error>(f)
}

/// An array of `N` values made by `f`, built in place.
#[cfg(rxe_kernel_7)]
pub(crate) fn array_from_fn<T, const N: usize>(f: impl Fn(usize) -> T) -> impl Init<[T; N], Error> {
    pin_init::init_array_from_fn::<_, N, T, Error>(move |i| Ok::<T, Error>(f(i)))
}

/// Runs `init` on `slot`: the initialiser's method is `__pinned_init` on
/// 6.12, `__init` on 7.x.
///
/// # Safety
///
/// As `PinInit`'s: `slot` is valid, uninitialised and pinned memory, and is
/// left alone but for freeing when this fails.
#[cfg(not(rxe_kernel_7))]
pub(crate) unsafe fn init_at<T, E>(init: impl PinInit<T, E>, slot: *mut T) -> Result<(), E> {
    // SAFETY: `slot` is valid, uninitialised and pinned memory, left alone
    // but for freeing when this fails (the caller's contract): what
    // `__pinned_init` requires.
    unsafe { init.__pinned_init(slot) }
}

/// Runs `init` on `slot` (see the 6.12 one).
///
/// # Safety
///
/// As `PinInit`'s: `slot` is valid, uninitialised and pinned memory, and is
/// left alone but for freeing when this fails.
#[cfg(rxe_kernel_7)]
pub(crate) unsafe fn init_at<T, E>(init: impl PinInit<T, E>, slot: *mut T) -> Result<(), E> {
    // SAFETY: `slot` is valid, uninitialised and pinned memory, left alone
    // but for freeing when this fails (the caller's contract): what
    // `PinInit::__init` requires.
    unsafe { init.__init(slot) }
}

/// Sets the length of `v` to `len` without dropping or initialising
/// anything: 6.12's `Vec::set_len`, 7.x's `inc_len`/`truncate` (the same for
/// `Copy` elements).
///
/// # Safety
///
/// `len` is at most the capacity and the first `len` elements are
/// initialised.
#[cfg(not(rxe_kernel_7))]
pub(crate) unsafe fn vec_set_len<T: Copy, A: kernel::alloc::Allocator>(
    v: &mut Vec<T, A>,
    len: usize,
) {
    // SAFETY: `len` is at most the capacity and the first `len` elements
    // are initialised (the caller's contract); `T: Copy`, so elements cut
    // off need no drop.
    unsafe { v.set_len(len) }
}

/// Sets the length of `v` (see the 6.12 one).
///
/// # Safety
///
/// `len` is at most the capacity and the first `len` elements are
/// initialised.
#[cfg(rxe_kernel_7)]
pub(crate) unsafe fn vec_set_len<T: Copy, A: kernel::alloc::Allocator>(
    v: &mut Vec<T, A>,
    len: usize,
) {
    if let Some(more) = len.checked_sub(v.len()) {
        // SAFETY: `v.len() + more = len` is at most the capacity and the
        // first `len` elements are initialised (the caller's contract).
        unsafe { v.inc_len(more) }
    } else {
        v.truncate(len);
    }
}
