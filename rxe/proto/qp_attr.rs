//! Verbs-level QP and AH attribute rules of rxe: the create-time checks, the
//! modify-QP checks and what a modify stores, address vectors built from AH
//! attributes, and the numbers derived from them (UDP source port, multicast
//! MAC). The C driver spreads these over `rxe_qp.c`, `rxe_av.c` and
//! `rxe_verbs.c`; the errors here are the ones it returns.

use super::params::{limits, IbMtu, PORT_ATTR, ROCE_V2_SPORT};
use super::qp_state::{modify_is_ok, AttrMask, QpState, QpType};
use super::uapi::{access, av as av_off, sockaddr, Av, GlobalRoute, NetworkType};

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

/// `IB_AH_GRH` of `rdma_ah_attr.ah_flags`.
pub(crate) const AH_GRH: u8 = 1;

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

/// `AF_INET` and `AF_INET6` as `sa_family`.
const AF_INET: u16 = 2;
const AF_INET6: u16 = 10;

/// `enum rdma_network_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RdmaNetwork {
    Ib,
    RoceV1,
    Ipv4,
    Ipv6,
}

/// `enum ib_gid_type` values the network type derives from.
pub(crate) mod gid_type {
    pub(crate) const IB: u32 = 0;
    pub(crate) const ROCE: u32 = 1;
    pub(crate) const ROCE_UDP_ENCAP: u32 = 2;
}

/// `ipv6_addr_v4mapped()`: `::ffff:a.b.c.d`.
pub(crate) fn gid_is_v4mapped(gid: &[u8; 16]) -> bool {
    gid[..10].iter().all(|&b| b == 0) && gid[10] == 0xff && gid[11] == 0xff
}

/// `rdma_is_multicast_addr()` for the IPv6 form of a GID (`ff00::/8`); the
/// v4-mapped multicast range counts too.
pub(crate) fn gid_is_multicast(gid: &[u8; 16]) -> bool {
    if gid_is_v4mapped(gid) {
        return gid[12] & 0xf0 == 0xe0;
    }
    gid[0] == 0xff
}

/// The source GID entry an AH attribute refers to (`ib_gid_attr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SgidAttr {
    pub(crate) gid: [u8; 16],
    pub(crate) gid_type: u32,
}

impl SgidAttr {
    /// `rdma_gid_attr_network_type()`.
    pub(crate) fn network(&self) -> RdmaNetwork {
        match self.gid_type {
            gid_type::IB => RdmaNetwork::Ib,
            gid_type::ROCE => RdmaNetwork::RoceV1,
            _ if gid_is_v4mapped(&self.gid) => RdmaNetwork::Ipv4,
            _ => RdmaNetwork::Ipv6,
        }
    }
}

/// The parts of `struct rdma_ah_attr` rxe reads or returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AhAttr {
    pub(crate) port_num: u32,
    pub(crate) ah_flags: u8,
    pub(crate) sl: u8,
    pub(crate) static_rate: u8,
    pub(crate) grh: GlobalRoute,
    /// `grh.sgid_attr`, which the core resolves before calling the driver.
    pub(crate) sgid: Option<SgidAttr>,
    pub(crate) dmac: [u8; 6],
}

impl AhAttr {
    /// An all-zero attribute (what a memset gives in C).
    pub(crate) const fn zeroed() -> AhAttr {
        AhAttr {
            port_num: 0,
            ah_flags: 0,
            sl: 0,
            static_rate: 0,
            grh: GlobalRoute { dgid: [0; 16], flow_label: 0, sgid_index: 0, hop_limit: 0, traffic_class: 0 },
            sgid: None,
            dmac: [0; 6],
        }
    }

    pub(crate) fn has_grh(&self) -> bool {
        self.ah_flags & AH_GRH != 0
    }
}

/// `chk_attr()` of rxe_av.c: a GRH must name a GID of the table whose type
/// gives an IP network.
pub(crate) fn check_ah_attr(attr: &AhAttr) -> Result<(), AttrError> {
    if !attr.has_grh() {
        return Ok(());
    }
    // The GID table length is a port constant (1024), above any u8 index;
    // kept because the C check is.
    if u32::from(attr.grh.sgid_index) > PORT_ATTR.gid_tbl_len as u32 {
        return Err(AttrError::Invalid);
    }
    match attr.sgid.map(|s| s.network()) {
        Some(RdmaNetwork::Ipv4 | RdmaNetwork::Ipv6) => Ok(()),
        _ => Err(AttrError::Invalid),
    }
}

