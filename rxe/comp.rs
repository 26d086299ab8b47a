//! The comp engine of a QP (work in progress: see /work/wt/DATAPATH.md).

use kernel::sync::Arc;

use crate::rxe::kernel::task::{Progress, TaskOwner};
use crate::rxe::qp::{self, Shared};

/// Per-QP state of the engine, behind `Shared::comp`.
pub(crate) struct State {}

impl State {
    pub(crate) fn new() -> Self {
        Self {}
    }
}

impl TaskOwner<{ qp::COMP_TASK }> for Shared {
    fn step(_this: &Arc<Self>) -> Progress {
        Progress::Done
    }
}
