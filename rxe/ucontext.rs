//! User contexts: one per open of the uverbs device by a process.

use kernel::prelude::*;

use crate::rxe::device::{ObjCount, ObjKind};
use crate::rxe::kernel::{ibdev::Device, udata::Udata};

/// A user context. Holds a slot of the device's context budget.
pub(crate) struct Ucontext {
    _slot: ObjCount,
}

impl Ucontext {
    pub(crate) fn new(dev: &Device, _udata: Option<&Udata>) -> Result<Self> {
        Ok(Self {
            _slot: dev.state().take_slot(ObjKind::Ucontext)?,
        })
    }
}
