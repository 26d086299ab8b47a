// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The memory rxe shares with user space: queue layout (`rdma_user_rxe.h`,
//! `ib_user_verbs.h`), parsers for the work requests user space posts there,
//! and writers for what the kernel hands back (WQE status, CQEs, mmap info).
//!
//! All queue memory stays writable by user space while the kernel works on it.
//! The kernel copies a slot into its own buffer first; the parsers here read
//! that copy once, validate it and return plain values. Fields are in CPU byte
//! order, as user space stores them; `__be32` fields (immediate data) are kept
//! as the raw 32 bits that sit in memory.

use super::params::{limits, MAX_MSG_SZ};
use super::qp;

mod completion;
mod geometry;
mod layout;
mod verbs;
mod wqe;

#[cfg(test)]
#[path = "../uapi_tests.rs"]
mod tests;

pub(crate) use completion::*;
pub(crate) use geometry::*;
pub(crate) use layout::*;
pub(crate) use verbs::*;
pub(crate) use wqe::*;
