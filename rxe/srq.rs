//! Shared receive queues.
//!
//! Interface the rest of the driver uses (filled in by the SRQ work):
//! - `Srq` is the object the core allocates; `Srq::shared` is what QPs keep.
//! - The responder takes receive WQEs from `Shared` as it takes them from a
//!   QP's own RQ.

use kernel::sync::Arc;

/// A shared receive queue, as the core holds it.
pub(crate) struct Srq {
    pub(crate) shared: Arc<Shared>,
}

/// The part of an SRQ its QPs reach.
pub(crate) struct Shared {}
