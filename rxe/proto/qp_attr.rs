// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Verbs-level QP attribute rules of rxe: the create-time checks, the
//! modify-QP checks and what a modify stores (`rxe_qp.c` and `rxe_verbs.c`;
//! the errors here are the ones they return). Address vectors are in `av`.

use super::av::{av_from_ah_attr, check_ah_attr, AhAttr};
use super::device_attr::PORT_ATTR;
use super::params::{limits, IbMtu};
use super::qp::{self, modify_is_ok, AttrMask};
use super::uapi::{access, Av};

/// Why a request is refused. The driver turns it into the errno.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AttrError {
    /// `EINVAL`.
    Invalid,
    /// `EOPNOTSUPP`.
    NotSupported,
}

/// The QPN the GSI QP answers to, whatever its pool index.
pub(crate) const GSI_QPN: u32 = 1;

/// `RXE_ACCESS_SUPPORTED_QP`: the access bits a QP accepts. Unlike the
/// core's `IB_ACCESS_SUPPORTED` it leaves out zero-based and huge-page
/// hints, which mean nothing for a QP.
pub(crate) const ACCESS_SUPPORTED_QP: u32 = access::REMOTE_READ
    | access::REMOTE_WRITE
    | access::REMOTE_ATOMIC
    | access::LOCAL_WRITE
    | access::MW_BIND
    | access::ON_DEMAND
    | access::FLUSH_GLOBAL
    | access::FLUSH_PERSISTENT
    | access::OPTIONAL;

/// The largest `timeout` and `alt_timeout` (a 5-bit exponent).
const MAX_TIMEOUT: u8 = 31;

/// `struct ib_qp_cap` minus the field rxe ignores (`max_rdma_ctxs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Caps {
    pub(crate) max_send_wr: u32,
    pub(crate) max_recv_wr: u32,
    pub(crate) max_send_sge: u32,
    pub(crate) max_recv_sge: u32,
    pub(crate) max_inline_data: u32,
}

/// `rxe_qp_chk_cap()`. The receive side is not looked at when an SRQ
/// supplies the receive WQEs.
pub(crate) fn check_caps(cap: &Caps, has_srq: bool) -> Result<(), AttrError> {
    let bad = cap.max_send_wr > limits::MAX_QP_WR
        || cap.max_send_sge > limits::MAX_SGE
        || (!has_srq
            && (cap.max_recv_wr > limits::MAX_QP_WR || cap.max_recv_sge > limits::MAX_SGE))
        || cap.max_inline_data > limits::MAX_INLINE_DATA;
    if bad {
        Err(AttrError::Invalid)
    } else {
        Ok(())
    }
}

/// `rdma_is_port_valid()` on a one-port device.
pub(crate) fn port_is_valid(port: u32) -> bool {
    port == 1
}

/// What create_qp looks at in `ib_qp_init_attr`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct InitAttr {
    pub(crate) qp_type: u32,
    pub(crate) create_flags: u32,
    pub(crate) has_send_cq: bool,
    pub(crate) has_recv_cq: bool,
    pub(crate) has_srq: bool,
    pub(crate) cap: Caps,
    pub(crate) port_num: u32,
}

/// The create_flags test of `rxe_create_qp()` then `rxe_qp_chk_init()`:
/// the QP type, its CQs and capabilities, and for GSI the port and that the
/// device has no GSI QP yet.
pub(crate) fn check_init(init: &InitAttr, gsi_exists: bool) -> Result<qp::Type, AttrError> {
    if init.create_flags != 0 {
        return Err(AttrError::NotSupported);
    }
    let qp_type = qp::Type::try_from(init.qp_type).map_err(|_| AttrError::NotSupported)?;
    if !qp_type.rxe_supported() {
        return Err(AttrError::NotSupported);
    }
    if !init.has_send_cq || !init.has_recv_cq {
        return Err(AttrError::Invalid);
    }
    check_caps(&init.cap, init.has_srq)?;
    if qp_type == qp::Type::Gsi && (!port_is_valid(init.port_num) || gsi_exists) {
        return Err(AttrError::Invalid);
    }
    Ok(qp_type)
}

