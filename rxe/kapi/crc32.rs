// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The ICRC's CRC-32 with the fastest method the CPU offers: the
//! carry-less-multiply fold ([`super::clmul`], x86-64 PCLMULQDQ) for
//! buffers of 16 bytes and more when the vector unit may be used here, the
//! software CRC of `proto::crc32` (a sparse multiple of the polynomial, and
//! tables for short buffers) otherwise.
//!
//! [`with`] claims the vector unit once for all the CRC calls of a packet
//! (`kernel_fpu_begin` saves the task's vector state and costs more than
//! the fold of a short packet), and hands them an [`Icrc`].
//!
//! An emulated CPU is not a fast one: QEMU's TCG (before 8.2) computes
//! each carry-less multiply bit by bit and saves the vector state in a
//! helper, so in host time the fold costs about twice the table CRC there
//! (docs/benchmark.md), and the software CRC is used under TCG.
//!
//! 6.12's `crc32_le` is table-driven (the crypto API's `crc32-pclmul`
//! needs a module and a transform object); from 6.14 `crc32_le` itself uses
//! the fold on x86 (`CONFIG_CRC32_ARCH`), for short buffers too, and the
//! module calls it for unmasked buffers (it claims the vector unit per
//! call, so [`with`] does not hold it then).

use core::marker::PhantomData;
use core::sync::atomic::{AtomicBool, Ordering};

use kernel::prelude::*;

use crate::rxe::proto::crc32::{crc32_le as software, crc32_masked, masked_with, Mask};
use crate::rxe::proto::icrc::Crc32;
use crate::rxe::sys;

/// Whether the fold is used: set once by [`select`].
static CLMUL: AtomicBool = AtomicBool::new(false);

/// Whether the fold takes 256 bits per instruction (VPCLMULQDQ) on
/// buffers from 256 bytes on: set once by [`select`], before [`CLMUL`].
static WIDE: AtomicBool = AtomicBool::new(false);

/// Whether unmasked buffers go to the kernel's `crc32_le`, the
/// architecture's fold for every length (7.x with `CONFIG_CRC32_ARCH`):
/// set once by [`select`].
static KERNEL_FOLD: AtomicBool = AtomicBool::new(false);

