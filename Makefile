# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# `make help` prints this list.
#
#   make                     build rdma_rxe_rs.ko against KDIR (the plain test kernel)
#   make KDIR=/path/to/kbuild  ... against your own Rust-enabled kernel build
#   make CLIPPY=1            the same, linted with clippy
#   make demo                set up, build, run the two-node demo
#   make test                set up, build, run host tests and QEMU tests (the CI command)
#   make test ONLY=FILTER    ... only the QEMU tests whose name contains FILTER
#                            (ONLY=7.3: those on Linux 7.3; ONLY=nfs: NFS over RDMA)
#   make test-full           the same with the longer loops of qemu-test/tests/FULL (~2 h)
#   make test-debian         Debian's stock 7.3 kernel in QEMU: demo and datapath against
#                            its own rdma_rxe, the .deb installed, used and removed
#   make deb                 build/deb/rxe-rs-dkms_VERSION_all.deb (needs dpkg-dev,
#                            debhelper, dh-dkms; lintian checks it when installed)
#   make bench               rs vs rdma_rxe vs TCP benchmark table (BENCH_MTU=9000: jumbo)
#   make insns               guest instructions per RoCE packet, rs vs c, per row and side
#   make bench-loss          RC goodput under loss and reordering, rs/c pairings vs c-c
#   make rustfmtcheck        check the Rust formatting (make rustfmt fixes it)
#
# Long modes (docs/testing.md, "Long modes"):
#   make fuzz                host packet fuzzer (FUZZ_ITERS, FUZZ_SEED)
#   make fuzz-vm             in-VM packet fuzz of live QPs, debug then plain kernel
#                            (FUZZ_VM_DEBUG, FUZZ_VM_PLAIN packets, FUZZ_VM_SEED)
#   make misuse-long         verbs misuse walk, debug then plain kernel
#                            (MISUSE_CALLS, MISUSE_PROCS, MISUSE_SEED)
#   make loss-heavy          RC under 10% loss, 5% reordering, 1% duplication, rs-rs, rs-c
#   make soak                SOAK_MINUTES (30) of mixed traffic on the debug kernel;
#                            slab, vmalloc and kmemleak checked after it
#                            (SOAK_DRIVERS, SOAK_SEED, SOAK_RC_LANES)
#   make selftest            the module's load-time self-test of its task, timer and
#                            FIFO wrappers (a module built with RXE_RS_SELFTEST=1)
#
# Developer tools (docs/benchmark.md):
#   make host-test           the host unit tests (cargo test in rxe/proto)
#   make tbprof              build/tbprof.so, the QEMU plugin of the host-time profile
#   make tbprof-run          the host-time profile of one perftest program, rs,rs
#                            (TBPROF_RUN, TBPROF_DRIVERS; scripts/tbprof-report reads it)
#   make tcp-idle            kernel instructions per TCP MiB, driver idle and unloaded
#   make dkms-source         what dkms builds from, to $(DESTDIR)/usr/src/rxe_rs-VERSION
#   scripts/insns-compare A.json B.json   flags a row that moved over 10%

# Objects go to build/<kernel-dir-name>/ so builds for several kernels (the
# plain and debug test kernels, your own) live side by side.

# The toolchain's defaults are scripts/env.sh's (the scripts source it);
# a variable set on the command line or in the environment wins.
top := $(dir $(realpath $(lastword $(MAKEFILE_LIST))))
toolchain := $(shell bash -c '. $(top)scripts/env.sh && echo "$$RXE_RS_CACHE $$RUSTC $$BINDGEN $$CLIPPY_DRIVER $$LLVM $$LIBCLANG_PATH $$RUSTFMT"')
RXE_RS_CACHE ?= $(word 1,$(toolchain))
RUSTC ?= $(word 2,$(toolchain))
BINDGEN ?= $(word 3,$(toolchain))
CLIPPY_DRIVER ?= $(word 4,$(toolchain))
LLVM ?= $(word 5,$(toolchain))
export LIBCLANG_PATH ?= $(word 6,$(toolchain))
RUSTFMT ?= $(word 7,$(toolchain))
KDIR ?= $(RXE_RS_CACHE)/kernel-plain

