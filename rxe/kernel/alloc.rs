// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Allocation of arrays whose length a verbs caller chooses (queue depths,
//! pages of an MR).

use kernel::alloc::{flags, Flags};

/// Flags for a caller-sized `KVVec`: kvmalloc falls back to vmalloc where a
/// kmalloc of that order would fail (and warn), and a request too large for
/// vmalloc too fails with ENOMEM quietly, as it is the caller's choice.
pub(crate) fn caller_sized() -> Flags {
    flags::GFP_KERNEL | flags::__GFP_NOWARN
}
