// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Safe wrappers over the kernel objects the 6.12 kernel crate lacks, and
//! where the differences between the kernels rxe_rs builds for (6.12 and
//! 7.x, `cfg(rxe_kernel_7)`) are dealt with. The exceptions sit in
//! `rxe/ops`, where the C ABI itself differs: the entry points whose
//! `ib_device_ops` signature changed (`resize_cq` against 7.x's
//! `resize_user_cq`, `reg_user_mr` with 7.x's DMA handle argument) and the
//! module's own `struct module` are compiled per kernel there.
//!
//! The driver's `unsafe` code lives in this layer, in the C entry points
//! (`rxe/ops`) and in the crate root; the driver logic above it is written
//! against these types. This layer names no driver module: where it has to
//! call the driver (a timer, a task, a freed skb, a received datagram, a
//! netdev event, a new link) or hold driver state (the device's, a user
//! context's, an AH's), it takes an owner trait or a type parameter that
//! the driver fills in.

pub(crate) mod alloc;
pub(crate) mod attr;
#[cfg(target_arch = "x86_64")]
mod clmul;
pub(crate) mod cq_srq;
pub(crate) mod crc32;
pub(crate) mod errno;
pub(crate) mod event;
pub(crate) mod fault;
pub(crate) mod ibdev;
pub(crate) mod link;
pub(crate) mod lock;
pub(crate) mod mcast;
pub(crate) mod netdev;
pub(crate) mod netns;
pub(crate) mod object;
pub(crate) mod odp;
pub(crate) mod page;
pub(crate) mod random;
pub(crate) mod restrack;
pub(crate) mod route;
pub(crate) mod skb;
pub(crate) mod task;
pub(crate) mod timer;
pub(crate) mod trace;
pub(crate) mod udata;
pub(crate) mod udp;
pub(crate) mod umem;
pub(crate) mod vmbuf;
pub(crate) mod wr;

/// The kernel's `module!` with the keys it takes: 7.x has the author as a
/// list (`authors`).
#[cfg(not(rxe_kernel_7))]
macro_rules! module_info {
    (type: $t:tt, name: $n:tt, author: $a:tt, $($rest:tt)*) => {
        ::kernel::prelude::module! { type: $t, name: $n, author: $a, $($rest)* }
    };
}

/// The kernel's `module!` with the keys it takes: 7.x has the author as a
/// list (`authors`).
#[cfg(rxe_kernel_7)]
macro_rules! module_info {
    (type: $t:tt, name: $n:tt, author: $a:tt, $($rest:tt)*) => {
        ::kernel::prelude::module! { type: $t, name: $n, authors: [$a], $($rest)* }
    };
}
pub(crate) use module_info;
