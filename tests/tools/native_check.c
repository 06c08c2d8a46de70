// SPDX-License-Identifier: GPL-2.0-only
/*
 * native_check: runs the kernel's native bucket search (tests/tools/native_slot.bpf.c, the
 * header bpf/native.bpf.h) for every schema and compares each slot with the user-space
 * reference (exporter/collectors/nativehist.c) at every edge, edge + 1, edge - 1 and both ends of
 * every octave, the table in read-only data and in a map. Prints TAP lines; exit 1 on a
 * mismatch, 2 when the program cannot load. --bench: the search's cost per value instead, hot
 * in cache (tests/bench/rtt.sh prints it).
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdbool.h>
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

/* Every value worth checking through the program fd; the number of mismatches or -errno. */
static int check_values(int fd, const struct native_table *t, unsigned *checked)
{
	int bad = 0, err = 0;

	for (unsigned o = 0; o < NATIVE_OCTAVES && !err; o++) {
		uint32_t lo = 1u << o, hi = (uint32_t)((2ull << o) - 1);

		bad += one(fd, t, lo, checked, &err) + one(fd, t, hi, checked, &err);
		if (lo > 1)
			bad += one(fd, t, lo - 1, checked, &err);
	}
	bad += one(fd, t, 0, checked, &err);
	for (unsigned d = 1; d < t->slots && !err; d++) {
		uint32_t e = t->thr[d];

		bad += one(fd, t, e, checked, &err);
		if (e > 0)
			bad += one(fd, t, e - 1, checked, &err);
		if (e < UINT32_MAX)
			bad += one(fd, t, e + 1, checked, &err);
	}
	return err ? err : bad;
}

struct bench {
	uint32_t with;
	uint32_t pad;
	uint64_t ns;
	uint64_t acc;
};

/* ns per value of BENCH_N through native_slot_bench (with or without the search), best of 50. */
static double bench_ns(int fd, uint32_t with)
{
	double best = -1;

	for (int r = 0; r < 50; r++) {
		struct bench b = { .with = with };
		struct bpf_test_run_opts o = { .sz = sizeof(o),
					       .ctx_in = &b,
					       .ctx_size_in = sizeof(b) };

		if (bpf_prog_test_run_opts(fd, &o))
			return -1;
		if (best < 0 || b.ns / 1024.0 < best)
			best = b.ns / 1024.0;
	}
	return best;
}

/* The table in read-only data and in a map; with bench, the search's cost. */
static int check_schema(int s, bool bench)
{
	struct native_table t;
	struct native_slot_bpf *skel;
	unsigned checked = 0, zero = 0;
	int bad, bad_map, err;

	if (native_table_init(&t, s))
		return -EINVAL;
	skel = native_slot_bpf__open();
	if (!skel)
		return -errno;
	memcpy((void *)&skel->rodata->table, &t, sizeof(t));
	err = native_slot_bpf__load(skel);
	if (!err && bpf_map_update_elem(bpf_map__fd(skel->maps.edges), &zero, &t, BPF_ANY))
		err = -errno;
	if (err) {
		native_slot_bpf__destroy(skel);
		return err;
	}
	if (bench) {
		double with = bench_ns(bpf_program__fd(skel->progs.native_slot_bench), 1);
		double without = bench_ns(bpf_program__fd(skel->progs.native_slot_bench), 0);

		native_slot_bpf__destroy(skel);
		printf("schema %d: %.1f ns per value with the search, %.1f without: %.1f ns\n", s,
		       with, without, with - without);
		return with < 0 || without < 0 ? -EINVAL : 0;
	}
	bad = check_values(bpf_program__fd(skel->progs.native_slot_of), &t, &checked);
	bad_map =
		bad < 0 ? 0
			: check_values(bpf_program__fd(skel->progs.native_slot_map), &t, &checked);
	native_slot_bpf__destroy(skel);
	if (bad < 0 || bad_map < 0)
		return bad < 0 ? bad : bad_map;
	printf("%s - schema %d: kernel slot equals the reference for %u values (table in "
	       "read-only data and in a map)\n",
	       bad + bad_map ? "not ok" : "ok", s, checked);
	return bad + bad_map;
}

int main(int argc, char **argv)
{
	bool bench = argc > 1 && !strcmp(argv[1], "--bench");
	int failed = 0;

	for (int s = NATIVE_SCHEMA_MIN; s <= NATIVE_SCHEMA_MAX; s++) {
		int r = check_schema(s, bench);

		if (r < 0) {
			fprintf(stderr, "native_check: schema %d: cannot run the program: %s\n", s,
				strerror(-r));
			return 2;
		}
		failed += r > 0;
	}
	return failed ? 1 : 0;
}
