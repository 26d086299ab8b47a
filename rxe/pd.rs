// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Protection domains.

use kernel::prelude::*;

use crate::rxe::device::{Device, ObjCount, ObjKind};
use crate::rxe::kapi::udata::Udata;

/// A protection domain. Holds a slot of the device's PD budget.
pub(crate) struct Pd {
    _slot: ObjCount,
}

impl Pd {
    pub(crate) fn new(dev: &Device, _udata: Option<&Udata>) -> Result<Self> {
        Ok(Self {
            _slot: dev.state().take_slot(ObjKind::Pd)?,
        })
    }
}
