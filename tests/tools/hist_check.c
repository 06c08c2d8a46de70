// SPDX-License-Identifier: GPL-2.0-only
/*
 * hist_check: runs the kernel's cell of a value (tests/tools/hist_cell.bpf.c, the header
 * bpf/hist.bpf.h) and compares it with user space's (exporter/collectors/histogram.c, which
 * tests/unit/test_hist.c holds to the exact edges) at every native edge of schema 3, one either
 * side of it, 0, both ends of every octave and pseudo-random values. Prints a TAP line; exit 1 on
 * a mismatch, 2 when the program cannot load. --bench: the cell's cost per value instead, hot in
 * cache (tests/bench/rtt.sh prints it).
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "collectors/histogram.h"
#include "hist_cell.skel.h"

struct args {
	__u32 us;
	__u32 cell;
};

/* 1 on a mismatch (printed), else 0; *err the first failure to run. */
static int one(int fd, uint32_t us, unsigned *checked, int *err)
{
	struct args a = { .us = us };
	/* A syscall program's context is copied back into ctx_in. */
	struct bpf_test_run_opts o = { .sz = sizeof(o), .ctx_in = &a, .ctx_size_in = sizeof(a) };
	unsigned want = hist_cell_of(us);

	if (*err)
		return 0;
	if (bpf_prog_test_run_opts(fd, &o) < 0) {
		*err = -errno;
		return 0;
	}
	(*checked)++;
	if (a.cell == want)
		return 0;
	fprintf(stderr, "  %u us: kernel cell %u, user space %u\n", us, a.cell, want);
	return 1;
}

static int check_values(int fd, unsigned *checked)
{
	uint32_t x = 2463534242u;
	int bad = 0, err = 0;

	bad += one(fd, 0, checked, &err) + one(fd, UINT32_MAX, checked, &err);
	for (unsigned o = 0; o < HIST_OCTAVES; o++) {
		uint32_t lo = 1u << o, hi = (uint32_t)((2ull << o) - 1);

		bad += one(fd, lo, checked, &err) + one(fd, hi, checked, &err) +
		       one(fd, lo + 1, checked, &err);
	}
	for (int i = HIST_OFFSET; i <= HIST_OFFSET + 8 * HIST_OCTAVES; i++) {
		long double t = floorl(exp2l(i / 8.0L) * 1e6L);

		for (int d = -1; d <= 1; d++)
			if (t + d >= 0 && t + d <= UINT32_MAX)
				bad += one(fd, (uint32_t)(t + d), checked, &err);
	}
	for (int k = 0; k < 20000; k++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		bad += one(fd, x >> (x & 31), checked, &err);
	}
	return err ? err : bad;
}

struct bench {
	uint32_t with;
	uint32_t pad;
	uint64_t ns;
	uint64_t acc;
};

/* ns per value of 1024 through hist_cell_bench (with or without the cell), best of 50. */
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

int main(int argc, char **argv)
{
	bool bench = argc > 1 && !strcmp(argv[1], "--bench");
	struct hist_cell_bpf *skel = hist_cell_bpf__open_and_load();
	unsigned checked = 0;
	int bad;

	if (!skel) {
		fprintf(stderr, "hist_check: cannot load the program: %s\n", strerror(errno));
		return 2;
	}
	if (bench) {
		double with = bench_ns(bpf_program__fd(skel->progs.hist_cell_bench), 1);
		double without = bench_ns(bpf_program__fd(skel->progs.hist_cell_bench), 0);

		hist_cell_bpf__destroy(skel);
		printf("cell: %.1f ns per value with the cell, %.1f without: %.1f ns\n", with,
		       without, with - without);
		return with < 0 || without < 0 ? 2 : 0;
	}
	bad = check_values(bpf_program__fd(skel->progs.hist_cell_of), &checked);
	hist_cell_bpf__destroy(skel);
	if (bad < 0) {
		fprintf(stderr, "hist_check: cannot run the program: %s\n", strerror(-bad));
		return 2;
	}
	printf("%s - the kernel's cell equals user space's for %u values\n", bad ? "not ok" : "ok",
	       checked);
	return bad ? 1 : 0;
}
