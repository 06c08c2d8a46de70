// SPDX-License-Identifier: GPL-2.0-only
/*
 * The rtt collector's start-up pass over connections open before it attached: a thread that
 * enters each network namespace in turn (setns) and runs bpf/rtt.bpf.c's tcp_rtt_existing there.
 *
 * A restart by a reload runs after the capabilities were dropped: setns into another namespace
 * needs CAP_SYS_ADMIN, so it is refused there. What the start-up pass did stays true, though:
 * the callbacks it turned on are flags of the sockets, not of the program, and outlive it; a
 * connection established later had them turned on by the program running then. So once a pass
 * covered everything, a restart keeps that answer for the connections open before the exporter
 * started; only those established while no program was attached (during the restart, or while
 * the collector was off) in a namespace it cannot enter wait for a reconnection, which the log
 * says.
 */
#define _GNU_SOURCE /* setns */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collectors/rtt_existing.h"
#include "kernel/ns.h"
#include "base/log.h"
#include "rtt.h"
#include "sampling/events.h" /* before the skeleton: struct sample_config */
#include "rtt.skel.h"

struct existing_pass {
	const struct netns_list *list;
	int link_fd;
	unsigned entered;
	unsigned unreachable; /* namespaces we could not enter or iterate */
	unsigned denied;      /* of which setns refused for want of privilege */
	int err;	      /* the first reason */
};

/* A thread of its own: setns() moves only the calling thread, which then just ends. */
static void *existing_worker(void *arg)
{
	struct existing_pass *p = arg;
	char buf[256];

	for (size_t i = 0; i < p->list->n; i++) {
		const struct netns_ref *ns = &p->list->v[i];
		int fd, iter_fd;
		ssize_t n;

		if (ns->ino != p->list->self) {
			fd = open(ns->path, O_RDONLY | O_CLOEXEC);
			if (fd < 0 && errno == ENOENT)
				continue; /* gone meanwhile */
			if (fd < 0 || setns(fd, CLONE_NEWNET)) {
				if (!p->err)
					p->err = -errno;
				p->unreachable++;
				p->denied += fd >= 0 && errno == EPERM;
				if (fd >= 0)
					close(fd);
				continue;
			}
			close(fd);
		}
		/* The iterator walks the sockets of the namespace its creator is in. */
		iter_fd = bpf_iter_create(p->link_fd);
		if (iter_fd < 0) {
			if (!p->err)
				p->err = -errno;
			p->unreachable++;
			continue;
		}
		while ((n = read(iter_fd, buf, sizeof(buf))) > 0)
			;
		if (n < 0) {
			if (!p->err)
				p->err = -errno;
			p->unreachable++;
		} else {
			p->entered++;
		}
		close(iter_fd);
	}
	return NULL;
}

static int cmp_ino(const void *a, const void *b)
{
	const uint32_t *x = a, *y = b;

	return *x < *y ? -1 : *x > *y;
}

/* Namespaces some task is in (tcp_rtt_netns) that the list has no path for; or -errno. */
static int count_unlisted(struct rtt_bpf *skel, const struct netns_list *l)
{
	struct bpf_link *link = bpf_program__attach_iter(skel->progs.tcp_rtt_netns, NULL);
	uint32_t *v = NULL;
	size_t n = 0, cap = 0, i;
	int fd, err = 0, missing = 0;
	ssize_t got;

	if (!link)
		return -errno;
	fd = bpf_iter_create(bpf_link__fd(link));
	if (fd < 0)
		err = -errno;
	while (!err) {
		if (n == cap) {
			uint32_t *nv = realloc(v, (cap = cap ? 2 * cap : 1024) * sizeof(*v));

			if (!nv) {
				err = -ENOMEM;
				break;
			}
			v = nv;
		}
		got = read(fd, v + n, (cap - n) * sizeof(*v));
		if (got < 0)
			err = -errno;
		if (got <= 0)
			break;
		n += got / sizeof(*v);
	}
	if (fd >= 0)
		close(fd);
	bpf_link__destroy(link);
	if (!err) {
		qsort(v, n, sizeof(*v), cmp_ino);
		for (i = 0; i < n; i++) {
			if (i && v[i] == v[i - 1])
				continue;
			missing += !netns_list_has(l, v[i]);
		}
	}
	free(v);
	return err ? err : missing;
}

