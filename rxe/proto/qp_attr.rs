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
#[path = "qp_attr_tests.rs"]
mod tests;
