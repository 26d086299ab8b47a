// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Errnos the 6.12 kernel crate does not name.

use kernel::error::Error;

use crate::rxe::sys as b;

macro_rules! errno {
    ($($fn:ident => $c:ident),* $(,)?) => {$(
        #[allow(dead_code)]
        pub(crate) fn $fn() -> Error {
            Error::from_errno(-(b::$c as i32))
        }
    )*};
}

errno! {
    eopnotsupp => EOPNOTSUPP,
    eafnosupport => EAFNOSUPPORT,
    emsgsize => EMSGSIZE,
    enobufs => ENOBUFS,
    etimedout => ETIMEDOUT,
    ehostunreach => EHOSTUNREACH,
}
