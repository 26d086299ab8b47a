// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Host tests of [`super`] (`gid_set.rs`).

use super::*;

fn gid(n: u8) -> [u8; 16] {
    let mut g = [0u8; 16];
    g[10] = 0xff;
    g[11] = 0xff;
    g[12] = 10;
    g[15] = n;
    g
}

#[test]
fn empty_knows_nothing_is_there() {
    let s = GidSet::new();
    assert_eq!(s.lookup(&gid(1), 7), Found::No);
}

#[test]
fn add_lookup_remove() {
    let s = GidSet::new();
    s.add(&gid(1), 7);
    s.add(&gid(2), 7);
    assert_eq!(s.lookup(&gid(1), 7), Found::Yes);
    assert_eq!(s.lookup(&gid(2), 7), Found::Yes);
    // Another device's address, or this device's on another netdev.
    assert_eq!(s.lookup(&gid(3), 7), Found::No);
    assert_eq!(s.lookup(&gid(1), 8), Found::No);
    s.remove(&gid(1), 7);
    assert_eq!(s.lookup(&gid(1), 7), Found::No);
    assert_eq!(s.lookup(&gid(2), 7), Found::Yes);
    s.remove(&gid(2), 7);
    assert_eq!(s.lookup(&gid(2), 7), Found::No);
}

#[test]
fn the_same_gid_on_two_netdevs() {
    let s = GidSet::new();
    s.add(&gid(1), 7);
    s.add(&gid(1), 9);
    s.remove(&gid(1), 7);
    assert_eq!(s.lookup(&gid(1), 7), Found::No);
    assert_eq!(s.lookup(&gid(1), 9), Found::Yes);
}

#[test]
fn beyond_the_slots_it_answers_unknown_until_those_are_gone() {
    let s = GidSet::new();
    let n = u8::try_from(SLOTS).unwrap();
    for i in 0..n + 2 {
        s.add(&gid(i), 7);
    }
    // Stored ones are found; anything else might be one of the two others.
    assert_eq!(s.lookup(&gid(0), 7), Found::Yes);
    assert_eq!(s.lookup(&gid(n), 7), Found::Unknown);
    assert_eq!(s.lookup(&gid(200), 7), Found::Unknown);
    // Removing a stored one frees a slot, but the set still misses two.
    s.remove(&gid(0), 7);
    assert_eq!(s.lookup(&gid(0), 7), Found::Unknown);
    s.remove(&gid(n), 7);
    s.remove(&gid(n + 1), 7);
    assert_eq!(s.lookup(&gid(0), 7), Found::No);
    assert_eq!(s.lookup(&gid(200), 7), Found::No);
    for i in 1..n {
        assert_eq!(s.lookup(&gid(i), 7), Found::Yes, "gid {i}");
    }
}

#[test]
fn removal_keeps_the_others_whatever_the_order() {
    let s = GidSet::new();
    let n = u8::try_from(SLOTS).unwrap();
    for i in 0..n {
        s.add(&gid(i), 7);
    }
    for i in [3, 0, 7, 5] {
        s.remove(&gid(i), 7);
        assert_eq!(s.lookup(&gid(i), 7), Found::No);
    }
    for i in [1, 2, 4, 6] {
        assert_eq!(s.lookup(&gid(i), 7), Found::Yes, "gid {i}");
    }
}

#[test]
fn a_second_writer_poisons_it() {
    let s = GidSet::new();
    s.add(&gid(1), 7);
    // A writer under way (odd count) when another comes.
    s.seq.fetch_add(1, Ordering::Relaxed);
    s.add(&gid(2), 7);
    assert_eq!(s.lookup(&gid(1), 7), Found::Unknown);
    s.seq.fetch_add(1, Ordering::Relaxed);
    assert_eq!(s.lookup(&gid(1), 7), Found::Unknown);
    assert_eq!(s.lookup(&gid(9), 7), Found::Unknown);
}

#[test]
fn readers_during_writes_never_see_a_wrong_answer() {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    let s = Arc::new(GidSet::new());
    // Always there, on a slot the writer keeps moving others around.
    s.add(&gid(100), 7);
    let stop = Arc::new(AtomicBool::new(false));
    // Lookups done by all readers: the writer goes on until they have done
    // some, however late a loaded host runs them.
    let looked = Arc::new(AtomicU32::new(0));
    let readers: std::vec::Vec<_> = (0..2)
        .map(|_| {
            let (s, stop, looked) = (s.clone(), stop.clone(), looked.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    match s.lookup(&gid(100), 7) {
                        Found::Yes | Found::Unknown => {}
                        Found::No => panic!("a stored GID looked absent"),
                    }
                    if s.lookup(&gid(250), 7) == Found::Yes {
                        panic!("a GID never added looked present");
                    }
                    looked.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let mut round = 0u32;
    while round < 20_000 || looked.load(Ordering::Relaxed) < 20_000 {
        let g = gid(u8::try_from(round % 7).unwrap());
        s.add(&g, 7);
        s.remove(&g, 7);
        round = round.wrapping_add(1);
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        r.join().unwrap();
    }
    assert_eq!(s.lookup(&gid(100), 7), Found::Yes);
}
