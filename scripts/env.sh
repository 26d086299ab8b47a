# Sourced by the project's scripts: the toolchain the kernel and module build with.
# shellcheck shell=bash
RXE_RS_CACHE=${RXE_RS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rxe_rs}
RUSTC=${RUSTC:-/usr/bin/rustc}
BINDGEN=${BINDGEN:-$HOME/.cargo/bin/bindgen}
export LIBCLANG_PATH=${LIBCLANG_PATH:-/usr/lib/llvm-19/lib}
# rustup's rustc comes first in PATH; the kernel needs Debian's with its std source.
KMAKE=(LLVM=-19 RUSTC="$RUSTC" BINDGEN="$BINDGEN")
