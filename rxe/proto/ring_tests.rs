// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Host tests of [`super`] (`ring.rs`).

use super::*;
use std::collections::VecDeque;
use std::vec;

#[test]
fn fills_wraps_and_empties() {
    let mut slots: [Option<u32>; 3] = [None; 3];
    let mut r = Ring::new();
    assert_eq!(r.pop(&mut slots), None);
    for i in 0..3 {
        r.push(&mut slots, i).unwrap();
    }
    assert_eq!(r.push(&mut slots, 9), Err(9));
    assert_eq!(r.pop(&mut slots), Some(0));
    r.push(&mut slots, 3).unwrap();
    assert_eq!(r.peek(&slots), Some(&1));
    *r.peek_mut(&mut slots).unwrap() = 11;
    assert_eq!(r.len(), 3);
    assert_eq!(
        (r.pop(&mut slots), r.pop(&mut slots), r.pop(&mut slots)),
        (Some(11), Some(2), Some(3))
    );
    assert!(r.is_empty());
    assert_eq!(r.peek(&slots), None);
}

#[test]
fn zero_capacity() {
    let mut slots: [Option<u8>; 0] = [];
    let mut r = Ring::new();
    assert_eq!(r.push(&mut slots, 1), Err(1));
    assert_eq!(r.pop(&mut slots), None);
}

#[test]
fn clear_drops_items() {
    let mut slots = vec![None, None];
    let mut r = Ring::new();
    r.push(&mut slots, std::string::String::from("a")).unwrap();
    r.clear(&mut slots);
    assert!(r.is_empty() && slots.iter().all(Option::is_none));
    r.push(&mut slots, "b".into()).unwrap();
    assert_eq!(r.pop(&mut slots).as_deref(), Some("b"));
}

#[test]
fn fuzz_against_vecdeque() {
    let mut x = 0x1234_5678_9abc_def0u64;
    for cap in 0..6 {
        let mut slots = vec![None; cap];
        let mut r = Ring::new();
        let mut model = VecDeque::new();
        for i in 0..10_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            match x % 5 {
                0 | 1 => {
                    let got = r.push(&mut slots, i);
                    if model.len() < cap {
                        model.push_back(i);
                        assert_eq!(got, Ok(()));
                    } else {
                        assert_eq!(got, Err(i));
                    }
                }
                2 | 3 => assert_eq!(r.pop(&mut slots), model.pop_front()),
                _ => {
                    if x.is_multiple_of(97) {
                        r.clear(&mut slots);
                        model.clear();
                    }
                    assert_eq!(r.peek(&slots), model.front());
                }
            }
            assert_eq!(r.len(), model.len());
            assert_eq!(slots.iter().filter(|s| s.is_some()).count(), model.len());
        }
    }
}
