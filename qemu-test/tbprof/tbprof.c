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
 * Create each control file under another name and rename it: QEMU's 9p
 * server fails a guest's create when the file vanishes before its set-up
 * after the open is done.
 * Lines: "vaddr execs insns cycles ainsns" per block, after a "# gaps N"
 * line. PREFIX.dump may name the dump: when it holds a LABEL (letters,
 * digits, '_', '-', '.'), the counts go to PREFIX.LABEL.txt instead.
 *
 * Attribution (ainsns, 0 until switched on): PREFIX.syms, the guest's
 * /proc/kallsyms (its text symbols are enough), switches it on when seen
 * (and is removed). From then on every kernel-mode block also counts its
 * instructions in ainsns when it runs on behalf of the RDMA driver: in the
 * driver modules' own text (drivers=MOD,MOD..., default
 * rdma_rxe_rs,rdma_rxe) or in any kernel function they called, directly or
 * through others. The plugin keeps a shadow call stack from the last
 * instruction of each block (call, ret, iret), so a callee inherits its
 * caller's attribution and a return restores it:
 * - an interrupt or exception entry (asm_common_interrupt, asm_sysvec_*,
 *   asm_exc_*, asm_spurious_interrupt) and the softirq loop (__do_softirq,
 *   handle_softirqs) are not the driver's, even when they interrupt it or
 *   run from its local_bh_enable(): they start unattributed (the driver's
 *   own handlers they reach count again); iret returns to the state the
 *   interrupt found;
 * - a context switch (__switch_to_asm) empties the stack: the next task
 *   starts unattributed (the scheduler's work is not counted);
 * - a return to an address on no frame (a task resumed after a switch
 *   returns through frames the stack never saw) is unattributed unless it
 *   lands in the driver's text; a retpoline's "mov %reg,(%rsp); ret" is a
 *   jump, not a return.
 * One vCPU (the -icount set-up): a single shadow stack.
 *
 * Build: make tbprof (build/tbprof.so). Use: docs/benchmark.md, "Profiles".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <ctype.h>
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
struct qemu_plugin_insn;
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);
__attribute__((visibility("default"))) int qemu_plugin_version = 1;

/* kind: how the block's last instruction leaves it. */
enum { K_OTHER, K_CALL, K_RET, K_IRET, K_RETPOLINE };
/* flags, of the block's start address (attribution's symbols). */
enum { F_MOD = 1, F_ENTRY = 2, F_SWITCH = 4, F_BARRIER = 8 };
struct rec {
	uint64_t vaddr, execs, insns, cycles, ainsns;
	uint64_t next; /* the return address of a K_CALL block */
	uint32_t n, gen;
	uint8_t kind, flags;
};
#define NREC (1u << 21)
static struct rec *tab;
static struct rec *last;
static uint64_t last_t;
static char outpath[512] = "/tmp/tbprof";
static char trig_reset[600], trig_dump[600], trig_syms[600];
static int ndump;
static uint64_t polls;
static uint64_t gap_cap = 200000, gaps;

/* --- attribution --------------------------------------------------------- */
#define KERNEL_SPACE 0xffff000000000000ull
static char drivers[256] = "rdma_rxe_rs,rdma_rxe";
struct sym { uint64_t addr; uint8_t flags; };
static struct sym *syms;
static size_t nsyms;
static uint32_t symgen; /* 0: attribution off */
#define DEPTH 512
struct frame { uint64_t ret; uint8_t attr, marker, pending; };
static struct frame stk[DEPTH];
static int sp;
static bool attr;

static int cmp_sym(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static bool is_driver(const char *mod)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", drivers);
	for (char *t = strtok(buf, ","); t; t = strtok(NULL, ","))
		if (!strcmp(t, mod)) return true;
	return false;
}

/* Flags of a symbol start: a driver function, an interrupt or exception
 * entry, the context switch, the softirq loop. */
static uint8_t sym_flags(const char *name, const char *mod)
{
	if (mod[0]) return is_driver(mod) ? F_MOD : 0;
	if (!strcmp(name, "asm_common_interrupt") || !strcmp(name, "asm_spurious_interrupt") ||
	    !strncmp(name, "asm_sysvec_", 11) || !strncmp(name, "asm_exc_", 8))
		return F_ENTRY;
	if (!strcmp(name, "__switch_to_asm")) return F_SWITCH;
	if (!strcmp(name, "__do_softirq") || !strcmp(name, "handle_softirqs")) return F_BARRIER;
	return 0;
}

