// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The responder's protocol logic: the checks of a received request
//! ([`rules`]), the state machine that runs them and replies
//! ([`machine`]), the boundary with its engine ([`io`]), and header
//! prediction for the next packet of a message under way ([`fast`]).

pub(crate) mod fast;
pub(crate) mod io;
pub(crate) mod machine;
pub(crate) mod rules;