/*
 * Connections established before the sockops program was attached never see an ESTABLISHED
 * callback: run tcp_rtt_existing over every socket of every network namespace we can enter.
 * Runs after the attach, so a connection established meanwhile is covered one way or both.
 */
bool rtt_cover_existing(struct rtt_bpf *skel, bool *covered_once)
{
	struct existing_pass pass = { 0 };
	const struct rtt_existing *done = &skel->bss->existing;
	struct netns_list list = { 0 };
	struct bpf_link *link = NULL;
	pthread_t thread;
	const char *reason;
	bool covered;
	int err, unlisted = 0;

	err = netns_list_build(&list);
	if (!err) {
		unlisted = count_unlisted(skel, &list);
		link = bpf_program__attach_iter(skel->progs.tcp_rtt_existing, NULL);
		if (!link)
			err = -errno;
	}
	if (!err) {
		pass.list = &list;
		pass.link_fd = bpf_link__fd(link);
		err = -pthread_create(&thread, NULL, existing_worker, &pass);
		if (!err)
			pthread_join(thread, NULL);
	}
	bpf_link__destroy(link);
	/* Done for good: free the programs, and keep them out of the per-program statistics. */
	bpf_program__unload(skel->progs.tcp_rtt_netns);
	bpf_program__unload(skel->progs.tcp_rtt_existing);
	netns_list_free(&list);
	if (err) {
		log_warn("rtt: cannot run over open TCP connections (%s): those are not measured "
			 "until they reconnect",
			 strerror(-err));
		return false;
	}
	if (unlisted < 0) {
		/* Cannot tell whether some namespace was missed: say not covered. */
		if (!pass.err)
			pass.err = unlisted;
		pass.unreachable++;
	} else {
		pass.unreachable += unlisted;
	}
	covered = !pass.unreachable && !done->failed;
	if (covered) {
		if (covered_once)
			*covered_once = true;
		log_info("rtt: RTT callbacks turned on for %llu TCP connections open before start "
			 "(%llu were on already), in %u network namespaces",
			 (unsigned long long)done->enabled, (unsigned long long)done->already,
			 pass.entered);
		return true;
	}
	reason = pass.err   ? strerror(-pass.err)
		 : unlisted ? "no /run/netns entry and no process we may read"
			    : "bpf_setsockopt failed";
	if (covered_once && *covered_once) {
		log_info("rtt: restarted, its pass over open connections partial (%u namespaces "
			 "not entered, %llu connections refused by the kernel: %s%s); RTT "
			 "callbacks turned on for %llu TCP connections in %u namespaces. "
			 "Connections open before the exporter started keep the callbacks an "
			 "earlier pass turned on, later ones got them from the program running "
			 "when they were established; those established while no program was "
			 "attached (during this restart, or while the collector was off) and not "
			 "reached now are measured once they reconnect",
			 pass.unreachable, (unsigned long long)done->failed, reason,
			 pass.denied ? "; setns needs CAP_SYS_ADMIN, dropped at start" : "",
			 (unsigned long long)done->enabled, pass.entered);
		return true;
	}
	log_warn("rtt: RTT callbacks turned on for %llu TCP connections open before start in %u "
		 "network namespaces, but %llu refused by the kernel and %u namespaces not entered "
		 "(%s%s): connections there are not measured until they reconnect",
		 (unsigned long long)done->enabled, pass.entered, (unsigned long long)done->failed,
		 pass.unreachable, reason,
		 pass.denied ? "; setns needs CAP_SYS_ADMIN, which only start-up has" : "");
	return false;
}