/// `rdma_gid2ip()`: a GID as the `sockaddr_in`/`sockaddr_in6` bytes of an AV.
fn gid_to_sockaddr(gid: &[u8; 16]) -> [u8; av_off::SOCKADDR_LEN] {
    let mut sa = [0u8; av_off::SOCKADDR_LEN];
    if gid_is_v4mapped(gid) {
        sa[sockaddr::FAMILY..sockaddr::FAMILY + 2].copy_from_slice(&AF_INET.to_ne_bytes());
        sa[sockaddr::IN_ADDR..sockaddr::IN_ADDR + 4].copy_from_slice(&gid[12..]);
    } else {
        sa[sockaddr::FAMILY..sockaddr::FAMILY + 2].copy_from_slice(&AF_INET6.to_ne_bytes());
        sa[sockaddr::IN6_ADDR..sockaddr::IN6_ADDR + 16].copy_from_slice(gid);
    }
    sa
}

/// `rxe_init_av()`: the address vector of a checked AH attribute. The
/// source GID must be known and of an IP network, as [`check_ah_attr`]
/// makes sure for attributes with a GRH; RoCE attributes always have one.
pub(crate) fn av_from_ah_attr(attr: &AhAttr) -> Result<Av, AttrError> {
    let sgid = attr.sgid.ok_or(AttrError::Invalid)?;
    let network_type = match sgid.network() {
        RdmaNetwork::Ipv4 => NetworkType::Ipv4,
        RdmaNetwork::Ipv6 => NetworkType::Ipv6,
        _ => return Err(AttrError::Invalid),
    };
    Ok(Av {
        // `rxe_av.port_num` is a u8; the port was checked to be 1 by the core.
        port_num: attr.port_num as u8,
        network_type,
        dmac: attr.dmac,
        grh: attr.grh,
        sgid_addr: gid_to_sockaddr(&sgid.gid),
        dgid_addr: gid_to_sockaddr(&attr.grh.dgid),
    })
}

/// `rxe_av_to_attr()` on a zeroed attribute: what query_qp and query_ah
/// return. Only the GRH and port come back; SL, rate and DMAC read as zero,
/// as in C. A QP path never set reads as an all-zero GRH on port 0.
pub(crate) fn ah_attr_from_av(av: Option<&Av>) -> AhAttr {
    let mut attr = AhAttr::zeroed();
    attr.ah_flags = AH_GRH;
    if let Some(av) = av {
        attr.grh = av.grh;
        attr.port_num = u32::from(av.port_num);
    }
    attr
}

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

/// `hash_32(val, bits)` of linux/hash.h.
const fn hash_32(val: u32, bits: u32) -> u32 {
    val.wrapping_mul(0x61c8_8647) >> (32 - bits)
}

/// The UDP source port a new QP sends from: spread over the dynamic range
/// by QPN so that different QPs land on different receive queues.
pub(crate) const fn src_port_for_qpn(qpn: u32) -> u16 {
    // 14 bits of hash above 0xc000: always a u16.
    (ROCE_V2_SPORT as u32 + (hash_32(qpn, 14) & 0x3fff)) as u16
}

/// `rdma_get_udp_sport()`: the source port once a path is known, from its
/// flow label or, lacking one, from both QPNs.
pub(crate) const fn udp_sport(flow_label: u32, lqpn: u32, rqpn: u32) -> u16 {
    let fl = if flow_label == 0 {
        let mut v = lqpn as u64 * rqpn as u64;
        v ^= v >> 20;
        v ^= v >> 40;
        (v & 0xfffff) as u32
    } else {
        flow_label
    };
    let low = (fl & 0x3fff) ^ ((fl & 0xfc000) >> 14);
    // At most 14 bits ORed into 0xc000.
    (low | 0xc000) as u16
}

