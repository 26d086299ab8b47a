// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! `ib_udata`: the driver-specific command and response buffers of a verb.

use kernel::{prelude::*, uaccess::UserSlice};

use crate::rxe::sys;

/// The user buffers of one verbs call.
///
/// # Invariants
///
/// `inbuf`/`outbuf` are user pointers with the given lengths, valid to pass
/// to the user-copy routines during the call that provided them.
pub(crate) struct Udata {
    inbuf: usize,
    inlen: usize,
    outbuf: usize,
    outlen: usize,
}

impl Udata {
    /// `None` for kernel callers, who pass no udata.
    ///
    /// # Safety
    ///
    /// `raw` is null or a valid `ib_udata` for the current call.
    pub(crate) unsafe fn from_raw(raw: *mut sys::ib_udata) -> Option<Self> {
        // SAFETY: `raw` is null or a valid `ib_udata` for the current call
        // (the caller's contract); `as_ref` turns null into `None`.
        let u = unsafe { raw.as_ref()? };
        // INVARIANT: The core filled `inbuf`/`outbuf` and their lengths from
        // the user's command for this call.
        Some(Self {
            inbuf: u.inbuf as usize,
            inlen: u.inlen,
            outbuf: u.outbuf as usize,
            outlen: u.outlen,
        })
    }

    pub(crate) fn inlen(&self) -> usize {
        self.inlen
    }

    pub(crate) fn outlen(&self) -> usize {
        self.outlen
    }

    /// Reads the command into `buf`; a shorter command leaves the tail zero,
    /// so newer fields read as "not set" from older user space.
    pub(crate) fn read_in(&self, buf: &mut [u8]) -> Result {
        buf.fill(0);
        let len = buf.len().min(self.inlen);
        user_slice(self.inbuf, len)
            .reader()
            .read_slice(&mut buf[..len])
    }

    /// Writes the response, truncated to what user space made room for.
    pub(crate) fn write_out(&self, data: &[u8]) -> Result {
        let len = data.len().min(self.outlen);
        user_slice(self.outbuf, len)
            .writer()
            .write_slice(&data[..len])
    }
}

/// The user memory at `addr`: 7.x wraps the address in a `UserPtr`.
#[cfg(not(rxe_kernel_7))]
pub(crate) fn user_slice(addr: usize, len: usize) -> UserSlice {
    UserSlice::new(addr as _, len)
}

/// The user memory at `addr`: 7.x wraps the address in a `UserPtr`.
#[cfg(rxe_kernel_7)]
pub(crate) fn user_slice(addr: usize, len: usize) -> UserSlice {
    UserSlice::new(kernel::uaccess::UserPtr::from_addr(addr), len)
}
