// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Host tests of [`super`] (`res_details.rs`).

use super::*;

#[test]
fn qp_raw_record_follows_the_attributes() {
    let d = QpDetails {
        sq_psn: 0x00ab_cdef,
        rq_psn: 7,
        retry_cnt: 7,
        last_err: Some(WcStatus::RemAccessErr),
        ..QpDetails::default()
    };
    let raw = d.raw();
    assert_eq!(raw[0], RAW_VERSION);
    assert_eq!(&raw[1..5], &0x00ab_cdefu32.to_le_bytes());
    assert_eq!(&raw[9..13], &7u32.to_le_bytes());
    let last = &raw[QP_RAW_LEN - 4..];
    assert_eq!(last, &WcStatus::RemAccessErr.as_raw().to_le_bytes());
    let none = QpDetails::default().raw();
    assert_eq!(&none[QP_RAW_LEN - 4..], &u32::MAX.to_le_bytes());
}

#[test]
fn attribute_names_are_unique() {
    let q = QpDetails::default().attrs();
    for (i, a) in q.iter().enumerate() {
        assert!(
            q.iter().skip(i + 1).all(|b| b.name != a.name),
            "{:?}",
            a.name
        );
        assert!(!a.name.is_empty());
    }
    assert_eq!(CqDetails::default().raw().len(), CQ_RAW_LEN);
}
