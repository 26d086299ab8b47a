// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Random numbers from the kernel's generator.

use crate::rxe::sys;

/// A random byte (the initial key byte of MRs and MWs).
pub(crate) fn u8() -> u8 {
    // SAFETY: FFI call without arguments, usable in any context.
    unsafe { sys::get_random_u8() }
}
