// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! CRC-32 (the ICRC's polynomial, bit-reflected) folded with the x86
//! carry-less multiply, PCLMULQDQ, for any buffer of 16 bytes or more, with
//! a mask ORed into its first 64 bytes on the way (the ICRC's variant
//! header fields, set to all ones).
//!
//! No `kernel::` here: the host test crate (`rxe/proto`) includes this file
//! and checks it against the bitwise CRC. The caller owns the SIMD unit
//! ([`super::crc32`] brackets the calls with `kernel_fpu_begin`/`_end`).
//!
//! # How it works
//!
//! A message is a polynomial over GF(2); its CRC (no inversion, the contract
//! of the kernel's `crc32_le`) is `M(x) * x^32 mod P(x)`. Loaded little
//! endian, bit `j` of a 16-byte block is the coefficient of `x^(127 - j)`:
//! the low 64-bit lane holds the block's upper half `H`, the high lane its
//! lower half `L`. Moving a block `D` bits towards the end of the message
//! multiplies it by `x^D`, and modulo `P`
//!
//! ```text
//! (H * x^64 + L) * x^D  ==  H * (x^(64+D) mod P) + L * (x^D mod P)
//! ```
//!
//! where each product is at most 64 + 32 bits wide: two carry-less
//! multiplies turn a block into an equivalent one `D` bits later, which is
//! XORed into the block found there. From 64 bytes on, four blocks in
//! flight fold 64 bytes per step (`D` = 512) and are then folded into one
//! (`D` = 128); shorter buffers start with one block. Further whole blocks
//! are folded in one at a time. Where the CPU has VPCLMULQDQ, buffers from
//! 256 bytes on keep eight blocks in flight in four 256-bit registers
//! (`D` = 1024, two blocks per instruction), merged with `D` = 256, then
//! 128.
//!
//! A tail of `r` < 16 bytes: the message ends with the running block `A`
//! and the tail `T`, that is with `A[..r]` and then the 16 bytes
//! `A[r..] || T`. The second part is a block (`A` shifted by `r` bytes, `T`
//! from the buffer's last 16 bytes), the first one is a block with leading
//! zeros (which do not change a CRC from state zero) and is folded onto it.
//! PSHUFB does the byte shifts, with shuffle masks read from a table at an
//! offset of `r`.
//!
//! The last block `X = H * x^64 + L` is reduced to the 32-bit CRC
//! `X * x^32 mod P` in three steps: `H` is folded onto `L` (leaving 96
//! bits), the top 32 of those onto the other 64, and the remaining 64-bit
//! `V` is reduced by Barrett's method: with `mu = x^64 div P`, the quotient
//! of `V` by `P` is `q = ((V div x^32) * mu) div x^32`, and the CRC is the
//! low 32 bits of `V + q * P`.
//!
//! PCLMULQDQ on reflected operands yields the reflected product shifted
//! down by one bit, and a constant kept in the low 32 bits of its lane
//! (which also keeps the multiply short where it is emulated) contributes
//! another 32: each folding constant is `x^(e - 33) mod P` instead of
//! `x^e mod P`. The 33-bit Barrett constants sit in the top 33 bits of
//! their lane, where they contribute 31 + 1 bits of shift, which places
//! `q` in the lowest 32 bits of the product and `q * P` on the 64 bits of
//! `V`.

/// The CRC polynomial with its `x^32` term, in normal bit order.
const POLY: u64 = 0x1_04c1_1db7;

use crate::rxe::proto::crc32::{Mask, MASK_LEN};

/// `x^e mod P`, normal bit order (bit `d` is the coefficient of `x^d`).
const fn xpow_mod(e: u32) -> u32 {
    let mut r: u64 = 1;
    let mut i = 0;
    while i < e {
        r <<= 1;
        if r & (1 << 32) != 0 {
            r ^= POLY;
        }
        i += 1;
    }
    // `r` < 2^32 after each reduction step.
    r as u32
}

/// `x^64 div P`, normal bit order (33 bits).
const fn mu() -> u64 {
    let mut rem: u128 = 1 << 64;
    let mut quot: u64 = 0;
    let mut d = 64;
    while d >= 32 {
        if rem & (1 << d) != 0 {
            rem ^= (POLY as u128) << (d - 32);
            quot |= 1 << (d - 32);
        }
        d -= 1;
    }
    quot
}

/// The multiplier that moves the half-block it is applied to `e` bits
/// further, as a lane operand: `x^(e - 33) mod P`, bit-reversed into the
/// low 32 bits (see the module comment for the 33).
const fn lane(e: u32) -> u64 {
    xpow_mod(e - 33).reverse_bits() as u64
}