kdir_real := $(realpath $(KDIR))
BUILD ?= $(CURDIR)/build/$(notdir $(kdir_real))
MODULE := $(BUILD)/rdma_rxe_rs.ko
SOURCES := Kbuild rxe_rs.rs rxe

# What a download that failed for good tells the user to rerun
# (scripts/retry.sh).
export RXE_RS_RERUN ?= make $(or $(MAKECMDGOALS),all)

.PHONY: help deb all module module-path testmod-path clean test test-full selftest test-debian dkms-source demo bench bench-loss insns tcp-idle fuzz fuzz-vm misuse-long loss-heavy soak host-test rustfmt rustfmtcheck tbprof tbprof-run

all: module
	@echo "built $(MODULE)"
help:
	@sed -n '/^# `make help`/,/^$$/{s/^# \{0,1\}//;/`make help`/d;/^[^#]*[^ ]/p;/^$$/p}' $(firstword $(MAKEFILE_LIST))

module:
	@test -n "$(kdir_real)" || { echo "KDIR=$(KDIR) does not exist (run scripts/build-kernel or pass KDIR=)"; exit 1; }
	@mkdir -p $(BUILD)
	@rsync -a --delete --exclude target $(SOURCES) $(BUILD)/ --exclude '*.o' --exclude '*.cmd' --exclude 'bindings_generated.rs' --filter 'P *.o' --filter 'P .*.cmd' --filter 'P bindings_generated.rs' --filter 'P *.mod*' --filter 'P *.ko' --filter 'P Module.symvers' --filter 'P modules.order'
	$(MAKE) -C $(kdir_real) M=$(BUILD) LLVM=$(LLVM) RUSTC=$(RUSTC) BINDGEN=$(BINDGEN) CLIPPY_DRIVER=$(CLIPPY_DRIVER) modules

module-path: module
	@echo $(MODULE)

# Test-only kernel modules (qemu-test/testmod), for the QEMU tests: built
# into $(BUILD)/testmod; prints that directory last.
testmod-path:
	@test -n "$(kdir_real)" || { echo "KDIR=$(KDIR) does not exist (run scripts/build-kernel or pass KDIR=)"; exit 1; }
	@mkdir -p $(BUILD)/testmod
	@rsync -a qemu-test/testmod/ $(BUILD)/testmod/
	$(MAKE) -C $(kdir_real) M=$(BUILD)/testmod LLVM=$(LLVM) W=1 modules
	@echo $(BUILD)/testmod

host-test:
	cd rxe/proto && cargo test --quiet

# The structured packet fuzzer (rxe/proto/fuzz_tests.rs), long mode: release
# build with overflow checks kept on. `cargo test` runs it short (20k packets).
FUZZ_ITERS ?= 1000000
FUZZ_SEED ?= 0x5eedf022
fuzz:
	cd rxe/proto && FUZZ_ITERS=$(FUZZ_ITERS) FUZZ_SEED=$(FUZZ_SEED) \
		CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS=true CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS=true \
		cargo test --release --quiet fuzz_tests::fuzz_packets -- --nocapture

# The in-VM packet fuzzer (qemu-test/tests/hardening/fuzz_vm.py), long mode: raw
# RoCEv2 frames from node 1 at node 2's live QPs, 10^5 on the debug kernel,
# then 10^6 on the plain one. --smp 1 (no -icount) sends ~1,000 packets/s;
# the test command runs it short.
FUZZ_VM_DEBUG ?= 100000
FUZZ_VM_PLAIN ?= 1000000
FUZZ_VM_SEED ?= 0xf022
fuzz-vm:
	qemu-test/run --debug --smp 1 --timeout 7200 --keep \
		qemu-test/tests/hardening/fuzz_vm.py $(FUZZ_VM_DEBUG) $(FUZZ_VM_SEED)
	qemu-test/run --smp 1 --timeout 7200 --keep \
		qemu-test/tests/hardening/fuzz_vm.py $(FUZZ_VM_PLAIN) $(FUZZ_VM_SEED)

