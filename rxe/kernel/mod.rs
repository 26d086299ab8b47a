// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Safe wrappers over the kernel objects the 6.12 kernel crate lacks.
//!
//! All of the driver's `unsafe` code lives in this layer (and the crate
//! root); the driver logic above it is written against these types.

pub(crate) mod alloc;
#[cfg(target_arch = "x86_64")]
mod clmul;
pub(crate) mod crc32;
pub(crate) mod cq_srq;
pub(crate) mod errno;
pub(crate) mod event;
pub(crate) mod ibdev;
pub(crate) mod link;
pub(crate) mod lock;
pub(crate) mod mcast;
pub(crate) mod netdev;
pub(crate) mod object;
pub(crate) mod ops;
pub(crate) mod page;
pub(crate) mod random;
pub(crate) mod route;
pub(crate) mod skb;
pub(crate) mod task;
pub(crate) mod timer;
pub(crate) mod udata;
pub(crate) mod udp;
pub(crate) mod umem;
pub(crate) mod vmbuf;
pub(crate) mod wr;
