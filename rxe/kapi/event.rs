// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Asynchronous events on QPs, delivered through the core's event handler
//! of the `ib_qp`.
//!
//! The driver's QP state outlives the core object (the datapath may hold it
//! a little longer), so it reaches the `ib_qp` through a [`QpLink`] that the
//! destroy path revokes before the core frees the object.

use kernel::prelude::*;

use super::lock::{new_spinlock_irq, SpinLockIrq};
use super::object::{CoreObj, Handle};
use crate::rxe::sys;

/// The QP events rxe raises (`enum ib_event_type`), as rdma_rxe 6.12 does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum QpEvent {
    /// The send queue of an SQD QP has drained.
    SqDrained,
    /// The last WQE of an SRQ-attached QP in error was consumed.
    LastWqeReached,
}

impl QpEvent {
    fn raw(self) -> sys::ib_event_type {
        match self {
            QpEvent::SqDrained => sys::ib_event_type_IB_EVENT_SQ_DRAINED,
            QpEvent::LastWqeReached => sys::ib_event_type_IB_EVENT_QP_LAST_WQE_REACHED,
        }
    }
}

/// The way from driver QP state back to its `ib_qp`.
///
/// # Invariants
///
/// While `handle` is `Some`, it names a live `ib_qp`: it is set by
/// [`QpLink::attach`] and cleared by [`QpLink::revoke`] before the object is
/// freed.
#[pin_data]
pub(crate) struct QpLink {
    #[pin]
    handle: SpinLockIrq<Option<Handle<sys::ib_qp>>>,
}

impl QpLink {
    /// A link not attached to any object yet; events are dropped.
    pub(crate) fn new() -> impl PinInit<Self> {
        // INVARIANT: `handle` starts as `None`.
        pin_init!(Self { handle <- new_spinlock_irq!(None, "rxe_qp_link") })
    }

    /// Points the link at the core object of the QP.
    ///
    /// # Safety
    ///
    /// `revoke` is called before `obj` is freed.
    pub(crate) unsafe fn attach<T>(&self, obj: &CoreObj<sys::ib_qp, T>) {
        // INVARIANT: `obj` is live while borrowed, and `revoke` is called
        // before it is freed (the caller's contract).
        *self.handle.lock() = Some(obj.handle());
    }

    /// Detaches the link; later events are dropped. Returns once no event
    /// is being delivered.
    pub(crate) fn revoke(&self) {
        // INVARIANT: `None` names nothing.
        *self.handle.lock() = None;
    }

    /// The object's handle while it is live (for `ib_wc.qp` of kernel
    /// completions).
    pub(crate) fn handle(&self) -> Option<Handle<sys::ib_qp>> {
        *self.handle.lock()
    }

    /// Calls the QP's event handler, if the QP is still live and has one.
    ///
    /// The handler runs under the link's lock, which keeps the object alive,
    /// with interrupts off: QP event handlers are written for that, as
    /// hardware drivers call them from their interrupt handlers.
    pub(crate) fn dispatch(&self, event: QpEvent) {
        let guard = self.handle.lock();
        let Some(h) = *guard else {
            return;
        };
        let qp = h.as_ptr();
        // SAFETY: By the type invariant the object is live while the handle
        // is set, and the lock held keeps `revoke` from returning.
        let (handler, context, device) =
            unsafe { ((*qp).event_handler, (*qp).qp_context, (*qp).device) };
        let Some(handler) = handler else {
            return;
        };
        let mut ev = sys::ib_event {
            device,
            event: event.raw(),
            ..Default::default()
        };
        ev.element.qp = qp;
        // SAFETY: `handler` is the consumer's event handler of the QP, which
        // is live by the type invariant while `guard` holds the lock; the
        // event is fully initialised and lives on our stack for the call,
        // and `context` is the one installed with the handler.
        unsafe { handler(&mut ev, context) };
    }
}
