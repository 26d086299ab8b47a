// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! RoCEv2 protocol logic with no dependency on the kernel crate.
//!
//! Everything here is plain `core` Rust: the kernel module includes it as
//! `rxe::proto`, and `rxe/proto/Cargo.toml` builds the same files on the host
//! for unit tests and fuzzing. Nothing here allocates or panics on input.

// The modules marked `allow(dead_code)` keep complete sets (the uapi layouts,
// limits, header fields, opcode and state tables, PSN arithmetic) of which
// the driver uses a part, and helpers only the host tests call yet; the
// others must be used in full by the kernel build.
pub(crate) mod accept;
pub(crate) mod ack_req;
pub(crate) mod av;
pub(crate) mod completer;
pub(crate) mod conv;
pub(crate) mod cq_srq;
pub(crate) mod crc32;
pub(crate) mod device_attr;
pub(crate) mod events;
pub(crate) mod gid_set;
pub(crate) mod headers;
pub(crate) mod icrc;
pub(crate) mod index_alloc;
pub(crate) mod ip;
pub(crate) mod local_ops;
pub(crate) mod mr;
pub(crate) mod odp;
pub(crate) mod opcode;
pub(crate) mod packet;
pub(crate) mod params;
pub(crate) mod post;
pub(crate) mod psn;
pub(crate) mod qp;
pub(crate) mod qp_attr;
pub(crate) mod requester;
pub(crate) mod res_details;
pub(crate) mod responder;
pub(crate) mod ring;
pub(crate) mod sge_cursor;
pub(crate) mod tx_frags;
pub(crate) mod uapi;
pub(crate) mod wire;

#[cfg(test)]
mod fuzz_tests;
#[cfg(test)]
mod sim_tests;
#[cfg(test)]
mod testing;