/// A polynomial of degree 32 as a lane operand: bit-reversed into the top
/// 33 bits of the lane's reflected order, i.e. bit `j` is the coefficient
/// of `x^(32 - j)`.
const fn lane33(p: u64) -> u64 {
    p.reverse_bits() >> 31
}

/// Folding constants for a distance of `d` bits: the low lane multiplies a
/// block's upper half (`x^(64+d)`), the high lane its lower half (`x^d`).
const fn fold_by(d: u32) -> [u64; 2] {
    [lane(64 + d), lane(d)]
}

/// `T[r..r + 16]` keeps the last `r` bytes of a block (`pand`).
const fn keep() -> [u8; 32] {
    let mut t = [0u8; 32];
    let mut i = 16;
    while i < 32 {
        t[i] = 0xff;
        i += 1;
    }
    t
}

/// PSHUFB masks: `S[r..r + 16]` moves a block's first `r` bytes to its end
/// (zeros in front), `S[16 + r..32 + r]` drops its first `r` bytes (zeros
/// behind). An index byte with its top bit set yields a zero.
const fn shift() -> [u8; 48] {
    let mut t = [0x80u8; 48];
    let mut i = 0;
    while i < 16 {
        // `i` < 16: the cast is exact.
        t[16 + i] = i as u8;
        i += 1;
    }
    t
}

/// The constants, at fixed offsets that the assembly names.
#[repr(C, align(16))]
struct Consts {
    /// Four blocks ahead (512 bits), for the main loop. Offset 0.
    fold4: [u64; 2],
    /// One block ahead (128 bits), to merge the four and for single blocks.
    /// Offset 16.
    fold1: [u64; 2],
    /// The reduction's two folds: a lane by `x^128` in the low 32 bits of
    /// the first (`H` onto `L`), and 32 bits by `x^96` in the second.
    /// Offset 32.
    reduce: [u64; 2],
    /// Barrett's `mu` and `P`. Offset 48.
    barrett: [u64; 2],
    /// The low 32 bits of a register. Offset 64.
    low32: [u64; 2],
    /// See [`keep`]. Offset 80.
    keep: [u8; 32],
    /// See [`shift`]. Offset 112.
    shift: [u8; 48],
    /// Eight blocks ahead (1024 bits), for the 256-bit loop. Offset 160.
    fold8: [u64; 2],
    /// Two blocks ahead (256 bits), to merge its four registers. Offset
    /// 176.
    fold2: [u64; 2],
}

static K: Consts = Consts {
    fold4: fold_by(512),
    fold1: fold_by(128),
    reduce: [lane(128), lane(96)],
    barrett: [lane33(mu()), lane33(POLY)],
    low32: [0xffff_ffff, 0],
    keep: keep(),
    shift: shift(),
    fold8: fold_by(1024),
    fold2: fold_by(256),
};

// The offsets written into the assembly below.
const _: () = {
    assert!(core::mem::offset_of!(Consts, fold4) == 0);
    assert!(core::mem::offset_of!(Consts, fold1) == 16);
    assert!(core::mem::offset_of!(Consts, reduce) == 32);
    assert!(core::mem::offset_of!(Consts, barrett) == 48);
    assert!(core::mem::offset_of!(Consts, low32) == 64);
    assert!(core::mem::offset_of!(Consts, keep) == 80);
    assert!(core::mem::offset_of!(Consts, shift) == 112);
    assert!(core::mem::offset_of!(Consts, fold8) == 160);
    assert!(core::mem::offset_of!(Consts, fold2) == 176);
};

