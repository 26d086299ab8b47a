// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The `ib_device_ops` table: every entry point the RDMA core calls.
//!
//! Each trampoline turns the core's raw pointers into references to driver
//! objects, calls the driver, and turns its `Result` back into an errno.
//! Nothing else in the driver sees the raw pointers. One file per object
//! family; each fills its part of the table.

mod ah;
mod cq;
mod device;
mod mr;
mod mw;
mod qp;
mod srq;
mod stats;

use crate::rxe::sys as b;

/// Builds the ops table; the core copies it into each device.
pub(crate) fn device_ops() -> b::ib_device_ops {
    let mut ops = b::ib_device_ops::default();
    device::fill(&mut ops);
    ah::fill(&mut ops);
    cq::fill(&mut ops);
    mr::fill(&mut ops);
    mw::fill(&mut ops);
    qp::fill(&mut ops);
    srq::fill(&mut ops);
    stats::fill(&mut ops);
    ops
}