/// The Ethernet address of a multicast GID, mapped the IPv6 way
/// (`33:33` and the last four bytes) for every GID, as `rxe_mcast_add()` does.
pub(crate) fn mcast_mac(mgid: &[u8; 16]) -> [u8; 6] {
    [0x33, 0x33, mgid[12], mgid[13], mgid[14], mgid[15]]
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
    use super::*;

    fn sgid_v4() -> SgidAttr {
        let mut gid = [0u8; 16];
        gid[10] = 0xff;
        gid[11] = 0xff;
        gid[12..].copy_from_slice(&[10, 77, 0, 1]);
        SgidAttr { gid, gid_type: gid_type::ROCE_UDP_ENCAP }
    }

    fn sgid_v6() -> SgidAttr {
        let mut gid = [0u8; 16];
        gid[0] = 0xfd;
        gid[1] = 0x77;
        gid[15] = 1;
        SgidAttr { gid, gid_type: gid_type::ROCE_UDP_ENCAP }
    }

    fn ah(sgid: SgidAttr, dgid: [u8; 16]) -> AhAttr {
        AhAttr {
            port_num: 1,
            ah_flags: AH_GRH,
            sl: 3,
            static_rate: 2,
            grh: GlobalRoute { dgid, flow_label: 0x12345, sgid_index: 1, hop_limit: 64, traffic_class: 7 },
            sgid: Some(sgid),
            dmac: [2, 0, 0, 0, 0, 9],
        }
    }

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
    fn network_types() {
        assert_eq!(sgid_v4().network(), RdmaNetwork::Ipv4);
        assert_eq!(sgid_v6().network(), RdmaNetwork::Ipv6);
        assert_eq!(SgidAttr { gid_type: gid_type::IB, ..sgid_v4() }.network(), RdmaNetwork::Ib);
        assert_eq!(SgidAttr { gid_type: gid_type::ROCE, ..sgid_v6() }.network(), RdmaNetwork::RoceV1);
        assert_eq!(check_ah_attr(&ah(sgid_v6(), [0; 16])), Ok(()));
        let v1 = ah(SgidAttr { gid_type: gid_type::ROCE, ..sgid_v6() }, [0; 16]);
        assert_eq!(check_ah_attr(&v1), Err(AttrError::Invalid));
        assert_eq!(check_ah_attr(&AhAttr { sgid: None, ..ah(sgid_v6(), [0; 16]) }), Err(AttrError::Invalid));
        // Without a GRH nothing is checked.
        assert_eq!(check_ah_attr(&AhAttr { ah_flags: 0, ..v1 }), Ok(()));
    }

    #[test]
    fn av_from_v4_and_v6() {
        let mut dgid = sgid_v4().gid;
        dgid[15] = 2;
        let av = av_from_ah_attr(&ah(sgid_v4(), dgid)).unwrap();
        assert_eq!(av.network_type, NetworkType::Ipv4);
        assert_eq!(av.port_num, 1);
        assert_eq!(av.dmac, [2, 0, 0, 0, 0, 9]);
        assert_eq!(av.src_ipv4(), [10, 77, 0, 1]);
        assert_eq!(av.dst_ipv4(), [10, 77, 0, 2]);
        assert_eq!(&av.sgid_addr[..2], &2u16.to_ne_bytes());
        assert!(av.sgid_addr[8..].iter().all(|&b| b == 0));
        assert_eq!(av.grh.flow_label, 0x12345);

        let dgid6 = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8];
        let av = av_from_ah_attr(&ah(sgid_v6(), dgid6)).unwrap();
        assert_eq!(av.network_type, NetworkType::Ipv6);
        assert_eq!(av.src_ipv6(), sgid_v6().gid);
        assert_eq!(av.dst_ipv6(), dgid6);
        assert_eq!(&av.dgid_addr[..2], &10u16.to_ne_bytes());
        // Port, flowinfo and scope stay zero.
        assert!(av.dgid_addr[2..8].iter().all(|&b| b == 0));
        assert!(av.dgid_addr[24..].iter().all(|&b| b == 0));

        assert_eq!(av_from_ah_attr(&AhAttr { sgid: None, ..ah(sgid_v6(), dgid6) }), Err(AttrError::Invalid));
    }

    #[test]
    fn query_returns_grh_and_port_only() {
        let a = ah(sgid_v6(), [9; 16]);
        let back = ah_attr_from_av(Some(&av_from_ah_attr(&a).unwrap()));
        assert_eq!(back.grh, a.grh);
        assert_eq!(back.port_num, 1);
        assert_eq!(back.ah_flags, AH_GRH);
        assert_eq!((back.sl, back.static_rate, back.dmac, back.sgid), (0, 0, [0; 6], None));
        let unset = ah_attr_from_av(None);
        assert_eq!(unset.ah_flags, AH_GRH);
        assert_eq!(unset.port_num, 0);
        assert_eq!(unset.grh.dgid, [0; 16]);
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

    #[test]
    fn ports_and_macs() {
        // hash_32(1, 14) = (0x61c88647 >> 18).
        assert_eq!(src_port_for_qpn(1), 0xc000 + (0x61c8_8647u32 >> 18) as u16);
        assert_eq!(src_port_for_qpn(0x11) & 0xc000, 0xc000);
        // Flow label given: folded to 14 bits.
        assert_eq!(udp_sport(0x12345, 1, 2), ((0x12345 & 0x3fff) ^ (0x12345 >> 14)) as u16 | 0xc000);
        // No flow label: from the QPN product.
        let v = 0x11u64 * 0x22;
        let fl = ((v ^ (v >> 20) ^ ((v ^ (v >> 20)) >> 40)) & 0xfffff) as u32;
        assert_eq!(udp_sport(0, 0x11, 0x22), udp_sport(fl, 0, 0));
        let mut mgid = [0u8; 16];
        mgid[0] = 0xff;
        mgid[12..].copy_from_slice(&[1, 2, 3, 4]);
        assert_eq!(mcast_mac(&mgid), [0x33, 0x33, 1, 2, 3, 4]);
        assert!(gid_is_multicast(&mgid));
        assert!(!gid_is_multicast(&sgid_v4().gid));
    }
}
