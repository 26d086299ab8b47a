// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Hardware counter entry points: `rdma statistic` and sysfs `hw_counters`
//! read the device's counters through these.

use kernel::{ffi::c_int, prelude::*};

use crate::rxe::counters::{Counter, COUNT};
use crate::rxe::sys;

/// The counter descriptions the core keeps pointers to for the device's life.
struct Descs([sys::rdma_stat_desc; COUNT]);

// SAFETY: The table is immutable and points only at static strings.
unsafe impl Sync for Descs {}

static DESCS: Descs = Descs({
    let mut d = [sys::rdma_stat_desc {
        name: core::ptr::null(),
        flags: 0,
        priv_: core::ptr::null(),
    }; COUNT];
    let mut i = 0;
    while i < COUNT {
        d[i].name = Counter::ALL[i].name().to_bytes_with_nul().as_ptr().cast();
        i += 1;
    }
    d
});

/// How long the core may serve cached values, in ms (rdma_rxe's choice).
const LIFESPAN_MS: kernel::ffi::c_ulong = 10;

pub(super) fn fill(ops: &mut sys::ib_device_ops) {
    ops.alloc_hw_port_stats = Some(alloc_hw_port_stats);
    ops.get_hw_stats = Some(get_hw_stats);
}

/// # Safety
///
/// Only the kernel calls this, through the table or socket it was
/// registered with, with arguments valid for the duration of the call.
unsafe extern "C" fn alloc_hw_port_stats(
    _ib: *mut sys::ib_device,
    _port: u32,
) -> *mut sys::rdma_hw_stats {
    // SAFETY: FFI; the descriptions are static. COUNT is small, so the cast is exact.
    unsafe { sys::rdma_alloc_hw_stats_struct(DESCS.0.as_ptr(), COUNT as c_int, LIFESPAN_MS) }
}

/// # Safety
///
/// Only the kernel calls this, through the table or socket it was
/// registered with, with arguments valid for the duration of the call.
unsafe extern "C" fn get_hw_stats(
    ib: *mut sys::ib_device,
    stats: *mut sys::rdma_hw_stats,
    port: u32,
    _index: c_int,
) -> c_int {
    if port == 0 || stats.is_null() {
        return EINVAL.to_errno();
    }
    // SAFETY: The core calls this on our live device.
    let dev = unsafe { super::device::dev(ib) };
    let values = dev.state().counters.snapshot();
    // SAFETY: `stats` came from `alloc_hw_port_stats` (non-null, checked)
    // and the core holds its lock while we fill it.
    let num = unsafe { (*stats).num_counters };
    let n = usize::try_from(num).map_or(0, |n| n.min(COUNT));
    // SAFETY: `stats` has room for `num_counters` (= COUNT) values after
    // its header, and `n` is at most that; the core's lock keeps other
    // users of the values out while the slice lives.
    let dst = unsafe { (*stats).value.as_mut_slice(n) };
    // A zip, not copy_from_slice: no length-mismatch panic path at all.
    for (d, v) in dst.iter_mut().zip(values.iter()) {
        *d = *v;
    }
    COUNT as c_int
}
