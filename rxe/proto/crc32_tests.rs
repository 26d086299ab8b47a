// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Host tests of [`super`] (`crc32.rs`).

use super::*;
use std::vec::Vec;

/// Bit at a time, straight from the definition.
pub(crate) fn bitwise(mut crc: u32, data: &[u8]) -> u32 {
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    crc
}

#[test]
fn check_value() {
    // The CRC-32 check value of "123456789" (inverted on both ends).
    assert_eq!(!crc32_le(!0, b"123456789"), 0xcbf4_3926);
    assert_eq!(crc32_le(0, &[]), 0);
    assert_eq!(crc32_le(0x1234_5678, &[]), 0x1234_5678);
}

#[test]
fn random_lengths_offsets_and_seeds() {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let data: Vec<u8> = (0..9000).map(|_| next() as u8).collect();
    for _ in 0..2000 {
        let start = (next() % 64) as usize;
        let len = (next() % 4200) as usize;
        let seed = next() as u32;
        let s = &data[start..start + len];
        assert_eq!(
            crc32_le(seed, s),
            bitwise(seed, s),
            "start {start} len {len}"
        );
    }
    // Every short length: one block at most, then the word and byte steps.
    for len in 0..48 {
        assert_eq!(crc32_le(!0, &data[..len]), bitwise(!0, &data[..len]));
    }
}

/// Polynomial remainder over GF(2), bit `k` of a `u128` word vector
/// standing for `x^k`.
fn poly_rem(mut a: [u128; 3], p: u128) -> u128 {
    let deg_p = 127 - p.leading_zeros();
    for bit in (deg_p..384).rev() {
        let (w, b) = ((bit / 128) as usize, bit % 128);
        if a[w] >> b & 1 == 1 {
            // Subtract (XOR) `p * x^(bit - deg_p)`.
            let shift = bit - deg_p;
            let (sw, sb) = ((shift / 128) as usize, shift % 128);
            a[sw] ^= p << sb;
            if sb != 0 && sw + 1 < 3 {
                a[sw + 1] ^= p >> (128 - sb);
            }
        }
    }
    a[0]
}

#[test]
fn sparse_multiple() {
    // x^300 + x^155 + x^117 + x^89 + 1 over the CRC-32 polynomial
    // x^32 + x^26 + x^23 + x^22 + x^16 + x^12 + x^11 + x^10 + x^8 + x^7
    // + x^5 + x^4 + x^2 + x + 1 (0x1_04C1_1DB7).
    let mut q = [0u128; 3];
    for e in [300u32, 155, 117, 89, 0] {
        q[(e / 128) as usize] |= 1 << (e % 128);
    }
    assert_eq!(poly_rem(q, 0x1_04c1_1db7), 0);
    // And a near miss is not a multiple: the test can fail.
    q[0] ^= 1 << 1;
    assert_ne!(poly_rem(q, 0x1_04c1_1db7), 0);
}

#[test]
fn sparse_and_sliced_agree_around_the_switch() {
    let data: Vec<u8> = (0..2000u32).map(|i| (i * 131 + 17) as u8).collect();
    for start in 0..8 {
        for len in 0..400 {
            let s = &data[start..start + len];
            let seed = 0x0bad_cafe ^ len as u32;
            assert_eq!(sparse(seed, s), bitwise(seed, s), "start {start} len {len}");
            assert_eq!(sliced(seed, s), bitwise(seed, s), "start {start} len {len}");
        }
    }
}

#[test]
fn split_anywhere() {
    let data: Vec<u8> = (0..777u32).map(|i| (i * 31 + 7) as u8).collect();
    let whole = crc32_le(!0, &data);
    for at in 0..data.len() {
        let (a, b) = data.split_at(at);
        assert_eq!(crc32_le(crc32_le(!0, a), b), whole);
    }
}

/// `bitwise` over `data` with `mask` ORed into its first bytes.
fn masked_bitwise(crc: u32, data: &[u8], mask: &Mask) -> u32 {
    let v: Vec<u8> = data
        .iter()
        .enumerate()
        .map(|(i, &b)| b | mask.head().get(i).copied().unwrap_or(0))
        .collect();
    bitwise(crc, &v)
}

fn random_mask(rng: &mut crate::proto::testing::rng::Rng) -> Mask {
    let mut head = [0u8; MASK_LEN];
    for b in head.iter_mut() {
        // Mostly zero bytes, some all ones, some single bits.
        *b = match rng.below(8) {
            0 => 0xff,
            1 => 1 << rng.below(8),
            _ => 0,
        };
    }
    Mask::new(head)
}

#[test]
fn masked_software() {
    let mut rng = crate::proto::testing::rng::Rng::new(0x1357_9bdf_2468_ace0);
    let data: Vec<u8> = (0..600).map(|_| rng.next() as u8).collect();
    for len in 0..300 {
        let mask = random_mask(&mut rng);
        let start = rng.below(64) as usize;
        let seed = rng.u32();
        let s = &data[start..start + len];
        assert_eq!(
            crc32_masked(seed, s, &mask),
            masked_bitwise(seed, s, &mask),
            "len {len}"
        );
        assert_eq!(crc32_masked(seed, s, &Mask::NONE), bitwise(seed, s));
    }
}

