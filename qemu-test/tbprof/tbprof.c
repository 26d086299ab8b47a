// SPDX-License-Identifier: GPL-2.0
/*
 * tbprof: a QEMU (7.2, plugin API version 1) TCG plugin that measures the
 * host time each guest translation block costs.
 *
 * At the start of every block it reads the host TSC and charges the cycles
 * since the previous block's start to that block, with the block's
 * execution and guest-instruction counts. An interval longer than cap=
 * (default 200000 cycles) is a vCPU asleep (-icount sleep=on) or
 * preempted by the host: it goes to a "gaps" total instead. Guest
 * profilers (perf in the guest) sample guest time, which under -icount
 * counts instructions; this counts what QEMU spends on them: softmmu TLB
 * fills, helpers, device I/O exits, interrupt delivery, block lookups.
 *
 * Arguments: out=PREFIX. Control from the guest through the host file
 * system: PREFIX.reset zeroes the counts, PREFIX.dump writes them to
 * PREFIX.<n>.txt (n = 0, 1, ...); both files are removed when seen
 * (polled every 2^18 blocks). At exit the counts go to PREFIX.exit.txt.
 * Lines: "vaddr execs insns cycles" per block, after a "# gaps N" line.
 *
 * Build: make tbprof (build/tbprof.so). Use: docs/benchmark.md, "Profiles".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <x86intrin.h>
#include <unistd.h>

/* The part of QEMU's plugin API (include/qemu/qemu-plugin.h, API version
 * 1, unchanged in what is used here up to 7.2) this plugin calls. */
typedef uint64_t qemu_plugin_id_t;
typedef struct qemu_info_t qemu_info_t;
struct qemu_plugin_tb;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_CB_R_REGS, QEMU_PLUGIN_CB_RW_REGS };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, qemu_plugin_vcpu_udata_cb_t cb,
                                          enum qemu_plugin_cb_flags flags, void *userdata);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);
__attribute__((visibility("default"))) int qemu_plugin_version = 1;

struct rec { uint64_t vaddr, execs, insns, cycles; uint32_t n; };
#define NREC (1u << 21)
static struct rec *tab;
static struct rec *last;
static uint64_t last_t;
static char outpath[512] = "/tmp/tbprof";
static char trig_reset[600], trig_dump[600];
static int ndump;
static uint64_t polls;
static uint64_t gap_cap = 200000, gaps;

static struct rec *lookup(uint64_t va, uint32_t n)
{
	uint64_t h = (va * 0x9e3779b97f4a7c15ull) >> 43;
	for (uint32_t i = 0; i < NREC; i++) {
		struct rec *r = &tab[(h + i) & (NREC - 1)];
		if (r->vaddr == va && r->n == n) return r;
		if (r->vaddr == 0) { r->vaddr = va; r->n = n; return r; }
	}
	return &tab[0];
}

static void dump_to(const char *path);
static void poll_triggers(void)
{
	if (access(trig_reset, F_OK) == 0) {
		unlink(trig_reset);
		for (uint32_t i = 0; i < NREC; i++) tab[i].execs = tab[i].insns = tab[i].cycles = 0;
		gaps = 0;
	}
	if (access(trig_dump, F_OK) == 0) {
		char p[640];
		unlink(trig_dump);
		snprintf(p, sizeof(p), "%s.%d.txt", outpath, ndump++);
		dump_to(p);
	}
}

static void exec_cb(unsigned int vcpu __attribute__((unused)), void *ud)
{
	if ((++polls & ((1u << 18) - 1)) == 0) poll_triggers();
	uint64_t t = __rdtsc();
	if (last) {
		uint64_t dt = t - last_t;
		/* Longer than any one block runs: the vCPU slept (icount) or the
		 * host preempted it. Not charged. */
		if (dt < gap_cap) last->cycles += dt; else gaps += dt;
	}
	struct rec *r = ud;
	r->execs++;
	r->insns += r->n;
	last = r;
	last_t = t;
}

static void trans_cb(qemu_plugin_id_t id __attribute__((unused)), struct qemu_plugin_tb *tb)
{
	struct rec *r = lookup(qemu_plugin_tb_vaddr(tb), qemu_plugin_tb_n_insns(tb));
	qemu_plugin_register_vcpu_tb_exec_cb(tb, exec_cb, QEMU_PLUGIN_CB_NO_REGS, r);
}

static void dump(qemu_plugin_id_t id, void *ud)
{
	char p[640];
	snprintf(p, sizeof(p), "%s.exit.txt", outpath);
	dump_to(p);
}

static void dump_to(const char *path)
{
	FILE *f = fopen(path, "w");
	if (!f) return;
	fprintf(f, "# gaps %llu\n", (unsigned long long)gaps);
	for (uint32_t i = 0; i < NREC; i++)
		if (tab[i].vaddr && tab[i].execs)
			fprintf(f, "%llx %llu %llu %llu\n", (unsigned long long)tab[i].vaddr,
				(unsigned long long)tab[i].execs, (unsigned long long)tab[i].insns,
				(unsigned long long)tab[i].cycles);
	fclose(f);
}

__attribute__((visibility("default")))
int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
	for (int i = 0; i < argc; i++)
		if (!strncmp(argv[i], "out=", 4)) snprintf(outpath, sizeof(outpath), "%s", argv[i] + 4);
		else if (!strncmp(argv[i], "cap=", 4)) gap_cap = strtoull(argv[i] + 4, NULL, 0);
	snprintf(trig_reset, sizeof(trig_reset), "%s.reset", outpath);
	snprintf(trig_dump, sizeof(trig_dump), "%s.dump", outpath);
	tab = calloc(NREC, sizeof(*tab));
	if (!tab) return -1;
	qemu_plugin_register_vcpu_tb_trans_cb(id, trans_cb);
	qemu_plugin_register_atexit_cb(id, dump, NULL);
	return 0;
}
