// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Host tests of [`super`] (`clmul.rs`).

use super::*;

#[test]
fn constants() {
    // The reflected polynomial, as every reflected CRC-32 code has it.
    assert_eq!(lane33(POLY), 0x1_db71_0641);
    // mu * P has no term between x^32 and x^63: it is x^64 plus a
    // remainder of degree < 32.
    let mut prod: u128 = 0;
    for i in 0..33 {
        if mu() >> i & 1 == 1 {
            prod ^= u128::from(POLY) << i;
        }
    }
    assert_eq!(prod >> 32, 1 << 32);
    assert_eq!(xpow_mod(32), 0x04c1_1db7);
}