/* Reads the guest's kallsyms ("addr type name [module]"), text symbols. */
static void load_syms(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f) return;
	size_t cap = 1 << 17, n = 0;
	struct sym *v = malloc(cap * sizeof(*v));
	char line[512];
	while (v && fgets(line, sizeof(line), f)) {
		unsigned long long a;
		char type, name[256], mod[256] = "";
		char m[258] = "";
		int k = sscanf(line, "%llx %c %255s %257s", &a, &type, name, m);
		if (k < 3 || !a || (type != 't' && type != 'T')) continue;
		if (k == 4 && m[0] == '[') {
			size_t l = strlen(m);
			snprintf(mod, sizeof(mod), "%.*s", (int)(l >= 2 ? l - 2 : 0), m + 1);
		}
		if (n == cap) {
			struct sym *w = realloc(v, 2 * cap * sizeof(*v));
			if (!w) break;
			v = w;
			cap *= 2;
		}
		v[n].addr = a;
		v[n].flags = sym_flags(name, mod);
		n++;
	}
	fclose(f);
	if (!v || !n) { free(v); return; }
	qsort(v, n, sizeof(*v), cmp_sym);
	free(syms);
	syms = v;
	nsyms = n;
	symgen++;
	sp = 0;
	attr = false;
}

/* The flags of a block start: F_MOD anywhere in a driver function, the
 * others only at the symbol's first instruction. */
static uint8_t flags_of(uint64_t va)
{
	size_t lo = 0, hi = nsyms;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (syms[mid].addr <= va) lo = mid + 1; else hi = mid;
	}
	if (!lo) return 0;
	const struct sym *y = &syms[lo - 1];
	if (y->flags & F_MOD) return F_MOD;
	return y->addr == va ? y->flags : 0;
}

static void push(uint64_t ret, bool a, bool marker, uint8_t pending)
{
	if (sp == DEPTH) {
		/* Deeper than any kernel stack: the oldest half goes. */
		memmove(stk, stk + DEPTH / 2, (DEPTH / 2) * sizeof(stk[0]));
		sp = DEPTH / 2;
	}
	stk[sp++] = (struct frame){ ret, a, marker, pending };
}

/* A return to va: pop to its frame (not past an interrupt's marker) and
 * take the caller's attribution. When va is on no frame, keep (true) or
 * drop (false) the current one. */
static void do_ret(uint64_t va, bool keep)
{
	for (int i = sp - 1; i >= 0 && i >= sp - 16; i--) {
		if (stk[i].marker) break;
		if (stk[i].ret == va) {
			attr = stk[i].attr;
			sp = i;
			return;
		}
	}
	if (!keep) attr = false;
}

static void do_iret(uint64_t va)
{
	for (int i = sp - 1; i >= 0; i--) {
		if (!stk[i].marker) continue;
		uint8_t pending = stk[i].pending;
		attr = stk[i].attr;
		sp = i;
		/* The block before the interrupt ended in a return the
		 * interrupt came before the target of. */
		if (pending == K_RET) do_ret(va, true);
		else if (pending == K_RETPOLINE) { if (sp && !stk[sp - 1].marker) sp--; }
		else if (pending == K_IRET) do_iret(va);
		return;
	}
	attr = false;
}

/* Attribution of the block r (start va) about to run after the block prev. */
static void attribute(struct rec *prev, struct rec *r)
{
	uint64_t va = r->vaddr;
	if (va < KERNEL_SPACE) {
		sp = 0;
		attr = false;
		return;
	}
	if (r->gen != symgen) {
		r->flags = flags_of(va);
		r->gen = symgen;
	}
	uint8_t pk = prev ? prev->kind : K_OTHER, pending = K_OTHER;
	bool entry = r->flags & F_ENTRY;
	if (pk == K_CALL) push(prev->next, attr, false, 0);
	else if (entry && pk != K_OTHER) pending = pk;
	else if (pk == K_RET) do_ret(va, false);
	else if (pk == K_RETPOLINE) { if (sp && !stk[sp - 1].marker) sp--; }
	else if (pk == K_IRET) do_iret(va);
	if (entry) {
		push(0, attr, true, pending);
		attr = false;
	}
	if (r->flags & F_SWITCH) {
		sp = 0;
		attr = false;
	}
	if (r->flags & F_BARRIER) attr = false;
	if (r->flags & F_MOD) attr = true;
	if (attr) r->ainsns += r->n;
}