/// The PCLMULQDQ fold (`rxe/kapi/clmul.rs`) against the bitwise
/// definition: every length to 300 from every offset within a block,
/// with and without masks, and random lengths, offsets, seeds and
/// masks to 9 KiB.
#[cfg(target_arch = "x86_64")]
#[test]
fn clmul_matches_bitwise() {
    if !std::is_x86_feature_detected!("pclmulqdq") || !std::is_x86_feature_detected!("ssse3") {
        std::println!("no PCLMULQDQ or SSSE3 on this CPU: skipped");
        return;
    }
    let wide = std::is_x86_feature_detected!("vpclmulqdq") && std::is_x86_feature_detected!("avx2");
    if !wide {
        std::println!("no VPCLMULQDQ on this CPU: the 256-bit loop is not tested");
    }
    for w in [false, true] {
        if w && !wide {
            continue;
        }
        // SAFETY: the features were just detected; the host owns its
        // vector registers.
        clmul_against_bitwise(|crc, d: &[u8], m: &Mask| unsafe {
            crate::clmul::crc32(crc, d, m, w)
        });
    }
}

/// The fold takes its mask at any alignment: a kernel stack is aligned to
/// 8 bytes only, whatever a local's type asks for. An aligned memory
/// operand in the assembly would fault here.
#[cfg(target_arch = "x86_64")]
#[test]
fn clmul_mask_at_any_alignment() {
    if !std::is_x86_feature_detected!("pclmulqdq") || !std::is_x86_feature_detected!("ssse3") {
        std::println!("no PCLMULQDQ or SSSE3 on this CPU: skipped");
        return;
    }
    let wide = std::is_x86_feature_detected!("vpclmulqdq") && std::is_x86_feature_detected!("avx2");
    let mut rng = crate::proto::testing::rng::Rng::new(0x9e37_79b9_7f4a_7c15);
    let data: Vec<u8> = (0..1000).map(|_| rng.next() as u8).collect();
    let mask = random_mask(&mut rng);
    // A buffer that starts 16-byte aligned, so that offset `at` is
    // misaligned by `at % 16`.
    let mut words = [0u128; 8];
    for at in 0..16 {
        // SAFETY: `words` is 128 bytes; the mask's 80 bytes fit from any
        // offset below 48.
        let buf = unsafe { core::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), 128) };
        buf[at..at + MASK_LEN + 16].copy_from_slice(mask.bytes());
        for len in [16usize, 44, 63, 64, 100, 255, 256, 1000] {
            for w in [false, true] {
                if w && !wide {
                    continue;
                }
                let s = &data[..len];
                // SAFETY: the features were just detected; the host owns
                // its vector registers; 80 bytes from `at` are the mask.
                let got = unsafe { crate::clmul::crc32_at(7, s, buf[at..].as_ptr(), w) };
                assert_eq!(
                    got,
                    Some(masked_bitwise(7, s, &mask)),
                    "at {at} len {len} wide {w}"
                );
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
fn clmul_against_bitwise(clmul: impl Fn(u32, &[u8], &Mask) -> Option<u32>) {
    let mut rng = crate::proto::testing::rng::Rng::new(0x2545_f491_4f6c_dd1d);
    let data: Vec<u8> = (0..9300).map(|_| rng.next() as u8).collect();
    for start in 0..16 {
        for len in 0..600 {
            let seed = rng.u32();
            let s = &data[start..start + len];
            let want = (len >= crate::clmul::MIN_LEN).then(|| bitwise(seed, s));
            assert_eq!(clmul(seed, s, &Mask::NONE), want, "start {start} len {len}");
            let mask = random_mask(&mut rng);
            let want = (len >= crate::clmul::MIN_LEN).then(|| masked_bitwise(seed, s, &mask));
            assert_eq!(
                clmul(seed, s, &mask),
                want,
                "masked: start {start} len {len}"
            );
        }
    }
    for _ in 0..3000 {
        let start = rng.below(64) as usize;
        let len = 16 + rng.below(9200 - 16) as usize;
        let seed = rng.u32();
        let s = &data[start..start + len];
        let mask = random_mask(&mut rng);
        assert_eq!(
            clmul(seed, s, &mask),
            Some(masked_bitwise(seed, s, &mask)),
            "start {start} len {len}"
        );
    }
    // All-ones and all-zero data, all-ones mask.
    let ones = Mask::new([0xff; MASK_LEN]);
    for len in 16..200 {
        assert_eq!(
            clmul(!0, &[0x31u8; 200][..len], &Mask::NONE),
            Some(bitwise(!0, &[0x31u8; 200][..len]))
        );
        assert_eq!(
            clmul(0, &[0u8; 200][..len], &ones),
            Some(masked_bitwise(0, &[0u8; 200][..len], &ones))
        );
    }
}