/// The CRC kernel. The same instructions for the host and the kernel; the
/// host's compiler may keep values in vector registers, so there the block
/// names the ones it uses, while the kernel is built without vector
/// registers (soft-float), which cannot be named as operands and are never
/// allocated by the compiler.
///
/// In: `p` the data, `n` its length (>= 16), `crc` the state, `m` the mask,
/// `mw` the mask of the buffer's last 16 bytes, `k` the constants. Out:
/// `crc`. Registers: xmm0-3 the four lanes (xmm3 the single one), xmm7 the
/// folding constant, xmm4-6 scratch.
///
/// Memory operands of SSE instructions other than loads must be 16-byte
/// aligned; only the constants (a static) are used that way. The data and
/// the mask are loaded with `movdqu`: a mask may live on the stack, which
/// the kernel aligns to 8 bytes only, whatever alignment its type asks for
/// (Rust places a local of 16-byte alignment as if the stack were aligned
/// to 16 at every call, as the user-space ABI promises).
macro_rules! crc_asm {
    ($p:ident, $n:ident, $crc:ident, $m:ident, $mw:ident, $wide:ident $(, $clob:tt)*) => {
        core::arch::asm!(
            "movd xmm6, {crc:e}",
            "cmp {n}, 64",
            "jb 6f",
            "cmp {n}, 256",
            "jb 31f",
            "test {w:e}, {w:e}",
            "jz 31f",
            // From 256 bytes, with VPCLMULQDQ: eight blocks in flight in
            // four 256-bit registers, the mask on the first two.
            "vmovd xmm6, {crc:e}",
            "vmovdqu ymm0, [{p}]",
            "vpor ymm0, ymm0, ymmword ptr [{m}]",
            "vpxor ymm0, ymm0, ymm6",
            "vmovdqu ymm1, [{p} + 32]",
            "vpor ymm1, ymm1, ymmword ptr [{m} + 32]",
            "vmovdqu ymm2, [{p} + 64]",
            "vmovdqu ymm3, [{p} + 96]",
            "add {p}, 128",
            "sub {n}, 128",
            "vbroadcasti128 ymm7, xmmword ptr [{k} + 160]",
            "32:",
            "vpclmulqdq ymm4, ymm0, ymm7, 0x00",
            "vpclmulqdq ymm0, ymm0, ymm7, 0x11",
            "vpxor ymm0, ymm0, ymmword ptr [{p}]",
            "vpxor ymm0, ymm0, ymm4",
            "vpclmulqdq ymm4, ymm1, ymm7, 0x00",
            "vpclmulqdq ymm1, ymm1, ymm7, 0x11",
            "vpxor ymm1, ymm1, ymmword ptr [{p} + 32]",
            "vpxor ymm1, ymm1, ymm4",
            "vpclmulqdq ymm4, ymm2, ymm7, 0x00",
            "vpclmulqdq ymm2, ymm2, ymm7, 0x11",
            "vpxor ymm2, ymm2, ymmword ptr [{p} + 64]",
            "vpxor ymm2, ymm2, ymm4",
            "vpclmulqdq ymm4, ymm3, ymm7, 0x00",
            "vpclmulqdq ymm3, ymm3, ymm7, 0x11",
            "vpxor ymm3, ymm3, ymmword ptr [{p} + 96]",
            "vpxor ymm3, ymm3, ymm4",
            "add {p}, 128",
            "sub {n}, 128",
            "cmp {n}, 128",
            "jae 32b",
            // The four registers into ymm3, then its two blocks into xmm3.
            "vbroadcasti128 ymm7, xmmword ptr [{k} + 176]",
            "vpclmulqdq ymm4, ymm0, ymm7, 0x00",
            "vpclmulqdq ymm0, ymm0, ymm7, 0x11",
            "vpxor ymm1, ymm1, ymm4",
            "vpxor ymm1, ymm1, ymm0",
            "vpclmulqdq ymm4, ymm1, ymm7, 0x00",
            "vpclmulqdq ymm1, ymm1, ymm7, 0x11",
            "vpxor ymm2, ymm2, ymm4",
            "vpxor ymm2, ymm2, ymm1",
            "vpclmulqdq ymm4, ymm2, ymm7, 0x00",
            "vpclmulqdq ymm2, ymm2, ymm7, 0x11",
            "vpxor ymm3, ymm3, ymm4",
            "vpxor ymm3, ymm3, ymm2",
            "vextracti128 xmm5, ymm3, 1",
            "vmovdqa xmm7, xmmword ptr [{k} + 16]",
            "vpclmulqdq xmm4, xmm3, xmm7, 0x00",
            "vpclmulqdq xmm3, xmm3, xmm7, 0x11",
            "vpxor xmm3, xmm3, xmm4",
            "vpxor xmm3, xmm3, xmm5",
            // The SSE code below, with xmm7 the one-block constant.
            "vzeroupper",
            "jmp 5f",
            // Four lanes, the mask on each.
            "31:",
            "movdqu xmm0, [{p}]",
            "movdqu xmm4, [{m}]",
            "por xmm0, xmm4",
            "pxor xmm0, xmm6",
            "movdqu xmm1, [{p} + 16]",
            "movdqu xmm4, [{m} + 16]",
            "por xmm1, xmm4",
            "movdqu xmm2, [{p} + 32]",
            "movdqu xmm4, [{m} + 32]",
            "por xmm2, xmm4",
            "movdqu xmm3, [{p} + 48]",
            "movdqu xmm4, [{m} + 48]",
            "por xmm3, xmm4",
            "add {p}, 64",
            "sub {n}, 64",
            "cmp {n}, 64",
            "jb 3f",
            "movdqa xmm7, xmmword ptr [{k}]",
            "2:",
            "movdqa xmm4, xmm0",
            "pclmulqdq xmm0, xmm7, 0x00",
            "pclmulqdq xmm4, xmm7, 0x11",
            "movdqu xmm5, [{p}]",
            "pxor xmm0, xmm4",
            "pxor xmm0, xmm5",
            "movdqa xmm4, xmm1",
            "pclmulqdq xmm1, xmm7, 0x00",
            "pclmulqdq xmm4, xmm7, 0x11",
            "movdqu xmm5, [{p} + 16]",
            "pxor xmm1, xmm4",
            "pxor xmm1, xmm5",
            "movdqa xmm4, xmm2",
            "pclmulqdq xmm2, xmm7, 0x00",
            "pclmulqdq xmm4, xmm7, 0x11",
            "movdqu xmm5, [{p} + 32]",
            "pxor xmm2, xmm4",
            "pxor xmm2, xmm5",
            "movdqa xmm4, xmm3",
            "pclmulqdq xmm3, xmm7, 0x00",
            "pclmulqdq xmm4, xmm7, 0x11",
            "movdqu xmm5, [{p} + 48]",
            "pxor xmm3, xmm4",
            "pxor xmm3, xmm5",
            "add {p}, 64",
            "sub {n}, 64",
            "cmp {n}, 64",
            "jae 2b",
            "3:",
            // The four lanes into xmm3.
            "movdqa xmm7, xmmword ptr [{k} + 16]",
            "movdqa xmm4, xmm0",
            "pclmulqdq xmm0, xmm7, 0x00",
            "pclmulqdq xmm4, xmm7, 0x11",
            "pxor xmm1, xmm0",
            "pxor xmm1, xmm4",
            "movdqa xmm4, xmm1",
            "pclmulqdq xmm1, xmm7, 0x00",
            "pclmulqdq xmm4, xmm7, 0x11",
            "pxor xmm2, xmm1",
            "pxor xmm2, xmm4",
            "movdqa xmm4, xmm2",
            "pclmulqdq xmm2, xmm7, 0x00",
            "pclmulqdq xmm4, xmm7, 0x11",
            "pxor xmm3, xmm2",
            "pxor xmm3, xmm4",
            // Whole blocks after the first 64 bytes: no mask.
            "jmp 5f",
            "4:",
            "movdqa xmm4, xmm3",
            "pclmulqdq xmm3, xmm7, 0x00",
            "pclmulqdq xmm4, xmm7, 0x11",
            "movdqu xmm5, [{p}]",
            "pxor xmm3, xmm4",
            "pxor xmm3, xmm5",
            "add {p}, 16",
            "sub {n}, 16",
            "5:",
            "cmp {n}, 16",
            "jae 4b",
            "jmp 9f",
            // Under 64 bytes: one lane, the mask on each block.
            "6:",
            "movdqu xmm3, [{p}]",
            "movdqu xmm4, [{m}]",
            "por xmm3, xmm4",
            "pxor xmm3, xmm6",
            "movdqa xmm7, xmmword ptr [{k} + 16]",
            "jmp 8f",
            "7:",
            "movdqa xmm4, xmm3",
            "pclmulqdq xmm3, xmm7, 0x00",
            "pclmulqdq xmm4, xmm7, 0x11",
            "movdqu xmm5, [{p}]",
            "movdqu xmm6, [{m}]",
            "por xmm5, xmm6",
            "pxor xmm3, xmm4",
            "pxor xmm3, xmm5",
            "8:",
            "add {p}, 16",
            "add {m}, 16",
            "sub {n}, 16",
            "cmp {n}, 16",
            "jae 7b",
            // A tail of n < 16 bytes ending at p + n: the buffer's last
            // 16 bytes (masked) keep their last n, xmm3 is shifted down by
            // n bytes under them, and its first n bytes, as a block of
            // their own, are folded onto the result.
            "9:",
            "test {n}, {n}",
            "jz 22f",
            "movdqu xmm5, [{p} + {n} - 16]",
            "movdqu xmm4, [{mw}]",
            "por xmm5, xmm4",
            "movdqu xmm4, [{k} + {n} + 80]",
            "pand xmm5, xmm4",
            "movdqu xmm6, [{k} + {n} + 112]",
            "movdqa xmm4, xmm3",
            "pshufb xmm4, xmm6",
            "movdqu xmm6, [{k} + {n} + 128]",
            "pshufb xmm3, xmm6",
            "por xmm3, xmm5",
            "movdqa xmm5, xmm4",
            "pclmulqdq xmm4, xmm7, 0x00",
            "pclmulqdq xmm5, xmm7, 0x11",
            "pxor xmm3, xmm4",
            "pxor xmm3, xmm5",
            // The block's CRC: H onto L (96 bits left, in the top 96 bits
            // of xmm3 after the shift), the top 32 onto the other 64, then
            // Barrett.
            "22:",
            "movdqa xmm4, xmm3",
            "pclmulqdq xmm4, xmmword ptr [{k} + 32], 0x00",
            "psrldq xmm3, 8",
            "pxor xmm3, xmm4",
            "pshufd xmm4, xmm3, 0xfc",
            "pclmulqdq xmm4, xmmword ptr [{k} + 32], 0x10",
            "psrldq xmm3, 4",
            "pxor xmm3, xmm4",
            "movdqa xmm4, xmm3",
            "pclmulqdq xmm4, xmmword ptr [{k} + 48], 0x00",
            "pand xmm4, xmmword ptr [{k} + 64]",
            "pclmulqdq xmm4, xmmword ptr [{k} + 48], 0x10",
            "pxor xmm3, xmm4",
            "pshufd xmm3, xmm3, 0x01",
            "movd {crc:e}, xmm3",
            p = inout(reg) $p => _,
            n = inout(reg) $n => _,
            m = inout(reg) $m => _,
            crc = inout(reg) $crc,
            mw = in(reg) $mw,
            w = in(reg) u32::from($wide),
            k = in(reg) &K,
            $(out($clob) _,)*
            options(nostack, readonly),
        )
    };
}

