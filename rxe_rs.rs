// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! rxe_rs: Soft-RoCE, the RoCEv2 RDMA transport in software, in Rust.
//!
//! A drop-in replacement for the kernel's `rdma_rxe`: the same link type
//! (`rdma link add NAME type rxe netdev DEV`), the same user ABI towards
//! rdma-core's rxe provider, the same packets on the wire.

// The QP is built by one pin-init macro with many fields.
#![recursion_limit = "256"]

use kernel::prelude::*;

mod rxe;

use rxe::ops::Driver;

use rxe::kapi::{
    fault::FaultQueue,
    ibdev,
    link::LinkType,
    netdev::Notifier,
    netns::TunnelNets,
    task::{BhRuns, WorkQueue},
    udp,
};

rxe::kapi::module_info! {
    type: RxeModule,
    name: "rdma_rxe_rs",
    author: "rxe_rs developers",
    description: "Soft RoCE (RoCEv2) RDMA transport driver in Rust",
    license: "Dual BSD/GPL",
    alias: ["rdma-link-rxe"],
}

/// Module state. Fields drop in declaration order, which is the teardown
/// order: stop new links, remove the devices (the last device of each
/// namespace releases its tunnel sockets), then stop events and the
/// per-namespace state, wait for our packets still queued in the network
/// stack (their destructor is our code), then for the softirq runs of the
/// receive path, and last the workqueue the QP tasks run on. The ODP
/// faults' queue goes right after the devices: a fault holds a reference
/// on its device, so removing the devices waits for the faults, and
/// draining the queue then finds it empty.
struct RxeModule {
    _link: LinkType,
    _devices: Devices,
    _faults: FaultQueue,
    _notifier: Notifier,
    _nets: TunnelNets,
    _tx_skbs: TxSkbs,
    _bh: BhRuns,
    _wq: WorkQueue,
}

/// Waits for the skbs the driver sent and the stack still holds when dropped.
struct TxSkbs;

impl Drop for TxSkbs {
    fn drop(&mut self) {
        udp::wait_for_tx_skbs();
    }
}

/// Removes every device of the driver when dropped.
struct Devices;

impl Drop for Devices {
    fn drop(&mut self) {
        ibdev::unregister_all();
    }
}

impl kernel::Module for RxeModule {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        rxe::kapi::crc32::select();
        rxe::net::select_zcopy();
        let wq = WorkQueue::create()?;
        let faults = FaultQueue::create()?;
        let bh = BhRuns::init();
        #[cfg(rxe_rs_selftest)]
        rxe::selftest::run();
        // Tunnel sockets come with the first device of each namespace.
        let nets = TunnelNets::register::<Driver>()?;
        let notifier = Notifier::register::<Driver>()?;
        let link = LinkType::register::<Driver>()?;
        pr_info!("loaded\n");
        Ok(Self {
            _link: link,
            _devices: Devices,
            _faults: faults,
            _notifier: notifier,
            _nets: nets,
            _tx_skbs: TxSkbs,
            _bh: bh,
            _wq: wq,
        })
    }
}

impl Drop for RxeModule {
    fn drop(&mut self) {
        pr_info!("unloading\n");
    }
}
