//! Completion queues.
//!
//! Interface the rest of the driver uses (filled in by the CQ work):
//! - `Cq` is the object the core allocates; `Cq::shared` is what QPs keep.
//! - `Shared::post(cqe, solicited)` appends a completion and runs the
//!   consumer's completion handler when armed.

use kernel::sync::Arc;

/// A completion queue, as the core holds it.
pub(crate) struct Cq {
    pub(crate) shared: Arc<Shared>,
}

/// The part of a CQ its QPs reach.
pub(crate) struct Shared {}
