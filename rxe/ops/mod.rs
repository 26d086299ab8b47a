// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The C entry points: the `ib_device_ops` table the RDMA core calls, and
//! the driver's side of the wrapper layer's callbacks (link type, netdev
//! events, received datagrams).
//!
//! Trampolines only: raw pointers in, a call into the driver, errno out.
//! Each turns the core's raw pointers into references to driver objects
//! (the C<->Rust struct conversions are `From`/`TryFrom` impls in
//! `rxe/kapi`), calls the driver, and turns its `Result` back into an
//! errno. Nothing else in the driver sees the raw pointers. One file per
//! object family; each fills its part of the table.

mod ah;
mod cq;
mod device;
mod hooks;
mod mr;
mod mw;
mod qp;
mod srq;
mod stats;

pub(crate) use hooks::Driver;

use crate::rxe::device::DeviceState;
use crate::rxe::kapi::ibdev::DeviceData;
use crate::rxe::sys;

// SAFETY: `DeviceState` is the only `DeviceData` of the module, and every
// device it registers (`device::newlink`) is a `Device<DeviceState>`.
unsafe impl DeviceData for DeviceState {
    fn ops() -> sys::ib_device_ops {
        device_ops()
    }
}

/// Builds the ops table; the core copies it into each device.
fn device_ops() -> sys::ib_device_ops {
    let mut ops = sys::ib_device_ops::default();
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
