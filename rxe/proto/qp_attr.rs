//! Verbs-level QP attribute rules of rxe: the create-time checks, the
//! modify-QP checks and what a modify stores (`rxe_qp.c` and `rxe_verbs.c`;
//! the errors here are the ones they return). Address vectors are in `av`.

use super::av::{av_from_ah_attr, check_ah_attr, AhAttr};
use super::params::{limits, IbMtu, PORT_ATTR};
use super::qp_state::{modify_is_ok, AttrMask, QpState, QpType};
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
        || (!has_srq && (cap.max_recv_wr > limits::MAX_QP_WR || cap.max_recv_sge > limits::MAX_SGE))
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
pub(crate) fn check_init(init: &InitAttr, gsi_exists: bool) -> Result<QpType, AttrError> {
    if init.create_flags != 0 {
        return Err(AttrError::NotSupported);
    }
    let qp_type = QpType::try_from(init.qp_type).map_err(|_| AttrError::NotSupported)?;
    if !qp_type.rxe_supported() {
        return Err(AttrError::NotSupported);
    }
    if !init.has_send_cq || !init.has_recv_cq {
        return Err(AttrError::Invalid);
    }
    check_caps(&init.cap, init.has_srq)?;
    if qp_type == QpType::Gsi && (!port_is_valid(init.port_num) || gsi_exists) {
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
            cap: Caps { max_send_wr: 0, max_recv_wr: 0, max_send_sge: 0, max_recv_sge: 0, max_inline_data: 0 },
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
pub(crate) fn check_modify(mask: AttrMask, attr: &ModifyAttr, qp_type: QpType, has_srq: bool) -> Result<(), AttrError> {
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
        if !matches!(qp_type, QpType::Rc | QpType::Uc) {
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
    if mask.intersects(AttrMask::MAX_QP_RD_ATOMIC) && u32::from(attr.max_rd_atomic) > limits::MAX_QP_RD_ATOM {
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
    pub(crate) state: QpState,
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
    pub(crate) fn new(qp_type: QpType, init_port: u32) -> QpAttrs {
        QpAttrs {
            state: QpState::Reset,
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
            port_num: if qp_type == QpType::Gsi { init_port } else { 0 },
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
    fn check_state(&self, mask: AttrMask, attr: &ModifyAttr, qp_type: QpType) -> Result<QpState, AttrError> {
        let cur = if mask.intersects(AttrMask::CUR_STATE) {
            QpState::try_from(attr.cur_qp_state).map_err(|_| AttrError::Invalid)?
        } else {
            self.state
        };
        let next = QpState::try_from(attr.qp_state).map_err(|_| AttrError::Invalid)?;
        if !modify_is_ok(cur, next, qp_type, mask) {
            return Err(AttrError::Invalid);
        }
        if cur == QpState::Sqd && self.sq_draining && next != QpState::Err {
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
        qp_type: QpType,
    ) -> Result<Option<QpState>, AttrError> {
        let pri_av = if mask.intersects(AttrMask::AV) { Some(av_from_ah_attr(ah_of(&attr.ah_attr)?)?) } else { None };
        let alt_av =
            if mask.intersects(AttrMask::ALT_PATH) { Some(av_from_ah_attr(ah_of(&attr.alt_ah_attr)?)?) } else { None };
        let new_state =
            if mask.intersects(AttrMask::STATE) { Some(self.check_state(mask, attr, qp_type)?) } else { None };

        if let Some(s) = new_state {
            self.state = s;
            if s == QpState::Sqd {
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
    pub(crate) fn mtu_bytes(&self) -> Option<u32> {
        IbMtu::from_raw(self.path_mtu).map(IbMtu::bytes)
    }

    /// The local ACK timeout, 4.096 us << timeout, or `None` for "never".
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
mod tests {
    use super::super::av::tests::{ah, sgid_v4};
    use super::*;

    fn rc_rtr() -> (AttrMask, ModifyAttr) {
        let mut a = ModifyAttr::zeroed();
        a.qp_state = QpState::Rtr.as_raw();
        a.ah_attr = Some(ah(sgid_v4(), sgid_v4().gid));
        a.path_mtu = 3;
        a.dest_qp_num = 0x11;
        a.rq_psn = 0x1_00_00_05;
        a.max_dest_rd_atomic = 3;
        a.min_rnr_timer = 12;
        let m = AttrMask::STATE
            | AttrMask::AV
            | AttrMask::PATH_MTU
            | AttrMask::DEST_QPN
            | AttrMask::RQ_PSN
            | AttrMask::MAX_DEST_RD_ATOMIC
            | AttrMask::MIN_RNR_TIMER;
        (m, a)
    }

    fn init_rc() -> (AttrMask, ModifyAttr) {
        let mut a = ModifyAttr::zeroed();
        a.qp_state = QpState::Init.as_raw();
        a.port_num = 1;
        a.qp_access_flags = access::REMOTE_WRITE | access::LOCAL_WRITE;
        (AttrMask::STATE | AttrMask::PKEY_INDEX | AttrMask::PORT | AttrMask::ACCESS_FLAGS, a)
    }

    #[test]
    fn caps_limits() {
        let ok = Caps {
            max_send_wr: 1 << 20,
            max_recv_wr: 1 << 20,
            max_send_sge: 32,
            max_recv_sge: 32,
            max_inline_data: 512,
        };
        assert_eq!(check_caps(&ok, false), Ok(()));
        for bad in [
            Caps { max_send_wr: (1 << 20) + 1, ..ok },
            Caps { max_recv_wr: (1 << 20) + 1, ..ok },
            Caps { max_send_sge: 33, ..ok },
            Caps { max_recv_sge: 33, ..ok },
            Caps { max_inline_data: 513, ..ok },
        ] {
            assert_eq!(check_caps(&bad, false), Err(AttrError::Invalid), "{bad:?}");
        }
        // With an SRQ the receive caps are not looked at.
        assert_eq!(check_caps(&Caps { max_recv_wr: u32::MAX, max_recv_sge: 99, ..ok }, true), Ok(()));
        assert_eq!(check_caps(&Caps { max_send_sge: 33, ..ok }, true), Err(AttrError::Invalid));
    }

    #[test]
    fn init_checks_in_c_order() {
        let base = InitAttr {
            qp_type: QpType::Rc.as_raw(),
            create_flags: 0,
            has_send_cq: true,
            has_recv_cq: true,
            has_srq: false,
            cap: Caps { max_send_wr: 4, max_recv_wr: 4, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 },
            port_num: 0,
        };
        assert_eq!(check_init(&base, false), Ok(QpType::Rc));
        assert_eq!(check_init(&InitAttr { create_flags: 2, ..base }, false), Err(AttrError::NotSupported));
        // create_flags are looked at before the type.
        assert_eq!(check_init(&InitAttr { create_flags: 2, qp_type: 99, ..base }, false), Err(AttrError::NotSupported));
        for t in [QpType::Smi, QpType::RawPacket, QpType::XrcIni, QpType::XrcTgt] {
            assert_eq!(check_init(&InitAttr { qp_type: t.as_raw(), ..base }, false), Err(AttrError::NotSupported));
        }
        assert_eq!(check_init(&InitAttr { qp_type: 7, ..base }, false), Err(AttrError::NotSupported));
        assert_eq!(check_init(&InitAttr { has_recv_cq: false, ..base }, false), Err(AttrError::Invalid));
        // Type before CQs: an unsupported type without CQs is EOPNOTSUPP.
        assert_eq!(
            check_init(&InitAttr { has_send_cq: false, qp_type: 0, ..base }, false),
            Err(AttrError::NotSupported)
        );
        let gsi = InitAttr { qp_type: QpType::Gsi.as_raw(), port_num: 1, ..base };
        assert_eq!(check_init(&gsi, false), Ok(QpType::Gsi));
        assert_eq!(check_init(&gsi, true), Err(AttrError::Invalid));
        assert_eq!(check_init(&InitAttr { port_num: 2, ..gsi }, false), Err(AttrError::Invalid));
        // Only GSI looks at the port.
        assert_eq!(check_init(&InitAttr { port_num: 7, ..base }, true), Ok(QpType::Rc));
        assert_eq!(
            check_init(&InitAttr { cap: Caps { max_inline_data: 600, ..base.cap }, ..base }, false),
            Err(AttrError::Invalid)
        );
    }

    #[test]
    fn modify_checks() {
        let (m, a) = init_rc();
        assert_eq!(check_modify(m, &a, QpType::Rc, false), Ok(()));
        assert_eq!(check_modify(m | AttrMask::RATE_LIMIT, &a, QpType::Rc, false), Err(AttrError::NotSupported));
        assert_eq!(check_modify(m, &ModifyAttr { port_num: 2, ..a }, QpType::Rc, false), Err(AttrError::Invalid));
        // Access flags only on connected QPs, and only rxe's bits.
        assert_eq!(check_modify(m, &a, QpType::Ud, false), Err(AttrError::Invalid));
        let zb = ModifyAttr { qp_access_flags: access::ZERO_BASED, ..a };
        assert_eq!(check_modify(m, &zb, QpType::Rc, false), Err(AttrError::Invalid));
        let relaxed = ModifyAttr { qp_access_flags: access::RELAXED_ORDERING, ..a };
        assert_eq!(check_modify(m, &relaxed, QpType::Uc, false), Ok(()));

        let mtu = AttrMask::PATH_MTU;
        assert_eq!(check_modify(mtu, &ModifyAttr { path_mtu: 5, ..a }, QpType::Rc, false), Ok(()));
        assert_eq!(check_modify(mtu, &ModifyAttr { path_mtu: 6, ..a }, QpType::Rc, false), Err(AttrError::Invalid));
        assert_eq!(check_modify(mtu, &ModifyAttr { path_mtu: 0, ..a }, QpType::Rc, false), Ok(()));
        let rd = AttrMask::MAX_QP_RD_ATOMIC;
        assert_eq!(check_modify(rd, &ModifyAttr { max_rd_atomic: 128, ..a }, QpType::Rc, false), Ok(()));
        assert_eq!(
            check_modify(rd, &ModifyAttr { max_rd_atomic: 129, ..a }, QpType::Rc, false),
            Err(AttrError::Invalid)
        );
        let dest = AttrMask::MAX_DEST_RD_ATOMIC;
        assert_eq!(check_modify(dest, &ModifyAttr { max_dest_rd_atomic: 255, ..a }, QpType::Rc, false), Ok(()));
        let to = AttrMask::TIMEOUT;
        assert_eq!(check_modify(to, &ModifyAttr { timeout: 31, ..a }, QpType::Rc, false), Ok(()));
        assert_eq!(check_modify(to, &ModifyAttr { timeout: 32, ..a }, QpType::Rc, false), Err(AttrError::Invalid));
        let cap = AttrMask::CAP;
        let big = ModifyAttr { cap: Caps { max_recv_sge: 40, ..a.cap }, ..a };
        assert_eq!(check_modify(cap, &big, QpType::Rc, false), Err(AttrError::Invalid));
        assert_eq!(check_modify(cap, &big, QpType::Rc, true), Ok(()));

        let alt = AttrMask::ALT_PATH;
        let mut with_alt = ModifyAttr { alt_ah_attr: Some(ah(sgid_v4(), [0; 16])), alt_port_num: 1, ..a };
        assert_eq!(check_modify(alt, &with_alt, QpType::Rc, false), Ok(()));
        with_alt.alt_timeout = 32;
        assert_eq!(check_modify(alt, &with_alt, QpType::Rc, false), Err(AttrError::Invalid));
        assert_eq!(check_modify(alt, &a, QpType::Rc, false), Err(AttrError::Invalid));
        assert_eq!(check_modify(AttrMask::AV, &a, QpType::Rc, false), Err(AttrError::Invalid));
    }

    #[test]
    fn state_machine_and_storage() {
        let mut q = QpAttrs::new(QpType::Rc, 0);
        assert_eq!(q.path_mtu, 1);
        assert_eq!(q.mtu_bytes(), Some(256));
        let (m, a) = init_rc();
        assert_eq!(q.modify(m, &a, QpType::Rc), Ok(Some(QpState::Init)));
        assert_eq!(q.port_num, 1);
        assert_eq!(q.access_flags, access::REMOTE_WRITE | access::LOCAL_WRITE);

        // INIT -> RTS is not a transition.
        let mut rts = ModifyAttr::zeroed();
        rts.qp_state = QpState::Rts.as_raw();
        assert_eq!(q.modify(AttrMask::STATE, &rts, QpType::Rc), Err(AttrError::Invalid));
        // RTR without its required attributes.
        let (m, a) = rc_rtr();
        assert_eq!(q.modify(m & !AttrMask::DEST_QPN, &a, QpType::Rc), Err(AttrError::Invalid));
        assert_eq!(q.state, QpState::Init);
        assert_eq!(q.modify(m, &a, QpType::Rc), Ok(Some(QpState::Rtr)));
        assert_eq!(q.rq_psn, 5);
        assert_eq!(q.max_dest_rd_atomic, 4);
        assert_eq!(q.dest_qp_num, 0x11);
        assert_eq!(q.mtu_bytes(), Some(1024));
        assert!(q.pri_av.is_some());

        let mut r = ModifyAttr::zeroed();
        r.qp_state = QpState::Rts.as_raw();
        r.sq_psn = 0xff_abcdef;
        r.timeout = 14;
        r.retry_cnt = 7;
        r.rnr_retry = 7;
        r.max_rd_atomic = 3;
        let rm = AttrMask::STATE
            | AttrMask::SQ_PSN
            | AttrMask::TIMEOUT
            | AttrMask::RETRY_CNT
            | AttrMask::RNR_RETRY
            | AttrMask::MAX_QP_RD_ATOMIC;
        assert_eq!(q.modify(rm, &r, QpType::Rc), Ok(Some(QpState::Rts)));
        assert_eq!(q.sq_psn, 0xabcdef);
        assert_eq!(q.max_rd_atomic, 4);
        assert_eq!(q.timeout_ns(), Some(4096 << 14));

        let mut sqd = ModifyAttr::zeroed();
        sqd.qp_state = QpState::Sqd.as_raw();
        assert_eq!(q.modify(AttrMask::STATE, &sqd, QpType::Rc), Ok(Some(QpState::Sqd)));
        assert!(q.sq_draining);
        // Draining: back to RTS refused, to ERR allowed.
        assert_eq!(q.modify(AttrMask::STATE, &rts, QpType::Rc), Err(AttrError::Invalid));
        q.sq_draining = false;
        assert_eq!(q.modify(AttrMask::STATE, &rts, QpType::Rc), Ok(Some(QpState::Rts)));

        // Attributes without STATE are stored with no transition rule.
        let qk = ModifyAttr { qkey: 0x1234, ..ModifyAttr::zeroed() };
        assert_eq!(q.modify(AttrMask::QKEY, &qk, QpType::Rc), Ok(None));
        assert_eq!(q.qkey, 0x1234);

        let mut err = ModifyAttr::zeroed();
        err.qp_state = QpState::Err.as_raw();
        assert_eq!(q.modify(AttrMask::STATE, &err, QpType::Rc), Ok(Some(QpState::Err)));
        let mut reset = ModifyAttr::zeroed();
        reset.qp_state = QpState::Reset.as_raw();
        assert_eq!(q.modify(AttrMask::STATE, &reset, QpType::Rc), Ok(Some(QpState::Reset)));
        // Reset keeps the stored attributes.
        assert_eq!(q.qkey, 0x1234);
        // Out-of-range state values.
        let bogus = ModifyAttr { qp_state: 9, ..ModifyAttr::zeroed() };
        assert_eq!(q.modify(AttrMask::STATE, &bogus, QpType::Rc), Err(AttrError::Invalid));
    }

    #[test]
    fn cur_state_assertion_follows_c() {
        // C trusts the asserted current state for the transition check.
        let mut q = QpAttrs::new(QpType::Ud, 0);
        let mut a = ModifyAttr::zeroed();
        a.cur_qp_state = QpState::Rts.as_raw();
        a.qp_state = QpState::Rts.as_raw();
        let m = AttrMask::STATE | AttrMask::CUR_STATE;
        assert_eq!(q.modify(m, &a, QpType::Ud), Ok(Some(QpState::Rts)));
        // But not from states a QP cannot be in unknowingly.
        let mut q = QpAttrs::new(QpType::Ud, 0);
        a.cur_qp_state = QpState::Init.as_raw();
        assert_eq!(q.modify(m, &a, QpType::Ud), Err(AttrError::Invalid));
    }

    #[test]
    fn rd_atomic_rounding() {
        assert_eq!(rd_atomic_depth(0), 0);
        assert_eq!(rd_atomic_depth(1), 1);
        assert_eq!(rd_atomic_depth(3), 4);
        assert_eq!(rd_atomic_depth(128), 128);
        // 256 does not fit the u8 attribute.
        assert_eq!(rd_atomic_depth(129), 0);
        assert_eq!(rd_atomic_depth(255), 0);
    }

    #[test]
    fn gsi_knows_its_port() {
        assert_eq!(QpAttrs::new(QpType::Gsi, 1).port_num, 1);
        assert_eq!(QpAttrs::new(QpType::Ud, 1).port_num, 0);
    }
}
