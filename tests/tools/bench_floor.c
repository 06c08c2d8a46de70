// SPDX-License-Identifier: GPL-2.0-only
/*
 * bench_floor [HOOK]: attach the empty program for HOOK (tests/bench/floor*.bpf.c; default
 * kfree_skb), print its program id on stdout, stay attached until SIGTERM or SIGINT, then detach.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "floor.skel.h"
#include "floor_resets.skel.h"
#include "floor_retrans.skel.h"
#include "floor_connections.skel.h"

/* Each floor object holds one program; its skeleton gives the object's bytes. */
static const struct {
	const char *hook;
	const void *(*elf_bytes)(size_t *sz);
} floors[] = {
	{ "kfree_skb", floor_bpf__elf_bytes },
	{ "tcp_retransmit_skb", floor_retrans_bpf__elf_bytes },
	{ "inet_sock_set_state", floor_connections_bpf__elf_bytes },
	{ "tcp_send_reset", floor_resets_bpf__elf_bytes },
};
#define NR_FLOORS (sizeof(floors) / sizeof(floors[0]))

int main(int argc, char **argv)
{
	const char *hook = argc > 1 ? argv[1] : "kfree_skb";
	struct bpf_object *obj = NULL;
	struct bpf_link *link = NULL;
	struct bpf_program *prog;
	struct bpf_prog_info info;
	__u32 len = sizeof(info);
	const void *bytes = NULL;
	sigset_t sigs;
	size_t sz = 0;
	int err, sig;

	for (size_t i = 0; i < NR_FLOORS; i++)
		if (!strcmp(hook, floors[i].hook))
			bytes = floors[i].elf_bytes(&sz);
	if (argc > 2 || !bytes) {
		fprintf(stderr,
			"usage: bench_floor "
			"[kfree_skb|tcp_retransmit_skb|inet_sock_set_state|tcp_send_reset]\n");
		return 2;
	}
	/* Block the stop signals first so one arriving during load is not lost. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigprocmask(SIG_BLOCK, &sigs, NULL);

	obj = bpf_object__open_mem(bytes, sz, NULL);
	err = libbpf_get_error(obj);
	if (err) {
		obj = NULL;
		fprintf(stderr, "bench_floor: cannot open BPF object: %s\n", strerror(-err));
		goto cleanup;
	}
	err = bpf_object__load(obj);
	if (err) {
		fprintf(stderr, "bench_floor: cannot load BPF program: %s\n", strerror(-err));
		goto cleanup;
	}
	prog = bpf_object__next_program(obj, NULL);
	link = bpf_program__attach(prog);
	err = libbpf_get_error(link);
	if (err) {
		link = NULL;
		fprintf(stderr, "bench_floor: cannot attach to tp_btf/%s: %s\n", hook,
			strerror(-err));
		goto cleanup;
	}
	memset(&info, 0, sizeof(info));
	err = bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len);
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
cleanup:
	bpf_link__destroy(link);
	bpf_object__close(obj);
	return err ? 1 : 0;
}
