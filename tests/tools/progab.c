// SPDX-License-Identifier: GPL-2.0-only
/*
 * progab [-t MS] [-r ROUNDS] NAME=OBJECT:PROGRAM...: paired cost of tp_btf programs on the same
 * events. For ROUNDS (default 15) rounds it attaches each PROGRAM of its OBJECT file alone, MS
 * (default 1000) ms each, in an order that changes every round (rotated, and reversed every
 * other round), so that what slows part of a run (other work on the machine) falls on every
 * program alike. Prints one line per attachment, "ROUND NAME RUN_NS RUN_CNT" (the kernel's
 * bpf_stats over that attachment, turned on through BPF_ENABLE_STATS while the tool runs),
 * after a line "# NAME xlated X jited J" per program (its size in bytes after the verifier and
 * after the JIT). Root; the caller makes the traffic.
 *
 * Every round loads every program afresh (each object with maps of its own; a plain array of
 * one element, a by-CPU array, gets one per possible CPU), in a shuffled order, before it
 * unloads the round before's: where the kernel puts a program's code and maps moves its cost by
 * about 10 ns on a rare event (cache sets, pages), so two loads of the same program differ by
 * that much for as long as both stay loaded. New places every round make that part of each
 * round's noise, which the median over rounds takes out, instead of a bias of the whole run.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_PROGS 16

struct spec {
	const char *name, *path, *prog;
};

struct prog {
	struct bpf_object *obj;
	struct bpf_program *prog;
};

static int stats(struct bpf_program *p, __u64 *ns, __u64 *cnt, __u32 *xlated, __u32 *jited)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len))
		return -errno;
	*ns = info.run_time_ns;
	*cnt = info.run_cnt;
	if (xlated)
		*xlated = info.xlated_prog_len;
	if (jited)
		*jited = info.jited_prog_len;
	return 0;
}

/* arg: NAME=OBJECT:PROGRAM, split in place. */
static int parse(struct spec *s, char *arg)
{
	char *eq = strchr(arg, '='), *colon = strrchr(arg, ':');

	if (!eq || !colon || colon < eq) {
		fprintf(stderr, "progab: %s: not NAME=OBJECT:PROGRAM\n", arg);
		return -EINVAL;
	}
	*eq = *colon = '\0';
	s->name = arg;
	s->path = eq + 1;
	s->prog = colon + 1;
	return 0;
}

static int load(struct prog *p, const struct spec *s, int ncpus)
{
	struct bpf_program *q;
	struct bpf_map *m;
	int err;

	p->prog = NULL;
	p->obj = bpf_object__open_file(s->path, NULL);
	err = libbpf_get_error(p->obj);
	if (err) {
		p->obj = NULL;
		fprintf(stderr, "progab: %s: %s\n", s->path, strerror(-err));
		return err;
	}
	bpf_object__for_each_program(q, p->obj) {
		bool it = !strcmp(bpf_program__name(q), s->prog);

		bpf_program__set_autoload(q, it);
		if (it)
			p->prog = q;
	}
	if (!p->prog) {
		fprintf(stderr, "progab: %s has no program %s\n", s->path, s->prog);
		return -ENOENT;
	}
	bpf_object__for_each_map(m, p->obj)
		if (!bpf_map__is_internal(m) && bpf_map__type(m) == BPF_MAP_TYPE_ARRAY &&
		    bpf_map__max_entries(m) == 1)
			bpf_map__set_max_entries(m, ncpus);
	err = bpf_object__load(p->obj);
	if (err)
		fprintf(stderr, "progab: cannot load %s: %s\n", s->prog, strerror(-err));
	return err;
}

/* Load every program (into next) in a shuffled order, then unload those of cur. */
static int reload(struct prog *cur, struct prog *next, const struct spec *specs, int n, int ncpus,
		  unsigned *seed)
{
	int order[MAX_PROGS], err = 0;

	for (int i = 0; i < n; i++)
		order[i] = i;
	for (int i = n - 1; i > 0; i--) {
		int j = rand_r(seed) % (i + 1), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	for (int i = 0; i < n && !err; i++)
		err = load(&next[order[i]], &specs[order[i]], ncpus);
	for (int i = 0; i < n; i++) {
		bpf_object__close(cur[i].obj);
		cur[i] = next[i];
		next[i].obj = NULL;
	}
	return err;
}

int main(int argc, char **argv)
{
	struct prog progs[MAX_PROGS] = { 0 }, next[MAX_PROGS] = { 0 };
	struct spec specs[MAX_PROGS];
	int ms = 1000, rounds = 15, n = 0, ncpus, stats_fd = -1, opt, err = 0;
	unsigned seed = 1;

	while ((opt = getopt(argc, argv, "t:r:")) != -1) {
		if (opt == 't')
			ms = atoi(optarg);
		else if (opt == 'r')
			rounds = atoi(optarg);
		else
			goto usage;
	}
	if (optind >= argc || argc - optind > MAX_PROGS || ms <= 0 || rounds <= 0)
		goto usage;
	for (int i = optind; i < argc && !err; i++)
		err = parse(&specs[n++], argv[i]);
	ncpus = libbpf_num_possible_cpus();
	if (err || ncpus <= 0)
		return 1;
	err = reload(progs, next, specs, n, ncpus, &seed);
	for (int i = 0; i < n && !err; i++) {
		__u32 xlated = 0, jited = 0;
		__u64 t = 0, c = 0;

		err = stats(progs[i].prog, &t, &c, &xlated, &jited);
		if (!err)
			printf("# %s xlated %u jited %u\n", specs[i].name, xlated, jited);
	}
	if (!err) {
		stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
		if (stats_fd < 0) {
			err = -errno;
			fprintf(stderr, "progab: BPF_ENABLE_STATS: %s\n", strerror(errno));
		}
	}
	for (int r = 0; r < rounds && !err; r++) {
		if (r)
			err = reload(progs, next, specs, n, ncpus, &seed);
		for (int k = 0; k < n && !err; k++) {
			/* Rotated by the round, and every other round backwards. */
			int i = r % 2 ? (r / 2 + k) % n : (n - 1 - (r / 2 + k) % n);
			struct timespec ts = { ms / 1000, ms % 1000 * 1000000L };
			struct bpf_link *link;
			__u64 t0 = 0, c0 = 0, t1 = 0, c1 = 0;

			err = stats(progs[i].prog, &t0, &c0, NULL, NULL);
			if (err)
				break;
			link = bpf_program__attach(progs[i].prog);
			err = libbpf_get_error(link);
			if (err) {
				fprintf(stderr, "progab: cannot attach %s: %s\n", specs[i].name,
					strerror(-err));
				break;
			}
			nanosleep(&ts, NULL);
			bpf_link__destroy(link);
			err = stats(progs[i].prog, &t1, &c1, NULL, NULL);
			if (err)
				break;
			printf("%d %s %llu %llu\n", r + 1, specs[i].name, t1 - t0, c1 - c0);
			fflush(stdout);
		}
	}
	for (int i = 0; i < n; i++) {
		bpf_object__close(progs[i].obj);
		bpf_object__close(next[i].obj);
	}
	if (stats_fd >= 0)
		close(stats_fd);
	return err ? 1 : 0;
usage:
	fprintf(stderr, "usage: progab [-t MS] [-r ROUNDS] NAME=OBJECT:PROGRAM...\n");
	return 2;
}
