// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! On-demand paging (ODP) arithmetic and policy: the capabilities the
//! device reports, which registrations it refuses, where an MR address
//! lies in the registered user range, which pages an access needs, and how
//! often a step that met an absent page is retried after faulting it in.

use core::ops::Range;

/// `enum ib_odp_general_cap_bits`.
pub(crate) mod general {
    pub(crate) const SUPPORT: u64 = 1 << 0;
    #[allow(dead_code)] // The whole C value set, used or not.
    pub(crate) const IMPLICIT: u64 = 1 << 1;
}

/// `enum ib_odp_transport_cap_bits`.
pub(crate) mod transport {
    pub(crate) const SEND: u32 = 1 << 0;
    pub(crate) const RECV: u32 = 1 << 1;
    pub(crate) const WRITE: u32 = 1 << 2;
    pub(crate) const READ: u32 = 1 << 3;
    pub(crate) const ATOMIC: u32 = 1 << 4;
    pub(crate) const SRQ_RECV: u32 = 1 << 5;
    pub(crate) const FLUSH: u32 = 1 << 6;
    pub(crate) const ATOMIC_WRITE: u32 = 1 << 7;
}

/// The ODP capabilities rxe reports (those of the newest rdma_rxe:
/// explicit ODP only, no implicit ODP).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Caps {
    pub(crate) general: u64,
    pub(crate) rc: u32,
    pub(crate) uc: u32,
    pub(crate) ud: u32,
}

pub(crate) const CAPS: Caps = Caps {
    general: general::SUPPORT,
    rc: transport::SEND
        | transport::RECV
        | transport::WRITE
        | transport::READ
        | transport::ATOMIC
        | transport::SRQ_RECV
        | transport::FLUSH
        | transport::ATOMIC_WRITE,
    uc: 0,
    ud: transport::SEND | transport::RECV | transport::SRQ_RECV,
};

/// Why an ODP registration is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RegError {
    /// Implicit ODP (the whole address space) with a non-zero iova, or
    /// at all while the device does not report it: `EINVAL`.
    Implicit,
}

/// Whether `start`/`length` asks for an implicit ODP MR, and whether that
/// is refused: it always is, since [`CAPS`] has no implicit support.
pub(crate) const fn check_reg(start: u64, length: u64, _iova: u64) -> Result<(), RegError> {
    if start == 0 && length == u64::MAX {
        // A non-zero iova is invalid for implicit ODP, and implicit ODP is
        // not supported at all: the same error either way.
        return Err(RegError::Implicit);
    }
    Ok(())
}

/// Where an MR's user range lies: registered at user address `start`
/// for `length` bytes, addressed by its users from `iova`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) iova: u64,
    pub(crate) start: u64,
    pub(crate) length: u64,
}

impl Span {
    /// The user address of MR address `iova`, for an access of `len`
    /// bytes inside the MR; `None` outside it or on overflow.
    pub(crate) fn user_va(&self, iova: u64, len: u64) -> Option<u64> {
        let rel = iova.checked_sub(self.iova)?;
        let end = rel.checked_add(len)?;
        if end > self.length {
            return None;
        }
        self.start.checked_add(rel)
    }
}

/// The indexes of the pages of `1 << shift` bytes, counted from the page
/// at `base` (page aligned), that `[va, va + len)` touches; empty for
/// `len == 0`, `None` below `base` or on overflow.
pub(crate) fn pages(base: u64, shift: u32, va: u64, len: u64) -> Option<Range<usize>> {
    if shift > 63 {
        return None;
    }
    if len == 0 {
        return Some(0..0);
    }
    let rel = va.checked_sub(base)?;
    let last = rel.checked_add(len - 1)?;
    let first = usize::try_from(rel >> shift).ok()?;
    let end = usize::try_from(last >> shift).ok()?.checked_add(1)?;
    Some(first..end)
}

/// The most bytes a per-page array of an ODP registration may take: what
/// kvmalloc gives at all (`INT_MAX`). The core's own per-page arrays of
/// the umem are as large, and are allocated without `__GFP_NOWARN`.
pub(crate) const MAX_TABLE_BYTES: u64 = 0x7fff_ffff;

/// Whether an ODP registration of `pages` pages may have per-page arrays
/// of `entry` bytes an entry: at most [`MAX_TABLE_BYTES`], and at most
/// `ram` bytes (the machine's memory), as for the other arrays a caller
/// sizes. Checked before the core allocates anything for the range.
pub(crate) const fn table_fits(pages: u64, entry: u64, ram: u64) -> bool {
    match pages.checked_mul(entry) {
        Some(bytes) => bytes <= MAX_TABLE_BYTES && bytes <= ram,
        None => false,
    }
}

/// How many times in a row one step faults pages in and runs again before
/// its access fails the way an access to unmapped memory fails. A fault
/// that fails (no memory there) ends the retries at once; each successful
/// one makes the pages present, so only invalidations that win every race
/// (memory dropped or migrated in a tight loop) use them up.
pub(crate) const MAX_FAULT_RETRIES: u32 = 64;

/// The retry count of a step that met absent pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Retry {
    done: u32,
}

/// What to do after an access found an absent page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// Fault the range in (in process context, no engine lock held) and
    /// run the step again.
    Fault,
    /// Stop retrying: the access fails as a bad address.
    GiveUp,
}

impl Retry {
    pub(crate) const fn new() -> Self {
        Self { done: 0 }
    }

    /// Called when a step found a page absent.
    pub(crate) fn on_absent(&mut self) -> Next {
        if self.done >= MAX_FAULT_RETRIES {
            Next::GiveUp
        } else {
            self.done += 1;
            Next::Fault
        }
    }

    /// Called when a step got through: the next one starts afresh.
    pub(crate) fn on_success(&mut self) {
        self.done = 0;
    }
}

/// `enum ib_uverbs_advise_mr_advice`: what `ibv_advise_mr` asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Advice {
    /// Fault the pages in for reading.
    Prefetch,
    /// Fault the pages in writable.
    PrefetchWrite,
    /// Record the pages already present, fault nothing in.
    PrefetchNoFault,
}

/// `IB_UVERBS_ADVISE_MR_FLAG_FLUSH`: finish the prefetch before returning
/// and report its errors.
pub(crate) const ADVISE_FLAG_FLUSH: u32 = 1 << 0;

impl Advice {
    /// `None` for advice rxe does not support (`EOPNOTSUPP`).
    pub(crate) const fn from_raw(v: u32) -> Option<Self> {
        match v {
            0 => Some(Self::Prefetch),
            1 => Some(Self::PrefetchWrite),
            2 => Some(Self::PrefetchNoFault),
            _ => None,
        }
    }

    /// Whether the pages are wanted writable.
    pub(crate) const fn write(self) -> bool {
        !matches!(self, Self::Prefetch)
    }

    /// Whether absent pages are faulted in.
    pub(crate) const fn fault(self) -> bool {
        !matches!(self, Self::PrefetchNoFault)
    }
}

#[cfg(test)]
#[path = "odp_tests.rs"]
mod tests;
