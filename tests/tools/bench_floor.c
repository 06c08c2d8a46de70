// SPDX-License-Identifier: GPL-2.0-only
/*
 * bench_floor: attach the empty tp_btf/kfree_skb program of tests/bench/floor.bpf.c, print its
 * program id on stdout, stay attached until SIGTERM or SIGINT, then detach.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "floor.skel.h"

int main(int argc, char **argv)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);
	struct floor_bpf *skel;
	sigset_t sigs;
	int err, sig;

	(void)argv;
	if (argc != 1) {
		fprintf(stderr, "usage: bench_floor\n");
		return 2;
	}
	/* Block the stop signals first so one arriving during load is not lost. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigprocmask(SIG_BLOCK, &sigs, NULL);

	skel = floor_bpf__open_and_load();
	if (!skel) {
		fprintf(stderr, "bench_floor: cannot load BPF program: %s\n", strerror(errno));
		return 1;
	}
	err = floor_bpf__attach(skel);
	if (err) {
		fprintf(stderr, "bench_floor: cannot attach to tp_btf/kfree_skb: %s\n",
			strerror(-err));
		goto cleanup;
	}
	memset(&info, 0, sizeof(info));
	err = bpf_obj_get_info_by_fd(bpf_program__fd(skel->progs.kfree_skb_floor), &info, &len);
	if (err) {
		err = -errno;
		fprintf(stderr, "bench_floor: cannot read program info: %s\n", strerror(-err));
		goto cleanup;
	}
	printf("%u\n", info.id);
	fflush(stdout);

	err = sigwait(&sigs, &sig);
	if (err)
		fprintf(stderr, "bench_floor: sigwait: %s\n", strerror(err));
	floor_bpf__detach(skel);
cleanup:
	floor_bpf__destroy(skel);
	return err ? 1 : 0;
}
