//! Entry points for the qp verbs.

use crate::rxe::sys as b;

pub(super) fn fill(_ops: &mut b::ib_device_ops) {}