# The verbs misuse walker (qemu-test/tests/verbs/misuse_walk.py), long mode:
# MISUSE_CALLS random verbs calls from MISUSE_PROCS processes at a time,
# killed at random, on one rs node, debug kernel then plain. The test
# command runs it short.
MISUSE_CALLS ?= 30000
MISUSE_PROCS ?= 6
MISUSE_SEED ?= 0x3153
misuse-long:
	qemu-test/run --debug --nodes 1 --timeout 3600 --keep \
		qemu-test/tests/verbs/misuse_walk.py $(MISUSE_CALLS) $(MISUSE_PROCS) $(MISUSE_SEED)
	qemu-test/run --nodes 1 --timeout 3600 --keep \
		qemu-test/tests/verbs/misuse_walk.py $(MISUSE_CALLS) $(MISUSE_PROCS) $(MISUSE_SEED)

# The heavy loss profile of qemu-test/tests/datapath/loss.sh (10% loss, 5%
# reordering, 1% duplication on both nodes' egress): 100 MiB of each
# perftest, then the integrity test (about 100 MiB, every byte checked),
# rs-rs and rs-c on the plain kernel. At 10% loss both ways a pairing
# moves ~0.2 MB/s: SEND, WRITE and READ take ~25 min, the integrity
# test's IPv4 half another ~30 (measured on a loaded 2-core host).
loss-heavy:
	qemu-test/run --drivers rs,rs --timeout 7200 --keep \
		qemu-test/tests/datapath/loss.sh 100 10 both heavy
	qemu-test/run --drivers rs,c --timeout 7200 --keep \
		qemu-test/tests/datapath/loss.sh 100 10 both heavy

# The soak (qemu-test/tests/datapath/soak.py): SOAK_MINUTES (whole minutes) of
# mixed traffic on the debug kernel after a warm-up, both ways at once over
# SOAK_RC_LANES RC QPs each way and a UC and a UD QP each way, every byte
# checked; then Slab and VmallocUsed must be where the warm-up left them,
# the device's objects gone and kmemleak clean. One boot per pairing in
# SOAK_DRIVERS ("rs,rs rs,c" adds one against rdma_rxe); SOAK_SEED replays
# a run (soak.py prints it); SOAK_RUN adds qemu-test/run options (--smp 2).
SOAK_MINUTES ?= 30
SOAK_DRIVERS ?= rs,rs
SOAK_SEED ?=
SOAK_RC_LANES ?= 2
SOAK_RUN ?=
soak:
	set -e; for d in $(SOAK_DRIVERS); do \
		qemu-test/run --debug --drivers $$d --timeout $$(( $(SOAK_MINUTES) * 60 + 1800 )) --keep $(SOAK_RUN) \
			qemu-test/tests/datapath/soak.py $(SOAK_MINUTES) "$(SOAK_SEED)" $(SOAK_RC_LANES); \
	done

# Rust formatting by the kernel's rules (.rustfmt.toml is the 6.12 kernel's),
# over every tracked .rs file, as the kernel's `make rustfmt`/`rustfmtcheck`.
rust_files = $(shell git -C $(top) ls-files '*.rs')

rustfmt:
	cd $(top) && $(RUSTFMT) --edition 2021 $(rust_files)

rustfmtcheck:
	cd $(top) && $(RUSTFMT) --edition 2021 --check $(rust_files)

test:
	scripts/test $(ONLY)

test-full:
	scripts/test --full
	$(MAKE) selftest

# The module's load-time self-test of its task, timer and FIFO wrappers
# (rxe/selftest.rs): a module built with RXE_RS_SELFTEST=1, on the debug
# kernel (the next plain build of the module drops the self-test again).
selftest:
	RXE_RS_SELFTEST=1 qemu-test/run --nodes 1 --debug qemu-test/tests/selftest/module.sh

test-debian:
	scripts/test-debian