/// Chooses the method at module load: the fold when the CPU has it and it
/// agrees with the software CRC on a check pattern.
/// The module parameter `icrc_fold` overrides the choice: 0 never folds,
/// 1 folds under TCG too (to count the instructions a real CPU runs).
pub(crate) fn select() {
    // SAFETY: FFI call without arguments, usable in any context.
    let param = unsafe { sys::rxe_rs_param_icrc_fold() };
    if param == 0 {
        pr_info!("ICRC: CRC-32 in software (icrc_fold=0)\n");
        return;
    }
    // SAFETY: FFI call without arguments, usable in any context.
    if !unsafe { sys::rxe_rs_cpu_has_clmul() } {
        pr_info!("ICRC: CRC-32 in software (no PCLMULQDQ)\n");
        return;
    }
    let mut pattern = [0u8; 1000];
    let mut x = 0x9e37_79b9u32;
    for byte in pattern.iter_mut() {
        x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        *byte = (x >> 24) as u8;
    }
    let mut head = [0u8; 64];
    for (i, m) in head.iter_mut().enumerate() {
        // Every third byte all ones, the others one bit.
        *m = if i % 3 == 0 { 0xff } else { 1 << (i % 8) };
    }
    let mask = Mask::new(head);
    // Lengths around the paths of the fold: one block with a tail, the
    // masked single blocks, four lanes with every tail, the 256-bit loop.
    let agrees = |wide| {
        [16usize, 44, 63, 64, 100, 255, 256, 1000].iter().all(|&n| {
            let data = pattern.get(..n).unwrap_or(&[]);
            with_clmul(0x1234_5678, data, &mask, wide)
                == Some(crc32_masked(0x1234_5678, data, &mask))
        })
    };
    if !agrees(false) {
        pr_err!("ICRC: PCLMULQDQ fold disagrees with the software CRC; using software\n");
        return;
    }
    // SAFETY: FFI call without arguments, usable in any context.
    let wide = unsafe { sys::rxe_rs_cpu_has_vpclmul() } && {
        let ok = agrees(true);
        if !ok {
            pr_err!("ICRC: VPCLMULQDQ fold disagrees with the software CRC; not used\n");
        }
        ok
    };
    // Under QEMU's TCG the fold is checked above (so every test boot runs
    // it) but not used by default: emulated carry-less multiplies are
    // slower than the table.
    // SAFETY: FFI call without arguments, usable in any context.
    if param < 0 && unsafe { sys::rxe_rs_cpu_is_tcg() } {
        pr_info!("ICRC: CRC-32 in software (PCLMULQDQ emulated by QEMU TCG; the fold agrees)\n");
        return;
    }
    WIDE.store(wide, Ordering::Relaxed);
    CLMUL.store(true, Ordering::Relaxed);
    // SAFETY: FFI call without arguments, usable in any context.
    if unsafe { sys::rxe_rs_crc32_is_arch() }
        && kernel_crc32(0x1234_5678, &pattern) == software(0x1234_5678, &pattern)
        && kernel_crc32(0x1234_5678, &pattern[..20]) == software(0x1234_5678, &pattern[..20])
    {
        KERNEL_FOLD.store(true, Ordering::Relaxed);
        pr_info!("ICRC: CRC-32 by PCLMULQDQ folding, the kernel's for unmasked buffers\n");
    } else {
        pr_info!(
            "ICRC: CRC-32 by PCLMULQDQ folding{}\n",
            if WIDE.load(Ordering::Relaxed) {
                ", 256-bit (VPCLMULQDQ)"
            } else {
                ""
            }
        );
    }
}

/// The fold in a vector-unit section of its own, or `None` where the unit
/// may not be used (an interrupt that preempted kernel code using it) or
/// `data` is under 16 bytes.
#[cfg(target_arch = "x86_64")]
fn with_clmul(crc: u32, data: &[u8], mask: &Mask, wide: bool) -> Option<u32> {
    if data.len() < super::clmul::MIN_LEN {
        return None;
    }
    // SAFETY: FFI call without arguments; when it returns true the vector
    // registers are ours until `rxe_rs_simd_end`.
    if !unsafe { sys::rxe_rs_simd_begin() } {
        return None;
    }
    // SAFETY: the CPU has PCLMULQDQ and SSSE3: `select` checks them before
    // its own calls and before setting `CLMUL`, which every other caller
    // tests first; likewise VPCLMULQDQ and the YMM state before a call
    // with `wide` (its own, or with `WIDE`). The vector unit is ours since
    // `rxe_rs_simd_begin` returned true.
    let crc = unsafe { super::clmul::crc32(crc, data, mask, wide) };
    // SAFETY: pairs with the successful `rxe_rs_simd_begin` above.
    unsafe { sys::rxe_rs_simd_end() };
    crc
}

#[cfg(not(target_arch = "x86_64"))]
fn with_clmul(_crc: u32, _data: &[u8], _mask: &Mask, _wide: bool) -> Option<u32> {
    None
}

/// The fold, `None` under 16 bytes.
///
/// # Safety
///
/// As for `clmul::crc32`: [`CLMUL`] is set and the vector unit is held.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn fold(crc: u32, data: &[u8], mask: &Mask) -> Option<u32> {
    let wide = WIDE.load(Ordering::Relaxed);
    // SAFETY: the caller's promise is `clmul::crc32`'s (`select` sets
    // `CLMUL` only where the CPU has PCLMULQDQ and SSSE3, and `WIDE` only
    // where it has VPCLMULQDQ and the YMM state).
    unsafe { super::clmul::crc32(crc, data, mask, wide) }
}

