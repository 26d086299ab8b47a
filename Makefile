# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
#   make                     build rdma_rxe_rs.ko against KDIR
#   make KDIR=/path/to/kbuild  ... against your own Rust-enabled kernel build
#   make CLIPPY=1            the same, linted with clippy
#   make test                set up, build, run host tests and QEMU tests
#   make demo                set up, build, run the two-node demo
#   make bench               rs vs c vs TCP benchmark table
#
# Objects go to build/<kernel-dir-name>/ so builds for several kernels (the
# plain and debug test kernels, your own) live side by side.

RXE_RS_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/rxe_rs
KDIR ?= $(RXE_RS_CACHE)/kernel-plain
RUSTC ?= /usr/bin/rustc
BINDGEN ?= $(HOME)/.cargo/bin/bindgen
# Debian's clippy matches Debian's rustc; rustup's (first in PATH) does not.
CLIPPY_DRIVER ?= /usr/bin/clippy-driver
LLVM ?= -19
export LIBCLANG_PATH ?= /usr/lib/llvm-19/lib

kdir_real := $(realpath $(KDIR))
BUILD ?= $(CURDIR)/build/$(notdir $(kdir_real))
MODULE := $(BUILD)/rdma_rxe_rs.ko
SOURCES := Kbuild rxe_rs.rs rxe

.PHONY: all module module-path clean test demo bench host-test

all: module
	@echo "built $(MODULE)"

module:
	@test -n "$(kdir_real)" || { echo "KDIR=$(KDIR) does not exist (run scripts/build-kernel or pass KDIR=)"; exit 1; }
	@mkdir -p $(BUILD)
	@rsync -a --delete --exclude target $(SOURCES) $(BUILD)/ --exclude '*.o' --exclude '*.cmd' --exclude 'bindings_generated.rs' --filter 'P *.o' --filter 'P .*.cmd' --filter 'P bindings_generated.rs' --filter 'P *.mod*' --filter 'P *.ko' --filter 'P Module.symvers' --filter 'P modules.order'
	$(MAKE) -C $(kdir_real) M=$(BUILD) LLVM=$(LLVM) RUSTC=$(RUSTC) BINDGEN=$(BINDGEN) CLIPPY_DRIVER=$(CLIPPY_DRIVER) modules

module-path: module
	@echo $(MODULE)

host-test:
	cd rxe/proto && cargo test --quiet

test:
	scripts/test

demo:
	scripts/demo

bench:
	scripts/bench

clean:
	rm -rf build
	cd rxe/proto && cargo clean