/// The fields of `struct ib_qp_attr` modify_qp reads. The AH attributes are
/// only converted when their mask bit is set: a kernel caller may leave
/// them uninitialised otherwise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ModifyAttr {
    pub(crate) qp_state: u32,
    pub(crate) cur_qp_state: u32,
    pub(crate) path_mtu: u32,
    pub(crate) path_mig_state: u32,
    pub(crate) qkey: u32,
    pub(crate) rq_psn: u32,
    pub(crate) sq_psn: u32,
    pub(crate) dest_qp_num: u32,
    pub(crate) qp_access_flags: u32,
    pub(crate) cap: Caps,
    pub(crate) ah_attr: Option<AhAttr>,
    pub(crate) alt_ah_attr: Option<AhAttr>,
    pub(crate) pkey_index: u16,
    pub(crate) alt_pkey_index: u16,
    pub(crate) en_sqd_async_notify: u8,
    pub(crate) max_rd_atomic: u8,
    pub(crate) max_dest_rd_atomic: u8,
    pub(crate) min_rnr_timer: u8,
    pub(crate) port_num: u32,
    pub(crate) timeout: u8,
    pub(crate) retry_cnt: u8,
    pub(crate) rnr_retry: u8,
    pub(crate) alt_port_num: u32,
    pub(crate) alt_timeout: u8,
}

impl ModifyAttr {
    /// Everything zero, no AH attributes.
    pub(crate) const fn zeroed() -> ModifyAttr {
        ModifyAttr {
            qp_state: 0,
            cur_qp_state: 0,
            path_mtu: 0,
            path_mig_state: 0,
            qkey: 0,
            rq_psn: 0,
            sq_psn: 0,
            dest_qp_num: 0,
            qp_access_flags: 0,
            cap: Caps {
                max_send_wr: 0,
                max_recv_wr: 0,
                max_send_sge: 0,
                max_recv_sge: 0,
                max_inline_data: 0,
            },
            ah_attr: None,
            alt_ah_attr: None,
            pkey_index: 0,
            alt_pkey_index: 0,
            en_sqd_async_notify: 0,
            max_rd_atomic: 0,
            max_dest_rd_atomic: 0,
            min_rnr_timer: 0,
            port_num: 0,
            timeout: 0,
            retry_cnt: 0,
            rnr_retry: 0,
            alt_port_num: 0,
            alt_timeout: 0,
        }
    }
}

/// The attributes of one mask bit, or an error when the bit is set but its
/// attribute was not converted.
fn ah_of(attr: &Option<AhAttr>) -> Result<&AhAttr, AttrError> {
    attr.as_ref().ok_or(AttrError::Invalid)
}

/// `rxe_modify_qp()`'s mask test and `rxe_qp_chk_attr()`: every attribute
/// the mask sets is within what rxe supports. The state transition is
/// checked separately, against the QP's current state.
pub(crate) fn check_modify(
    mask: AttrMask,
    attr: &ModifyAttr,
    qp_type: qp::Type,
    has_srq: bool,
) -> Result<(), AttrError> {
    if mask.intersects(!AttrMask::STANDARD_BITS) {
        return Err(AttrError::NotSupported);
    }
    if mask.intersects(AttrMask::PORT) && !port_is_valid(attr.port_num) {
        return Err(AttrError::Invalid);
    }
    if mask.intersects(AttrMask::CAP) {
        check_caps(&attr.cap, has_srq)?;
    }
    if mask.intersects(AttrMask::ACCESS_FLAGS) {
        if !matches!(qp_type, qp::Type::Rc | qp::Type::Uc) {
            return Err(AttrError::Invalid);
        }
        if attr.qp_access_flags & !ACCESS_SUPPORTED_QP != 0 {
            return Err(AttrError::Invalid);
        }
    }
    if mask.intersects(AttrMask::AV) {
        check_ah_attr(ah_of(&attr.ah_attr)?)?;
    }
    if mask.intersects(AttrMask::ALT_PATH) {
        check_ah_attr(ah_of(&attr.alt_ah_attr)?)?;
        if !port_is_valid(attr.alt_port_num) || attr.alt_timeout > MAX_TIMEOUT {
            return Err(AttrError::Invalid);
        }
    }
    if mask.intersects(AttrMask::PATH_MTU) && attr.path_mtu > PORT_ATTR.max_mtu.as_raw() {
        return Err(AttrError::Invalid);
    }
    if mask.intersects(AttrMask::MAX_QP_RD_ATOMIC)
        && u32::from(attr.max_rd_atomic) > limits::MAX_QP_RD_ATOM
    {
        return Err(AttrError::Invalid);
    }
    if mask.intersects(AttrMask::TIMEOUT) && attr.timeout > MAX_TIMEOUT {
        return Err(AttrError::Invalid);
    }
    Ok(())
}