# The source tree dkms builds from (dkms.conf): only what the module build
# reads.
DKMS_VERSION := $(shell sed -n 's/^PACKAGE_VERSION="\(.*\)"$$/\1/p' $(top)dkms.conf)
DKMS_SRC ?= $(DESTDIR)/usr/src/rxe_rs-$(DKMS_VERSION)
dkms-source:
	rm -rf $(DKMS_SRC)
	mkdir -p $(DKMS_SRC)/scripts
	cd $(top) && rsync -a --exclude target --exclude '*.o' --exclude '.*.cmd' \
		Kbuild Makefile dkms.conf rxe_rs.rs rxe $(DKMS_SRC)/
	install -m 0644 $(top)scripts/env.sh $(DKMS_SRC)/scripts/
	install -m 0755 $(top)scripts/debian-prepare-tree $(DKMS_SRC)/scripts/
	@echo "dkms source in $(DKMS_SRC): dkms install rxe_rs/$(DKMS_VERSION) -k KREL"

# The Debian package (debian/): built by dpkg-buildpackage from a copy of
# the sources in DEB_DIR, checked by lintian when it is installed (a
# warning or an error fails the build). Prints the package's path last.
DEB_DIR ?= $(top)build/deb
DEB_FILE := $(DEB_DIR)/rxe-rs-dkms_$(DKMS_VERSION)_all.deb
deb:
	@for t in dpkg-buildpackage dh dh_dkms; do command -v $$t >/dev/null || \
		{ echo "make deb: no $$t: apt install dpkg-dev debhelper dh-dkms"; exit 1; }; done
	rm -rf $(DEB_DIR)
	mkdir -p $(DEB_DIR)/rxe-rs
	cd $(top) && rsync -a --exclude target --exclude '*.o' --exclude '.*.cmd' --exclude bindings_generated.rs \
		Kbuild Makefile dkms.conf rxe_rs.rs rxe scripts debian $(DEB_DIR)/rxe-rs/
	cd $(DEB_DIR)/rxe-rs && dpkg-buildpackage --build=binary --no-sign >$(DEB_DIR)/build.log 2>&1 || \
		{ tail -n 30 $(DEB_DIR)/build.log; echo "make deb: dpkg-buildpackage failed (log: $(DEB_DIR)/build.log)"; exit 1; }
	@test -f $(DEB_FILE) || { echo "make deb: no $(DEB_FILE)"; exit 1; }
	@if command -v lintian >/dev/null; then \
		lintian --info --display-info --pedantic --fail-on error,warning $(DEB_FILE) && echo "make deb: lintian passed"; \
	else echo "make deb: lintian is not installed: not checked"; fi
	@echo $(DEB_FILE)

demo:
	scripts/demo

bench:
	scripts/bench

insns:
	scripts/insns

bench-loss:
	scripts/bench-loss

# What an idle RDMA driver costs TCP, in guest kernel instructions per MiB.
tcp-idle:
	scripts/tcp-idle

# The QEMU TCG plugin that charges host cycles to guest code (docs/benchmark.md,
# "Profiles"). Plain C, no QEMU headers needed.
tbprof: $(top)build/tbprof.so
$(top)build/tbprof.so: $(top)qemu-test/tbprof/tbprof.c
	mkdir -p $(top)build
	$(CC) -O2 -Wall -shared -fPIC -fvisibility=hidden -o $@ $<

# One perftest program under the plugin (qemu-test/guest/tbprof.sh); the
# counts land in each node's out/ of the run directory it prints.
TBPROF_RUN ?= ib_write_bw -s 4096 -n 6000
TBPROF_DRIVERS ?= rs,rs
tbprof-run: tbprof
	RXE_RS_QEMU_EXTRA="-plugin $(top)build/tbprof.so,out=@DIR@/out/tbprof" \
		qemu-test/run --drivers $(TBPROF_DRIVERS) --keep qemu-test/guest/tbprof.sh $(TBPROF_RUN)

clean:
	rm -rf build
	cd rxe/proto && cargo clean