/// # Safety
///
/// None needed: there is no fold here.
#[cfg(not(target_arch = "x86_64"))]
unsafe fn fold(_crc: u32, _data: &[u8], _mask: &Mask) -> Option<u32> {
    None
}

/// The kernel's `crc32_le`.
fn kernel_crc32(crc: u32, data: &[u8]) -> u32 {
    // SAFETY: `crc32_le` reads `data.len()` bytes from `data`, valid for
    // that long, in any context.
    unsafe { sys::crc32_le(crc, data.as_ptr().cast(), data.len()) }
}

/// The CRC of one packet's ICRC, made by [`with`].
///
/// # Invariants
///
/// When `simd` is true, the fold may be used ([`CLMUL`]) and the vector
/// unit is held, for as long as the value lives: it lives in [`with`]'s
/// call, inside its section, and cannot be made elsewhere.
pub(crate) struct Icrc {
    simd: bool,
    /// Not `Send`: the section belongs to this CPU.
    _cpu: PhantomData<*mut ()>,
}

impl Crc32 for Icrc {
    #[inline]
    fn update(&mut self, crc: u32, data: &[u8]) -> u32 {
        if self.simd {
            // SAFETY: by the type invariant, the CPU has the fold's
            // instructions (`CLMUL`) and the vector unit is held.
            if let Some(c) = unsafe { fold(crc, data, &Mask::NONE) } {
                return c;
            }
        }
        plain(crc, data)
    }

    #[inline]
    fn update_masked(&mut self, crc: u32, data: &[u8], mask: &Mask) -> u32 {
        if self.simd {
            // SAFETY: by the type invariant, the CPU has the fold's
            // instructions (`CLMUL`) and the vector unit is held.
            if let Some(c) = unsafe { fold(crc, data, mask) } {
                return c;
            }
        }
        unfolded(crc, data, mask)
    }
}

/// [`Icrc::update`] outside a section of [`with`], or under 16 bytes (a
/// pad).
#[inline(never)]
fn plain(crc: u32, data: &[u8]) -> u32 {
    if KERNEL_FOLD.load(Ordering::Relaxed) {
        return kernel_crc32(crc, data);
    }
    software(crc, data)
}

/// [`Icrc::update_masked`] outside a section of [`with`], or under 16
/// bytes: kept out of line, so that the fold's callers stay small.
#[inline(never)]
fn unfolded(crc: u32, data: &[u8], mask: &Mask) -> u32 {
    if KERNEL_FOLD.load(Ordering::Relaxed) {
        return with_clmul(crc, data, mask, WIDE.load(Ordering::Relaxed))
            .unwrap_or_else(|| masked_with(crc, data, mask, kernel_crc32));
    }
    crc32_masked(crc, data, mask)
}

/// Runs `f` with the CRC for one packet's ICRC: the fold with the vector
/// unit held over the whole of `f` where it is used, else the software or
/// the kernel's CRC. `f` must not sleep (the section keeps the CPU).
#[inline]
pub(crate) fn with<R>(f: impl FnOnce(&mut Icrc) -> R) -> R {
    let simd = CLMUL.load(Ordering::Relaxed)
        && !KERNEL_FOLD.load(Ordering::Relaxed)
        // SAFETY: FFI call without arguments; when it returns true the
        // vector registers are ours until `rxe_rs_simd_end`.
        && unsafe { sys::rxe_rs_simd_begin() };
    // INVARIANT: `simd` only if `CLMUL` is set and the unit is held; it is
    // held until after `f` returns and the value is gone.
    let r = f(&mut Icrc {
        simd,
        _cpu: PhantomData,
    });
    if simd {
        // SAFETY: pairs with the successful `rxe_rs_simd_begin` above.
        unsafe { sys::rxe_rs_simd_end() };
    }
    r
}
