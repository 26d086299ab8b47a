// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The rxe_rs driver: verbs objects, the RoCEv2 datapath and their kernel glue.
//!
//! Layers, bottom up: `sys` (generated bindings and the C helper shim, private),
//! `kernel` (safe wrappers over kernel objects; it calls the driver only
//! through owner traits the driver implements), `proto` (protocol logic with
//! no kernel dependency, also built and tested on the host), the driver
//! proper, and `ops` (the C entry points: trampolines from the RDMA core's
//! raw pointers to driver calls). All of the driver's `unsafe` lives in
//! `kernel`, `ops` and the crate root.

mod sys;

pub(crate) mod kapi;
pub(crate) mod proto;

pub(crate) mod ah;
pub(crate) mod completer;
pub(crate) mod counters;
pub(crate) mod cq;
pub(crate) mod device;
pub(crate) mod dma;
pub(crate) mod fifo;
pub(crate) mod mcast;
pub(crate) mod mr;
pub(crate) mod mw;
pub(crate) mod net;
#[cfg(rxe_nettest)]
pub(crate) mod nettest;
pub(crate) mod ops;
pub(crate) mod pd;
pub(crate) mod pool;
pub(crate) mod qp;
pub(crate) mod queue;
pub(crate) mod recv;
pub(crate) mod reorder;
pub(crate) mod requester;
pub(crate) mod responder;
#[cfg(rxe_rs_selftest)]
pub(crate) mod selftest;
pub(crate) mod srq;
pub(crate) mod ucontext;
