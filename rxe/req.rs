//! The req engine of a QP (work in progress: see /work/wt/DATAPATH.md).

use kernel::sync::Arc;

use crate::rxe::kernel::task::{Progress, TaskOwner};
use crate::rxe::qp::{self, Shared};

/// Per-QP state of the engine, behind `Shared::req`.
pub(crate) struct State {}

impl State {
    pub(crate) fn new() -> Self {
        Self {}
    }
}

impl TaskOwner<{ qp::REQ_TASK }> for Shared {
    fn step(_this: &Arc<Self>) -> Progress {
        Progress::Done
    }
}

impl crate::rxe::kernel::timer::TimerOwner<{ qp::RETRANS_TIMER }> for Shared {
    fn expired(_this: Arc<Self>) {}
}

impl crate::rxe::kernel::timer::TimerOwner<{ qp::RNR_TIMER }> for Shared {
    fn expired(_this: Arc<Self>) {}
}
