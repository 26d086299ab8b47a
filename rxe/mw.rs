//! mw verbs objects.

/// The part of an object the datapath reaches through the device's pools.
pub(crate) struct Shared {}