/// The shortest buffer [`crc32`] takes.
pub(crate) const MIN_LEN: usize = 16;

/// CRC-32 of `data` from state `crc` (the contract of the kernel's
/// `crc32_le`) with `mask` ORed into its first [`MASK_LEN`] bytes; `None`
/// for buffers shorter than [`MIN_LEN`]. With `wide`, buffers from 256
/// bytes on are folded 256 bits per instruction (VPCLMULQDQ).
///
/// # Safety
///
/// The CPU must have PCLMULQDQ and SSSE3, with `wide` also VPCLMULQDQ and
/// AVX2 with the YMM state enabled, and the caller must own the vector
/// registers: in the kernel, between `kernel_fpu_begin` and
/// `kernel_fpu_end`.
#[inline]
pub(crate) unsafe fn crc32(crc: u32, data: &[u8], mask: &Mask, wide: bool) -> Option<u32> {
    // SAFETY: a `Mask` holds `MASK_LEN + 16` bytes; the rest is the
    // caller's promise.
    unsafe { crc32_at(crc, data, mask.bytes().as_ptr(), wide) }
}

/// [`crc32`] with the mask's `MASK_LEN + 16` bytes at `m`, at any
/// alignment.
///
/// # Safety
///
/// As for [`crc32`], and `m` points to `MASK_LEN + 16` readable bytes.
#[inline]
pub(crate) unsafe fn crc32_at(crc: u32, data: &[u8], m: *const u8, wide: bool) -> Option<u32> {
    let len = data.len();
    if len < MIN_LEN {
        return None;
    }
    let mut crc = crc;
    let p = data.as_ptr();
    // The mask of the last 16 bytes: zero from `MASK_LEN` on.
    let mw = m.wrapping_add((len - 16).min(MASK_LEN));
    // SAFETY: the block reads the `len` >= 16 bytes from `p` (whole blocks
    // from the start, then the last 16 bytes), the mask blocks at `m`,
    // `m + 16`, `m + 32`, `m + 48` (the first 64 bytes, or those under
    // `len`, loaded without an alignment requirement) and 16 bytes at `mw`
    // (at most `m + 64`: inside the 80 bytes the caller promises), and the
    // constants `K`, 16-byte aligned, with the table reads at `n` < 16
    // bytes into `keep` (32 bytes) and `shift` (48). The 256-bit loop reads
    // 128 bytes at a time while 128 are left, and the mask's first 64
    // bytes. The CPU features and the vector state are the caller's
    // promise (see `# Safety`). On the host the vector registers it uses
    // are declared clobbered (their upper halves, which code built without
    // AVX never uses, are zeroed by `vzeroupper`); the kernel's compiler
    // never allocates them.
    unsafe {
        #[cfg(target_feature = "sse2")]
        crc_asm!(
            p, len, crc, m, mw, wide, "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6",
            "xmm7"
        );
        #[cfg(not(target_feature = "sse2"))]
        crc_asm!(p, len, crc, m, mw, wide);
    }
    Some(crc)
}

#[cfg(test)]
#[path = "clmul_tests.rs"]
mod tests;
