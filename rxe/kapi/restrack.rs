// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The driver's part of a resource entry that the RDMA core's netlink dump
//! (`rdma resource show`) is building: a table of named attributes (printed
//! with `-dd`) or one raw record (`-r`).

use kernel::prelude::*;

use super::errno;
use crate::rxe::proto::res_details::{Attr, Value};
use crate::rxe::sys;

/// `s` as the C side takes it (the kernel's `char` is unsigned).
#[cfg(rxe_kernel_7)]
fn c_ptr(s: &'static core::ffi::CStr) -> *const kernel::ffi::c_char {
    s.as_char_ptr()
}

/// `s` as the C side takes it (the kernel's `char` is unsigned).
#[cfg(not(rxe_kernel_7))]
fn c_ptr(s: &'static core::ffi::CStr) -> *const kernel::ffi::c_char {
    s.as_ptr().cast()
}

/// The netlink message of one resource entry, lent to a `fill_res_*` op.
///
/// # Invariants
///
/// `msg` is the message the core passed to the op; it is valid and only
/// written through this value until the op returns.
pub(crate) struct EntryMsg(*mut sys::sk_buff);

impl EntryMsg {
    /// # Safety
    ///
    /// `msg` is the message the core passed to a `fill_res_*_entry` or
    /// `fill_res_*_entry_raw` op of `ib_device_ops`, and the value does not
    /// outlive that call.
    pub(crate) unsafe fn from_raw(msg: *mut sys::sk_buff) -> Self {
        // INVARIANT: The caller lends the message for the op's duration.
        Self(msg)
    }

    /// Adds `attrs` as the entry's driver table: all of them, or none and
    /// `EMSGSIZE` when the message is full (the core then continues the
    /// dump in a new message).
    pub(crate) fn put_attrs(&mut self, attrs: &[Attr]) -> Result {
        // SAFETY: `self.0` is the core's message (type invariant).
        let table = unsafe { sys::rxe_rs_res_driver_start(self.0) };
        if table.is_null() {
            return Err(errno::emsgsize());
        }
        for a in attrs {
            let name = c_ptr(a.name);
            let r = match a.value {
                Value::U32(v) => {
                    // SAFETY: `self.0` is the core's message (type invariant);
                    // `name` is a static NUL-terminated string.
                    unsafe { sys::rdma_nl_put_driver_u32(self.0, name, v) }
                }
                Value::Hex32(v) => {
                    // SAFETY: `self.0` is the core's message (type invariant);
                    // `name` is a static NUL-terminated string.
                    unsafe { sys::rdma_nl_put_driver_u32_hex(self.0, name, v) }
                }
                Value::Status(s) => {
                    let text = match s {
                        // SAFETY: The core maps any status value to a string
                        // of its own static table.
                        Some(s) => unsafe { sys::ib_wc_status_msg(s.as_raw()) },
                        None => c_ptr(c"none"),
                    };
                    // SAFETY: `self.0` is the core's message (type invariant);
                    // `name` and `text` are static NUL-terminated strings.
                    unsafe { sys::rdma_nl_put_driver_string(self.0, name, text) }
                }
            };
            if r != 0 {
                // SAFETY: `table` was opened in this message just above.
                unsafe { sys::rxe_rs_res_driver_cancel(self.0, table) };
                return Err(errno::emsgsize());
            }
        }
        // SAFETY: `table` was opened in this message just above.
        unsafe { sys::rxe_rs_res_driver_end(self.0, table) };
        Ok(())
    }

    /// Adds `data` as the entry's raw record.
    pub(crate) fn put_raw(&mut self, data: &[u8]) -> Result {
        let len = u32::try_from(data.len()).map_err(|_| errno::emsgsize())?;
        // SAFETY: `self.0` is the core's message (type invariant); `data`
        // is readable for `len` bytes, which the helper copies.
        let r = unsafe { sys::rxe_rs_res_put_raw(self.0, data.as_ptr().cast(), len) };
        if r == 0 {
            Ok(())
        } else {
            Err(errno::emsgsize())
        }
    }
}
