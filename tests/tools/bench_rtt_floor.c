// SPDX-License-Identifier: GPL-2.0-only
/*
 * bench_rtt_floor [--classic] [CGROUP]: attach the floor sockops program of
 * tests/bench/rtt_floor.bpf.c (or with --classic its reference, the classic-only RTT program of
 * the tree before cells) to the cgroup2 root (or CGROUP), print its program id on stdout, stay
 * attached until SIGTERM or SIGINT, then detach.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "rtt_floor.skel.h"

/* The first mount of the cgroup2 hierarchy's root, as the exporter finds it. */
static int cgroup2_root(char *path, size_t len)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[4096], root[PATH_MAX], mnt[PATH_MAX], fstype[64];
	int ret = -1;

	while (f && fgets(line, sizeof(line), f)) {
		const char *sep = strstr(line, " - ");

		if (sep && sscanf(line, "%*s %*s %*s %4095s %4095s", root, mnt) == 2 &&
		    sscanf(sep, " - %63s", fstype) == 1 && !strcmp(fstype, "cgroup2") &&
		    !strcmp(root, "/") && strlen(mnt) < len) {
			strcpy(path, mnt);
			ret = 0;
			break;
		}
	}
	if (f)
		fclose(f);
	return ret;
}

int main(int argc, char **argv)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);
	struct rtt_floor_bpf *skel;
	struct bpf_program *prog;
	struct bpf_link **link;
	char cgroup[PATH_MAX];
	int err, sig, cgroup_fd;
	bool classic = argc > 1 && !strcmp(argv[1], "--classic");
	sigset_t sigs;

	argc -= classic;
	argv += classic;
	if (argc > 2 || (argc == 2 && strlen(argv[1]) >= sizeof(cgroup))) {
		fprintf(stderr, "usage: bench_rtt_floor [--classic] [CGROUP]\n");
		return 2;
	}
	if (argc == 2) {
		strcpy(cgroup, argv[1]);
	} else if (cgroup2_root(cgroup, sizeof(cgroup))) {
		fprintf(stderr, "bench_rtt_floor: no cgroup2 mount in /proc/self/mountinfo\n");
		return 1;
	}
	/* Block the stop signals first so one arriving during load is not lost. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigprocmask(SIG_BLOCK, &sigs, NULL);

	cgroup_fd = open(cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cgroup_fd < 0) {
		fprintf(stderr, "bench_rtt_floor: cannot open %s: %s\n", cgroup, strerror(errno));
		return 1;
	}
	skel = rtt_floor_bpf__open();
	if (skel) {
		bpf_program__set_autoload(
			classic ? skel->progs.tcp_rtt_floor : skel->progs.tcp_rtt_classic, false);
		bpf_map__set_max_entries(skel->maps.classic_by_family,
					 classic ? libbpf_num_possible_cpus() : 1);
		if (rtt_floor_bpf__load(skel)) {
			rtt_floor_bpf__destroy(skel);
			skel = NULL;
		}
	}
	if (!skel) {
		err = -errno;
		fprintf(stderr, "bench_rtt_floor: cannot load BPF program: %s\n", strerror(-err));
		goto cleanup;
	}
	prog = classic ? skel->progs.tcp_rtt_classic : skel->progs.tcp_rtt_floor;
	link = classic ? &skel->links.tcp_rtt_classic : &skel->links.tcp_rtt_floor;
	*link = bpf_program__attach_cgroup(prog, cgroup_fd);
	if (!*link) {
		err = -errno;
		fprintf(stderr, "bench_rtt_floor: cannot attach sockops to %s: %s\n", cgroup,
			strerror(-err));
		goto cleanup;
	}
	memset(&info, 0, sizeof(info));
	err = bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len);
	if (err) {
		err = -errno;
		fprintf(stderr, "bench_rtt_floor: cannot read program info: %s\n", strerror(-err));
		goto cleanup;
	}
	printf("%u\n", info.id);
	fflush(stdout);

	err = sigwait(&sigs, &sig);
	if (err)
		fprintf(stderr, "bench_rtt_floor: sigwait: %s\n", strerror(err));
cleanup:
	rtt_floor_bpf__destroy(skel);
	close(cgroup_fd);
	return err ? 1 : 0;
}
