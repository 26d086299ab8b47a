// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The ICRC's CRC-32 with the fastest method the CPU offers: the
//! carry-less-multiply fold ([`super::clmul`], x86-64 PCLMULQDQ) for
//! buffers of 64 bytes and more when the vector unit may be used here, the
//! software CRC of `proto::crc32` (a sparse multiple of the polynomial, and
//! tables for short buffers) otherwise.
//!
//! An emulated CPU is not a fast one: QEMU's TCG (before 8.2) computes
//! each carry-less multiply bit by bit and saves the vector state in a
//! helper, so in host time the fold costs about twice the table CRC there
//! (docs/benchmark.md), and the software CRC is used under TCG.
//!
//! 6.12's `crc32_le` is table-driven (the crypto API's `crc32-pclmul`
//! needs a module and a transform object); from 6.14 `crc32_le` itself uses
//! the fold on x86 (`CONFIG_CRC32_ARCH`), for short buffers too, and where
//! the module would fold it calls that instead.

use core::sync::atomic::{AtomicBool, Ordering};

use kernel::prelude::*;

use crate::rxe::proto::crc32::crc32_le as software;
use crate::rxe::sys as b;

/// Below this the software CRC is as fast as the fold (which needs four
/// blocks).
const FOLD_MIN: usize = 64;

/// Whether [`crc32`] folds with PCLMULQDQ: set once by [`select`].
static CLMUL: AtomicBool = AtomicBool::new(false);

/// Whether [`crc32`] calls the kernel's `crc32_le`, the architecture's fold
/// for every length (7.x with `CONFIG_CRC32_ARCH`), where it would fold
/// itself: set once by [`select`].
static KERNEL_FOLD: AtomicBool = AtomicBool::new(false);

/// Chooses the method at module load: the fold when the CPU has it and it
/// agrees with the software CRC on a check pattern.
/// The module parameter `icrc_fold` overrides the choice: 0 never folds,
/// 1 folds under TCG too (to count the instructions a real CPU runs).
pub(crate) fn select() {
    // SAFETY: FFI call without arguments, usable in any context.
    let param = unsafe { b::rxe_rs_param_icrc_fold() };
    if param == 0 {
        pr_info!("ICRC: CRC-32 in software (icrc_fold=0)\n");
        return;
    }
    // SAFETY: FFI call without arguments, usable in any context.
    if !unsafe { b::rxe_rs_cpu_has_clmul() } {
        pr_info!("ICRC: CRC-32 in software (no PCLMULQDQ)\n");
        return;
    }
    // SAFETY: FFI call without arguments, usable in any context.
    if param < 0 && unsafe { b::rxe_rs_cpu_is_tcg() } {
        pr_info!("ICRC: CRC-32 in software (PCLMULQDQ emulated by QEMU TCG)\n");
        return;
    }
    let mut pattern = [0u8; 1000];
    let mut x = 0x9e37_79b9u32;
    for byte in pattern.iter_mut() {
        x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        *byte = (x >> 24) as u8;
    }
    match with_clmul(0x1234_5678, &pattern) {
        Some(c) if c == software(0x1234_5678, &pattern) => {
            CLMUL.store(true, Ordering::Relaxed);
            // SAFETY: FFI call without arguments, usable in any context.
            if unsafe { b::rxe_rs_crc32_is_arch() }
                && kernel_crc32(0x1234_5678, &pattern) == c
                && kernel_crc32(0x1234_5678, &pattern[..20])
                    == software(0x1234_5678, &pattern[..20])
            {
                KERNEL_FOLD.store(true, Ordering::Relaxed);
                pr_info!("ICRC: CRC-32 by the kernel's PCLMULQDQ folding\n");
            } else {
                pr_info!("ICRC: CRC-32 by PCLMULQDQ folding\n");
            }
        }
        Some(_) => {
            pr_err!("ICRC: PCLMULQDQ fold disagrees with the software CRC; using software\n")
        }
        None => pr_info!("ICRC: CRC-32 in software (vector unit unavailable)\n"),
    }
}

/// The fold, or `None` where the vector unit may not be used (an interrupt
/// that preempted kernel code using it).
#[cfg(target_arch = "x86_64")]
fn with_clmul(crc: u32, data: &[u8]) -> Option<u32> {
    // SAFETY: FFI call without arguments; when it returns true the vector
    // registers are ours until `rxe_rs_simd_end`.
    if !unsafe { b::rxe_rs_simd_begin() } {
        return None;
    }
    // SAFETY: the CPU has PCLMULQDQ and SSE2: `select` checks them before
    // its own call and before setting `CLMUL`, which every other caller
    // tests first. The vector unit is ours since `rxe_rs_simd_begin`
    // returned true.
    let crc = unsafe { super::clmul::crc32(crc, data, software) };
    // SAFETY: pairs with the successful `rxe_rs_simd_begin` above.
    unsafe { b::rxe_rs_simd_end() };
    Some(crc)
}

#[cfg(not(target_arch = "x86_64"))]
fn with_clmul(_crc: u32, _data: &[u8]) -> Option<u32> {
    None
}

/// The kernel's `crc32_le`.
fn kernel_crc32(crc: u32, data: &[u8]) -> u32 {
    // SAFETY: `crc32_le` reads `data.len()` bytes from `data`, valid for
    // that long, in any context.
    unsafe { b::crc32_le(crc, data.as_ptr().cast(), data.len()) }
}

/// Continues CRC `crc` over `data` (the contract of the kernel's
/// `crc32_le`: no inversion on entry or exit).
#[inline]
pub(crate) fn crc32(crc: u32, data: &[u8]) -> u32 {
    if KERNEL_FOLD.load(Ordering::Relaxed) {
        return kernel_crc32(crc, data);
    }
    if CLMUL.load(Ordering::Relaxed) && data.len() >= FOLD_MIN {
        if let Some(crc) = with_clmul(crc, data) {
            return crc;
        }
    }
    software(crc, data)
}
