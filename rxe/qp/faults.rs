// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The ODP faults of a QP's engines, run off the engines' tasks.
//!
//! An engine whose access finds an ODP page absent keeps its packet or
//! WQE, starts a fault job ([`QpShared::start_fault`]) and stops: its task
//! is free for the QP's other work and the worker for other QPs. The job
//! runs on the fault workqueue (`kapi::fault`), where it may sleep as
//! long as the page takes, forever if its file system never answers; when
//! it ends it records how it went and kicks the engine, which runs the
//! access again and asks [`Faults::check`] about the result. Each engine
//! has at most one fault in progress, so a QP has at most three.
//!
//! Nothing waits for a job. It owns what it uses: the MR (and through it
//! the ODP umem, whose release waits for the job instead of the other way
//! round), a reference on the device, and this QP's [`Faults`], never the
//! QP itself. Only while a fault is in progress do the faults hold the QP
//! (to kick it); destroy takes that reference back ([`Faults::close`]), so
//! a fault that ends after the destroy touches nothing of the QP.

use kernel::{prelude::*, sync::Arc};

use super::QpShared;
use crate::rxe::device::DeviceRef;
use crate::rxe::kapi::fault::{self, Job};
use crate::rxe::kapi::lock::{new_spinlock_irq, SpinLockIrq};
use crate::rxe::mr::PendingFault;

/// The engine a fault is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Engine {
    Responder = 0,
    Completer = 1,
    Requester = 2,
}

/// What became of the last fault of an engine, for the access that found
/// the page absent and runs again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Check {
    /// A fault is in progress: wait for its kick.
    Busy,
    /// The fault of this very range failed: the access fails as one to
    /// unmapped memory.
    Failed,
    /// No fault in progress and no failure to report: fault (again).
    Free,
}

/// What a fault was for: the MR (by address, never used as a pointer)
/// and the range.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Key {
    mr: usize,
    iova: u64,
    len: u64,
    write: bool,
}

impl Key {
    fn of(p: &PendingFault) -> Self {
        Self {
            mr: core::ptr::from_ref(&*p.mr) as usize,
            iova: p.iova,
            len: p.len,
            write: p.write,
        }
    }
}

#[derive(Clone, Copy, Default)]
struct Slot {
    busy: bool,
    /// The range of the last fault that failed, until the access asks.
    failed: Option<Key>,
}

struct Inner {
    slots: [Slot; 3],
    /// The QP to kick, held only while a fault is in progress.
    qp: Option<Arc<QpShared>>,
    /// Set by destroy: no fault starts, and none kicks the QP.
    closed: bool,
}

/// The fault state of one QP, shared with its fault jobs.
#[pin_data]
pub(crate) struct Faults {
    /// Taken alone, under an engine lock or none; interrupts masked, as
    /// the QP's other locks that verbs callers may reach with them off.
    #[pin]
    inner: SpinLockIrq<Inner>,
}

impl Faults {
    pub(crate) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                inner <- new_spinlock_irq!(
                    Inner {
                        slots: [Slot::default(); 3],
                        qp: None,
                        closed: false,
                    },
                    "rxe_qp_faults"
                ),
            }),
            GFP_KERNEL,
        )
    }

    /// For an access of `engine` that found `pending`'s range absent:
    /// whether a fault is still in progress, failed for that range, or may
    /// start. A failure is reported once.
    pub(crate) fn check(&self, engine: Engine, pending: Option<&PendingFault>) -> Check {
        let mut inner = self.inner.lock();
        let slot = &mut inner.slots[engine as usize];
        if slot.busy {
            return Check::Busy;
        }
        match (slot.failed.take(), pending) {
            (Some(k), Some(p)) if k == Key::of(p) => Check::Failed,
            _ => Check::Free,
        }
    }

    /// Forgets the failures recorded (QP reset: the accesses they were for
    /// are gone).
    pub(crate) fn forget(&self) {
        let mut inner = self.inner.lock();
        for s in inner.slots.iter_mut() {
            s.failed = None;
        }
    }

    /// Destroy: faults in progress go on, but none starts and none kicks
    /// the QP any more. Returns without waiting for anything.
    pub(crate) fn close(&self) {
        let qp = {
            let mut inner = self.inner.lock();
            inner.closed = true;
            inner.qp.take()
        };
        // Not the last reference: destroy holds the QP.
        drop(qp);
    }

    /// A fault of `engine` ended: record it and kick the engine, unless
    /// the QP is gone.
    fn finish(&self, engine: Engine, key: Key, ok: bool) {
        let qp = {
            let mut inner = self.inner.lock();
            let slot = &mut inner.slots[engine as usize];
            slot.busy = false;
            slot.failed = (!ok).then_some(key);
            if inner.slots.iter().any(|s| s.busy) {
                inner.qp.clone()
            } else {
                inner.qp.take()
            }
        };
        let Some(qp) = qp else {
            return;
        };
        match engine {
            Engine::Responder => qp.kick_responder(),
            // The completer dropped the response it could not place: the
            // requester sends the request again.
            Engine::Completer | Engine::Requester => qp.kick_requester(),
        }
    }
}

/// A fault in progress. Fields drop in order: the MR first (it may be the
/// last reference, whose ODP release needs the device), the device
/// reference last.
struct FaultJob {
    pending: PendingFault,
    faults: Arc<Faults>,
    engine: Engine,
    _dev: DeviceRef,
}

impl Job for FaultJob {
    fn run(&self) {
        let ok = self.pending.resolve().is_ok();
        self.faults.finish(self.engine, Key::of(&self.pending), ok);
    }
}

impl QpShared {
    /// Starts the fault `pending` of `engine`, which the engine waits for
    /// (it stops; the fault's end kicks it). False if it could not start
    /// (nothing to fault, no memory, the device or the QP going away):
    /// the access then fails. Any context; no engine lock held.
    pub(crate) fn start_fault(
        self: &Arc<Self>,
        engine: Engine,
        pending: Option<PendingFault>,
    ) -> bool {
        let Some(pending) = pending else {
            return false;
        };
        let Some(dev) = DeviceRef::try_get(&self.dev) else {
            return false;
        };
        {
            let mut guard = self.faults.inner.lock();
            let inner = &mut *guard;
            let slot = &mut inner.slots[engine as usize];
            if inner.closed || slot.busy {
                return false;
            }
            // Busy before the job can end (and clear it).
            *slot = Slot {
                busy: true,
                failed: None,
            };
            if inner.qp.is_none() {
                inner.qp = Some(self.clone());
            }
        }
        let job = FaultJob {
            pending,
            faults: self.faults.clone(),
            engine,
            _dev: dev,
        };
        // Not under the lock: a job that cannot start is dropped here, and
        // with it perhaps the MR's last reference.
        if fault::spawn(job).is_ok() {
            return true;
        }
        let qp = {
            let mut inner = self.faults.inner.lock();
            inner.slots[engine as usize].busy = false;
            if inner.slots.iter().any(|s| s.busy) {
                None
            } else {
                inner.qp.take()
            }
        };
        // Not the last reference: the caller holds the QP.
        drop(qp);
        false
    }
}