/// `roundup_pow_of_two()` of a read/atomic depth, 0 staying 0, stored in
/// the u8 the C attribute is: a depth of 129..=255 rounds to 256, which the
/// C field truncates to 0.
fn rd_atomic_depth(v: u8) -> u8 {
    if v == 0 {
        return 0;
    }
    u8::try_from(u32::from(v).next_power_of_two()).unwrap_or(0)
}

/// The verbs-visible attributes of a QP (the `attr` of `struct rxe_qp`
/// plus its primary and alternate paths).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct QpAttrs {
    pub(crate) state: qp::State,
    /// Set on entering SQD; cleared once the send queue has drained.
    pub(crate) sq_draining: bool,
    /// Raw `enum ib_mtu`; only values up to 4096 are accepted, but 0 is.
    pub(crate) path_mtu: u32,
    pub(crate) path_mig_state: u32,
    pub(crate) qkey: u32,
    pub(crate) rq_psn: u32,
    pub(crate) sq_psn: u32,
    pub(crate) dest_qp_num: u32,
    pub(crate) access_flags: u32,
    pub(crate) pkey_index: u16,
    pub(crate) alt_pkey_index: u16,
    pub(crate) en_sqd_async_notify: u8,
    pub(crate) max_rd_atomic: u8,
    pub(crate) max_dest_rd_atomic: u8,
    pub(crate) min_rnr_timer: u8,
    pub(crate) port_num: u32,
    pub(crate) timeout: u8,
    pub(crate) retry_cnt: u8,
    pub(crate) rnr_retry: u8,
    pub(crate) alt_port_num: u32,
    pub(crate) alt_timeout: u8,
    pub(crate) pri_av: Option<Av>,
    pub(crate) alt_av: Option<Av>,
}

impl QpAttrs {
    /// A new QP: RESET, 256-byte path MTU; only GSI QPs know their port.
    pub(crate) fn new(qp_type: qp::Type, init_port: u32) -> QpAttrs {
        QpAttrs {
            state: qp::State::Reset,
            sq_draining: false,
            path_mtu: IbMtu::Mtu256.as_raw(),
            path_mig_state: 0,
            qkey: 0,
            rq_psn: 0,
            sq_psn: 0,
            dest_qp_num: 0,
            access_flags: 0,
            pkey_index: 0,
            alt_pkey_index: 0,
            en_sqd_async_notify: 0,
            max_rd_atomic: 0,
            max_dest_rd_atomic: 0,
            min_rnr_timer: 0,
            port_num: if qp_type == qp::Type::Gsi {
                init_port
            } else {
                0
            },
            timeout: 0,
            retry_cnt: 0,
            rnr_retry: 0,
            alt_port_num: 0,
            alt_timeout: 0,
            pri_av: None,
            alt_av: None,
        }
    }

    /// `__qp_chk_state()`: the transition a modify asks for is legal from
    /// the current state (or the one the caller asserts with `CUR_STATE`),
    /// and a draining SQD QP may only go to ERR. Returns the new state.
    fn check_state(
        &self,
        mask: AttrMask,
        attr: &ModifyAttr,
        qp_type: qp::Type,
    ) -> Result<qp::State, AttrError> {
        let cur = if mask.intersects(AttrMask::CUR_STATE) {
            qp::State::try_from(attr.cur_qp_state).map_err(|_| AttrError::Invalid)?
        } else {
            self.state
        };
        let next = qp::State::try_from(attr.qp_state).map_err(|_| AttrError::Invalid)?;
        if !modify_is_ok(cur, next, qp_type, mask) {
            return Err(AttrError::Invalid);
        }
        if cur == qp::State::Sqd && self.sq_draining && next != qp::State::Err {
            return Err(AttrError::Invalid);
        }
        Ok(next)
    }

