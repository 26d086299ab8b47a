//! qp verbs objects.

use kernel::sync::Arc;

use crate::rxe::proto::accept::QpFacts;
use crate::rxe::recv::RxPacket;

/// The part of an object the datapath reaches through the device's pools.
pub(crate) struct Shared {}

impl Shared {
    /// What the receive path checks packets against; `None` (QP not valid) drops them.
    pub(crate) fn rx_facts(&self) -> Option<QpFacts> { None }

    /// A packet for this QP passed every check (see `recv`): queue it for the responder or completer.
    pub(crate) fn receive(self: &Arc<Self>, pkt: RxPacket) { drop(pkt) }
}
