// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! CRC-32 (the ICRC's polynomial, bit-reflected) folded with the x86
//! carry-less multiply, PCLMULQDQ.
//!
//! No `kernel::` here: the host test crate (`rxe/proto`) includes this file
//! and checks it against the table CRC. The caller owns the SIMD unit
//! ([`super::crc32`] brackets the call with `kernel_fpu_begin`/`_end`).
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
//! XORed into the block found there. Four blocks in flight fold 64 bytes per
//! step (`D` = 512); at the end they are folded into one (`D` = 128), the
//! remaining 16-byte blocks likewise, and the last block's CRC is taken by
//! the table code, so no Barrett reduction is needed.
//!
//! PCLMULQDQ on reflected operands yields the reflected product shifted
//! down by one bit, and a constant kept in the low 32 bits of its lane
//! (which also keeps the multiply short where it is emulated) contributes
//! another 32: each constant is `x^(e - 33) mod P` instead of `x^e mod P`.

/// The CRC polynomial with its `x^32` term, in normal bit order.
const POLY: u64 = 0x1_04c1_1db7;

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

/// The multiplier that moves the half-block it is applied to `e` bits
/// further, as a lane operand: `x^(e - 33) mod P`, bit-reversed into the
/// low 32 bits (see the module comment for the 33).
const fn lane(e: u32) -> u64 {
    xpow_mod(e - 33).reverse_bits() as u64
}

/// Folding constants for a distance of `d` bits: the low lane multiplies a
/// block's upper half (`x^(64+d)`), the high lane its lower half (`x^d`).
const fn fold_by(d: u32) -> [u64; 2] {
    [lane(64 + d), lane(d)]
}

/// Four blocks ahead (512 bits), for the main loop.
static FOLD_4: [u64; 2] = fold_by(512);
/// One block ahead (128 bits), to merge the four and for the tail.
static FOLD_1: [u64; 2] = fold_by(128);

/// The folding loop needs at least four blocks.
const MIN_LEN: usize = 64;

/// The folding kernel. The same instructions for the host and the kernel;
/// the host's compiler may keep values in vector registers, so there the
/// block names the ones it uses, while the kernel is built without vector
/// registers (soft-float), which cannot be named as operands and are never
/// allocated by the compiler.
macro_rules! fold_asm {
    ($p:ident, $blocks:ident, $tail:ident, $crc:ident, $out:ident $(, $clob:tt)*) => {
        core::arch::asm!(
            "movdqu xmm0, [{p}]",
            "movdqu xmm1, [{p} + 16]",
            "movdqu xmm2, [{p} + 32]",
            "movdqu xmm3, [{p} + 48]",
            "movd xmm4, {crc:e}",
            "pxor xmm0, xmm4",
            "add {p}, 64",
            "dec {n}",
            "jz 3f",
            "movdqu xmm7, [{k4}]",
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
            "dec {n}",
            "jnz 2b",
            "3:",
            "movdqu xmm7, [{k1}]",
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
            "test {t}, {t}",
            "jz 5f",
            "4:",
            "movdqa xmm4, xmm3",
            "pclmulqdq xmm3, xmm7, 0x00",
            "pclmulqdq xmm4, xmm7, 0x11",
            "movdqu xmm5, [{p}]",
            "pxor xmm3, xmm4",
            "pxor xmm3, xmm5",
            "add {p}, 16",
            "dec {t}",
            "jnz 4b",
            "5:",
            "movdqu [{out}], xmm3",
            p = inout(reg) $p => _,
            n = inout(reg) $blocks => _,
            t = inout(reg) $tail => _,
            crc = in(reg) $crc,
            k4 = in(reg) FOLD_4.as_ptr(),
            k1 = in(reg) FOLD_1.as_ptr(),
            out = in(reg) $out,
            $(out($clob) _,)*
            options(nostack),
        )
    };
}

/// Folds the whole 16-byte blocks of `data` (at least [`MIN_LEN`] bytes),
/// starting from CRC state `crc`, into one block whose CRC with initial
/// state 0 equals the CRC of those blocks from state `crc`. Returns that
/// block and the number of bytes it covers (a multiple of 16).
///
/// # Safety
///
/// The CPU must have PCLMULQDQ and SSE2, and the caller must own the vector
/// registers: in the kernel, between `kernel_fpu_begin` and `kernel_fpu_end`.
pub(crate) unsafe fn fold(crc: u32, data: &[u8]) -> Option<([u8; 16], usize)> {
    if data.len() < MIN_LEN {
        return None;
    }
    let blocks = data.len() / 64;
    let tail = (data.len() % 64) / 16;
    let covered = blocks * 64 + tail * 16;
    let mut out = [0u8; 16];
    let p = data.as_ptr();
    let out_p = out.as_mut_ptr();
    // SAFETY: the block reads `covered` <= `data.len()` bytes from `p` with
    // unaligned loads and writes 16 bytes to `out`; `blocks` >= 1 as the
    // loop's first pass requires. The CPU features and the vector state are
    // the caller's promise (see `# Safety`). On the host the vector registers
    // it uses are declared clobbered; the kernel's compiler never allocates
    // them.
    unsafe {
        #[cfg(target_feature = "sse2")]
        fold_asm!(
            p, blocks, tail, crc, out_p, "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm7"
        );
        #[cfg(not(target_feature = "sse2"))]
        fold_asm!(p, blocks, tail, crc, out_p);
    }
    Some((out, covered))
}

/// CRC-32 of `data` from state `crc` (the contract of the kernel's
/// `crc32_le`): the folded bulk, then `table` over the folded block and the
/// bytes after the last whole block.
///
/// # Safety
///
/// As for [`fold`].
pub(crate) unsafe fn crc32(crc: u32, data: &[u8], table: fn(u32, &[u8]) -> u32) -> u32 {
    // SAFETY: the CPU has PCLMULQDQ and SSE2 and we own the vector
    // registers: the caller's contract, the same as `fold`'s.
    match unsafe { fold(crc, data) } {
        Some((block, covered)) => table(table(0, &block), data.get(covered..).unwrap_or(&[])),
        None => table(crc, data),
    }
}
