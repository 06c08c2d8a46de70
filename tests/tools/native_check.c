// SPDX-License-Identifier: GPL-2.0-only
/*
 * native_check: runs the kernel's native bucket search (tests/tools/native_slot.bpf.c, the
 * header bpf/native.bpf.h) for every schema and compares each slot with the user-space
 * reference (exporter/collectors/nativehist.c) at every edge, edge + 1, edge - 1 and both ends of
 * every octave. Prints TAP lines; exit 1 on a mismatch, 2 when the program cannot load.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "collectors/nativehist.h"
#include "native_slot.skel.h"

struct args {
	__u32 us;
	__u32 slot;
};

static int run(int fd, uint32_t us, uint32_t *slot)
{
	struct args a = { .us = us };
	/* A syscall program's context is copied back into ctx_in. */
	struct bpf_test_run_opts o = { .sz = sizeof(o), .ctx_in = &a, .ctx_size_in = sizeof(a) };
	int err = bpf_prog_test_run_opts(fd, &o);

	*slot = a.slot;
	return err < 0 ? err : 0;
}

/* Compares us: 1 on a mismatch (printed), else 0; *err the first failure to run. */
static int one(int fd, const struct native_table *t, uint32_t us, unsigned *checked, int *err)
{
	uint32_t got;
	unsigned want = native_slot_ref(t, us);

	if (*err || (*err = run(fd, us, &got)))
		return 0;
	(*checked)++;
	if (got == want)
		return 0;
	fprintf(stderr, "  schema %u: %u us: kernel slot %u, reference %u\n", t->schema, us, got,
		want);
	return 1;
}

static int check_schema(int s)
{
	struct native_table t;
	struct native_slot_bpf *skel;
	unsigned checked = 0;
	int fd, bad = 0, err;

	if (native_table_init(&t, s))
		return -EINVAL;
	skel = native_slot_bpf__open();
	if (!skel)
		return -errno;
	memcpy((void *)&skel->rodata->table, &t, sizeof(t));
	err = native_slot_bpf__load(skel);
	if (err) {
		native_slot_bpf__destroy(skel);
		return err;
	}
	fd = bpf_program__fd(skel->progs.native_slot_of);
	for (unsigned o = 0; o < NATIVE_OCTAVES && !err; o++) {
		uint32_t lo = 1u << o, hi = (uint32_t)((2ull << o) - 1);

		bad += one(fd, &t, lo, &checked, &err) + one(fd, &t, hi, &checked, &err);
		if (lo > 1)
			bad += one(fd, &t, lo - 1, &checked, &err);
	}
	bad += one(fd, &t, 0, &checked, &err);
	for (unsigned d = 1; d < t.slots && !err; d++) {
		uint32_t e = t.thr[d];

		bad += one(fd, &t, e, &checked, &err);
		if (e > 0)
			bad += one(fd, &t, e - 1, &checked, &err);
		if (e < UINT32_MAX)
			bad += one(fd, &t, e + 1, &checked, &err);
	}
	native_slot_bpf__destroy(skel);
	if (err)
		return err;
	printf("%s - schema %d: kernel slot equals the reference for %u values\n",
	       bad ? "not ok" : "ok", s, checked);
	return bad;
}

int main(void)
{
	int failed = 0;

	for (int s = NATIVE_SCHEMA_MIN; s <= NATIVE_SCHEMA_MAX; s++) {
		int r = check_schema(s);

		if (r < 0) {
			fprintf(stderr, "native_check: schema %d: cannot run the program: %s\n", s,
				strerror(-r));
			return 2;
		}
		failed += r > 0;
	}
	return failed ? 1 : 0;
}
