// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! What the host tests share: a deterministic random generator, the
//! responder's reference model and a send queue for the completer. Not part
//! of the driver.

pub(crate) mod model;
pub(crate) mod rng;
pub(crate) mod sq;
