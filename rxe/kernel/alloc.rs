// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Allocation of arrays whose length a verbs caller chooses (queue depths,
//! pages of an MR), and arrays built in place.

use kernel::alloc::{flags, Flags};

/// Flags for a caller-sized `KVVec`: kvmalloc falls back to vmalloc where a
/// kmalloc of that order would fail (and warn), and a request too large for
/// vmalloc too fails with ENOMEM quietly, as it is the caller's choice.
pub(crate) fn caller_sized() -> Flags {
    flags::GFP_KERNEL | flags::__GFP_NOWARN
}

/// Builds an array in place, element by element: the init crate's
/// `init_array_from_fn` (the kernel crate's on 6.12, pin-init's on 7.x).
#[cfg(not(rxe_kernel_7))]
pub(crate) use kernel::init::init_array_from_fn;
/// Builds an array in place, element by element: the init crate's
/// `init_array_from_fn` (the kernel crate's on 6.12, pin-init's on 7.x).
#[cfg(rxe_kernel_7)]
pub(crate) use pin_init::init_array_from_fn;
