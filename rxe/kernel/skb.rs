//! Socket buffers owned by the driver.

use core::ptr::NonNull;

use crate::rxe::sys as b;

/// An `sk_buff` the driver owns; dropping it frees it as a drop.
///
/// # Invariants
///
/// `self.0` points to an `sk_buff` with exactly one reference, ours.
pub(crate) struct Skb(NonNull<b::sk_buff>);

// SAFETY: An owned skb may move between contexts freely.
unsafe impl Send for Skb {}

impl Skb {
    /// # Safety
    ///
    /// `ptr` is null or an skb whose reference the caller hands over.
    pub(crate) unsafe fn from_raw(ptr: *mut b::sk_buff) -> Option<Self> {
        NonNull::new(ptr).map(Self)
    }

    pub(crate) fn len(&self) -> u32 {
        // SAFETY: We own the skb (type invariant).
        unsafe { self.0.as_ref().len }
    }
}

impl Drop for Skb {
    fn drop(&mut self) {
        // SAFETY: We own the only reference (type invariant).
        unsafe { b::sk_skb_reason_drop(core::ptr::null_mut(), self.0.as_ptr(), b::skb_drop_reason_SKB_DROP_REASON_NOT_SPECIFIED) };
    }
}
