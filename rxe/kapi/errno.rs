// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Errnos the 6.12 kernel crate does not name.

use kernel::error::Error;

use crate::rxe::sys;

macro_rules! errno {
    ($($fn:ident => $c:ident),* $(,)?) => {$(
        pub(crate) fn $fn() -> Error {
            // Errno constants are small positive numbers.
            Error::from_errno(-(sys::$c as i32))
        }
    )*};
}

errno! {
    eopnotsupp => EOPNOTSUPP,
    eafnosupport => EAFNOSUPPORT,
    emsgsize => EMSGSIZE,
    enobufs => ENOBUFS,
    ehostunreach => EHOSTUNREACH,
}