/* How an instruction leaves its block (x86-64): call, ret, iret. */
static uint8_t insn_kind(const uint8_t *p, size_t len)
{
	size_t i = 0;
	while (i < len && (p[i] == 0x66 || p[i] == 0x67 || p[i] == 0xf2 || p[i] == 0xf3 || p[i] == 0x2e ||
			   p[i] == 0x3e || p[i] == 0x26 || p[i] == 0x64 || p[i] == 0x65 || p[i] == 0x36))
		i++;
	if (i < len && (p[i] & 0xf0) == 0x40) i++; /* REX */
	if (i >= len) return K_OTHER;
	switch (p[i]) {
	case 0xe8: return K_CALL;
	case 0xff: return i + 1 < len && ((p[i + 1] >> 3) & 7) == 2 ? K_CALL : K_OTHER;
	case 0xc3: case 0xc2: return K_RET;
	case 0xcf: return K_IRET;
	}
	return K_OTHER;
}

/* "mov %reg,(%rsp)": a retpoline thunk's store before its ret. */
static bool stores_to_rsp(const uint8_t *p, size_t len)
{
	return len == 4 && (p[0] == 0x48 || p[0] == 0x4c) && p[1] == 0x89 && (p[2] & 0xc7) == 0x04 && p[3] == 0x24;
}

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
		for (uint32_t i = 0; i < NREC; i++) tab[i].execs = tab[i].insns = tab[i].cycles = tab[i].ainsns = 0;
		gaps = 0;
	}
	if (access(trig_syms, F_OK) == 0) {
		load_syms(trig_syms);
		unlink(trig_syms);
	}
	if (access(trig_dump, F_OK) == 0) {
		char p[800], label[128] = "";
		FILE *f = fopen(trig_dump, "r");
		if (f) {
			if (!fgets(label, sizeof(label), f)) label[0] = 0;
			fclose(f);
		}
		label[strcspn(label, "\r\n")] = 0;
		for (char *c = label; *c; c++)
			if (!isalnum((unsigned char)*c) && *c != '_' && *c != '-' && *c != '.') { label[0] = 0; break; }
		unlink(trig_dump);
		if (label[0]) snprintf(p, sizeof(p), "%s.%s.txt", outpath, label);
		else snprintf(p, sizeof(p), "%s.%d.txt", outpath, ndump++);
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
	if (symgen) attribute(last, r);
	last = r;
	last_t = t;
}

static void trans_cb(qemu_plugin_id_t id __attribute__((unused)), struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb);
	struct rec *r = lookup(qemu_plugin_tb_vaddr(tb), n);
	r->kind = K_OTHER;
	if (n) {
		const struct qemu_plugin_insn *in = qemu_plugin_tb_get_insn(tb, n - 1);
		size_t len = qemu_plugin_insn_size(in);
		r->kind = insn_kind(qemu_plugin_insn_data(in), len);
		r->next = qemu_plugin_insn_vaddr(in) + len;
		if (r->kind == K_RET && n >= 2) {
			const struct qemu_plugin_insn *st = qemu_plugin_tb_get_insn(tb, n - 2);
			if (stores_to_rsp(qemu_plugin_insn_data(st), qemu_plugin_insn_size(st)))
				r->kind = K_RETPOLINE;
		}
	}
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
	fprintf(f, "# attribution %s (drivers %s)\n", symgen ? "on" : "off", drivers);
	for (uint32_t i = 0; i < NREC; i++)
		if (tab[i].vaddr && tab[i].execs)
			fprintf(f, "%llx %llu %llu %llu %llu\n", (unsigned long long)tab[i].vaddr,
				(unsigned long long)tab[i].execs, (unsigned long long)tab[i].insns,
				(unsigned long long)tab[i].cycles, (unsigned long long)tab[i].ainsns);
	fclose(f);
}

__attribute__((visibility("default")))
int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
	for (int i = 0; i < argc; i++)
		if (!strncmp(argv[i], "out=", 4)) snprintf(outpath, sizeof(outpath), "%s", argv[i] + 4);
		else if (!strncmp(argv[i], "cap=", 4)) gap_cap = strtoull(argv[i] + 4, NULL, 0);
		else if (!strncmp(argv[i], "drivers=", 8)) snprintf(drivers, sizeof(drivers), "%s", argv[i] + 8);
	snprintf(trig_reset, sizeof(trig_reset), "%s.reset", outpath);
	snprintf(trig_syms, sizeof(trig_syms), "%s.syms", outpath);
	snprintf(trig_dump, sizeof(trig_dump), "%s.dump", outpath);
	tab = calloc(NREC, sizeof(*tab));
	if (!tab) return -1;
	qemu_plugin_register_vcpu_tb_trans_cb(id, trans_cb);
	qemu_plugin_register_atexit_cb(id, dump, NULL);
	return 0;
}