    /// `rxe_qp_from_attr()` after [`check_modify`]: checks the transition
    /// when the mask asks for one, then stores every attribute the mask
    /// sets. Nothing changes on error. Returns the new state, if any.
    ///
    /// Without `STATE` in the mask no transition rule applies, as in C.
    pub(crate) fn modify(
        &mut self,
        mask: AttrMask,
        attr: &ModifyAttr,
        qp_type: qp::Type,
    ) -> Result<Option<qp::State>, AttrError> {
        let pri_av = if mask.intersects(AttrMask::AV) {
            Some(av_from_ah_attr(ah_of(&attr.ah_attr)?)?)
        } else {
            None
        };
        let alt_av = if mask.intersects(AttrMask::ALT_PATH) {
            Some(av_from_ah_attr(ah_of(&attr.alt_ah_attr)?)?)
        } else {
            None
        };
        let new_state = if mask.intersects(AttrMask::STATE) {
            Some(self.check_state(mask, attr, qp_type)?)
        } else {
            None
        };

        if let Some(s) = new_state {
            self.state = s;
            if s == qp::State::Sqd {
                self.sq_draining = true;
            }
        }
        if mask.intersects(AttrMask::MAX_QP_RD_ATOMIC) {
            self.max_rd_atomic = rd_atomic_depth(attr.max_rd_atomic);
        }
        if mask.intersects(AttrMask::MAX_DEST_RD_ATOMIC) {
            self.max_dest_rd_atomic = rd_atomic_depth(attr.max_dest_rd_atomic);
        }
        if mask.intersects(AttrMask::EN_SQD_ASYNC_NOTIFY) {
            self.en_sqd_async_notify = attr.en_sqd_async_notify;
        }
        if mask.intersects(AttrMask::ACCESS_FLAGS) {
            self.access_flags = attr.qp_access_flags;
        }
        if mask.intersects(AttrMask::PKEY_INDEX) {
            self.pkey_index = attr.pkey_index;
        }
        if mask.intersects(AttrMask::PORT) {
            self.port_num = attr.port_num;
        }
        if mask.intersects(AttrMask::QKEY) {
            self.qkey = attr.qkey;
        }
        if pri_av.is_some() {
            self.pri_av = pri_av;
        }
        if alt_av.is_some() {
            self.alt_av = alt_av;
            self.alt_port_num = attr.alt_port_num;
            self.alt_pkey_index = attr.alt_pkey_index;
            self.alt_timeout = attr.alt_timeout;
        }
        if mask.intersects(AttrMask::PATH_MTU) {
            self.path_mtu = attr.path_mtu;
        }
        if mask.intersects(AttrMask::TIMEOUT) {
            self.timeout = attr.timeout;
        }
        if mask.intersects(AttrMask::RETRY_CNT) {
            self.retry_cnt = attr.retry_cnt;
        }
        if mask.intersects(AttrMask::RNR_RETRY) {
            self.rnr_retry = attr.rnr_retry;
        }
        if mask.intersects(AttrMask::RQ_PSN) {
            self.rq_psn = attr.rq_psn & PSN_MASK;
        }
        if mask.intersects(AttrMask::MIN_RNR_TIMER) {
            self.min_rnr_timer = attr.min_rnr_timer;
        }
        if mask.intersects(AttrMask::SQ_PSN) {
            self.sq_psn = attr.sq_psn & PSN_MASK;
        }
        if mask.intersects(AttrMask::PATH_MIG_STATE) {
            self.path_mig_state = attr.path_mig_state;
        }
        if mask.intersects(AttrMask::DEST_QPN) {
            self.dest_qp_num = attr.dest_qp_num;
        }
        Ok(new_state)
    }

    /// Payload bytes per packet on the path, `None` for an MTU code C
    /// would turn into -1 (0 is accepted by modify).
    #[cfg(test)] // Only the host tests use it.
    pub(crate) fn mtu_bytes(&self) -> Option<u32> {
        IbMtu::from_raw(self.path_mtu).map(IbMtu::bytes)
    }

    /// The local ACK timeout, 4.096 us << timeout, or `None` for "never".
    #[cfg(test)] // Only the host tests use it.
    pub(crate) fn timeout_ns(&self) -> Option<u64> {
        if self.timeout == 0 {
            None
        } else {
            Some(4096u64 << self.timeout.min(MAX_TIMEOUT))
        }
    }
}

/// PSNs are 24 bits.
const PSN_MASK: u32 = 0x00ff_ffff;

#[cfg(test)]
#[path = "qp_attr_tests.rs"]
mod tests;
