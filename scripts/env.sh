# SPDX-License-Identifier: GPL-2.0
# The toolchain the kernel and the module build with: the one place of its
# defaults, sourced by the project's scripts and read by the Makefile.
# Each can be overridden from the environment.
# shellcheck shell=bash
RXE_RS_CACHE=${RXE_RS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rxe_rs}
# rustup's rustc comes first in PATH; the kernel needs Debian's with its std source.
RUSTC=${RUSTC:-/usr/bin/rustc}
BINDGEN=${BINDGEN:-$HOME/.cargo/bin/bindgen}
# Debian's clippy matches Debian's rustc; rustup's (first in PATH) does not.
CLIPPY_DRIVER=${CLIPPY_DRIVER:-/usr/bin/clippy-driver}
LLVM=${LLVM:--19}
RUSTFMT=${RUSTFMT:-rustfmt}
export LIBCLANG_PATH=${LIBCLANG_PATH:-/usr/lib/llvm-19/lib}
KMAKE=(LLVM="$LLVM" RUSTC="$RUSTC" BINDGEN="$BINDGEN")
