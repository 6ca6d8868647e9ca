// SPDX-License-Identifier: GPL-2.0
/*
 * kprof: a QEMU TCG plugin that counts the guest kernel's executed
 * instructions per translation block, between two user-space markers.
 *
 *   -plugin kprof.so,start=0xADDR,stop=0xADDR,out=FILE
 *
 * start/stop are the addresses of two functions of a static, non-PIE
 * guest program; the plugin adds up, over every start..stop window, how
 * many times each kernel block ran, and writes "vaddr insns count" lines.
 * Only the plugin API's stable version-1 calls are used (QEMU >= 4.2).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
struct qemu_info;
typedef void (*tb_trans_cb)(qemu_plugin_id_t, struct qemu_plugin_tb *);
typedef void (*vcpu_udata_cb)(unsigned int, void *);
typedef void (*udata_cb)(qemu_plugin_id_t, void *);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t, tb_trans_cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *,
					  vcpu_udata_cb, int, void *);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *, int,
					      void *, uint64_t);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t, udata_cb, void *);

EXPORT int qemu_plugin_version = 1;

#define KERNEL_START	0xffff800000000000ull
#define HASH_BITS	20

struct block {
	uint64_t vaddr;
	uint64_t insns;
	uint64_t runs;		/* bumped inline by the translated code */
	uint64_t mark;		/* runs at the last start marker */
	uint64_t total;		/* runs inside start..stop windows */
	struct block *next;	/* hash chain */
	struct block *all;	/* every block */
};

static struct block *table[1 << HASH_BITS];
static struct block *blocks;
static uint64_t start_addr, stop_addr;
static const char *out_path = "kprof.out";
static bool inside;
static unsigned long windows;

static struct block *block_of(uint64_t vaddr, uint64_t insns)
{
	unsigned int h = ((vaddr ^ insns * 0x9e3779b97f4a7c15ull) *
			  0x9e3779b97f4a7c15ull) >> (64 - HASH_BITS);
	struct block *b;

	for (b = table[h]; b; b = b->next)
		if (b->vaddr == vaddr && b->insns == insns)
			return b;
	b = calloc(1, sizeof(*b));
	if (!b)
		abort();
	b->vaddr = vaddr;
	b->insns = insns;
	b->next = table[h];
	table[h] = b;
	b->all = blocks;
	blocks = b;
	return b;
}

static void on_start(unsigned int vcpu, void *udata)
{
	struct block *b;

	if (inside)
		return;
	for (b = blocks; b; b = b->all)
		b->mark = b->runs;
	inside = true;
}

static void on_stop(unsigned int vcpu, void *udata)
{
	struct block *b;

	if (!inside)
		return;
	for (b = blocks; b; b = b->all)
		b->total += b->runs - b->mark;
	inside = false;
	windows++;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	uint64_t vaddr = qemu_plugin_tb_vaddr(tb);
	struct block *b;

	if (vaddr == start_addr)
		qemu_plugin_register_vcpu_tb_exec_cb(tb, on_start, 0, NULL);
	else if (vaddr == stop_addr)
		qemu_plugin_register_vcpu_tb_exec_cb(tb, on_stop, 0, NULL);
	if (vaddr < KERNEL_START)
		return;
	b = block_of(vaddr, qemu_plugin_tb_n_insns(tb));
	/* a block made while inside a window starts counting from 0 */
	qemu_plugin_register_vcpu_tb_exec_inline(tb, 0, &b->runs, 1);
}

static void write_profile(qemu_plugin_id_t id, void *udata)
{
	FILE *f = fopen(out_path, "w");
	struct block *b;

	if (!f) {
		perror(out_path);
		return;
	}
	fprintf(f, "# windows %lu\n", windows);
	for (b = blocks; b; b = b->all)
		if (b->total)
			fprintf(f, "%" PRIx64 " %" PRIu64 " %" PRIu64 "\n",
				b->vaddr, b->insns, b->total);
	fclose(f);
}

EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
			       const struct qemu_info *info,
			       int argc, char **argv)
{
	int i;

	for (i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "start=", 6))
			start_addr = strtoull(argv[i] + 6, NULL, 0);
		else if (!strncmp(argv[i], "stop=", 5))
			stop_addr = strtoull(argv[i] + 5, NULL, 0);
		else if (!strncmp(argv[i], "out=", 4))
			out_path = argv[i] + 4;
		else {
			fprintf(stderr, "kprof: unknown argument %s\n",
				argv[i]);
			return -1;
		}
	}
	if (!start_addr || !stop_addr) {
		fprintf(stderr, "kprof: start= and stop= are required\n");
		return -1;
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	qemu_plugin_register_atexit_cb(id, write_profile, NULL);
	return 0;
}
